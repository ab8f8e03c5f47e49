"""A hand-driven MemoryCluster: the tests play scheduler and kubelet around the controller."""

from __future__ import annotations

from typing import Any

from magma.api.defaults import builtin_queues
from magma.api.objects import Command, Job, Node, Pod, PodGroup, PriorityClass, Queue
from magma.cluster.memory import MemoryCluster
from magma.controller import Controller


def make_job(name: str = "j", ns: str = "ns", *, tasks: list[dict] | None = None, uid: str | None = None,
             **spec: Any) -> Job:
    """A Job manifest; tasks default to one `worker` task of 2 replicas asking 1 cpu each."""
    if tasks is None:
        tasks = [task("worker", 2)]
    annotations = spec.pop("annotations", {})
    labels = spec.pop("labels", {})
    body = {"schedulerName": "volcano", "tasks": tasks, **spec}
    return Job.model_validate({
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "uid": uid or f"uid-{name}", "annotations": annotations,
                     "labels": labels},
        "spec": body,
    })


def task(name: str, replicas: int, cpu: str = "1", gpu: int | None = None, **extra: Any) -> dict:
    template_spec = extra.pop("spec", {})
    template_meta = extra.pop("metadata", {})
    resources: dict = {"requests": {"cpu": cpu}}
    if gpu is not None:
        resources["limits"] = {"nvidia.com/gpu": gpu}
    containers = template_spec.pop("containers", [{"name": "main", "image": "busybox", "resources": resources}])
    return {"name": name, "replicas": replicas,
            "template": {"metadata": template_meta, "spec": {"containers": containers, **template_spec}}, **extra}


def priority_class(name: str, value: int, default: bool = False) -> PriorityClass:
    return PriorityClass.model_validate({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                         "metadata": {"name": name}, "value": value, "globalDefault": default})


def queue(name: str, parent: str | None = None, state: str | None = None) -> Queue:
    body: dict = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
                  "spec": {"weight": 1}}
    if parent:
        body["spec"]["parent"] = parent
    if state:
        body["status"] = {"state": state}
    return Queue.model_validate(body)


def command(name: str, action: str, kind: str, target: str, ns: str = "ns", at: float = 0.0) -> Command:
    return Command.model_validate({
        "apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": at},
        "action": action,
        "targetObject": {"apiVersion": "batch.volcano.sh/v1alpha1" if kind == "Job" else
                         "scheduling.volcano.sh/v1beta1", "kind": kind, "name": target},
    })


class Harness:
    """MemoryCluster + Controller + a clock, with the scheduler's and kubelet's moves done by hand."""

    def __init__(self, *objects, grace: float = 0.0):
        self.t = 0.0
        node = Node.model_validate({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                                    "status": {"allocatable": {"cpu": "1000", "memory": "1Ti", "pods": "1000"}}})
        self.cluster = MemoryCluster([*builtin_queues(), node, *objects], clock=lambda: self.t, grace_seconds=grace)
        self.ctl = Controller(self.cluster)

    # ---------------------------------------------------------- reads
    @property
    def state(self):
        return self.cluster.state()

    def job(self, key: str = "ns/j") -> Job:
        return self.state.jobs[key]

    def phase(self, key: str = "ns/j") -> str | None:
        return self.job(key).status.state.phase

    def pg(self, key: str = "ns/j") -> PodGroup | None:
        job = self.state.jobs.get(key)
        if job is None:
            return None
        return self.state.podgroups.get(f"{job.namespace}/{job.name}-{job.metadata.uid}")

    def pods(self, key: str = "ns/j") -> dict[str, Pod]:
        ns, name = key.split("/")
        return {p.name: p for p in self.state.pods.values()
                if p.namespace == ns and p.annotations.get("volcano.sh/job-name") == name}

    def pod(self, name: str, ns: str = "ns") -> Pod:
        return self.state.pods[f"{ns}/{name}"]

    def events(self, reason: str | None = None) -> list:
        return [e for e in self.cluster.events if reason is None or e.reason == reason]

    # ---------------------------------------------------------- moves
    def sync(self) -> bool:
        return self.ctl.sync()

    def add(self, obj) -> None:
        self.cluster.add(obj)

    def enqueue(self, key: str = "ns/j", phase: str = "Inqueue") -> None:
        """What the scheduler's enqueue action does: the PodGroup leaves Pending."""
        pg = self.pg(key)
        assert pg is not None, "no PodGroup"
        pg.status.phase = phase
        self.cluster.mark_changed("PodGroup", pg.key)  # an in-place write: say so, as the simulator does

    def set_phase(self, name: str, phase: str, exit_code: int | None = None, restarts: int | None = None,
                  ns: str = "ns") -> None:
        """What the kubelet does: a pod starts, finishes or fails (with its first container's exit code)."""
        pod = self.pod(name, ns)
        if phase in ("Running", "Succeeded", "Failed") and not pod.spec.node_name:
            pod.spec.node_name = "n1"
        pod.status.phase = phase
        statuses = []
        if exit_code is not None or restarts is not None:
            st: dict = {"name": "main", "restartCount": restarts or 0, "ready": phase == "Running"}
            if exit_code is not None:
                st["state"] = {"terminated": {"exitCode": exit_code, "reason": "Error" if exit_code else "Completed"}}
            statuses.append(st)
            pod.status = type(pod.status).model_validate({**pod.status.dump(), "containerStatuses": statuses})
        self.cluster.mark_changed("Pod", pod.key)  # an in-place write: say so, as the simulator's kubelet does

    def run_all(self, key: str = "ns/j") -> None:
        for name in self.pods(key):
            self.set_phase(name, "Running")

    def start(self, key: str = "ns/j") -> None:
        """Sync, enqueue, create pods, run them all: the job reaches Running."""
        self.sync()
        self.enqueue(key)
        self.sync()
        self.run_all(key)
        self.sync()

    def evict(self, name: str, reason: str = "preempt", ns: str = "ns") -> None:
        """What the scheduler's preempt/reclaim does (grace 0: the pod is gone at once)."""
        self.cluster.mark_changed("Pod", f"{ns}/{name}")  # a test may have set fields in place before
        self.cluster.evict(f"{ns}/{name}", reason)

    def command(self, action: str, target: str = "j", kind: str = "Job", name: str | None = None) -> None:
        self.cluster.add(command(name or f"cmd-{action.lower()}-{len(self.cluster.events)}", action, kind, target,
                                 at=self.t))

    def advance(self, seconds: float) -> None:
        self.t += seconds

    def snapshot(self) -> dict:
        """Everything in the cluster, dumped, to compare before/after a sync."""
        st = self.state
        out = {}
        for attr in ("pods", "podgroups", "queues", "jobs", "commands"):
            out[attr] = {k: v.dump() for k, v in getattr(st, attr).items()}
        out["others"] = {kind: {k: v.dump() for k, v in objs.items()} for kind, objs in st.others.items()}
        out["events"] = len(self.cluster.events)
        return out
