"""What a job plugin is, the registry of plugins by name, and helpers the plugins share.

A job plugin (Volcano: pkg/controllers/job/plugins) hooks into the Job controller at four points:

- `on_pod_create(pod, job)`: change a pod before it is created (env vars, volumes, hostname, ports);
- `on_job_add(job, ctx)`: create the job's side objects (Service, ConfigMap, Secret, ...) when the job is
  (re)initialised, i.e. when it is Pending; guarded by the key `plugin-<name>` in status.controlledResources so
  that it happens once per incarnation;
- `on_job_update(job, ctx)`: keep those objects up to date while the job runs (svc: the hosts ConfigMap);
- `on_job_delete(job, ctx)`: remove them when the job is killed (restart, abort, finish) and drop the key.

Arguments are Go `flag`-style strings (`--port=23456`, `-port 23456`, `--publish-not-ready-addresses`), as
written in `spec.plugins.<name>` of the Job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Sequence

from magma.api.objects import (
    JOB_NAME_ANNOTATION,
    TASK_INDEX_ANNOTATION,
    TASK_SPEC_ANNOTATION,
    Container,
    Job,
    KubeModel,
    Object,
    Pod,
)
from magma.cluster.interface import Cluster

#: Label Volcano puts on pods for Service selectors (besides job-name).
JOB_NAMESPACE_LABEL = "volcano.sh/job-namespace"
DEFAULT_TASK_SPEC = "default"


@dataclass
class PluginContext:
    """What a plugin may touch while the controller runs it."""

    cluster: Cluster
    now: float
    #: status.controlledResources of the job being written (mutate it; the controller saves it).
    controlled: dict[str, str]
    #: Makes a uid for a new object from a seed (deterministic in the simulator).
    new_uid: Callable[[str], str]
    created: list[str] = field(default_factory=list)  # "Kind ns/name" written by the plugin (for the caller)

    def create_or_update(self, obj: Object, same: Callable[[Object], bool] | None = None) -> None:
        """Create `obj`, or replace the existing object of that key unless `same(existing)` says it is unchanged."""
        kind = obj.KIND or obj.kind
        existing = self.cluster.get(kind, obj.key)
        if existing is None:
            obj.metadata.uid = obj.metadata.uid or self.new_uid(f"{kind}/{obj.key}")
            obj.metadata.creation_timestamp = self.now
            self.cluster.create(obj)
            self.created.append(f"{kind} {obj.key}")
            return
        if same is not None and same(existing):
            return
        obj.metadata.uid = existing.metadata.uid
        obj.metadata.creation_timestamp = existing.metadata.creation_timestamp
        self.cluster.update(obj)
        self.created.append(f"{kind} {obj.key}")

    def create_if_missing(self, obj: Object) -> None:
        self.create_or_update(obj, same=lambda _existing: True)

    def delete(self, kind: str, key: str) -> None:
        if self.cluster.get(kind, key) is not None:
            self.cluster.delete(kind, key)


class JobPlugin:
    """Base class: a plugin with no effect. Subclasses set `name` and override the hooks they need."""

    name: ClassVar[str] = ""

    def __init__(self, args: Sequence[str] | None = None):
        self.args = [str(a) for a in (args or [])]

    # Hooks -----------------------------------------------------------------
    def on_pod_create(self, pod: Pod, job: Job) -> None:
        return None

    def on_job_add(self, job: Job, ctx: PluginContext) -> None:
        ctx.controlled[self.controlled_key] = self.name

    def on_job_update(self, job: Job, ctx: PluginContext) -> None:
        return None

    def on_job_delete(self, job: Job, ctx: PluginContext) -> None:
        ctx.controlled.pop(self.controlled_key, None)

    # Helpers ---------------------------------------------------------------
    @property
    def controlled_key(self) -> str:
        return f"plugin-{self.name}"

    def added(self, ctx: PluginContext) -> bool:
        return ctx.controlled.get(self.controlled_key) == self.name


# ---------------------------------------------------------------- registry

_REGISTRY: dict[str, type[JobPlugin]] = {}


def register(cls: type[JobPlugin]) -> type[JobPlugin]:
    """Class decorator: make a plugin available under its `name`."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    _REGISTRY[cls.name] = cls
    return cls


def plugin_class(name: str) -> type[JobPlugin] | None:
    return _REGISTRY.get(name)


def registered() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def build(name: str, args: Sequence[str] | None) -> JobPlugin | None:
    """An instance of the plugin `name` with its arguments, or None when no plugin has that name."""
    cls = _REGISTRY.get(name)
    return cls(args) if cls is not None else None


# ---------------------------------------------------------------- Go-style flags


