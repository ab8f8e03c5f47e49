"""predicates: kube-scheduler's node filters, as Volcano's predicates plugin runs them.

Filters, in Volcano's order, each failing node reported under the first filter it fails, with
kube-scheduler's reason text (so a summary reads "3 node(s) had untolerated taint {dedicated: a100}"):

1. NodeUnschedulable (always on): `spec.unschedulable` nodes, unless the pod tolerates
   {node.kubernetes.io/unschedulable, NoSchedule}. "node(s) were unschedulable".
2. NodeAffinity (`predicate.NodeAffinityEnable`): `nodeSelector` and required node affinity.
   "node(s) didn't match Pod's node affinity/selector".
3. TaintToleration (`predicate.TaintTolerationEnable`): the first NoSchedule/NoExecute taint the pod does not
   tolerate. "node(s) had untolerated taint {key: value}" (the kube-scheduler wording that names the taint;
   the newest releases shorten it to "untolerated taint(s)", magma keeps the informative form).
4. InterPodAffinity (`predicate.PodAffinityEnable`): the pod's required affinity terms (every term's topology
   domain must hold a pod matching all the terms; the first pod of a group that matches its own terms may go
   anywhere with the topology labels when no such pod exists), its required anti-affinity terms, and the
   required anti-affinity terms of pods already placed that match it. "node(s) didn't match pod affinity
   rules", "node(s) didn't match pod anti-affinity rules", "node(s) didn't satisfy existing pods
   anti-affinity rules".
5. PodTopologySpread (`predicate.PodTopologySpreadEnable`): DoNotSchedule constraints; skew = pods matching in
   the node's domain + (1 if the pod matches itself) - the minimum over the domains of eligible nodes
   (nodes with every constraint's topology key, honouring nodeAffinityPolicy / nodeTaintsPolicy; fewer
   domains than minDomains makes the minimum 0). "node(s) didn't match pod topology spread constraints",
   with " (missing required label)" for a node without the topology key.

Max pods per node is the `pods` column of the NodeTable, checked by the actions with the resources. NodePorts,
volume filters (NodeVolumeLimits, VolumeZone, VolumeBinding) and DRA are not modelled: magma's scenarios have no
host ports, volumes or resource claims; their enable flags are accepted and have no effect.

Performance: filters 1-3 depend only on the node's labels, taints and unschedulable flag and on what the pod
says about them, so their result is computed once per distinct (nodeSelector, required node affinity,
tolerations) of a pod over all nodes at once (see `_nodeindex`) and cached for the session as a per-node
reason code. Filters 4-5 depend on placed pods: they use per-topology-domain counts of matching pods kept by
the allocate/deallocate handlers, and are skipped outright for a pod with no required (anti-)affinity and
no hard spread constraint when no placed pod carries a required anti-affinity term.
"""

from __future__ import annotations

from typing import Any, Hashable

import numpy as np

from ..framework import PredicateResult, Session, TaskInfo, fastpath, plugin
from ..framework.kept import Memo, by_arguments
from . import _selectors as sel
from ._nodeindex import NodeIndex, PodTerms

NAME = "predicates"

UNSCHEDULABLE = "node(s) were unschedulable"
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
POD_AFFINITY = "node(s) didn't match pod affinity rules"
POD_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
SPREAD = "node(s) didn't match pod topology spread constraints"
SPREAD_LABEL = SPREAD + " (missing required label)"

FLAGS = ("NodeAffinity", "NodePorts", "TaintToleration", "PodAffinity", "NodeVolumeLimits", "VolumeZone",
         "PodTopologySpread", "VolumeBinding")


class _Static:
    """Per node row: index of the first static reason that fails it (-1: passes)."""

    __slots__ = ("codes", "texts", "taint_ok", "full")

    def __init__(self, codes: np.ndarray, texts: list[str], taint_ok: np.ndarray):
        self.codes = codes
        self.texts = texts
        self.taint_ok = taint_ok  # NoSchedule/NoExecute taints all tolerated (spread's nodeTaintsPolicy)
        self.full: PredicateResult | None = None  # over all rows, when nothing but these codes decides


class _Codes:
    """Reason codes over candidate rows, first failure wins."""

    def __init__(self, codes: np.ndarray, texts: list[str]):
        self.codes = codes
        self.texts = texts

    def fail(self, failing: np.ndarray, text: str) -> None:
        new = failing & (self.codes < 0)
        if new.any():
            if text not in self.texts:
                self.texts.append(text)
            self.codes[new] = self.texts.index(text)


