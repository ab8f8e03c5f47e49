"""BestFit (FGD paper's baseline): the node left with the least free cpu and GPU, by fixed maxima.

score = trunc(100 * (1 - [0.5 * (c - c_t) / 128000 + 0.5 * (g - r) / 8000])), with c the node's free milli-CPU,
g its free milli-GPU (all GPUs), c_t and r = k * m the task's requests. The constants are the simulator's
MaxSpecCpu and MaxSpecGpu, not the node's capacity. Float operations in the simulator's order.
"""

from __future__ import annotations

import numpy as np

from .base import Policy

MAX_CPU = 128000.0
MAX_GPU = 8000.0


def bestfit_scores(cpu_free: np.ndarray, gpu_free_total: np.ndarray, cpu: int, request: int) -> np.ndarray:
    s = (cpu_free.astype(np.float64) - float(cpu)) / MAX_CPU * 0.5
    s = s + (gpu_free_total.astype(np.float64) - float(request)) / MAX_GPU * 0.5
    return np.trunc((1.0 - s) * 100.0)


class BestFit(Policy):
    name = "bestfit"

    def scores(self, tc, rows):
        st = self.state
        return bestfit_scores(st.cpu[rows], st.gsum[rows], tc.cpu, tc.request)


POLICY = BestFit
