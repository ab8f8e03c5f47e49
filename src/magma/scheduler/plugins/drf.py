"""drf: dominant resource fairness between jobs (Volcano's drf plugin).

A job's share is max over the cluster's resources r of allocated_r / total_r (its dominant share).

- JobOrder: lower share first.
- Preemptable: with ls = share of (preemptor's job allocation + the preemptor's request) and, per candidate,
  rs = share of (its job's allocation - the candidates of that job taken so far, this one included), the
  candidate is a victim when ls < rs or |ls - rs| <= 1e-6.
- Event handlers keep every job's allocation and share current as the session allocates and evicts.

Hierarchical DRF (Volcano's HDRF) is on when the drf entry has `enableHierarchy: true` and proportion is not
configured: queues are placed in a tree by their annotations `volcano.sh/hierarchy` ("root/eng/ml") and
`volcano.sh/hierarchy-weights` ("1/2/8", weights below 1 read as 1); jobs are the leaves. A parent's allocation
is its children's allocations scaled to the smallest dominant share among its unsaturated children (saturated
children count as they are); a job is saturated when it holds all it asked for on some resource or asks for
a resource nobody can get more of. QueueOrder compares the two queues' paths level by level (unsaturated first,
then lower share/weight); Reclaimable keeps a candidate when, after moving the resources, the reclaimer's queue
still orders before the candidate's.

When proportion is configured too (the seed's §11 config puts drf with enableHierarchy beside proportion, which
Volcano refuses to load), magma reads the config as the loader's warning says: proportion shares queues along
Queue spec.parent, drf only orders jobs and chooses preemption victims, and the flag is ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from magma.api.resources import EMPTY, Resources

from ..framework import PREEMPTABLE, EventHandler, JobInfo, QueueInfo, Session, TaskInfo, fastpath, plugin
from ._queuetree import configured, dominant_share, job_total_request, plugin_flag

NAME = "drf"
SHARE_DELTA = 1e-6
HIERARCHY_ANNOTATION = "volcano.sh/hierarchy"
WEIGHTS_ANNOTATION = "volcano.sh/hierarchy-weights"


def hdrf_enabled(ssn: Session) -> bool:
    return ssn.config_fact("drf.hierarchy", _hdrf_configured)


def _hdrf_configured(ssn: Session) -> bool:
    return plugin_flag(ssn, NAME, "enableHierarchy") and not configured(ssn, "proportion")


# ---------------------------------------------------------------- hierarchical DRF tree (float arithmetic, as Volcano)


Vec = dict[str, float]


def _vec(res: Resources) -> Vec:
    return {k: float(v) for k, v in res.items()}


def _fshare(alloc: Vec, total: Resources) -> tuple[str, float]:
    best, name = 0.0, ""
    for k, t in total.items():
        if t <= 0:
            continue
        s = alloc.get(k, 0.0) / t
        if s > best:
            best, name = s, k
    return name, best


@dataclass(eq=False)
class HNode:
    name: str
    weight: float = 1.0
    allocated: Vec = field(default_factory=dict)
    share: float = 0.0
    dominant: str = ""
    saturated: bool = False
    request: Vec | None = None  # jobs only
    children: dict[str, "HNode"] | None = None  # None for a job

    def child(self, name: str) -> "HNode | None":
        return (self.children or {}).get(name)


def _queue_path(queue: QueueInfo | None) -> tuple[list[str], list[str]]:
    ann = queue.queue.annotations if queue is not None and queue.queue is not None else {}
    return ann.get(HIERARCHY_ANNOTATION, "").split("/"), ann.get(WEIGHTS_ANNOTATION, "").split("/")


def _weight(ws: list[str], i: int) -> float:
    try:
        w = float(ws[i])
    except (IndexError, ValueError):
        w = 0.0
    return w if w >= 1 else 1.0


def _saturated(alloc: Vec, request: Vec, demanding: set[str]) -> bool:
    for k, a in alloc.items():
        if a < 0.1:
            continue
        r = request.get(k, 0.0)
        if a != 0 and r != 0 and a >= r:
            return True
        if k not in demanding and r != 0:
            return True
    return False


def build_hdrf(ssn: Session, allocs: dict[str, Resources], total: Resources, total_allocated: Resources) -> HNode:
    """The HDRF tree for the given job allocations, with every node's share and saturation computed."""
    root = HNode("root", children={})
    for job in ssn.jobs.values():
        paths, weights = _queue_path(ssn.queues.get(job.queue))
        node = root
        for i in range(1, len(paths)):
            nxt = node.children.get(paths[i])
            if nxt is None:
                nxt = node.children[paths[i]] = HNode(paths[i], weight=_weight(weights, i), children={})
            node = nxt
        alloc = _vec(allocs.get(job.uid, Resources()))
        dom, s = _fshare(alloc, total)
        node.children[job.uid] = HNode(job.uid, 1.0, alloc, s, dom, request=_vec(job_total_request(job)))
    demanding = {k for k, t in total.items() if total_allocated[k] < t}
    _update(root, demanding, total)
    return root


