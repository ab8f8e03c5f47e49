"""Session-wide, vectorised views of nodes and placed pods, shared by predicates and nodeorder.

Not a plugin (the registry imports it and it registers nothing). `NodeIndex.of(ssn)` gives the one index of a
session; the first call registers its allocate/deallocate handler, so it must happen at session open.

Why this shape (performance by design, no per-node Python loop on the hot path):

- Labels by column. Every node carries a unique `kubernetes.io/hostname`, so whole label sets make one class
  per node. Instead, a label key is a column: an int code per node row for its value (-1: absent) plus the
  list of distinct values. A node selector requirement is evaluated once per *distinct value* of its key with
  the pure functions of `_selectors`, and spread to all rows by one numpy lookup. Nodes with equal values
  for the keys a pod reads are thus one equivalence class for that pod; results are cached per requirement.
- Taints by class: nodes grouped by (taints, unschedulable); taint predicates run once per class.
- Placed pods by "facts" class: pods with the same (namespace, labels, terminating) match the same label
  selectors. A selector's per-node pod count (`pod_counts`) is built once from the classes and then kept up
  to date by the event handlers; per-topology-domain counts are a `np.bincount` of it over a label column.
- Terms that placed pods carry (required anti-affinity, preferred affinity/anti-affinity) are kept as
  per-node counts per distinct term, so "does any existing pod's anti-affinity reject this pod" is a loop
  over distinct terms, not over pods.

Which pods count is Volcano's: every task on a node of the session that has a pod object (pods of any
scheduler), plus the tasks allocated or pipelined during the session; a task evicted during the session
stops counting (Volcano's predicates plugin removes it from the node info), one that was already
terminating at session open still counts (except for topology spread, which skips terminating pods).
The same rule gives `requested`, the node's sum of requests as kube-scheduler's score plugins see it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

import numpy as np

from magma.api.resources import CPU, MEMORY

from ..framework import EventHandler, Session, TaskInfo, fastpath
from ..framework.kept import Memo
from . import _selectors as sel

_TWO_INT64 = struct.Struct("=2q")

# kube-scheduler's defaults for containers without a cpu / memory request (NonZeroRequested).
DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024


# ---------------------------------------------------------------- what the plugins read from a pod


@dataclass(frozen=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    selector: sel.Selector | None
    min_domains: int | None
    honor_affinity: bool  # nodeAffinityPolicy (default Honor)
    honor_taints: bool  # nodeTaintsPolicy (default Ignore)
    self_match: bool  # the pod itself matches the selector


@dataclass
class PodTerms:
    """A pod's scheduling constraints, parsed once per pod shape."""

    namespace: str
    labels: dict[str, str]
    node_selector: tuple[tuple[str, str], ...] = ()
    required_terms: tuple | None = None  # NodeSelectorTerm models; None: no required node affinity
    preferred_terms: tuple = ()  # (weight, NodeSelectorTerm)
    tolerations: tuple = ()
    req_aff: tuple[sel.AffinityTerm, ...] = ()
    req_anti: tuple[sel.AffinityTerm, ...] = ()
    pref_aff: tuple[tuple[int, sel.AffinityTerm], ...] = ()
    pref_anti: tuple[tuple[int, sel.AffinityTerm], ...] = ()
    spread_hard: tuple[SpreadConstraint, ...] = ()
    spread_soft: tuple[SpreadConstraint, ...] = ()
    affinity_key: Hashable = ()  # what required node affinity depends on
    toleration_key: Hashable = ()
    preferred_key: Hashable = ()

    @property
    def static_key(self) -> Hashable:
        return self.affinity_key, self.toleration_key

    @property
    def has_pod_affinity(self) -> bool:
        return bool(self.req_aff or self.req_anti)


def _dump(model: Any) -> str:
    return model.model_dump_json() if hasattr(model, "model_dump_json") else repr(model)


def _spread(c: Any, labels: dict[str, str]) -> SpreadConstraint:
    extra = getattr(c, "model_extra", None) or {}
    selector = sel.label_selector(c.label_selector)
    keys = extra.get("matchLabelKeys") or extra.get("match_label_keys") or ()
    selector = sel.with_match_labels(selector, {k: labels[k] for k in keys if k in labels})
    aff_policy = extra.get("nodeAffinityPolicy") or extra.get("node_affinity_policy") or "Honor"
    taint_policy = extra.get("nodeTaintsPolicy") or extra.get("node_taints_policy") or "Ignore"
    return SpreadConstraint(
        max_skew=int(c.max_skew), topology_key=c.topology_key, selector=selector, min_domains=c.min_domains,
        honor_affinity=aff_policy != "Ignore", honor_taints=taint_policy == "Honor",
        self_match=sel.selector_matches(selector, labels),
    )


