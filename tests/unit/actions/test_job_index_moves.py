"""fastpath.index_moves_in_place: a job index that moves changed jobs in place (`JobIndex._move`) is left exactly as
taking each job out and in again leaves it: the same figures, and every dict, list and resource vector in the same
order."""

from __future__ import annotations

import random

import pytest

from magma.api.resources import Resources
from magma.scheduler.framework import fastpath
from magma.scheduler.framework.info import JobInfo
from magma.scheduler.framework.jobindex import SUMS, JobIndex

DIMS = ("cpu", "memory", "nvidia.com/gpu")


class Counted(JobIndex):
    moves = 0

    def _move(self, uid, old, rec):
        done = super()._move(uid, old, rec)
        Counted.moves += done
        return done


def state(index: JobIndex) -> tuple:
    vec = lambda r: list(r.items())  # noqa: E731 (order counts)
    return ([(u, r.queue, r.key, r.order, [vec(s) for s in r.sums], r.share, sorted(r.dims), r.phase)
             for u, r in index.records.items()],
            [(q, [vec(s) for s in sums]) for q, sums in index.queue_sums.items()],
            list(index.queue_uids.items()), list(index.dims.items()), list(index.keys.items()),
            [(u, vec(r)) for u, r in index.allocated.items()], list(index.shares.items()), sorted(index.active),
            list(index.phases.items()))


def figures_of(rng: random.Random) -> tuple:
    """A job's figures drawn small, so that equal figures, resources dropping out and sole holders happen."""
    def vec() -> Resources:
        return Resources({d: rng.choice([0, 0, 1000, 2000]) for d in rng.sample(DIMS, rng.randint(0, 2))})
    sums = tuple(vec() for _ in SUMS)
    dims = frozenset(rng.sample(DIMS, rng.randint(0, 2)))
    return sums, rng.choice([0.0, 0.5]), dims, rng.choice([None, None, "Running", "Completed"])


@pytest.mark.parametrize("seed", range(40))
def test_moving_in_place_leaves_the_index_as_out_and_in_does(seed):
    rng = random.Random(seed)
    jobs = {f"j{i}": JobInfo(uid=f"j{i}", name=f"j{i}", namespace="a", queue=rng.choice(["q1", "q2"]))
            for i in range(rng.randint(3, 8))}
    drawn = {uid: figures_of(rng) for uid in jobs}
    order = {uid: (0, i) for i, uid in enumerate(jobs)}
    indexes = []
    for _ in range(2):
        index = Counted(lambda j, total: drawn[j.uid][:3], lambda j: drawn[j.uid][3], set())
        index.rebuild(jobs, Resources(), lambda j: order[j.uid])
        indexes.append(index)
    Counted.moves = 0
    for _ in range(30):
        changed = set(rng.sample(sorted(jobs), rng.randint(1, min(3, len(jobs)))))
        for uid in changed:
            old = drawn[uid]
            new = figures_of(rng)
            # mostly the same resources and figures partly kept, as a status change leaves them
            drawn[uid] = (tuple(a if rng.random() < 0.6 else b for a, b in zip(old[0], new[0])),
                          rng.choice([old[1], new[1]]), old[2] if rng.random() < 0.8 else new[2], new[3])
        with fastpath.disabled("index_moves_in_place"):
            indexes[0].update(changed, jobs, lambda j: order[j.uid])
        indexes[1].update(changed, jobs, lambda j: order[j.uid])
        assert state(indexes[0]) == state(indexes[1])
    assert Counted.moves > 0
