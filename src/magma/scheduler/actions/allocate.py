"""allocate: place pending tasks of Inqueue jobs, queue by queue, one job at a time, all-or-nothing per gang.

Volcano's allocate (reference §5), step by step:

1. Jobs: Pending jobs are skipped when `enqueue` is configured (else promoted to Inqueue, as Volcano does);
   jobs failing JobValid are skipped (their validation message becomes their reason). A job's candidate tasks
   are its Pending, non-BestEffort tasks in TaskOrder.
2. Queues are popped by QueueOrder; an Overused queue is dropped for the rest of the action. One job is popped
   from the queue by JobOrder and its tasks are placed in a Statement:
   - Allocatable(queue, task) must hold (else the task is skipped and the queue bound recorded, in numbers);
   - candidate nodes pass the predicates and have request <= FutureIdle;
   - nodes whose Idle fits are scored first, those fitting only FutureIdle second; the best node gets the task:
     Allocate when its Idle fits, else Pipeline (onto resources being released);
   - a task that fits nowhere records the fit summary (reasons.node_fit_summary) and either stops the job or
     lets the other tasks continue (Volcano's NeedContinueAllocating);
   - once JobReady holds, the job stops taking tasks for this turn.
3. JobReady -> commit (binds) and the job is pushed back if tasks remain; only JobPipelined -> the statement is
   kept (neither committed nor discarded: the job holds its pipelined places for the rest of the session);
   otherwise the statement is discarded. The queue is pushed back.

Performance by design. Identical tasks of a gang (same `task.shape` and request) form a group. Predicates run
once per shape for the whole action (the predicate "error cache", argument `predicateErrorCacheEnable`,
default true), and within a job's turn every group keeps its candidate masks and scores as arrays over all node
rows; after a placement only the rows that changed are re-checked and re-scored. There is no loop over nodes
in Python. Jobs whose pods carry inter-pod (anti-)affinity or topology-spread constraints make placements
change other nodes' predicates and scores, so for them (and for every job after such a pod was placed) the
arrays are recomputed after each placement.

Deliberate differences from Volcano (docs/volcano-differences.md):
- Ties between equal best scores: Volcano picks one at random; magma takes the lowest node row (the order of
  nodes in the snapshot), so the same input always gives the same placements.
- Node sampling (`percentageOfNodesToFind`): Volcano stops looking after a number of feasible nodes that
  shrinks as the cluster grows (all nodes up to 100, then max(50 - N/125, 5) percent, at least 100 nodes),
  starting where the previous search stopped. magma considers every node by default (the best node, always);
  the argument `percentageOfNodesToFind` on the allocate action brings Volcano's sampling back: 1..99 is that
  percentage, 0 is Volcano's adaptive formula (`minNodesToFind` 100 and `minPercentageOfNodesToFind` 5
  adjustable), 100 or absent means all nodes. The rotating start is kept per session (starting at row 0).
- The predicate error cache is per task shape, not per task role: tasks of one role with different shapes are
  each judged on their own, and a role's later tasks are not skipped because an earlier, different one failed.
- A NominatedNodeName from an earlier session is not tried first (magma keeps pipelined places within a
  session only).
"""

from __future__ import annotations

import functools
import heapq
from collections import deque
from typing import Any, Callable, Generic, Iterable, TypeVar

import numpy as np

from ..framework import ALLOCATED, JobInfo, QueueInfo, Session, Statement, TaskInfo, TaskStatus, action
from ..framework.session import PredicateResult
from .. import reasons

S = TaskStatus
T = TypeVar("T")


# ---------------------------------------------------------------- helpers shared by the actions


class OrderedHeap(Generic[T]):
    """Volcano's util.PriorityQueue: a binary heap whose comparison function is evaluated at push and pop time
    (so an item pushed back is placed by the plugins' current view, as in Volcano). Equal items pop in
    insertion order."""

    def __init__(self, cmp: Callable[[T, T], int], items: Iterable[T] = ()):
        self._key = functools.cmp_to_key(cmp)
        self._heap: list[tuple[Any, int, T]] = []
        self._n = 0
        for it in items:
            self.push(it)

    def push(self, item: T) -> None:
        heapq.heappush(self._heap, (self._key(item), self._n, item))
        self._n += 1

    def pop(self) -> T:
        return heapq.heappop(self._heap)[2]

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)

    def items(self) -> list[T]:
        return [e[2] for e in self._heap]