def parse_pod_terms(task: TaskInfo) -> PodTerms:
    pod = task.pod
    if pod is None:
        return PodTerms(namespace=task.namespace, labels={})
    spec = pod.spec
    labels = dict(pod.labels)
    ns = pod.namespace
    t = PodTerms(namespace=ns, labels=labels)
    t.node_selector = tuple(sorted(spec.node_selector.items()))
    t.tolerations = tuple(spec.tolerations)
    aff = spec.affinity
    na = aff.node_affinity if aff else None
    if na is not None:
        req = na.required_during_scheduling_ignored_during_execution
        if req is not None:
            t.required_terms = tuple(req.node_selector_terms)
        t.preferred_terms = tuple((p.weight, p.preference) for p in na.preferred_during_scheduling_ignored_during_execution)
    pa = aff.pod_affinity if aff else None
    if pa is not None:
        t.req_aff = tuple(sel.affinity_term(x, ns) for x in pa.required_during_scheduling_ignored_during_execution)
        t.pref_aff = tuple((w.weight, sel.affinity_term(w.pod_affinity_term, ns))
                           for w in pa.preferred_during_scheduling_ignored_during_execution)
    paa = aff.pod_anti_affinity if aff else None
    if paa is not None:
        t.req_anti = tuple(sel.affinity_term(x, ns) for x in paa.required_during_scheduling_ignored_during_execution)
        t.pref_anti = tuple((w.weight, sel.affinity_term(w.pod_affinity_term, ns))
                            for w in paa.preferred_during_scheduling_ignored_during_execution)
    for c in spec.topology_spread_constraints:
        s = _spread(c, labels)
        if c.when_unsatisfiable == "DoNotSchedule":
            t.spread_hard += (s,)
        else:
            t.spread_soft += (s,)
    t.affinity_key = (t.node_selector, None if t.required_terms is None else tuple(_dump(x) for x in t.required_terms))
    t.toleration_key = tuple(_dump(x) for x in t.tolerations)
    t.preferred_key = tuple((w, _dump(p)) for w, p in t.preferred_terms)
    return t


# Pod terms by pod shape, kept across sessions (fastpath.pod_terms_kept): `parse_pod_terms` reads the pod's labels,
# namespace, node selector, affinity, tolerations and spread constraints alone, all of which its shape holds.
_KEPT_TERMS = Memo(4096)


def kept_pod_terms(task: TaskInfo) -> PodTerms:
    """`parse_pod_terms(task)`, kept by the pod's shape (snapshot._shape) with fastpath.pod_terms_kept."""
    shape = task.shape
    if not fastpath.pod_terms_kept or task.pod is None or len(shape) < 6:
        return parse_pod_terms(task)
    got = _KEPT_TERMS.get(shape)
    if got is None:
        got = _KEPT_TERMS.keep(shape, parse_pod_terms(task))
    return got


def nonzero_extra(task: TaskInfo) -> tuple[int, int]:
    """(cpu, memory) that kube-scheduler's NonZeroRequested adds to the pod's request: 100m cpu / 200Mi memory
    for every container (and init container) that states no request (nor limit) for it."""
    pod = task.pod
    if pod is None:
        return (DEFAULT_MILLI_CPU if task.resreq[CPU] == 0 else 0,
                DEFAULT_MEMORY if task.resreq[MEMORY] == 0 else 0)
    spec = pod.spec
    q = task.resreq
    if q._v.get(CPU) and q._v.get(MEMORY) and len(spec.containers) == 1 and not spec.init_containers \
            and not spec.overhead:
        return 0, 0  # one container asking for both: nothing is missing

    def missing(c) -> tuple[int, int]:
        r = c.resources
        return (0 if (CPU in r.requests or CPU in r.limits) else DEFAULT_MILLI_CPU,
                0 if (MEMORY in r.requests or MEMORY in r.limits) else DEFAULT_MEMORY)

    if not spec.init_containers:  # the common case: the sum over app containers
        cpu = mem = 0
        for c in spec.containers:
            a, b = missing(c)
            cpu += a
            mem += b
        return cpu, mem
    # With init containers, recompute both totals with the defaults applied and take the difference.
    base = _requests(spec, lambda c: (0, 0))
    withd = _requests(spec, missing)
    return withd[0] - base[0], withd[1] - base[1]


