"""nodeorder: kube-scheduler's score plugins with Volcano's weights, vectorised over candidate nodes.

Arguments (Volcano's names and defaults; a weight of 0 turns a score off):
  leastrequested.weight 1, mostrequested.weight 0, balancedresource.weight 1, nodeaffinity.weight 2,
  podaffinity.weight 2, tainttoleration.weight 3, imagelocality.weight 1, podtopologyspread.weight 2.

Each score is kube-scheduler's integer score in 0..100 for the candidate nodes of one task (normalised over
those candidates where kube-scheduler normalises), times its weight; the plugin's score is their sum.

- LeastAllocated (NodeResourcesFit, cpu and memory weight 50 each): per resource
  (allocatable - requested) * 100 // allocatable (0 when requested > allocatable), weighted mean over the
  resources the node has, integer division. `requested` is the node's NonZeroRequested plus the pod's: a
  container without a cpu / memory request counts 100m / 200Mi.
- MostAllocated (cpu and memory weight 1): min(requested, allocatable) * 100 // allocatable, same averaging.
- BalancedAllocation (cpu, memory, nvidia.com/gpu): fractions requested/allocatable (capped at 1, exact
  requests, gpu only when the pod asks for it and the node has it), score int((1 - std) * 100) with std the
  population standard deviation (|f1 - f2| / 2 for two resources). Skipped (0) for a pod that requests none
  of them (kube-scheduler's best-effort skip).
- NodeAffinity: sum of the weights of the preferred node affinity terms a node matches, normalised
  100 * s // max over the candidates.
- TaintToleration: count of PreferNoSchedule taints not tolerated (by tolerations with an empty or
  PreferNoSchedule effect), reverse-normalised: 100 - 100 * s // max (100 everywhere when max is 0).
- InterPodAffinity: per topology domain, + weight for every placed pod matching one of the pod's preferred
  affinity terms, - weight for its preferred anti-affinity terms, and the same for placed pods' preferred
  (anti-)affinity terms that match the pod; a node gets the sum over its domains; min-max normalised to
  0..100 (truncated). Placed pods' *required* affinity terms add nothing: Volcano builds the plugin with
  HardPodAffinityWeight 0.
- PodTopologySpread: ScheduleAnyway constraints; per constraint, the matching pods in the node's domain
  (counted over eligible nodes, only domains of candidate nodes) * log(domains + 2) + (maxSkew - 1), per node
  for `kubernetes.io/hostname`; rounded; nodes lacking a topology key score 0; then
  100 * (max + min - s) // max (100 when max is 0). kube-scheduler's system-default constraints apply only to
  pods selected by Services/ReplicaSets/StatefulSets, which magma does not model, so a pod without
  constraints gets no spread score.
- ImageLocality: always 0. magma does not know which images nodes hold (a scenario has no node image
  lists), so this score cannot differ between nodes; its weight is accepted and has no effect.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from magma.api.resources import CPU, GPU, MEMORY

from ..framework import Session, TaskInfo, fastpath, plugin
from ..framework.kept import Memo, by_arguments
from . import _selectors as sel
from ._nodeindex import NodeIndex, PodTerms, nonzero_extra

NAME = "nodeorder"
MAX = 100
HOSTNAME = "kubernetes.io/hostname"

WEIGHTS = {
    "leastrequested.weight": 1,
    "mostrequested.weight": 0,
    "balancedresource.weight": 1,
    "nodeaffinity.weight": 2,
    "podaffinity.weight": 2,
    "tainttoleration.weight": 3,
    "imagelocality.weight": 1,
    "podtopologyspread.weight": 2,
}


def default_normalize(scores: np.ndarray, reverse: bool = False) -> np.ndarray:
    """kube-scheduler's DefaultNormalizeScore(100, reverse) over integer scores."""
    top = int(scores.max()) if len(scores) else 0
    if top == 0:
        return np.full(len(scores), MAX if reverse else 0, dtype=np.int64)
    s = MAX * scores // top
    return MAX - s if reverse else s


def _read_weights(args: dict[str, Any]) -> dict[str, int]:
    return {k: sel.arg_int(args, k, v) for k, v in WEIGHTS.items()}


# The weights by the plugin's arguments (fastpath.plugin_setup_kept): the plugin is made every session with them.
_WEIGHTS = Memo(65)


