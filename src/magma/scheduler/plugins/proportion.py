"""proportion: weighted fair share of the cluster between queues (Volcano's proportion plugin), along the queue tree.

Per session, only queues with jobs in the session take part (and their ancestors, in a hierarchy).
For each queue:
- request   = resources of its jobs' allocated (Allocated, Binding, Bound, Running) and Pending tasks;
- allocated = resources of its jobs' allocated tasks, kept current by the event handlers;
- inqueue   = minResources not yet allocated of its Inqueue jobs (and of Running jobs whose allocated tasks
              reach minMember), plus the minResources of jobs enqueued this session;
- elastic   = the allocation of its jobs above their minResources;
- realCapability = min((pool - sum of the siblings' guarantees)+ + own guarantee, capability), where the pool
  is the cluster total for children of root and the parent's realCapability below that (capability: cpu or
  memory <= 0 and resources it does not name are unlimited);
- deserved by Volcano's water-filling between siblings (`_queuetree.water_fill`): each round gives every unmet
  queue remaining * weight / total unmet weight, capped by realCapability and request, floored at its guarantee.

Extension points: QueueOrder (higher spec.priority first, then lower share = max_r allocated_r/deserved_r),
Overused (deserved <= allocated), Allocatable and Preemptive (queue Open, allocated + request <= deserved on the
resources the task requests), Reclaimable, JobEnqueueable (queue Open; no minResources: Permit; else
minResources + allocated + inqueue - elastic <= realCapability on the resources minResources names, otherwise
Reject with an event "queue resource quota insufficient" and the figures in `job.reason`), JobEnqueued.

Hierarchy (magma; Volcano's proportion is flat): queues form a tree by Queue `spec.parent`, whichever share plugin
is configured. The root's deserved is the cluster total (capped by root's capability); each parent's deserved
is water-filled among its children that have jobs below them, by weight, with each child's request, allocation,
inqueue and elastic summed over its subtree, its guarantee at least the sum of its children's guarantees, and
its realCapability computed from its parent's. Only leaf queues hold jobs. Allocatable and JobEnqueueable check the
queue and every ancestor below root, so a team cannot take more than its department deserves; Overused and
Preemptive look at the leaf alone, so a team under a full department can still reclaim from an over-served
sibling (the department's total does not change). With every queue directly under root this is Volcano's flat
computation, number for number.

Other deliberate differences from Volcano:
- The siblings' deserved never add up to more than what they share (see `water_fill`: Volcano's guarantee floor
  can hand out more than the cluster has).
- Reclaimable: a candidate is a victim while its queue's allocation is not within its deserved (Volcano), and
  also (magma) never from a queue with `reclaimable: false`, never taking a queue below its guarantee on the
  resources the victim frees, and in a hierarchy only when the victim's branch below the lowest common ancestor
  with the reclaimer's queue is over its deserved as well.
- A job in a queue that is not a leaf is rejected at enqueue and never allocated, with the reason.

After the session `ssn.queue_shares[name]` holds each queue's deserved, allocated, request, inqueue, guarantee,
realCapability and share (the simulator's `queues[].deserved`).
"""

from __future__ import annotations

import copy
from typing import Any

from magma.api.resources import EMPTY, PODS, Resources

from ..framework import ABSTAIN, PERMIT, REJECT, EventHandler, JobInfo, QueueInfo, Session, TaskInfo, fastpath, plugin
from ..framework.kept import Memo, Tokens
from ._queuetree import (
    ROOT,
    QueueAttr,
    QueueTree,
    amount,
    capability_names,
    exceeding_on,
    has_min_resources,
    job_elastic,
    job_inqueue,
    job_min_resources,
    job_request,
    limit_vector,
    no_pods,
    requested_dims,
    share_dims,
    water_fill,
)

NAME = "proportion"


Bounds = tuple[dict[str, Resources], ...]


