"""fastpath.plugin_flags_kept: the sessions of one configuration share which plugins each flag enables, and every
extension point's enabled functions are those the options give."""

from __future__ import annotations

from action_builders import World, conf, gang_yaml, nodes_yaml, queue_yaml
from magma.scheduler.framework import fastpath
from magma.scheduler.framework.session import FLAGS
from magma.scheduler.scheduler import Scheduler

CONF = conf("enqueue, allocate, preempt, backfill", ["priority", "gang", "conformance"],
            ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"])


def _enabled(ssn) -> dict:
    return {point: [[name for name, _ in tier] for tier in ssn._enabled(point)] for point in FLAGS}


def test_sessions_of_a_configuration_share_the_flags_plugins():
    w = World(nodes_yaml("n", 2, gpu=8) + queue_yaml("team") + gang_yaml("a", "team", 2, gpu=4))
    w.tick(0)
    scheduler = Scheduler(w.cluster, CONF)
    first = scheduler.open_session()
    got = _enabled(first)
    assert first.flag_names and first.flag_names is scheduler._flag_names
    scheduler.cache.restore()
    second = scheduler.open_session()
    assert second.flag_names is first.flag_names and _enabled(second) == got
    scheduler.cache.restore()
    with fastpath.disabled("plugin_flags_kept"):
        third = scheduler.open_session()
        assert third.flag_names is not first.flag_names and _enabled(third) == got
    assert got["preemptable"] == [["priority", "gang", "conformance"], ["drf"]]  # the plugins registering a vote
