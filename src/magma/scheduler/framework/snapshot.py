"""From cluster objects to the session's records (Volcano's cache snapshot).

Rules, as Volcano's cache applies them:
- only Ready nodes take part (pods on other nodes are ignored);
- a job is a PodGroup whose queue exists; its tasks are the pods that name it in their group annotation
  and live in the same namespace (seed pitfall 2: a cross-namespace reference is ignored);
- a pod with magma's scheduler name and no group gets a group of its own (minMember 1), as Volcano's
  PodGroup controller makes one for it; pods of other schedulers only use node capacity (seed pitfall 1);
- job priority comes from the PodGroup's PriorityClass (else the global default, else 0); a pod's from
  spec.priority, else its PriorityClass, else 1 (as the API server's Priority admission would set it),
  overridden by the annotation `volcano.sh/task-priority`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from magma.api.objects import (
    PREEMPTABLE_ANNOTATION,
    QUEUE_NAME_ANNOTATION,
    TASK_PRIORITY_ANNOTATION,
    TASK_SPEC_ANNOTATION,
    Pod,
    PodGroup,
)
from magma.api.resources import PODS, Resources
from magma.cluster.interface import ClusterState

from .info import JobInfo, NodeInfo, QueueInfo, TaskInfo, TaskStatus
from .nodes import NodeTable

DEFAULT_SCHEDULER_NAMES = ("volcano", "magma")
CRITICAL_CLASSES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
_INDEX = re.compile(r"-(\d+)$")


@dataclass
class Snapshot:
    jobs: dict[str, JobInfo] = field(default_factory=dict)
    queues: dict[str, QueueInfo] = field(default_factory=dict)
    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    table: NodeTable = field(default_factory=lambda: NodeTable([], []))
    total: Resources = field(default_factory=Resources)
    now: float = 0.0
    skipped: list[str] = field(default_factory=list)  # why objects were left out, for reasons
    # Set by the scheduler's incremental snapshot (cache.py): the records outlive the session, which must then
    # note the tasks and nodes it changes (Session._touch) so that they are put back before the next one.
    persistent: bool = False
    node_list: list[NodeInfo] | None = None  # nodes by table row, when the snapshot already has them
    # How many tasks on the nodes have a pod with a required pod anti-affinity term (`requires_anti`), when the
    # snapshot keeps count (cache.py); None: not counted.
    anti_carriers: int | None = None


def _time(ts: object, default: float = 0.0) -> float:
    if isinstance(ts, (int, float)):
        return float(ts)
    if hasattr(ts, "timestamp"):
        return ts.timestamp()
    if isinstance(ts, str):
        from datetime import datetime

        try:
            return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return default
    return default


def task_status(pod: Pod) -> TaskStatus:
    phase = pod.status.phase or "Pending"
    deleting = pod.metadata.deletion_timestamp is not None
    if phase == "Running":
        return TaskStatus.RELEASING if deleting else TaskStatus.RUNNING
    if phase == "Pending":
        if deleting:
            return TaskStatus.RELEASING
        return TaskStatus.BOUND if pod.spec.node_name else TaskStatus.PENDING
    if phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if phase == "Failed":
        return TaskStatus.FAILED
    return TaskStatus.UNKNOWN


def _flag(value: str | None, default: bool) -> bool:
    if value is None:
        return default
    return value.strip().lower() == "true"


def build(state: ClusterState, scheduler_names: Iterable[str] = DEFAULT_SCHEDULER_NAMES) -> Snapshot:
    return _build(state, set(scheduler_names))


def priorities(state: ClusterState) -> tuple[dict[str, int], int, set[str]]:
    """(PriorityClass values with the critical classes, the global default value, classes that never preempt)."""
    pcs = {n: pc.value for n, pc in state.priority_classes.items()}
    pcs.update({k: v for k, v in CRITICAL_CLASSES.items() if k not in pcs})
    global_default = next((pc.value for pc in state.priority_classes.values() if pc.global_default), 0)
    never = {n for n, pc in state.priority_classes.items() if pc.preemption_policy == "Never"}
    return pcs, global_default, never


def queue_info(q: Any) -> QueueInfo:
    """One queue's record, its children left empty (`queues` links the tree)."""
    return QueueInfo(
        name=q.name,
        weight=q.spec.weight if q.spec.weight and q.spec.weight > 0 else 1,
        capability=q.capability(),
        guarantee=q.guarantee(),
        deserved_spec=q.deserved(),
        reclaimable=q.reclaimable,
        parent=q.parent_name,
        priority=q.spec.priority or 0,
        state=q.state,
        creation=_time(q.metadata.creation_timestamp),
        uid=q.metadata.uid or q.name,
        queue=q,
    )