def queue_bounds(ssn: Session, tree: QueueTree, dims: set[str], info: dict[str, QueueInfo | None]) -> Bounds:
    """Per queue of the tree, what its spec and the cluster bound: (guarantee, capability as a limit vector,
    effective guarantee, realCapability, the floor of its deserved). None of it depends on the jobs."""
    guarantee = {n: no_pods(q.guarantee) if q else Resources() for n, q in info.items()}
    capability = {n: limit_vector(no_pods(q.capability) if q else Resources(), dims, named=capability_names(q))
                  for n, q in info.items()}

    order = tree.top_down()
    eff = {}
    for n in reversed(order):
        kids = sum((eff[c] for c in tree.children(n)), Resources())
        eff[n] = guarantee[n].max_with(kids)

    # realCapability, top-down, for every queue (children of a queue share its realCapability).
    real: dict[str, Resources] = {ROOT: ssn.total.min_with(capability[ROOT], "zero")}
    for n in order:
        kids = tree.children(n)
        if not kids:
            continue
        sum_g = sum((eff[c] for c in kids), Resources())
        free = (real[n] - sum_g).clamp_min_zero()
        for c in kids:
            real[c] = (free + eff[c]).min_with(capability[c], "zero").min_with(real[n], "zero")
    floor = {n: eff[n].min_with(real[n], "zero") for n in order}
    return guarantee, capability, eff, real, floor


# Queue bounds by their inputs (fastpath.proportion_memo): the queues' specs and the cluster seldom change.
_BOUNDS = Memo(256)


def _bounds_key(ssn: Session, tree: QueueTree, dims: set[str], info: dict[str, QueueInfo | None]) -> tuple:
    return (ssn.total, frozenset(dims), tuple(_bound_part(tree, n, q) for n, q in info.items()))


def _bound_part(tree: QueueTree, n: str, q: QueueInfo | None) -> tuple:
    """One queue's part of the bounds' key: what `queue_bounds` reads of it."""
    return (n, tree.parent(n), q.guarantee if q else None, q.capability if q else None,
            frozenset(capability_names(q)))


def bounds(ssn: Session, tree: QueueTree, dims: set[str], info: dict[str, QueueInfo | None],
           key: Any = None) -> Bounds:
    """`queue_bounds`, or what it gave for the same cluster total, resources, tree and queue specs (`key`: the
    `_bounds_key` or its `_token`)."""
    if not fastpath.proportion_memo:
        return queue_bounds(ssn, tree, dims, info)
    key = key or _bounds_key(ssn, tree, dims, info)
    got = _BOUNDS.get(key)
    if got is None:
        got = _BOUNDS.keep(key, queue_bounds(ssn, tree, dims, info))
    return got


# Whole sets of figures by everything build_attrs reads (fastpath.proportion_memo, with the job index): between
# sessions the queues' sums often come back to values seen before.
_ATTRS = Memo(1024)
_SUMMED = ("allocated", "request", "inqueue", "elastic")  # the index's sums build_attrs reads


def build_attrs(ssn: Session, tree: QueueTree) -> dict[str, QueueAttr]:
    """Every taking-part queue's figures, deserved included (top-down water-filling)."""
    attrs, key = shared_attrs(ssn, tree)
    if key is None:
        return attrs
    return {n: _copy(at) for n, at in attrs.items()}  # every field is an immutable value


def shared_attrs(ssn: Session, tree: QueueTree) -> tuple[dict[str, QueueAttr], tuple | None]:
    """`build_attrs`' figures and the key they are kept by in `_ATTRS`: then they are the kept records themselves
    (the caller copies them before changing them); with key None they are the caller's own."""
    index = getattr(ssn, "job_index", None)  # per-queue sums kept across sessions (fastpath.job_index)
    info: dict[str, QueueInfo | None] = {n: ssn.queues.get(n) for n in tree.names}
    if not fastpath.proportion_memo or index is None:
        return _build_attrs(ssn, tree, share_dims(ssn), info, index, None), None
    if fastpath.proportion_key_parts:
        dims, bkey, specs = _static_key(ssn, tree, info, index)
        sums = index.queue_sums  # (the first four of SUMS are _SUMMED)
        figures = tuple((q, *sums[q][:4]) for q in index.queue_names())
    else:
        dims = share_dims(ssn)
        bkey = _bounds_key(ssn, tree, dims, info)
        specs = tuple((q.weight, q.priority) if q else None for q in info.values())
        figures = tuple((q, *(index.queue_sum(q, f) for f in _SUMMED)) for q in index.queue_names())
    key = (bkey, specs, figures)
    got = _ATTRS.get(key)
    if got is None:
        if fastpath.proportion_skeleton and fastpath.proportion_open_lean:
            attrs = _attrs_from_skeleton(ssn, tree, dims, info, index, (bkey, specs, tuple(q for q, *_ in figures)),
                                         figures)
        else:
            attrs = _build_attrs(ssn, tree, dims, info, index, bkey)
        if fastpath.proportion_attrs_lent:
            return _ATTRS.keep(key, attrs), key
        _ATTRS.keep(key, {n: _copy(at) for n, at in attrs.items()})  # as built: the session's own change
        return attrs, None
    return got, key


