"""reservation: big gangs never starve, and small jobs still fill the gaps (magma's extension of Volcano).

Slurm's backfill, in Volcano's terms (docs/reservation-backfill.md has the how-to, docs/volcano-differences.md the
reasons). Volcano's allocate visits jobs in queue and job order and, when a job does not fit, simply goes on to the
next one: every GPU that frees up goes to whichever small job fits, and a 32-GPU gang behind a steady stream of
1-GPU jobs waits forever. With this plugin configured:

Reservations. When allocate fails to place a job's gang (the job its queue and job order put first among those
still waiting; no room, or its queue's share held by running work; for a queue dropped as overused, its first
job), the plugin plans where and when the gang will fit soonest and reserves those resources from that time on. The plan reads every running pod's expected end: its start (`status.startTime`) plus its expected run time,
which is `activeDeadlineSeconds` (a hard limit the kubelet enforces) or the annotation `magma.io/expected-runtime` on
the pod, its PodGroup or its Volcano Job (a soft estimate; the shorter of the two when both are given). A pod without
either never ends as far as the plan knows. The planned start is the earliest release time (within
`reservation.window`) at which the gang's missing tasks fit, after the reservations made before it; the nodes are
those that fit then, the least idle now first (their idle room can only serve short jobs until then). When no
release time within the window lets the gang fit (typically: the running pods have no estimates), the plugin
reserves the nodes where the gang fits once everything there has ended, those freeing the most soonest first, with
an unknown start: those nodes drain. At most `reservation.maxJobs` jobs get a reservation per session (Slurm's
bf_max_job_test); plans are made afresh every session, from the cluster as it is.

Backfill. Once a reservation exists, every later job in the session's allocation order that it applies to may only
take resources that leave the reservation whole: on a reserved node a task must either end (by its own estimate)
before the reservation starts, or fit in what stays free there next to the reserved amount at every reservation
start it overlaps. A job with no estimate therefore never lands on reserved resources. Work of the reserved job's
queue (and ancestors) that would outlast the start must also leave the queue room for the gang within its
allocation bound and, for an entitled reservation, its deserved share. With accurate estimates a backfilled job
never delays a planned start (the property tests check it).

Who a reservation holds against. Not against the reserved job itself, nor against jobs of higher priority (they
may take the resources; the plan is redone next session). Queue shares (proportion or capacity): a job gets a
reservation only if its queue (and every ancestor) may allocate the gang when it starts, counting what the queue's
own running work gives back by then (proportion allocates up to the deserved share, capacity up to the real
capability); the reservation is *entitled* when the queue stays within its deserved share (on the resources the
share names) with the gang, and then holds against
every job of lower or equal priority, except jobs of another queue that stay within that queue's guarantee. A
reservation of a queue that would go over its deserved share holds only against its own queue and queues that are
over their deserved share too: a queue over its share cannot reserve against one under its share.

Enqueue. Volcano's enqueue gates judge load: overcommit wants the gang's minResources in the cluster's
over-committed idle resources, proportion and capacity want them next to the queue's allocated and inqueue
resources within its real capability. In a busy cluster a big gang is thus never admitted while small jobs are, and
it would starve before allocate even sees it; once it is admitted, its inqueue resources would keep every small job
out and the cluster would drain. With `reservation.enqueue` (default true) the enqueue action admits a job those
gates rejected, when every other plugin agrees and its queue is Open and a leaf, if
- it is first in line of its queue (no admitted, unstarted job of the queue is ahead of it in job order) and the
  queue's real capability can hold its minResources at all: it can then get a reservation; or
- its minResources fit in the cluster's idle resources not already promised to admitted, unstarted jobs that fit
  there, and next to its queue's allocation within the queue's real capability: a candidate for backfill, which
  allocate then places or not.

Visibility. A reserved job's reason says so in numbers ("reserved 4 nodes (32 nvidia.com/gpu), expected start in
9m40s, 3 jobs backfilled meanwhile; ..."), where "backfilled meanwhile" counts jobs of lower or equal priority,
submitted after it, that hold resources now. A node that a reservation keeps from a job appears in that job's
node-fit summary ("2 reserved for default/big until it starts", or "queue share reserved for ..."); the gang
plugin does not repeat the Unschedulable event for the countdown alone (reasons.event_key). After the session `ssn.reservation_report`
maps each reserved job's key to its plan and `ssn.backfilled_jobs` lists jobs started this session while a
reservation applied to them (the simulator's `reservedAt`, `plannedStart` and `backfilled`).

Limits. The plan counts resources per node (the gang's predicates are applied, inter-pod affinity within the gang
and topology plugins are not modelled; a gang that fits by that count but still failed gets no reservation);
gangs of several shapes are fitted greedily; preempt and reclaim do not consult reservations (a preemptor takes
what its priority allows).

Cost. Nothing is computed until a job fails to fit. A plan is a binary search over the release times with array
operations over all nodes; the per-node checks of later jobs touch only the reserved nodes, and their answer is
shared by jobs alike (same queue, priority, run time and request) until a placement changes it. allocate's shared
fast path is kept for every job no reservation holds against. Arguments: reservation.maxJobs (default 4, 0 turns reservations off), reservation.window
(default 24h), reservation.enqueue (default true).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from magma.api.duration import format_duration, parse_duration
from magma.api.objects import EXPECTED_RUNTIME
from magma.api.resources import GPU, PODS, Resources

from ..framework import EventHandler, JobInfo, PredicateResult, Session, TaskInfo, TaskStatus, plugin
from ..framework.snapshot import _time
from .. import reasons
from ._queuetree import amount, job_min_resources, requested_dims, typed_argument

NAME = "reservation"
S = TaskStatus
DEFAULT_MAX_JOBS = 4
DEFAULT_WINDOW = 24 * 3600.0
# enqueue votes that judge load (the cluster's idle resources, a queue's allocated + inqueue) rather than whether
# the job may run at all; admit_anyway checks the queue's real capability itself instead
LOAD_GATES = frozenset({"overcommit", "proportion", "capacity"})
INF = math.inf
_PLACED_NOW = frozenset({S.ALLOCATED, S.PIPELINED, S.BINDING})


@functools.lru_cache(maxsize=4096)
def _seconds(raw: str) -> float | None:
    try:
        return parse_duration(raw)
    except ValueError:
        return None


def expected_runtime(annotations: dict[str, str] | None) -> float | None:
    """The soft estimate `magma.io/expected-runtime` in seconds, or None when absent or unreadable."""
    raw = (annotations or {}).get(EXPECTED_RUNTIME)
    if raw is None or not isinstance(raw, str):
        return None
    return _seconds(raw)


def task_runtime(task: TaskInfo, job: JobInfo | None) -> float | None:
    """How long the task is expected to run: the shorter of activeDeadlineSeconds and the expected-runtime
    annotation (pod first, then its PodGroup), or None when neither is given."""
    pod = task.pod
    soft = hard = None
    if pod is not None:
        soft = expected_runtime(pod.annotations)
        hard = pod.spec.active_deadline_seconds
    if soft is None and job is not None and job.podgroup is not None:
        soft = expected_runtime(job.podgroup.annotations)
    given = [float(x) for x in (soft, hard) if x is not None]
    return min(given) if given else None


def pod_start(task: TaskInfo) -> float | None:
    pod = task.pod
    if pod is None:
        return None
    extra = pod.status.model_extra or {}
    raw = extra.get("startTime")
    if raw is None:
        return None
    t = _time(raw, default=math.nan)
    return None if math.isnan(t) else t


@dataclass(eq=False)
class Reservation:
    job: JobInfo
    start: float | None  # planned start; None = unknown (the nodes drain)
    checkpoint: float  # from when the claims count: start, or now for a draining reservation
    rows: np.ndarray  # node rows with a claim
    claims: np.ndarray  # (len(rows), dims): what the gang takes on each
    need: Resources
    within_share: bool  # the queue stays within its deserved share with the gang (when planned)
    unknown_pods: int = 0  # running pods on the reserved nodes without an estimate (draining reservations)
    why_not_entitled: str = ""
    # queue -> what stays of its allocation bound once the gang runs (the queue and its ancestors): work of those
    # queues that outlasts the checkpoint must fit in it, or the gang's own queue would refuse it then
    room: dict[str, dict[str, int]] = field(default_factory=dict)
    # queue -> what stays of its deserved share once the gang runs (on the resources the share names): while none is
    # negative, the reservation is entitled; the queue's own later work can use it up
    share_room: dict[str, dict[str, int]] = field(default_factory=dict)
    backfilled: int = 0  # jobs that overtook it and hold resources now (for the reason)
    reason: str = ""

    @property
    def entitled(self) -> bool:
        return self.within_share and all(v >= 0 for left in self.share_room.values() for v in left.values())


@dataclass
class _Group:
    vec: np.ndarray
    count: int
    mask: np.ndarray  # predicates over all rows


class ReservationPlan:
    """The session's reservations and the checks allocate asks of them (`ssn.reservations`)."""

    def __init__(self, ssn: Session, max_jobs: int, window: float, enqueue: bool):
        self.ssn = ssn
        self.now = ssn.now
        self.max_jobs = max_jobs
        self.window = window
        self.enqueue = enqueue
        self.res: list[Reservation] = []
        self._job_rt: dict[str, float | None] = {}  # job uid -> expected run time of its pending tasks
        # Tasks with a finite expected end (built at the first plan): rows, ends, request vectors.
        self._built = False
        self._b_uid: dict[str, int] = {}
        self._b_rows = np.zeros(0, dtype=np.int64)
        self._b_end = np.zeros(0)
        self._b_vec = np.zeros((0, 0), dtype=np.int64)
        self._b_alive = np.zeros(0, dtype=bool)
        self._b_queue = np.zeros(0, dtype=np.int64)
        self._qcode: dict[str, int] = {}
        self._delta: dict[str, tuple[int, float, np.ndarray, int]] = {}  # placed this session
        self._placed: dict[str, tuple[int, float]] = {}  # uid -> (row, end) of tasks the handlers saw placed
        self._nonjob = None  # (N, dims) usage of pods that are no job's (other schedulers): never released
        self._unknown = None  # (N,) running pods without an estimate, per node
        # Tracked rows (every reserved node) and the free resources at each reservation's checkpoint there.
        self._u_rows = np.zeros(0, dtype=np.int64)
        self._u_of_row = np.full(len(ssn.node_list), -1, dtype=np.int64)
        self._free_at = np.zeros((0, 0, 0), dtype=np.int64)
        self._claims_u = np.zeros((0, 0, 0), dtype=np.int64)
        self._version = 0  # bumped whenever what the reservations leave may have changed
        self._blocked_version = -1
        self._blocked_cache: dict[tuple, np.ndarray | None] = {}
        self._chain_names: dict[str, frozenset[str]] = {}
        self._job_soft: dict[str, float | None] = {}
        self.backfill_candidates: set[str] = set()  # jobs placed while a reservation held against them
        self._checked: set[str] = set()
        # enqueue bookkeeping
        self._front: dict[str, JobInfo] | None = None
        self._unpromised: Resources | None = None
        self._idle: Resources | None = None

    # ------------------------------------------------------------ estimates
    def job_runtime(self, job: JobInfo) -> float | None:
        """The job's expected run time from now if started now: the longest of its pending tasks' (None if any
        has no estimate)."""
        if job.uid not in self._job_rt:
            longest: float | None = 0.0
            for t in job.tasks.values():
                if t.status is not S.PENDING:
                    continue
                rt = self._runtime(t, job)
                if rt is None:
                    longest = None
                    break
                longest = max(longest, rt)
            self._job_rt[job.uid] = longest
        return self._job_rt[job.uid]

    def _runtime(self, task: TaskInfo, job: JobInfo | None) -> float | None:
        """task_runtime, with the PodGroup's estimate read once per job."""
        pod = task.pod
        soft = hard = None
        if pod is not None:
            soft = expected_runtime(pod.metadata.annotations)
            hard = pod.spec.active_deadline_seconds
        if soft is None and job is not None:
            if job.uid in self._job_soft:
                soft = self._job_soft[job.uid]
            else:
                soft = self._job_soft[job.uid] = (expected_runtime(job.podgroup.annotations)
                                                  if job.podgroup is not None else None)
        if soft is None:
            return None if hard is None else float(hard)
        return soft if hard is None else min(soft, float(hard))

    def task_end(self, task: TaskInfo) -> float:
        """When the task is expected to leave its node (INF when unknown)."""
        job = self.ssn.jobs.get(task.job) if task.job else None
        rt = self._runtime(task, job)
        if rt is None:
            return INF
        start = None
        if task.status not in _PLACED_NOW:
            start = pod_start(task)
        if start is None:
            start = self.now
        return start + rt

    # ------------------------------------------------------------ the tasks on the nodes
    def _build(self) -> None:
        if self._built:
            return
        ssn, table = self.ssn, self.ssn.table
        n, r = len(table), len(table.dims)
        rows, ends, vecs, uids, queues = [], [], [], [], []
        nonjob = np.zeros((n, r), dtype=np.int64)
        unknown = np.zeros(n, dtype=np.int64)
        for node in ssn.node_list:
            i = node.index
            for t in node.tasks.values():
                if t.status is S.RELEASING:
                    continue  # already counted as free (future idle)
                if not t.job or t.job not in ssn.jobs:
                    nonjob[i] += t.vec
                end = self.task_end(t)
                if end == INF:
                    unknown[i] += 1
                    continue
                rows.append(i)
                ends.append(end)
                vecs.append(t.vec)
                uids.append(t.uid)
                queues.append(self._queue_code(t))
        self._b_rows = np.asarray(rows, dtype=np.int64)
        self._b_end = np.asarray(ends, dtype=np.float64)
        self._b_vec = np.asarray(vecs, dtype=np.int64).reshape(len(vecs), r)
        self._b_alive = np.ones(len(rows), dtype=bool)
        self._b_uid = {u: k for k, u in enumerate(uids)}
        self._b_queue = np.asarray(queues, dtype=np.int64)
        self._nonjob = nonjob
        self._unknown = unknown
        self._built = True

    def _queue_code(self, task: TaskInfo) -> int:
        job = self.ssn.jobs.get(task.job) if task.job else None
        name = job.queue if job is not None else ""
        return self._qcode.setdefault(name, len(self._qcode))

    def _freed(self, queue: str, t: float) -> Resources:
        """What the queue's running tasks give back by time t (their expected ends)."""
        code = self._qcode.get(queue)
        if code is None:
            return Resources()
        total = np.zeros(len(self.ssn.table.dims), dtype=np.int64)
        if len(self._b_end):
            m = self._b_alive & (self._b_end <= t) & (self._b_queue == code)
            total += self._b_vec[m].sum(axis=0)
        for _, end, vec, q in self._delta.values():
            if end <= t and q == code:
                total += vec
        return self.ssn.table.resources(total)

    def _freed_on(self, queue: str, rows: np.ndarray) -> Resources:
        """What the queue's tasks hold on those nodes (all gone once they have drained)."""
        total = Resources()
        for i in rows.tolist():
            for t in self.ssn.node_list[i].tasks.values():
                job = self.ssn.jobs.get(t.job) if t.job else None
                if job is not None and job.queue == queue and t.status is not S.RELEASING:
                    total = total + t.resreq
        return total

    def _released(self, t: float) -> np.ndarray:
        """(N, dims): what tasks with an expected end at or before `t` give back."""
        table = self.ssn.table
        rel = np.zeros((len(table), len(table.dims)), dtype=np.int64)
        if len(self._b_end):
            m = self._b_alive & (self._b_end <= t)
            if m.any():
                np.add.at(rel, self._b_rows[m], self._b_vec[m])
        for row, end, vec, _ in self._delta.values():
            if end <= t:
                rel[row] += vec
        return rel

    def _free(self, t: float, applying: list[Reservation], f0: np.ndarray) -> np.ndarray:
        """(N, dims): free at time t: free now + released by then - claims (of `applying`) counting by then."""
        free = f0 + self._released(t)
        for r in applying:
            if r.checkpoint <= t:
                free[r.rows] -= r.claims
        return free

    # ------------------------------------------------------------ queue shares
    def _shares(self):
        for name in ("proportion", "capacity"):
            p = self.ssn.plugins.get(name)
            if p is not None and getattr(p, "attrs", None) and hasattr(p, "chain"):
                return p
        return None

    def _chain(self, queue: str) -> list:
        p = self._shares()
        return p.chain(queue) if p is not None else []

    def chain_names(self, queue: str) -> frozenset[str]:
        names = self._chain_names.get(queue)
        if names is None:
            names = self._chain_names[queue] = frozenset(at.name for at in self._chain(queue))
        return names

    def entitlement(self, queue: str, need: Resources, freed: Resources | None = None
                    ) -> tuple[bool, bool, str, dict[str, dict[str, int]], dict[str, dict[str, int]]]:
        """When the gang (`need`) starts and the queue's own tasks have given back `freed` by then: (whether the
        queue and its ancestors may allocate it, whether they stay within their deserved shares, why not, and the
        room each keeps next to it under its allocation bound and under its deserved share). The allocation bound is
        the share plugin's: proportion allocates up to the deserved share, capacity up to the real capability."""
        dims = requested_dims(need)
        entitled, why = True, ""
        freed = freed or Resources()
        p = self._shares()
        limit = "deserved" if p is not None and getattr(p, "NAME", "") == "proportion" else "real_capability"
        room: dict[str, dict[str, int]] = {}
        share_room: dict[str, dict[str, int]] = {}
        for at in self._chain(queue):
            future = (at.allocated - freed).clamp_min_zero() + need
            bound = getattr(at, limit)
            over = [d for d in dims if future[d] > bound[d]]
            if over:
                d = over[0]
                return False, False, (f"queue {at.name}: {limit.replace('_', ' ')} {amount(d, bound[d])} {d}, "
                                      f"allocated {amount(d, at.allocated[d])} ({amount(d, freed[d])} of it "
                                      f"ending by then), gang needs {amount(d, need[d])}"), {}, {}
            room[at.name] = {d: bound[d] - future[d] for d in dims}
            named = [d for d in dims if at.deserved[d] > 0]  # a share counts on the resources it names
            over = [d for d in named if future[d] > at.deserved[d]] if named else dims
            share_room[at.name] = {d: at.deserved[d] - future[d] for d in named}
            if over and entitled:
                d = over[0]
                entitled = False
                why = (f"queue {at.name} would exceed its deserved {amount(d, at.deserved[d])} {d} "
                       f"(allocated {amount(d, at.allocated[d])}, {amount(d, freed[d])} of it ending by then, "
                       f"gang needs {amount(d, need[d])})")
        return True, entitled, why, room, share_room

    def _within(self, queue: str, req: Resources, key: str) -> bool:
        """The leaf queue stays within its `key` (deserved or guarantee) with `req` more."""
        p = self._shares()
        at = p.attrs.get(queue) if p is not None else None
        if at is None:
            return key == "deserved"  # no share figures: every queue is within its share, none has a guarantee
        bound = getattr(at, key)
        named = [d for d in requested_dims(req) if bound[d] > 0]  # a share counts on the resources it names
        return bool(named) and all(at.allocated[d] + req[d] <= bound[d] for d in named)

    def applies(self, r: Reservation, job: JobInfo, req: Resources) -> bool:
        """Whether reservation `r` holds against `job` (asking for `req`)."""
        if job.uid == r.job.uid or job.priority > r.job.priority:
            return False
        if job.queue == r.job.queue:
            return True
        if r.entitled:
            return not self._within(job.queue, req, "guarantee")
        return not self._within(job.queue, req, "deserved")

    # ------------------------------------------------------------ planning
    def _gang(self, job: JobInfo) -> list[TaskInfo]:
        missing = job.min_available - job.ready_count()
        if missing <= 0:
            return []
        pending = self.ssn.sorted_tasks([t for t in job.tasks.values()
                                         if t.status is S.PENDING and not t.best_effort])
        return pending[:missing] if len(pending) >= missing else []

    def _groups(self, tasks: list[TaskInfo]) -> list[_Group]:
        rows = np.arange(len(self.ssn.node_list), dtype=np.int64)
        groups: dict[tuple, _Group] = {}
        for t in tasks:
            key = (t.shape, t.resreq)
            g = groups.get(key)
            if g is None:
                g = groups[key] = _Group(t.vec, 0, self.ssn.predicate(t, rows).mask.copy())
            g.count += 1
        return list(groups.values())

    @staticmethod
    def _fit(avail: np.ndarray, groups: list[_Group], order: np.ndarray):
        """Greedy gang fit: (rows, claims) taking nodes in `order`, or None."""
        avail = avail.copy()
        claims: dict[int, np.ndarray] = {}
        for g in groups:
            need = g.vec > 0
            if not need.any():
                continue
            with np.errstate(divide="ignore"):
                per = np.where(need, np.maximum(avail, 0) // np.where(need, g.vec, 1), np.iinfo(np.int64).max)
            k = per.min(axis=1)
            k[~g.mask] = 0
            if int(k.sum()) < g.count:
                return None
            cand = order[k[order] > 0]
            cum = np.cumsum(k[cand])
            last = int(np.searchsorted(cum, g.count))
            take = k[cand[:last + 1]].copy()
            take[-1] = g.count - (int(cum[last - 1]) if last else 0)
            for row, c in zip(cand[:last + 1].tolist(), take.tolist()):
                v = g.vec * c
                avail[row] -= v
                claims[row] = claims[row] + v if row in claims else v
        if not claims:
            return None
        rows = np.asarray(sorted(claims), dtype=np.int64)
        return rows, np.stack([claims[int(i)] for i in rows])

    def _order(self, free: np.ndarray, groups: list[_Group]) -> np.ndarray:
        """Node rows, the least free (of the gang's resources, relative to the largest node) first."""
        return np.lexsort((np.arange(len(free)), self._score(free, groups)))

    def plan(self, job: JobInfo) -> Reservation | None:
        """Plan the job's reservation against the present state (does not record it)."""
        tasks = self._gang(job)
        if not tasks:
            return None
        self._build()
        need = Resources()
        for t in tasks:
            need = need + t.resreq
        groups = self._groups(tasks)
        applying = [r for r in self.res if self.applies(r, job, need)]
        f0 = self.ssn.table.future_idle()
        later = {id(r): self._free(r.checkpoint, applying, f0) for r in applying}

        def avail(t: float, strict: bool = False) -> np.ndarray:
            """What the gang can count on from time t on: free at t (without releases when `strict`), and no more
            than what stays free at each later reservation start."""
            if strict:
                free = f0.copy()
                for r in applying:
                    if r.checkpoint <= t:
                        free[r.rows] -= r.claims
            else:
                free = self._free(t, applying, f0)
            for r in applying:
                if r.checkpoint > t:
                    free = np.minimum(free, later[id(r)])
            return free

        order = self._order(f0, groups)

        def share_ok(t: float) -> bool:
            return self.entitlement(job.queue, need, self._freed(job.queue, t))[0]

        # Fits already (allocate failed for a reason the plan does not model): reserving could block nodes forever.
        if self._fit(avail(self.now, strict=True), groups, order) is not None and share_ok(self.now):
            return None
        horizon = self.now + self.window
        ends = np.concatenate([self._b_end[self._b_alive], np.asarray([e for _, e, _, _ in self._delta.values()]),
                               np.asarray([r.checkpoint for r in applying])])
        ends = ends[(ends > self.now) & (ends <= horizon)]
        times = np.unique(np.concatenate([[self.now], ends]))

        def ok(t: float) -> bool:  # monotone in t: resources and the queue's share only grow back
            return share_ok(t) and self._fit(avail(t), groups, order) is not None

        fit = None
        start: float | None = None
        checkpoint = self.now
        if ok(float(times[-1])):
            lo, hi = 0, len(times) - 1  # it fits at times[hi]: find the first time it does
            while lo < hi:
                mid = (lo + hi) // 2
                if ok(float(times[mid])):
                    hi = mid
                else:
                    lo = mid + 1
            checkpoint = start = float(times[hi])
            fit = self._fit(avail(checkpoint), groups, order)
            freed = self._freed(job.queue, checkpoint)
        if fit is None:
            # No known time: reserve where the gang fits once everything there has ended; those nodes drain.
            table = self.ssn.table
            eventual = table.alloc - self._nonjob
            for r in applying:
                eventual[r.rows] -= r.claims
            soon = self._free(horizon, applying, f0)
            drain_order = np.lexsort((np.arange(len(table)), -self._score(f0, groups), -self._score(soon, groups)))
            fit = self._fit(eventual, groups, drain_order)
            if fit is None:
                return None
            freed = self._freed_on(job.queue, fit[0])
        rows, claims = fit
        allowed, entitled, why, room, share_room = self.entitlement(job.queue, need, freed)
        if not allowed:
            return None
        res = Reservation(job=job, start=start, checkpoint=checkpoint, rows=rows, claims=claims, need=need,
                          within_share=entitled, why_not_entitled=why, room=room,
                          share_room=share_room if entitled else {})
        if start is None:
            res.unknown_pods = int(self._unknown[rows].sum())
        return res

    def _score(self, free: np.ndarray, groups: list[_Group]) -> np.ndarray:
        table = self.ssn.table
        dims = np.zeros(len(table.dims), dtype=bool)
        for g in groups:
            dims |= g.vec > 0
        dims[table.col[PODS]] = False
        if not dims.any():
            return np.zeros(len(table))
        scale = np.maximum(table.alloc[:, dims].max(axis=0), 1)
        return (np.maximum(free[:, dims], 0) / scale).sum(axis=1)

    # ------------------------------------------------------------ allocate's hooks
    def job_unplaced(self, job: JobInfo) -> Reservation | None:
        """allocate could not place the job's gang: reserve for it (within the budget), and say so."""
        if len(self.res) >= self.max_jobs:
            return None
        if any(r.job is job for r in self.res):
            return None
        r = self.plan(job)
        if r is None:
            return None
        self.res.append(r)
        self._track()
        r.backfilled = self._overtakers(job)
        r.reason = self._reason(job, r)
        job.reason = r.reason
        job.reason_code = job.reason_code or "NotEnoughResources"
        return r

    def _overtakers(self, job: JobInfo) -> int:
        busy = {S.ALLOCATED, S.BINDING, S.BOUND, S.RUNNING}
        return sum(1 for j in self.ssn.jobs.values()
                   if j is not job and j.priority <= job.priority
                   and (j.creation, j.uid) > (job.creation, job.uid)
                   and any(t.status in busy for t in j.tasks.values()))

    def _reason(self, job: JobInfo, r: Reservation) -> str:
        dim = GPU if r.need[GPU] else next(iter(requested_dims(r.need)), "cpu")
        what = f"{len(r.rows)} node{'s' if len(r.rows) != 1 else ''} ({amount(dim, r.need[dim])} {dim})"
        if r.start is None:
            when = ("draining, expected start unknown"
                    + (f" ({r.unknown_pods} running pod{'s' if r.unknown_pods != 1 else ''} there "
                       f"{'have' if r.unknown_pods != 1 else 'has'} no runtime estimate)" if r.unknown_pods else ""))
        elif r.start <= self.now:
            when = "expected start now"
        else:
            when = f"expected start in {format_duration(r.start - self.now)}"
        text = (f"reserved {what}, {when}, {r.backfilled} job{'s' if r.backfilled != 1 else ''} "
                f"backfilled meanwhile")
        if not r.entitled:
            text += f" (holds only against its queue and queues over their share: {r.why_not_entitled})"
        waiting = job.count({S.PENDING, S.PIPELINED})
        detail = next(iter(job.fit_errors.values()), None) \
            or reasons.queue_bound_reason(self.ssn, job.queue, r.need)
        return text + f"; now {waiting}/{len(job.tasks)} tasks in gang unschedulable: {detail}"

    def _track(self) -> None:
        """Recompute the free resources at each reservation's checkpoint on every reserved node."""
        self._version += 1
        table = self.ssn.table
        rows = np.unique(np.concatenate([r.rows for r in self.res]))
        self._u_rows = rows
        self._u_of_row = np.full(len(table), -1, dtype=np.int64)
        self._u_of_row[rows] = np.arange(len(rows))
        f0 = table.future_idle()
        k, u, d = len(self.res), len(rows), len(table.dims)
        self._free_at = np.zeros((k, u, d), dtype=np.int64)
        self._claims_u = np.zeros((k, u, d), dtype=np.int64)
        for i, r in enumerate(self.res):
            self._free_at[i] = self._free(r.checkpoint, self.res, f0)[rows]
            self._claims_u[i][self._u_of_row[r.rows]] = r.claims

    def _checks(self, task: TaskInfo) -> tuple[JobInfo, np.ndarray, list[int]] | None:
        """(job, which reservations hold against the task, those whose checkpoint it would outlast)."""
        if not self.res:
            return None
        job = self.ssn.jobs.get(task.job)
        if job is None:
            return None
        app = np.array([self.applies(r, job, task.resreq) for r in self.res], dtype=bool)
        if not app.any():
            return None
        rt = self.job_runtime(job)
        end = INF if rt is None else self.now + rt
        checks = [i for i, r in enumerate(self.res) if app[i] and r.checkpoint < end]
        return (job, app, checks) if checks else None

    def _queue_held(self, task: TaskInfo, job: JobInfo, checks: list[int]) -> Reservation | None:
        """A reservation whose queue room the task (outlasting its checkpoint) does not fit in."""
        mine = None
        for i in checks:
            r = self.res[i]
            if not r.room and not r.share_room:
                continue
            if mine is None:
                mine = self.chain_names(job.queue)
            for rooms in (r.room, r.share_room):
                for name, room in rooms.items():
                    if name in mine and any(task.resreq[d] > left for d, left in room.items()):
                        return r
        return None

    def blocked(self, task: TaskInfo, rows: np.ndarray | None = None) -> np.ndarray | None:
        """Over `rows` (or all node rows): where the task may not go because a reservation holds the resources
        it would take (None when no reservation holds against it at all). The answer over all rows is kept
        (read-only) until a placement or a new reservation changes what the reservations have left: tasks alike
        in what the checks read share it."""
        if not self.res:
            return None
        key = None
        if rows is None:
            job = self.ssn.jobs.get(task.job)
            if job is None:
                return None
            own = any(r.job is job for r in self.res)
            key = (job.uid if own else None, job.queue, job.priority, self.job_runtime(job), task.vec.tobytes())
            if self._blocked_version != self._version:
                self._blocked_cache.clear()
                self._blocked_version = self._version
            if key in self._blocked_cache:
                return self._blocked_cache[key]
        out = self._blocked(task, rows)
        if key is not None:
            if out is not None:
                out.flags.writeable = False
            self._blocked_cache[key] = out
        return out

    def _blocked(self, task: TaskInfo, rows: np.ndarray | None) -> np.ndarray | None:
        found = self._checks(task)
        if found is None:
            return None
        job, app, checks = found
        n = len(self._u_of_row) if rows is None else len(rows)
        if self._queue_held(task, job, checks) is not None:
            return np.ones(n, dtype=bool)
        k = len(self.res)
        ck = np.array([r.checkpoint for r in self.res])
        held = np.zeros(len(self._u_rows), dtype=bool)
        for i in np.flatnonzero(app):
            held[self._u_of_row[self.res[i].rows]] = True
        bad = np.zeros(len(self._u_rows), dtype=bool)
        for i in checks:
            eff = self._free_at[i].copy()
            for j in range(k):
                if not app[j] and ck[j] <= ck[i]:
                    eff += self._claims_u[j]
            bad |= ~(eff >= task.vec).all(axis=1)
        bad &= held
        if rows is None:
            out = np.zeros(n, dtype=bool)
            out[self._u_rows[bad]] = True
            return out
        u = self._u_of_row[rows]
        return (u >= 0) & bad[np.maximum(u, 0)]

    def explain(self, pred: PredicateResult, task: TaskInfo) -> PredicateResult:
        """The predicate result with nodes held by reservations reported as such (for the node-fit summary)."""
        blocked = self.blocked(task)
        if blocked is None:
            return pred
        blocked = blocked & pred.mask
        if not blocked.any():
            return pred
        found = self._checks(task)
        r = self._queue_held(task, found[0], found[2]) if found else None
        if r is not None:
            when = "until it starts" if r.start is None else f"from {format_duration(r.start - self.now)} on"
            text = f"queue share reserved for {r.job.owner_job or r.job.key} {when}"
        else:
            names = sorted({r.job.owner_job or r.job.key for r in self.res if blocked[r.rows].any()})
            text = f"reserved for {', '.join(names)} until {'it starts' if len(names) == 1 else 'they start'}"
        return PredicateResult(pred.mask & ~blocked, [*pred.reasons, (text, blocked)])

    # ------------------------------------------------------------ event handlers
    def on_allocate(self, task: TaskInfo) -> None:
        if not (self.res or self._built) or task.node is None:
            return
        node = self.ssn.nodes.get(task.node)
        if node is None:
            return
        row = node.index
        end = self.task_end(task)
        self._placed[task.uid] = (row, end)
        if self._built and end < INF:
            i = self._b_uid.get(task.uid)
            if i is not None and not self._b_alive[i]:
                self._b_alive[i] = True
            elif i is None:
                self._delta[task.uid] = (row, end, task.vec, self._queue_code(task))
        self._shift(task, row, end, -1)
        if self.res and task.job not in self._checked:
            self._checked.add(task.job)
            job = self.ssn.jobs.get(task.job)
            if job is not None and any(self.applies(r, job, task.resreq) for r in self.res):
                self.backfill_candidates.add(task.job)

    def on_deallocate(self, task: TaskInfo) -> None:
        if not (self.res or self._built):
            return
        if self._built:
            self._delta.pop(task.uid, None)
            i = self._b_uid.get(task.uid)
            if i is not None:
                self._b_alive[i] = False
        placed = self._placed.pop(task.uid, None)
        if placed is None:
            node = self.ssn.nodes.get(task.node) if task.node else None
            if node is None:
                return
            placed = (node.index, self.task_end(task))
        row, end = placed
        self._shift(task, row, end, +1)

    def _shift(self, task: TaskInfo, row: int, end: float, sign: int) -> None:
        """A task placed (sign -1) or removed (+1) on `row` until `end`: update what the reservations have left."""
        if not self.res:
            return
        self._version += 1  # queue figures moved too (guarantee and share checks)
        u = int(self._u_of_row[row]) if row < len(self._u_of_row) else -1
        chain = None
        for i, r in enumerate(self.res):
            if r.checkpoint >= end:
                continue
            if u >= 0:
                self._free_at[i, u] += sign * task.vec
            if r.room or r.share_room:
                if chain is None:
                    job = self.ssn.jobs.get(task.job) if task.job else None
                    chain = self.chain_names(job.queue) if job is not None else frozenset()
                for rooms in (r.room, r.share_room):
                    for name in chain & set(rooms):
                        left = rooms[name]
                        for d in left:
                            left[d] += sign * task.resreq[d]

    # ------------------------------------------------------------ enqueue's hook
    def admit_anyway(self, job: JobInfo) -> str | None:
        """enqueue rejected the job. Admit it anyway, past the gates that judge load (overcommit's idle resources,
        proportion's and capacity's allocated + inqueue), when every other plugin agrees, its queue is Open and a
        leaf, and either
        - it is first in line of its queue and the queue's real capability can hold its minResources at all; or
        - its minResources fit in the idle resources not promised to admitted, unstarted jobs, and in what its
          queue's real capability leaves next to the queue's allocation.
        Returns the note for its reason, or None."""
        if not self.enqueue:
            return None
        self._enqueue_state()
        queue = self.ssn.queues.get(job.queue)
        if queue is None or queue.state != "Open" or queue.children or not self.ssn.permit_vote("job_enqueueable", job, LOAD_GATES):
            return None
        need = job_min_resources(job)
        dims = requested_dims(need)
        front = self._front.get(job.queue)
        if (front is None or self.ssn.job_order_cmp(job, front) < 0) and self._capability_holds(job.queue, need):
            return (f"admitted anyway: first in line of queue {job.queue}, so that it can get a reservation "
                    f"(reservation plugin)")
        if dims and all(need[d] <= self._unpromised[d] for d in dims) \
                and self._capability_holds(job.queue, need, now=True):
            return "admitted anyway: fits in idle resources now, a candidate for backfill (reservation plugin)"
        return None

    def _capability_holds(self, queue: str, need: Resources, now: bool = False) -> bool:
        """need <= real capability along the queue's chain; with `now`, next to what each queue holds (allocated, and
        admitted this session)."""
        dims = requested_dims(need)
        chain = self._chain(queue)
        if not chain:
            total = self.ssn.total
            return all(need[d] <= total[d] for d in dims)
        for at in chain:
            base = Resources()
            if now:
                base = at.allocated + self._admitted.get(at.name, Resources())
            if any(base[d] + need[d] > at.real_capability[d] for d in dims):
                return False
        return True

    def job_enqueued(self, job: JobInfo) -> None:
        """Every admission (by the vote or anyway): keep the enqueue bookkeeping current."""
        if self._front is None:
            return
        front = self._front.get(job.queue)
        if front is None or self.ssn.job_order_cmp(job, front) < 0:
            self._front[job.queue] = job
        need = job_min_resources(job)
        if self._fits_idle(need):
            self._unpromised = self._unpromised - need
        for at in self._chain(job.queue):
            self._admitted[at.name] = self._admitted.get(at.name, Resources()) + need

    def _fits_idle(self, need: Resources) -> bool:
        return all(need[d] <= self._idle[d] for d in requested_dims(need))

    def _enqueue_state(self) -> None:
        if self._front is not None:
            return
        table = self.ssn.table
        fut = table.future_idle()
        self._idle = table.resources(np.maximum(fut, 0).sum(axis=0)) if len(table) else Resources()
        front: dict[str, JobInfo] = {}
        promised = Resources()
        for j in self.ssn.jobs.values():
            if j.phase != "Inqueue" or j.ready_count() >= j.min_available:
                continue
            f = front.get(j.queue)
            if f is None or self.ssn.job_order_cmp(j, f) < 0:
                front[j.queue] = j
            need = (job_min_resources(j) - j.allocated()).clamp_min_zero()
            if self._fits_idle(need):
                promised = promised + need
        self._front = front
        self._unpromised = self._idle - promised
        self._admitted: dict[str, Resources] = {}

    # ------------------------------------------------------------ close
    def report(self) -> dict[str, dict[str, Any]]:
        names = self.ssn.table.names
        return {r.job.key: {"start": r.start, "nodes": [names[i] for i in r.rows.tolist()],
                            "resources": r.need.to_json(), "entitled": r.entitled, "reason": r.reason}
                for r in self.res}

    def backfilled(self) -> list[str]:
        out = []
        for uid in sorted(self.backfill_candidates):
            job = self.ssn.jobs.get(uid)
            if job is not None and job.is_ready() and any(t.status is S.BINDING for t in job.tasks.values()):
                out.append(job.key)
        return out


@plugin(NAME)
class ReservationPlugin:
    def __init__(self, arguments: dict | None = None):
        self.arguments = dict(arguments or {})
        max_jobs = typed_argument(NAME, self.arguments, "reservation.maxJobs", DEFAULT_MAX_JOBS)
        window = typed_argument(NAME, self.arguments, "reservation.window", DEFAULT_WINDOW)
        enqueue = typed_argument(NAME, self.arguments, "reservation.enqueue", True)
        self.max_jobs = max_jobs if isinstance(max_jobs, int) and max_jobs >= 0 else DEFAULT_MAX_JOBS
        self.window = float(window) if isinstance(window, (int, float)) and window > 0 else DEFAULT_WINDOW
        self.enqueue = enqueue if isinstance(enqueue, bool) else True

    def on_session_open(self, ssn: Session) -> None:
        self.plan = ReservationPlan(ssn, self.max_jobs, self.window, self.enqueue)
        ssn.reservations = self.plan
        ssn.add_event_handler(EventHandler(allocate=self.plan.on_allocate, deallocate=self.plan.on_deallocate))
        ssn.add_fn("job_enqueued", NAME, self.plan.job_enqueued)

    def on_session_close(self, ssn: Session) -> None:
        ssn.reservation_report = self.plan.report()
        ssn.backfilled_jobs = self.plan.backfilled()


__all__ = ["ReservationPlan", "ReservationPlugin", "Reservation", "expected_runtime", "task_runtime", "NAME"]
