"""fastpath.plugin_setup_shared: the plugins saying `setup_from_arguments` are made once per configuration, each
session getting a new object holding that state; sessions leave the shared state as `__init__` makes it."""

from __future__ import annotations

from action_builders import World, conf, gang_yaml, nodes_yaml, queue_yaml
from magma.scheduler.framework import fastpath
from magma.scheduler.scheduler import Scheduler

CONF = conf("enqueue, allocate, preempt, backfill", ["priority", "gang", "conformance"],
            ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"])
SHARED = {"priority", "gang", "conformance", "overcommit", "drf", "predicates", "nodeorder", "binpack"}


def _fresh(scheduler: Scheduler) -> dict[str, dict]:
    """Per plugin with a shared setup, the state a new object made from its arguments has."""
    return {name: vars(cls(dict(arguments))) for name, cls, arguments, setup in scheduler._plugin_setups()
            if setup is not None}


def test_sessions_get_new_objects_and_leave_the_shared_state_as_made():
    w = World(nodes_yaml("n", 2, gpu=8) + queue_yaml("team") + queue_yaml("other")
              + gang_yaml("a", "team", 2, gpu=4) + gang_yaml("b", "other", 3, gpu=8) + gang_yaml("c", "team", 1, gpu=8))
    w.tick(0)
    scheduler = Scheduler(w.cluster, CONF)
    setups = {name: setup for name, _, _, setup in scheduler._plugin_setups()}
    assert {name for name, setup in setups.items() if setup is not None} == SHARED
    first = scheduler.open_session()
    plugins = dict(first.plugins)
    scheduler.cache.restore()
    second = scheduler.open_session()
    for name in SHARED:  # a new object per session, holding the shared state (the path was taken)
        assert second.plugins[name] is not plugins[name]
        assert second.plugins[name].arguments is setups[name]["arguments"]
    scheduler.cache.restore()
    for i in range(6):  # sessions placing, preempting and finishing, with drf's own sums (no job index) too
        if i == 3:
            with fastpath.disabled("job_index"):
                scheduler.run_once()
        else:
            scheduler.run_once()
        w.tick(30)
    assert w.bound()
    assert {name: setup for name, setup in setups.items() if setup is not None} == _fresh(scheduler)
    with fastpath.disabled("plugin_setup_shared"):
        third = scheduler.open_session()
        assert all(vars(third.plugins[name]).get("arguments") is not setups[name]["arguments"] for name in SHARED)
