"""Volcano's binpack plugin on the openb workload.

Volcano's formula (src/magma/scheduler/plugins/binpack.py): for every resource the task requests that has a
weight, s_r = w_r * (request_r + used_r) / allocatable_r; score = 100 * sum s_r / sum w_r (a node where a
request would overflow scores 0; feasible nodes never do). The mapping onto the trace uses Volcano's default
weights: binpack.cpu 1, binpack.memory 1, and the GPU listed in binpack.resources (`nvidia.com/gpu`) with the
default weight 1; the GPU amount is in milli-GPU (k * m of the task; the node's GPUs x 1000), so a sharing task
counts its share. A task with zero memory does not count memory (Volcano skips unrequested resources).
Volcano does not choose GPUs inside a node: the engine's default applies (a sharing task on the fitting GPU with
the least free share, whole GPUs lowest index first). Ties go to the lowest rank (Volcano picks at random).
"""

from __future__ import annotations

import numpy as np

from .base import Policy

WEIGHTS = {"cpu": 1, "memory": 1, "gpu": 1}


class Binpack(Policy):
    name = "binpack"

    def __init__(self, cpu: int = 1, memory: int = 1, gpu: int = 1):
        self.w = {"cpu": cpu, "memory": memory, "gpu": gpu}

    def select(self, tc, rows, memory=0):
        # Memory is part of this score (not of the task class the cache is keyed by): score directly.
        s = self._score(tc, rows, memory)
        best = rows[s == s.max()]
        return int(best[0]) if best.size == 1 else int(best[np.argmin(self.ranks[best])])

    def scores(self, tc, rows, memory: int = 0):
        return self._score(tc, rows, memory)

    def _score(self, tc, rows, memory: int) -> np.ndarray:
        st = self.state
        total = np.zeros(len(rows), dtype=np.float64)
        wsum = 0
        parts = (("cpu", tc.cpu, st.cpu_cap, st.cpu), ("memory", memory, st.mem_cap, st.mem),
                 ("gpu", tc.request, st.ngpu * 1000, st.gsum))
        for name, req, cap, free in parts:
            w = self.w[name]
            if req == 0 or w == 0:
                if req:
                    wsum += w
                continue
            wsum += w
            alloc = cap[rows]
            used = alloc - free[rows]
            total += np.where(alloc > 0, w * (used + req) / np.where(alloc > 0, alloc, 1), 0.0)
        if wsum:
            total /= wsum
        return total * 100.0


POLICY = Binpack