def _read_enabled(args: dict[str, Any]) -> dict[str, bool]:
    return {f: sel.arg_bool(args, f"predicate.{f}Enable", True) for f in FLAGS}


# Which filters are on, by the plugin's arguments (fastpath.plugin_setup_kept): the plugin is made every session.
_ENABLED = Memo(65)


@plugin(NAME)
class Predicates:
    def __init__(self, arguments: dict[str, Any] | None = None):
        args = arguments or {}
        self.enabled = dict(by_arguments(_ENABLED, args, _read_enabled))  # (each plugin its own dict)
        self.arguments = args
        self._static: dict[Any, _Static] = {}
        self._by_shape: dict[Any, _Static] = {}

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.index = NodeIndex.of(ssn)
        self._static = {}
        self._by_shape = {}
        if fastpath.predicates_kept:
            # Kept with the node facts they are made from (fast path node_facts_kept keeps those across sessions).
            store = self.index.facts.__dict__.setdefault(NAME, {})
            if sum(len(b) for _, b in store.values()) > 4096:
                store.clear()
            self._static, self._by_shape = store.setdefault(tuple(self.enabled.items()), ({}, {}))
        self._rows = np.arange(self.index.n, dtype=np.int64)
        self._all_rows = self._rows.tobytes()  # (equal int64 arrays of one length have equal bytes: a cheap test)
        ssn.add_fn("predicate", NAME, self.predicate)

    def on_session_close(self, ssn: Session) -> None:
        self._static = {}
        self._by_shape = {}

    # ------------------------------------------------------------ static filters (cached)
    def static(self, task: TaskInfo) -> _Static:
        key = task.shape if task.shape else ("task", task.uid)
        st = self._by_shape.get(key)
        if st is None:
            pt = self.index.terms(task)
            st = self._static.get(pt.static_key)
            if st is None:
                st = self._static[pt.static_key] = self._compute_static(pt)
            self._by_shape[key] = st
        return st

    def _compute_static(self, pt: PodTerms) -> _Static:
        idx = self.index
        c = _Codes(np.full(idx.n, -1, dtype=np.int16), [])
        tolerations = pt.tolerations
        if not sel.tolerates_unschedulable(tolerations):
            c.fail(idx.unschedulable, UNSCHEDULABLE)
        if self.enabled["NodeAffinity"]:
            c.fail(~idx.affinity_rows(pt), NODE_AFFINITY)
        # Per taint class: the first untolerated NoSchedule/NoExecute taint's reason ("" when all tolerated).
        texts = idx.taint_class_values(
            lambda taints, _u: (lambda t: sel.taint_text(t) if t is not None else "")(
                sel.first_untolerated(taints, tolerations)))
        taint_ok = texts == "" if idx.n else np.zeros(0, dtype=bool)
        if self.enabled["TaintToleration"]:
            for text in dict.fromkeys(texts[~taint_ok].tolist()):
                c.fail(texts == text, text)
        return _Static(c.codes, c.texts, taint_ok)

    def predicate_key(self, task: TaskInfo) -> Hashable | None:
        """What the predicate of `task` reads from the pod when only node labels, taints and the unschedulable
        flag decide (no inter-pod terms of its own or of placed pods, no hard spread): its nodeSelector, required
        node affinity and tolerations. None when placed pods or its labels matter (Session.predicate_key)."""
        pt = self.index.terms(task)
        if self.enabled["PodTopologySpread"] and pt.spread_hard:
            return None
        if self.enabled["PodAffinity"] and (pt.has_pod_affinity or self.index.carried("anti")):
            return None
        return (NAME, pt.static_key)

    # ------------------------------------------------------------ the predicate
    def predicate(self, task: TaskInfo, rows: np.ndarray) -> PredicateResult:
        rows = np.asarray(rows, dtype=np.int64)
        st = self.static(task)
        if fastpath.predicates_kept and rows.ndim == 1 and rows.tobytes() == self._all_rows \
                and self.predicate_key(task) is not None:
            # Over all rows, decided by the static codes alone (no inter-pod terms, no hard spread): kept with them.
            got = st.full
            if got is None:
                got = st.full = self._evaluate(task, st, rows)
                got.mask.flags.writeable = False
                for _, failing in got.reasons:
                    failing.flags.writeable = False
            return got
        return self._evaluate(task, st, rows)

    def _evaluate(self, task: TaskInfo, st: _Static, rows: np.ndarray) -> PredicateResult:
        codes = _Codes(st.codes[rows], list(st.texts))
        pt = self.index.terms(task)
        if self.enabled["PodAffinity"]:
            self._inter_pod_affinity(pt, rows, codes)
        if self.enabled["PodTopologySpread"] and pt.spread_hard:
            self._spread(pt, st, rows, codes)
        mask = codes.codes < 0
        reasons = []
        for i, text in enumerate(codes.texts):
            failing = codes.codes == i
            if failing.any():
                reasons.append((text, failing))
        return PredicateResult(mask, reasons)

    def _inter_pod_affinity(self, pt: PodTerms, rows: np.ndarray, codes: _Codes) -> None:
        idx = self.index
        existing = idx.carried("anti")  # (none without placed pods)
        if not pt.has_pod_affinity and not existing:
            return  # fast path: nothing to check
        n = len(rows)
        if pt.req_aff:
            counts = idx.all_terms_counts(pt.req_aff)
            ok = np.ones(n, dtype=bool)
            has_all = np.ones(n, dtype=bool)
            anywhere = 0
            for term in pt.req_aff:
                key = term.topology_key
                codes_k, _ = idx.column(key)
                dom = idx.domain_sums(key, counts)
                anywhere += int(dom.sum())
                c = codes_k[rows]
                has = c >= 0
                has_all &= has
                ok &= has & (dom[np.where(has, c, 0)] > 0 if len(dom) else False)
            if anywhere == 0 and sel.matches_all_terms(pt.req_aff, pt.labels, pt.namespace):
                ok = has_all  # the first pod of a self-affine group
            codes.fail(~ok, POD_AFFINITY)
        if pt.req_anti:
            bad = np.zeros(n, dtype=bool)
            for term in pt.req_anti:
                bad |= self._in_occupied_domain(term.topology_key, idx.term_counts(term), rows)
            codes.fail(bad, POD_ANTI_AFFINITY)
        if existing:
            bad = np.zeros(n, dtype=bool)
            for carried in existing:
                if carried.term.matches(pt.labels, pt.namespace):
                    bad |= self._in_occupied_domain(carried.term.topology_key, carried.counts, rows)
            codes.fail(bad, EXISTING_ANTI_AFFINITY)

    def _in_occupied_domain(self, key: str, per_row: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Rows whose node has label `key` with a value whose nodes hold a positive count."""
        codes_k, _ = self.index.column(key)
        dom = self.index.domain_sums(key, per_row)
        c = codes_k[rows]
        has = c >= 0
        if not len(dom):
            return np.zeros(len(rows), dtype=bool)
        return has & (dom[np.where(has, c, 0)] > 0)

    def _spread(self, pt: PodTerms, st: _Static, rows: np.ndarray, codes: _Codes) -> None:
        idx = self.index
        constraints = pt.spread_hard
        has_all = np.ones(idx.n, dtype=bool)
        for c in constraints:
            has_all &= idx.has(c.topology_key)
        affinity_ok = idx.affinity_rows(pt)
        failed = np.zeros(len(rows), dtype=bool)  # the first failure per row wins, constraint by constraint
        for c in constraints:
            codes_k, vals = idx.column(c.topology_key)
            eligible = has_all.copy()
            if c.honor_affinity:
                eligible &= affinity_ok
            if c.honor_taints:
                eligible &= st.taint_ok
            counts = idx.spread_counts(c.selector, pt.namespace)
            dom = np.bincount(codes_k[eligible], weights=counts[eligible], minlength=len(vals))
            present = np.bincount(codes_k[eligible], minlength=len(vals)) > 0
            n_domains = int(present.sum())
            min_match = int(dom[present].min()) if n_domains else 0
            if c.min_domains is not None and n_domains < c.min_domains:
                min_match = 0
            rc = codes_k[rows]
            missing = (rc < 0) & ~failed
            codes.fail(missing, SPREAD_LABEL)
            failed |= missing
            here = dom[np.where(rc >= 0, rc, 0)] if len(dom) else np.zeros(len(rows))
            skew = here + (1 if c.self_match else 0) - min_match
            over = (rc >= 0) & (skew > c.max_skew) & ~failed
            codes.fail(over, SPREAD)
            failed |= over