def _requests(spec, extra: Callable) -> tuple[int, int]:
    """cpu/memory of PodSpec.request() with `extra(container)` added to each container."""

    def req(c):
        e = c.resources.effective()
        a, b = extra(c)
        return e[CPU] + a, e[MEMORY] + b

    side = [0, 0]
    peak = [0, 0]
    for c in spec.init_containers:
        a, b = req(c)
        if c.restart_policy == "Always":
            side = [side[0] + a, side[1] + b]
            peak = [max(peak[0], side[0]), max(peak[1], side[1])]
        else:
            peak = [max(peak[0], side[0] + a), max(peak[1], side[1] + b)]
    total = list(side)
    for c in spec.containers:
        a, b = req(c)
        total[0] += a
        total[1] += b
    return max(total[0], peak[0]), max(total[1], peak[1])


# ---------------------------------------------------------------- placed pods


@dataclass
class FactClass:
    """Placed pods that every label selector treats alike."""

    namespace: str
    labels: dict[str, str]
    terminating: bool
    members: dict[str, int] = field(default_factory=dict)  # task uid -> node row


@dataclass
class Tracker:
    match: Callable[[FactClass], bool]
    counts: np.ndarray
    seen: dict[tuple, bool] = field(default_factory=dict)

    def matches(self, key: tuple, fc: FactClass) -> bool:
        m = self.seen.get(key)
        if m is None:
            m = self.seen[key] = bool(self.match(fc))
        return m


@dataclass
class Carried:
    """Placed pods carrying one distinct term: per-node count and total."""

    term: sel.AffinityTerm
    weight: int
    counts: np.ndarray
    total: int = 0


class _NodeFacts:
    """What an index derives from the node list alone: names, label columns, requirement and affinity rows, taint
    classes. The incremental snapshot (cache.py) keeps its node list (the same list object) until a node changes,
    when it builds everything again with a new list; so while the session's node list is the one these facts were
    made from, they hold (fast path `node_facts_kept`). One is kept: the last node list seen. The arrays are
    read-only, as later sessions share them."""

    _last: "_NodeFacts | None" = None

    @classmethod
    def of(cls, nodes: list, table: Any) -> "_NodeFacts":
        last = cls._last
        if fastpath.node_facts_kept and last is not None and last.nodes is nodes and last.n == len(nodes) \
                and last.row == table.row:
            return last
        st = cls(nodes, table)
        cls._last = st if fastpath.node_facts_kept else None
        return st

    def __init__(self, nodes: list, table: Any):
        self.nodes = nodes
        self.n = len(nodes)
        self.row = dict(table.row)  # node name -> row, which field_rows reads
        self.names = [nd.name for nd in nodes]
        self.columns: dict[str, tuple[np.ndarray, list[str]]] = {}
        self.has: dict[str, np.ndarray] = {}
        self.req_rows: dict[tuple, np.ndarray] = {}
        self.aff_rows: dict[Hashable, np.ndarray] = {}
        classes: dict[tuple, int] = {}
        tc = np.empty(self.n, dtype=np.int32)
        for i, nd in enumerate(nodes):
            key = (tuple((t.key, t.value or "", t.effect) for t in nd.taints), bool(nd.unschedulable))
            tc[i] = classes.setdefault(key, len(classes))
        self.taint_class = tc
        self.taint_classes: list[tuple[tuple[dict, ...], bool]] = [
            (tuple({"key": k, "value": v, "effect": e} for k, v, e in taints), unsched)
            for (taints, unsched) in classes
        ]
        self.unschedulable = np.array([u for _, u in self.taint_classes], dtype=bool)[tc] if self.n else \
            np.zeros(0, dtype=bool)
        # per toleration key: intolerable PreferNoSchedule taints per row, and whether any row has one (nodeorder)
        self.taint_counts: dict[Hashable, np.ndarray] = {}
        self.intolerable: dict[Hashable, bool] = {}
        tc.flags.writeable = False
        self.unschedulable.flags.writeable = False


def _nonzero_sum(tasks: list[TaskInfo]) -> tuple[int, int]:
    """The tasks' NonZeroRequested extras (`nonzero_extra`) summed."""
    a = b = 0
    for t in tasks:
        x, y = nonzero_extra(t)
        a += x
        b += y
    return a, b