def flag(value: Any, default: bool) -> bool:
    """A boolean action argument as Go's strconv.ParseBool reads it (bools, "true", "False", "1", ...)."""
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    text = str(value).strip().lower()
    if text in ("1", "t", "true", "yes"):
        return True
    if text in ("0", "f", "false", "no"):
        return False
    return default


def int_arg(arguments: dict, key: str, default: int | None) -> int | None:
    """An integer action argument; a value that is not a number keeps the default (as Volcano's GetInt)."""
    raw = arguments.get(key)
    if raw is None or isinstance(raw, bool):
        return default
    try:
        return int(float(raw))
    except (TypeError, ValueError):
        return default


def enqueue_configured(ssn: Session) -> bool:
    actions = getattr(ssn.config, "actions", None)
    if actions is None:
        return True  # no config at hand (tests driving actions by hand): behave as the default config
    return "enqueue" in actions


def sorted_by_uid(jobs: Iterable[JobInfo]) -> list[JobInfo]:
    return sorted(jobs, key=lambda j: j.uid)


def placement_sensitive(task: TaskInfo) -> bool:
    """Whether placing this pod can change predicates or scores of nodes other than its own: inter-pod
    (anti-)affinity and topology spread are judged over topology domains."""
    pod = task.pod
    if pod is None:
        return False
    spec = pod.spec
    if spec.topology_spread_constraints:
        return True
    aff = spec.affinity
    return aff is not None and (aff.pod_affinity is not None or aff.pod_anti_affinity is not None)


def group_key(task: TaskInfo) -> tuple:
    return (task.shape, task.resreq)


