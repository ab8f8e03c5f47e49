"""enqueue: the gate from Pending to Inqueue, queue by queue and job by job, with reasons in numbers."""

from __future__ import annotations

from action_builders import World, conf, gang_yaml, nodes_yaml, podgroup_yaml, priority_class_yaml, queue_yaml
from magma.scheduler.framework import ACTIONS

OVERCOMMIT = """
configurations:
- name: enqueue
  arguments: {}
"""


def job(ssn, name):
    return next(j for j in ssn.jobs.values() if j.name == name)


def test_job_without_min_resources_is_admitted():
    w = World(nodes_yaml("n", 1, gpu=8) + queue_yaml("team") + gang_yaml("j", "team", 2, gpu=8, phase="Pending"))
    ssn = w.session(conf("enqueue", ["gang"], ["overcommit", "proportion"]))
    ACTIONS["enqueue"](ssn, {})
    j = job(ssn, "j")
    assert j.phase == "Inqueue" and j.enqueued_this_session
    r = w.run(conf("enqueue", ["gang"], ["overcommit", "proportion"]))
    assert r.phases["default/j"] == "Inqueue"  # written to the PodGroup at close
    assert w.phase("j") == "Inqueue"


def test_min_resources_beyond_the_queue_keep_the_job_pending_with_numbers():
    text = (nodes_yaml("n", 4, gpu=8) + queue_yaml("team", capability={"nvidia.com/gpu": 8})
            + gang_yaml("big", "team", 2, gpu=8, phase="Pending", min_resources=True))
    w = World(text)
    r = w.run(conf("enqueue, allocate", ["gang"], ["proportion"]))
    assert r.phases["default/big"] == "Pending"
    reason = r.reasons["default/big"]
    assert "queue team" in reason and "real capability 8" in reason and "job needs 16 more" in reason


def test_no_voting_plugin_admits_everything():
    text = nodes_yaml("n", 1, gpu=8) + queue_yaml("team") + gang_yaml("big", "team", 4, gpu=8, phase="Pending",
                                                                     min_resources=True)
    w = World(text)
    r = w.run(conf("enqueue", ["gang"]))
    assert r.phases["default/big"] == "Inqueue"


def test_higher_priority_job_is_admitted_first_within_its_queue():
    # The cluster (overcommit factor 1) has room for one of the two 8-GPU jobs only.
    text = (nodes_yaml("n", 1, gpu=8) + queue_yaml("team") + priority_class_yaml("high", 1000)
            + gang_yaml("low", "team", 1, gpu=8, phase="Pending", min_resources=True, creation=0)
            + gang_yaml("high", "team", 1, gpu=8, phase="Pending", min_resources=True, creation=10,
                        priority_class="high"))
    config = conf("enqueue", ["priority", "gang"], ["overcommit"], extra="")
    w = World(text)
    ssn = w.session(config)
    ssn.plugins["overcommit"].factor = 1.0
    ssn.plugins["overcommit"].on_session_open(ssn)
    ACTIONS["enqueue"](ssn, {})
    assert job(ssn, "high").phase == "Inqueue"
    assert job(ssn, "low").phase == "Pending"
    assert job(ssn, "low").reason  # the plugin's or enqueue's reason, in numbers
    assert "nvidia.com/gpu" in job(ssn, "low").reason


def test_queue_order_decides_who_gets_the_room():
    # One Pending job per queue turn, and the queue is pushed back: with equal queues (no share plugin to
    # reorder them) the first one in creation/uid order keeps its turn while it has Pending jobs, as in Volcano.
    text = (nodes_yaml("n", 1, gpu=8) + queue_yaml("a") + queue_yaml("b")
            + gang_yaml("a1", "a", 1, gpu=8, phase="Pending", min_resources=True, creation=1)
            + gang_yaml("a2", "a", 1, gpu=8, phase="Pending", min_resources=True, creation=2)
            + gang_yaml("b1", "b", 1, gpu=8, phase="Pending", min_resources=True, creation=3))
    w = World(text)
    ssn = w.session(conf("enqueue", ["gang"], ["overcommit"]))
    ssn.plugins["overcommit"].factor = 2.0  # room for two 8-GPU jobs
    ssn.plugins["overcommit"].on_session_open(ssn)
    ACTIONS["enqueue"](ssn, {})
    admitted = sorted(j.name for j in ssn.jobs.values() if j.phase == "Inqueue")
    assert admitted == ["a1", "a2"]
    assert job(ssn, "b1").phase == "Pending" and "cluster over-commit limit" in job(ssn, "b1").reason


