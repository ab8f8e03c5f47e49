"""The policy interface of the replay engine.

A policy scores feasible nodes for one task; the engine picks the highest score, ties to the lowest node rank.
Scores must depend only on the node's own state and the task's class: the base class caches them per class over
all nodes and re-scores only the nodes that changed since (`ClusterState.version`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from magma.scheduler.framework.devices import MILLI

if TYPE_CHECKING:
    from ..gorand import GoRand
    from ..protocol import ClusterState, TaskClass


def best_fit_gpu(free: np.ndarray, m: int) -> int:
    """The GPU with the least free share that still fits m (lowest index on ties)."""
    return int(np.argmin(np.where(free >= m, free, np.iinfo(np.int64).max)))


def whole_gpus(free: np.ndarray, k: int) -> list[int]:
    """The k lowest-index fully free GPUs."""
    return np.flatnonzero(free == MILLI)[:k].tolist()


class Policy:
    name = "base"
    needs_frag = False  # the policy reads ClusterState.frag

    def bind(self, state: "ClusterState", ranks: np.ndarray, rng: "GoRand") -> None:
        self.state = state
        self.ranks = ranks
        self.rng = rng
        self._scores: dict[int, np.ndarray] = {}
        self._stamp: dict[int, np.ndarray] = {}

    # ------------------------------------------------------------ to implement
    def scores(self, tc: "TaskClass", rows: np.ndarray) -> np.ndarray:
        """Scores of the (feasible) node rows for a task of this class."""
        raise NotImplementedError

    # ------------------------------------------------------------ engine hooks
    def select(self, tc: "TaskClass", rows: np.ndarray, memory: int = 0) -> int:
        scores = self._scores.get(tc.id)
        if scores is None:
            n = self.state.n
            scores = self._scores[tc.id] = np.zeros(n, dtype=np.float64)
            stamp = self._stamp[tc.id] = np.full(n, -1, dtype=np.int64)
        else:
            stamp = self._stamp[tc.id]
        version = self.state.version
        stale = rows[stamp[rows] != version[rows]]
        if stale.size:
            scores[stale] = self.scores(tc, stale)
            stamp[stale] = version[stale]
        s = scores[rows]
        best = rows[s == s.max()]
        if best.size == 1:
            return int(best[0])
        return int(best[np.argmin(self.ranks[best])])

    def after_frag(self, node: int, tc: "TaskClass") -> float | None:
        """The chosen node's fragmentation after the placement, when the policy computed it (else None)."""
        return None

    def gpus(self, node: int, tc: "TaskClass") -> list[int]:
        free = self.state.gpu[node]
        if tc.share:
            return [best_fit_gpu(free, tc.m)]
        return whole_gpus(free, tc.k)


class _Cache:
    __slots__ = ("score", "stamp", "gpu", "after")

    def __init__(self, n: int):
        self.score = np.zeros(n, dtype=np.float64)
        self.stamp = np.full(n, -1, dtype=np.int64)
        self.gpu = np.zeros(n, dtype=np.int64)
        self.after = np.zeros(n, dtype=np.float64)


class FragmentationPolicy(Policy):
    """A policy whose evaluation also yields the GPU to use and the node's fragmentation afterwards.

    `evaluate(tc, rows)` returns (score, GPU index or -1, fragmentation after) per row; they are cached per task
    class and node like scores, the chosen GPU comes from the cache, and the chosen node's new fragmentation is
    handed to the cluster state instead of being recomputed."""

    needs_frag = True

    def bind(self, state, ranks, rng):
        super().bind(state, ranks, rng)
        _, access_id = np.unique(state.workload.target_access, axis=0, return_inverse=True)
        self.access_id = access_id.reshape(-1).astype(np.int64)
        self._caches: dict[int, _Cache] = {}

    def evaluate(self, tc: "TaskClass", rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError

    def scores(self, tc, rows):
        return self.evaluate(tc, rows)[0]

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

    def gpus(self, node, tc):
        if tc.share:
            return [int(self._caches[tc.id].gpu[node])]
        return whole_gpus(self.state.gpu[node], tc.k)

    def after_frag(self, node, tc):
        return float(self._caches[tc.id].after[node])
