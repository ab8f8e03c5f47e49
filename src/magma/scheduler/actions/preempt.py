"""preempt: make room for starving jobs by evicting other work, gang-aware (reference §5, with magma's fixes).

Volcano's preempt, as magma keeps it:
- Preemptors are jobs that are not Pending, pass JobValid and are starving; they are visited queue by queue
  (QueueOrder), job by job (JobOrder), task by task (TaskOrder), while the job stays starving. Each preemptor
  task looks for a node where evicting victims makes its request fit FutureIdle; the victims are Bound or Running,
  `volcano.sh/preemptable` tasks of *other jobs of the same queue* that the plugins' Preemptable vote allows
  (a BestEffort preemptor only takes BestEffort victims). The task is pipelined onto that node (status
  Pipelined, nominated node); the job's statement is committed (evictions happen, with reason "preempt") only if
  JobPipelined holds, otherwise discarded. Phase 2: within each starving job, pending tasks may evict the job's own
  lower-priority tasks, on nodes holding such a task only (each placement committed alone: free room elsewhere
  would pipeline part of a gang that phase 1 could not place). `preemptionPolicy: Never` preemptors never evict.

magma's deliberate differences ("preemption that happens when users expect it", docs/volcano-differences.md):
1. Starving (Volcano #3787): Volcano ANDs the starving votes of the first tier (priority's "fewer ready than
   tasks" and gang's "fewer ready than minAvailable"), so a job whose gang already runs never preempts for its
   other pods. magma's preempt and reclaim take a job as starving when *any* plugin of that tier says so
   (`Session.job_starving_any`).
2. The enqueue gate: a Pending job never reaches Volcano's preempt. magma's preempt also considers Pending jobs
   that preemption could serve (`preemption_candidate`: pods exist, its priority is above that of some running
   preemptable work of its queue, or its queue is under its deserved share while another reclaimable queue is
   over its own); when their gang gets pipelined, the action admits them (Inqueue, JobEnqueued).
3. Across queues: Volcano's preempt only looks inside the preemptor's queue (taking back from other queues is
   reclaim's job, often not configured). magma's preempt, when a task finds no room inside its queue and its
   queue is entitled to more (Preemptive: allocated + request <= deserved, with a share plugin publishing
   deserved shares), takes from other queues exactly as reclaim would: Running-or-Bound victims of queues that are
   reclaimable and over their deserved share, as the Reclaimable vote allows.
4. Victims, gang-aware: per candidate node magma compares victim sets instead of evicting lowest-priority tasks
   one by one. A job pushed below its minAvailable is evicted whole (its pods on other nodes are released too,
   reason "preempt"/"reclaim"), and that cost counts: the set chosen has the lowest highest-priority, then the
   fewest jobs, then the fewest pods, per preemptor task that the freed room serves (evicting a 2-pod gang that
   frees two nodes for a 2-pod preemptor is as cheap as one single-pod job per task). Nodes are compared by that
   cost, then by score, then by row (Volcano takes the first workable node in score order). Nodes are visited
   with free room first, then by the lowest priority of a possible victim on them; at most
   `maxCandidateNodesAbsolute` (default 100) workable nodes are compared per task, and the search stops early
   once PATIENCE (16) workable nodes in a row brought nothing cheaper.
5. Belt and braces, checked here whatever the plugins vote: `volcano.sh/preemptable: "false"`
   (TaskInfo.preemptable), system-critical pods (TaskInfo.critical), `preemptionPolicy: Never` on the preemptor,
   `reclaimable: false` queues (and their sub-queues, across queues), jobs placed or pipelined in this session;
   across queues no queue (nor ancestor outside the preemptor's branch) is taken below its guarantee, counting
   the whole-gang releases. Within a queue a job of higher priority than the preemptor's is never a victim
   (Volcano lets a later tier, drf, decide when the priority plugin finds no victim, so a low-priority job could
   evict a high-priority one for fairness).
6. Entitlement across queues is judged along the preemptor's branch below the lowest common ancestor with the
   victim's queue (moving resources between siblings does not change their parent's allocation), from the share
   plugin's published deserved shares; Volcano's Preemptive vote checks the whole chain, so in the seed's
   hierarchy (ai-org full) no team could ever take back from a sibling.
"""

from __future__ import annotations

import itertools
import math
import weakref
from dataclasses import dataclass, field

import numpy as np

from magma.api.resources import PODS, Resources

from ..framework import (
    ALLOCATED,
    PREEMPTABLE,
    JobInfo,
    QueueInfo,
    Session,
    Statement,
    TaskInfo,
    TaskStatus,
    action,
    fastpath,
)
from .. import reasons
from ..framework.jobindex import session_jobs
from ..framework.kept import Memo, PerConfig
from ..framework.nodes import copies_fit
from .allocate import OrderedHeap, PredicateCache, flag, group_key, int_arg, sorted_by_uid

S = TaskStatus
PREEMPT_STATUSES = PREEMPTABLE  # what preempt takes
RECLAIM_STATUSES = frozenset({S.RUNNING})  # Volcano's reclaim takes Running tasks only
WHOLE_STATUSES = PREEMPTABLE  # what evicting a job whole evicts
UNSETTLED = frozenset({S.ALLOCATED, S.PIPELINED, S.BINDING})  # placed this session: never a victim
MAX_COMBO_JOBS = 3
MAX_COMBOS = 4096
PATIENCE = 16  # stop comparing nodes after this many workable ones brought no cheaper victim set
VOTED_JOBS = 64  # at most this many jobs in the preemptor's queue: nodes bounded by the vote (Evictor._by_votes)


# ---------------------------------------------------------------- job selection


def starving(ssn: Session, job: JobInfo) -> bool:
    """magma's starving test (difference 1): any vote of the deciding tier, not all of them."""
    any_vote = getattr(ssn, "job_starving_any", None)
    return any_vote(job) if any_vote is not None else ssn.job_starving(job)


def evictable(task: TaskInfo) -> bool:
    return task.preemptable and not task.critical


def settled(job: JobInfo) -> bool:
    return not job.count(UNSETTLED)  # counted once per change of the job's tasks


_PENDING = frozenset({S.PENDING})


def runs_evictable(job: JobInfo) -> bool:
    """Whether the job has a Bound or Running task that may be evicted (once per change of its tasks)."""
    return job.memo("preempt.runs_evictable",
                    lambda j: any(t.status in PREEMPT_STATUSES and evictable(t) for t in j.tasks.values()))


def queue_chain(ssn: Session, name: str) -> list[str]:
    chains = ssn.__dict__.setdefault("_queue_chains", {})  # the queue tree does not change within a session
    got = chains.get(name)
    if got is None:
        got = chains[name] = (name, *reasons.ancestors(ssn, name))
    return list(got)


def _figure(figs: dict, name: str, key: str) -> Resources | None:
    return reasons.figure(figs.get(name), key)


def _over(alloc: Resources, deserved: Resources) -> bool:
    """Volcano's "allocated is not <= deserved" (absent = 0)."""
    return not alloc.less_equal(deserved, "zero")


class QueueFigures:
    """The queues' figures as the share plugin publishes them (`reasons.queue_figures`), each read when first asked:
    for what an action does not change (the deserved share, set at session open; whether a queue has figures; in
    enqueue, the allocated share too)."""

    def __init__(self, ssn: Session):
        self.ssn = ssn
        self._figures: dict[str, dict | None] = {}

    def of(self, queue: str) -> dict | None:
        figures = self._figures
        if queue not in figures:
            figures[queue] = reasons.queue_figures(self.ssn, [queue]).get(queue)
        return figures[queue]

    def figure(self, queue: str, key: str) -> Resources | None:
        return reasons.figure(self.of(queue), key)


class RunningWork:
    """Who runs evictable work, per queue, for `preemption_candidate` (made once per action). The share figures are
    read per queue when first asked: the deserved and allocated shares they give do not change in enqueue (admitting
    allocates nothing) nor while preempt collects its preemptors."""

    def __init__(self, ssn: Session):
        self.ssn = ssn
        self.min_priority: dict[str, int] = {}
        low = self.min_priority
        for job in ssn.jobs.values():
            m = low.get(job.queue)
            if (m is None or job.priority < m) and runs_evictable(job):  # (not below the least so far: no change)
                low[job.queue] = job.priority
        self.figures = QueueFigures(ssn)
        self._over: list[str] | None = None

    @property
    def over(self) -> list[str]:
        """The reclaimable queues running evictable work above their deserved share."""
        if self._over is None:
            self._over = []
            for q in sorted(self.min_priority):
                qi = self.ssn.queues.get(q)
                d, a = self.figures.figure(q, "deserved"), self.figures.figure(q, "allocated")
                if qi is not None and qi.reclaimable and d is not None and a is not None and _over(a, d):
                    self._over.append(q)
        return self._over


