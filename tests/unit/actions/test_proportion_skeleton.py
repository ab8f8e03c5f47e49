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
    # with the queues' sums as shared_attrs hands them over (the key of the whole figures holds them)
    figures = tuple((q, *index.queue_sums[q][:4]) for q in index.queue_names())
    handed = proportion._attrs_from_skeleton(ssn, tree, dims, info, index, key, figures)
    assert _figures(handed) == _figures(full)
    assert all(list(a.items()) == list(b.items())  # the same vectors, names in the same order (root sums two)
               for n in full for a, b in zip(_vectors(handed[n]), _vectors(full[n])))


def _vectors(at) -> list:
    return [at.allocated, at.request, at.inqueue, at.elastic, at.deserved]


def test_kept_figures_are_lent_to_one_session_and_copied_before_it_changes_them():
    """fastpath.proportion_attrs_lent and proportion_key_parts: a session gets the kept figures themselves, a second
    one asking before the first closed gets copies, and the first one's change leaves the memo with the figures as
    they were."""
    w = World(nodes_yaml("n", 2, gpu=8) + queue_yaml("team") + queue_yaml("other", weight=3)
              + gang_yaml("a", "team", 2, gpu=4, running_on=["n-0", "n-0"])
              + gang_yaml("big", "other", 2, gpu=8, phase="Pending", min_resources=True))
    w.tick(0)
    scheduler = Scheduler(w.cluster, CONF)
    scheduler.run_once()
    first = scheduler.open_session()
    p1 = first.plugins["proportion"]
    key = p1._kept_as
    assert key is not None and proportion._ATTRS[key] is p1.attrs  # lent, not copied
    before = _figures(p1.attrs)
    made = proportion._LAST_STATIC[0][4]  # the key parts: the same records again take them as they are
    second = scheduler.open_session()
    assert proportion._LAST_STATIC[0][4] is made
    p2 = second.plugins["proportion"]
    assert p2._kept_as is None and p2.attrs is not p1.attrs and _figures(p2.attrs) == before
    big = next(j for j in first.jobs.values() if j.name == "big")
    p1.job_enqueued(big)  # the first change: the memo keeps copies as they were
    assert p1._kept_as is None and id(p1.attrs) not in proportion._LENT
    assert proportion._ATTRS[key] is not p1.attrs and _figures(proportion._ATTRS[key]) == before
    assert _figures(p1.attrs) != before
    third = scheduler.open_session()  # the same inputs again: the kept figures, as they were
    assert _figures(third.plugins["proportion"].attrs) == before
    third.plugins["proportion"].on_session_close(third)
    assert id(third.plugins["proportion"].attrs) not in proportion._LENT  # given back unchanged


def test_kept_figures_lent_to_one_session_are_not_lent_again_while_another_session_borrows_others():
    """Three sessions open at once, the second on other figures: the third, asking for the first one's figures,
    gets copies, not the figures the first session holds."""
    def scheduler(extra: str = "") -> Scheduler:
        w = World(nodes_yaml("n", 2, gpu=8) + queue_yaml("team") + queue_yaml("other", weight=3)
                  + gang_yaml("a", "team", 2, gpu=4, running_on=["n-0", "n-0"])
                  + gang_yaml("big", "other", 2, gpu=8, phase="Pending", min_resources=True) + extra)
        w.tick(0)
        s = Scheduler(w.cluster, CONF)
        s.run_once()
        return s

    one, other = scheduler(), scheduler(gang_yaml("c", "other", 1, gpu=2, running_on=["n-1"]))
    first = one.open_session().plugins["proportion"]
    second = other.open_session().plugins["proportion"]
    third = one.open_session().plugins["proportion"]
    assert first._kept_as is not None and second._kept_as is not None  # both lent kept figures
    assert third._kept_as is None and third.attrs is not first.attrs
    assert _figures(third.attrs) == _figures(first.attrs)


def test_a_queue_written_in_its_status_keeps_its_record_and_a_replaced_one_gets_a_new_one():
    """fastpath.queue_status_writes_kept: close's status write leaves the queue's record as it was made; a Queue
    written as another object (its spec changed) is read again."""
    w = World(nodes_yaml("n", 2, gpu=8) + queue_yaml("team") + queue_yaml("other", weight=3)
              + gang_yaml("a", "team", 2, gpu=4, running_on=["n-0", "n-0"]))
    w.tick(0)
    scheduler = Scheduler(w.cluster, CONF)
    scheduler.run_once()
    record = scheduler.open_session().queues["team"]
    scheduler.cache.restore()
    w.cluster.update_queue_status("team", {"allocated": {"nvidia.com/gpu": "8"}})
    assert scheduler.open_session().queues["team"] is record
    scheduler.cache.restore()
    changed = w.cluster.state().queues["team"].model_copy(deep=True)
    changed.spec.weight = 5
    w.cluster.update(changed)
    again = scheduler.open_session().queues["team"]
    assert again is not record and again.weight == 5
