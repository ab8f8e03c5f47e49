"""DotProd (FGD paper's baseline, Tetris-like): the node whose free vector is least aligned with the task's.

score = trunc(100 * (1 - [(c / 128000)(c_t / 128000) + (g / 8000)(r / 8000)] / 2)): the simulator's "merge"
GPU dimension (all of a node's free GPU as one number) normalised by the fixed maxima ("max"), the dot product
of node-free and task-request vectors averaged over the two dimensions. Float operations in its order.
"""

from __future__ import annotations

import numpy as np

from .base import Policy

MAX_CPU = 128000.0
MAX_GPU = 8000.0


def dotprod_scores(cpu_free: np.ndarray, gpu_free_total: np.ndarray, cpu: int, request: int) -> np.ndarray:
    dot = (cpu_free.astype(np.float64) / MAX_CPU) * (float(cpu) / MAX_CPU)
    dot = dot + (gpu_free_total.astype(np.float64) / MAX_GPU) * (float(request) / MAX_GPU)
    return np.trunc(100.0 * (1.0 - dot / 2.0))


class DotProd(Policy):
    name = "dotprod"

    def scores(self, tc, rows):
        st = self.state
        return dotprod_scores(st.cpu[rows], st.gsum[rows], tc.cpu, tc.request)


POLICY = DotProd