def test_one_queue_with_pending_jobs_is_served_in_job_order_without_ordering_queues():
    # Only queue b has Pending jobs (a runs one): b's jobs come in JobOrder (priority first), and the queues are
    # never ordered, as each other queue would only be popped and dropped.
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("a") + queue_yaml("b") + priority_class_yaml("high", 1000)
            + gang_yaml("run", "a", 1, gpu=8, running_on=["n-0"])
            + gang_yaml("low", "b", 1, gpu=8, phase="Pending", min_resources=True, creation=0)
            + gang_yaml("high", "b", 1, gpu=8, phase="Pending", min_resources=True, creation=10,
                        priority_class="high"))
    w = World(text)
    ssn = w.session(conf("enqueue", ["priority", "gang"], ["overcommit"]))
    ssn.plugins["overcommit"].factor = 1.25  # 20 GPUs less 8 used: room for one more 8-GPU job
    ssn.plugins["overcommit"].on_session_open(ssn)

    def no_queue_order():
        raise AssertionError("the queues were ordered")

    ssn.queue_order_cmp_memo = no_queue_order
    ACTIONS["enqueue"](ssn, {})
    assert job(ssn, "high").phase == "Inqueue"
    assert job(ssn, "low").phase == "Pending" and "cluster over-commit limit" in job(ssn, "low").reason


def test_rejected_job_gets_a_numeric_reason_when_no_plugin_gives_one():
    text = nodes_yaml("n", 1, gpu=8) + queue_yaml("team") + gang_yaml("big", "team", 2, gpu=8, phase="Pending",
                                                                     min_resources=True)
    w = World(text)
    ssn = w.session(conf("enqueue", ["gang"]))
    ssn.add_fn("job_enqueueable", "gang", lambda j: -1)  # a silent rejection
    ACTIONS["enqueue"](ssn, {})
    big = job(ssn, "big")
    assert big.phase == "Pending"
    assert big.reason == ("not admitted by enqueue: minResources cpu needs 16, cluster has 64 idle of 64; "
                          "memory needs 128Gi, cluster has 512Gi idle of 512Gi; "
                          "nvidia.com/gpu needs 16, cluster has 8 idle of 8")


def test_enqueue_gate_admits_a_podless_job_that_preemption_can_serve():
    # A Volcano Job's pods exist only once its PodGroup is Inqueue. A high-priority PodGroup that the gate
    # rejects (cluster full) but that could preempt lower-priority work of its queue is admitted anyway.
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("team") + priority_class_yaml("high", 1000)
            + gang_yaml("low", "team", 2, gpu=8, running_on=["n-0", "n-1"])
            + podgroup_yaml("urgent", "team", 2, phase="Pending", priority_class="high",
                            min_resources={"nvidia.com/gpu": 16}, creation=10))
    w = World(text)
    ssn = w.session(conf("enqueue", ["priority", "gang"], ["overcommit"]))
    ssn.plugins["overcommit"].factor = 1.0
    ssn.plugins["overcommit"].on_session_open(ssn)
    ACTIONS["enqueue"](ssn, {})
    urgent = job(ssn, "urgent")
    assert urgent.phase == "Inqueue"
    assert "admitted anyway" in urgent.reason


def test_podless_job_of_equal_priority_stays_pending():
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("team")
            + gang_yaml("low", "team", 2, gpu=8, running_on=["n-0", "n-1"])
            + podgroup_yaml("other", "team", 2, phase="Pending", min_resources={"nvidia.com/gpu": 16}, creation=10))
    w = World(text)
    ssn = w.session(conf("enqueue", ["priority", "gang"], ["overcommit"]))
    ssn.plugins["overcommit"].factor = 1.0
    ssn.plugins["overcommit"].on_session_open(ssn)
    ACTIONS["enqueue"](ssn, {})
    assert job(ssn, "other").phase == "Pending"


def test_seed_emergency_podgroup_without_pods_passes_a_closed_gate():
    # The seed's emergency Volcano Job before its pods exist, with the over-commit gate closed (factor 1: the
    # cluster is full). Its queue is within its guarantee and the teams are over their shares: admitted, so
    # that the controller creates the pods and preempt can act next session.
    from action_builders import seed_config, seed_world

    w = seed_world(podless=True)
    ssn = w.session(seed_config())
    ssn.plugins["overcommit"].factor = 1.0
    ssn.plugins["overcommit"].on_session_open(ssn)
    ACTIONS["enqueue"](ssn, {})
    em = job(ssn, "emergency-hotfix-training")
    assert em.phase == "Inqueue"
    assert em.reason.startswith("cluster over-commit limit: nvidia.com/gpu idle 0")
    assert "admitted anyway" in em.reason