# The kept figures sessions hold unchanged, by id (fastpath.proportion_attrs_lent): another session asking for the
# same ones before the holder closed or changed them gets copies.
_LENT: set[int] = set()


# The last session's tree, queue records, cluster total and resources its jobs name, and the key parts made of them
# (fastpath.proportion_key_parts).
_LAST_STATIC: list[tuple | None] = [None]


def _static_key(ssn: Session, tree: QueueTree, info: dict[str, QueueInfo | None], index) -> tuple:
    """(share_dims, the bounds key, the queues' (weight, priority)): those made for the last session when it had the
    same tree, queue records (the same objects), total and resources named by jobs."""
    last = _LAST_STATIC[0]
    records = tuple(info.values())
    if (last is not None and last[0] is tree and last[2] is ssn.total and index.dims.keys() == last[3]
            and len(last[1]) == len(records) and all(a is b for a, b in zip(last[1], records))):
        return last[4]
    parts = [_parts(tree, n, q) for n, q in info.items()]
    dims = set(ssn.total) | set()  # share_dims, the names added in the same order
    for p in parts:
        dims.update(p[2])
    dims.update(index.job_dims())
    dims.discard(PODS)
    bkey = _token((ssn.total, frozenset(dims), tuple(p[0] for p in parts)))
    got = (dims, bkey, tuple(p[1] for p in parts))
    _LAST_STATIC[0] = (tree, records, ssn.total, set(index.dims), got)
    return got


# Small ints standing for keys made of many vectors (a queue's bounds, a fill's fixed inputs), for the memos keyed by
# them (kept.Tokens): hashing an int is quicker than hashing its key again at every lookup.
_token = Tokens(1024).of


# What build_attrs' key reads of one queue record, by the record (fastpath.proportion_key_parts): a record is never
# changed once made (the snapshot makes a new one for a Queue written since), and its parent comes from the tree.
# id(record) -> (record, tree, (its part of the bounds key, (weight, priority), the resources its bounds name))
_PARTS = Memo(1025)


def _parts(tree: QueueTree, n: str, q: QueueInfo | None) -> tuple:
    got = _PARTS.get(id(q))
    if got is not None and got[0] is q and got[1] is tree:
        return got[2]
    if q is None:  # (a virtual root: not kept by id)
        return _bound_part(tree, n, None), None, ()
    parts = _bound_part(tree, n, q), (q.weight, q.priority), (*q.guarantee, *q.capability)
    _PARTS.keep(id(q), (q, tree, parts))
    return parts


def _copy(at: QueueAttr) -> QueueAttr:
    """copy.copy(at); with fastpath.proportion_open_lean by its dict, as copy.copy does for such an object."""
    if not fastpath.proportion_open_lean:
        return copy.copy(at)
    new = object.__new__(QueueAttr)
    new.__dict__.update(at.__dict__)
    return new


def _taking_part(tree: QueueTree, info: dict[str, QueueInfo | None], queues_with_jobs) -> set[str]:
    """Root, the queues with jobs that the session knows, and their ancestors."""
    taking_part = {ROOT}
    for q in queues_with_jobs:
        if q in info:
            taking_part.add(q)
            taking_part.update(tree.ancestors(q))
    return taking_part


def _blank_attr(n: str, q: QueueInfo | None, guarantee: Resources, eff: Resources, capability: Resources,
                has_jobs: bool) -> QueueAttr:
    """A queue's figures before the sums and fills (lean): its bounds, and the shared empty vector for the rest."""
    return QueueAttr(
        name=n, weight=q.weight if q else 1, priority=q.priority if q else 0,
        guarantee=guarantee, eff_guarantee=eff, capability=capability, real_capability=EMPTY,
        deserved=EMPTY, allocated=EMPTY, request=EMPTY, inqueue=EMPTY, elastic=EMPTY, floor=EMPTY,
        has_jobs=has_jobs,
    )


