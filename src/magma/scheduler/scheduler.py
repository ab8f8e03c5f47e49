"""The scheduling loop: open a session over the cluster's state, run the configured actions, close it.

    state ──► snapshot.build ──► Session (plugins register) ──► actions ──► close: statuses, events, reasons

`Scheduler.run_once()` is one Volcano session; the simulator calls it at every period on the in-memory
cluster, `magma scheduler` on a timer against Kubernetes.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from magma.api.objects import PodGroupCondition, PodGroupStatus
from magma.api.resources import Resources
from magma.cluster.interface import Cluster

from . import actions as _actions  # noqa: F401  (registers the actions)
from . import plugins as _plugins  # noqa: F401  (registers the plugins)
from .framework import ACTIONS, PLUGINS, READY, JobInfo, Session, Snapshot, TaskStatus, build, fastpath
from .framework.cache import SnapshotCache, cache_supported
from .framework.jobindex import JobIndex, session_jobs
from .framework.kept import Memo
from .framework.snapshot import DEFAULT_SCHEDULER_NAMES
from .plugins._queuetree import (_task_dims, dominant_share, has_min_resources, job_elastic, job_inqueue,
                                  job_min_resources, job_request)
from .plugins.gang import SCHEDULED_REASON
from .plugins.gang import is_ready as gang_is_ready
from .plugins.gang import validate as gang_validate
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
    # job key -> {"start": planned start or None, "nodes": [...], ...} (reservation plugin)
    reservations: dict[str, dict] = field(default_factory=dict)
    backfilled: list[str] = field(default_factory=list)  # job keys started this session as backfill
    # the events the same session would record again, run on what this one wrote (Session.repeat_events)
    repeat_events: list[tuple[str, str, str, str, str]] = field(default_factory=list)


class Scheduler:
    def __init__(self, cluster: Cluster, config: Any, scheduler_names: Iterable[str] = DEFAULT_SCHEDULER_NAMES):
        self.cluster = cluster
        self.config = config
        self.scheduler_names = tuple(scheduler_names)
        self.cache: SnapshotCache | None = None  # the incremental snapshot (framework/cache.py), made on first use
        # Made once per configuration object (its options never change; `_plugin_setups`): the plugin options per
        # tier, the plugins to make, and the flags' plugins that sessions share (fastpath.plugin_flags_kept).
        self._setups_of: Any = None
        self._flag_names: dict = {}
        self._setups: list[tuple[str, type, dict]] = []
        self._tiers: tuple = ()
        self._supported: tuple | None = None  # (cluster, config, whether the snapshot can be kept for them)

    def snapshot(self) -> Snapshot:
        """The session's snapshot: the kept one brought up to date when the cluster keeps a change log and the
        configuration allows it (fastpath.incremental_snapshot), else built from every object."""
        state = self.cluster.state()
        if fastpath.incremental_snapshot and self._cache_supported():
            return self._kept().snapshot(self.cluster, state)
        return build(state, self.scheduler_names)

    def _cache_supported(self) -> bool:
        """`cache_supported(self.cluster, self.config)`, asked again only for another cluster or configuration
        object (a configuration's options never change; asked before every ingest and session)."""
        got = self._supported
        if got is None or got[0] is not self.cluster or got[1] is not self.config:
            got = self._supported = (self.cluster, self.config, cache_supported(self.cluster, self.config))
        return got[2]

    def _kept(self) -> SnapshotCache:
        """The incremental snapshot, made on first use, with the job index when fastpath.job_index is on."""
        if self.cache is None:
            self.cache = SnapshotCache(self.scheduler_names)
        if not fastpath.job_index:
            self.cache.index = None
        elif self.cache.index is None:
            self.cache.index = JobIndex(job_figures, quiet_phase, self.cache.touched)
        return self.cache

    def ingest(self) -> bool:
        """Take in what the cluster wrote since the last call or session (new pods become tasks, ...), outside
        any session, as Volcano's scheduler cache does from its informers. The next session's snapshot then
        takes only later changes. False (nothing done) when the scheduler builds its snapshot afresh."""
        if not (fastpath.incremental_snapshot and self._cache_supported()):
            return False
        self._kept().ingest(self.cluster, self.cluster.state())
        return True

    def records_version(self) -> int | None:
        """A number that changes whenever ingesting altered the kept job, task or node records (None: no kept
        records). Equal numbers around an ingest mean the cluster's writes changed nothing a session reads of
        pods and PodGroups but the PodGroups' status counts and conditions (close writes them)."""
        return self.cache.records_version if self.cache is not None and self.cache.snap is not None else None

    def open_session(self) -> Session:
        snap = self.snapshot()
        tiers, setups = self._plugin_setups()
        ssn = Session(snap, self.config, tiers, self.cluster)
        if fastpath.plugin_flags_kept:
            ssn.flag_names = self._flag_names
        if snap.persistent and self.cache is not None:
            self.cache.opened(ssn)  # its changes to the kept records are put back before the next snapshot
            index = self.cache.index
            if index is not None and index.usable(ssn):
                ssn.job_index = index  # the plugins' sums at open, the jobs the steps visit (jobindex.py)
        ssn.uid = os.urandom(6).hex()  # (uuid4().hex[:12]: its first six bytes are random alike)
        for name, cls, arguments in setups:
            p = cls(dict(arguments))
            ssn.plugins[name] = p
            p.on_session_open(ssn)
        if ssn.job_index is not None and set(ssn._fns["job_valid"]) - {"gang"}:
            ssn.job_index = None  # quiet_phase knows gang's JobValid only: visit every job
        return ssn

    def _plugin_setups(self) -> tuple[tuple, list[tuple[str, type, dict]]]:
        """The plugin options per tier that sessions read, and per configured plugin that magma implements, in tier
        order: its name, class and arguments. Made again only for another configuration object (its options never
        change)."""
        if self._setups_of is not self.config:
            self._tiers = tuple(tuple(t.plugins) for t in self.config.tiers)
            setups = []
            for tier in self.config.tiers:
                for opt in tier.plugins:
                    cls = PLUGINS.get(opt.name)
                    if cls is None:
                        continue  # known to Volcano, not implemented: the config loader already warned
                    setups.append((opt.name, cls, dict(opt.arguments or {})))
            self._setups_of, self._setups, self._flag_names = self.config, setups, {}
        return self._tiers, self._setups

    def run_once(self) -> SessionResult:
        started = time.perf_counter()
        ssn = self.open_session()
        result = SessionResult(uid=ssn.uid, time=ssn.now)
        for name in self.config.runnable_actions:
            t0 = time.perf_counter()
            ACTIONS[name](ssn, self.config.action_arguments(name))
            result.action_ms[name] = (time.perf_counter() - t0) * 1000
        close_session(ssn, result)
        ssn.release()
        result.latency_ms = (time.perf_counter() - started) * 1000
        return result


_PENDING = frozenset({S.PENDING})
_WAITING = frozenset({S.PENDING, S.PIPELINED})
_RUNNING = frozenset({S.RUNNING})
_SCHEDULED = frozenset({S.RUNNING, S.BOUND, S.BINDING, S.FAILED, S.SUCCEEDED})
_RELEASING = frozenset({S.RELEASING})
_FINISHED = frozenset({S.SUCCEEDED, S.FAILED})
_SUCCEEDED = frozenset({S.SUCCEEDED})
_FAILED = frozenset({S.FAILED})


def close_session(ssn: Session, result: SessionResult) -> None:
    for job in session_jobs(ssn):
        if job.count(READY) < job.min_available or job.count(_PENDING):  # (not job.is_ready(), inline)
            reason = job_reason(ssn, job)
            if reason:
                job.reason = reason
    for p in ssn.plugins.values():
        close = getattr(p, "on_session_close", None)
        if close:
            close(ssn)
    index = getattr(ssn, "job_index", None)
    if index is not None:
        result.phases = dict(index.phases)  # quiet jobs: the phase their PodGroup already has
    cluster, uid, reasons, phases = ssn.cluster, ssn.uid, result.reasons, result.phases
    for job in session_jobs(ssn):
        key = job.key
        if job.reason and job.count(_WAITING):
            reasons[key] = job.reason
        fields = _fields(job, uid)
        phases[key] = fields[0]
        # The status object is made only when it is written (most sessions change few PodGroups).
        pg = job.podgroup
        if pg is not None and cluster is not None and not _status_holds(pg.status, fields):
            cluster.update_podgroup_status(key, _status(fields))
    result.queue_status = queue_status(ssn)
    result.queue_shares = dict(getattr(ssn, "queue_shares", {}) or {})
    result.reservations = dict(getattr(ssn, "reservation_report", {}) or {})
    result.backfilled = list(getattr(ssn, "backfilled_jobs", []) or [])
    if ssn.cluster is not None:
        current = _current_queues(ssn.cluster)
        for name, st in result.queue_status.items():
            if current is not None and _status_written(current.get(name), st):
                continue  # the same values again (fastpath.queue_status_kept)
            ssn.cluster.update_queue_status(name, st)
        for ev in ssn.events:
            ssn.cluster.record_event(*ev)
    result.repeat_events = ssn.repeat_events()
    result.binds = list(ssn.binds)
    result.evictions = list(ssn.evictions)
    result.evicted_uids = dict(ssn.evicted_uids)


def _fields(job: JobInfo, uid: str | None) -> tuple[str, list, int, int, int]:
    """(phase, conditions, running, succeeded, failed) of the PodGroup status at the close of the session `uid`
    (None: a session that set no condition yet)."""
    if job.conditions is not None:
        conditions = job.conditions
    else:
        conditions = list(job.podgroup.status.conditions) if job.podgroup is not None else []
    unschedulable_now = uid is not None and any(
        c.type == "Unschedulable" and c.status == "True" and c.transition_id == uid for c in conditions
    )
    running, scheduled, finished, succeeded, failed = job.memo("close.counts", _close_counts)
    if running and unschedulable_now:
        phase = "Unknown"
    elif scheduled >= job.min_available and scheduled > 0:
        phase = "Completed" if finished == len(job.tasks) else "Running"
    elif job.phase == "Inqueue":
        phase = "Inqueue"
    else:
        phase = "Pending"
    return phase, conditions, running, succeeded, failed


def _close_counts(job: JobInfo) -> tuple[int, int, int, int, int]:
    """(running, scheduled (releasing ones on a node included), finished, succeeded, failed)."""
    scheduled = job.count(_SCHEDULED)
    if job.count(_RELEASING):
        scheduled += sum(1 for t in job.tasks.values() if t.status is S.RELEASING and t.node)
    return (job.count(_RUNNING), scheduled, job.count(_FINISHED), job.count(_SUCCEEDED), job.count(_FAILED))


def _status_holds(status: PodGroupStatus, fields: tuple[str, list, int, int, int]) -> bool:
    """Whether the PodGroup's status already reads as `fields` (the phase, the counts, and the conditions' type, status,
    reason and message in order): then close writes nothing. The counts are compared first."""
    phase, conditions, running, succeeded, failed = fields
    if (status.phase, status.running, status.succeeded, status.failed) != (phase, running, succeeded, failed):
        return False
    have = status.conditions
    if len(have) != len(conditions):
        return False
    for a, b in zip(have, conditions):
        if a is not b and (a.type, a.status, a.reason, a.message) != (b.type, b.status, b.reason, b.message):
            return False
    return True


def _status(fields: tuple[str, list, int, int, int]) -> PodGroupStatus:
    phase, conditions, running, succeeded, failed = fields
    return PodGroupStatus(phase=phase, conditions=conditions, running=running, succeeded=succeeded, failed=failed)


def condition_current(job: JobInfo, type_: str, reason: str, message: str) -> bool:
    """Whether the PodGroup's conditions already read as `set_condition` would leave them (the same type, status,
    reason and message, in the same order): then setting it again changes nothing that is written."""
    conditions = job.podgroup.status.conditions if job.podgroup is not None else []
    if not conditions:
        return False
    last = conditions[-1]
    if (last.type, last.status, last.reason, last.message) != (type_, "True", reason, message):
        return False
    return all(c.type != type_ for c in conditions[:-1])


def set_condition(ssn: Session, job: JobInfo, type_: str, reason: str, message: str) -> None:
    """Record this session's condition on the job (written with the PodGroup status at close)."""
    base = [c for c in (job.podgroup.status.conditions if job.podgroup is not None else ()) if c.type != type_]
    base.append(PodGroupCondition(type=type_, status="True", reason=reason, message=message,
                                  transitionID=ssn.uid, lastTransitionTime=ssn.now))
    job.conditions = base


def _current_queues(cluster: Cluster) -> dict | None:
    """The cluster's Queue objects as they are now, when it keeps them in memory (a cluster with a change log:
    its `state()` is its own records, not a copy); None otherwise, or with fastpath.queue_status_kept off."""
    if not fastpath.queue_status_kept or not hasattr(cluster, "changes_since"):
        return None
    return cluster.state().queues


def _status_written(queue: Any, status: dict) -> bool:
    """Whether the Queue's status already holds every field of `status` with these values."""
    if queue is None:
        return False
    have = queue.status
    extra = have.model_extra or {}  # (the scheduler's fields are extra ones: read without the model's __getattr__)
    for k, v in status.items():  # (a plain loop: asked for every queue at every close)
        if not (extra[k] if k in extra else getattr(have, k, None)) == v:
            return False
    return True


def queue_status(ssn: Session) -> dict[str, dict]:
    """Allocated resources per queue, rolled up to the parents: the part of Queue status the scheduler owns.

    PodGroup counts belong to the queue controller (as in Volcano); writing them here too would make the two
    fight over the same fields every session.
    """
    index = getattr(ssn, "job_index", None)
    allocated = index.queue_allocations(ssn) if index is not None else ssn.queue_allocations()
    if not fastpath.queue_status_memo:
        got = _rolled_up(allocated, _descendants(ssn.queues))
    else:
        shape = tuple((name, tuple(q.children)) for name, q in ssn.queues.items())
        key = (shape, tuple(allocated.items()))
        got = _QUEUE_STATUS.get(key)
        if got is None:
            below = _DESCENDANTS.get(shape)
            if below is None:
                below = _DESCENDANTS.keep(shape, _descendants(ssn.queues))
            got = _QUEUE_STATUS.keep(key, _rolled_up(allocated, below))
    # Fresh dicts each time: the cluster keeps the ones it is given as the Queues' status.
    return {name: {"allocated": dict(st["allocated"])} for name, st in got.items()}


# queue_status's answers by the queue tree and the per-queue allocations it rolls up (fastpath.queue_status_memo):
# between sessions the allocations often come back to values seen before, and the roll-up is pure.
_QUEUE_STATUS = Memo(1024)
_DESCENDANTS = Memo(64)  # _descendants by the tree's names in order and their children (all it reads)


def _rolled_up(allocated: dict[str, Resources], descendants: dict[str, list[str]]) -> dict[str, dict]:
    """Each queue's allocation plus its descendants' (`_descendants`), as quantities (the kept ones: callers copy)."""
    out: dict[str, dict] = {}
    for name, below in descendants.items():
        parts = [allocated[name]]
        for child in below:
            got = allocated.get(child)
            if got is not None:
                parts.append(got)
        # (the same amounts as adding them one by one; the quantities list the names sorted)
        total = parts[0] if len(parts) == 1 else Resources.sum(parts)
        out[name] = {"allocated": _quantities(total)}
    return out


def _descendants(queues: dict) -> dict[str, list[str]]:
    """Per queue, the queues below it as the roll-up visits them (children last named first, depth first)."""
    out: dict[str, list[str]] = {}
    for name, q in queues.items():
        below = []
        stack = list(q.children)
        while stack:
            child = stack.pop()
            below.append(child)
            stack.extend(queues[child].children if child in queues else [])
        out[name] = below
    return out


# Resources.to_quantities by the vector (a pure function of its amounts, names sorted): queue allocations come back
# to values seen before. Callers get copies.
_QUANTITIES = Memo(1024)


def _quantities(res: Resources) -> dict[str, str]:
    got = _QUANTITIES.get(res)
    if got is None:
        got = _QUANTITIES.keep(res, res.to_quantities())
    return got


# ---------------------------------------------------------------------- the job index (fastpath.job_index)


def job_figures(job: JobInfo, total: Resources) -> tuple[tuple[Resources, ...], float, frozenset]:
    """What the plugins' opens compute from one job (jobindex.SUMS, drf's share, share_dims' resources), with
    their own functions."""
    allocated = job.allocated()
    if has_min_resources(job):
        overcommit = job_min_resources(job) if job.phase == "Inqueue" else job_inqueue(job)
    else:
        overcommit = Resources()
    sums = (allocated, job_request(job), job_inqueue(job), job_elastic(job), overcommit)
    share = job.memo(("drf.share", total), lambda j: dominant_share(allocated, total)[1])
    return sums, share, frozenset(job.min_resources) | job.memo("share.dims", _task_dims)


def quiet_phase(job: JobInfo) -> str | None:
    """The phase close reports for a job no step of a session would do anything with, else None.

    Quiet: a PodGroup job with pods, admitted (not Pending), nothing pending, pipelined or releasing, ready (as
    close and gang count it), valid (gang's JobValid: allocate and backfill would give no reason), with the
    `Scheduled` condition gang's close would set and a PodGroup status equal to what close would write. Only the
    job's own records enter: a session that changes none of them (tasks, per-session fields) leaves it quiet."""
    if job.podgroup is None or not job.tasks or job.phase == "Pending":
        return None
    if job.count(_WAITING) or job.count(_RELEASING):
        return None
    if not job.is_ready() or not gang_is_ready(job) or gang_validate(job) is not None:
        return None
    if job.conditions is not None or job.reason or not condition_current(job, "Scheduled", SCHEDULED_REASON, ""):
        return None
    fields = _fields(job, None)
    if not _status_holds(job.podgroup.status, fields):
        return None
    return fields[0]