def weights(args: dict[str, Any]) -> dict[str, int]:
    """The score weights the arguments give (each plugin its own dict)."""
    return dict(by_arguments(_WEIGHTS, args, _read_weights))


@plugin(NAME)
class NodeOrder:
    def __init__(self, arguments: dict[str, Any] | None = None):
        args = arguments or {}
        self.weights = weights(args)
        self.arguments = args

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.index = NodeIndex.of(ssn)
        # per toleration key, over the nodes alone: kept with the index's node facts (across sessions)
        self._taint_counts: dict[Any, np.ndarray] = self.index.facts.taint_counts
        self._intolerable: dict[Any, bool] = self.index.facts.intolerable  # does some node have a taint it scores down?
        self._pref_rows: dict[Any, np.ndarray] = {}
        self._pod_req: dict[str, tuple] = {}
        self._score_keys: dict[str, tuple[int, tuple | None]] = {}  # task uid -> (carried version, score key)
        ssn.add_fn("node_order_batch", NAME, self.scores)

    # ------------------------------------------------------------ the batch score
    def scores(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        total = np.zeros(len(rows), dtype=np.float64)
        if not len(rows):
            return total
        w = self.weights
        pt = self.index.terms(task)
        parts = (
            ("leastrequested.weight", self.least_allocated),
            ("mostrequested.weight", self.most_allocated),
            ("balancedresource.weight", self.balanced_allocation),
            ("nodeaffinity.weight", self.node_affinity),
            ("tainttoleration.weight", self.taint_toleration),
            ("podaffinity.weight", self.inter_pod_affinity),
            ("podtopologyspread.weight", self.topology_spread),
        )
        for key, fn in parts:
            if w[key]:
                total += fn(task, pt, rows).astype(np.float64) * w[key]
        return total

    def score_key(self, task: TaskInfo) -> tuple | None:
        """What the score of `task` on a node depends on besides the node's own state, when nothing else does
        (Session.node_scores_key): None when a normalised score of this task varies with the set of candidate
        nodes (preferred node affinity, PreferNoSchedule taints on some node, preferred inter-pod terms of the
        pod or of placed pods that match it, soft topology spread).

        With fastpath.score_keys_kept the answer is kept per task until a placed pod's terms are counted or
        uncounted (`NodeIndex.carried_version`): everything else it reads is fixed for the session (the weights,
        the task's terms and request, the nodes' taints)."""
        if not fastpath.score_keys_kept:
            return self._score_key(task)
        if self.weights["podaffinity.weight"]:
            self.index.carried("pref_aff")  # (the placed pods counted: the version below is that of what it gives)
        version = self.index.carried_version
        got = self._score_keys.get(task.uid)
        if got is None or got[0] != version:
            got = self._score_keys[task.uid] = (version, self._score_key(task))
        return got[1]

    def _score_key(self, task: TaskInfo) -> tuple | None:
        w = self.weights
        pt = self.index.terms(task)
        if w["nodeaffinity.weight"] and pt.preferred_terms:
            return None
        if w["podtopologyspread.weight"] and pt.spread_soft:
            return None
        if w["podaffinity.weight"]:
            if pt.pref_aff or pt.pref_anti:
                return None
            for kind in ("pref_aff", "pref_anti"):
                if any(c.term.matches(pt.labels, pt.namespace) for c in self.index.carried(kind)):
                    return None
        if w["tainttoleration.weight"] and self.index.n:
            intolerable = self._intolerable.get(pt.toleration_key)
            if intolerable is None:
                intolerable = self._intolerable[pt.toleration_key] = int(self._taint_counts_of(pt).max()) > 0
            if intolerable:
                return None
        return (NAME, self._pod_request(task))

    def row_state(self, rows: np.ndarray) -> np.ndarray:
        """What the resource scores read per node besides the NodeTable: requested and NonZeroRequested."""
        return np.concatenate([self.index.req()[rows], self.index.nonzero_requested(rows)], axis=1)

    def row_state_key(self, row: int) -> bytes:
        """`row_state` of one row as int64 bytes (Session.node_state_key)."""
        return self.index.state_bytes(row)

    # ------------------------------------------------------------ resources
    def _pod_request(self, task: TaskInfo) -> tuple[int, int, int, int, int]:
        """(nonzero cpu, nonzero memory, cpu, memory, gpu) of the incoming pod."""
        r = self._pod_req.get(task.uid)
        if r is None:
            a, b = nonzero_extra(task)
            q = task.resreq
            r = self._pod_req[task.uid] = (q[CPU] + a, q[MEMORY] + b, q[CPU], q[MEMORY], q[GPU])
        return r

    def _alloc(self, name: str, rows: np.ndarray) -> np.ndarray:
        t = self.ssn.table
        if name not in t.col:
            return np.zeros(len(rows), dtype=np.int64)
        return t.alloc[rows, t.col[name]]

    def _requested(self, name: str, rows: np.ndarray) -> np.ndarray:
        t = self.ssn.table
        if name not in t.col:
            return np.zeros(len(rows), dtype=np.int64)
        return self.index.req()[rows, t.col[name]]

    def _fit_score(self, task: TaskInfo, rows: np.ndarray, most: bool) -> np.ndarray:
        nz = self.index.nonzero_requested(rows)
        pc, pm, *_ = self._pod_request(task)
        weight = 1 if most else 50
        total = np.zeros(len(rows), dtype=np.int64)
        wsum = np.zeros(len(rows), dtype=np.int64)
        for col, name, pod in ((0, CPU, pc), (1, MEMORY, pm)):
            cap = self._alloc(name, rows)
            req = nz[:, col] + pod
            safe = np.where(cap == 0, 1, cap)
            if most:
                s = np.minimum(req, cap) * MAX // safe
            else:
                s = np.where(req > cap, 0, (cap - req) * MAX // safe)
            has = cap != 0
            total += np.where(has, s * weight, 0)
            wsum += np.where(has, weight, 0)
        return np.where(wsum == 0, 0, total // np.where(wsum == 0, 1, wsum))

    def least_allocated(self, task: TaskInfo, pt: PodTerms, rows: np.ndarray) -> np.ndarray:
        return self._fit_score(task, rows, most=False)

    def most_allocated(self, task: TaskInfo, pt: PodTerms, rows: np.ndarray) -> np.ndarray:
        return self._fit_score(task, rows, most=True)

    def balanced_allocation(self, task: TaskInfo, pt: PodTerms, rows: np.ndarray) -> np.ndarray:
        _, _, pc, pm, pg = self._pod_request(task)
        if pc == 0 and pm == 0 and pg == 0:
            return np.zeros(len(rows), dtype=np.int64)  # best-effort pod: kube-scheduler skips the score
        fracs, incl = [], []
        for name, pod in ((CPU, pc), (MEMORY, pm), (GPU, pg)):
            cap = self._alloc(name, rows)
            if name == GPU and pod == 0:
                cap = np.zeros(len(rows), dtype=np.int64)  # a scalar the pod does not request is left out
            req = self._requested(name, rows) + pod
            has = cap != 0
            f = np.where(has, req / np.where(has, cap, 1), 0.0)
            fracs.append(np.minimum(f, 1.0))
            incl.append(has)
        f = np.stack(fracs, axis=1)
        m = np.stack(incl, axis=1)
        k = m.sum(axis=1)
        # Two resources: |f1 - f2| / 2 (kube-scheduler's shortcut; kept for bit-identical results).
        two = np.abs(np.where(m[:, 0] & m[:, 1], f[:, 0] - f[:, 1],
                              np.where(m[:, 0] & m[:, 2], f[:, 0] - f[:, 2], f[:, 1] - f[:, 2]))) / 2
        mean = np.where(k > 0, (f * m).sum(axis=1) / np.maximum(k, 1), 0.0)
        var = (((f - mean[:, None]) ** 2) * m).sum(axis=1) / np.maximum(k, 1)
        std = np.where(k == 2, two, np.where(k > 2, np.sqrt(var), 0.0))
        return ((1 - std) * MAX).astype(np.int64)

    # ------------------------------------------------------------ node affinity and taints
    def node_affinity(self, task: TaskInfo, pt: PodTerms, rows: np.ndarray) -> np.ndarray:
        if not pt.preferred_terms:
            return np.zeros(len(rows), dtype=np.int64)
        key = pt.preferred_key
        full = self._pref_rows.get(key)
        if full is None:
            full = np.zeros(self.index.n, dtype=np.int64)
            for w, term in pt.preferred_terms:
                if w:
                    full += np.where(self.index.term_rows(term), w, 0)
            self._pref_rows[key] = full
        return default_normalize(full[rows])

    def taint_toleration(self, task: TaskInfo, pt: PodTerms, rows: np.ndarray) -> np.ndarray:
        return default_normalize(self._taint_counts_of(pt)[rows], reverse=True)

    def _taint_counts_of(self, pt: PodTerms) -> np.ndarray:
        """Per node, the taints the pod's tolerations do not tolerate (kept per tolerations)."""
        full = self._taint_counts.get(pt.toleration_key)
        if full is None:
            tol = pt.tolerations
            full = self.index.taint_class_values(lambda taints, _u: sel.count_intolerable(taints, tol),
                                                 dtype=np.int64)
            full.flags.writeable = False  # shared by later sessions
            self._taint_counts[pt.toleration_key] = full
        return full

    # ------------------------------------------------------------ inter-pod affinity
    def inter_pod_affinity(self, task: TaskInfo, pt: PodTerms, rows: np.ndarray) -> np.ndarray:
        idx = self.index
        raw = np.zeros(len(rows), dtype=np.float64)
        contributions = 0

        def add(key: str, per_row: np.ndarray, weight: int) -> None:
            nonlocal raw
            codes, _ = idx.column(key)
            dom = idx.domain_sums(key, per_row)
            if not len(dom):
                return
            c = codes[rows]
            raw = raw + np.where(c >= 0, dom[np.where(c >= 0, c, 0)], 0.0) * weight

        for w, term in pt.pref_aff:
            add(term.topology_key, idx.term_counts(term), w)
            contributions += 1
        for w, term in pt.pref_anti:
            add(term.topology_key, idx.term_counts(term), -w)
            contributions += 1
        for kind, sign in (("pref_aff", 1), ("pref_anti", -1)):
            for c in idx.carried(kind):
                if c.term.matches(pt.labels, pt.namespace):
                    add(c.term.topology_key, c.counts, sign * c.weight)
                    contributions += 1
        if not contributions:
            return np.zeros(len(rows), dtype=np.int64)
        raw = raw.astype(np.int64)
        lo, hi = int(raw.min()), int(raw.max())
        if hi == lo:
            return np.zeros(len(rows), dtype=np.int64)
        return (MAX * ((raw - lo) / (hi - lo))).astype(np.int64)

    # ------------------------------------------------------------ topology spread
    def topology_spread(self, task: TaskInfo, pt: PodTerms, rows: np.ndarray) -> np.ndarray:
        constraints = pt.spread_soft
        if not constraints:
            return np.zeros(len(rows), dtype=np.int64)
        idx = self.index
        has_all = np.ones(idx.n, dtype=bool)
        for c in constraints:
            has_all &= idx.has(c.topology_key)
        cand = has_all[rows]  # candidates that are not ignored
        n_cand = int(cand.sum())
        affinity_ok = idx.affinity_rows(pt)
        taint_ok = None
        score = np.zeros(len(rows), dtype=np.float64)
        for c in constraints:
            counts = idx.spread_counts(c.selector, pt.namespace)
            codes, vals = idx.column(c.topology_key)
            rc = codes[rows]
            if c.topology_key == HOSTNAME:
                cnt = counts[rows].astype(np.float64)
                size = n_cand
            else:
                eligible = has_all.copy()
                if c.honor_affinity:
                    eligible &= affinity_ok
                if c.honor_taints:
                    if taint_ok is None:
                        tol = pt.tolerations
                        taint_ok = idx.taint_class_values(
                            lambda taints, _u: sel.first_untolerated(taints, tol) is None, dtype=bool)
                    eligible &= taint_ok
                wanted = np.zeros(len(vals), dtype=bool)
                wanted[rc[cand]] = True  # domains of candidate nodes only
                size = int(wanted.sum())
                dom = np.bincount(codes[eligible], weights=counts[eligible], minlength=len(vals))
                dom = np.where(wanted, dom, 0)
                cnt = np.where(rc >= 0, dom[np.where(rc >= 0, rc, 0)] if len(dom) else 0, 0.0)
            score += cnt * math.log(size + 2) + (c.max_skew - 1)
        raw = np.floor(score + 0.5).astype(np.int64)  # Go's math.Round on non-negative values
        out = np.zeros(len(rows), dtype=np.int64)
        if not n_cand:
            return out
        valid = raw[cand]
        lo, hi = int(valid.min()), int(valid.max())
        if hi == 0:
            out[cand] = MAX
        else:
            out[cand] = MAX * (hi + lo - valid) // hi
        return out