def _build_attrs(ssn: Session, tree: QueueTree, dims: set[str], info: dict[str, QueueInfo | None], index,
                 bkey: Any) -> dict[str, QueueAttr]:
    guarantee, capability, eff, real, floor = bounds(ssn, tree, dims, info, bkey)
    order = tree.top_down()

    jobs_by_queue: dict[str, list[JobInfo]] = {}
    if index is not None:
        jobs_by_queue = {q: [] for q in index.queue_names()}
    else:
        for job in ssn.jobs.values():
            jobs_by_queue.setdefault(job.queue, []).append(job)
    taking_part = _taking_part(tree, info, jobs_by_queue)

    lean = fastpath.proportion_open_lean
    attrs: dict[str, QueueAttr] = {}
    for n in order:
        if n not in taking_part:
            continue
        q = info[n]
        if lean:  # the shared empty vector for the figures filled in below (Resources never change)
            attrs[n] = _blank_attr(n, q, guarantee[n], eff[n], capability[n], n in jobs_by_queue)
            continue
        attrs[n] = QueueAttr(
            name=n, weight=q.weight if q else 1, priority=q.priority if q else 0,
            guarantee=guarantee[n], eff_guarantee=eff[n], capability=capability[n],
            has_jobs=n in jobs_by_queue,
        )
    for qname, jobs in jobs_by_queue.items():
        if qname not in attrs:
            continue
        if index is not None:
            alloc, req = index.queue_sum(qname, "allocated"), index.queue_sum(qname, "request")
            inq, ela = index.queue_sum(qname, "inqueue"), index.queue_sum(qname, "elastic")
        else:
            # Integer sums (Resources.sum: no intermediate vectors); per job, each figure is computed once per
            # change of its tasks (JobInfo.memo).
            alloc = Resources.sum(job.allocated() for job in jobs)
            req = Resources.sum(job_request(job) for job in jobs)
            inq = Resources.sum(job_inqueue(job) for job in jobs)
            ela = Resources.sum(job_elastic(job) for job in jobs)
        for n in (qname, *tree.ancestors(qname)):
            at = attrs[n]
            at.allocated, at.request = at.allocated + alloc, at.request + req
            at.inqueue, at.elastic = at.inqueue + inq, at.elastic + ela

    for n, at in attrs.items():
        at.real_capability = real[n]
        at.floor = floor[n]

    root = attrs[ROOT]
    root.deserved = real[ROOT]
    for n in order:
        if n not in attrs:
            continue
        members = [attrs[c] for c in tree.children(n) if c in attrs]
        if members:
            fill(attrs[n].deserved, members)
    root.update_share()
    return attrs


# What _build_attrs makes before it sums the jobs, by what that reads (fastpath.proportion_skeleton): the queue bounds'
# inputs (the tree included), the queues' weights and priorities, and the queues holding jobs.
# key -> (figures before the sums, the fills' plan: parent, children and their fixed inputs' token, top-down; the sums' plan)
_SKELETONS = Memo(256)


def _skeleton(ssn: Session, tree: QueueTree, dims: set[str], info: dict[str, QueueInfo | None],
              queues_with_jobs: tuple[str, ...], bkey: Any) -> tuple[dict[str, QueueAttr], list, list]:
    """The taking-part queues' figures before the sums (lean, as _build_attrs makes them, realCapability and floor
    set), the fills to run top-down: (parent, its taking-part children, `fill`'s `fixed` for them), and the sums to
    make: (the queues with jobs whose figures a queue adds up, in the order they are added; the queues adding up
    those same ones)."""
    guarantee, capability, eff, real, floor = bounds(ssn, tree, dims, info, bkey)
    order = tree.top_down()
    taking_part = _taking_part(tree, info, queues_with_jobs)
    attrs: dict[str, QueueAttr] = {}
    for n in order:
        if n in taking_part:
            attrs[n] = _blank_attr(n, info[n], guarantee[n], eff[n], capability[n], n in queues_with_jobs)
    for n, at in attrs.items():  # (the sums below touch other fields: setting these first changes nothing)
        at.real_capability = real[n]
        at.floor = floor[n]
    plan = []
    for n in order:
        if n in attrs:
            kids = tuple(c for c in tree.children(n) if c in attrs)
            if kids:
                # (what the fill reads of the children but their requests, fixed with the skeleton: `fill`'s fixed)
                fixed = _token(tuple((attrs[c].weight, attrs[c].real_capability, attrs[c].floor) for c in kids))
                plan.append((n, kids, fixed))
    sources: dict[str, list[str]] = {}
    for q in queues_with_jobs:
        if q in attrs:
            for n in (q, *tree.ancestors(q)):
                sources.setdefault(n, []).append(q)
    sums: dict[tuple[str, ...], list[str]] = {}
    for n, added in sources.items():
        sums.setdefault(tuple(added), []).append(n)
    return attrs, plan, list(sums.items())


