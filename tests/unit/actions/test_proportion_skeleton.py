"""Proportion's open from a kept skeleton (fastpath.proportion_skeleton): the same figures as the full build, and
the kept skeleton is never changed by the session that used it."""

from __future__ import annotations

from action_builders import World, conf, gang_yaml, nodes_yaml, queue_yaml
from magma.scheduler.plugins import proportion
from magma.scheduler.plugins._queuetree import QueueTree, share_dims
from magma.scheduler.scheduler import Scheduler

CONF = conf("enqueue, allocate, backfill", ["priority", "gang", "conformance"],
            ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"])


def _figures(attrs) -> dict:
    return {n: list(vars(at).items()) for n, at in attrs.items()}


def test_skeleton_gives_the_full_builds_figures_and_stays_as_kept():
    w = World(nodes_yaml("n", 2, gpu=8) + queue_yaml("team") + queue_yaml("other", weight=3)
              + gang_yaml("a", "team", 2, gpu=4, running_on=["n-0", "n-0"])
              + gang_yaml("b", "other", 1, gpu=4, running_on=["n-1"], min_resources=True)
              + gang_yaml("big", "team", 2, gpu=8, phase="Pending", min_resources=True))
    w.tick(0)
    scheduler = Scheduler(w.cluster, CONF)
    scheduler.run_once()
    ssn = scheduler.open_session()
    index = ssn.job_index
    assert index is not None
    tree = QueueTree(ssn.queues)
    dims = share_dims(ssn)
    info = {n: ssn.queues.get(n) for n in tree.names}
    bkey = proportion._bounds_key(ssn, tree, dims, info)
    full = proportion._build_attrs(ssn, tree, dims, info, index, bkey)
    key = (bkey, tuple((q.weight, q.priority) if q else None for q in info.values()), tuple(index.queue_names()))
    proportion._SKELETONS.clear()
    first = proportion._attrs_from_skeleton(ssn, tree, dims, info, index, key)
    assert _figures(first) == _figures(full)
    assert first["team"].deserved != first["other"].deserved  # weights 1 and 3: a fill ran
    for at in first.values():  # what the session's events do to its figures
        at.allocated = at.allocated + at.request
        at.deserved = at.request
    again = proportion._attrs_from_skeleton(ssn, tree, dims, info, index, key)
    assert _figures(again) == _figures(full)
