"""What a session's open keeps from the last one: the queue tree by the queue records (fastpath.queue_tree_kept), facts
read from the configuration alone (Session.config_fact, fastpath.plugin_flags_kept), and proportion's fills keyed by
the token of their fixed inputs."""

from __future__ import annotations

from action_builders import World, conf, gang_yaml, nodes_yaml, queue_yaml
from magma.scheduler.framework import QueueInfo, fastpath
from magma.scheduler.plugins import _queuetree, proportion
from magma.scheduler.plugins._queuetree import QueueTree
from magma.scheduler.scheduler import Scheduler, SessionResult, close_session

CONF = conf("enqueue, allocate, backfill", ["priority", "gang", "conformance"],
            ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"])


def test_queue_tree_is_given_again_for_the_same_records_only():
    root, team = QueueInfo("root"), QueueInfo("team", parent="root")
    dept = QueueInfo("dept", parent="root")
    tree = QueueTree.of({"root": root, "dept": dept, "team": team})
    assert _queuetree._LAST_TREE[0][1] is tree
    assert QueueTree.of({"root": root, "dept": dept, "team": team}) is tree  # a new dict, the same records
    moved = QueueInfo("team", parent="dept")  # a new record for a written Queue: read again
    assert QueueTree.of({"root": root, "dept": dept, "team": moved}).parent("team") == "dept"
    assert QueueTree.of({"root": root, "dept": dept, "team": team}).parent("team") == "root"
    with fastpath.disabled("queue_tree_kept"):
        _queuetree._LAST_TREE[0] = None
        assert QueueTree.of({"root": root, "dept": dept, "team": team}) is tree  # (by names and parents)
        assert _queuetree._LAST_TREE[0] is None


def _close(*sessions) -> None:
    """Close the sessions as run_once does (proportion takes back the figures it lent them)."""
    for ssn in sessions:
        close_session(ssn, SessionResult(uid=ssn.uid, time=ssn.now))
        ssn.release()


def _world() -> World:
    w = World(nodes_yaml("n", 2, gpu=8) + queue_yaml("team") + queue_yaml("other", weight=3)
              + gang_yaml("a", "team", 2, gpu=4, running_on=["n-0", "n-0"])
              + gang_yaml("big", "other", 2, gpu=8, phase="Pending", min_resources=True))
    w.tick(0)
    return w


def test_config_facts_are_read_once_per_configuration():
    scheduler = Scheduler(_world().cluster, CONF)
    reads = []

    def read(ssn):
        reads.append(ssn)
        return len(reads)

    first, second = scheduler.open_session(), scheduler.open_session()
    assert first.config_fact("test.fact", read) == 1
    assert second.config_fact("test.fact", read) == 1  # kept with the configuration's flags
    assert len(reads) == 1
    assert first.plugins["drf"].hierarchy is False  # drf's fact: proportion is configured
    with fastpath.disabled("plugin_flags_kept"):
        third = scheduler.open_session()
        assert third.config_fact("test.fact", read) == 2  # the session's own
    _close(first, second, third)


def test_fills_keyed_by_their_fixed_inputs_give_the_full_keys_deserved():
    scheduler = Scheduler(_world().cluster, CONF)
    scheduler.run_once()
    proportion._FILLS.clear()
    proportion._ATTRS.clear()
    ssn = scheduler.open_session()
    kept = dict(proportion._FILLS)
    assert kept and all(isinstance(key[1], int) for key in kept)  # (pool, token of the fixed inputs, requests)
    attrs = ssn.plugins["proportion"].attrs
    with fastpath.disabled("proportion_skeleton"):
        proportion._ATTRS.clear()
        again = scheduler.open_session()
    assert {n: at.deserved for n, at in again.plugins["proportion"].attrs.items()} == {
        n: at.deserved for n, at in attrs.items()}
    _close(ssn, again)