def _attrs_from_skeleton(ssn: Session, tree: QueueTree, dims: set[str], info: dict[str, QueueInfo | None], index,
                         key: tuple, figures: tuple | None = None) -> dict[str, QueueAttr]:
    """`_build_attrs` with the job index, from the kept skeleton: copies of its figures, then the same sums, root's
    deserved and fills in the same order. `figures`: per queue with jobs (queue, its four sums), as the key of the
    whole figures holds them (else read from the index)."""
    got = _SKELETONS.get(key)
    if got is None:
        got = _SKELETONS.keep(key, _skeleton(ssn, tree, dims, info, key[2], key[0]))
    skeleton, plan, sums = got
    attrs = {n: _copy(at) for n, at in skeleton.items()}
    if figures is not None:
        own = {q: vs for q, *vs in figures}
    else:
        own = {q: [index.queue_sum(q, f) for f in _SUMMED] for q in key[2]}
    # Each queue's four figures: those of the queues with jobs at or below it, added one by one (in the order of
    # `key[2]`) to the skeleton's empty ones. Queues adding up the same queues get the same vectors, made once: one
    # queue's own (empty + v is v), or several summed in plain dicts, without a vector per addition.
    for added, queues in sums:
        if len(added) == 1:
            alloc, req, inq, ela = own[added[0]]
        else:
            alloc, req, inq, ela = _summed([own[q] for q in added])
        for n in queues:
            at = attrs[n]  # (vectors never change: queues may share them)
            at.allocated, at.request, at.inqueue, at.elastic = alloc, req, inq, ela
    root = attrs[ROOT]
    root.deserved = root.real_capability
    for n, kids, fixed in plan:
        fill(attrs[n].deserved, [attrs[c] for c in kids], fixed)
    root.update_share()
    return attrs


def _summed(parts: list) -> list[Resources]:
    """Per figure, the parts' vectors added one by one from the empty vector, with Resources.__add__'s result: the
    same amounts, names in the same order, zeros dropped. (The first part is copied as it is: a vector holds no
    zeros, and adding it to the empty one keeps its names in their order.)"""
    acc = [dict(v._v) for v in parts[0]]
    for vectors in parts[1:]:
        for into, v in zip(acc, vectors):
            get = into.get
            for k, q in v._v.items():
                n = get(k, 0) + q
                if n:
                    into[k] = n
                else:
                    del into[k]  # (present: q is not zero)
    return [Resources._of(d) for d in acc]


# Water-fill results by their inputs (fastpath.proportion_memo): between sessions the queues' figures often come back
# to values seen before (in the simulator, 5 sessions in 6 repeat an earlier fill), and a fill costs rounds of
# Fraction arithmetic per queue.
_FILLS = Memo(4096)


def fill(pool: Resources, members: list[QueueAttr], fixed: int | None = None) -> None:
    """`water_fill`, or the deserved it gave for the same pool and the same members' weights, real capabilities,
    requests and floors (everything it reads). `fixed`: the `_token` of the members' (weight, real capability, floor)
    in order, when the caller has it: then only their requests are added to the key."""
    if not fastpath.proportion_memo:
        water_fill(pool, members)
        return
    if fixed is not None:
        key = (pool, fixed, tuple([m.request for m in members]))
    else:
        key = (pool, tuple((m.weight, m.real_capability, m.request, m.floor) for m in members))
    got = _FILLS.get(key)
    if got is None:
        water_fill(pool, members)
        _FILLS.keep(key, tuple(m.deserved for m in members))
        return
    for m, deserved in zip(members, got):
        m.deserved = deserved
        m.update_share()


