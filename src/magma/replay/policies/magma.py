"""magma's own placement policy, the very scoring the live scheduler's `magma` plugin runs.

`MagmaScorer` (src/magma/scheduler/plugins/magma.py): FGD's fragmentation gain plus a cpu-stranding term inside
FGD's sigmoid, then two small preferences that only separate near-equal nodes (a node already using a GPU; for a
GPU share, the GPU left tightest). The target workload and its cpu-per-GPU ratio come from the task list, as FGD's
do. See BENCHMARKS.md for how it compares with FGD on openb and on other workload mixes.
"""

from __future__ import annotations

from magma.scheduler.plugins.magma import MagmaScorer

from .base import FragmentationPolicy


class Magma(FragmentationPolicy):
    name = "magma"

    def __init__(self, **options):
        self.options = options

    def bind(self, state, ranks, rng):
        super().bind(state, ranks, rng)
        self.scorer = MagmaScorer.for_target(state.target, **self.options)
        self.capacity = state.ngpu * 1000

    def evaluate(self, tc, rows):
        st = self.state
        return self.scorer.evaluate(st.cpu[rows], st.gpu[rows], self.capacity[rows],
                                    st.workload.target_access[rows], st.frag[rows], tc.cpu, tc.k, tc.m,
                                    access_id=self.access_id[rows])


POLICY = Magma