def preemption_candidate(ssn: Session, job: JobInfo, work: RunningWork | None = None) -> bool:
    """Could preemption run this Pending job (difference 2)? Its queue is Open and either a lower-priority job of
    the same queue runs preemptable work, or its queue stays within its deserved share with the job's need while
    another reclaimable queue is over its own."""
    queue = ssn.queues.get(job.queue)
    if queue is None or queue.state != "Open":
        return False
    if job.tasks and all(t.never_preempts for t in job.pending_tasks()):
        return False
    work = work or RunningWork(ssn)
    if work.min_priority.get(job.queue, job.priority) < job.priority:
        return True
    deserved = work.figures.figure(job.queue, "deserved")
    alloc = work.figures.figure(job.queue, "allocated")
    if deserved is None or alloc is None:
        return False
    need = reasons.gang_need(ssn, job) if job.tasks else job.min_resources.without(PODS)
    if not _within(alloc._v, need._v, deserved._v):
        return False
    return any(q != job.queue for q in work.over)


def _within(alloc: dict[str, int], need: dict[str, int], deserved: dict[str, int]) -> bool:
    """`(alloc + need).less_equal(deserved, "zero")` in plain ints per resource: a resource the sum leaves at zero
    is not compared (the sum drops it)."""
    for k, v in alloc.items():
        total = v + need.get(k, 0)
        if total and total > deserved.get(k, 0):
            return False
    for k, v in need.items():
        if k not in alloc and v and v > deserved.get(k, 0):
            return False
    return True


# ---------------------------------------------------------------- victim plans


@dataclass
class Unit:
    """Evicting some pods of one victim job: a prefix of its surplus pods on the node, or the whole job."""

    job: JobInfo
    pods: list[TaskInfo]
    whole: bool
    frees_row: np.ndarray  # resources freed on the node being planned
    _evicted: Resources | None = None

    @property
    def evicted(self) -> Resources:
        """Resources the victim's queue loses (summed when first asked: only the queue constraints ask)."""
        if self._evicted is None:
            pods = [t for t in self.pods if t.status in ALLOCATED] if self.whole else self.pods
            self._evicted = Resources.sum(t.resreq for t in pods)
        return self._evicted


@dataclass
class Plan:
    row: int
    units: list[Unit]
    cost: tuple
    score: float = 0.0

    @property
    def pods(self) -> list[TaskInfo]:
        out, seen = [], set()
        for u in self.units:
            for t in u.pods:
                if t.uid not in seen:
                    seen.add(t.uid)
                    out.append(t)
        return out


ZERO_COST = (-math.inf, 0.0, 0.0, 0)


@dataclass
class VictimIndex:
    """Possible victims by node row, with their summed requests per row (kept current as evictions happen)."""

    by_row: dict[int, list[TaskInfo]] = field(default_factory=dict)
    evictable: np.ndarray | None = None
    min_priority: np.ndarray | None = None


