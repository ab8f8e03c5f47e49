"""Shared arithmetic of the queue-share plugins (proportion, capacity, drf, fairshare, overcommit, sla).

Not a plugin: the registry imports this module like the others, and it registers nothing.

- `QueueTree`: the queue hierarchy from `spec.parent` (every queue hangs under `root`; a missing `root` queue
  is a virtual one, a parent that does not exist or a cycle puts the queue directly under `root`).
- Per-job figures with Volcano's exact rules: request (allocated + pending), inqueue reservation, elastic part.
- `QueueAttr` and `water_fill`: Volcano proportion's deserved computation for one set of siblings, plus magma's
  overshoot trim (see `water_fill`).
- Resource limits use the Resources convention "absent = 0"; "unlimited" is the explicit value INF, so that a
  limit of zero is never confused with no limit.
"""

from __future__ import annotations

import functools
from collections import deque
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Iterable

from magma.api.resources import CPU, MEMORY, PODS, Resources, is_bytes, scale

from ..framework import ALLOCATED, JobInfo, QueueInfo, Session, TaskInfo, TaskStatus, fastpath
from ..framework.kept import Memo

S = TaskStatus
INF = 1 << 62  # "unlimited" in a limit vector
ROOT = "root"
_UNSET: Any = object()


# ---------------------------------------------------------------- config access


def plugin_option(ssn: Session, name: str):
    """This plugin's entry in the session's tiers (None when it is not configured)."""
    for tier in ssn.tiers or ():
        for opt in tier:
            if getattr(opt, "name", None) == name:
                return opt
    return None


def plugin_flag(ssn: Session, name: str, flag: str, default: bool = False) -> bool:
    opt = plugin_option(ssn, name)
    if opt is None:
        return default
    try:
        return bool(opt.enabled(flag))
    except (ValueError, AttributeError):
        return default


def configured(ssn: Session, name: str) -> bool:
    return plugin_option(ssn, name) is not None


def typed_argument(plugin: str, arguments: dict, key: str, default: Any = _UNSET) -> Any:
    """An argument converted as the config loader converts it (numbers, durations in seconds, csv tuples),
    else `default`, else the plugin's documented default. A value the loader refuses (such a config never
    reaches a running scheduler) falls back to the default too."""
    from magma.api.config import PLUGIN_ARGUMENTS, PluginOption

    opt = PluginOption(name=plugin, arguments=dict(arguments or {}))
    try:
        return opt.argument(key) if default is _UNSET else opt.argument(key, default)
    except (ValueError, TypeError):
        if default is not _UNSET:
            return default
        table = PLUGIN_ARGUMENTS.get(plugin)
        spec = table.lookup(key) if table else None
        return spec.default if spec else None


# ---------------------------------------------------------------- resources


# Answers of no_pods and finite by the vector given (fastpath.vector_memos): both are functions of it alone, and asked
# again and again for the same few vectors (minResources, queue bounds, the reports of queue figures).
# Keyed by the amounts in their order: equal vectors may list their names in another order, which answers keep.
_NO_PODS = Memo(4096)
_FINITE = Memo(4096)


def _kept(memo: Memo, res: Resources, fn) -> Resources:
    if not fastpath.vector_memos or not isinstance(res, Resources):
        return fn(res)
    key = tuple(res._v.items())
    got = memo.get(key)
    if got is None:
        got = memo.keep(key, fn(res))
    return got


def no_pods(res: Resources) -> Resources:
    if isinstance(res, Resources) and PODS not in res._v:
        return res  # nothing to drop: the vector itself (the same amounts in the same order; vectors never change)
    return _kept(_NO_PODS, res, _no_pods)


def _no_pods(res: Resources) -> Resources:
    return (res if isinstance(res, Resources) else Resources(res)).without(PODS)


def capability_names(q: QueueInfo | None) -> set[str]:
    """The resources a queue's capability names, a zero included (`nvidia.com/gpu: 0` is a limit of zero)."""
    if q is None:
        return set()
    if q.queue is not None:
        return set(q.queue.spec.capability) - {PODS}
    return set(q.capability) - {PODS}