def queues(state: ClusterState) -> dict[str, QueueInfo]:
    """Queues and their tree."""
    out: dict[str, QueueInfo] = {q.name: queue_info(q) for q in state.queues.values()}
    for q in out.values():
        if q.parent in out:
            out[q.parent].children.append(q.name)
    return out


def _build(state: ClusterState, names: set[str], job_cls: type[JobInfo] = JobInfo, index=None) -> Snapshot:
    """The snapshot; `index`, when given, is told where every PodGroup and pod went (the incremental
    snapshot's bookkeeping, cache.py), and jobs are made of `job_cls`."""
    snap = Snapshot(now=state.now)
    pcs, global_default, never = priorities(state)
    snap.queues = queues(state)

    # Ready nodes.
    ready = [n for n in state.nodes.values() if n.ready()]
    allocs = [n.allocatable() for n in ready]
    pods = list(state.pods.values())
    extra = set()
    requests = [p.spec.request() for p in pods]  # in pod order
    for req in requests:
        extra.update(req)
    extra.discard(PODS)
    snap.table = table = NodeTable([n.name for n in ready], allocs, extra)
    for n, alloc in zip(ready, allocs):
        snap.nodes[n.name] = NodeInfo(
            name=n.name, index=table.row[n.name], labels=dict(n.labels), taints=list(n.spec.taints),
            unschedulable=n.spec.unschedulable, allocatable=alloc, annotations=dict(n.annotations),
        )
    snap.total = table.total().without(PODS)

    # Jobs from PodGroups whose queue exists.
    by_key: dict[str, JobInfo] = {}
    for pg in state.podgroups.values():
        queue = pg.spec.queue or "default"
        if queue not in snap.queues:
            snap.skipped.append(f"PodGroup {pg.key}: queue {queue!r} does not exist")
            if index is not None:
                index.podgroup(pg, None)
            continue
        job = _job_from_podgroup(pg, queue, pcs, global_default, job_cls)
        snap.jobs[job.uid] = job  # keyed by uid, as TaskInfo.job refers to it
        by_key[pg.key] = job
        if index is not None:
            index.podgroup(pg, job)

    for p, req in zip(pods, requests):
        status = task_status(p)
        group = p.group_name
        owned = p.spec.scheduler_name in names
        job_key = f"{p.namespace}/{group}" if group else None
        job = by_key.get(job_key) if job_key else None
        bare = None
        if job is None and owned and not group:
            job = bare = _job_for_bare_pod(p, pcs, global_default, snap, job_cls)
        task = None
        if job is not None:
            task = _task(p, job, status, req, pcs, never)
            job.tasks[task.uid] = task
        # Every pod on a Ready node uses its capacity, whoever scheduled it.
        node = snap.nodes.get(p.spec.node_name or "")
        if node is not None and status not in (TaskStatus.SUCCEEDED, TaskStatus.FAILED):
            t = task or _task(p, None, status, req, pcs, never)
            t.node = node.name
            t.vec = table.vec(t.resreq)
            node.tasks[t.uid] = t
            table.add_task(node.index, t)
        else:
            t = task
            node = None
        if index is not None:
            index.pod(p, req, job_key, job, bare, t, node)
    for job in snap.jobs.values():
        for t in job.tasks.values():
            if t.vec is None:
                t.vec = table.vec(t.resreq)
    return snap


def _job_from_podgroup(pg: PodGroup, queue: str, pcs: dict[str, int], default: int,
                       job_cls: type[JobInfo] = JobInfo) -> JobInfo:
    owner = _job_owner(pg)
    return job_cls(
        uid=pg.metadata.uid or pg.key,
        name=pg.name,
        namespace=pg.namespace,
        queue=queue,
        priority=pcs.get(pg.spec.priority_class_name or "", default),
        min_available=pg.spec.min_member,
        task_min_available=dict(pg.spec.min_task_member),
        min_resources=pg.min_resources(),
        creation=_time(pg.metadata.creation_timestamp),
        phase=podgroup_phase(pg),
        podgroup=pg,
        owner_job=f"{pg.namespace}/{owner.name}" if owner else None,
        preemptable=_flag(pg.annotations.get(PREEMPTABLE_ANNOTATION), True),
    )


def _job_owner(pg: PodGroup) -> Any:
    """The PodGroup's owner reference to a Job, or None."""
    return next((o for o in pg.metadata.owner_references if o.kind == "Job"), None)


def podgroup_phase(pg: PodGroup) -> str:
    return pg.status.phase or "Pending"


