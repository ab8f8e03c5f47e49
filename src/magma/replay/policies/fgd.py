"""FGD, Fragmentation Gradient Descent (Weng et al., ATC'23): place where the expected GPU fragment grows least.

A node's fragmentation frag(n) is FGD's expected idle-GPU fragment against the target workload
(`devices.fragmentation`). score = trunc(100 * sigmoid((frag_before - frag_after) / 1000)). A sharing task tries
every GPU with enough free share and takes the best (lowest index on ties); other tasks take whole fully free
GPUs (lowest index first); CPU-only tasks are scored too (their cpu changes which classes still fit).

Speed: frag_before is cached per node by the cluster state; per task class the score, the chosen GPU and the
after-state's fragmentation are cached per node and recomputed only for nodes that changed; candidate
after-states are deduplicated first (nodes in identical states are one computation); the chosen node's
after-fragmentation becomes its new cached fragmentation without recomputing it.
"""

from __future__ import annotations

import numpy as np

from magma.scheduler.framework.devices import MILLI, dedupe_rows, fragmentation

from .base import Policy, whole_gpus


def sigmoid_score(delta: np.ndarray) -> np.ndarray:
    """trunc(100 * 1 / (1 + exp(-delta / 1000))), the simulator's arithmetic."""
    return np.trunc(1.0 / (1.0 + np.exp(-(delta / 1000.0))) * 100.0)


class _Cache:
    __slots__ = ("score", "stamp", "gpu", "after")

    def __init__(self, n: int):
        self.score = np.zeros(n, dtype=np.float64)
        self.stamp = np.full(n, -1, dtype=np.int64)
        self.gpu = np.zeros(n, dtype=np.int64)
        self.after = np.zeros(n, dtype=np.float64)


class FGD(Policy):
    name = "fgd"
    needs_frag = True

    def bind(self, state, ranks, rng):
        super().bind(state, ranks, rng)
        _, access_id = np.unique(state.workload.target_access, axis=0, return_inverse=True)
        self._access_id = access_id.reshape(-1).astype(np.int64)
        self._caches: dict[int, _Cache] = {}

    # ------------------------------------------------------------ fragmentation of candidate states
    def frag_of(self, rows: np.ndarray, cpu: np.ndarray, gpu: np.ndarray) -> np.ndarray:
        """fragmentation() of after-states (cpu, gpu) on nodes `rows`, once per distinct state."""
        st = self.state
        access = st.workload.target_access
        if len(rows) <= 8:
            return fragmentation(st.target, cpu, gpu, access[rows])
        key = np.concatenate([cpu[:, None], gpu, self._access_id[rows][:, None]], axis=1)
        first, inverse = dedupe_rows(key)
        return fragmentation(st.target, cpu[first], gpu[first], access[rows[first]])[inverse]

    def score_delta(self, tc, rows: np.ndarray, before: np.ndarray, after: np.ndarray,
                    cpu_after: np.ndarray, gpu_after: np.ndarray) -> np.ndarray:
        """The score of each candidate (node row, after-state). FGD: the sigmoid of the fragmentation drop."""
        return sigmoid_score(before - after)

    def evaluate(self, tc, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(score, chosen GPU, after-fragmentation) per row."""
        st = self.state
        if tc.share:
            gpu = st.gpu[rows]
            fit_r, fit_i = np.nonzero(gpu >= tc.m)
            cand_gpu = gpu[fit_r]
            cand_gpu[np.arange(len(fit_r)), fit_i] -= tc.m
            cand_cpu = st.cpu[rows][fit_r] - tc.cpu
            r = rows[fit_r]
            after = self.frag_of(r, cand_cpu, cand_gpu)
            sc = self.score_delta(tc, r, st.frag[r], after, cand_cpu, cand_gpu)
            scores = np.full(gpu.shape, -np.inf)
            scores[fit_r, fit_i] = sc
            afters = np.zeros(gpu.shape)
            afters[fit_r, fit_i] = after
            best = np.argmax(scores, axis=1)  # first maximum: the lowest GPU index on ties
            idx = np.arange(len(rows))
            return scores[idx, best], best, afters[idx, best]
        cpu = st.cpu[rows] - tc.cpu
        gpu = st.gpu[rows].copy()
        if tc.k:
            full = gpu == MILLI
            gpu[full & (np.cumsum(full, axis=1) <= tc.k)] -= MILLI
        after = self.frag_of(rows, cpu, gpu)
        sc = self.score_delta(tc, rows, st.frag[rows], after, cpu, gpu)
        return sc, np.zeros(len(rows), dtype=np.int64), after

    # ------------------------------------------------------------ engine hooks
    def select(self, tc, rows, memory=0):
        c = self._caches.get(tc.id)
        if c is None:
            c = self._caches[tc.id] = _Cache(self.state.n)
        version = self.state.version
        stale = rows[c.stamp[rows] != version[rows]]
        if stale.size:
            c.score[stale], c.gpu[stale], c.after[stale] = self.evaluate(tc, stale)
            c.stamp[stale] = version[stale]
        s = c.score[rows]
        best = rows[s == s.max()]
        if best.size == 1:
            return int(best[0])
        return int(best[np.argmin(self.ranks[best])])

    def scores(self, tc, rows):
        return self.evaluate(tc, rows)[0]

    def gpus(self, node, tc):
        if tc.share:
            return [int(self._caches[tc.id].gpu[node])]
        return whole_gpus(self.state.gpu[node], tc.k)

    def after_frag(self, node, tc):
        return float(self._caches[tc.id].after[node])


POLICY = FGD