@plugin(NAME)
class ProportionPlugin:
    # Its queue order reads only allocations and shares, which change by allocate/deallocate events
    # (Session.queue_order_cmp_memo).
    queue_order_follows_placements = True
    _kept_as: tuple | None = None  # (see on_session_open)

    def __init__(self, arguments: dict | None = None):
        self.arguments = dict(arguments or {})
        self.attrs: dict[str, QueueAttr] = {}
        self._wanted = Memo(4097)  # request -> the (resource, amount) pairs it asks for

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.tree = QueueTree.of(ssn.queues)
        attrs, key = shared_attrs(ssn, self.tree)
        self._kept_as = None  # the key of the kept figures this session holds, until it changes them
        if key is not None:
            if id(attrs) in _LENT:  # (another session holds them: this one gets its own)
                attrs = {n: _copy(at) for n, at in attrs.items()}
            else:
                _LENT.add(id(attrs))
                self._kept_as = key
        self.attrs = attrs
        ssn.add_fns(NAME, {
            "queue_order": self.queue_order,
            "overused": self.overused,
            "allocatable": self.allocatable,
            "preemptive": self.preemptive,
            "reclaimable": lambda actor, cands: (self.reclaim_victims(actor, cands), False),
            "job_enqueueable": self.job_enqueueable,
            "job_enqueued": self.job_enqueued,
        })
        ssn.add_event_handler(EventHandler(allocate=self._on_allocate, deallocate=self._on_deallocate))

    # ---------------------------------------------------------------- helpers
    def chain(self, queue: str) -> list[QueueAttr]:
        """The queue and its ancestors below root that take part, nearest first."""
        return list(self._chain(queue))

    _chains: "dict[str, tuple[QueueAttr, ...]] | None" = None  # chain()'s answers (the taking-part queues are fixed)

    def _chain(self, queue: str) -> tuple[QueueAttr, ...]:
        chains = self._chains
        if chains is None:
            chains = self._chains = {}
        got = chains.get(queue)
        if got is None:
            got = chains[queue] = tuple(
                self.attrs[n] for n in (queue, *self.tree.ancestors(queue)) if n in self.attrs and n != ROOT)
        return got

    _paths: "dict[str, list[QueueAttr]] | None" = None  # per queue: its attrs and its ancestors', root included

    def _path(self, queue: str) -> list[QueueAttr]:
        paths = self._paths
        if paths is None:
            paths = self._paths = {}
        got = paths.get(queue)
        if got is None:
            got = paths[queue] = [self.attrs[n] for n in (queue, *self.tree.ancestors(queue)) if n in self.attrs]
        return got

    def _own(self) -> None:
        """Before the session's first change to its figures: when they are the kept ones, the memo keeps copies of them
        as they are (fastpath.proportion_attrs_lent) and the session goes on with its records (others may hold them)."""
        key, self._kept_as = self._kept_as, None
        if key is None:
            return
        if _ATTRS.get(key) is self.attrs:
            _ATTRS[key] = {n: _copy(at) for n, at in self.attrs.items()}
        _LENT.discard(id(self.attrs))

    def _move(self, task: TaskInfo, sign: int) -> None:
        job = self.ssn.jobs.get(task.job)
        if job is None or job.queue not in self.attrs:
            return
        if self._kept_as is not None:
            self._own()
        req = task.resreq._v
        changes = req.items() if sign > 0 else [(k, -q) for k, q in req.items()]
        for at in self._path(job.queue):
            # at.allocated +/- the request, in plain ints (as Resources arithmetic gives it: zeros dropped)
            v = dict(at.allocated._v)
            for k, q in changes:
                n = v.get(k, 0) + q
                if n:
                    v[k] = n
                else:
                    del v[k]  # (it was -q)
            at.allocated = Resources._of(v)
            # at.update_share(), over the new dict: share() is max over deserved's dimensions of allocated/deserved
            best = 0.0
            for k, b in at.deserved._v.items():
                if b > 0:
                    x = v.get(k, 0) / b
                    if x > best:
                        best = x
            at.share = best

    def _on_allocate(self, task: TaskInfo) -> None:
        self._move(task, 1)

    def _on_deallocate(self, task: TaskInfo) -> None:
        self._move(task, -1)

    # ---------------------------------------------------------------- queue order and limits
    def queue_order(self, a: QueueInfo, b: QueueInfo) -> int:
        if a.priority != b.priority:
            return -1 if a.priority > b.priority else 1
        x, y = self.tree.divergence(a.name, b.name)
        ax, by = self.attrs.get(x), self.attrs.get(y)
        if ax is None or by is None:
            return 0
        return (ax.share > by.share) - (ax.share < by.share)

    def overused(self, queue: QueueInfo) -> bool:
        """The leaf alone: a team whose department is full may still reclaim from a sibling team."""
        at = self.attrs.get(queue.name)
        return at is not None and at.deserved.less_equal(at.allocated, "zero")

    def not_allocatable(self, queue: QueueInfo, task: TaskInfo) -> str | None:
        """Why `task` may not be allocated in `queue` now (None when it may), with the figures."""
        if queue.state != "Open":
            return f"queue {queue.name} is {queue.state}, not Open"
        if not self.tree.is_leaf(queue.name):
            return f"queue {queue.name} is not a leaf queue; only leaf queues hold jobs"
        req = task.resreq
        dims = requested_dims(req)
        wanted = [(r, req[r]) for r in dims]
        for at in self._chain(queue.name):
            alloc, deserved = at.allocated, at.deserved
            have, limit = alloc._v.get, deserved._v.get  # the common case in plain ints, without the future sum
            if all(have(r, 0) + q <= limit(r, 0) for r, q in wanted):
                continue
            bad = exceeding_on(alloc + req, deserved, dims)
            if bad:
                return f"queue {at.name}: " + ", ".join(
                    f"{r} deserved {amount(r, at.deserved[r])}, allocated {amount(r, at.allocated[r])}, "
                    f"task needs {amount(r, task.resreq[r])}" for r in bad)
        return None

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """`not_allocatable(queue, task) is None`, without making the message (asked at every placement)."""
        if queue.state != "Open" or not self.tree.is_leaf(queue.name):
            return False
        wanted = self._wanted_of(task.resreq)
        for at in self._chain(queue.name):
            have, limit = at.allocated._v.get, at.deserved._v.get
            for r, q in wanted:
                if have(r, 0) + q > limit(r, 0):
                    return False
        return True

    def _wanted_of(self, req: Resources) -> list[tuple[str, int]]:
        """The (resource, amount) pairs a request asks for, pods left out (kept per request)."""
        wanted = self._wanted.get(req)
        if wanted is None:
            wanted = self._wanted.keep(req, [(r, q) for r, q in req.items() if q > 0 and r != PODS])
        return wanted

    def placements_left(self, queue: QueueInfo, task: TaskInfo, own_level_only: bool = False) -> int | None:
        """How many more tasks with `task`'s request Allocatable allows in `queue` while allocations only grow
        (Session.allocatable_left): the least, over the queue and its ancestors below root (the queue alone with
        `own_level_only`) and the resources the task asks for, of deserved less allocated in such requests. Exact
        over the whole path: each placement adds the request at every level. None: no bound."""
        if queue.state != "Open" or not self.tree.is_leaf(queue.name):
            return 0
        wanted = self._wanted_of(task.resreq)
        levels = self._chain(queue.name)  # (the path below root)
        if own_level_only:
            levels = [at for at in levels if at.name == queue.name]
        if not wanted or not levels:
            return None
        least = None  # (the least over the levels and resources, in plain loops: asked at every job turn)
        for at in levels:
            deserved, allocated = at.deserved._v.get, at.allocated._v.get
            for r, q in wanted:
                n = (deserved(r, 0) - allocated(r, 0)) // q
                if least is None or n < least:
                    least = n
        return max(0, least)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Whether the queue may reclaim for `task`: Open, a leaf, and within its own deserved with the task.

        Ancestors are not checked: reclaiming from a sibling leaves the parent's allocation unchanged, and
        Reclaimable only gives victims from a branch that is over its deserved."""
        if queue.state != "Open" or not self.tree.is_leaf(queue.name):
            return False
        at = self.attrs.get(queue.name)
        if at is None:
            return False
        return not exceeding_on(at.allocated + task.resreq, at.deserved, requested_dims(task.resreq))

    # ---------------------------------------------------------------- reclaim
    def reclaim_victims(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        ssn = self.ssn
        rjob = ssn.jobs.get(reclaimer.job)
        rqueue = rjob.queue if rjob is not None else None
        running: dict[str, Resources] = {}

        def alloc(n: str) -> Resources:
            if n not in running:
                running[n] = self.attrs[n].allocated
            return running[n]

        victims = []
        for t in candidates:
            job = ssn.jobs.get(t.job)
            if job is None or job.queue not in self.attrs:
                continue
            leaf = job.queue
            names = self.tree.branch_below_lca(leaf, rqueue) if rqueue in self.attrs else [leaf]
            names = [n for n in names if n in self.attrs and n != ROOT]
            if any(ssn.queues.get(n) is not None and not ssn.queues[n].reclaimable for n in names):
                continue
            if alloc(leaf).less_equal(self.attrs[leaf].deserved, "zero"):
                continue
            top = names[-1]
            if top != leaf and alloc(top).less_equal(self.attrs[top].deserved, "zero"):
                continue
            dims = requested_dims(t.resreq)
            if any(alloc(n)[r] - t.resreq[r] < self.attrs[n].guarantee[r]
                   for n in names for r in dims if self.attrs[n].guarantee[r] > 0):
                continue
            for n in names:
                running[n] = alloc(n) - t.resreq
            victims.append(t)
        return victims

    # ---------------------------------------------------------------- enqueue
    def job_enqueueable(self, job: JobInfo) -> int:
        ssn = self.ssn
        queue = ssn.queues.get(job.queue)
        if queue is None:
            return ABSTAIN
        if queue.state != "Open":
            job.reason = f"queue {queue.name} is {queue.state}, not Open"
            return REJECT
        if not self.tree.is_leaf(queue.name):
            job.reason = f"queue {queue.name} is not a leaf queue; only leaf queues hold jobs"
            return REJECT
        if not has_min_resources(job):
            return PERMIT
        need = job_min_resources(job)
        chain = self._chain(queue.name)
        verdict = quota_verdict(chain, need)
        if verdict:
            job.reason, event = verdict
            ssn.record_event("Normal", "Unschedulable", "PodGroup", job.key, event)
            return REJECT
        return PERMIT

    def job_enqueued(self, job: JobInfo) -> None:
        if not has_min_resources(job) or job.queue not in self.attrs:
            return
        if self._kept_as is not None:
            self._own()
        need = job_min_resources(job)
        for n in (job.queue, *self.tree.ancestors(job.queue)):
            at = self.attrs.get(n)
            if at is not None:
                at.inqueue = at.inqueue + need

    # ---------------------------------------------------------------- close
    def report(self) -> dict[str, dict[str, Any]]:
        return {n: at.report() for n, at in self.attrs.items()
                if not (n == ROOT and self.tree.virtual_root)}

    def report_of(self, name: str) -> dict[str, Any] | None:
        """`report()`'s entry for one queue (None when it has none): reasons ask for a few queues at a time."""
        at = self.attrs.get(name)
        if at is None or (name == ROOT and self.tree.virtual_root):
            return None
        return at.report()

    def on_session_close(self, ssn: Session) -> None:
        if self._kept_as is not None:
            _LENT.discard(id(self.attrs))  # unchanged: given back
        shares = getattr(ssn, "queue_shares", None)
        if not isinstance(shares, dict):
            shares = ssn.queue_shares = {}
        shares.update(self.report())


