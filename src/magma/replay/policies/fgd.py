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

from magma.scheduler.framework.devices import after_states, state_fragmentation

from .base import FragmentationPolicy


def sigmoid_score(gain: np.ndarray) -> np.ndarray:
    """trunc(100 * 1 / (1 + exp(-gain / 1000))), the simulator's arithmetic."""
    return np.trunc(1.0 / (1.0 + np.exp(-(gain / 1000.0))) * 100.0)


class FGD(FragmentationPolicy):
    name = "fgd"

    def evaluate(self, tc, rows):
        st = self.state
        cand, gpus, cpu_a, gpu_a = after_states(st.cpu[rows], st.gpu[rows], tc.cpu, tc.k, tc.m)
        r = rows[cand]
        after = state_fragmentation(st.target, cpu_a, gpu_a, st.workload.target_access[r], self.access_id[r])
        score = sigmoid_score(st.frag[r] - after)
        if not tc.share:
            return score, gpus, after
        m, g = len(rows), st.gpu.shape[1]
        mat = np.full((m, g), -np.inf)
        mat[cand, gpus] = score
        aft = np.zeros((m, g))
        aft[cand, gpus] = after
        best = np.argmax(mat, axis=1)  # first maximum: the lowest GPU index on ties
        idx = np.arange(m)
        return mat[idx, best], best, aft[idx, best]


POLICY = FGD