def _update(node: HNode, demanding: set[str], total: Resources) -> None:
    if node.children is None:
        node.saturated = _saturated(node.allocated, node.request or {}, demanding)
        return
    mdr = 1.0
    for c in node.children.values():
        _update(c, demanding, total)
        if c.share != 0 and not c.saturated:
            _, s = _fshare(c.allocated, total)
            mdr = min(mdr, s)
    alloc: Vec = {}
    saturated = True
    for c in node.children.values():
        if not c.saturated:
            saturated = False
        if c.share != 0:
            factor = 1.0 if c.saturated else mdr / c.share
            for k, v in c.allocated.items():
                alloc[k] = alloc.get(k, 0.0) + v * factor
    node.allocated = alloc
    node.dominant, node.share = _fshare(alloc, total)
    node.saturated = saturated


def compare_queues(root: HNode, left: QueueInfo, right: QueueInfo) -> float:
    """Negative when `left` should be served first (Volcano's compareQueues)."""
    lp, _ = _queue_path(left)
    rp, _ = _queue_path(right)
    ln: HNode | None = root
    rn: HNode | None = root
    depth = min(len(lp), len(rp))
    for i in range(depth):
        lsat = ln.saturated if ln is not None else False
        rsat = rn.saturated if rn is not None else False
        if not lsat and rsat:
            return -1.0
        if lsat and not rsat:
            return 1.0
        ls = ln.share / ln.weight if ln is not None else 0.0
        rs = rn.share / rn.weight if rn is not None else 0.0
        if ls != rs:
            return ls - rs
        if i < depth - 1:
            ln = ln.child(lp[i + 1]) if ln is not None else None
            rn = rn.child(rp[i + 1]) if rn is not None else None
    return 0.0


def _rem_share(rem: dict[str, int], totals: list[tuple[str, int]]) -> float:
    """max over the cluster's resources of remaining / total (`totals`: name and amount pairs), in plain ints."""
    best = 0.0
    for k, v in totals:
        s = rem.get(k, 0) / v
        if s > best:
            best = s
    return best


def _bound_shares(job: JobInfo, alloc: Resources, totals: list[tuple[str, int]]) -> tuple[float, float]:
    """The share of the job's allocation, and what is left of it after evicting every Bound and Running task."""
    rem = dict(alloc.items())
    s0 = _rem_share(rem, totals)
    for t in job.tasks.values():
        if t.status in PREEMPTABLE:
            for k, v in t.resreq.items():
                rem[k] = rem.get(k, 0) - v
    return s0, _rem_share(rem, totals)


# ---------------------------------------------------------------- the plugin