def _carries(task: TaskInfo) -> bool:
    """Whether a placed task's terms are counted (`NodeIndex._carry`): a shape without affinity carries none."""
    shape = task.shape
    return not (len(shape) > 1 and not shape[1])


class _RowTasks:
    """What the index's scan reads from one node's tasks: the uids of those with a pod, those carrying terms (in
    the node's order) and their NonZeroRequested extras summed. Kept while the node holds the same task objects:
    a task object's pod, shape and request do not change (the snapshot makes a new task for a written pod)."""

    __slots__ = ("tasks", "uids", "carrying", "nonzero")

    def __init__(self, tasks: tuple):
        self.tasks = tasks
        with_pod = [t for t in tasks if t.pod is not None]
        self.uids = frozenset(t.uid for t in with_pod)
        self.carrying = [t for t in with_pod if _carries(t)]
        self.nonzero = _nonzero_sum(with_pod)


class _PlacedRows:
    """Per node row, its last `_RowTasks`, kept across sessions (fast path `placed_rows_kept`) while the session's
    node list is the same list object with the same rows (as `_NodeFacts`). One is kept: the last node list seen."""

    _last: "_PlacedRows | None" = None

    @classmethod
    def of(cls, nodes: list, table: Any) -> "_PlacedRows":
        last = cls._last
        if last is not None and last.nodes is nodes and last.n == len(nodes) and last.row == table.row:
            return last
        st = cls._last = cls()
        st.nodes = nodes
        st.n = len(nodes)
        st.row = dict(table.row)
        st.rows = [None] * len(nodes)
        st.nonzero = None
        return st

    nodes: list
    n: int
    row: dict
    rows: "list[_RowTasks | None]"
    nonzero: "np.ndarray | None"  # the records' NonZeroRequested extras as an (n, 2) array (read-only; None: not made)


