"""GpuPacking (FGD paper's baseline): prefer GPUs already in use, then used nodes, then free nodes.

CPU-only tasks score 0. If all of the node's GPUs are fully free: max(33 - F, F) (F fully free GPUs). Otherwise
take the node's GPUs in ascending order of free share and the first k_t with at least m_t free; u = how many of
them are fully free: u > 0 scores max(50 - u, 33); u = 0 scores max(100 - floor(sum floor(100 f_i / 1000) / 10), 50)
over those GPUs. Integer arithmetic, as in the simulator.
"""

from __future__ import annotations

import numpy as np

from magma.scheduler.framework.devices import MILLI

from .base import Policy


def packing_scores(gpu_free: np.ndarray, ngpu: np.ndarray, nfull: np.ndarray, k: int, m: int) -> np.ndarray:
    """gpu_free (M, G) free milli per GPU of feasible nodes, ngpu and nfull (M,)."""
    all_free = nfull == ngpu
    case3 = np.maximum(33 - nfull, nfull)
    if m < MILLI:  # one shared GPU: the tightest GPU that fits
        tight = np.where(gpu_free >= m, gpu_free, np.iinfo(np.int64).max).min(axis=1)
        used_free = tight == MILLI
        case2 = np.full(len(ngpu), max(50 - 1, 33))
        case1 = np.maximum(100 - (tight * 100 // MILLI) // 10, 50)
        other = np.where(used_free, case2, case1)
    else:  # k whole GPUs: all of them are fully free ones
        other = np.full(len(ngpu), max(50 - k, 33))
    return np.where(all_free, case3, other).astype(np.float64)


class GpuPacking(Policy):
    name = "gpu-packing"

    def scores(self, tc, rows):
        if not tc.k:
            return np.zeros(len(rows), dtype=np.float64)
        st = self.state
        return packing_scores(st.gpu[rows], st.ngpu[rows], st.nfull[rows], tc.k, tc.m)


POLICY = GpuPacking