def parse_flags(args: Sequence[str], defaults: dict[str, Any]) -> dict[str, Any]:
    """Values for the flags in `defaults` (their types decide the parsing), as Go's `flag` package reads them.

    Accepts `-name`, `--name`, `-name=value`, `--name=value`, and `-name value` for non-boolean flags. A boolean
    flag without a value is true. Unknown flags and bad values are skipped (Volcano logs them and carries on).
    """
    values = dict(defaults)
    i = 0
    args = list(args)
    while i < len(args):
        arg = args[i]
        i += 1
        if not arg.startswith("-") or arg in ("-", "--"):
            continue
        body = arg.lstrip("-")
        name, has_value, raw = body.partition("=")
        if name not in defaults:
            continue
        default = defaults[name]
        if isinstance(default, bool):
            if not has_value:
                values[name] = True
                continue
            low = raw.strip().lower()
            if low in ("1", "t", "true"):
                values[name] = True
            elif low in ("0", "f", "false"):
                values[name] = False
            continue
        if not has_value:
            if i >= len(args):
                continue
            raw = args[i]
            i += 1
        try:
            values[name] = int(raw) if isinstance(default, int) else str(raw)
        except ValueError:
            continue
    return values


# ---------------------------------------------------------------- pod editing helpers


def extra_list(model: KubeModel, key: str) -> list:
    """The untyped list field `key` (API spelling) of a model, created empty when missing."""
    extra = model.__pydantic_extra__
    if extra is None:  # pragma: no cover - every KubeModel keeps unknown fields
        raise TypeError(f"{type(model).__name__} keeps no extra fields")
    value = extra.get(key)
    if not isinstance(value, list):
        value = []
        extra[key] = value
    return value


def all_containers(pod: Pod) -> list[Container]:
    return list(pod.spec.containers) + list(pod.spec.init_containers)


def add_env(container: Container, name: str, value: str | None = None,
            value_from: dict[str, Any] | None = None) -> None:
    item: dict[str, Any] = {"name": name}
    if value_from is not None:
        item["valueFrom"] = value_from
    else:
        item["value"] = value if value is not None else ""
    container.env = [*container.env, item]  # assignment marks the field as set, so it is dumped


def env_value(container: Container, name: str) -> str | None:
    """The last value set for env var `name` (tests and plugins read env back this way)."""
    found = None
    for item in container.env:
        if isinstance(item, dict) and item.get("name") == name:
            found = item.get("value")
    return found


def add_volume(pod: Pod, volume: dict[str, Any]) -> None:
    extra_list(pod.spec, "volumes").append(volume)


def add_volume_mount(container: Container, mount: dict[str, Any]) -> None:
    extra_list(container, "volumeMounts").append(mount)


def task_of(pod: Pod) -> str:
    return pod.annotations.get(TASK_SPEC_ANNOTATION) or DEFAULT_TASK_SPEC


def index_of(pod: Pod) -> str:
    """The pod's index within its task: the last `-`-separated part of its name (as Volcano reads it)."""
    parts = pod.name.split("-")
    if len(parts) >= 3:
        return parts[-1]
    return pod.annotations.get(TASK_INDEX_ANNOTATION, "")


def pod_name(job_name: str, task_name: str, index: int) -> str:
    return f"{job_name}-{task_name}-{index}"


def domain_name(job: Job, task, index: int) -> str:
    """`<hostname>.<subdomain>` of a task's pod: the pod name and the job name unless the template sets them."""
    spec = task.template.spec
    host = spec.hostname or pod_name(job.name, task.name, index)
    sub = spec.subdomain or job.name
    return f"{host}.{sub}"


def task_hosts(job: Job, task) -> list[str]:
    """Host names of a task's pods; a template with a fixed hostname has a single host (Volcano's rule)."""
    hosts = []
    for i in range(task.replicas):
        hosts.append(domain_name(job, task, i))
        if task.template.spec.hostname:
            break
    return hosts


def controller_ref(job: Job) -> dict[str, Any]:
    """The ownerReference a Job's objects carry (controller: true, as metav1.NewControllerRef makes it)."""
    return {
        "apiVersion": Job.API_VERSION,
        "kind": "Job",
        "name": job.name,
        "uid": job.metadata.uid or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def job_selector(job: Job) -> dict[str, str]:
    return {JOB_NAME_ANNOTATION: job.name, JOB_NAMESPACE_LABEL: job.namespace}


__all__ = [
    "JobPlugin", "PluginContext", "register", "plugin_class", "registered", "build", "parse_flags",
    "extra_list", "all_containers", "add_env", "env_value", "add_volume", "add_volume_mount", "task_of",
    "index_of", "pod_name", "domain_name", "task_hosts", "controller_ref", "job_selector",
    "JOB_NAMESPACE_LABEL", "DEFAULT_TASK_SPEC",
]