class NodeIndex:
    @classmethod
    def of(cls, ssn: Session) -> "NodeIndex":
        # Kept on the session itself: the index refers to its session, so a weak-key map from sessions to indexes
        # would keep every session (and its snapshot) alive for the life of the process.
        idx = ssn.__dict__.get("_node_index")
        if idx is None:
            idx = ssn.__dict__["_node_index"] = cls(ssn)
        return idx

    def __init__(self, ssn: Session):
        self.ssn = ssn
        self.table = ssn.table
        self.nodes = ssn.node_list
        self.n = len(self.nodes)
        st = self.facts = _NodeFacts.of(self.nodes, self.table)
        # What depends on the nodes alone (names, labels, taints) is kept across sessions (`_NodeFacts`).
        self.names = st.names
        self._columns = st.columns
        self._has = st.has
        self._req_rows = st.req_rows
        self._aff_rows = st.aff_rows
        self.taint_class = st.taint_class
        self.taint_classes = st.taint_classes
        self.unschedulable = st.unschedulable
        self._terms: dict[Hashable, PodTerms] = {}
        # Requests on each node as kube-scheduler's NodeInfo holds them (see module doc).
        self.requested = self.table.used + self.table.pipelined  # (a new array: the index's own)
        self._event_rows: dict[str, int] = {}
        self._removed: set[str] = set()
        # Placed pods, built on first use.
        self._placed: dict[str, tuple[TaskInfo, tuple]] | None = None
        self._facts: dict[tuple, FactClass] = {}
        self._trackers: dict[Hashable, Tracker] = {}
        self._carried: dict[str, dict[tuple, Carried]] = {"anti": {}, "pref_aff": {}, "pref_anti": {}}
        self._nonzero: np.ndarray | None = None  # (N, 2) extra cpu/memory of NonZeroRequested
        self.carried_version = 0  # moves whenever a placed pod's terms are counted or uncounted
        self._no_anti_at: int | None = None  # Session.placement_events when `_no_anti_carriers` last said True
        # The scan (fast path placed_rows_kept): the carried terms and NonZeroRequested of the placed pods from
        # per-row records kept across sessions, without the facts classes (built only if a selector asks).
        self._scan_rows: list[_RowTasks] | None = None  # the session's record of each row, as scanned
        self._scan_removed: frozenset[str] = frozenset()  # uids removed before the scan (not counted by it)
        self._added: set[str] = set()  # uids counted since the scan
        self._dropped: set[str] = set()  # uids no longer counted since the scan
        ssn.add_event_handler(EventHandler(allocate=self._on_allocate, deallocate=self._on_deallocate))

    # ------------------------------------------------------------ pod terms
    def terms(self, task: TaskInfo) -> PodTerms:
        key = task.shape if task.shape else ("task", task.uid)
        t = self._terms.get(key)
        if t is None:
            t = self._terms[key] = kept_pod_terms(task)
        return t

    # ------------------------------------------------------------ label columns
    def column(self, key: str) -> tuple[np.ndarray, list[str]]:
        """Per-row code of the node's value for a label key (-1: absent) and the distinct values."""
        col = self._columns.get(key)
        if col is None:
            values: dict[str, int] = {}
            codes = np.fromiter(
                (values.setdefault(nd.labels[key], len(values)) if key in nd.labels else -1 for nd in self.nodes),
                dtype=np.int32, count=self.n)
            codes.flags.writeable = False  # shared by later sessions (`_NodeFacts`)
            col = self._columns[key] = (codes, list(values))
        return col

    def has(self, key: str) -> np.ndarray:
        h = self._has.get(key)
        if h is None:
            h = self.column(key)[0] >= 0
            h.flags.writeable = False
            self._has[key] = h
        return h

    def requirement_rows(self, key: str, op: str, values: tuple[str, ...]) -> np.ndarray:
        """A node selector requirement over all rows: evaluated once per distinct value of the key."""
        ck = ("expr", key, op, values)
        r = self._req_rows.get(ck)
        if r is None:
            codes, vals = self.column(key)
            lut = np.fromiter((sel.node_requirement_matches(op, values, v) for v in vals), dtype=bool,
                              count=len(vals))
            lut = np.append(lut, sel.node_requirement_matches(op, values, None))  # code -1 -> absent
            r = lut[codes]
            r.flags.writeable = False
            self._req_rows[ck] = r
        return r

    def field_rows(self, key: str, op: str, values: tuple[str, ...]) -> np.ndarray:
        ck = ("field", key, op, values)
        r = self._req_rows.get(ck)
        if r is None:
            r = np.zeros(self.n, dtype=bool)
            if key == sel.NAME_FIELD and len(values) == 1 and op in ("In", "NotIn"):
                i = self.table.row.get(values[0])
                if op == "NotIn":
                    r[:] = True
                if i is not None:
                    r[i] = op == "In"
            r.flags.writeable = False
            self._req_rows[ck] = r
        return r

    def term_rows(self, term: Any) -> np.ndarray:
        """Rows a NodeSelectorTerm matches (expressions AND fields; an empty term matches nothing)."""
        exprs = term.match_expressions or ()
        fields = term.match_fields or ()
        if not exprs and not fields:
            return np.zeros(self.n, dtype=bool)
        ok = np.ones(self.n, dtype=bool)
        for e in exprs:
            ok &= self.requirement_rows(e.key, e.operator, tuple(e.values))
        for f in fields:
            ok &= self.field_rows(f.key, f.operator, tuple(f.values))
        return ok

    def affinity_rows(self, pt: PodTerms) -> np.ndarray:
        """Rows matching the pod's nodeSelector and required node affinity (kube-scheduler's
        RequiredNodeAffinity), cached per distinct pair."""
        r = self._aff_rows.get(pt.affinity_key)
        if r is None:
            r = np.ones(self.n, dtype=bool)
            for k, v in pt.node_selector:
                r &= self.requirement_rows(k, "In", (v,))
            if pt.required_terms is not None:
                any_term = np.zeros(self.n, dtype=bool)
                for term in pt.required_terms:
                    any_term |= self.term_rows(term)
                r &= any_term
            r.flags.writeable = False
            self._aff_rows[pt.affinity_key] = r
        return r

    def taint_class_values(self, fn: Callable[[tuple, bool], Any], dtype=object) -> np.ndarray:
        """fn(taints, unschedulable) per taint class, spread over rows."""
        lut = np.array([fn(t, u) for t, u in self.taint_classes] or [None], dtype=dtype)
        return lut[self.taint_class] if self.n else np.zeros(0, dtype=dtype)

    # ------------------------------------------------------------ placed pods
    def _facts_key(self, task: TaskInfo) -> tuple:
        pod = task.pod
        terminating = pod.metadata.deletion_timestamp is not None
        s = task.shape
        if len(s) >= 6:
            return (s[5], s[4], terminating)
        return (pod.namespace, tuple(sorted(pod.labels.items())), terminating)

    def _build(self) -> None:
        # The first use in a session: one pass over the pods on nodes (no trackers exist yet). After a scan the
        # carried terms are counted already (and kept current by the event handlers since).
        scanned = self._scan_rows is not None
        self._placed = placed = {}
        facts = self._facts
        removed = self._removed
        for nd in self.nodes:
            row = nd.index
            for t in nd.tasks.values():
                if t.pod is None or t.uid in removed:
                    continue
                fk = self._facts_key(t)
                fc = facts.get(fk)
                if fc is None:
                    fc = facts[fk] = FactClass(fk[0], dict(fk[1]), fk[2])
                fc.members[t.uid] = row
                placed[t.uid] = (t, fk)
                if not scanned and _carries(t):
                    self._carry(t, row, 1)
        for tr in self._trackers.values():  # none in practice: trackers build after this
            tr.counts[:] = 0
            for fk, fc in facts.items():
                if fc.members and tr.matches(fk, fc):
                    np.add.at(tr.counts, np.fromiter(fc.members.values(), dtype=np.int64, count=len(fc.members)), 1)

    def _add(self, task: TaskInfo, row: int) -> None:
        fk = self._facts_key(task)
        fc = self._facts.get(fk)
        if fc is None:
            fc = self._facts[fk] = FactClass(fk[0], dict(fk[1]), fk[2])
        fc.members[task.uid] = row
        self._placed[task.uid] = (task, fk)
        for tr in self._trackers.values():
            if tr.matches(fk, fc):
                tr.counts[row] += 1
        self._count(task, row, 1)

    def _remove(self, uid: str) -> None:
        task, fk = self._placed.pop(uid)
        fc = self._facts[fk]
        row = fc.members.pop(uid)
        for tr in self._trackers.values():
            if tr.matches(fk, fc):
                tr.counts[row] -= 1
        self._count(task, row, -1)

    def _count(self, task: TaskInfo, row: int, d: int) -> None:
        """Count (d = 1) or uncount (d = -1) a placed pod on `row`: its carried terms and, once made, its
        NonZeroRequested extras."""
        self._carry(task, row, d)
        nz = self._nonzero
        if nz is not None:
            a, b = nonzero_extra(task)
            if a or b:  # (most pods state both)
                nz[row, 0] += d * a
                nz[row, 1] += d * b

    def _carry(self, task: TaskInfo, row: int, d: int) -> None:
        if len(task.shape) > 1 and not task.shape[1]:
            return  # no affinity at all
        self.carried_version += 1  # (what `carried` gives may change)
        pt = self.terms(task)
        for kind, items in (("anti", [(0, t) for t in pt.req_anti]), ("pref_aff", pt.pref_aff),
                            ("pref_anti", pt.pref_anti)):
            for w, term in items:
                book = self._carried[kind]
                c = book.get((term, w))
                if c is None:
                    c = book[(term, w)] = Carried(term, w, np.zeros(self.n, dtype=np.int64))
                c.counts[row] += d
                c.total += d

    def placed(self) -> dict[str, tuple[TaskInfo, tuple]]:
        if self._placed is None:
            self._build()
        return self._placed

    def _scan(self) -> None:
        """What the first use of `carried` or `nonzero_requested` needs of the placed pods, without `_build`'s facts
        classes (fast path `placed_rows_kept`): the carried terms, counted in `_build`'s order, and the
        NonZeroRequested extras, from per-row records kept across sessions and made again for the rows whose node
        holds other task objects. The pods counted are `_build`'s: those with a pod on a node, not removed."""
        kept = _PlacedRows.of(self.nodes, self.table)
        records = kept.rows
        # The records' sums as an array, read-only and kept with them: taken off while the records are renewed (a
        # loop cut short leaves it to be made again from them), then given back with the renewed rows' sums.
        sums, kept.nonzero = kept.nonzero, None
        removed = self._removed
        rows: list[_RowTasks] = [None] * self.n  # type: ignore[list-item]
        renewed: list[int] = []  # rows given a new record
        own: dict[int, tuple[int, int]] = {}  # rows holding a removed pod: their sums without it
        for nd in self.nodes:
            i = nd.index
            tasks = tuple(nd.tasks.values())
            rec = records[i]
            if rec is None or rec.tasks != tasks:  # the same task objects? (TaskInfo compares by identity)
                rec = records[i] = _RowTasks(tasks)
                renewed.append(i)
            rows[i] = rec
            if removed and not removed.isdisjoint(rec.uids):
                live = [t for t in tasks if t.pod is not None and t.uid not in removed]
                for t in live:
                    if _carries(t):
                        self._carry(t, i, 1)
                own[i] = _nonzero_sum(live)
                continue
            for t in rec.carrying:
                self._carry(t, i, 1)
        self._scan_rows = rows
        self._scan_removed = frozenset(removed)
        if sums is None:
            sums = np.array([(0, 0) if r is None else r.nonzero for r in records], dtype=np.int64).reshape(self.n, 2)
            sums.flags.writeable = False
        elif renewed:
            sums = sums.copy()
            for i in renewed:
                sums[i] = records[i].nonzero
            sums.flags.writeable = False
        kept.nonzero = sums
        self._nonzero = sums.copy()  # (the session changes its own copy)
        for i, got in own.items():
            self._nonzero[i] = got

    def _no_anti_carriers(self) -> bool:
        """Does no task on a node have a pod with a required anti-affinity term? Told without a scan when the
        snapshot counted none on its records (`Snapshot.anti_carriers`, kept by cache.py): then only the nodes the
        session changed may hold one (`Session.touched_nodes`), and their tasks are looked at, again only after a
        placement event (a node's task dict changes only with one). False: not known."""
        ssn = self.ssn
        if getattr(ssn.snapshot, "anti_carriers", None) != 0:
            return False
        if self._no_anti_at != ssn.placement_events:
            for nd in ssn.touched_nodes:
                for t in nd.tasks.values():
                    if t.pod is not None and _carries(t) and self.terms(t).req_anti:
                        return False
            self._no_anti_at = ssn.placement_events
        return True

    def _counted(self, uid: str, row: int) -> bool:
        """After a scan (before a build): is the task counted, as `uid in self._placed` would say?"""
        if uid in self._added:
            return True
        if uid in self._dropped:
            return False
        return uid in self._scan_rows[row].uids and uid not in self._scan_removed

    def _ready(self) -> None:
        """The carried terms and NonZeroRequested current: by the scan with the fast path, else by `_build`."""
        if self._placed is None and self._scan_rows is None:
            if fastpath.placed_rows_kept:
                self._scan()
            else:
                self._build()

    def carried(self, kind: str) -> list[Carried]:
        """Distinct terms of this kind that some placed pod carries ("anti", "pref_aff", "pref_anti")."""
        if self._placed is None and self._scan_rows is None:
            if kind == "anti" and fastpath.anti_carriers_kept and self._no_anti_carriers():
                return []  # (what the scan would give: the predicates ask this of every task shape)
            self._ready()
        book = self._carried[kind]
        return [c for c in book.values() if c.total > 0] if book else []

    def pod_counts(self, key: Hashable, match: Callable[[FactClass], bool]) -> np.ndarray:
        """Per node row, how many placed pods `match` (a predicate on the pod's facts); kept current."""
        tr = self._trackers.get(key)
        if tr is None:
            self.placed()
            counts = np.zeros(self.n, dtype=np.int64)
            tr = Tracker(match, counts)
            for fk, fc in self._facts.items():
                if fc.members and tr.matches(fk, fc):
                    np.add.at(counts, np.fromiter(fc.members.values(), dtype=np.int64, count=len(fc.members)), 1)
            self._trackers[key] = tr
        return tr.counts

    def term_counts(self, term: sel.AffinityTerm) -> np.ndarray:
        """Placed pods matching a pod affinity term (namespace and selector), per node row."""
        return self.pod_counts(("term", term), lambda fc: term.matches(fc.labels, fc.namespace))

    def all_terms_counts(self, terms: tuple[sel.AffinityTerm, ...]) -> np.ndarray:
        """Placed pods matching every one of the terms, per node row."""
        return self.pod_counts(("all", terms), lambda fc: sel.matches_all_terms(terms, fc.labels, fc.namespace))

    def spread_counts(self, selector: sel.Selector | None, namespace: str) -> np.ndarray:
        """Topology spread's countPodsMatchSelector per node: same namespace, not terminating, selector
        matches; an empty selector counts nothing (kube-scheduler skips `selector.Empty()`)."""
        if selector is None or selector == sel.EVERYTHING:
            return np.zeros(self.n, dtype=np.int64)
        return self.pod_counts(("spread", selector, namespace),
                               lambda fc: (fc.namespace == namespace and not fc.terminating
                                           and sel.selector_matches(selector, fc.labels)))

    def domain_sums(self, key: str, per_row: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Sum of `per_row` over the nodes of each value of label `key` (rows in `mask` only)."""
        codes, vals = self.column(key)
        m = codes >= 0 if mask is None else (codes >= 0) & mask
        return np.bincount(codes[m], weights=per_row[m], minlength=len(vals))

    def nonzero_requested(self, rows: np.ndarray | None = None) -> np.ndarray:
        """(N, 2) cpu and memory of kube-scheduler's NonZeroRequested for each node (for `rows` only, when given:
        a placement re-scores one row, which should not cost a pass over every node)."""
        if self._nonzero is None:
            self._ready()
        if self._nonzero is None:
            nz = np.zeros((self.n, 2), dtype=np.int64)
            for task, _ in self._placed.values():
                if task.node is not None:
                    i = self.table.row.get(task.node)
                    if i is not None:
                        nz[i] += nonzero_extra(task)
            self._nonzero = nz
        req = self.req()
        t = self.table
        nz = self._nonzero
        if rows is not None:
            req, nz = req[rows], nz[rows]
        ci, mi = t.col.get(CPU), t.col.get(MEMORY)
        if ci is not None and mi is not None:
            return req[:, [ci, mi]] + nz
        n = len(req)
        return np.stack([req[:, t.col[CPU]] if CPU in t.col else np.zeros(n, np.int64),
                         req[:, t.col[MEMORY]] if MEMORY in t.col else np.zeros(n, np.int64)],
                        axis=1) + nz

    def state_bytes(self, row: int) -> bytes:
        """`requested` and `nonzero_requested` of one row as the bytes of their int64 rows side by side (nodeorder's
        `row_state` of that row): a placement re-keys one row, by plain row views."""
        req = self.req()
        t = self.table
        ci, mi = t.col.get(CPU), t.col.get(MEMORY)
        if self._nonzero is None or ci is None or mi is None:
            rows = slice(row, row + 1)
            return np.concatenate([req[rows], self.nonzero_requested(rows)], axis=1).tobytes()
        r = req[row]
        a, b = self._nonzero[row].tolist()
        return r.tobytes() + _TWO_INT64.pack(int(r[ci]) + a, int(r[mi]) + b)  # (numpy's int64 bytes, native order)

    def req(self) -> np.ndarray:
        """Requested resources per node (all table columns)."""
        w = len(self.table.dims)
        if self.requested.shape[1] < w:  # the table grew a column during the session
            pad = np.zeros((self.n, w - self.requested.shape[1]), dtype=np.int64)
            self.requested = np.hstack([self.requested, pad])
        return self.requested

    # ------------------------------------------------------------ events
    def _row_of(self, task: TaskInfo) -> int | None:
        if task.node is not None:
            return self.table.row.get(task.node)
        return self._event_rows.get(task.uid)

    def _on_allocate(self, task: TaskInfo) -> None:
        row = self.table.row.get(task.node) if task.node is not None else self._event_rows.get(task.uid)  # _row_of
        if row is None:
            return
        uid = task.uid
        self._event_rows[uid] = row
        self._removed.discard(uid)
        self._shift_requested(row, task.vec, 1)
        placed = self._placed
        if placed is not None:
            if task.pod is not None and uid not in placed:
                self._add(task, row)
        elif self._scan_rows is not None and task.pod is not None and not self._counted(uid, row):
            self._added.add(uid)  # `_add`'s changes to what the scan counts
            self._count(task, row, 1)

    def _shift_requested(self, row: int, vec: np.ndarray, sign: int) -> None:
        """Add (sign 1) or take (-1) a placed or removed task's request on its row of `requested`."""
        req = self.requested
        if req.shape[1] != len(vec):
            req = self.req()
        at = req[row] if len(vec) == req.shape[1] else req[row, : len(vec)]  # (a row view: cheaper than a slice)
        if sign > 0:
            at += vec
        else:
            at -= vec

    def _on_deallocate(self, task: TaskInfo) -> None:
        row = self._row_of(task)
        if row is None:
            return
        self._removed.add(task.uid)
        self._shift_requested(row, task.vec, -1)
        if self._placed is not None:
            if task.uid in self._placed:
                self._remove(task.uid)
        elif self._scan_rows is not None and self._counted(task.uid, row):
            self._added.discard(task.uid)  # `_remove`'s changes to what the scan counts
            self._dropped.add(task.uid)
            self._count(task, row, -1)
