"""One scheduling session: the snapshot, the plugins' extension functions, and the voting between them.

Plugins register functions per extension point at open (`add_*`); actions ask the session, which combines
the plugins' answers tier by tier exactly as Volcano does (reference §3), honouring each plugin's enable
flags from the config. Placement changes (allocate, pipeline, evict) update the session at once and notify
the plugins' event handlers; a Statement records them so they can be committed or discarded.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from magma.api.resources import Resources

from . import fastpath
from .kept import Memo, Tokens
from .info import PREEMPTABLE, JobInfo, NodeInfo, QueueInfo, TaskInfo, TaskStatus
from .snapshot import Snapshot

S = TaskStatus

# Vote values for JobPipelined / JobEnqueueable, as Volcano's util.Permit / Abstain / Reject.
PERMIT, ABSTAIN, REJECT = 1, 0, -1

# Extension point -> the config flag that switches a plugin's function off for it.
FLAGS = {
    "job_order": "enableJobOrder",
    "queue_order": "enableQueueOrder",
    "task_order": "enableTaskOrder",
    "predicate": "enablePredicate",
    "node_order": "enableNodeOrder",
    "preemptable": "enablePreemptable",
    "reclaimable": "enableReclaimable",
    "preemptive": "enablePreemptive",
    "overused": "enabledOverused",
    "allocatable": "enabledAllocatable",
    "job_ready": "enableJobReady",
    "job_pipelined": "enableJobPipelined",
    "job_enqueueable": "enableJobEnqueued",
    "job_enqueued": "enableJobEnqueued",
    "job_starving": "enableJobStarving",
    "job_valid": None,  # Volcano consults every plugin
    "victim_tasks": "enabledVictim",
}


@dataclass
class ValidateResult:
    passed: bool
    reason: str = ""
    message: str = ""


@dataclass
class EventHandler:
    allocate: Callable[[TaskInfo], None] | None = None
    deallocate: Callable[[TaskInfo], None] | None = None


@dataclass
class PredicateResult:
    """Which candidate nodes pass, and for the others the first reason that failed them."""

    mask: np.ndarray  # over the candidate rows given
    reasons: list[tuple[str, np.ndarray]] = field(default_factory=list)  # (reason, failing mask) in order


def _combined(results: list[PredicateResult], n: int) -> PredicateResult:
    """The predicates' results over the same rows as one: a node fails on the first predicate it fails."""
    ok = np.ones(n, dtype=bool)
    reasons: list[tuple[str, np.ndarray]] = []
    for r in results:
        for reason, failing in r.reasons:
            newly = failing & ok
            if newly.any():
                reasons.append((reason, newly))
        ok &= r.mask
    return PredicateResult(ok, reasons)


def read_only(r: PredicateResult, freeze: bool = False) -> bool:
    """Whether the result's arrays are read-only (with `freeze`, made so first)."""
    arrays = [r.mask, *(failing for _, failing in r.reasons)]
    if freeze:
        for a in arrays:
            a.flags.writeable = False
    return all(isinstance(a, np.ndarray) and not a.flags.writeable for a in arrays)


_MISSING = object()

# Combined predicate results by the plugins' own (fastpath.predicate_sums_kept): a plugin returning the same read-only
# result again (predicates keeps its verdicts over all rows) gives the same combination.
_COMBINED = Memo(1024)



def _job_bounds(tiers: list[list[Callable]], actor: TaskInfo, jobs: list[JobInfo]) -> list[tuple[bool, bool]]:
    """`Session.victim_job_bounds` from the bounds per tier: each job's pair is the OR over the tiers of the AND of
    the tier's bounds (the loop stops once every pair is (True, True): later tiers could add nothing)."""
    out: list[tuple[bool, bool]] | None = None
    for bounds in tiers:
        if len(bounds) == 1:
            pairs = list(bounds[0](actor, jobs))  # (one bound: the tier's own pairs)
        else:
            pairs = [(True, True)] * len(jobs)
            for bound in bounds:
                pairs = [(s and bs, e and be) for (s, e), (bs, be) in zip(pairs, bound(actor, jobs))]
        out = pairs if out is None else [(s or ts, e or te) for (s, e), (ts, te) in zip(out, pairs)]
        if all(s and e for s, e in out):
            break
    return out if out is not None else [(False, False)] * len(jobs)


# The job-bounds keys of `Session.victim_job_bounds` as small ints, and where a job's memo keeps its pairs by them.
_BOUNDS_TOKENS = Tokens(1024)
_KEPT_BOUNDS = "session.victim_job_bounds"
_BOUNDS_PER_JOB = 64


