"""backfill: BestEffort pods of admitted, valid jobs go straight onto nodes with a free pod slot."""

from __future__ import annotations

from action_builders import World, conf, gang_yaml, node_yaml, nodes_yaml, pod_yaml, podgroup_yaml, queue_yaml

CONF = conf("enqueue, allocate, backfill", ["priority", "gang"], ["predicates", "nodeorder"])


def test_best_effort_pods_of_a_running_job_are_bound_on_full_nodes():
    # Both nodes' GPUs are taken; a BestEffort sidecar only needs a pod slot.
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("team")
            + gang_yaml("train", "team", 2, gpu=8, running_on=["n-0", "n-1"])
            + pod_yaml("train-be-0", "train", best_effort=True))
    w = World(text)
    r = w.run(CONF)
    assert r.binds == [("default/train-be-0", "n-0")]  # equal scores: lowest node row


def test_allocate_leaves_best_effort_pods_to_backfill():
    text = (nodes_yaml("n", 1, gpu=8) + queue_yaml("team") + podgroup_yaml("be", "team", 1, phase="Inqueue")
            + pod_yaml("be-0", "be", best_effort=True))
    w = World(text)
    assert w.run(conf("enqueue, allocate", ["gang"])).binds == []
    assert w.run(conf("enqueue, allocate, backfill", ["gang"])).binds == [("default/be-0", "n-0")]


def test_pending_jobs_are_not_backfilled():
    text = (nodes_yaml("n", 1, gpu=8) + queue_yaml("team") + podgroup_yaml("be", "team", 1, phase="Pending")
            + pod_yaml("be-0", "be", best_effort=True))
    w = World(text)
    ssn = w.session(conf("backfill", ["gang"]))
    from magma.scheduler.framework import ACTIONS

    ACTIONS["backfill"](ssn, {})
    assert ssn.binds == []


def test_best_effort_pods_respect_the_pod_limit_and_predicates():
    text = (node_yaml("full", gpu=8, pods=1) + node_yaml("tainted", gpu=8, taints=[{"key": "gpu-only", "value": "x"}])
            + queue_yaml("team")
            + gang_yaml("occupant", "team", 1, gpu=1, running_on=["full"])
            + podgroup_yaml("be", "team", 1, phase="Inqueue") + pod_yaml("be-0", "be", best_effort=True))
    w = World(text)
    r = w.run(CONF)
    assert r.binds == []
    assert r.reasons["default/be"] == (
        "1/1 tasks in gang unschedulable: 0/2 nodes are available: "
        "1 node(s) had untolerated taint {gpu-only: x}, 1 Too many pods")


def test_best_effort_pods_are_bound_as_placed_since_gang_counts_them_ready():
    # Volcano's gang counts pending BestEffort pods towards readiness, so a BestEffort gang is "ready" from the
    # start and backfill binds each pod it places: 2 of 3 here (pod limit 1 per node).
    text = (node_yaml("a", gpu=0, pods=1) + node_yaml("b", gpu=0, pods=1) + queue_yaml("team")
            + podgroup_yaml("be", "team", 3, phase="Inqueue")
            + "".join(pod_yaml(f"be-{i}", "be", best_effort=True) for i in range(3)))
    w = World(text)
    r = w.run(CONF)
    assert sorted(r.binds) == [("default/be-0", "a"), ("default/be-1", "b")]
    assert r.reasons["default/be"].endswith("0/2 nodes are available: 2 Too many pods")


def test_best_effort_tasks_wait_for_a_job_that_is_not_ready():
    # Without gang's best-effort rule (no gang plugin), a job whose JobReady is false keeps its BestEffort
    # tasks Allocated in the session only: a plugin vetoing readiness stops the binds.
    text = (node_yaml("a", gpu=0) + queue_yaml("team") + podgroup_yaml("be", "team", 1, phase="Inqueue")
            + pod_yaml("be-0", "be", best_effort=True))
    w = World(text)
    ssn = w.session(conf("backfill", ["gang"]))
    ssn.add_fn("job_ready", "gang", lambda job: False)
    from magma.scheduler.framework import ACTIONS, TaskStatus

    ACTIONS["backfill"](ssn, {})
    t = next(t for j in ssn.jobs.values() for t in j.tasks.values())
    assert t.status is TaskStatus.ALLOCATED and ssn.binds == []