# Refusals by everything their texts read (fastpath.enqueue_verdicts_kept): the refusing queue's name and, per resource
# it refuses (in the order the reason lists them), the job's need and the queue's four figures. A job waiting for room
# is refused again with the same figures session after session.
_VERDICTS = Memo(4096)  # key -> (reason, event text)


def quota_verdict(chain: list[QueueAttr], need: Resources) -> tuple[str, str] | tuple[()]:
    """The first queue of `chain` (nearest first) whose realCapability `need` would exceed next to its allocation
    and reservations: (the job's reason, the event's message); () when none."""
    amounts = need._v
    dims = requested_dims(need)
    for at in chain:
        # exceeding_on(need + allocated + inqueue - elastic, realCapability, dims), in plain ints per resource
        alloc, inq, ela, real = at.allocated._v, at.inqueue._v, at.elastic._v, at.real_capability._v
        bad = [k for k in dims
               if amounts[k] + alloc.get(k, 0) + inq.get(k, 0) - ela.get(k, 0) > real.get(k, 0)]
        if bad:
            if not fastpath.enqueue_verdicts_kept:
                return refusal(at, need, bad)
            key = (at.name, tuple([(k, amounts[k], alloc.get(k, 0), inq.get(k, 0), ela.get(k, 0), real.get(k, 0))
                                   for k in bad]))
            got = _VERDICTS.get(key)
            if got is None:
                got = _VERDICTS.keep(key, refusal(at, need, bad))
            return got
    return ()


def refusal(at: QueueAttr, need: Resources, bad: list[str]) -> tuple[str, str]:
    """(the job's reason, the event's message) for a queue refusing `need` on the resources `bad`."""
    reason = quota_reason(at, need, bad)
    return reason, ("queue resource quota insufficient: " + ", ".join(f"insufficient {r}" for r in bad)
                    + f" ({reason})")


def quota_reason(at: QueueAttr, need: Resources, bad: list[str]) -> str:
    """`queue team-cv: nvidia.com/gpu real capability 96, allocated 96, inqueue 16, job needs 16 more`."""
    parts = []
    for r in bad:
        text = (f"{r} real capability {amount(r, at.real_capability[r])}, allocated {amount(r, at.allocated[r])}, "
                f"inqueue {amount(r, at.inqueue[r])}")
        if at.elastic[r]:
            text += f", elastic {amount(r, at.elastic[r])}"
        parts.append(text + f", job needs {amount(r, need[r])} more")
    return f"queue {at.name}: " + "; ".join(parts)
