"""Random (FGD paper's baseline, "random-fit"): a uniformly drawn feasible node; a sharing task on a uniformly
drawn GPU that fits.

Draws come from the replay's Go generator, as the simulator's: `Intn(n)` over the feasible nodes in name order
(no draw when only one node is feasible: kube-scheduler then skips scoring), and for a sharing task a reservoir
draw `Intn(c)` at the c-th fitting GPU. The simulator filters nodes in parallel, so its feasible-node order (and
with it Random's per-seed curve) is not reproducible; only means over seeds are comparable.
"""

from __future__ import annotations

from .base import Policy, whole_gpus


class RandomFit(Policy):
    name = "random"

    def select(self, tc, rows, memory=0):
        if rows.size == 1:
            return int(rows[0])
        return int(rows[self.rng.intn(int(rows.size))])

    def gpus(self, node, tc):
        free = self.state.gpu[node]
        if not tc.share:
            return whole_gpus(free, tc.k)
        choice, seen = -1, 0
        for i in range(int(self.state.ngpu[node])):
            if free[i] >= tc.m:
                seen += 1
                if self.rng.intn(seen) == 0:
                    choice = i
        return [choice]


POLICY = RandomFit
