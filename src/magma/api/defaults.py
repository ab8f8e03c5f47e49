"""Volcano's mutating defaults, as pure functions.

Each `default_*` function takes an object and returns a NEW object with the defaults Volcano's mutating
webhooks (and the CRD schema defaults) would have filled in; the input is never changed. The new object keeps
the input's `source`, so problems found on it still point at the user's file and lines.

What Volcano does (pkg/webhooks/admission/*/mutate, CRD defaults), restated:

- Job: queue `default`; schedulerName `volcano`; maxRetry 3 when unset or 0; each task: name `default<i>` when
  empty, minAvailable = replicas when unset (minPartitions x partitionSize when a partition policy sets
  minPartitions), maxRetry 3 when unset or 0, dnsPolicy ClusterFirstWithHostNet for hostNetwork pods without one;
  job minAvailable = sum of the tasks' minAvailable when unset or 0; plugin `svc` added when tensorflow, mpi,
  pytorch or ray is on, plugin `ssh` added when mpi is on. Volcano sets no default lifecycle policies.
- Queue: reclaimable true when unset; weight 1 when unset or 0; status.state Open when unset (the queue controller
  opens new queues). The built-in `root` queue is created by Volcano with reclaimable false.
- PodGroup: queue `default` when unset (CRD default); a namespace annotation `scheduling.volcano.sh/queue-name`
  replaces `default` when the caller knows it (offline, nobody does).
"""

from __future__ import annotations

from typing import Iterable, Mapping, TypeVar

from .copying import deep_copy
from .objects import Job, Object, PodGroup, PriorityClass, Queue, Source

DEFAULT_QUEUE = "default"
ROOT_QUEUE = "root"
DEFAULT_SCHEDULER_NAME = "volcano"
DEFAULT_MAX_RETRY = 3
DEFAULT_TASK_PREFIX = "default"
DEFAULT_QUEUE_WEIGHT = 1

#: Job plugins that need the svc plugin; Volcano's mutating webhook adds `svc` when one of them is on.
PLUGINS_NEEDING_SVC = ("tensorflow", "mpi", "pytorch", "ray")

#: Where built-in objects (queues `default` and `root`, the system PriorityClasses) "come from".
BUILTIN_FILE = "<built-in>"

SYSTEM_PRIORITY_CLASSES: dict[str, int] = {
    "system-cluster-critical": 2000000000,
    "system-node-critical": 2000001000,
}

T = TypeVar("T", bound=Object)


def _copy(obj: T) -> T:
    """A deep copy that shares the original's Source (file and field lines, which are never changed) and its
    quantities (never changed either: see api.copying)."""
    new = obj.model_copy()  # shallow: fields, fields-set and private attributes copied one level
    for name, value in list(new.__dict__.items()):
        new.__dict__[name] = deep_copy(value)
    if new.__pydantic_extra__:
        new.__pydantic_extra__ = deep_copy(new.__pydantic_extra__)
    new.with_source(obj.source)
    return new


def default_task_name(index: int) -> str:
    return f"{DEFAULT_TASK_PREFIX}{index}"


def _partition_min_available(task) -> int | None:
    """minPartitions x partitionSize when the task's (untyped) partitionPolicy sets minPartitions > 0."""
    extra = task.model_extra or {}
    policy = extra.get("partitionPolicy")
    if not isinstance(policy, dict):
        return None
    min_partitions = policy.get("minPartitions")
    size = policy.get("partitionSize")
    if isinstance(min_partitions, int) and not isinstance(min_partitions, bool) and min_partitions > 0 \
            and isinstance(size, int) and not isinstance(size, bool):
        return min_partitions * size
    return None


