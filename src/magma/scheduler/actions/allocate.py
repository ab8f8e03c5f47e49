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
arrays are recomputed after each placement. A gang turn that would place what its queue's share or the nodes let in
and then fail (a job waiting, session after session) is foreseen from counts and passed over with the same outcome
(`Allocator._stops_short`).

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
- Reservations (magma's `reservation` plugin, docs/reservation-backfill.md): when a job's gang cannot be placed
  (no room, or its queue's share is held by running work), the plugin reserves resources for it; every later
  job's candidate nodes then leave out those a reservation holds against it (`ReservationPlan.blocked`), so it is
  placed only as a backfill that does not delay the reserved start.
"""

from __future__ import annotations

import functools
import heapq
import operator
from collections import deque
from typing import Any, Callable, Generic, Iterable, TypeVar

import numpy as np

from ..framework import ALLOCATED, JobInfo, QueueInfo, Session, Statement, TaskInfo, TaskStatus, action, fastpath
from ..framework.jobindex import session_jobs
from ..framework.kept import PerConfig
from ..framework.nodes import room_copies
from ..framework.session import PredicateResult
from .. import reasons

S = TaskStatus
T = TypeVar("T")
_UID = operator.attrgetter("uid")
_UNKEYED = object()  # the key of an OrderedHeap's lone item, not taken yet


# ---------------------------------------------------------------- helpers shared by the actions


class OrderedHeap(Generic[T]):
    """Volcano's util.PriorityQueue: a binary heap whose comparison function is evaluated at push and pop time
    (so an item pushed back is placed by the plugins' current view, as in Volcano). Equal items pop in
    insertion order. With `key` (a sort key giving the same order, e.g. Session.job_order_key) the order is taken
    at push time: only for items whose order cannot change while they are in the heap."""

    def __init__(self, cmp: Callable[[T, T], int], items: Iterable[T] = (), key: Callable[[T], Any] | None = None):
        self._key = key or functools.cmp_to_key(cmp)
        self._heap: list[tuple[Any, int, T]] = []
        self._n = 0
        for it in items:
            self.push(it)

    def push(self, item: T) -> None:
        heap = self._heap
        if not heap:
            # Alone, it pops next whatever its order: its key is taken when another item joins it (the same then,
            # as an item's order does not change while it is in the heap).
            heap.append((_UNKEYED, self._n, item))
        else:
            if len(heap) == 1 and heap[0][0] is _UNKEYED:
                _, n, lone = heap[0]
                heap[0] = (self._key(lone), n, lone)
            heapq.heappush(heap, (self._key(item), self._n, item))
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
    return sorted(jobs, key=_UID)


def placement_sensitive(task: TaskInfo) -> bool:
    """Whether placing this pod can change predicates or scores of nodes other than its own: inter-pod
    (anti-)affinity and topology spread are judged over topology domains."""
    shape = task.shape
    if len(shape) >= 4 and not shape[1] and not shape[3]:
        return False  # no affinity and no spread constraints at all (snapshot._shape)
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
        self._cache: dict[tuple, PredicateResult] = {}
        self.generation = 0  # bumped by invalidate: results of an older generation are out of date

    @functools.cached_property
    def rows(self) -> np.ndarray:
        """Every node row (made when first asked: many actions never evaluate a predicate)."""
        return np.arange(len(self.ssn.node_list), dtype=np.int64)

    def get(self, task: TaskInfo, fresh: bool = False) -> PredicateResult:
        if fresh or not self.enabled or placement_sensitive(task):
            return self.ssn.predicate(task, self.rows)
        r = self._cache.get(task.shape)
        if r is None:
            r = self._cache[task.shape] = self.ssn.predicate(task, self.rows)
        return r

    def invalidate(self) -> None:
        self._cache.clear()
        self.generation += 1


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
        held = a.reserved(self.task)  # nodes a reservation keeps from this task (reservation plugin)
        if held is not None:
            self.fit_future &= ~held
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
            held = a.reserved(self.task)  # all rows: a queue's reserved share counts on every node
            if held is not None:
                self.fit_future &= ~held
                self.fit_idle &= self.fit_future
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
            plan = self.alloc.plan
            pred = plan.explain(self.pred, task) if plan is not None else self.pred
            self.failed_summary = reasons.node_fit_summary(
                self.alloc.ssn, task, self.alloc.predicates.rows, pred, table.future_idle())
        return self.failed_summary


def state_keys(ssn: Session, rows: np.ndarray, cache: dict[int, bytes] | None = None) -> list[bytes]:
    """`Session.node_state` of each row as bytes (one `tobytes()` for all). With `cache` (row -> key, of rows that
    have not changed since: the caller drops a row's entry when it changes), only missing rows are computed."""
    if cache is None:
        todo, keys = rows, None
    else:
        rl = rows.tolist()
        keys = [cache.get(r) for r in rl]
        miss = [i for i, k in enumerate(keys) if k is None]
        if not miss:
            return keys  # type: ignore[return-value]
        if len(miss) <= 8:  # a few rows by plain row views: numpy's fixed cost per call would dominate
            for i in miss:
                keys[i] = cache[rl[i]] = ssn.node_state_key(rl[i])
            return keys  # type: ignore[return-value]
        todo = rows if len(miss) == len(rl) else rows[miss]
    states = np.ascontiguousarray(ssn.node_state(todo))
    raw, width = states.tobytes(), states.shape[1] * states.itemsize
    got = [raw[i:i + width] for i in range(0, len(raw), width)] if width else [b""] * len(todo)
    if cache is None:
        return got
    for i, k in zip(miss, got):
        keys[i] = cache[rl[i]] = k
    return keys  # type: ignore[return-value]


def state_scores(ssn: Session, memo: dict[bytes, float], task: TaskInfo, rows: np.ndarray,
                 cache: dict[int, bytes] | None = None) -> np.ndarray:
    """Scores of `rows` for a task with a `node_scores_key`, computed once per distinct node state (`memo`: node
    state -> score, for tasks of one key): a node that fills up to the state of another node (equal free
    capacity, equal requests) scores what that node scored. `cache`: see `state_keys`."""
    return np.fromiter(state_score_list(ssn, memo, task, rows, cache), dtype=np.float64, count=len(rows))


def state_score_list(ssn: Session, memo: dict[bytes, float], task: TaskInfo, rows: np.ndarray,
                     cache: dict[int, bytes] | None = None) -> list[float]:
    """`state_scores` as a list of floats."""
    keys = state_keys(ssn, rows, cache)
    miss = [i for i, k in enumerate(keys) if k not in memo]
    if miss:
        # one row per distinct missing state
        first: dict[bytes, int] = {}
        for i in miss:
            first.setdefault(keys[i], i)
        idx = np.fromiter(first.values(), dtype=np.int64, count=len(first))
        for k, sc in zip(first, ssn.node_scores(task, rows[idx]).tolist()):
            memo[k] = sc
    return [memo[k] for k in keys]


# Node scores by node state, kept across sessions per scheduler configuration and score key
# (fastpath.allocate_scores_kept): a task with a `Session.node_scores_key` scores a node as a function of that key
# and the node's `Session.node_state` alone, and the configuration fixes the plugins and their arguments. The
# NodeTable's dimensions (what the state's columns mean) are part of the key.
_KEPT_SCORES = PerConfig(max_entries=100_000, max_keys=4096)


def kept_scores(ssn: Session, score_key: tuple, task: TaskInfo) -> dict[bytes, float]:
    """The node state -> score memo of tasks with this score key (and a request naming its resources in the order
    `task`'s does: a score may add per-resource parts in that order): kept from earlier sessions of the same
    configuration with fastpath.allocate_scores_kept, else a new one."""
    if not fastpath.allocate_scores_kept:
        return {}
    got = _KEPT_SCORES.memo(ssn.config, (tuple(ssn.table.dims), score_key, tuple(task.resreq.items())))
    return {} if got is None else got


class SharedGroup:
    """The fast path of `Candidates` (fastpath.shared_groups): one group of identical tasks for the whole action.

    Tasks are identical when their shape, request and score inputs (`Session.node_scores_key`) are equal; the
    scores of such a task on a node are then a function of that node's state alone. The group keeps two heaps
    of (-score, row) over the feasible rows - rows that fit Idle, rows that fit only FutureIdle - so that the
    best node is the top of a heap instead of an argmax over all rows. Every placement, undo or commit that
    changes a row in the action appends it to the allocator's change log; on use the group re-checks and
    re-scores only the rows logged since it last looked (those its predicates pass), and pushes them again with
    a new stamp (entries with an old stamp are dropped when they reach the top). Scores are kept per node state
    (`state_scores`), and node state keys per row until the row changes (`Allocator.state_keys`). The best entry is the highest
    score and, among equal scores, the lowest row: the node `Candidates.best` picks."""

    def __init__(self, alloc: "Allocator", task: TaskInfo, score_key: tuple | None = None):
        self.alloc = alloc
        ssn = alloc.ssn
        table = ssn.table
        self.generation = alloc.predicates.generation
        self.pred = alloc.predicates.get(task)
        self.vec = task.vec
        self.vec_list = task.vec.tolist()
        self.version = len(alloc.log)
        # Which rows fit is known from the heaps from now on: the masks are not kept up to date.
        fit_future = self.pred.mask & table.fits(self.vec, table.future_idle())
        fit_idle = fit_future & table.fits(self.vec, table.idle)
        self.stamp = [0] * len(fit_future)
        self.heaps: tuple[list, list] = ([], [])  # rows fitting FutureIdle only, rows fitting Idle
        # node state (Session.node_state) -> score: nodes in equal state; kept across sessions when it can be
        self.memo: dict[bytes, float] = kept_scores(ssn, score_key, task) if score_key is not None else {}
        self._summary: tuple[int, str] | None = None
        rows = np.flatnonzero(fit_future)
        self._push(task, rows, fit_idle[rows])
        for h in self.heaps:
            heapq.heapify(h)

    def _push(self, task: TaskInfo, rows: np.ndarray, fits_idle: np.ndarray, heap_push: bool = False) -> None:
        """Score `rows` (all fitting FutureIdle; `fits_idle` per row) and add them to the heaps."""
        if not len(rows):
            return
        scores = state_score_list(self.alloc.ssn, self.memo, task, rows, self.alloc.state_keys)
        stamp = self.stamp
        heaps = self.heaps
        for row, sc, i in zip(rows.tolist(), scores, fits_idle.tolist()):
            entry = (-sc, row, stamp[row])
            if heap_push:
                heapq.heappush(heaps[i], entry)
            else:
                heaps[i].append(entry)

    def refresh(self, task: TaskInfo) -> None:
        log = self.alloc.log
        n = len(log)
        if self.version == n:
            return
        if n - self.version == 1:  # the common case: the group's own placement
            self.version = n
            self._refresh_rows(task, log[-1:])
        else:
            changed = set(log[self.version:])
            self.version = n
            if len(changed) <= 4:
                self._refresh_rows(task, sorted(changed))
            else:
                self._refresh_array(task, np.fromiter(sorted(changed), dtype=np.int64, count=len(changed)))
        stamp = self.stamp
        for h in self.heaps:
            if len(h) > 64 and len(h) > 4 * len(stamp):
                h[:] = [e for e in h if e[2] == stamp[e[1]]]
                heapq.heapify(h)

    def _refresh_rows(self, task: TaskInfo, rows: list[int]) -> None:
        """`_refresh_array` for a few rows (a placement changes one), in plain ints: numpy's fixed cost per call
        would dominate."""
        ssn = self.alloc.ssn
        table = ssn.table
        idle, releasing, pipelined = table.idle, table.releasing, table.pipelined
        vec = self.vec_list
        mask, stamp, memo, heaps = self.pred.mask, self.stamp, self.memo, self.heaps
        keys = self.alloc.state_keys
        for r in rows:
            if not mask[r]:
                continue  # the predicates fail it: it never fits (nor has heap entries)
            stamp[r] += 1
            free = idle[r].tolist()
            fits_future = fits_idle = True
            for i, rel, pip, v in zip(free, releasing[r].tolist(), pipelined[r].tolist(), vec):
                if i + rel - pip < v:
                    fits_future = False
                    break
                if i < v:
                    fits_idle = False
            if fits_future:
                key = keys.get(r)
                if key is None:
                    key = keys[r] = ssn.node_state_key(r)
                sc = memo.get(key)
                if sc is None:
                    sc = memo[key] = ssn.node_scores(task, np.array([r], dtype=np.int64)).tolist()[0]
                h = heaps[fits_idle]
                if h and h[0][1] == r:  # the row's own entry, out of date now, is on top: one sift instead of two
                    heapq.heapreplace(h, (-sc, r, stamp[r]))
                else:
                    heapq.heappush(h, (-sc, r, stamp[r]))

    def _refresh_array(self, task: TaskInfo, rows: np.ndarray) -> None:
        rows = rows[self.pred.mask[rows]]  # the others never fit (nor have heap entries)
        if not len(rows):
            return
        stamp = self.stamp
        for r in rows.tolist():
            stamp[r] += 1
        table = self.alloc.ssn.table
        vec = self.vec
        idle = table.idle[rows]
        fits_future = (idle + table.releasing[rows] - table.pipelined[rows] >= vec).all(axis=1)
        fits_idle = fits_future & (idle >= vec).all(axis=1)
        self._push(task, rows[fits_future], fits_idle[fits_future], heap_push=True)

    def best(self, task: TaskInfo) -> tuple[int, bool] | None:
        self.refresh(task)
        stamp = self.stamp
        for fits_idle in (True, False):
            h = self.heaps[fits_idle]
            while h:
                _, row, st = h[0]
                if st == stamp[row]:
                    return row, fits_idle
                heapq.heappop(h)
        return None

    def summary(self, task: TaskInfo) -> str:
        """`Candidates.summary`, kept while no row changed anywhere."""
        n = len(self.alloc.log)
        if self._summary is None or self._summary[0] != n:
            table = self.alloc.ssn.table
            self._summary = (n, reasons.node_fit_summary(
                self.alloc.ssn, task, self.alloc.predicates.rows, self.pred, table.future_idle()))
        return self._summary[1]


class _Turn:
    """A shared group as one job's turn sees it: a failure stops the group for the rest of the turn only."""

    __slots__ = ("group", "failed_summary")

    def __init__(self, group: SharedGroup):
        self.group = group
        self.failed_summary: str | None = None

    def best(self, task: TaskInfo) -> tuple[int, bool] | None:
        return self.group.best(task)

    def summary(self, task: TaskInfo) -> str:
        if self.failed_summary is None:
            self.failed_summary = self.group.summary(task)
        return self.failed_summary


class _HeldTurn(_Turn):
    """A shared group as a job some reservation holds against sees it (reservation plugin): the best row the
    reservations leave it. Held rows found at the top of a heap are set aside and pushed back after the search."""

    __slots__ = ("alloc",)

    def __init__(self, group: SharedGroup, alloc: "Allocator"):
        super().__init__(group)
        self.alloc = alloc

    def best(self, task: TaskInfo) -> tuple[int, bool] | None:
        group = self.group
        group.refresh(task)
        held = self.alloc.reserved(task)
        if held is None:
            return group.best(task)
        if held.all():
            return None
        stamp = group.stamp
        for fits_idle in (True, False):
            h = group.heaps[fits_idle]
            aside = []
            found = None
            while h:
                _, row, st = h[0]
                if st != stamp[row]:
                    heapq.heappop(h)
                elif held[row]:
                    aside.append(heapq.heappop(h))
                else:
                    found = (row, fits_idle)
                    break
            for e in aside:
                heapq.heappush(h, e)
            if found is not None:
                return found
        return None

    def summary(self, task: TaskInfo) -> str:
        """The node-fit summary with held rows named; kept for tasks held alike while no row changed."""
        if self.failed_summary is None:
            ssn, plan = self.alloc.ssn, self.alloc.plan
            held = self.alloc.reserved(task)
            key = (len(self.alloc.log), None if held is None else held.tobytes())
            cache = self.group.__dict__.setdefault("held_summaries", {})
            if key not in cache:
                if len(cache) > 64:
                    cache.clear()
                pred = plan.explain(self.group.pred, task)
                cache[key] = reasons.node_fit_summary(ssn, task, self.alloc.predicates.rows, pred,
                                                      ssn.table.future_idle())
            self.failed_summary = cache[key]
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
        self.plan = getattr(ssn, "reservations", None)  # the reservation plugin's plan, when configured
        # Shared groups (fastpath.shared_groups): every row whose resources changed in this action, in order.
        self.log: list[int] = []
        # Node state keys (Session.node_state_key) of rows unchanged since they were computed: groups re-scoring a
        # row after a change key it once for all; a row's entry is dropped when the row is logged.
        self.state_keys: dict[int, bytes] = {}
        self._sensitive_jobs: dict[str, bool] = {}  # job uid -> had it a placement-sensitive task at its first turn
        self.shared: dict[tuple, SharedGroup] = {}
        self.share = (fastpath.shared_groups and not self.sampling.enabled
                      and self.predicates.enabled)

    def candidates(self, task: TaskInfo) -> "Candidates | _Turn":
        """The node candidates of `task`'s group for this job's turn: the action-wide shared group when the
        fast path applies to it, else the turn's own `Candidates`."""
        if self.share and not self.sensitive:
            score_key = self.ssn.node_scores_key(task)
            if score_key is not None:
                # Pods differing only in labels (a job name, say) pass the same nodes when no placed pod's
                # anti-affinity looks at labels: the predicate key then stands for the shape.
                key = (self.ssn.predicate_key(task) or task.shape, task.resreq, len(task.vec), score_key)
                group = self.shared.get(key)
                if group is None or group.generation != self.predicates.generation:
                    group = self.shared[key] = SharedGroup(self, task, score_key)
                # A job some reservation holds against skips the rows held from it (reservation plugin).
                return _Turn(group) if self.reserved(task) is None else _HeldTurn(group, self)
        return Candidates(self, task)

    def _logged(self, stmt: Statement) -> None:
        """Log the rows of a statement's placements (before a commit or discard changes them)."""
        for op in stmt.ops:
            if op.node is not None:
                self._log(op.node.index)

    def _commit(self, stmt: Statement) -> None:
        """Commit a job's statement, logging the rows the commit changes: a pipelined task's (it moves to the
        node's used resources), a refused bind's (its task is put back to Pending), every row when bind annotators
        are registered. An allocated task that binds leaves its node as it was (Session.commit_bind)."""
        ops = [op for op in stmt.ops if op.node is not None]
        stmt.commit()
        annotated = bool(self.ssn.bind_annotators)
        for op in ops:
            if annotated or op.kind != "allocate" or op.task.status is not S.BINDING:
                self._log(op.node.index)

    def _log(self, row: int) -> None:
        """A row whose resources change (or have just changed): the groups re-check it when next used."""
        self.log.append(row)
        self.state_keys.pop(row, None)

    def reserved(self, task: TaskInfo, rows: np.ndarray | None = None) -> np.ndarray | None:
        return None if self.plan is None else self.plan.blocked(task, rows)

    # ------------------------------------------------------------ setup
    def run(self) -> None:
        ssn = self.ssn
        queues: OrderedHeap[QueueInfo] | None = None  # made for the first queue with a job to place
        jobs_by_queue: dict[str, OrderedHeap[JobInfo]] = {}
        self.tasks: dict[str, deque[TaskInfo]] = {}
        skip_pending = enqueue_configured(ssn)
        for job in sorted_by_uid(session_jobs(ssn)):  # the index leaves out quiet jobs
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
                jobs_by_queue[job.queue] = OrderedHeap(ssn.job_order_cmp, key=ssn.job_order_key())
                if queues is None:
                    queues = OrderedHeap(ssn.queue_order_cmp_memo())  # (refused turns place nothing)
                queues.push(queue)
            jobs_by_queue[job.queue].push(job)
            self.tasks[job.uid] = deque(ssn.sorted_tasks(tasks))

        while queues:
            queue = queues.pop()
            jobs = jobs_by_queue[queue.name]
            if not jobs:
                continue  # its jobs' turns are over (Overused, a query, would change nothing now)
            if ssn.overused(queue):
                held = jobs.items()
                if self.plan is not None:
                    # Its first job still gets its reservation: the queue's own work ends, the gang's start nears.
                    first = jobs.pop()
                    self.plan.job_unplaced(first)
                    held = [first, *jobs.items()]
                # Dropped for the rest of the action: say so on every job it still holds.
                for job in held:
                    if not job.reason:
                        job.reason = reasons.queue_overused_reason(ssn, queue)
                continue
            job = jobs.pop()
            stmt, ready = self.allocate_job(job, queue, self.tasks[job.uid])
            if stmt is not None and ready:
                self._commit(stmt)
                if self.tasks[job.uid]:
                    jobs.push(job)
            queues.push(queue)

    # ------------------------------------------------------------ one job's turn
    def allocate_job(self, job: JobInfo, queue: QueueInfo,
                     tasks: deque[TaskInfo]) -> tuple[Statement | None, bool]:
        """One turn of the job: its statement unless discarded, and whether the job is ready (JobReady)."""
        ssn = self.ssn
        if self._stops_short(job, queue, tasks):
            return None, False
        stmt = Statement(ssn)
        groups: dict[tuple, Candidates] = {}
        self.changed = []
        self.version = 0
        # Its tasks left are some of those of its first turn: a job without such pods then has none now.
        turn_sensitive = self._sensitive_jobs.get(job.uid, True) and any(placement_sensitive(t) for t in tasks)
        self._sensitive_jobs.setdefault(job.uid, turn_sensitive)
        self.sensitive = turn_sensitive
        blocked: TaskInfo | None = None  # a task the queue refused (its reason is written after the turn)
        ready: bool | None = None  # JobReady since the last placement (it reads the tasks' states; None: not asked)
        while tasks:
            task = tasks.popleft()
            if not ssn.allocatable(queue, task):
                blocked = blocked or task
                continue
            key = group_key(task)
            cands = groups.get(key)
            if cands is None:
                cands = groups[key] = self.candidates(task)
            choice = None if cands.failed_summary is not None else cands.best(task)
            if choice is None:
                job.fit_errors[task.uid] = cands.summary(task)
                job.homeless_turn = True
                if need_continue_allocating(job):
                    continue
                break
            row, fits_idle = choice
            node = ssn.node_list[row]
            if fits_idle:
                stmt.allocate(task, node)
            else:
                stmt.pipeline(task, node)
            if turn_sensitive and placement_sensitive(task):
                self.sensitive = True
                self.predicates.invalidate()
            self.changed.append(row)
            self.version += 1
            self._log(row)
            ready = ssn.job_ready(job)
            if ready:
                break
        if ready is None:
            ready = ssn.job_ready(job)
        if ready or ssn.job_pipelined(job):
            if blocked is not None and not ready:
                reasons.record_queue_bound(ssn, queue, job, blocked)
            job.homeless_turn = False
            return stmt, ready
        self._logged(stmt)
        stmt.discard()
        if self.plan is not None:
            self.plan.job_unplaced(job)  # reserve for it, so that later jobs cannot keep it waiting
        if blocked is not None:
            reasons.record_queue_bound(ssn, queue, job, blocked)
        return None, False

    def _stops_short(self, job: JobInfo, queue: QueueInfo, tasks: deque[TaskInfo]) -> bool:
        """Would this turn place the tasks its queue's share and the nodes let in, then meet a task the queue
        refuses (fastpath.allocate_quota_bound) or one no node holds (fastpath.allocate_node_bound), and fail the
        gang? Then it is passed over with that turn's outcome: nothing placed, and the refused task's queue bound, or
        the homeless task's node-fit summary, on the job.

        Exact when the tasks ask for the same and pass the same nodes (equal `Session.predicate_key`s: predicates
        that judge each node alone), and their placements move no other node's predicates; when every Allocatable
        function says how many more such tasks it lets in (`Session.allocatable_left(exact=True)`: k, each
        placement adding one request to the allocations it compares); when the nodes the tasks pass hold c of them
        in their future idle (`room_copies`: a placement takes one task's room on one node, so each of the first
        min(k, c) finds a node and, when c < k, the next finds none, every node then holding exactly its copies);
        and when min(k, c) placements leave the job short of JobReady and JobPipelined (`Session.ready_need`,
        `pipeline_need`). A homeless task ends the turn only when the gang is every task of the job
        (`need_continue_allocating`); its summary reads the predicate result of its key, which is every such
        task's. Without a reservation plan or node sampling.

        The node bound is tried only for a job whose last turn met a task no node held (`JobInfo.homeless_turn`,
        kept with the job's record across sessions): the jobs that wait for room. Counting copies over every node
        costs about 30 us a turn at 5,000 nodes, for nothing on turns that place their gang; which turns try the
        bound changes only the time taken."""
        ssn = self.ssn
        if self.plan is not None or self.sampling.enabled or not tasks:
            return False
        first = tasks[0]
        k = ssn.allocatable_left(queue, first, exact=True)
        if k is None:
            return False
        quota = fastpath.allocate_quota_bound and k < len(tasks)
        nodes = (fastpath.allocate_node_bound and k > 0 and job.homeless_turn
                 and job.min_available == len(job.tasks))
        if not (quota or nodes) or any(t.resreq != first.resreq for t in tasks):
            return False
        need = min(ssn.ready_need(job), len(tasks))
        if not need or (quota and not nodes and k >= need):
            return False
        need = min(need, ssn.pipeline_need(job))
        if not k:  # the queue refuses the first task, and so every task; nothing is placed
            if not need:
                return False
            reasons.record_queue_bound(ssn, queue, job, first)
            return True
        if any(placement_sensitive(t) for t in tasks):
            return False
        key = ssn.predicate_key(first)
        if key is None:
            return False
        pred = self.predicates.get(first)  # (every task of its key gets the same result)
        mask = pred.mask
        room = ssn.table.future_idle()
        copies = room_copies(room[mask], first.vec)
        c = int(copies.sum())
        # (equal shapes filter the same nodes, with the same key: a gang's tasks mostly share the first's shape)
        shape = first.shape
        if min(k, c) >= need or any((not shape or t.shape != shape) and ssn.predicate_key(t) != key for t in tasks):
            return False
        if k <= c:
            if not quota:
                return False
            reasons.record_queue_bound(ssn, queue, job, tasks[k])
            return True
        if not nodes:
            return False
        homeless = tasks[c]
        room[mask] -= copies[:, None] * first.vec  # every node the tasks pass holds its copies
        job.fit_errors[homeless.uid] = reasons.node_fit_summary(ssn, homeless, self.predicates.rows, pred, room)
        return True


@action("allocate")
def allocate(ssn: Session, arguments: dict) -> None:
    alloc = Allocator(ssn, dict(arguments or {}))
    try:
        alloc.run()
    finally:
        alloc.shared.clear()  # groups point back at the allocator: freed now, not by the cycle collector