@plugin(NAME)
class DrfPlugin:
    # Its queue order reads only allocations and shares, which change by allocate/deallocate events
    # (Session.queue_order_cmp_memo).
    queue_order_follows_placements = True

    def __init__(self, arguments: dict | None = None):
        self.arguments = dict(arguments or {})
        self.allocated: dict[str, Resources] = {}
        self.shares: dict[str, float] = {}
        self.total = self.total_allocated = EMPTY  # (set at open; vectors never change: the one empty one)
        self.hierarchy = False
        self._tree: HNode | None = None

    # -- shares
    def share_of(self, res: Resources) -> float:
        return dominant_share(res, self.total)[1]

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.total = total = ssn.total
        self._totals = [(k, t) for k, t in total.items() if t > 0]  # what dominant_share divides by
        self._vote_memo: dict[tuple, tuple] = {}  # (job, request) -> (the job's allocation, its share with it)
        index = getattr(ssn, "job_index", None)
        if index is not None and index.total == total:
            # every job's allocation and share, kept across sessions (fastpath.job_index)
            self.allocated, self.shares = dict(index.allocated), dict(index.shares)
            self.total_allocated = index.total_sum("allocated")
        else:
            allocated, shares = self.allocated, self.shares
            for uid, job in ssn.jobs.items():
                a = allocated[uid] = job.allocated()
                # the share, once per change of the job's tasks (and of the cluster's total)
                shares[uid] = job.memo(("drf.share", total), lambda j: self.share_of(a))
            self.total_allocated = Resources.sum(allocated.values())
        self.hierarchy = hdrf_enabled(ssn)

        def vote(actor: TaskInfo, cands: list[TaskInfo]) -> tuple[list[TaskInfo], bool]:
            return self.victims(actor, cands), False

        vote.job_bounds = self.job_bounds  # type: ignore[attr-defined]
        vote.job_bounds_key = self.job_bounds_key  # type: ignore[attr-defined]
        ssn.add_fn("preemptable", NAME, vote)
        ssn.add_fn("job_order", NAME, self.job_order)
        if self.hierarchy:
            ssn.add_fn("queue_order", NAME, self.queue_order)
            ssn.add_fn("reclaimable", NAME, lambda actor, cands: (self.hdrf_victims(actor, cands), False))
        ssn.add_event_handler(EventHandler(allocate=self._on_allocate, deallocate=self._on_deallocate))

    # The sum of all jobs' allocations, read by hierarchical DRF only: events add to a plain dict of ints, folded
    # into the Resources when it is read.
    @property
    def total_allocated(self) -> Resources:
        delta = self._total_delta
        if delta:
            self._total = self._total + Resources(delta)
            self._total_delta = {}
        return self._total

    @total_allocated.setter
    def total_allocated(self, value: Resources) -> None:
        self._total = value
        self._total_delta: dict[str, int] = {}

    def _on_allocate(self, task: TaskInfo) -> None:
        self._move(task, 1)

    def _on_deallocate(self, task: TaskInfo) -> None:
        self._move(task, -1)

    def _move(self, task: TaskInfo, sign: int) -> None:
        uid = task.job
        alloc = self.allocated.get(uid)
        if alloc is None:
            return
        alloc = self.allocated[uid] = alloc + task.resreq if sign > 0 else alloc - task.resreq
        self.shares[uid] = _rem_share(alloc._v, self._totals)  # share_of(alloc), in plain ints
        delta = self._total_delta
        for k, q in task.resreq._v.items():
            delta[k] = delta.get(k, 0) + sign * q
        self._tree = None

    # -- extension functions
    def job_order(self, a: JobInfo, b: JobInfo) -> int:
        sa, sb = self.shares.get(a.uid, 0.0), self.shares.get(b.uid, 0.0)
        return (sa > sb) - (sa < sb)

    def job_order_key(self, job: JobInfo) -> float:
        """`job_order` as a sort key (Session.job_order_key)."""
        return self.shares.get(job.uid, 0.0)

    def _preemptor_share(self, preemptor: TaskInfo, mine: Resources) -> float:
        """The share of the preemptor's job with the preemptor placed (`mine`: its job's allocation): kept per job
        and request while the job's allocation is the same object (asked for every node a preemptor looks at; the
        total is the session's)."""
        key = (preemptor.job, preemptor.resreq)
        got = self._vote_memo.get(key) if fastpath.drf_vote_bound else None
        if got is None or got[0] is not mine:
            got = (mine, self.share_of(mine + preemptor.resreq))
            if fastpath.drf_vote_bound:
                self._vote_memo[key] = got
        return got[1]

    def job_bounds(self, preemptor: TaskInfo, jobs: list[JobInfo]) -> list[tuple[bool, bool]]:
        """What `victims` may give of each job (Session.victim_job_bounds). A candidate is given when the share its
        job keeps after the candidates of that job taken so far is not below the preemptor's (within SHARE_DELTA);
        evicting only lowers a share, so no task is given when the whole allocation's share is below, and not
        every Bound and Running task when the share left after taking all of them is (the last of them offered
        leaves its job at most that)."""
        mine = self.allocated.get(preemptor.job)
        if mine is None:
            return [(False, False)] * len(jobs)
        ls, totals = self._preemptor_share(preemptor, mine), self._totals
        allocated, total = self.allocated, self.total
        out = []
        for job in jobs:
            alloc = allocated.get(job.uid)
            if alloc is None:
                out.append((False, False))
                continue
            # The two shares, once per change of the job's tasks, allocation and the cluster's total.
            s0, s_all = job.memo(("drf.job_bound", alloc, total), lambda j: _bound_shares(j, alloc, totals))
            # given when the preemptor's share is below or within SHARE_DELTA (victims)
            out.append((ls < s0 or abs(ls - s0) <= SHARE_DELTA, ls < s_all or abs(ls - s_all) <= SHARE_DELTA))
        return out

    def job_bounds_key(self, preemptor: TaskInfo) -> tuple:
        """What `job_bounds` reads besides each job's tasks (Session.victim_job_bounds): the preemptor job's
        allocation and the preemptor's request (its share with it placed), and the cluster's total. A job's
        allocation here is that of its tasks (kept with them by events and the job index) for the jobs of the
        session, the ones it is asked about."""
        return (NAME, self.allocated.get(preemptor.job), preemptor.resreq, self.total)

    def victims(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        mine = self.allocated.get(preemptor.job)
        if mine is None:
            return []
        ls, totals = self._preemptor_share(preemptor, mine), self._totals
        remaining: dict[str, dict[str, int]] = {}
        refused: set[str] = set()
        bound = fastpath.drf_vote_bound
        out = []
        for t in candidates:
            rem = remaining.get(t.job)
            if rem is None:
                if t.job in refused:
                    continue
                alloc = self.allocated.get(t.job)
                if alloc is None:
                    continue
                rem = dict(alloc.items())
                if bound:
                    # Evicting only lowers a job's share (requests are not negative): when its whole allocation's
                    # share is already refused, so is every share left after evicting any of its tasks (and once
                    # one of its tasks is refused, so are the ones offered after it).
                    s0 = _rem_share(rem, totals)
                    if not (ls < s0 or abs(ls - s0) <= SHARE_DELTA) and s0 < ls:
                        refused.add(t.job)
                        continue
                remaining[t.job] = rem
            for k, v in t.resreq.items():
                rem[k] = rem.get(k, 0) - v
            rs = _rem_share(rem, totals)
            if ls < rs or abs(ls - rs) <= SHARE_DELTA:
                out.append(t)
            elif bound:  # the job's later tasks leave it a share no higher: refused too
                del remaining[t.job]
                refused.add(t.job)
        return out

    def tree(self) -> HNode:
        if self._tree is None:
            self._tree = build_hdrf(self.ssn, self.allocated, self.total, self.total_allocated)
        return self._tree

    def queue_order(self, a: QueueInfo, b: QueueInfo) -> int:
        c = compare_queues(self.tree(), a, b)
        return (c > 0) - (c < 0)

    def hdrf_victims(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        ssn = self.ssn
        ljob = ssn.jobs.get(reclaimer.job)
        lqueue = ssn.queues.get(ljob.queue) if ljob is not None else None
        if lqueue is None or ljob.uid not in self.allocated:
            return []
        allocs = dict(self.allocated)
        allocs[ljob.uid] = allocs[ljob.uid] + reclaimer.resreq
        total_alloc = self.total_allocated + reclaimer.resreq
        out = []
        for t in candidates:
            rjob = ssn.jobs.get(t.job)
            rqueue = ssn.queues.get(rjob.queue) if rjob is not None else None
            if rqueue is None or rjob.uid not in allocs:
                continue
            trial = dict(allocs)
            trial[rjob.uid] = trial[rjob.uid] - t.resreq
            root = build_hdrf(ssn, trial, self.total, total_alloc - t.resreq)
            if compare_queues(root, lqueue, rqueue) < 0:
                out.append(t)
        return out

    def on_session_close(self, ssn: Session) -> None:
        ssn.job_shares = dict(self.shares)  # for metrics (volcano_job_share)