def default_job(job: Job, scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> Job:
    """The job as Volcano's mutating webhook leaves it on create."""
    new = _copy(job)
    spec = new.spec
    if not spec.queue:
        spec.queue = DEFAULT_QUEUE
    if not spec.scheduler_name:
        spec.scheduler_name = scheduler_name
    if not spec.max_retry:
        spec.max_retry = DEFAULT_MAX_RETRY
    for i, task in enumerate(spec.tasks):
        if not task.name:
            task.name = default_task_name(i)
        pod_spec = task.template.spec
        extra = pod_spec.model_extra if pod_spec.model_extra is not None else {}
        if extra.get("hostNetwork") is True and not extra.get("dnsPolicy"):
            setattr(pod_spec, "dnsPolicy", "ClusterFirstWithHostNet")
        if task.min_available is None:
            from_partitions = _partition_min_available(task)
            task.min_available = from_partitions if from_partitions is not None else task.replicas
        if not task.max_retry:
            task.max_retry = DEFAULT_MAX_RETRY
    if not spec.min_available:
        spec.min_available = sum(
            (t.min_available if t.min_available is not None else t.replicas) for t in spec.tasks
        )
    if "plugins" in spec.model_fields_set or spec.plugins:
        plugins = dict(spec.plugins)
        if any(name in plugins for name in PLUGINS_NEEDING_SVC) and "svc" not in plugins:
            plugins["svc"] = []
        if "mpi" in plugins and "ssh" not in plugins:
            plugins["ssh"] = []
        if plugins != spec.plugins:
            spec.plugins = plugins
    return new


def job_defaults_missing(job: Job) -> bool:
    """True when `default_job` would set something on this job; False means `default_job(job)` has the same spec
    (every default it fills in is already there), so a caller can skip the copy. Mirrors default_job's tests."""
    spec = job.spec
    if not spec.queue or not spec.scheduler_name or not spec.max_retry or not spec.min_available:
        return True
    for task in spec.tasks:
        if not task.name or task.min_available is None or not task.max_retry:
            return True
        extra = task.template.spec.model_extra if task.template.spec.model_extra is not None else {}
        if extra.get("hostNetwork") is True and not extra.get("dnsPolicy"):
            return True
    plugins = spec.plugins
    if plugins:
        if any(name in plugins for name in PLUGINS_NEEDING_SVC) and "svc" not in plugins:
            return True
        if "mpi" in plugins and "ssh" not in plugins:
            return True
    return False


def default_queue(queue: Queue) -> Queue:
    """The queue as Volcano's mutating webhook and queue controller leave it."""
    new = _copy(queue)
    if new.spec.reclaimable is None:
        # Volcano creates `root` itself with reclaimable false; a manifest for `root` updates that object,
        # and the mutating webhook (create only) does not run.
        new.spec.reclaimable = queue.name != ROOT_QUEUE
    if not new.spec.weight:
        new.spec.weight = DEFAULT_QUEUE_WEIGHT
    if not new.status.state:
        new.status.state = "Open"
    return new


def default_podgroup(podgroup: PodGroup, namespace_queue: str | None = None) -> PodGroup:
    """The PodGroup with its queue defaulted: `default`, or the namespace's queue annotation when known."""
    new = _copy(podgroup)
    if not new.spec.queue:
        new.spec.queue = DEFAULT_QUEUE
    if namespace_queue and new.spec.queue == DEFAULT_QUEUE:
        new.spec.queue = namespace_queue
    return new


# ---------------------------------------------------------------- built-ins


def builtin_queues() -> list[Queue]:
    """The queues Volcano creates at start: `root` (reclaimable false) and `default` (reclaimable true)."""
    out = []
    for name, reclaimable in ((ROOT_QUEUE, False), (DEFAULT_QUEUE, True)):
        q = Queue.model_validate({
            "apiVersion": Queue.API_VERSION, "kind": "Queue", "metadata": {"name": name},
            "spec": {"weight": 1, "reclaimable": reclaimable}, "status": {"state": "Open"},
        })
        q.with_source(Source(file=BUILTIN_FILE, line=0))
        out.append(q)
    return out


def builtin_priority_classes() -> list[PriorityClass]:
    out = []
    for name, value in SYSTEM_PRIORITY_CLASSES.items():
        pc = PriorityClass.model_validate({
            "apiVersion": PriorityClass.API_VERSION, "kind": "PriorityClass", "metadata": {"name": name},
            "value": value,
        })
        pc.with_source(Source(file=BUILTIN_FILE, line=0))
        out.append(pc)
    return out


def is_builtin(obj: Object) -> bool:
    return obj.source.file == BUILTIN_FILE


# ---------------------------------------------------------------- priorities


def _as_mapping(priority_classes: Mapping[str, PriorityClass] | Iterable[PriorityClass]) -> Mapping[str, PriorityClass]:
    if isinstance(priority_classes, Mapping):
        return priority_classes
    return {pc.name: pc for pc in priority_classes}


def default_priority_class(
    priority_classes: Mapping[str, PriorityClass] | Iterable[PriorityClass],
) -> PriorityClass | None:
    """The globalDefault PriorityClass (the first one, when several claim it), else None."""
    for pc in _as_mapping(priority_classes).values():
        if pc.global_default:
            return pc
    return None


def priority_of(
    name: str | None,
    priority_classes: Mapping[str, PriorityClass] | Iterable[PriorityClass],
) -> int:
    """A job's priority as Volcano computes it: the named class's value, else the global default's, else 0."""
    classes = _as_mapping(priority_classes)
    if name and name in classes:
        return classes[name].value
    if name in SYSTEM_PRIORITY_CLASSES:
        return SYSTEM_PRIORITY_CLASSES[name]
    default = default_priority_class(classes)
    return default.value if default is not None else 0