def limit_vector(spec: Resources, dims: Iterable[str], inherit: Resources | None = None,
                 named: Iterable[str] | None = None) -> Resources:
    """A capability as a limit over `dims`: the given amounts, INF (or the inherited limit) where not given.

    As Volcano reads a capability: cpu or memory <= 0 means unlimited; another resource named with 0 is 0."""
    named = set(spec) if named is None else set(named) | set(spec)
    out = {}
    for d in dims:
        if d not in named or (d in (CPU, MEMORY) and spec[d] <= 0):
            out[d] = inherit[d] if inherit is not None else INF  # a limit vector names every dimension
        else:
            out[d] = spec[d]
    return Resources(out)


def finite(res: Resources) -> Resources:
    """Drop unlimited dimensions (for reports)."""
    if fastpath.vector_memos and isinstance(res, Resources):
        for v in res._v.values():
            if v >= INF // 2:
                break
        else:
            return res  # none to drop: the vector itself (the same amounts in the same order; vectors never change)
        got = _FINITE_OF.get(id(res))  # the same vector as before (a queue's capability, session after session)
        if got is not None and got[0] is res:
            return got[1]
        answer = _kept(_FINITE, res, _finite)
        _FINITE_OF.keep(id(res), (res, answer))  # (holding the vector: its id stays its own)
        return answer
    return _kept(_FINITE, res, _finite)


_FINITE_OF = Memo(1024)  # id of a vector -> (the vector, finite's answer)


