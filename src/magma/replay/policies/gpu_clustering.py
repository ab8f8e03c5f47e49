"""GpuClustering (FGD paper's baseline): keep tasks of one kind together.

A GPU task's tag is "share" (k = 1, m < 1000) or "k-gpu" (k whole GPUs). score = floor(25 * (8000 - g) / 8000)
plus 75 if the node hosts only tasks with the task's tag, 50 if that tag among others, 25 if it hosts no GPU task,
0 otherwise (g: the node's free milli-GPU). CPU-only tasks score 0 everywhere (so the lowest rank wins).
"""

from __future__ import annotations

import numpy as np

from .base import Policy


def clustering_scores(gpu_free_total: np.ndarray, same_tag: np.ndarray, distinct_tags: np.ndarray) -> np.ndarray:
    base = 25 * (8000 - gpu_free_total) // 8000
    bonus = np.where(same_tag > 0, np.where(distinct_tags == 1, 75, 50), np.where(distinct_tags == 0, 25, 0))
    return (base + bonus).astype(np.float64)


class GpuClustering(Policy):
    name = "gpu-clustering"

    def scores(self, tc, rows):
        if not tc.k:
            return np.zeros(len(rows), dtype=np.float64)
        st = self.state
        return clustering_scores(st.gsum[rows], st.tags[rows, tc.tag], st.ntags[rows])


POLICY = GpuClustering
