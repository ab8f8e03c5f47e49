"""The reservation plugin, case by case (docs/reservation-backfill.md); the properties are in
tests/property/test_reservation_props.py and the starvation story in tests/sim/test_reservation_sim.py."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "actions"))

from action_builders import World, config, group_yaml, nodes_yaml, priority_class_yaml  # noqa: E402
from magma.scheduler.plugins.reservation import expected_runtime, task_runtime  # noqa: E402
from magma.scheduler.reasons import event_key  # noqa: E402

NOW = 1000.0

CONF = config("""
    actions: "enqueue, allocate, backfill"
    tiers:
    - plugins:
      - name: priority
      - name: gang
      - name: conformance
    - plugins:
      - name: overcommit
      - name: drf
      - name: predicates
      - name: proportion
      - name: nodeorder
      - name: reservation
    """)


def busy_world(extra: str, runtimes=("10m", "10m", "30m", "30m")) -> World:
    """Two 4-GPU nodes, each running two 2-GPU pods (started 5 minutes ago; by default those on n-0 run 10
    minutes, those on n-1 30). A 4-GPU job first in line cannot fit now."""
    text = nodes_yaml("n", 2, gpu=4, cpu=64, memory="256Gi")
    for i, rt in enumerate(runtimes):
        text += group_yaml(f"run-{i}", 1, 2, 0.0, rt, "Running", [f"n-{i // 2}"], NOW - 300)
    text += group_yaml("gang", 1, 4, 10.0)
    world = World(text + extra)
    world.now = NOW
    return world


def test_estimates_read_from_pod_podgroup_and_deadline():
    assert expected_runtime({"magma.io/expected-runtime": "1h30m"}) == 5400.0
    assert expected_runtime({"magma.io/expected-runtime": "soon"}) is None
    assert expected_runtime({}) is None
    world = busy_world(group_yaml("dl", 1, 1, 20.0, "2h", deadline=600))
    ssn = world.session(CONF)
    job = next(j for j in ssn.jobs.values() if j.name == "dl")
    task = next(iter(job.tasks.values()))
    assert task_runtime(task, job) == 600.0  # the hard limit is shorter than the estimate


def test_the_first_job_that_does_not_fit_gets_a_reservation_with_a_start():
    world = busy_world("")
    res = world.run(CONF)
    plan = res.reservations["default/gang"]
    # n-0 frees its 4 GPUs when its two pods end: 10 min after they started, 5 min from now.
    assert plan["start"] == NOW + 300 and plan["nodes"] == ["n-0"] and plan["entitled"]
    assert res.reasons["default/gang"].startswith(
        "reserved 1 node (4 nvidia.com/gpu), expected start in 5m, 0 jobs backfilled meanwhile; "
        "now 1/1 tasks in gang unschedulable: ")


def test_a_job_ending_before_the_start_is_backfilled_onto_the_reserved_node():
    # n-0 has no room now: free one GPU there by making run-0 smaller is not possible, so use a 3-pod node layout.
    text = nodes_yaml("n", 2, gpu=4, cpu=64, memory="256Gi")
    text += group_yaml("run-0", 1, 3, 0.0, "10m", "Running", ["n-0"], NOW - 300)  # n-0: 1 GPU idle, 3 free in 5 min
    text += group_yaml("run-1", 1, 4, 0.0, "1h", "Running", ["n-1"], NOW - 300)
    text += group_yaml("gang", 1, 4, 10.0)
    text += group_yaml("short", 1, 1, 20.0, "4m")   # ends before the gang's start: may use n-0's idle GPU
    text += group_yaml("long", 1, 1, 21.0, "20m")   # would outlast it: may not
    text += group_yaml("unknown", 1, 1, 22.0)       # says nothing: never on reserved resources
    world = World(text)
    world.now = NOW
    res = world.run(CONF)
    assert res.reservations["default/gang"]["nodes"] == ["n-0"]
    assert world.bound("short") == {"short-0": "n-0"}
    assert world.bound("long") == {} and world.bound("unknown") == {}
    assert res.backfilled == ["default/short"]


def test_no_estimate_backfills_only_beside_the_reserved_amount():
    text = nodes_yaml("n", 2, gpu=8, cpu=64, memory="256Gi")
    text += group_yaml("run-0", 1, 4, 0.0, "10m", "Running", ["n-0"], NOW - 300)  # n-0: 4 idle, 4 more in 5 min
    text += group_yaml("run-1", 1, 8, 0.0, "1h", "Running", ["n-1"], NOW - 300)
    text += group_yaml("gang", 1, 6, 10.0)                                    # needs 6 of n-0's 8 at the start
    text += group_yaml("a", 1, 2, 20.0)                                       # 2 fit beside the 6 reserved
    text += group_yaml("b", 1, 1, 21.0)                                       # no more room beside them
    world = World(text)
    world.now = NOW
    res = world.run(CONF)
    assert res.reservations["default/gang"]["start"] == NOW + 300
    assert world.bound("a") == {"a-0": "n-0"} and world.bound("b") == {}
    # ... and it would outlast the start, when the queue's deserved share has just room for the gang then.
    assert "queue share reserved for default/gang from 5m on" in res.reasons["default/b"]


def test_a_higher_priority_job_is_not_held_back():
    text = priority_class_yaml("high", 1000)
    world = busy_world(text + group_yaml("vip", 1, 1, 20.0, priority_class="high"), runtimes=("10m", "1h", "30m", "30m"))
    # n-0: a 2-GPU pod ending in 5 min, a 2-GPU pod running 1h; nothing idle anywhere: make room on n-1.
    world.cluster.delete("Pod", "default/run-3-0")
    world.run(CONF)
    assert world.bound("vip") == {"vip-0": "n-1"}


def test_without_estimates_the_reserved_nodes_drain():
    text = nodes_yaml("n", 2, gpu=4, cpu=64, memory="256Gi")
    text += group_yaml("run-0", 1, 2, 0.0, None, "Running", ["n-0"], NOW - 300)
    text += group_yaml("run-1", 1, 3, 0.0, None, "Running", ["n-1"], NOW - 300)
    text += group_yaml("gang", 1, 4, 10.0)
    text += group_yaml("small", 1, 1, 20.0, "1m")  # short, but the start is unknown: it may not use n-0's idle GPUs
    world = World(text)
    world.now = NOW
    res = world.run(CONF)
    plan = res.reservations["default/gang"]
    assert plan["start"] is None and plan["nodes"] == ["n-0"]  # the freest node drains
    assert "draining, expected start unknown (1 running pod there has no runtime estimate)" in \
        res.reasons["default/gang"]
    assert world.bound("small") == {"small-0": "n-1"}  # beside the reservation, on the other node


def test_enqueue_admits_the_gang_first_in_line_and_small_jobs_that_fit_now():
    text = nodes_yaml("n", 2, gpu=4, cpu=64, memory="256Gi")
    text += group_yaml("run-0", 1, 3, 0.0, "10m", "Running", ["n-0"], NOW - 300, min_resources=True)
    text += group_yaml("run-1", 1, 4, 0.0, "1h", "Running", ["n-1"], NOW - 300, min_resources=True)
    text += group_yaml("gang", 1, 4, 10.0, phase="Pending", min_resources=True)
    text += group_yaml("short", 1, 1, 20.0, "4m", phase="Pending", min_resources=True)
    text += group_yaml("more", 1, 1, 21.0, "4m", phase="Pending", min_resources=True)
    world = World(text)
    world.now = NOW
    volcano = config(CONF.to_yaml().replace("  - name: reservation\n", ""))
    world.run(volcano)
    assert world.phase("gang") == "Pending"  # overcommit and proportion keep it out in a busy cluster
    world.run(CONF)
    assert world.phase("gang") == "Inqueue"
    res = world.results[-1]
    assert "admitted anyway: first in line of queue default" in res.reasons["default/gang"] or \
        res.reservations.get("default/gang")
    assert world.bound("short") == {"short-0": "n-0"}  # admitted as a backfill candidate and placed
    assert world.phase("more") == "Pending"  # the one idle GPU is taken: nothing left to promise


def test_the_countdown_alone_does_not_repeat_the_event():
    a = "reserved 4 nodes (32 nvidia.com/gpu), expected start in 9m40s, 3 jobs backfilled meanwhile; now x"
    b = "reserved 4 nodes (32 nvidia.com/gpu), expected start in 9m20s, 4 jobs backfilled meanwhile; now y"
    assert event_key(a) == event_key(b)
    assert event_key(a) != event_key(a.replace("4 nodes", "3 nodes"))
    assert event_key("0/8 nodes are available: 8 Insufficient cpu") == "0/8 nodes are available: 8 Insufficient cpu"
