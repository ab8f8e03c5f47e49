"""The scheduling loop: open a session over the cluster's state, run the configured actions, close it.

    state ──► snapshot.build ──► Session (plugins register) ──► actions ──► close: statuses, events, reasons

`Scheduler.run_once()` is one Volcano session; the simulator calls it at every period on the in-memory
cluster, `magma scheduler` on a timer against Kubernetes.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable

from magma.api.objects import PodGroupCondition, PodGroupStatus
from magma.cluster.interface import Cluster

from . import actions as _actions  # noqa: F401  (registers the actions)
from . import plugins as _plugins  # noqa: F401  (registers the plugins)
from .framework import ACTIONS, PLUGINS, JobInfo, Session, TaskStatus, build
from .framework.snapshot import DEFAULT_SCHEDULER_NAMES
from .reasons import job_reason

S = TaskStatus


@dataclass
class SessionResult:
    """What one session decided, with the reason for every job that is not running."""

    uid: str
    time: float
    binds: list[tuple[str, str]] = field(default_factory=list)
    evictions: list[tuple[str, str]] = field(default_factory=list)
    evicted_uids: dict[str, str] = field(default_factory=dict)  # pod uid -> preempt | reclaim
    reasons: dict[str, str] = field(default_factory=dict)  # job key -> why it waits, in numbers
    phases: dict[str, str] = field(default_factory=dict)  # job key -> PodGroup phase after the session
    latency_ms: float = 0.0
    action_ms: dict[str, float] = field(default_factory=dict)
    queue_status: dict[str, dict] = field(default_factory=dict)
    # queue -> {"deserved": Resources, "allocated": Resources, ...} as the share plugin published it
    queue_shares: dict[str, dict] = field(default_factory=dict)


class Scheduler:
    def __init__(self, cluster: Cluster, config: Any, scheduler_names: Iterable[str] = DEFAULT_SCHEDULER_NAMES):
        self.cluster = cluster
        self.config = config
        self.scheduler_names = tuple(scheduler_names)

    def open_session(self) -> Session:
        snap = build(self.cluster.state(), self.scheduler_names)
        tiers = [list(t.plugins) for t in self.config.tiers]
        ssn = Session(snap, self.config, tiers, self.cluster)
        ssn.uid = uuid.uuid4().hex[:12]
        for tier in tiers:
            for opt in tier:
                cls = PLUGINS.get(opt.name)
                if cls is None:
                    continue  # known to Volcano, not implemented: the config loader already warned
                p = cls(dict(opt.arguments or {}))
                ssn.plugins[opt.name] = p
                p.on_session_open(ssn)
        return ssn

    def run_once(self) -> SessionResult:
        started = time.perf_counter()
        ssn = self.open_session()
        result = SessionResult(uid=ssn.uid, time=ssn.now)
        for name in self.config.runnable_actions:
            t0 = time.perf_counter()
            ACTIONS[name](ssn, self.config.action_arguments(name))
            result.action_ms[name] = (time.perf_counter() - t0) * 1000
        close_session(ssn, result)
        result.latency_ms = (time.perf_counter() - started) * 1000
        return result


def close_session(ssn: Session, result: SessionResult) -> None:
    for job in ssn.jobs.values():
        if not job.is_ready() or job.pending_tasks():
            reason = job_reason(ssn, job)
            if reason:
                job.reason = reason
    for p in ssn.plugins.values():
        close = getattr(p, "on_session_close", None)
        if close:
            close(ssn)
    for job in ssn.jobs.values():
        if job.reason and job.count({S.PENDING, S.PIPELINED}):
            result.reasons[job.key] = job.reason
        status = podgroup_status(ssn, job)
        result.phases[job.key] = status.phase
        if job.podgroup is not None and _changed(job.podgroup.status, status) and ssn.cluster is not None:
            ssn.cluster.update_podgroup_status(job.key, status)
    result.queue_status = queue_status(ssn)
    result.queue_shares = dict(getattr(ssn, "queue_shares", {}) or {})
    if ssn.cluster is not None:
        for name, st in result.queue_status.items():
            ssn.cluster.update_queue_status(name, st)
        for ev in ssn.events:
            ssn.cluster.record_event(*ev)
    result.binds = list(ssn.binds)
    result.evictions = list(ssn.evictions)
    result.evicted_uids = dict(ssn.evicted_uids)


def podgroup_status(ssn: Session, job: JobInfo) -> PodGroupStatus:
    """PodGroup phase and counts at close (reference §1)."""
    conditions = list(job.podgroup.status.conditions) if job.podgroup is not None else []
    if job.conditions is not None:
        conditions = job.conditions
    unschedulable_now = any(
        c.type == "Unschedulable" and c.status == "True" and c.transition_id == ssn.uid for c in conditions
    )
    running = job.count({S.RUNNING})
    if running and unschedulable_now:
        phase = "Unknown"
    else:
        scheduled = job.count({S.RUNNING, S.BOUND, S.BINDING, S.FAILED, S.SUCCEEDED}) + sum(
            1 for t in job.tasks.values() if t.status is S.RELEASING and t.node
        )
        if scheduled >= job.min_available and scheduled > 0:
            finished = job.count({S.SUCCEEDED, S.FAILED})
            phase = "Completed" if finished == len(job.tasks) else "Running"
        elif job.phase == "Inqueue":
            phase = "Inqueue"
        else:
            phase = "Pending"
    return PodGroupStatus(
        phase=phase, conditions=conditions, running=running,
        succeeded=job.count({S.SUCCEEDED}), failed=job.count({S.FAILED}),
    )


def _changed(old: PodGroupStatus, new: PodGroupStatus) -> bool:
    def key(s: PodGroupStatus):
        return (s.phase, s.running, s.succeeded, s.failed,
                [(c.type, c.status, c.reason, c.message) for c in s.conditions])

    return key(old) != key(new)


def set_condition(ssn: Session, job: JobInfo, type_: str, reason: str, message: str) -> None:
    """Record this session's condition on the job (written with the PodGroup status at close)."""
    base = list(job.podgroup.status.conditions) if job.podgroup is not None else []
    base = [c for c in base if c.type != type_]
    base.append(PodGroupCondition(type=type_, status="True", reason=reason, message=message,
                                  transitionID=ssn.uid, lastTransitionTime=ssn.now))
    job.conditions = base


def queue_status(ssn: Session) -> dict[str, dict]:
    """Allocated resources per queue, rolled up to the parents: the part of Queue status the scheduler owns.

    PodGroup counts belong to the queue controller (as in Volcano); writing them here too would make the two
    fight over the same fields every session.
    """
    allocated = {q: ssn.queue_allocated(q) for q in ssn.queues}
    out: dict[str, dict] = {}
    for name, q in ssn.queues.items():
        total = allocated[name]
        stack = list(q.children)
        while stack:
            child = stack.pop()
            total = total + allocated.get(child, type(total)())
            stack.extend(ssn.queues[child].children if child in ssn.queues else [])
        out[name] = {"allocated": total.to_quantities()}
    return out