def podgroup_inputs(pg: PodGroup) -> tuple:
    """Everything `_job_from_podgroup` reads of a PodGroup but its status, as a value: PodGroups with equal inputs
    (under the same PriorityClasses) give jobs equal in every field but the phase. (A PodGroup's spec may be
    changed in place: the controller does so.)"""
    meta, spec = pg.metadata, pg.spec
    owner = _job_owner(pg)
    return (meta.uid, pg.name, pg.namespace, spec.queue, spec.priority_class_name, spec.min_member,
            tuple(spec.min_task_member.items()), tuple(spec.min_resources.items()), meta.creation_timestamp,
            owner.name if owner is not None else None, pg.annotations.get(PREEMPTABLE_ANNOTATION))


def _job_for_bare_pod(p: Pod, pcs: dict[str, int], default: int, snap: Snapshot,
                      job_cls: type[JobInfo] = JobInfo) -> JobInfo | None:
    job = bare_pod_job(p, snap.queues, pcs, default, job_cls)
    if job is None:
        snap.skipped.append(bare_pod_skipped(p))
        return None
    snap.jobs[job.uid] = job
    return job


def bare_pod_job(p: Pod, queues: dict[str, QueueInfo], pcs: dict[str, int], default: int,
                 job_cls: type[JobInfo] = JobInfo) -> JobInfo | None:
    """The job of its own that a pod without a group gets (None when its queue does not exist)."""
    queue = p.annotations.get(QUEUE_NAME_ANNOTATION) or "default"
    if queue not in queues:
        return None
    key = f"{p.namespace}/podgroup-{p.metadata.uid or p.name}"
    return job_cls(
        uid=key, name=f"podgroup-{p.metadata.uid or p.name}", namespace=p.namespace, queue=queue,
        priority=pcs.get(p.spec.priority_class_name or "", default), min_available=1,
        creation=_time(p.metadata.creation_timestamp),
        phase="Running" if p.spec.node_name else "Inqueue",
    )


def bare_pod_skipped(p: Pod) -> str:
    queue = p.annotations.get(QUEUE_NAME_ANNOTATION) or "default"
    return f"Pod {p.key}: queue {queue!r} does not exist"


def podgroup_skipped(pg: PodGroup) -> str:
    return f"PodGroup {pg.key}: queue {(pg.spec.queue or 'default')!r} does not exist"


def _task(p: Pod, job: JobInfo | None, status: TaskStatus, req: Resources, pcs: dict[str, int],
          never: set[str], kept: TaskInfo | None = None) -> TaskInfo:
    """The pod's task; `kept`, a task made earlier from the same pod object with the same `req`, gives its request
    and shape (fast path pod_facts_kept)."""
    a = p.annotations
    spec, meta = p.spec, p.metadata
    name, namespace = p.name, p.namespace
    pcn = spec.priority_class_name or ""
    if spec.priority is not None:
        priority = spec.priority
    else:
        priority = pcs.get(pcn, 1)
    if TASK_PRIORITY_ANNOTATION in a:
        try:
            priority = int(a[TASK_PRIORITY_ANNOTATION])
        except ValueError:
            pass
    m = _INDEX.search(name)
    preemptable = a.get(PREEMPTABLE_ANNOTATION, p.labels.get(PREEMPTABLE_ANNOTATION))
    return TaskInfo(
        uid=meta.uid or p.key,
        name=name,
        namespace=namespace,
        job=job.uid if job else "",
        role=a.get(TASK_SPEC_ANNOTATION, ""),
        index=int(m.group(1)) if m else 0,
        resreq=kept.resreq if kept is not None else req.without(PODS),
        status=status,
        node=spec.node_name if status is not TaskStatus.PENDING else None,
        priority=priority,
        preemptable=_flag(preemptable, job.preemptable if job else True),
        critical=pcn in CRITICAL_CLASSES or namespace == "kube-system",
        never_preempts=spec.preemption_policy == "Never" or pcn in never,
        creation=_time(meta.creation_timestamp),
        pod=p,
        shape=kept.shape if kept is not None else _shape(p),
    )


def _shape(p: Pod) -> tuple:
    """What predicates read from a pod, as a hashable key: equal shapes filter the same nodes."""
    s = p.spec
    return (
        tuple(sorted(s.node_selector.items())),
        s.affinity.model_dump_json() if s.affinity else "",
        tuple(t.model_dump_json() for t in s.tolerations),
        tuple(c.model_dump_json() for c in s.topology_spread_constraints),
        tuple(sorted(p.labels.items())),
        p.namespace,
    )


def requires_anti(pod: Any) -> bool:
    """Whether the pod has a required pod anti-affinity term (what the node index parses into `req_anti`)."""
    aff = pod.spec.affinity
    paa = aff.pod_anti_affinity if aff else None
    return paa is not None and bool(paa.required_during_scheduling_ignored_during_execution)


def anti_carriers(snap: Snapshot) -> int:
    """`Snapshot.anti_carriers` counted over the snapshot's nodes."""
    return sum(1 for nd in snap.nodes.values() for t in nd.tasks.values() if t.pod is not None and requires_anti(t.pod))