class Evictor:
    """The eviction engine shared by preempt (scopes "queue", "cross", "job") and reclaim (scope "cross").

    Speed (decisions unchanged, tests/property/test_preempt_fast_paths.py): victims are indexed once per action by
    queue and by (queue, job priority) with their summed requests per node row, kept current as evictions happen;
    a preemptor task's nodes are narrowed with those sums to the ones where a plan can exist before any plan is
    built (`_workable`, fastpath.preempt_pruning: across queues most nodes hold only victims of queues that are not
    above their deserved share); node scores are kept per node state and the share plugin's figures per version of
    the session (fastpath.preempt_caches), node scores also across sessions (fastpath.scores_across_sessions); a
    task that free room serves is placed without scoring the other nodes (fastpath.preempt_free_room). Within a
    queue of few jobs, nodes are bounded by the jobs the Preemptable vote may give at all, before the predicates
    and the victim index (fastpath.preempt_vote_bound); phase 2 stops at once when the queue refuses the task and
    free room would be the plan (fastpath.preempt_job_quota); queue allocations are summed and queues' victims
    indexed only when needed (fastpath.preempt_lazy_setup)."""

    def __init__(self, ssn: Session, arguments: dict, reason: str):
        self.ssn = ssn
        self.reason = reason
        self.statuses = PREEMPT_STATUSES if reason == "preempt" else RECLAIM_STATUSES
        self.predicates = PredicateCache(ssn, flag(arguments.get("predicateErrorCacheEnable"), True))
        self.max_nodes = max(int_arg(arguments, "maxCandidateNodesAbsolute", 100) or 1, 1)
        self.figures = QueueFigures(ssn)  # the share plugin's (what the action does not change)
        self._chain_sets: dict[str, set[str]] = {}  # `_chain_set`'s
        # per queue, its jobs' allocation (`queue_alloc`): summed when first read with fastpath.preempt_lazy_setup
        self._alloc: dict[str, Resources] = {} if fastpath.preempt_lazy_setup else ssn.queue_allocations()
        self._descendants: dict[str, set[str]] | None = None  # per queue, itself and its sub-queues (when asked)
        self.index: dict[str, VictimIndex] = {}
        self._by_queue: dict[str, VictimIndex] | None = None
        self._unindexed: set[str] = set()  # queues not indexed yet
        self._jobs_by_queue: dict[str, list[JobInfo]] | None = None
        self._queue_jobs: dict[str, list[JobInfo]] = {}  # per queue, its jobs in uid order from the job index (`queue_jobs`)
        # For pruning nodes (fastpath.preempt_pruning), built with _by_queue: the summed requests of its victims per
        # (queue, job priority) and row, kept current alike; per queue, the Bound tasks a whole-job eviction also
        # frees when the action takes Running tasks only (reclaim); the jobs indexed.
        self._by_prio: dict[tuple[str, int], np.ndarray] = {}
        self._whole_extra: dict[str, np.ndarray] = {}
        self._indexed: set[str] = set()
        self._voted: dict[tuple, tuple[int, np.ndarray | None]] = {}  # _voted_bound's, with the session's version
        # entitlement's and _quota_shortfall's answers from the share plugin's figures, by (version of the session,
        # queue, request) (fastpath.preempt_figures_memo)
        self._by_figures = Memo(4096)
        # Jobs with tasks placed or pipelined in this session: never victims (their uids).
        # (A snapshot gives no task these statuses: only the session's operations do, and the jobs they touch are
        # among `session_jobs`.)
        self.unsettled: set[str] = {j.uid for j in session_jobs(ssn) if not settled(j)}
        self._unsettled_at_start = frozenset(self.unsettled)
        self._entitled: tuple[list[str], int] = ([], 0)
        # Caches of fastpath.preempt_caches. The share plugin's queue figures are kept for one version of the
        # session: every eviction, pipelining or commit of this action makes a new version; discarding a statement
        # puts back the state, and the version, from before its first operation (`began`). Node scores are kept
        # per score key and node state (`Session.node_state`: nodes in equal state score alike, as in allocate's
        # shared groups): each row has the id of its state, renewed for the rows this action's operations touched.
        self.version = 0
        self._versions = 0
        self._starts: weakref.WeakKeyDictionary[Statement, int] = weakref.WeakKeyDictionary()
        self._figures_cache: tuple[int, dict] | None = None
        self._score_cache: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}  # key -> (score, known) by state id
        self._state_ids: dict[bytes, int] = {}  # node state -> its id
        self._state_list: list[bytes] = []  # id -> node state
        self._row_state: np.ndarray | None = None  # per row, the id of its node state
        self._touched: list[int] = []  # rows touched by this action's operations, in order
        self._refreshed = 0  # how many of them _row_state has seen
        self._score_keys: dict[str, tuple | None] = {}  # task uid -> its score key

    # ------------------------------------------------------------ bookkeeping of evictions
    def queue_alloc(self, queue: str) -> Resources:
        """The queue's jobs' allocation (zero for a queue not in the session), kept current as this action evicts
        and discards. With fastpath.preempt_lazy_setup summed when first read (most actions never read it): the
        sum is the same then, as the action changes no task's allocated status but by evicting (Bound, Running to
        Releasing) and discarding those evictions, which `_evict` (after reading the queue's) and `discard`
        count (pipelining is not an allocated status)."""
        got = self._alloc.get(queue)
        if got is None:
            jobs = self.queue_jobs(queue) if queue in self.ssn.queues else ()
            got = self._alloc[queue] = Resources.sum(job.allocated() for job in jobs)
        return got

    def subtree_alloc(self, name: str) -> Resources:
        total = Resources()
        if self._descendants is None:
            self._descendants = {q: {q} for q in self.ssn.queues}
            for q in self.ssn.queues:
                for a in reasons.ancestors(self.ssn, q):
                    self._descendants.setdefault(a, {a}).add(q)
        for d in self._descendants.get(name, {name}):
            total = total + self.queue_alloc(d)
        return total

    def _evict(self, stmt: Statement, task: TaskInfo) -> None:
        job = self.ssn.jobs[task.job]
        row = self.ssn.nodes[task.node].index
        counted = task.status in ALLOCATED
        before = self.queue_alloc(job.queue)  # (summed before the eviction, when not yet)
        self._queue_index(job.queue)  # (indexed before the eviction, when not yet)
        stmt.evict(task, self.reason)
        self.changed(row)
        if counted:
            self._alloc[job.queue] = before - task.resreq
        self._adjust(task, row, -1)

    def discard(self, stmt: Statement) -> None:
        rows = []
        for op in stmt.ops:
            if op.kind == "evict":
                task = op.task
                job = self.ssn.jobs[task.job]
                if op.previous in ALLOCATED:
                    self._alloc[job.queue] = self.queue_alloc(job.queue) + task.resreq
                self._adjust(task, self.ssn.nodes[task.node].index, +1)
            rows.append(op.node.index)
        stmt.discard()
        start = self._starts.pop(stmt, None)
        if rows:
            self.changed(*rows)
        if start is not None:
            self.version = start  # the session is back as it was then

    def began(self, stmt: Statement) -> None:
        """Note the version before `stmt`'s first operation (every operation of this action goes through `apply`)."""
        if stmt not in self._starts:
            self._starts[stmt] = self.version

    def committed(self, stmt: Statement) -> None:
        self._starts.pop(stmt, None)
        self.changed()

    def changed(self, *rows: int) -> None:
        """The session changed (on these node rows): a new version."""
        self._versions += 1
        self.version = self._versions
        self._touched.extend(rows)

    def live_figures(self, names: list[str]) -> dict:
        """`reasons.queue_figures` as they are now, right for the queues `names` (a queue's chain: the only ones
        read): with fastpath.preempt_caches, computed for those queues alone once per version of the session."""
        if not fastpath.preempt_caches:
            return reasons.queue_figures(self.ssn)
        got = self._figures_cache
        if got is None or got[0] != self.version:
            got = self._figures_cache = (self.version, {})
        key = tuple(names)
        figs = got[1].get(key)
        if figs is None:
            figs = got[1][key] = reasons.queue_figures(self.ssn, list(names))
        return figs

    def has_figures(self, queue: str) -> bool:
        """Whether the share plugin gives the queue figures (which queues it gives them does not change in the action):
        asked of the live figures, which the job's turn then reads (`_quota_left`) without asking the plugin again."""
        return bool(self.live_figures([queue]).get(queue))

    def node_scores(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """`Session.node_scores(task, rows)`. With fastpath.preempt_caches, when every score function scores a node
        from the node's own state (`Session.node_scores_key`), all nodes are scored once per version of the session
        for tasks of equal keys, shapes and requests, and the rows asked for are taken from that."""
        ssn = self.ssn
        if not fastpath.preempt_caches:
            return ssn.node_scores(task, rows)
        try:
            key = self._score_keys[task.uid]
        except KeyError:
            key = ssn.node_scores_key(task)
            self._score_keys[task.uid] = key = None if key is None else (key, task.shape, task.resreq)
        if key is None:
            return ssn.node_scores(task, rows)
        ids = self._node_state_ids(rows)
        n = len(self._state_ids)
        got = self._score_cache.get(key)
        if got is None or len(got[0]) < n:
            score, known = np.zeros(n, dtype=np.float64), np.zeros(n, dtype=bool)
            if got is not None:
                score[:len(got[0])], known[:len(got[1])] = got
            got = self._score_cache[key] = (score, known)
        score, known = got
        missing = ~known[ids]
        if missing.any():
            # one row per node state not scored yet
            new, first = np.unique(ids[missing], return_index=True)
            at = rows[missing][first]
            kept = _kept_scores(ssn, key) if fastpath.scores_across_sessions else None
            if kept is None:
                score[new] = ssn.node_scores(task, at)
            else:
                states = self._state_list
                got = [kept.get(states[i]) for i in new]
                todo = [j for j, v in enumerate(got) if v is None]
                if todo:
                    for j, v in zip(todo, ssn.node_scores(task, at[todo]).tolist()):
                        got[j] = kept[states[new[j]]] = v
                score[new] = got
            known[new] = True
        return score[ids]

    def _scored_by_state(self, task: TaskInfo) -> bool:
        """Whether `node_scores` gives a row's score whatever other rows are asked with it (per node state)."""
        if not fastpath.preempt_caches:
            return False
        if task.uid not in self._score_keys:
            key = self.ssn.node_scores_key(task)
            self._score_keys[task.uid] = None if key is None else (key, task.shape, task.resreq)
        return self._score_keys[task.uid] is not None

    def _node_state_ids(self, rows: np.ndarray) -> np.ndarray:
        """For `rows`, an id of their `Session.node_state` (equal states, equal ids), current for the rows touched.
        With fastpath.preempt_lazy_setup, ids are made for the rows asked for only (-1: not made yet): an id only
        names a state, and a row's score is taken from any row of its state."""
        if not fastpath.preempt_lazy_setup:
            return self._all_node_state_ids()[rows]
        if self._row_state is None:
            self._row_state = np.full(len(self.predicates.rows), -1, dtype=np.int64)
            self._refreshed = len(self._touched)
        elif self._refreshed < len(self._touched):
            self._row_state[np.array(self._touched[self._refreshed:], dtype=np.int64)] = -1
            self._refreshed = len(self._touched)
        ids = self._row_state[rows]
        unknown = ids < 0
        if unknown.any():
            new = np.unique(rows[unknown])
            self._row_state[new] = self._state_id_of(new)
            ids = self._row_state[rows]
        return ids

    def _all_node_state_ids(self) -> np.ndarray:
        """Per row, an id of its `Session.node_state` (equal states, equal ids), current for the rows touched."""
        if self._row_state is None:
            self._row_state = self._state_id_of(self.predicates.rows)
            self._refreshed = len(self._touched)
        elif self._refreshed < len(self._touched):
            rows = np.unique(np.array(self._touched[self._refreshed:], dtype=np.int64))
            self._row_state[rows] = self._state_id_of(rows)
            self._refreshed = len(self._touched)
        return self._row_state

    def _state_id_of(self, rows: np.ndarray) -> np.ndarray:
        ids, states = self._state_ids, self._state_list
        out = np.empty(len(rows), dtype=np.int64)
        for i, st in enumerate(self.ssn.node_state(rows)):
            b = st.tobytes()
            got = ids.get(b)
            if got is None:
                got = ids[b] = len(states)
                states.append(b)
            out[i] = got
        return out

    def _adjust(self, task: TaskInfo, row: int, sign: int) -> None:
        seen: set[int] = set()
        for idx in [*(self._by_queue or {}).values(), *self.index.values()]:
            if id(idx) in seen or idx.evictable is None:
                continue
            seen.add(id(idx))
            if any(t is task for t in idx.by_row.get(row, ())):
                idx.evictable[row] += sign * task.vec
        job = self.ssn.jobs[task.job]
        src = (self._by_queue or {}).get(job.queue)
        if src is not None and any(t is task for t in src.by_row.get(row, ())):
            self._by_prio[(job.queue, job.priority)][row] += sign * task.vec

    # ------------------------------------------------------------ eligible victims
    def _queue_index(self, queue: str | None = None) -> dict[str, VictimIndex]:
        """Every task that may ever be a victim in this action (status, preemptable, not critical, on a node of the
        session, of a job not placed in this session), per queue: built once, kept current by _evict/discard.

        With `queue`, only that queue's entry is sure to be there (fastpath.preempt_lazy_setup: each queue's is
        built when first needed). A queue's is built as it would have been at the first place: from the jobs
        unsettled when the action began, and before an eviction changes its tasks (`_evict`; nothing else of the
        action changes a Bound or Running task)."""
        if self._by_queue is None:
            self._by_queue = {}
            self._unindexed = set(self.jobs_by_queue())
        if self._unindexed:
            if queue is None or not fastpath.preempt_lazy_setup:
                for q in sorted(self._unindexed):
                    self._index_queue(q, self.jobs_by_queue()[q])
                self._unindexed.clear()
            elif queue in self._unindexed:
                self._unindexed.discard(queue)
                self._index_queue(queue, self.jobs_by_queue()[queue])
        return self._by_queue

    def _job_index(self):
        """The session's job index, when the jobs were not grouped by queue already (then they are read there)."""
        index = getattr(self.ssn, "job_index", None)
        return None if self._jobs_by_queue is not None else index

    def queue_jobs(self, queue: str) -> list[JobInfo]:
        """`jobs_by_queue()`'s list of one queue (empty for a queue without jobs): taken from the session's job
        index when it has one (it keeps each queue's job uids in order), without grouping every job."""
        index = self._job_index()
        if index is None:
            return self.jobs_by_queue().get(queue, [])
        got = self._queue_jobs.get(queue)
        if got is None:
            jobs = self.ssn.jobs
            got = self._queue_jobs[queue] = [jobs[uid] for uid in index.queue_uids.get(queue, ())]
        return got

    def jobs_by_queue(self) -> dict[str, list[JobInfo]]:
        """The session's jobs per queue, in uid order (made once)."""
        if self._jobs_by_queue is None:
            self._jobs_by_queue = {}
            by_queue = self._jobs_by_queue
            for job in sorted_by_uid(self.ssn.jobs.values()):
                got = by_queue.get(job.queue)
                if got is None:
                    by_queue[job.queue] = [job]
                else:
                    got.append(job)
        return self._jobs_by_queue

    def _index_queue(self, queue: str, jobs: list[JobInfo]) -> None:
        """`_queue_index`'s entries for one queue's jobs (in uid order)."""
        ssn = self.ssn
        nodes = ssn.nodes
        # Rows and requests gathered (and job priorities), summed with np.add.at (not row by row).
        rows: list[int] = []
        vecs: list[np.ndarray] = []
        prios: list[int] = []
        extra_rows: list[int] = []
        extra_vecs: list[np.ndarray] = []
        idx: VictimIndex | None = None
        for job in jobs:
            if job.uid in self._unsettled_at_start:
                continue
            self._indexed.add(job.uid)
            if idx is None:
                idx = self._by_queue[queue] = VictimIndex(evictable=np.zeros_like(ssn.table.idle))
            if (queue, job.priority) not in self._by_prio:
                self._by_prio[(queue, job.priority)] = np.zeros_like(ssn.table.idle)
            if not job.count(WHOLE_STATUSES):
                continue  # no task indexed below (counted once per change of the job's tasks)
            for t in job.tasks.values():
                if not evictable(t) or t.node not in nodes:
                    continue
                if t.status not in self.statuses:
                    if t.status in WHOLE_STATUSES:  # Bound, when the action takes Running tasks only
                        extra_rows.append(nodes[t.node].index)
                        extra_vecs.append(t.vec)
                    continue
                row = nodes[t.node].index
                idx.by_row.setdefault(row, []).append(t)
                rows.append(row)
                vecs.append(t.vec)
                prios.append(job.priority)
        if rows:
            at, add, prio = np.array(rows), np.stack(vecs), np.array(prios)
            np.add.at(self._by_queue[queue].evictable, at, add)
            for p in np.unique(prio):
                mask = prio == p
                np.add.at(self._by_prio[(queue, int(p))], at[mask], add[mask])
        if extra_rows:
            extra = self._whole_extra[queue] = np.zeros_like(ssn.table.idle)
            np.add.at(extra, np.array(extra_rows), np.stack(extra_vecs))

    def victim_index(self, pjob: JobInfo, preemptor: TaskInfo, scope: str) -> VictimIndex:
        """The victims a preemptor of `pjob` may consider in `scope`, by node row, with their summed requests per
        row (an upper bound: tasks of the preemptor's own job, of jobs placed since, and BestEffort rules are
        filtered per node in `candidates_on`)."""
        if scope == "job":
            key = f"job/{pjob.uid}"
            names = [pjob.queue]
            by_queue = {}  # (not read: the job's own tasks)
        elif scope == "queue":
            key = f"queue/{pjob.queue}"
            names = [pjob.queue]
            by_queue = self._queue_index(pjob.queue)
        else:
            key = f"cross/{pjob.queue}"
            chain = self._chain_set(pjob.queue)
            by_queue = self._queue_index()
            names = [q for q in sorted(by_queue) if q != pjob.queue and self._reclaimable_branch(q, chain)]
        idx = self.index.get(key)
        if idx is not None:
            return idx
        if scope == "job":
            ssn = self.ssn
            idx = VictimIndex(evictable=np.zeros_like(ssn.table.idle))
            for t in pjob.tasks.values():
                if t.status in self.statuses and evictable(t) and t.node in ssn.nodes:
                    row = ssn.nodes[t.node].index
                    idx.by_row.setdefault(row, []).append(t)
                    idx.evictable[row] += t.vec
        elif len(names) == 1:
            idx = by_queue.get(names[0]) or VictimIndex(evictable=np.zeros_like(self.ssn.table.idle))
        else:
            idx = VictimIndex(evictable=np.zeros_like(self.ssn.table.idle))
            for q in names:
                src = by_queue.get(q)
                if src is None:
                    continue
                idx.evictable += src.evictable
                for row, tasks in src.by_row.items():
                    idx.by_row.setdefault(row, []).extend(tasks)
        self.index[key] = idx
        return idx

    def min_priority(self, idx: VictimIndex) -> np.ndarray:
        """Per node row, the lowest job priority among the index's possible victims (+inf where none): it never
        rises above the truth as victims are evicted, so it stays a valid lower bound."""
        if idx.min_priority is None:
            ssn = self.ssn
            out = np.full(len(ssn.node_list), np.inf)
            for row, tasks in idx.by_row.items():
                out[row] = min(ssn.jobs[t.job].priority for t in tasks)
            idx.min_priority = out
        return idx.min_priority

    def candidates_on(self, idx: VictimIndex, row: int, pjob: JobInfo, preemptor: TaskInfo,
                      scope: str) -> list[TaskInfo]:
        out = []
        for t in idx.by_row.get(row, ()):
            if t.status not in self.statuses:
                continue
            if scope == "job":
                if t.job != pjob.uid:
                    continue
            elif t.job == pjob.uid or t.job in self.unsettled:
                continue
            elif scope == "queue" and self.ssn.jobs[t.job].priority > pjob.priority:
                continue  # magma: a higher-priority job of the queue is never a victim, whatever a later tier says
            if preemptor.best_effort and not t.best_effort:
                continue
            out.append(t)
        return out

    def _reclaimable_branch(self, queue: str, preemptor_chain: set[str]) -> bool:
        for name in queue_chain(self.ssn, queue):
            if name in preemptor_chain:
                break
            q = self.ssn.queues.get(name)
            if q is not None and not q.reclaimable:
                return False
        return True

    # ------------------------------------------------------------ one preemptor task
    def place(self, stmt: Statement, task: TaskInfo, pjob: JobInfo, scope: str, remaining: int = 1) -> bool:
        """Evict victims (scope "queue", "cross" or "job") so that `task` fits a node, and pipeline it there."""
        ssn = self.ssn
        table = ssn.table
        if task.never_preempts:
            return False
        if not fastpath.preempt_lazy_setup:
            self._queue_index()  # every queue's victims, at the first place
        queue = ssn.queues[pjob.queue]
        fut = table.future_idle()
        vec = task.vec
        early = fastpath.preempt_pruning and scope == "queue" and self._by_votes(pjob)
        if early:
            # What the jobs the vote may give could free, and whether free room is a plan, do not depend on the
            # predicates (nor on the victim index): without a node where either holds the task, fail before them.
            # (Without free room anywhere, whether the queue must give back first does not matter here.)
            free_all = (fut >= vec).all(axis=1)
            any_free = bool(free_all.any())
            shortfall = self._quota_shortfall(queue, task) if any_free else None
            free_ok = any_free and (shortfall is None or shortfall.is_empty())
            if not free_ok and not self._can_plan(task, fut, self._voted_bound(task, pjob), free_all, False).any():
                return False
            if not any_free:
                shortfall = self._quota_shortfall(queue, task)
        early_cross = fastpath.preempt_pruning and scope == "cross"
        if early_cross:
            # Which queues a plan may take from, and whether free room is a plan, depend neither on the predicates
            # nor on the victim index: with neither, fail before them.
            self._entitled = self.entitlement(queue, task)
            if not (self._entitled[1] >= len(self._entitled[0]) and (fut >= vec).all(axis=1).any()) and \
                    not self._open_anywhere(pjob, self._entitled):
                return False
        idx = self.victim_index(pjob, task, scope)
        room = ((fut + idx.evictable) >= vec).all(axis=1)
        if fastpath.preempt_pruning and not room.any():
            return False  # no node has the room, whatever the predicates say: no need to run them
        if scope == "job" and not idx.by_row:
            return False  # no task of the job's own to give: no node is a plan (below), whatever the predicates say
        pred = self.predicates.get(task)
        feasible = pred.mask & room
        if scope == "job":
            # As Volcano's ValidateVictims: only a node holding a victim of the job's own is a plan, even where the
            # task fits free room (which then evicts nothing); elsewhere phase 2 would pipeline part of a gang.
            with_victims = np.zeros(len(feasible), dtype=bool)
            for row in idx.by_row:
                if feasible[row] and self.candidates_on(idx, row, pjob, task, scope):
                    with_victims[row] = True
            feasible = with_victims
        rows = np.flatnonzero(feasible)
        if not len(rows):
            return False
        if not early:
            shortfall = self._quota_shortfall(queue, task) if scope == "queue" else Resources()
        if scope == "cross" and not early_cross:
            self._entitled = self.entitlement(queue, task)
        free = (fut[rows] >= vec).all(axis=1)
        if fastpath.preempt_job_quota and scope == "job" and free.any() and not ssn.allocatable(queue, task):
            # Free room is a plan on every free node left (each holds a victim of the job's), found first and costing
            # nothing: the search ends with applying it, which evicts nothing, and the queue's Allocatable refuses
            # the task whatever the node.
            return False
        workable = (self._workable(task, pjob, scope, fut, rows, free, shortfall, early)
                    if fastpath.preempt_pruning else None)
        if workable is not None and not workable.any():
            return False  # no node can give a plan: the loop below would find none
        floor = self.min_priority(idx)[rows]
        known: dict[int, Plan | None] = {}  # plans already made, by row (the session does not change in the loop)
        if fastpath.preempt_pruning:
            # Is there a plan on any node? Looked for in an order that needs no scores: without one, the loop below
            # would visit every workable node and find none, in any order, so the task fails unscored.
            for i in np.lexsort((rows, floor, ~free)):
                if workable is None or workable[i]:
                    row = int(rows[i])
                    known[row] = self.plan_on_node(task, pjob, scope, row, idx, fut, pred.mask, shortfall, remaining)
                    if known[row] is not None:
                        break
            else:
                return False
            first = known[row]
            if (fastpath.preempt_free_room and first.cost == ZERO_COST and shortfall is not None
                    and shortfall.is_empty() and self._scored_by_state(task)):
                # Free room gives a plan (on every free node alike: plan_on_node's answer there depends on nothing
                # of the node), and the loop below would stop at its first node, a free one: the free node with
                # the lowest victim priority, then the best score, then the lowest row. Only the free nodes of the
                # lowest victim priority need scores, and none when there is one.
                at = np.flatnonzero(free)
                at = at[floor[at] == floor[at].min()]
                i = at[0] if len(at) == 1 else at[np.lexsort((rows[at], -self.node_scores(task, rows[at])))[0]]
                return self.apply(stmt, task, pjob, queue, scope, Plan(int(rows[i]), [], ZERO_COST), idx)
        scores = self.node_scores(task, rows)
        # Nodes with room first, then by the lowest priority of a possible victim there (a lower bound on the
        # cost's first key), then by score, then by row.
        order = np.lexsort((rows, -scores, floor, ~free))
        best_per_task = 1.0 / max(remaining, 1)  # no plan costs less than this many jobs (or pods) per task served
        plans: list[Plan] = []
        best: Plan | None = None
        stale = 0  # workable nodes seen since the best plan last improved
        for i in order:
            row = int(rows[i])
            if best is not None and not free[i] and floor[i] >= best.cost[0] and (
                    floor[i] > best.cost[0] or stale >= PATIENCE
                    or best.cost[1] <= best_per_task and best.cost[2] <= best_per_task):
                break  # the nodes left need victims at least as important, and none has been cheaper lately
            if workable is not None and not workable[i]:
                continue  # plan_on_node would say None (it changes nothing else: `stale` counts plans only)
            plan = (known[row] if row in known
                    else self.plan_on_node(task, pjob, scope, row, idx, fut, pred.mask, shortfall, remaining))
            if plan is None:
                continue
            plan.score = float(scores[i])
            plans.append(plan)
            if best is None or plan.cost < best.cost:
                best, stale = plan, 0
            else:
                stale += 1
            if plan.cost == ZERO_COST and shortfall is not None and shortfall.is_empty():
                break  # free room, best score first: nothing can beat it
            if len(plans) >= self.max_nodes:
                break
        plans.sort(key=lambda p: (p.cost, -p.score, p.row))
        for plan in plans[:8]:
            if self.apply(stmt, task, pjob, queue, scope, plan, idx):
                return True
        return False

    # ------------------------------------------------------------ a whole job (fastpath.preempt_gang_bound)
    def cannot_pipeline(self, pjob: JobInfo, tasks: list[TaskInfo], cross: bool, need: int) -> bool:
        """Could phase 1 not place `need` of `tasks` (the job's Pending tasks) in the job's turn, whatever it tries?

        Each task is tried once and placed on a node whose future idle, with the victims evicted for it, holds it.
        Per task request, a node holds no more such tasks than fit its future idle plus all that victims there
        could free: of the job's queue (`_voted_bound` or `_queue_bound`) and, with a share plugin's figures
        (`cross`), of the queues open to the job were it entitled all the way up its chain (`_cross_bound`).
        Those never grow in the turn: the Preemptable vote's job bounds only shrink as the preemptor's job gets
        more (`Session.victim_job_bounds`), evictions only remove candidates and lower the victims' queues, and
        entitlement is taken at its most (evictions may raise it). When no victim is possible, neither of the
        job's queue nor of a queue open to a task entitled at the start (as place's first check asks), nothing
        is evicted in the turn and only its placements change the session, which add to the queue's allocation:
        entitlement stays, and a task its queue's Allocatable refuses at the start and that may not take across
        queues is never placed. A turn that can evict nothing of the job's queue also places no more tasks than the
        queue's share lets in (`_quota_left`): each placement adds to the queue's allocation, nothing lowers it
        (fastpath.preempt_gang_bound)."""
        ssn = self.ssn
        queue = ssn.queues[pjob.queue]
        groups: dict = {}
        for task in tasks:
            if not task.never_preempts:
                got = groups.get(task.resreq)
                groups[task.resreq] = (task, 1) if got is None else (got[0], got[1] + 1)
        if self._by_votes(pjob):
            own = {r: self._voted_bound(task, pjob) for r, (task, _) in groups.items()}
        else:
            bound = self._queue_bound(pjob, self.predicates.rows)  # (the same for every request)
            own = dict.fromkeys(groups, bound)
        if len(groups) == 1 and all(b is None for b in own.values()):
            (task, _), = groups.values()
            left = self._quota_left(queue, task, cross)
            if left is not None and left < need:
                return True  # the queue's share stops the turn before the gang is whole
        fut = ssn.table.future_idle()

        def placeable(task: TaskInfo, n: int, room: np.ndarray) -> int:
            if not (task.vec > 0).any():
                return n  # (a task asking for nothing: no bound from room)
            return min(n, int(copies_fit(room, task.vec).sum()))

        entitled: dict = {}  # request -> may its task take across queues at the start (asked when needed)

        def may_take(r, task: TaskInfo) -> bool:
            if r not in entitled:
                entitled[r] = cross and self.cross_entitled(queue, task)
            return entitled[r]

        free_room = sum(placeable(task, n, fut) for r, (task, n) in groups.items()
                        if ssn.allocatable(queue, task) or may_take(r, task))
        if free_room >= need:
            return False  # free room alone might do
        if all(b is None for b in own.values()) and not any(
                self._open_anywhere(pjob, self.entitlement(queue, task))
                for r, (task, _) in groups.items() if may_take(r, task)):
            return True  # no victim possible: free room is all there is
        extra = None
        if cross:
            chain = queue_chain(ssn, pjob.queue)
            most = (chain, len(chain))
            if self._open_anywhere(pjob, most):
                extra = self._cross_bound(pjob, self.predicates.rows, most)
        total = 0
        for r, (task, n) in groups.items():
            room = fut
            for bound in (own[r], extra):
                if bound is not None:
                    room = room + bound
            total += placeable(task, n, room)
        return total < need

    def _quota_left(self, queue: QueueInfo, task: TaskInfo, cross: bool) -> int | None:
        """At most how many tasks like `task` phase 1 can place in a turn that evicts nothing of `queue`, whose own
        allocation then only grows by each placement: a placement in the queue needs its Allocatable
        (`Session.allocatable_left`), one across queues its entitlement at the queue's own level (its allocation
        with the task within its deserved share, by the share plugin's figures). None: no bound."""
        in_queue = self.ssn.allocatable_left(queue, task)
        if not cross or in_queue is None:
            return in_queue  # (None: no bound, whatever the share across queues allows)
        if queue.state != "Open":
            across = 0
        else:
            figs = self.live_figures([queue.name])  # (the queue's own level only)
            d, a = _figure(figs, queue.name, "deserved"), _figure(figs, queue.name, "allocated")
            wanted = [(r, v) for r, v in task.resreq.items() if v > 0 and r != PODS]
            if queue.name not in figs or d is None or a is None or not wanted:
                return None  # (entitlement is then the Preemptive vote's, or unbounded)
            across = max(0, min((d[r] - a[r]) // v for r, v in wanted))
        return max(in_queue, across)

    def _open_anywhere(self, pjob: JobInfo, entitled: tuple[list[str], int]) -> bool:
        """Is some queue open to `pjob` across queues (`_open_to`) with this entitlement?"""
        index = self._job_index()
        names = self.jobs_by_queue() if index is None else index.queue_uids  # (any order: a question only)
        return any(self._open_to(pjob, q, entitled) for q in names)

    # ------------------------------------------------------------ pruning nodes (fastpath.preempt_pruning)
    def _workable(self, task: TaskInfo, pjob: JobInfo, scope: str, fut: np.ndarray, rows: np.ndarray,
                  free: np.ndarray, shortfall: Resources | None, by_votes: bool = False) -> np.ndarray | None:
        """Of `rows`, those where `plan_on_node` may give a plan (a necessary condition; None: no pruning).

        A plan other than free room is a set of units, each with pods on the node taken from the node's
        candidates, that frees the task's need there and passes `_constraints_ok`. So the node needs a candidate
        that plan could use, and its future idle plus everything such candidates could free (`_queue_bound`,
        `_cross_bound`) must hold the task. Free room is a plan unless the queue must give back first (scope
        "queue") or the preemptor's branch is not entitled to grow (scope "cross"). Scope "queue" is bounded by
        the jobs the vote may give `by_votes` (`_voted_bound`, fastpath.preempt_vote_bound).

        With fastpath.preempt_free_room, when free room is a plan on some row and the queue need not give anything
        back, the search ends at the first row it visits, a free one (free rows come first in both its orders):
        the other rows are never looked at, so they need no bound."""
        if scope == "job":
            return None
        if scope == "queue":
            free_ok = shortfall is None or shortfall.is_empty()
        else:
            free_ok = self._entitled[1] >= len(self._entitled[0])
        if (fastpath.preempt_free_room and free_ok and shortfall is not None and shortfall.is_empty()
                and free.any()):
            return free
        if scope == "queue":
            if by_votes:
                voted = self._voted_bound(task, pjob)
                bound = None if voted is None else voted[rows]
            else:
                bound = self._queue_bound(pjob, rows)
        else:
            bound = self._cross_bound(pjob, rows, self._entitled)
        return self._can_plan(task, fut[rows], bound, free, free_ok)

    def _can_plan(self, task: TaskInfo, fut: np.ndarray, bound: np.ndarray | None, free: np.ndarray,
                  free_ok: bool) -> np.ndarray:
        """Per row (of `fut`, `bound`, `free` alike): has it a candidate (some pod in `bound`) and the room with all
        that `bound` frees, or free room when that is a plan (`free_ok`)?"""
        if bound is None:
            out = np.zeros(len(fut), dtype=bool)  # no candidate anywhere
        else:
            has = bound[:, self.ssn.table.col[PODS]] > 0  # every task counts one pod: some candidate is there
            out = has & ((fut + bound) >= task.vec).all(axis=1)
        if free_ok:
            out |= free
        return out

    def _queue_bound(self, pjob: JobInfo, rows: np.ndarray) -> np.ndarray | None:
        """Over `rows` (ascending), what the candidates of scope "queue" could free at most: the queue's victims of
        jobs of the preemptor's priority or lower (`candidates_on`), the preemptor's own job's left out. None when
        there are none."""
        self._queue_index(pjob.queue)
        parts = [evictable[rows] for (q, prio), evictable in self._by_prio.items()
                 if q == pjob.queue and prio <= pjob.priority]
        if not parts:
            return None
        total = parts[0] if len(parts) == 1 else np.sum(parts, axis=0)
        if pjob.uid in self._indexed:
            nodes = self.ssn.nodes
            for t in pjob.tasks.values():
                if t.status in self.statuses and evictable(t) and t.node in nodes:
                    row = nodes[t.node].index
                    at = int(np.searchsorted(rows, row))
                    if at < len(rows) and rows[at] == row:
                        total[at] -= t.vec
        return total

    def _by_votes(self, pjob: JobInfo) -> bool:
        """Whether scope "queue" bounds nodes by the jobs the vote may give (`_voted_bound`, with
        fastpath.preempt_vote_bound): when the preemptor's queue has few jobs. Summing a few jobs' tasks costs less
        than the victim index (which it does not need); for many, the index's sums kept per priority are cheaper
        (`_queue_bound`). Either bound is exact."""
        return fastpath.preempt_vote_bound and len(self.queue_jobs(pjob.queue)) <= VOTED_JOBS

    def _voted_bound(self, task: TaskInfo, pjob: JobInfo) -> np.ndarray | None:
        """`_queue_bound` with only the jobs that may give a unit (fastpath.preempt_vote_bound): a job gives a unit
        only when the vote gives some of its tasks and it runs more than its minAvailable, or the vote gives every
        task it runs (`_units`); `Session.victim_job_bounds` says when the vote cannot. Summed from the jobs' tasks
        as they are now: a unit takes pods on the node that `candidates_on` offers or, whole, the job's Bound and
        Running pods there. Over all rows; None when there are none. The vote's bounds are functions of the
        preemptor's job and request (and the session): kept for this version of the session by those."""
        key = (pjob.uid, task.resreq)
        got = self._voted.get(key)
        if got is not None and got[0] == self.version:
            return got[1]
        ssn = self.ssn
        nodes = ssn.nodes
        statuses = WHOLE_STATUSES  # (self.statuses | WHOLE_STATUSES: the action's statuses are among them)
        total: np.ndarray | None = None
        # left out: jobs never a candidate of scope "queue" (candidates_on), jobs without a task a unit could take
        jobs = [job for job in self.queue_jobs(pjob.queue)
                if job is not pjob and job.priority <= pjob.priority and job.uid not in self.unsettled
                and job.count(statuses)]
        # rows and requests gathered, summed with np.add.at (as `_index_queue` does)
        rows: list[int] = []
        vecs: list[np.ndarray] = []
        for job, (some, every) in zip(jobs, ssn.victim_job_bounds("preemptable", task, jobs) if jobs else ()):
            if not (every or some and job.ready_count() > job.min_available):
                continue
            for t in job.tasks.values():
                if t.status in statuses and evictable(t) and t.node in nodes:
                    rows.append(nodes[t.node].index)
                    vecs.append(t.vec)
        if rows:
            total = np.zeros_like(ssn.table.idle)
            np.add.at(total, np.array(rows), np.stack(vecs))
        self._voted[key] = (self.version, total)
        return total

    def _cross_bound(self, pjob: JobInfo, rows: np.ndarray, entitled: tuple[list[str], int]) -> np.ndarray | None:
        """Over `rows`, what the candidates of scope "cross" could free at most: victims of the queues in the
        preemptor's cross index that `_constraints_ok` does not refuse outright (`_queue_blocked`), with the
        Bound tasks a whole-job eviction adds. None when there are none."""
        by_queue = self._queue_index()
        parts = []
        for q, idx in by_queue.items():
            if not self._open_to(pjob, q, entitled):
                continue
            parts.append(idx.evictable[rows])
            extra = self._whole_extra.get(q)
            if extra is not None:
                parts.append(extra[rows])
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else np.sum(parts, axis=0)

    def _open_to(self, pjob: JobInfo, q: str, entitled: tuple[list[str], int]) -> bool:
        """Whether a preemptor of `pjob` entitled so far up its chain (`entitlement`) may take from queue `q` across
        queues: another queue, in a reclaimable branch, that `_constraints_ok` does not refuse outright."""
        pchain, level = entitled
        return (q != pjob.queue and self._reclaimable_branch(q, self._chain_set(pjob.queue))
                and not self._queue_blocked(q, pchain, level))

    def _chain_set(self, queue: str) -> set[str]:
        """The queue and its ancestors (kept: the queue tree does not change in a session)."""
        got = self._chain_sets.get(queue)
        if got is None:
            got = self._chain_sets[queue] = set(queue_chain(self.ssn, queue))
        return got

    def _queue_blocked(self, q: str, pchain: list[str], level: int) -> bool:
        """Whether `_constraints_ok` (scope "cross") refuses every victim set with a unit of queue `q`."""
        vchain = self._chain_set(q)
        lca = next((i for i, name in enumerate(pchain) if name in vchain), len(pchain))
        if level < lca:
            return True  # the preemptor's branch below the common ancestor would exceed its deserved share
        # Volcano's reclaim: only from a queue whose allocation is above its deserved share.
        deserved = self.figures.figure(q, "deserved")
        return deserved is not None and not _over(self.queue_alloc(q), deserved)

    def entitlement(self, queue: QueueInfo, task: TaskInfo) -> tuple[list[str], int]:
        """(the preemptor queue's chain, nearest first; the index of the first level whose deserved share the task
        would exceed, len(chain) when none). Taking from a queue elsewhere is fair only if every level below the
        lowest common ancestor with that queue stays within its deserved share: moving resources between
        siblings does not change their parent's allocation. Without a share plugin's figures, Volcano's
        Preemptive vote decides for the whole chain."""
        ssn = self.ssn
        key = ("entitlement", self.version, queue.name, task.resreq) if fastpath.preempt_figures_memo else None
        got = self._by_figures.get(key) if key is not None else None
        if got is not None:
            return got
        chain = queue_chain(ssn, queue.name)
        figs = self.live_figures(chain)
        if queue.name not in figs:
            return chain, (len(chain) if ssn.preemptive(queue, task) else 0)  # a vote on the task: not kept
        dims = [r for r, v in task.resreq.items() if v > 0 and r != PODS]
        level = len(chain)
        for i, name in enumerate(chain):
            d, a = _figure(figs, name, "deserved"), _figure(figs, name, "allocated")
            if d is None or a is None:
                continue
            if any(a[r] + task.resreq[r] > d[r] for r in dims):
                level = i
                break
        if key is not None:
            self._by_figures.keep(key, (chain, level))
        return chain, level

    def cross_entitled(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """May `task` take from other queues at all? Its own queue must stay within its deserved share."""
        if queue.state != "Open":
            return False
        _, level = self.entitlement(queue, task)
        return level >= 1

    def _quota_shortfall(self, queue: QueueInfo, task: TaskInfo) -> Resources | None:
        """What the queue must give back before `task` is Allocatable: empty when it already is, None when no
        share plugin publishes the figures (the apply step then extends the victims until Allocatable holds)."""
        ssn = self.ssn
        if ssn.allocatable(queue, task):
            return Resources()
        key = ("shortfall", self.version, queue.name, task.resreq) if fastpath.preempt_figures_memo else None
        if key is not None and key in self._by_figures:
            return self._by_figures[key]
        chain = queue_chain(ssn, queue.name)
        figs = self.live_figures(chain)
        out: dict[str, int] = {}
        found = False
        for name in chain:
            d, a = _figure(figs, name, "deserved"), _figure(figs, name, "allocated")
            if d is None or a is None:
                continue
            found = True
            for r, v in task.resreq.items():
                if r == PODS or v <= 0:
                    continue
                gap = a[r] + v - d[r]
                if gap > out.get(r, 0):
                    out[r] = gap
        got = Resources(out) if found else None
        if key is not None:
            self._by_figures.keep(key, got)
        return got

    # ------------------------------------------------------------ planning on one node
    def plan_on_node(self, task: TaskInfo, pjob: JobInfo, scope: str, row: int, idx: VictimIndex,
                     fut: np.ndarray, pred_mask: np.ndarray, shortfall: Resources | None,
                     remaining: int) -> Plan | None:
        ssn = self.ssn
        vec = task.vec
        need = np.maximum(vec - fut[row], 0)
        on_row = self.candidates_on(idx, row, pjob, task, scope)
        quota_needed = shortfall is not None and not shortfall.is_empty()
        if not need.any() and not quota_needed:
            if scope == "cross" and self._entitled[1] < len(self._entitled[0]):
                return None  # free room, but growing there would take the preemptor's branch over its share
            return Plan(row, [], ZERO_COST)
        if not on_row:
            return None
        if scope == "job":
            return self._plan_within_job(task, row, on_row, need)
        offered = self._offer(on_row, scope)
        vote = ssn.preemptable if scope == "queue" else ssn.reclaimable
        voted = {t.uid for t in vote(task, offered)}
        units = self._units(row, on_row, voted)
        if not units:
            return None
        return self._choose(task, pjob, scope, row, units, need, fut, pred_mask, shortfall, remaining)

    def _offer(self, on_row: list[TaskInfo], scope: str) -> list[TaskInfo]:
        """The node's candidates first, then the rest of their jobs' evictable pods (so that the gang vote can
        allow evicting a job whole: magma's gang plugin permits a job's tasks at or below minAvailable only when
        all its evictable tasks are offered)."""
        ssn = self.ssn
        out = list(on_row)
        seen = {t.uid for t in out}
        jobs = []
        for t in on_row:
            if t.job not in jobs:
                jobs.append(t.job)
        for uid in jobs:
            job = ssn.jobs[uid]
            for t in job.tasks.values():
                if t.uid in seen or t.status not in WHOLE_STATUSES:
                    continue
                if evictable(t) and t.node in ssn.nodes:
                    out.append(t)
                    seen.add(t.uid)
        return out

    def _units(self, row: int, on_row: list[TaskInfo], voted: set[str]) -> list[Unit]:
        ssn = self.ssn
        by_job: dict[str, list[TaskInfo]] = {}
        for t in on_row:
            if t.uid in voted:
                by_job.setdefault(t.job, []).append(t)
        units: list[Unit] = []
        for uid in sorted(by_job):
            job = ssn.jobs[uid]
            whole = ssn.victim_order(job)  # every Bound and Running task, in the same order
            surplus = job.ready_count() - job.min_available
            if surplus > 0:
                pods = ssn.sorted_tasks(by_job[uid])[::-1]  # victims: reverse task order, lowest priority first
                part = pods[:surplus]
                units.append(Unit(job, part, False, vsum(ssn, part)))
            # The whole job: possible when every pod it runs is evictable and the vote allowed all of them.
            if whole and all(t.uid in voted and evictable(t) and t.node in ssn.nodes for t in whole):
                here = [t for t in whole if ssn.nodes[t.node].index == row]
                units.append(Unit(job, list(whole), True, vsum(ssn, here)))
        return units

    def _choose(self, task: TaskInfo, pjob: JobInfo, scope: str, row: int, units: list[Unit], need: np.ndarray,
                fut: np.ndarray, pred_mask: np.ndarray, shortfall: Resources | None, remaining: int) -> Plan | None:
        """The cheapest feasible set of units (at most one per job): lowest highest priority first, then fewest
        jobs, then fewest pods per preemptor task served; greedy beyond MAX_COMBO_JOBS jobs."""
        prios = sorted({u.job.priority for u in units})
        frees = np.stack([u.frees_row for u in units])
        for level in prios:
            pool = [i for i, u in enumerate(units) if u.job.priority <= level]
            if not (frees[pool].sum(axis=0) >= need).all() and not self._whole_fits(units, pool, need):
                continue
            best: Plan | None = None
            tried = 0
            for size in range(1, min(MAX_COMBO_JOBS, len({units[i].job.uid for i in pool})) + 1):
                for combo in itertools.combinations(pool, size):
                    tried += 1
                    if tried > MAX_COMBOS:
                        break
                    if len({units[i].job.uid for i in combo}) < size:
                        continue
                    if not any(units[i].job.priority == level for i in combo):
                        continue
                    if not (frees[list(combo)].sum(axis=0) >= need).all():
                        continue
                    chosen = self._trim([units[i] for i in combo], need)
                    if not self._constraints_ok(pjob, scope, chosen, shortfall):
                        continue
                    plan = Plan(row, chosen, self._cost(task, row, chosen, fut, pred_mask, remaining))
                    if best is None or plan.cost < best.cost:
                        best = plan
                if best is not None:
                    return best
            greedy = self._greedy([units[i] for i in pool], need)
            if greedy is not None and self._constraints_ok(pjob, scope, greedy, shortfall):
                return Plan(row, greedy, self._cost(task, row, greedy, fut, pred_mask, remaining))
        return None

    @staticmethod
    def _whole_fits(units: list[Unit], pool: list[int], need: np.ndarray) -> bool:
        best: dict[str, np.ndarray] = {}
        for i in pool:
            u = units[i]
            cur = best.get(u.job.uid)
            if cur is None or (u.frees_row >= cur).all():
                best[u.job.uid] = u.frees_row
        return bool(best) and (sum(best.values()) >= need).all()

    @staticmethod
    def _trim(chosen: list[Unit], need: np.ndarray) -> list[Unit]:
        """Drop surplus pods of partial units that the fit does not need (highest-priority pods last dropped)."""
        out = []
        total = sum((u.frees_row for u in chosen), np.zeros_like(need))
        for u in chosen:
            if u.whole or len(u.pods) <= 1:
                out.append(u)
                continue
            pods = list(u.pods)
            frees = u.frees_row.copy()
            while len(pods) > 1 and (total - pods[-1].vec >= need).all():
                total = total - pods[-1].vec
                frees = frees - pods[-1].vec
                pods.pop()
            out.append(Unit(u.job, pods, False, frees))
        return out

    def _greedy(self, pool: list[Unit], need: np.ndarray) -> list[Unit] | None:
        pool = sorted(pool, key=lambda u: (u.job.priority, u.whole, len(u.pods), u.job.uid))
        chosen: dict[str, Unit] = {}
        total = np.zeros_like(need)
        for u in pool:
            if (total >= need).all():
                break
            prev = chosen.get(u.job.uid)
            if prev is not None:
                total = total - prev.frees_row
            chosen[u.job.uid] = u
            total = total + u.frees_row
        if not (total >= need).all():
            return None
        return self._trim(list(chosen.values()), need)

    def _constraints_ok(self, pjob: JobInfo, scope: str, chosen: list[Unit], shortfall: Resources | None) -> bool:
        ssn = self.ssn
        if scope == "queue":
            if shortfall:
                freed = Resources.sum(u.evicted for u in chosen if u.job.queue == pjob.queue)
                if not shortfall.less_equal(freed, "zero"):
                    return False
            return True
        if scope != "cross":
            return True
        chain = self._chain_set(pjob.queue)
        pchain, level = self._entitled
        per_queue: dict[str, Resources] = {}
        for u in chosen:
            per_queue[u.job.queue] = per_queue.get(u.job.queue, Resources()) + u.evicted
        taken: dict[str, Resources] = {}
        for q, res in per_queue.items():
            if self._queue_blocked(q, pchain, level):
                return False
            for name in queue_chain(ssn, q):
                if name in chain:
                    break
                taken[name] = taken.get(name, Resources()) + res
        for name, res in taken.items():
            qi = ssn.queues.get(name)
            if qi is None:
                continue
            left = self.subtree_alloc(name) - res
            if any(left[k] < v for k, v in qi.guarantee.items() if k != PODS and v > 0):
                return False
        return True

    def _cost(self, task: TaskInfo, row: int, chosen: list[Unit], fut: np.ndarray, pred_mask: np.ndarray,
              remaining: int) -> tuple:
        ssn = self.ssn
        if not chosen:
            return ZERO_COST
        vec = task.vec
        nodes = ssn.nodes
        pods = [t for u in chosen for t in u.pods]
        # What the units free per node (and passing the predicates), and how many more copies of the task each such
        # node then holds: all nodes at once.
        at = np.fromiter((nodes[t.node].index for t in pods), dtype=np.int64, count=len(pods))
        rows, where = np.unique(at, return_inverse=True)
        freed = np.zeros((len(rows), len(vec)), dtype=np.int64)
        if pods:
            np.add.at(freed, where, np.stack([t.vec for t in pods]))
        keep = pred_mask[rows]
        served = 0
        if keep.any():
            have = fut[rows[keep]]
            served = int(np.maximum(copies_fit(have + freed[keep], vec) - copies_fit(have, vec), 0).sum())
        served = max(min(served, max(remaining, 1)), 1)
        maxprio = max(u.job.priority for u in chosen)
        return (maxprio, len({u.job.uid for u in chosen}) / served, len(pods) / served,
                sum(u.job.priority for u in chosen))

    def _plan_within_job(self, task: TaskInfo, row: int, on_row: list[TaskInfo], need: np.ndarray) -> Plan | None:
        """Phase 2 (Volcano): the job's own lower-priority tasks, lowest priority first, until the task fits."""
        ssn = self.ssn
        voted = {t.uid for t in ssn.preemptable(task, on_row)}
        chosen, total = [], np.zeros_like(need)
        for t in ssn.sorted_tasks([t for t in on_row if t.uid in voted])[::-1]:
            if (total >= need).all():
                break
            chosen.append(t)
            total = total + t.vec
        if not chosen or not (total >= need).all():
            return None
        job = ssn.jobs[task.job]
        unit = Unit(job, chosen, False, total)
        return Plan(row, [unit], (job.priority, 0.0, float(len(chosen)), 0))

    # ------------------------------------------------------------ applying a plan
    def apply(self, stmt: Statement, task: TaskInfo, pjob: JobInfo, queue: QueueInfo, scope: str, plan: Plan,
              idx: VictimIndex) -> bool:
        ssn = self.ssn
        node = ssn.node_list[plan.row]
        node_stmt = Statement(ssn)
        self.began(stmt)
        self.began(node_stmt)
        for t in plan.pods:
            if t.status in WHOLE_STATUSES:
                self._evict(node_stmt, t)
        fits = self._fits_now(task, queue, scope, plan.row)
        if not fits and scope == "queue":
            # The queue's limit still refuses the task: give back more of the queue's own work on this node,
            # whole jobs in victim order, as Volcano's preemptorFitsOnNode loop does.
            extra = self.candidates_on(idx, plan.row, pjob, task, scope)
            voted = {t.uid for t in ssn.preemptable(task, self._offer(extra, scope))} if extra else set()
            for unit in sorted(self._units(plan.row, extra, voted),
                               key=lambda u: (u.job.priority, not u.whole, len(u.pods), u.job.uid)):
                if self._fits_now(task, queue, scope, plan.row):
                    break
                for t in unit.pods:
                    if t.status in WHOLE_STATUSES:
                        self._evict(node_stmt, t)
            fits = None  # asked again below: evictions may have happened
        if not fastpath.preempt_fit_once or fits is None:
            fits = self._fits_now(task, queue, scope, plan.row)
        if not fits:
            self.discard(node_stmt)
            return False
        node_stmt.pipeline(task, node)
        self.changed(plan.row)
        stmt.ops.extend(node_stmt.ops)
        self.unsettled.add(pjob.uid)
        return True

    def _fits_now(self, task: TaskInfo, queue: QueueInfo, scope: str, row: int) -> bool:
        ssn = self.ssn
        table = ssn.table
        fut = table.idle[row] + table.releasing[row] - table.pipelined[row]
        if not (fut >= task.vec).all():
            return False
        if scope in ("queue", "job") and not ssn.allocatable(queue, task):
            return False
        return bool(ssn.predicate(task, np.array([row], dtype=np.int64)).mask[0])


# Node scores by score key and node state, kept across sessions per scheduler configuration
# (fastpath.scores_across_sessions): a score with a `Session.node_scores_key` is a function of that key, the
# task's shape and request and the node's `node_state` alone, and the configuration fixes the plugins and their
# arguments. The NodeTable's dimensions (the meaning of the state's columns) are part of the key.
_SCORES = PerConfig(max_entries=100_000)


def _kept_scores(ssn: Session, key: tuple) -> dict | None:
    return _SCORES.memo(ssn.config, (tuple(ssn.table.dims), key))


def vsum(ssn: Session, tasks) -> np.ndarray:
    total = np.zeros(len(ssn.table.dims), dtype=np.int64)
    for t in tasks:
        total += t.vec
    return total


# ---------------------------------------------------------------- the actions


def collect_preemptors(ssn: Session) -> list[JobInfo]:
    """Jobs that may preempt or reclaim: not Pending (or Pending but a preemption candidate), valid, starving.

    With fastpath.preempt_active_jobs, the jobs of `session_jobs` only (a quiet job has no Pending task, so it
    is never one) and the test for a Pending task first (the votes asked after it read the session only)."""
    out = []
    work: RunningWork | None = None
    active = fastpath.preempt_active_jobs
    for job in sorted_by_uid(session_jobs(ssn) if active else ssn.jobs.values()):
        if job.queue not in ssn.queues:
            continue
        if active and not job.count(_PENDING):
            continue
        if job.is_pending():
            work = work or RunningWork(ssn)
            if not preemption_candidate(ssn, job, work):
                continue
        if job.podgroup is not None and job.podgroup.spec.network_topology is not None:
            continue  # as Volcano: jobs with a network topology do not preempt
        if not ssn.job_valid(job).passed:
            continue
        if not starving(ssn, job):
            continue
        if not active and not job.count(_PENDING):  # (asked first with the fast path: nothing above changes it)
            continue
        out.append(job)
    return out


def finish_job(ssn: Session, ev: Evictor, stmt: Statement, job: JobInfo) -> bool:
    """Commit the job's statement if JobPipelined holds (admitting a Pending preemptor), else discard it."""
    placed = [op for op in stmt.ops if op.kind == "pipeline"]
    evicted = [op for op in stmt.ops if op.kind == "evict"]
    try:
        if placed and ssn.job_pipelined(job):
            stmt.commit()
            if job.is_pending():
                ssn.job_enqueued(job)
                job.phase = "Inqueue"
                job.enqueued_this_session = True
            ev.committed(stmt)
            nodes = len({op.node.name for op in placed})
            if evicted:
                victims = {op.task.job for op in evicted}
                job.reason = (f"{len(placed)} pod(s) pipelined onto {nodes} node(s) freed by evicting "
                              f"{len(evicted)} pod(s) of {len(victims)} job(s) ({ev.reason}); "
                              f"waiting for them to terminate")
            else:
                job.reason = f"{len(placed)} pod(s) pipelined onto {nodes} node(s) by {ev.reason}; bound next session"
            return True
        ev.discard(stmt)
        if settled(job):
            ev.unsettled.discard(job.uid)  # nothing of it placed for good: it may be a victim again
        return False
    finally:
        for key in [k for k in ev.index if k.startswith("job/")]:
            del ev.index[key]


def _remaining_same(tasks: list[TaskInfo], task: TaskInfo) -> int:
    key = group_key(task)
    return 1 + sum(1 for t in tasks if group_key(t) == key)


@action("preempt")
def preempt(ssn: Session, arguments: dict) -> None:
    found = collect_preemptors(ssn)
    if not found:
        return  # nothing below would run: no need to index victims
    ev = Evictor(ssn, dict(arguments or {}), "preempt")
    under_request: dict[str, list[JobInfo]] = {}  # per queue its preemptors, as found
    for job in found:
        under_request.setdefault(job.queue, []).append(job)
    # Queues in QueueOrder, each one's preemptors in JobOrder.
    queues = OrderedHeap(ssn.queue_order_cmp, [ssn.queues[name] for name in under_request])
    preemptors = {name: OrderedHeap(ssn.job_order_cmp, jobs) for name, jobs in under_request.items()}

    while queues:
        queue = queues.pop()
        jobs = preemptors[queue.name]
        while jobs:
            job = jobs.pop()
            tasks = ssn.sorted_tasks([t for t in job.tasks.values() if t.status is S.PENDING])
            cross = ev.has_figures(job.queue)  # magma: across queues when a share plugin says deserved
            stmt = Statement(ssn)
            if fastpath.preempt_gang_bound and ev.cannot_pipeline(job, tasks, cross, max(1, ssn.pipeline_need(job))):
                finish_job(ssn, ev, stmt, job)  # no placement is tried: the turn could not pipeline the job
                continue
            failed: set = set()  # groups of identical tasks that found no room since the last placement
            while tasks and starving(ssn, job):
                task = tasks.pop(0)
                if task.never_preempts or group_key(task) in failed:
                    continue
                remaining = _remaining_same(tasks, task)
                if ev.place(stmt, task, job, "queue", remaining) or (
                        cross and ev.cross_entitled(queue, task) and ev.place(stmt, task, job, "cross", remaining)):
                    failed.clear()
                else:
                    failed.add(group_key(task))
            finish_job(ssn, ev, stmt, job)

        # Phase 2: within each starving job, its pending tasks against its own lower-priority tasks.
        for job in under_request.get(queue.name, []):
            if job.is_pending() or not job.count(ev.statuses):
                continue  # (without a Bound or Running task of its own, no node is a plan for it: see place)
            for task in ssn.sorted_tasks([t for t in job.tasks.values() if t.status is S.PENDING]):
                if task.never_preempts:
                    continue
                stmt = Statement(ssn)
                if not ev.place(stmt, task, job, "job"):
                    ev.discard(stmt)
                    break
                stmt.commit()
                ev.committed(stmt)