def _placements_needed(fns, job: JobInfo) -> int:
    """The most placements any of the vote functions `fns` says `job` still needs (`placements_needed`); 0: none says."""
    need = 0
    for fn in fns:
        bound = getattr(fn, "placements_needed", None)
        if bound is not None:
            need = max(need, bound(job))
    return need

class Session:
    def __init__(self, snapshot: Snapshot, config: Any, plugin_options: Sequence[Sequence[Any]], cluster: Any = None):
        self.snapshot = snapshot
        self.cluster = cluster  # the cluster interface; None when only decisions are wanted (tests)
        self.binds: list[tuple[str, str]] = []  # (pod key, node) committed this session
        self.evictions: list[tuple[str, str]] = []  # (pod key, reason) committed this session
        self.evicted_uids: dict[str, str] = {}  # pod uid -> reason, for traces that outlive pod names
        self.jobs: dict[str, JobInfo] = snapshot.jobs
        self.queues: dict[str, QueueInfo] = snapshot.queues
        self.nodes: dict[str, NodeInfo] = snapshot.nodes
        self.node_list: list[NodeInfo] = (snapshot.node_list if snapshot.node_list is not None
                                          else sorted(snapshot.nodes.values(), key=lambda n: n.index))
        # Persistent snapshot (cache.py): what this session changed on tasks and nodes, as it was before, so
        # that the scheduler can put it back before the next session.
        self.touched_tasks: dict[TaskInfo, tuple] | None = {} if snapshot.persistent else None
        self.touched_nodes: dict[NodeInfo, dict[str, TaskInfo]] = {}
        self.table = snapshot.table
        self.total: Resources = snapshot.total
        self.now = snapshot.now
        self.config = config
        self.tiers = plugin_options  # the tiers, each a sequence of plugin options (name, enabled(flag), arguments)
        self.plugins: dict[str, Any] = {}
        self._fns: dict[str, dict[str, Callable]] = {k: {} for k in FLAGS}
        self._fns["node_order_batch"] = {}
        self.event_handlers: list[EventHandler] = []
        # Functions giving annotations to write on a pod as it is bound (the device table's GPU ids), as
        # Volcano's device sharing patches a pod before binding it.
        self.bind_annotators: list[Callable[[TaskInfo], dict[str, str]]] = []
        self.events: list[tuple[str, str, str, str, str]] = []  # (type, reason, kind, key, message)
        self.once_events: set[int] = set()  # positions in `events` of those recorded with once=True
        self._tasks_by_uid: dict[str, TaskInfo] | None = None
        # The jobs a step must visit and per-queue sums kept across sessions (jobindex.py; set by the scheduler).
        self.job_index: Any = None
        # Per extension point, the enabled (plugin, function) lists per tier: asked millions of times in a big
        # session, built once after the plugins registered (add_fn drops the point's entry).
        self._enabled_cache: dict[str, list[list[tuple[str, Callable]]]] = {}
        # Per plugin flag, per tier the names of the plugins it enables (None: all of them), and the facts of
        # `config_fact`; the scheduler gives the sessions of one configuration the same dict (fastpath.plugin_flags_kept).
        self.flag_names: dict[Any, Any] = {}
        self.placement_events = 0  # allocate and deallocate events so far (queue_order_cmp_memo)

    def release(self) -> None:
        """Let go of everything but what the scheduler's cache puts back before the next session (`touched_*`).

        Plugins hold the session and the session holds their functions and handlers: without this, every session
        would be a cycle of thousands of objects, which only the cycle collector's full passes free (over the
        whole heap). Released, it is freed as soon as the last reference goes; a simulator runs ~50,000 of them."""
        for p in self.plugins.values():
            vars(p).clear()
        keep = {k: v for k, v in vars(self).items() if k in ("touched_tasks", "touched_nodes")}
        vars(self).clear()
        vars(self).update(keep)

    @property
    def tasks_by_uid(self) -> dict[str, TaskInfo]:
        """Every task of the session's jobs by uid (built on first use: most sessions never ask)."""
        if self._tasks_by_uid is None:
            self._tasks_by_uid = {t.uid: t for j in self.jobs.values() for t in j.tasks.values()}
        return self._tasks_by_uid

    # ---------------------------------------------------------------- registration
    def add_fn(self, point: str, plugin: str, fn: Callable) -> None:
        self._fns[point][plugin] = fn
        # Everything kept there is derived from the registered functions: a function added after the plugins' opens
        # (rare) drops it all, rather than each entry its own point.
        self._enabled_cache.clear()

    def add_fns(self, plugin: str, fns: dict[str, Callable]) -> None:
        """`add_fn` for each (point, function) of `fns`, in one call (plugins register several at every open)."""
        by_point = self._fns
        for point, fn in fns.items():
            by_point[point][plugin] = fn
        self._enabled_cache.clear()

    def add_event_handler(self, handler: EventHandler) -> None:
        self.event_handlers.append(handler)

    def _enabled(self, point: str) -> list[list[tuple[str, Callable]]]:
        """(plugin name, function) per tier, for plugins enabled at this extension point."""
        got = self._enabled_cache.get(point)
        if got is None:
            flag = FLAGS.get(point)
            fns = self._fns[point]
            names = self.flag_names.get(flag)
            if names is None:
                names = self.flag_names[flag] = [
                    [opt.name for opt in tier if flag is None or opt.enabled(flag)] for tier in self.tiers]
            got = self._enabled_cache[point] = [[(name, fns[name]) for name in tier if name in fns] for tier in names]
        return got

    def config_fact(self, name: str, read: Callable[["Session"], Any]) -> Any:
        """`read(self)` for a fact read from the plugin options of the tiers alone (names, flags, arguments), kept
        with `flag_names`: once per scheduler configuration with fastpath.plugin_flags_kept."""
        key = ("fact", name)  # (flags are strings or None)
        got = self.flag_names.get(key, _MISSING)
        if got is _MISSING:
            got = self.flag_names[key] = read(self)
        return got

    def _enabled_fns(self, point: str) -> list[Callable]:
        """The functions of `_enabled(point)`, tier after tier, as one list (votes asked at every placement)."""
        got = self._enabled_cache.get((point, "flat"))
        if got is None:
            got = self._enabled_cache[(point, "flat")] = [fn for tier in self._enabled(point) for _, fn in tier]
        return got

    # ---------------------------------------------------------------- ordering
    def _compare(self, point: str, left, right) -> int:
        for tier in self._enabled(point):
            for _, fn in tier:
                c = fn(left, right)
                if c:
                    return c
        return 0

    def job_order_cmp(self, a: JobInfo, b: JobInfo) -> int:
        c = self._compare("job_order", a, b)
        if c:
            return c
        return (a.creation > b.creation) - (a.creation < b.creation) or (a.uid > b.uid) - (a.uid < b.uid)

    def job_order_key(self):
        """A sort key giving exactly JobOrder's order (`job_order_cmp`) when every enabled job-order function says
        which key it compares (fn(a, b) orders as key(a) < key(b): an attribute `key` on the function, or a method
        `job_order_key(job)` on its plugin), and fastpath.job_order_key is on; None otherwise.

        A key is taken when a job is pushed on an OrderedHeap, where the comparison function would be asked at
        every comparison: the two agree while the jobs in the heap keep their figures, which holds in enqueue,
        allocate and backfill (a job's JobOrder figures - priority, gang readiness, drf share - change only with
        its own tasks, placed while it is popped)."""
        if not fastpath.job_order_key:
            return None
        got = self._enabled_cache.get("job_order_key")
        if got is None:
            keys = [getattr(fn, "key", None) or getattr(getattr(fn, "__self__", None), "job_order_key", None)
                    for tier in self._enabled("job_order") for _, fn in tier]
            if any(k is None for k in keys):
                got = (None,)
            elif len(keys) == 3:  # (the seed configuration's priority, gang and drf, without a loop per job)
                k1, k2, k3 = keys
                got = (lambda j: (k1(j), k2(j), k3(j), j.creation, j.uid),)
            else:
                def key(j: JobInfo, keys=tuple(keys)) -> tuple:
                    return (*(k(j) for k in keys), j.creation, j.uid)
                got = (key,)
            self._enabled_cache["job_order_key"] = got
        return got[0]

    def queue_order_cmp(self, a: QueueInfo, b: QueueInfo) -> int:
        c = self._compare("queue_order", a, b)
        if c:
            return c
        return (a.creation > b.creation) - (a.creation < b.creation) or (a.uid > b.uid) - (a.uid < b.uid)

    def queue_order_cmp_memo(self) -> Callable[[QueueInfo, QueueInfo], int]:
        """`queue_order_cmp` with each pair's answer kept until the next allocate or deallocate event, for one
        action's queue heap (fastpath.queue_order_memo): when every enabled queue-order function's plugin says
        that its order reads only figures that change with those events (`queue_order_follows_placements`:
        allocations and shares), an action that places nothing (enqueue, backfill's ordering) compares each pair
        of queues once instead of at every push and pop."""
        if not fastpath.queue_order_memo:
            return self.queue_order_cmp
        follows = self._enabled_cache.get("queue_order_follows")
        if follows is None:  # (asked again only when a queue-order function is added: `add_fn`)
            follows = self._enabled_cache["queue_order_follows"] = all(
                getattr(getattr(fn, "__self__", None), "queue_order_follows_placements", False)
                for tier in self._enabled("queue_order") for _, fn in tier)
        if not follows:
            return self.queue_order_cmp
        memo: dict[tuple[str, str], int] = {}
        seen = [self.placement_events]

        def cmp(a: QueueInfo, b: QueueInfo) -> int:
            if seen[0] != self.placement_events:
                memo.clear()
                seen[0] = self.placement_events
            key = (a.name, b.name)
            c = memo.get(key)
            if c is None:
                c = memo[key] = self.queue_order_cmp(a, b)
            return c

        return cmp

    def task_order_cmp(self, a: TaskInfo, b: TaskInfo) -> int:
        c = self._compare("task_order", a, b)
        if c:
            return c
        return ((a.index > b.index) - (a.index < b.index) or (a.creation > b.creation) - (a.creation < b.creation)
                or (a.uid > b.uid) - (a.uid < b.uid))

    def sorted_jobs(self, jobs) -> list[JobInfo]:
        return sorted(jobs, key=functools.cmp_to_key(self.job_order_cmp))

    def sorted_queues(self, queues) -> list[QueueInfo]:
        return sorted(queues, key=functools.cmp_to_key(self.queue_order_cmp))

    def sorted_tasks(self, tasks) -> list[TaskInfo]:
        key = self._task_order_key()
        if key is not None:
            return sorted(tasks, key=key)
        return sorted(tasks, key=functools.cmp_to_key(self.task_order_cmp))

    def _task_order_key(self):
        """A sort key giving exactly TaskOrder's order, when every enabled task-order function says which key it
        compares (an attribute `key` on the function: fn(a, b) orders as key(a) < key(b)); None otherwise."""
        got = self._enabled_cache.get("task_order_key")
        if got is None:
            keys = [getattr(fn, "key", None) for tier in self._enabled("task_order") for _, fn in tier]
            if any(k is None for k in keys):
                got = (None,)
            else:
                def key(t: TaskInfo, keys=tuple(keys)) -> tuple:
                    return (*(k(t) for k in keys), t.index, t.creation, t.uid)
                got = (key,)
            self._enabled_cache["task_order_key"] = got
        return got[0]

    # ---------------------------------------------------------------- boolean votes
    def job_valid(self, job: JobInfo) -> ValidateResult:
        for tier in self._enabled("job_valid"):
            for _, fn in tier:
                r = fn(job)
                if r is not None and not r.passed:
                    return r
        return ValidateResult(True)

    def job_ready(self, job: JobInfo) -> bool:
        for fn in self._enabled_fns("job_ready"):
            if not fn(job):
                return False
        return True

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        for fn in self._enabled_fns("allocatable"):
            if not fn(queue, task):
                return False
        return True

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(fn(queue, task) for tier in self._enabled("preemptive") for _, fn in tier)

    def overused(self, queue: QueueInfo) -> bool:
        return any(fn(queue) for tier in self._enabled("overused") for _, fn in tier)

    def permit_vote(self, point: str, job: JobInfo, skip: frozenset[str] = frozenset()) -> bool:
        """Volcano's permit vote over the tiers: any reject refuses, the first tier with a permit accepts, and
        abstentions all the way accept. Plugins named in `skip` do not vote."""
        for tier in self._enabled(point):
            permitted = False
            for name, fn in tier:
                if skip and name in skip:
                    continue
                v = fn(job)
                if v < 0:
                    return False
                if v > 0:
                    permitted = True
            if permitted:
                return True
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return self.permit_vote("job_pipelined", job)

    def pipeline_need(self, job: JobInfo) -> int:
        """The fewest more placements (allocated or pipelined tasks) before JobPipelined can hold for `job`.

        A vote function says so with an attribute `placements_needed(job)`, promising to refuse until the job has
        that many more placed tasks. Only the first tier with functions surely votes (a permit there ends the
        vote), and in it every function is asked unless one refuses: so the bounds of that tier count, and of
        no later one. 0 when none says. A lower bound, for pruning (preempt's `Evictor.cannot_pipeline`, allocate's
        `_stops_short`)."""
        for tier in self._enabled("job_pipelined"):
            if tier:
                return _placements_needed((fn for _, fn in tier), job)
        return 0

    def ready_need(self, job: JobInfo) -> int:
        """The fewest more placements before JobReady can hold for `job` (every function must say yes): the most any
        function promises with an attribute `placements_needed(job)`; 0 when none says."""
        return _placements_needed(self._enabled_fns("job_ready"), job)

    def allocatable_left(self, queue: QueueInfo, task: TaskInfo, exact: bool = False) -> int | None:
        """How many more tasks with `task`'s request Allocatable allows in `queue` while allocations only grow.

        A plugin says so with a method `placements_left(queue, task, own_level_only)` (None: no bound). Allocatable
        needs every function, so the least answer holds. By default an upper bound that counts the queue's own level
        only (taking from other queues may lower its ancestors': preempt's `Evictor.cannot_pipeline`); `exact`: the
        number itself, over the whole path, or None unless every function says (allocate's `_stops_short`)."""
        least = None
        for fn in self._enabled_fns("allocatable"):
            left_of = getattr(getattr(fn, "__self__", None), "placements_left", None)
            left = left_of(queue, task, not exact) if left_of is not None else None
            if left is None:
                if exact:
                    return None
                continue
            if least is None or left < least:
                least = left
        return least

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self.permit_vote("job_enqueueable", job)

    def job_enqueued(self, job: JobInfo) -> None:
        for tier in self._enabled("job_enqueued"):
            for _, fn in tier:
                fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        """AND over the first tier that has any starving function (Volcano's rule)."""
        for tier in self._enabled("job_starving"):
            if tier:
                return all(fn(job) for _, fn in tier)
        return False

    def job_starving_any(self, job: JobInfo) -> bool:
        """OR over the same tier: magma's preempt and reclaim use this (Volcano #3787, see preempt.py)."""
        for tier in self._enabled("job_starving"):
            if tier:
                return any(fn(job) for _, fn in tier)
        return False

    # ---------------------------------------------------------------- victims
    def _victims(self, point: str, actor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        for tier in self._enabled(point):
            victims: list[TaskInfo] | None = None
            for _, fn in tier:
                chosen, abstain = fn(actor, candidates)
                if abstain:
                    continue
                if not chosen:
                    victims = None
                    break
                if victims is None:
                    victims = list(chosen)
                else:
                    keep = {t.uid for t in chosen}
                    victims = [t for t in victims if t.uid in keep]
            if victims is not None:
                return victims
        return []

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims("preemptable", preemptor, candidates)

    def victim_job_bounds(self, point: str, actor: TaskInfo, jobs: list[JobInfo]) -> list[tuple[bool, bool]]:
        """What the `point` vote ("preemptable", "reclaimable") may give of each of `jobs` to `actor`, whatever the
        candidate list: per job (may it give some task of the job, may it give every Bound and Running task of the
        job when they are all offered).

        A vote function says so with an attribute `job_bounds(actor, jobs)` giving those pairs for itself, where
        False promises that the function does not abstain and does not give that; a function without one may give
        anything. The pairs must be functions of the actor's job and request (and the session), not of the actor's
        other fields: callers keep them for actors of one job with equal requests. A task is given only by the
        deciding tier (the first whose non-abstaining functions all give something), and there only when every such
        function gives it: so only by a tier none of whose bounds refuses it. An upper bound, for pruning (preempt's
        `_workable`). `jobs` are jobs of the session (with fastpath.job_bounds_kept their pairs are kept with them)."""
        key = self._job_bounds_key(point, actor) if fastpath.job_bounds_kept else None
        if key is None:
            return _job_bounds(self._bounds_tiers(point), actor, jobs)
        # Each job's pair is its own (the tiers combine per job): kept with the job's counts under the key, at most
        # _BOUNDS_PER_JOB keys per job (the key follows other jobs, so a long-running job would otherwise gather them).
        out: list = []
        for job in jobs:
            kept = job.stats().memo.get(_KEPT_BOUNDS)
            out.append(kept.get(key) if kept is not None else None)
        if None in out:
            at = [i for i, pair in enumerate(out) if pair is None]
            for i, pair in zip(at, _job_bounds(self._bounds_tiers(point), actor, [jobs[i] for i in at])):
                memo = jobs[i].stats().memo
                kept = memo.get(_KEPT_BOUNDS)
                if kept is None or len(kept) >= _BOUNDS_PER_JOB:
                    kept = memo[_KEPT_BOUNDS] = {}
                out[i] = kept[key] = pair
        return out

    def _bounds_tiers(self, point: str) -> list[list[Callable]]:
        """Per tier with functions (a tier without any never decides), the job bounds of those that have one."""
        return self._bounds_setup(point)[0]

    def _bounds_setup(self, point: str) -> tuple[list[list[Callable]], list[Callable | None], int]:
        """For the `point` vote, made once per session: `_bounds_tiers`; the `job_bounds_key` function of each bound
        (None: it has none); and the tiers' layout (per tier, each function's plugin and whether it has a bound),
        which decides how the bounds combine (`_job_bounds`)."""
        got = self._enabled_cache.get((point, "job_bounds"))
        if got is None:
            tiers: list[list[Callable]] = []
            keys: list[Callable | None] = []
            layout = []
            for tier in self._enabled(point):
                if not tier:
                    continue
                bounds = [(getattr(fn, "job_bounds", None), fn) for _, fn in tier]
                tiers.append([b for b, _ in bounds if b is not None])
                keys.extend(getattr(fn, "job_bounds_key", None) for b, fn in bounds if b is not None)
                layout.append(tuple((name, b is not None) for (name, _), (b, _) in zip(tier, bounds)))
            # (the layout as a token: hashed once per session, not at every key)
            got = self._enabled_cache[(point, "job_bounds")] = (tiers, keys, _BOUNDS_TOKENS.of((point, tuple(layout))))
        return got

    def _job_bounds_key(self, point: str, actor: TaskInfo) -> int | None:
        """What the `point` vote's job bounds read besides each job's tasks and fixed fields, as a token: the tiers'
        layout and each bound's own key (an attribute `job_bounds_key(actor)` on its vote function); None when a
        bound has none or gives None for this actor."""
        _, fns, layout = self._bounds_setup(point)
        keys = [layout]
        for fn in fns:
            key = fn(actor) if fn is not None else None
            if key is None:
                return None
            keys.append(key)
        return _BOUNDS_TOKENS.of(tuple(keys))  # (hashed once here, not at each job's lookup)

    _victim_orders: dict[str, tuple[Any, list[TaskInfo]]] | None = None

    def victim_order(self, job: JobInfo) -> list[TaskInfo]:
        """The job's Bound and Running tasks in reverse TaskOrder (the order victims are taken in); callers must not
        change the list. With fastpath.preempt_caches and a TaskOrder given by sort keys (functions of the tasks
        alone), kept until a task of the job changes status (its `stats().memo` is renewed then)."""
        if not fastpath.preempt_caches or self._task_order_key() is None:
            return self.sorted_tasks([t for t in job.tasks.values() if t.status in PREEMPTABLE])[::-1]
        if self._victim_orders is None:
            self._victim_orders = {}
        memo = job.stats().memo
        got = self._victim_orders.get(job.uid)
        if got is None or got[0] is not memo:
            tasks = self.sorted_tasks([t for t in job.tasks.values() if t.status in PREEMPTABLE])[::-1]
            got = self._victim_orders[job.uid] = (memo, tasks)
        return got[1]

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims("reclaimable", reclaimer, candidates)

    # ---------------------------------------------------------------- nodes
    def predicate(self, task: TaskInfo, rows: np.ndarray) -> PredicateResult:
        """Run every enabled predicate over candidate rows; a node fails on the first predicate it fails."""
        results = [fn(task, rows) for fn in self._enabled_fns("predicate")]
        if not fastpath.predicate_sums_kept:
            return _combined(results, len(rows))
        key = (len(rows), *map(id, results))
        got = _COMBINED.get(key)
        if got is not None and all(map(operator.is_, got[0], results)):
            return got[1]
        combined = _combined(results, len(rows))
        if all(read_only(r) for r in results):  # results that cannot change give the same combination again
            read_only(combined, freeze=True)
            _COMBINED.keep(key, (results, combined))  # (holding the results keeps their ids theirs)
        return combined

    def node_scores(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """Sum of every enabled plugin's score for the candidate rows."""
        total = np.zeros(len(rows), dtype=np.float64)
        for fn in self.node_order_fns():
            total += fn(task, rows)
        return total

    def node_order_fns(self) -> list[Callable]:
        """The enabled score functions in the order node_scores adds them (per-task ones, then batch ones)."""
        got = self._enabled_cache.get("node_scores")
        if got is None:  # (kept until a score function is added: `add_fn`; callers only read it)
            got = [fn for point in ("node_order", "node_order_batch") for tier in self.tiers for opt in tier
                   if (fn := self._fns[point].get(opt.name)) is not None and opt.enabled(FLAGS["node_order"])]
            self._enabled_cache["node_scores"] = got
        return got

    def predicate_key(self, task: TaskInfo) -> tuple | None:
        """What the enabled predicates read from `task` when they judge every node by that node alone (labels,
        taints, resources), independently of the pod's labels and of placed pods; None otherwise. A predicate
        plugin says so with a method `predicate_key(task)` (None: not for this task). Tasks with equal keys pass
        the same nodes, the others failing for the same reasons: equal results. A key must be a function of the
        task's shape (`TaskInfo.shape`) when it has one: allocate asks it once for tasks of one shape."""
        keys = []
        for predicate_key in self._key_methods("predicate_key", self._enabled_fns("predicate")):
            key = predicate_key(task) if predicate_key is not None else None
            if key is None:
                return None
            keys.append(key)
        return tuple(keys)

    def _key_methods(self, name: str, fns: list[Callable]) -> list[Callable | None]:
        """Per function of `fns` (asked again only when they change: `add_fn`), its plugin's method `name` or None."""
        got = self._enabled_cache.get(name)
        if got is None:
            got = self._enabled_cache[name] = [getattr(getattr(fn, "__self__", None), name, None) for fn in fns]
        return got

    def node_scores_key(self, task: TaskInfo) -> tuple | None:
        """What the enabled score functions read from `task`, when each scores every node from that node's own
        state (its resources and labels), independently of which other nodes are scored with it; None otherwise.

        A score plugin says so with a method `score_key(task)` returning a hashable key (None: not for this task);
        the score must then be a function of that key and of the node's `node_state` (its NodeTable row and the
        plugin's own `row_state(rows)`, if it keeps any). Two tasks with equal keys, shapes and requests get equal
        scores on nodes in equal state, so an action may keep scores across jobs, re-score only the nodes whose
        state changed, and score each distinct node state once (allocate's shared groups)."""
        keys = []
        for score_key in self._key_methods("score_key", self.node_order_fns()):
            key = score_key(task) if score_key is not None else None
            if key is None:
                return None
            keys.append(key)
        return tuple(keys)

    def node_state(self, rows: np.ndarray) -> np.ndarray:
        """Per row, everything a score with a `node_scores_key` reads from the node: its NodeTable row (allocatable,
        used, idle, releasing, pipelined) and what each score plugin keeps per node besides (`row_state(rows)`,
        e.g. nodeorder's requested resources). Equal rows here give equal scores for tasks of equal keys. `rows` is
        an index array. For one row, `node_state_key` asks a plugin's `row_state_key(row)` (the same row as bytes) or gives
        `row_state` a slice of that row."""
        t = self.table
        parts = [t.alloc[rows], t.used[rows], t.idle[rows], t.releasing[rows], t.pipelined[rows]]
        for fn in self.node_order_fns():
            row_state = getattr(getattr(fn, "__self__", None), "row_state", None)
            if row_state is not None:
                parts.append(np.asarray(row_state(rows), dtype=np.int64).reshape(len(rows), -1))
        return np.concatenate(parts, axis=1)

    def node_state_key(self, row: int) -> bytes:
        """`node_state` of one row as bytes (`node_state(rows)[i].tobytes()` for that row), by plain row views: a
        placement changes one row, and allocate's groups key their scores by it."""
        t = self.table
        parts = [t.alloc[row].tobytes(), t.used[row].tobytes(), t.idle[row].tobytes(), t.releasing[row].tobytes(),
                 t.pipelined[row].tobytes()]
        got = self._enabled_cache.get("row_state")
        if got is None:
            # per score plugin keeping a row state: its bytes for one row (`row_state_key(row)`, when it has one)
            got = self._enabled_cache["row_state"] = [
                getattr(owner, "row_state_key", None)
                or (lambda row, rs=rs: np.asarray(rs(slice(row, row + 1)), dtype=np.int64).tobytes())
                for fn in self.node_order_fns()
                if (rs := getattr(owner := getattr(fn, "__self__", None), "row_state", None)) is not None]
        for row_state_key in got:
            parts.append(row_state_key(row))
        return b"".join(parts)

    # ---------------------------------------------------------------- placement (changes session state now)
    def _on_allocate(self, task: TaskInfo) -> None:
        self.placement_events += 1
        for h in self.event_handlers:
            if h.allocate:
                h.allocate(task)

    def _on_deallocate(self, task: TaskInfo) -> None:
        self.placement_events += 1
        for h in self.event_handlers:
            if h.deallocate:
                h.deallocate(task)

    def _touch(self, task: TaskInfo, node: NodeInfo | None = None) -> None:
        """Note a task (and the node whose task dict changes) before changing it, on a persistent snapshot."""
        touched = self.touched_tasks
        if touched is None:
            return
        if task not in touched:
            touched[task] = (task.status, task.node, task.nominated_node)
        if node is not None and node not in self.touched_nodes:
            self.touched_nodes[node] = dict(node.tasks)

    def _place(self, task: TaskInfo, node: NodeInfo, status: TaskStatus) -> None:
        touched = self.touched_tasks
        if touched is not None:  # self._touch(task, node), inline: once per placement
            if task not in touched:
                touched[task] = (task.status, task.node, task.nominated_node)
            if node not in self.touched_nodes:
                self.touched_nodes[node] = dict(node.tasks)
        task.status = status
        task.node = node.name
        node.tasks[task.uid] = task
        self.table.add_task(node.index, task)
        self._on_allocate(task)

    def _unplace(self, task: TaskInfo) -> None:
        node = self.nodes[task.node]
        self._touch(task, node)
        self.table.remove_task(node.index, task)
        node.tasks.pop(task.uid, None)

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        self._place(task, node, S.ALLOCATED)

    def pipeline(self, task: TaskInfo, node: NodeInfo) -> None:
        self._place(task, node, S.PIPELINED)
        task.nominated_node = node.name  # noted by _place

    def evict(self, task: TaskInfo) -> None:
        """Mark a running task Releasing: it still holds the node until deleted, but its job loses it."""
        node = self.nodes[task.node]
        self._touch(task)
        self.table.remove_task(node.index, task)
        task.status = S.RELEASING
        self.table.add_task(node.index, task)
        self._on_deallocate(task)

    # undo operations, used by Statement.discard
    def unallocate(self, task: TaskInfo) -> None:
        self._unplace(task)  # notes the task
        task.status = S.PENDING
        task.node = None
        task.nominated_node = None
        self._on_deallocate(task)

    def unevict(self, task: TaskInfo, previous: TaskStatus) -> None:
        node = self.nodes[task.node]
        self._touch(task)
        self.table.remove_task(node.index, task)
        task.status = previous
        self.table.add_task(node.index, task)
        self._on_allocate(task)

    # ---------------------------------------------------------------- commit (called by Statement.commit)
    def commit_bind(self, task: TaskInfo) -> None:
        """Bind in the cluster. A refused bind puts the task back to Pending, so nothing is ever double-bound."""
        key = task.key
        if self.cluster is not None:
            annotations: dict[str, str] = {}
            for fn in self.bind_annotators:
                annotations.update(fn(task))
            try:
                if annotations:
                    self.cluster.bind(key, task.node, annotations=annotations)
                else:
                    self.cluster.bind(key, task.node)
            except Exception as e:  # the cluster said no: resync next session
                node = task.node
                self.unallocate(task)
                self.record_event("Warning", "FailedScheduling", "Pod", task.key, f"bind to {node} failed: {e}")
                return
        self._touch(task)
        if task.status in (S.RELEASING, S.PIPELINED):
            self.table.remove_task(self.nodes[task.node].index, task)
            task.status = S.BINDING
            self.table.add_task(self.nodes[task.node].index, task)
        else:
            task.status = S.BINDING  # Allocated and Binding hold a node alike: the table stays as it is
        self.binds.append((key, task.node))

    def commit_evict(self, task: TaskInfo, reason: str) -> None:
        if self.cluster is not None:
            try:
                self.cluster.evict(task.key, reason)
            except Exception as e:
                self.record_event("Warning", "FailedEviction", "Pod", task.key, str(e))
                return
        self.evictions.append((task.key, reason))
        self.evicted_uids[task.uid] = reason
        job = self.job_of(task)
        if job is not None:
            self.record_event("Normal", "Evict", "PodGroup", job.key,
                              f"Pod {task.key} evicted by {reason}")

    # ---------------------------------------------------------------- helpers for actions and plugins
    def job_of(self, task: TaskInfo) -> JobInfo | None:
        return self.jobs.get(task.job)

    def queue_of(self, job: JobInfo) -> QueueInfo:
        return self.queues[job.queue]

    def record_event(self, type: str, reason: str, kind: str, key: str, message: str, once: bool = False) -> None:
        """Record an event, written to the cluster at close. `once`: the event reports a change of a PodGroup
        condition this session writes, and is recorded only when the written condition differs (gang's
        Unschedulable): a session run again on what this one wrote would not record it (fastpath.skip_inert_writes)."""
        if once:
            self.once_events.add(len(self.events))
        self.events.append((type, reason, kind, key, message))

    def repeat_events(self) -> list[tuple[str, str, str, str, str]]:
        """The events the same session would record again, run on what this one wrote (all but the `once` ones)."""
        once = self.once_events
        return [ev for i, ev in enumerate(self.events) if i not in once] if once else list(self.events)

    def queue_allocated(self, queue: str) -> Resources:
        total = Resources()
        for j in self.jobs.values():
            if j.queue == queue:
                total = total + j.allocated()
        return total

    def queue_allocations(self) -> dict[str, Resources]:
        """`queue_allocated` of every queue of the session, in one pass over the jobs."""
        by_queue: dict[str, list[Resources]] = {q: [] for q in self.queues}
        for j in self.jobs.values():
            got = by_queue.get(j.queue)
            if got is not None:
                got.append(j.allocated())
        return {q: Resources.sum(allocs) for q, allocs in by_queue.items()}