class NodeSampling:
    """Volcano's feasible-node sampling (off by default in magma: every node is considered)."""

    def __init__(self, arguments: dict):
        pct = int_arg(arguments, "percentageOfNodesToFind", None)
        self.enabled = pct is not None and pct < 100
        self.percentage = 100 if pct is None else pct
        self.min_nodes = max(int_arg(arguments, "minNodesToFind", 100) or 0, 1)
        self.min_percentage = max(int_arg(arguments, "minPercentageOfNodesToFind", 5) or 0, 1)
        self.start = 0

    def count(self, n: int) -> int:
        if not self.enabled or n <= self.min_nodes:
            return n
        pct = self.percentage
        if pct <= 0:
            pct = max(50 - n // 125, self.min_percentage)
        return max(n * pct // 100, self.min_nodes)

    def sample(self, feasible_mask: np.ndarray) -> np.ndarray:
        """The rows Volcano's search would have found: the first K feasible rows from the rotating start."""
        n = len(feasible_mask)
        k = self.count(n)
        if k >= n:
            return np.flatnonzero(feasible_mask)
        order = np.roll(np.arange(n), -self.start)
        hits = np.flatnonzero(feasible_mask[order])
        if len(hits) > k:
            processed = int(hits[k - 1]) + 1
            hits = hits[:k]
        else:
            processed = n
        self.start = (self.start + processed) % n
        return np.sort(order[hits])


class PredicateCache:
    """Predicate results over all node rows, per task shape, for one action.

    Valid while no placement-sensitive pod (inter-pod affinity, topology spread) has been placed: such a
    placement clears it. With `enabled` false every call evaluates the predicates afresh."""

    def __init__(self, ssn: Session, enabled: bool):
        self.ssn = ssn
        self.enabled = enabled
        self.rows = np.arange(len(ssn.node_list), dtype=np.int64)
        self._cache: dict[tuple, PredicateResult] = {}

    def get(self, task: TaskInfo, fresh: bool = False) -> PredicateResult:
        if fresh or not self.enabled or placement_sensitive(task):
            return self.ssn.predicate(task, self.rows)
        r = self._cache.get(task.shape)
        if r is None:
            r = self._cache[task.shape] = self.ssn.predicate(task, self.rows)
        return r

    def invalidate(self) -> None:
        self._cache.clear()


class Candidates:
    """One group of identical tasks during one job's turn: masks and scores over all node rows.

    `fit_future` = predicates pass and request <= FutureIdle (Volcano's filter); `fit_idle` = also <= Idle.
    After a placement only the changed rows are re-checked and re-scored (`refresh`); for placement-sensitive
    jobs the arrays are rebuilt instead."""

    def __init__(self, alloc: "Allocator", task: TaskInfo):
        self.alloc = alloc
        self.task = task
        self.version = alloc.version
        self._build()

    def _build(self) -> None:
        a = self.alloc
        table = a.ssn.table
        self.pred = a.predicates.get(self.task, fresh=a.sensitive)
        vec = self.task.vec
        self.fit_future = self.pred.mask & table.fits(vec, table.future_idle())
        self.fit_idle = self.fit_future & table.fits(vec, table.idle)
        self.score = np.zeros(len(self.fit_future), dtype=np.float64)
        self.scored = np.zeros(len(self.fit_future), dtype=bool)
        self.failed_summary: str | None = None

    def refresh(self) -> None:
        a = self.alloc
        if self.version == a.version:
            return
        if a.sensitive:
            self._build()
        else:
            rows = np.unique(np.asarray(a.changed[self.version:], dtype=np.int64))
            table = a.ssn.table
            vec = self.task.vec
            fut = table.idle[rows] + table.releasing[rows] - table.pipelined[rows]
            self.fit_future[rows] = self.pred.mask[rows] & (fut >= vec).all(axis=1)
            self.fit_idle[rows] = self.fit_future[rows] & (table.idle[rows] >= vec).all(axis=1)
            self.scored[rows] = False
        self.version = a.version

    def best(self, task: TaskInfo) -> tuple[int, bool] | None:
        """(row, fits idle) of the best node for `task`, or None."""
        self.refresh()
        feasible = self.alloc.sampling.sample(self.fit_future) if self.alloc.sampling.enabled \
            else np.flatnonzero(self.fit_future)
        if not len(feasible):
            return None
        idle = feasible[self.fit_idle[feasible]]
        for rows, fits_idle in ((idle, True), (feasible[~self.fit_idle[feasible]], False)):
            if not len(rows):
                continue
            need = rows[~self.scored[rows]]
            if len(need):
                self.score[need] = self.alloc.ssn.node_scores(task, need)
                self.scored[need] = True
            # argmax returns the first maximum: the lowest row among equal scores (deterministic tie-break).
            return int(rows[int(np.argmax(self.score[rows]))]), fits_idle
        return None

    def summary(self, task: TaskInfo) -> str:
        if self.failed_summary is None:
            table = self.alloc.ssn.table
            self.failed_summary = reasons.node_fit_summary(
                self.alloc.ssn, task, self.alloc.predicates.rows, self.pred, table.future_idle())
        return self.failed_summary


# ---------------------------------------------------------------- the action


def need_continue_allocating(job: JobInfo) -> bool:
    """Volcano's NeedContinueAllocating: after a task found no node, may the job's other tasks still go on?"""
    if job.min_available == len(job.tasks):
        return False
    failed_roles = {job.tasks[uid].role for uid in job.fit_errors if uid in job.tasks}
    pending: dict[str, int] = {}
    for t in job.tasks.values():
        if t.status is S.PENDING:
            pending[t.role] = pending.get(t.role, 0) + 1
    if job.min_available < sum(job.task_min_available.values()):
        left = sum(n for role, n in pending.items() if role not in failed_roles)
        return job.ready_count() + left >= job.min_available
    allocated: dict[str, int] = {}
    for t in job.tasks.values():
        if t.status in ALLOCATED or t.status is S.SUCCEEDED:
            allocated[t.role] = allocated.get(t.role, 0) + 1
    for role in failed_roles:
        need = job.task_min_available.get(role, 0)
        if need and allocated.get(role, 0) < need:
            return False
    return True


class Allocator:
    def __init__(self, ssn: Session, arguments: dict):
        self.ssn = ssn
        self.predicates = PredicateCache(ssn, flag(arguments.get("predicateErrorCacheEnable"), True))
        self.sampling = NodeSampling(arguments)
        # Rows whose resources changed during the current job's turn; groups catch up from their version.
        self.changed: list[int] = []
        self.version = 0
        self.sensitive = False

    # ------------------------------------------------------------ setup
    def run(self) -> None:
        ssn = self.ssn
        queues: OrderedHeap[QueueInfo] = OrderedHeap(ssn.queue_order_cmp)
        jobs_by_queue: dict[str, OrderedHeap[JobInfo]] = {}
        self.tasks: dict[str, deque[TaskInfo]] = {}
        skip_pending = enqueue_configured(ssn)
        for job in sorted_by_uid(ssn.jobs.values()):
            if job.is_pending():
                if skip_pending:
                    continue
                job.phase = "Inqueue"  # no enqueue action: Volcano promotes Pending jobs here
            vr = ssn.job_valid(job)
            if not vr.passed:
                if not job.reason:
                    job.reason = vr.message or vr.reason
                    job.reason_code = vr.reason or None
                continue
            queue = ssn.queues.get(job.queue)
            if queue is None:
                continue
            tasks = [t for t in job.pending_tasks() if not t.best_effort]
            if not tasks:
                continue
            if job.queue not in jobs_by_queue:
                jobs_by_queue[job.queue] = OrderedHeap(ssn.job_order_cmp)
                queues.push(queue)
            jobs_by_queue[job.queue].push(job)
            self.tasks[job.uid] = deque(ssn.sorted_tasks(tasks))

        while queues:
            queue = queues.pop()
            if ssn.overused(queue):
                # Dropped for the rest of the action: say so on every job it still holds.
                for job in jobs_by_queue[queue.name].items():
                    if not job.reason:
                        job.reason = reasons.queue_overused_reason(ssn, queue)
                continue
            jobs = jobs_by_queue.get(queue.name)
            if not jobs:
                continue
            job = jobs.pop()
            stmt = self.allocate_job(job, queue, self.tasks[job.uid])
            if stmt is not None and ssn.job_ready(job):
                stmt.commit()
                if self.tasks[job.uid]:
                    jobs.push(job)
            queues.push(queue)

    # ------------------------------------------------------------ one job's turn
    def allocate_job(self, job: JobInfo, queue: QueueInfo, tasks: deque[TaskInfo]) -> Statement | None:
        ssn = self.ssn
        stmt = Statement(ssn)
        groups: dict[tuple, Candidates] = {}
        self.changed = []
        self.version = 0
        self.sensitive = any(placement_sensitive(t) for t in tasks)
        blocked: TaskInfo | None = None  # a task the queue refused (its reason is written after the turn)
        while tasks:
            task = tasks.popleft()
            if not ssn.allocatable(queue, task):
                blocked = blocked or task
                continue
            key = group_key(task)
            cands = groups.get(key)
            if cands is None:
                cands = groups[key] = Candidates(self, task)
            choice = None if cands.failed_summary is not None else cands.best(task)
            if choice is None:
                job.fit_errors[task.uid] = cands.summary(task)
                if need_continue_allocating(job):
                    continue
                break
            row, fits_idle = choice
            node = ssn.node_list[row]
            if fits_idle:
                stmt.allocate(task, node)
            else:
                stmt.pipeline(task, node)
            if placement_sensitive(task):
                self.sensitive = True
                self.predicates.invalidate()
            self.changed.append(row)
            self.version += 1
            if ssn.job_ready(job):
                break
        if ssn.job_ready(job) or ssn.job_pipelined(job):
            if blocked is not None and not ssn.job_ready(job):
                reasons.record_queue_bound(ssn, queue, job, blocked)
            return stmt
        stmt.discard()
        if blocked is not None:
            reasons.record_queue_bound(ssn, queue, job, blocked)
        return None


@action("allocate")
def allocate(ssn: Session, arguments: dict) -> None:
    Allocator(ssn, dict(arguments or {})).run()
