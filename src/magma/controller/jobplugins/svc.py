"""The `svc` job plugin: pods of a job can find each other by name.

- A headless Service `<job>` (clusterIP None) selecting the job's pods by `volcano.sh/job-name` and
  `volcano.sh/job-namespace`; `--publish-not-ready-addresses` sets publishNotReadyAddresses.
- Every pod gets `hostname = <pod name>` and `subdomain = <job>` (unless its template sets them), so that
  `<job>-<task>-<i>.<job>` resolves to it.
- A ConfigMap `<job>-svc` with, per task (dashes in the task name become underscores):
  `<task>.host` = the task's host names one per line, `VC_<TASK>_HOSTS` = the same comma-separated, and
  `VC_<TASK>_NUM` = how many. It is mounted in every container at /etc/volcano, and (unless
  `--inject-hosts-env=false`) `VC_<TASK>_HOSTS` / `VC_<TASK>_NUM` of every task are env vars read from it.
- A NetworkPolicy `<job>` letting only the job's own pods in (`--disable-network-policy` turns it off).
"""

from __future__ import annotations

from magma.api.objects import ConfigMap, Job, NetworkPolicy, Pod, Service

from .base import (
    JobPlugin,
    PluginContext,
    add_env,
    add_volume,
    add_volume_mount,
    all_containers,
    controller_ref,
    job_selector,
    parse_flags,
    register,
    task_hosts,
)

CONFIGMAP_MOUNT_PATH = "/etc/volcano"
HOST_KEY_FMT = "{}.host"
ENV_HOSTS_FMT = "VC_{}_HOSTS"
ENV_NUM_FMT = "VC_{}_NUM"


def env_task_key(task_name: str) -> str:
    return task_name.replace("-", "_")


def generate_hosts(job: Job) -> dict[str, str]:
    """The ConfigMap data: host lists per task, as files and as env values."""
    data: dict[str, str] = {}
    for task in job.spec.tasks:
        hosts = task_hosts(job, task)
        key = env_task_key(task.name or "")
        data[HOST_KEY_FMT.format(key)] = "\n".join(hosts)
        data[ENV_HOSTS_FMT.format(key.upper())] = ",".join(hosts)
        data[ENV_NUM_FMT.format(key.upper())] = str(len(hosts))
    return data


@register
class SvcPlugin(JobPlugin):
    name = "svc"

    def __init__(self, args=None):
        super().__init__(args)
        flags = parse_flags(self.args, {
            "publish-not-ready-addresses": False,
            "disable-network-policy": False,
            "inject-hosts-env": True,
        })
        self.publish_not_ready_addresses: bool = flags["publish-not-ready-addresses"]
        self.disable_network_policy: bool = flags["disable-network-policy"]
        self.inject_hosts_env: bool = flags["inject-hosts-env"]

    @staticmethod
    def configmap_name(job: Job) -> str:
        return f"{job.name}-svc"

    # -------------------------------------------------------------- pods
    def on_pod_create(self, pod: Pod, job: Job) -> None:
        if not pod.spec.hostname:
            pod.spec.hostname = pod.name
        if not pod.spec.subdomain:
            pod.spec.subdomain = job.name
        cm = self.configmap_name(job)
        if self.inject_hosts_env:
            names = []
            for task in job.spec.tasks:
                key = env_task_key(task.name or "").upper()
                names += [ENV_HOSTS_FMT.format(key), ENV_NUM_FMT.format(key)]
            for c in all_containers(pod):
                for name in names:
                    add_env(c, name, value_from={"configMapKeyRef": {"name": cm, "key": name}})
        add_volume(pod, {"name": cm, "configMap": {"name": cm}})
        for c in all_containers(pod):
            add_volume_mount(c, {"mountPath": CONFIGMAP_MOUNT_PATH, "name": cm})

    # -------------------------------------------------------------- side objects
    def _configmap(self, job: Job) -> ConfigMap:
        return ConfigMap.model_validate({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": self.configmap_name(job), "namespace": job.namespace,
                         "ownerReferences": [controller_ref(job)]},
            "data": generate_hosts(job),
        })

    def _service(self, job: Job) -> Service:
        spec = {"clusterIP": "None", "selector": job_selector(job)}
        if self.publish_not_ready_addresses:
            spec["publishNotReadyAddresses"] = True
        return Service.model_validate({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": job.name, "namespace": job.namespace, "ownerReferences": [controller_ref(job)]},
            "spec": spec,
        })

    def _network_policy(self, job: Job) -> NetworkPolicy:
        sel = job_selector(job)
        return NetworkPolicy.model_validate({
            "apiVersion": NetworkPolicy.API_VERSION, "kind": "NetworkPolicy",
            "metadata": {"name": job.name, "namespace": job.namespace, "ownerReferences": [controller_ref(job)]},
            "spec": {
                "podSelector": {"matchLabels": dict(sel)},
                "ingress": [{"from": [{"podSelector": {"matchLabels": dict(sel)}}]}],
                "policyTypes": ["Ingress"],
            },
        })

    def _sync_configmap(self, job: Job, ctx: PluginContext) -> None:
        existing = ctx.cluster.get("ConfigMap", f"{job.namespace}/{self.configmap_name(job)}")
        if existing is not None and getattr(existing, "data", None) == generate_hosts(job):
            return
        cm = self._configmap(job)
        ctx.create_or_update(cm, same=lambda old: getattr(old, "data", None) == cm.data)

    def on_job_add(self, job: Job, ctx: PluginContext) -> None:
        if self.added(ctx):
            return
        self._sync_configmap(job, ctx)
        ctx.create_if_missing(self._service(job))
        if not self.disable_network_policy:
            ctx.create_if_missing(self._network_policy(job))
        super().on_job_add(job, ctx)

    def on_job_update(self, job: Job, ctx: PluginContext) -> None:
        self._sync_configmap(job, ctx)

    def on_job_delete(self, job: Job, ctx: PluginContext) -> None:
        if not self.added(ctx):
            return
        ctx.delete("ConfigMap", f"{job.namespace}/{self.configmap_name(job)}")
        ctx.delete("Service", job.key)
        if not self.disable_network_policy:
            ctx.delete("NetworkPolicy", job.key)
        super().on_job_delete(job, ctx)