def _finite(res: Resources) -> Resources:
    return Resources({k: v for k, v in res.items() if v < INF // 2})


def amount(name: str, value: int) -> str:
    """A figure for reasons: memory-like resources as quantities (64Gi), others in their unit (22.4)."""
    if value >= INF // 2:
        return "unlimited"
    if is_bytes(name):
        return Resources({name: int(value)}).quantity_text(name) if value else "0"
    return f"{value / scale(name):g}"


def share(allocated: Resources, base: Resources) -> float:
    """max over the dimensions of `base` of allocated/base (Volcano's helpers.Share per dimension)."""
    best = 0.0
    have = allocated._v.get if isinstance(allocated, Resources) else allocated.get
    for k, b in base.items():
        if b <= 0:
            continue
        s = have(k, 0) / b
        if s > best:
            best = s
    return best


def dominant_share(allocated: Resources, total: Resources) -> tuple[str, float]:
    """DRF's dominant resource and share of `allocated` against the cluster `total`."""
    best, name = 0.0, ""
    have = allocated._v.get if isinstance(allocated, Resources) else allocated.get
    for k, t in total.items():
        if t <= 0:
            continue
        a = have(k, 0)
        s = a / t if t else (0.0 if a == 0 else 1.0)
        if s > best:
            best, name = s, k
    return name, best


def share_dims(ssn, extra=(), with_deserved: bool = False) -> set[str]:
    """The resources a share plugin reasons about: the cluster's, the queues' bounds, the jobs' requests."""
    dims = set(ssn.total) | set(extra)
    for q in ssn.queues.values():
        dims.update(q.guarantee)
        dims.update(q.capability)
        if with_deserved:
            dims.update(q.deserved_spec)
    index = getattr(ssn, "job_index", None)
    if index is not None:
        dims.update(index.job_dims())  # kept across sessions (fastpath.job_index)
    else:
        for job in ssn.jobs.values():
            dims.update(job.min_resources)
            dims.update(job.memo("share.dims", _task_dims))
    dims.discard(PODS)
    return dims


def _task_dims(job) -> frozenset[str]:
    out: set[str] = set()
    for t in job.tasks.values():
        out.update(t.resreq)
    return frozenset(out)


def requested_dims(req: Resources) -> list[str]:
    return [k for k, v in req.items() if v > 0 and k != PODS]


def exceeding_on(left: Resources, limit: Resources, names: Iterable[str]) -> list[str]:
    """Dimensions among `names` where left > limit (limit absent = 0)."""
    return [k for k in names if left[k] > limit[k]]


# ---------------------------------------------------------------- per-job figures (Volcano's rules)


def job_min_resources(job: JobInfo) -> Resources:
    return no_pods(job.min_resources)


def has_min_resources(job: JobInfo) -> bool:
    return job.podgroup is not None and bool(job.min_resources)


def job_request(job: JobInfo) -> Resources:
    """Allocated plus Pending tasks (Pipelined tasks are in neither, as in Volcano's proportion)."""
    return job.memo("queuetree.request", _job_request)  # once per change of the job's tasks


def _job_request(job: JobInfo) -> Resources:
    total = Resources()
    for t in job.tasks.values():
        if t.status in ALLOCATED or t.status is S.PENDING:
            total = total + t.resreq
    return total


def job_total_request(job: JobInfo) -> Resources:
    """Every task's request, whatever its status (Volcano's JobInfo.TotalRequest)."""
    total = Resources()
    for t in job.tasks.values():
        total = total + t.resreq
    return total


def allocated_task_count(job: JobInfo) -> int:
    return job.count(ALLOCATED)


def _reserved(min_res: Resources, allocated: Resources) -> Resources:
    return Resources({k: v - allocated[k] for k, v in min_res.items() if v - allocated[k] > 0})


def job_inqueue(job: JobInfo, allocated: Resources | None = None) -> Resources:
    """What an admitted job still reserves in its queue: minResources not yet allocated.

    Counted for Inqueue jobs, and for Running jobs whose allocated tasks reach minMember (Volcano)."""
    if not has_min_resources(job):
        return Resources()
    if allocated is None or allocated is job.allocated():
        return job.memo(("queuetree.inqueue", job.phase), lambda j: _job_inqueue(j, j.allocated()))
    return _job_inqueue(job, allocated)


def _job_inqueue(job: JobInfo, allocated: Resources) -> Resources:
    if job.phase == "Inqueue":
        return _reserved(job_min_resources(job), allocated)
    if job.phase == "Running" and allocated_task_count(job) >= job.min_available:
        return _reserved(job_min_resources(job), allocated)
    return Resources()


def job_elastic(job: JobInfo, allocated: Resources | None = None) -> Resources:
    """The part of the allocation above minResources (all of it when the job has none)."""
    if allocated is None or allocated is job.allocated():
        return job.memo("queuetree.elastic", lambda j: (j.allocated() - job_min_resources(j)).clamp_min_zero())
    return (allocated - job_min_resources(job)).clamp_min_zero()


# ---------------------------------------------------------------- queue tree


class QueueTree:
    """The queue hierarchy of a session. Children keep the order of `ssn.queues`."""

    @classmethod
    def of(cls, queues: dict[str, QueueInfo]) -> "QueueTree":
        """`QueueTree(queues)`, or the tree made before from queues of the same names, in the same order, with the same
        parents (all a tree reads); trees are never changed once made. With fastpath.queue_tree_kept, the last call's
        tree again for the same names and queue records (a record is never changed once made: the snapshot makes a
        new one for a Queue written since), without reading their parents."""
        if fastpath.queue_tree_kept:
            records = tuple(queues.items())
            last = _LAST_TREE[0]
            if last is not None and last[0] == records:  # (records compare by identity)
                return last[1]
        key = tuple((name, q.parent) for name, q in queues.items())
        got = _TREES.get(key)
        if got is None:
            got = _TREES.keep(key, cls(queues))
        if fastpath.queue_tree_kept:
            _LAST_TREE[0] = (records, got)
        return got

    def __init__(self, queues: dict[str, QueueInfo]):
        self.virtual_root = ROOT not in queues
        self._parent: dict[str, str | None] = {ROOT: None}
        for name, q in queues.items():
            if name == ROOT:
                continue
            parent = q.parent if q.parent in queues or q.parent == ROOT else ROOT
            self._parent[name] = parent or ROOT
        # Break cycles: a queue whose parent chain does not reach root hangs under root.
        for name in list(self._parent):
            seen = {name}
            p = self._parent[name]
            while p is not None and p != ROOT:
                if p in seen:
                    self._parent[name] = ROOT
                    break
                seen.add(p)
                p = self._parent.get(p, ROOT)
        self._ancestors: dict[str, tuple[str, ...]] = {}
        self._divergence = Memo(4097)  # divergence's answers (the tree never changes)
        self._children: dict[str, list[str]] = {n: [] for n in self._parent}
        for name in queues:
            if name != ROOT:
                self._children[self._parent[name]].append(name)

    @property
    def names(self) -> list[str]:
        return list(self._parent)

    def parent(self, name: str) -> str | None:
        return self._parent.get(name, ROOT if name != ROOT else None)

    def children(self, name: str) -> list[str]:
        return self._children.get(name, [])

    def is_leaf(self, name: str) -> bool:
        return not self._children.get(name)

    def ancestors(self, name: str) -> tuple[str, ...]:
        """Nearest first, ending with root (empty for root)."""
        got = self._ancestors.get(name)
        if got is None:
            out = []
            p = self.parent(name)
            while p is not None:
                out.append(p)
                p = self.parent(p)
            got = self._ancestors[name] = tuple(out)
        return got

    def path(self, name: str) -> tuple[str, ...]:
        """Root first, ending with the queue itself."""
        if name == ROOT:
            return (ROOT,)
        return tuple(reversed(self.ancestors(name))) + (name,)

    def top_down(self) -> list[str]:
        out, stack = [], deque([ROOT])
        while stack:
            n = stack.popleft()
            out.append(n)
            stack.extend(self.children(n))
        return out

    def divergence(self, a: str, b: str) -> tuple[str, str]:
        """The two siblings under the lowest common ancestor of a and b, on a's side and on b's side.

        When one queue is an ancestor of the other (or they are equal) the queues themselves are returned."""
        got = self._divergence.get((a, b))
        if got is None:
            got = self._divergence.keep((a, b), self._diverge(a, b))
        return got

    def _diverge(self, a: str, b: str) -> tuple[str, str]:
        pa, pb = self.path(a), self.path(b)
        i = 0
        while i < len(pa) and i < len(pb) and pa[i] == pb[i]:
            i += 1
        if i >= len(pa) or i >= len(pb):
            return a, b
        return pa[i], pb[i]

    def branch_below_lca(self, victim: str, other: str) -> list[str]:
        """The queues from `victim` up to (not including) its lowest common ancestor with `other`."""
        other_path = set(self.path(other))
        out = [victim]
        for anc in self.ancestors(victim):
            if anc in other_path:
                break
            out.append(anc)
        if victim in other_path:  # victim is an ancestor of other (or the same queue)
            return [victim]
        return out


_TREES = Memo(64)  # QueueTree.of's trees by the queues' names and parents
_LAST_TREE: list = [None]  # ((name, record) pairs, tree) of QueueTree.of's last call (fastpath.queue_tree_kept)


# ---------------------------------------------------------------- queue attributes and water-filling


@dataclass(eq=False)
class QueueAttr:
    """A queue's figures for one session (Volcano's queueAttr), for leaf and parent queues alike."""

    name: str
    weight: int = 1
    priority: int = 0
    guarantee: Resources = field(default_factory=Resources)  # own spec.guarantee
    eff_guarantee: Resources = field(default_factory=Resources)  # max(own, sum of children's)
    capability: Resources = field(default_factory=Resources)  # limit vector (INF = unlimited)
    real_capability: Resources = field(default_factory=Resources)
    deserved: Resources = field(default_factory=Resources)
    allocated: Resources = field(default_factory=Resources)
    request: Resources = field(default_factory=Resources)
    inqueue: Resources = field(default_factory=Resources)
    elastic: Resources = field(default_factory=Resources)
    floor: Resources = field(default_factory=Resources)  # what the water-fill never goes below
    share: float = 0.0
    has_jobs: bool = False

    def update_share(self) -> None:
        self.share = share(self.allocated, self.deserved)

    # The bounds as reports show them: (deserved, capability, realCapability, and `finite` of each), kept while the
    # record holds those same vectors (reports are asked for again and again, the bounds seldom change).
    _shown = None  # (not a field: a class default)

    def report(self) -> dict[str, Any]:
        deserved, capability, real = self.deserved, self.capability, self.real_capability
        shown = self._shown
        if shown is None or shown[0] is not deserved or shown[1] is not capability or shown[2] is not real:
            shown = self._shown = (deserved, capability, real, finite(deserved), finite(capability), finite(real))
        return {
            "deserved": shown[3],
            "allocated": self.allocated,
            "request": self.request,
            "inqueue": self.inqueue,
            "guarantee": self.guarantee,
            "capability": shown[4],
            "realCapability": shown[5],
            "share": self.share,
            "weight": self.weight,
        }


def _diff(new: Resources, old: Resources) -> tuple[Resources, Resources]:
    inc, dec = {}, {}
    for k in set(new) | set(old):
        d = new[k] - old[k]
        if d > 0:
            inc[k] = d
        elif d < 0:
            dec[k] = -d
    return Resources(inc), Resources(dec)


def water_fill(pool: Resources, members: list[QueueAttr], max_rounds: int = 10_000) -> None:
    """Set `deserved` of each member by Volcano proportion's loop (reference §6), then trim any overshoot.

    Per round, every queue not yet met gets remaining * weight / total weight of unmet queues, capped by its
    real capability and its request, floored at its guarantee (`floor`); it is met once its request fits or
    its deserved stops changing. Amounts are exact integers (the weighted part is rounded down).

    magma difference: Volcano's guarantee floor can push the siblings' sum above the pool (weights 1/1/1,
    guarantees 50/0/0 of 99 give 50/33/33 = 116). Where that happens on a dimension, the parts above each
    queue's floor are scaled down so that the siblings share exactly the pool (50/24.5/24.5); if the floors
    alone exceed the pool, the floors are scaled. Without overshoot the result is Volcano's, unchanged.
    """
    if fastpath.water_fill_ints:
        _fill_ints(pool, members, max_rounds)
    else:
        _fill(pool, members, max_rounds)
    _trim(pool, members)
    for m in members:
        m.update_share()


def _fill(pool: Resources, members: list[QueueAttr], max_rounds: int) -> None:
    """`water_fill`'s rounds, in Resources arithmetic."""
    remaining = pool
    met: set[int] = set()
    for m in members:
        m.deserved = Resources()
    for _ in range(max_rounds):
        weight = sum(m.weight for i, m in enumerate(members) if i not in met)
        if weight <= 0:
            break
        before = remaining
        increased, decreased = Resources(), Resources()
        for i, m in enumerate(members):
            if i in met:
                continue
            old = m.deserved
            d = old + remaining.scaled(Fraction(m.weight, weight))
            d = d.min_with(m.real_capability, "zero")
            d = d.min_with(m.request, "zero")
            d = d.max_with(m.floor)
            m.deserved = d
            if m.request.less_equal(d, "zero") or d == old:
                met.add(i)
            inc, dec = _diff(d, old)
            increased, decreased = increased + inc, decreased + dec
        remaining = (remaining + decreased - increased).clamp_min_zero()
        if remaining.is_empty() or remaining == before:
            break


def _fill_ints(pool: Resources, members: list[QueueAttr], max_rounds: int) -> None:
    """`_fill` over plain dicts of ints (fastpath.water_fill_ints): each Resources step done on the dicts the vectors
    hold (non-zero amounts, absent = 0), with the same rules for absent names and the same dropping of zeros, so
    every round gives the same amounts; only the intermediate Resources objects are not made."""
    lean = fastpath.water_fill_lean
    if lean and fastpath.water_fill_columns and _positive(pool, members):
        _fill_columns(pool, members, max_rounds)
        return
    remaining = dict(pool._v)
    n = len(members)
    met = [False] * n
    deserved: list[dict[str, int]] = [{} for _ in range(n)]
    caps = [m.real_capability._v for m in members]
    requests = [m.request._v for m in members]
    floors = [m.floor._v for m in members]
    weights = [m.weight for m in members]
    for _ in range(max_rounds):
        weight = sum(w for w, done in zip(weights, met) if not done)
        if weight <= 0:
            break
        before = remaining
        increased: dict[str, int] = {}
        decreased: dict[str, int] = {}
        for i in range(n):
            if met[i]:
                continue
            old = deserved[i]
            if lean:  # floor(v * w / W) is floor(v * num / den) for num/den = w/W in lowest terms
                num, den = weights[i], weight
            else:
                f = Fraction(weights[i], weight)
                num, den = f.numerator, f.denominator
            # old + remaining.scaled(f)
            d = dict(old)
            for k, v in remaining.items():
                part = (v * num) // den
                if part:
                    d[k] = d.get(k, 0) + part
            d = {k: v for k, v in d.items() if v}
            # .min_with(real_capability, "zero"), then .min_with(request, "zero")
            for limit in (caps[i], requests[i]):
                out = {k: (v if v < limit[k] else limit[k]) for k, v in d.items() if k in limit}
                for k, v in limit.items():
                    if k not in d and v < 0:
                        out[k] = v
                d = {k: v for k, v in out.items() if v}
            # .max_with(floor)
            fl = floors[i]
            d = {k: v for k in set(d) | set(fl) if (v := max(d.get(k, 0), fl.get(k, 0)))}  # (max_with's order)
            deserved[i] = d
            # m.request.less_equal(d, "zero") or d == old
            fits = all(v <= d[k] if k in d else v <= 0 for k, v in requests[i].items())
            if fits or d == old:
                met[i] = True
            for k in d.keys() | old.keys():
                delta = d.get(k, 0) - old.get(k, 0)
                if delta > 0:
                    increased[k] = increased.get(k, 0) + delta
                elif delta < 0:
                    decreased[k] = decreased.get(k, 0) - delta
        left = dict(remaining)
        for k, v in decreased.items():
            left[k] = left.get(k, 0) + v
        for k, v in increased.items():
            left[k] = left.get(k, 0) - v
        remaining = {k: v for k, v in left.items() if v > 0}
        if not remaining or remaining == before:
            break
    for m, d in zip(members, deserved):
        m.deserved = Resources._of(d)


def _positive(pool: Resources, members: list[QueueAttr]) -> bool:
    """Whether every amount of the pool and of the members' realCapability, request and floor is positive."""
    v = pool._v
    if v and min(v.values()) <= 0:
        return False
    for m in members:
        for v in (m.real_capability._v, m.request._v, m.floor._v):
            if v and min(v.values()) <= 0:
                return False
    return True


def _fill_columns(pool: Resources, members: list[QueueAttr], max_rounds: int) -> None:
    """`_fill_ints`'s rounds (lean) over one list of amounts per member, a column per resource (absent = 0), when
    every input amount is positive (fastpath.water_fill_columns). Then every amount stays >= 0 and each dict step is
    one step per column: the weighted part added, min with the real capability and the request (a name either lacks
    is 0), max with the floor; "met" when the request fits or nothing changed; the remaining pool plus what the
    members gave back minus what they took (their changes summed), at least 0. Only the order in which a deserved
    vector lists its resources may differ from the dict steps' (Resources compare and hash by amounts)."""
    dims = list(pool._v)
    seen = set(dims)
    inputs = [(m.real_capability._v, m.request._v, m.floor._v) for m in members]
    for vectors in inputs:
        for v in vectors:
            if not seen.issuperset(v):  # (mostly the pool's names already)
                for k in v:
                    if k not in seen:
                        seen.add(k)
                        dims.append(k)
    width = len(dims)
    remaining = [pool._v.get(k, 0) for k in dims]
    # per member: (weight, per column (real capability, request, floor))
    rows = [(m.weight, [(cap.get(k, 0), req.get(k, 0), fl.get(k, 0)) for k in dims])
            for m, (cap, req, fl) in zip(members, inputs)]
    deserved = [[0] * width for _ in members]
    unmet = list(range(len(members)))  # in member order
    for _ in range(max_rounds):
        weight = sum(rows[i][0] for i in unmet)
        if weight <= 0:
            break
        taken = [0] * width  # per column, the members' changes summed (increases minus decreases)
        still = []
        for i in unmet:
            w, limits = rows[i]
            old = deserved[i]
            new = []
            fits = True
            changed = False
            for o, r, (cap, req, floor) in zip(old, remaining, limits):
                x = o + (r * w) // weight
                if x > cap:
                    x = cap
                if x > req:
                    x = req
                if x < floor:
                    x = floor
                new.append(x)
                if req > x:
                    fits = False
                if x != o:
                    changed = True
            if changed:
                deserved[i] = new
                taken = [t + x - o for t, x, o in zip(taken, new, old)]
                if not fits:
                    still.append(i)
        unmet = still
        before = remaining
        remaining = [r - t if r > t else 0 for r, t in zip(remaining, taken)]
        if not any(remaining) or remaining == before:
            break
    for m, d in zip(members, deserved):
        m.deserved = Resources._of({k: v for k, v in zip(dims, d) if v})


def _trim(pool: Resources, members: list[QueueAttr]) -> None:
    if fastpath.water_fill_lean and not _overshoots(pool, members):
        return  # every dimension's sum fits the pool: each deserved would be rebuilt equal to itself
    dims = set()
    for m in members:
        dims.update(m.deserved)
    new = [dict(m.deserved.items()) for m in members]
    for k in dims:
        total = sum(m.deserved[k] for m in members)
        cap = max(pool[k], 0)
        if total <= cap:
            continue
        floors = [min(m.deserved[k], max(m.floor[k], 0)) for m in members]
        f = sum(floors)
        if f >= cap:
            vals = [(fl * cap) // f if f else 0 for fl in floors]
        else:
            above = [m.deserved[k] - fl for m, fl in zip(members, floors)]
            a = sum(above)
            room = cap - f
            vals = [fl + (ab * room) // a if a else fl for fl, ab in zip(floors, above)]
        for i, v in enumerate(vals):
            new[i][k] = v
    for m, d in zip(members, new):
        m.deserved = Resources(d)


# ---------------------------------------------------------------- victim ordering (Volcano's victim queue)


def victim_order(ssn: Session, tasks: list[TaskInfo]) -> list[TaskInfo]:
    """Volcano's victim order: orphans first; different queues by reverse QueueOrder; else reverse JobOrder,
    then reverse TaskOrder."""

    def cmp(a: TaskInfo, b: TaskInfo) -> int:
        ja, jb = ssn.jobs.get(a.job), ssn.jobs.get(b.job)
        if ja is None or jb is None:
            return (ja is not None) - (jb is not None)
        if ja is jb:
            return -ssn.task_order_cmp(a, b)
        if ja.queue != jb.queue and ja.queue in ssn.queues and jb.queue in ssn.queues:
            c = -ssn.queue_order_cmp(ssn.queues[ja.queue], ssn.queues[jb.queue])
            if c:
                return c
        c = -ssn.job_order_cmp(ja, jb)
        return c or -ssn.task_order_cmp(a, b)

    return sorted(tasks, key=functools.cmp_to_key(cmp))


def _overshoots(pool: Resources, members: list[QueueAttr]) -> bool:
    """Whether the members' deserved sum to more than the pool (taken as at least 0) on some dimension."""
    totals: dict[str, int] = {}
    for m in members:
        for k, v in m.deserved._v.items():
            totals[k] = totals.get(k, 0) + v
    cap = pool._v
    return any(t > max(cap.get(k, 0), 0) for k, t in totals.items())
