"""preempt: within a queue by priority, gang-aware victims (whole jobs, fewest, lowest priority), pipelining onto
freed nodes, the hard rules (preemptable false, critical pods, Never, reclaimable false), magma's fixes
(#3787 starving, the enqueue gate, across queues) and the seed's §11-12 emergency story end to end."""

from __future__ import annotations

from action_builders import (
    World,
    seed_config,
    seed_world,
    conf,
    gang_yaml,
    nodes_yaml,
    podgroup_yaml,
    priority_class_yaml,
    queue_yaml,
)
from magma.api.resources import GPU
from magma.scheduler.framework import ACTIONS, TaskStatus

S = TaskStatus
DEFAULT_TIERS = (["priority", "gang", "conformance"], ["overcommit", "drf", "predicates", "proportion", "nodeorder"])
PREEMPT = conf("enqueue, allocate, preempt, backfill", *DEFAULT_TIERS)
PCS = priority_class_yaml("low", 10) + priority_class_yaml("mid", 100) + priority_class_yaml("high", 1000)


def settle(w: World, config, sessions: int = 4, grace_tick: float = 60.0):
    """Run sessions, finishing deletions and starting bound pods between them."""
    for _ in range(sessions):
        w.run(config)
        w.tick(grace_tick)


def test_high_priority_gang_preempts_lower_priority_gang_of_its_queue():
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("team") + PCS
            + gang_yaml("low", "team", 2, gpu=8, running_on=["n-0", "n-1"], priority_class="low", grace=30)
            + gang_yaml("high", "team", 2, gpu=8, priority_class="high", creation=10))
    w = World(text)
    r = w.run(PREEMPT)
    assert sorted(r.evictions) == [("default/low-0", "preempt"), ("default/low-1", "preempt")]
    assert r.binds == []  # the high gang is pipelined while the low pods terminate
    assert "pipelined onto 2 node(s)" in r.reasons["default/high"]
    w.tick(60)
    r = w.run(PREEMPT)
    assert sorted(n for _, n in r.binds) == ["n-0", "n-1"]
    assert set(w.bound("high")) == {"high-0", "high-1"}


def test_preemptor_tasks_are_pipelined_with_a_nominated_node():
    text = (nodes_yaml("n", 1, gpu=8) + queue_yaml("team") + PCS
            + gang_yaml("low", "team", 1, gpu=8, running_on=["n-0"], priority_class="low", grace=30)
            + gang_yaml("high", "team", 1, gpu=8, priority_class="high", creation=10))
    w = World(text)
    ssn = w.session(PREEMPT)
    for name in ("enqueue", "allocate", "preempt"):
        ACTIONS[name](ssn, {})
    high = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == "high-0")
    low = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == "low-0")
    assert high.status is S.PIPELINED and high.nominated_node == "n-0"
    assert low.status is S.RELEASING
    assert ssn.evictions == [("default/low-0", "preempt")]


def test_equal_priority_work_is_not_preempted():
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("team") + PCS
            + gang_yaml("first", "team", 2, gpu=8, running_on=["n-0", "n-1"], priority_class="mid")
            + gang_yaml("second", "team", 2, gpu=8, priority_class="mid", creation=10))
    w = World(text)
    settle(w, PREEMPT, 2)
    assert w.evicted() == []
    assert set(w.bound("first")) == {"first-0", "first-1"}


def test_whole_gang_eviction_never_leaves_a_gang_half_running():
    # The preemptor needs one node; evicting one pod of the 2-pod low gang would break it: both go.
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("team") + PCS
            + gang_yaml("low", "team", 2, gpu=8, running_on=["n-0", "n-1"], priority_class="low", grace=30)
            + gang_yaml("high", "team", 1, gpu=8, priority_class="high", creation=10))
    w = World(text)
    r = w.run(PREEMPT)
    assert sorted(k for k, _ in r.evictions) == ["default/low-0", "default/low-1"]


def test_elastic_victim_gives_only_its_surplus():
    # The low job needs 1 of its 2 pods (minAvailable 1): evicting one pod keeps it running.
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("team") + PCS
            + gang_yaml("low", "team", 2, gpu=8, running_on=["n-0", "n-1"], priority_class="low", min_member=1,
                        grace=30)
            + gang_yaml("high", "team", 1, gpu=8, priority_class="high", creation=10))
    w = World(text)
    r = w.run(PREEMPT)
    assert len(r.evictions) == 1


def test_victims_fewest_jobs_then_lowest_priority():
    # n-0: two 4-GPU single-pod jobs (low); n-1: one 8-GPU single-pod job (low); n-2: one 8-GPU job (mid).
    text = (nodes_yaml("n", 3, gpu=8) + queue_yaml("team") + PCS
            + gang_yaml("a", "team", 1, gpu=4, running_on=["n-0"], priority_class="low")
            + gang_yaml("b", "team", 1, gpu=4, running_on=["n-0"], priority_class="low")
            + gang_yaml("c", "team", 1, gpu=8, running_on=["n-1"], priority_class="low")
            + gang_yaml("d", "team", 1, gpu=8, running_on=["n-2"], priority_class="mid")
            + gang_yaml("high", "team", 1, gpu=8, priority_class="high", creation=10))
    w = World(text)
    r = w.run(PREEMPT)
    assert r.evictions == [("default/c-0", "preempt")]


def test_prefers_one_gang_freeing_two_nodes_over_two_single_jobs():
    # A 2-pod preemptor: one 2-pod low gang frees both nodes it needs (1 job per task served: 0.5) and wins
    # over two single-pod low jobs (1 job per task).
    text = (nodes_yaml("n", 4, gpu=8) + queue_yaml("team") + PCS
            + gang_yaml("single-a", "team", 1, gpu=8, running_on=["n-0"], priority_class="low")
            + gang_yaml("pair", "team", 2, gpu=8, running_on=["n-1", "n-2"], priority_class="low")
            + gang_yaml("single-b", "team", 1, gpu=8, running_on=["n-3"], priority_class="low")
            + gang_yaml("high", "team", 2, gpu=8, priority_class="high", creation=10))
    w = World(text)
    r = w.run(PREEMPT)
    assert sorted(k for k, _ in r.evictions) == ["default/pair-0", "default/pair-1"]


def test_preemptable_false_is_never_a_victim():
    text = (nodes_yaml("n", 1, gpu=8) + queue_yaml("team") + PCS
            + gang_yaml("keep", "team", 1, gpu=8, running_on=["n-0"], priority_class="low",
                        pod_kw={"annotations": {"volcano.sh/preemptable": "false"}})
            + gang_yaml("high", "team", 1, gpu=8, priority_class="high", creation=10))
    w = World(text)
    settle(w, PREEMPT, 2)
    assert w.evicted() == [] and w.bound("high") == {}


def test_preemptable_false_protects_the_whole_gang():
    # One pod of the low gang is protected: evicting the other would leave the gang half-running.
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("team") + PCS
            + gang_yaml("low", "team", 2, gpu=8, running_on=["n-0", "n-1"], priority_class="low")
            + gang_yaml("high", "team", 1, gpu=8, priority_class="high", creation=10))
    text = text.replace("name: low-1\n", "name: low-1\n  labels:\n    volcano.sh/preemptable: \"false\"\n", 1)
    w = World(text)
    settle(w, PREEMPT, 2)
    assert w.evicted() == []


def test_critical_pods_are_never_victims_even_without_conformance():
    text = (nodes_yaml("n", 1, gpu=8) + queue_yaml("team") + PCS
            + gang_yaml("sys", "team", 1, gpu=8, running_on=["n-0"], ns="kube-system", priority_class="low")
            + gang_yaml("high", "team", 1, gpu=8, priority_class="high", creation=10))
    w = World(text)
    settle(w, conf("enqueue, allocate, preempt", ["priority", "gang"], ["predicates", "proportion"]), 2)
    assert w.evicted() == []


def test_preemption_policy_never_does_not_evict():
    text = (nodes_yaml("n", 1, gpu=8) + queue_yaml("team") + PCS
            + gang_yaml("low", "team", 1, gpu=8, running_on=["n-0"], priority_class="low")
            + gang_yaml("polite", "team", 1, gpu=8, priority_class="high", creation=10, pod_kw={"never": True}))
    w = World(text)
    settle(w, PREEMPT, 2)
    assert w.evicted() == []


def test_priority_class_with_never_policy_does_not_evict():
    text = (nodes_yaml("n", 1, gpu=8) + queue_yaml("team") + PCS + priority_class_yaml("polite", 5000, never=True)
            + gang_yaml("low", "team", 1, gpu=8, running_on=["n-0"], priority_class="low")
            + gang_yaml("p", "team", 1, gpu=8, priority_class="polite", creation=10))
    w = World(text)
    settle(w, PREEMPT, 2)
    assert w.evicted() == []


def test_elastic_high_priority_job_preempts_for_its_other_pods_3787():
    # minAvailable 1 of 2, one pod running: gang says "not starving", priority says "starving". Volcano ANDs
    # them (no preemption); magma takes either.
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("team") + PCS
            + gang_yaml("low", "team", 1, gpu=8, running_on=["n-1"], priority_class="low")
            + gang_yaml("high", "team", 2, gpu=8, running_on=["n-0"], min_member=1, priority_class="high"))
    w = World(text)
    r = w.run(PREEMPT)
    assert r.evictions == [("default/low-0", "preempt")]
    ssn = w.session(PREEMPT)
    high = next(j for j in ssn.jobs.values() if j.name == "high")
    assert not ssn.job_starving(high) and ssn.job_starving_any(high)


def test_enqueue_gate_does_not_keep_a_preemptor_pending():
    # The cluster is full; overcommit (factor 1) keeps the high job Pending at enqueue. Volcano's preempt never
    # sees Pending jobs; magma's considers it because it outranks running work of its queue.
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("team") + PCS
            + gang_yaml("low", "team", 2, gpu=8, running_on=["n-0", "n-1"], priority_class="low", grace=30)
            + gang_yaml("high", "team", 2, gpu=8, priority_class="high", creation=10, phase="Pending",
                        min_resources=True))
    config = conf("enqueue, allocate, preempt", *DEFAULT_TIERS)
    w = World(text)
    ssn = w.session(config)
    ssn.plugins["overcommit"].factor = 1.0
    ssn.plugins["overcommit"].on_session_open(ssn)
    ACTIONS["enqueue"](ssn, {})
    high = next(j for j in ssn.jobs.values() if j.name == "high")
    assert high.phase == "Pending"  # the gate said no
    ACTIONS["allocate"](ssn, {})
    ACTIONS["preempt"](ssn, {})
    assert sorted(k for k, _ in ssn.evictions) == ["default/low-0", "default/low-1"]
    assert high.phase == "Inqueue" and high.enqueued_this_session
    assert sorted(t.status.value for t in high.tasks.values()) == ["Pipelined", "Pipelined"]


def test_failed_preemption_is_discarded_whole():
    # The high gang needs 3 nodes; only 2 hold lower-priority work: nothing is evicted.
    text = (nodes_yaml("n", 3, gpu=8) + queue_yaml("team") + PCS
            + gang_yaml("low", "team", 2, gpu=8, running_on=["n-0", "n-1"], priority_class="low")
            + gang_yaml("top", "team", 1, gpu=8, running_on=["n-2"], priority_class="high")
            + gang_yaml("high", "team", 3, gpu=8, priority_class="high", creation=10))
    w = World(text)
    settle(w, PREEMPT, 2)
    assert w.evicted() == []


def test_within_job_lower_priority_tasks_make_room_phase_2():
    text = (nodes_yaml("n", 1, gpu=8) + queue_yaml("team")
            + podgroup_yaml("j", "team", 1, phase="Running")
            + gang_yaml("dummy", "team", 0)  # keeps the builder honest about empty gangs
            )
    from action_builders import pod_yaml

    text += pod_yaml("j-0", "j", gpu=8, node="n-0", annotations={"volcano.sh/task-priority": "1"})
    text += pod_yaml("j-1", "j", gpu=8, annotations={"volcano.sh/task-priority": "5"})
    w = World(text)
    r = w.run(conf("enqueue, allocate, preempt", ["priority", "gang"], ["predicates"]))
    assert r.evictions == [("default/j-0", "preempt")]


def test_phase_2_places_only_by_evicting_the_jobs_own_tasks():
    # A 2-pod gang, one free node, the other held by an equal-priority job: phase 1 finds one node and discards it.
    # Phase 2 (the job's own lower-priority tasks) has no victim: as in Volcano (ValidateVictims), free room alone
    # is no plan there, so no pod of the gang is left pipelined on the free node for the rest of the session.
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("team") + PCS
            + gang_yaml("busy", "team", 1, gpu=8, running_on=["n-1"])
            + gang_yaml("wide", "team", 2, gpu=8, creation=10))
    w = World(text)
    ssn = w.session(PREEMPT)
    for name in ("enqueue", "allocate", "preempt"):
        ACTIONS[name](ssn, {})
    wide = next(j for j in ssn.jobs.values() if j.name == "wide")
    assert sorted(t.status.value for t in wide.tasks.values()) == ["Pending", "Pending"]
    assert ssn.evictions == []
    free = ssn.nodes["n-0"].index
    assert (ssn.table.future_idle()[free] == ssn.table.idle[free]).all()


# ---------------------------------------------------------------- across queues


def test_queue_under_its_share_takes_from_an_overused_queue_never_below_guarantee():
    # b holds 3 of 4 nodes (deserved 2 with a waiting); a's 2-pod job preempts across queues (no reclaim
    # action configured): one node is free, one comes from b, and b keeps its 16-GPU guarantee.
    text = (nodes_yaml("n", 4, gpu=8) + queue_yaml("a") + queue_yaml("b", guarantee={GPU: 16})
            + "".join(gang_yaml(f"b{i}", "b", 1, gpu=8, running_on=[f"n-{i}"], grace=30) for i in range(3))
            + gang_yaml("a-job", "a", 2, gpu=8, creation=10))
    w = World(text)
    config = conf("enqueue, allocate, preempt", *DEFAULT_TIERS)
    r = w.run(config)
    assert len(r.evictions) == 1
    w.tick(60)
    w.run(config)
    assert len(w.bound("a-job")) == 2
    assert sum(1 for p in w.bound() if p.startswith("b")) == 2


def test_reclaimable_false_queue_is_never_taken_from():
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("a") + queue_yaml("b", reclaimable=False)
            + gang_yaml("b0", "b", 1, gpu=8, running_on=["n-0"]) + gang_yaml("b1", "b", 1, gpu=8, running_on=["n-1"])
            + gang_yaml("a-job", "a", 1, gpu=8, creation=10))
    w = World(text)
    settle(w, conf("enqueue, allocate, preempt, reclaim", *DEFAULT_TIERS), 3)
    assert w.evicted() == []


def test_no_share_plugin_no_preemption_across_queues():
    text = (nodes_yaml("n", 1, gpu=8) + queue_yaml("a") + queue_yaml("b") + PCS
            + gang_yaml("b0", "b", 1, gpu=8, running_on=["n-0"], priority_class="low")
            + gang_yaml("a-job", "a", 1, gpu=8, creation=10, priority_class="high"))
    w = World(text)
    settle(w, conf("enqueue, allocate, preempt", ["priority", "gang", "conformance"], ["predicates"]), 2)
    assert w.evicted() == []


# ---------------------------------------------------------------- the seed's §11-12 emergency story


TEAM_GUARANTEE = {"team-nlp": 64, "team-cv": 64, "team-research": 32}


def team_gpus(w: World) -> dict[str, int]:
    """GPUs held per team queue by pods that are bound and not being deleted."""
    state = w.cluster.state()
    out = {q: 0 for q in TEAM_GUARANTEE}
    for p in state.pods.values():
        if not p.spec.node_name or p.metadata.deletion_timestamp is not None:
            continue
        pg = state.podgroups.get(f"{p.namespace}/{p.group_name}")
        if pg is not None and pg.spec.queue in out:
            out[pg.spec.queue] += p.spec.request()[GPU] // 1000
    return out


def test_seed_emergency_job_gets_its_two_nodes_within_a_few_sessions():
    w = seed_world()
    config = seed_config()
    assert "reclaim" not in config.actions
    emergency_pods = {"emergency-hotfix-training-0", "emergency-hotfix-training-1"}
    sessions = 0
    while set(w.bound("emergency-hotfix-training")) != emergency_pods:
        sessions += 1
        assert sessions <= 4, f"emergency job still waiting: {w.results[-1].reasons}"
        w.run(config)
        held = team_gpus(w)
        for team, guarantee in TEAM_GUARANTEE.items():
            assert held[team] >= guarantee, (team, held)
        w.tick(60)  # the evicted pods' grace period ends; bound pods start
    nodes = set(w.bound("emergency-hotfix-training").values())
    assert len(nodes) == 2
    state = w.cluster.state()
    evicted_queues = {state.podgroups[f"{k.split('/')[0]}/{k.split('/')[1].rsplit('-', 1)[0]}"].spec.queue
                      for k, _ in w.cluster.evictions if k.split("/")[0] != "default"}
    assert "emergency" not in evicted_queues
    # Gang-aware: one whole 2-pod team-cv gang made room (two nodes for two pods), nothing else was touched.
    assert sorted(k for k, _ in w.cluster.evictions) == ["cv/cv-0-0", "cv/cv-0-1"]
    assert all(reason == "preempt" for _, reason in w.cluster.evictions)
    assert w.phase("emergency-hotfix-training") == "Running"
    # Later sessions change nothing: no further evictions, no team below its guarantee.
    settle(w, config, 2)
    assert len(w.cluster.evictions) == 2


def test_seed_emergency_without_the_magma_fixes_would_wait():
    # What Volcano's preempt alone does here: within the emergency queue there is nothing to evict.
    w = seed_world()
    ssn = w.session(seed_config())
    ACTIONS["enqueue"](ssn, {})
    ACTIONS["allocate"](ssn, {})
    job = next(j for j in ssn.jobs.values() if j.name == "emergency-hotfix-training")
    from magma.scheduler.actions.preempt import Evictor

    ev = Evictor(ssn, {}, "preempt")
    from magma.scheduler.framework import Statement

    stmt = Statement(ssn)
    task = next(iter(job.tasks.values()))
    assert not ev.place(stmt, task, job, "queue")  # same queue: no victims
    assert ev.place(stmt, task, job, "cross", remaining=2)  # across queues: room found
    ev.discard(stmt)


def test_full_queue_makes_room_by_evicting_its_own_lower_priority_work():
    # The queue's capability (16 GPUs) is used up by a low-priority gang while two nodes of the cluster are
    # free. The high job is kept Pending by the queue's quota at enqueue and is not Allocatable; preempt gives
    # the queue's room back by evicting the low gang whole (evicting one pod would break it).
    text = (nodes_yaml("n", 4, gpu=8) + queue_yaml("team", capability={GPU: 16}) + PCS
            + gang_yaml("low", "team", 2, gpu=8, running_on=["n-0", "n-1"], priority_class="low", grace=30)
            + gang_yaml("high", "team", 1, gpu=8, priority_class="high", creation=10, phase="Pending",
                        min_resources=True))
    w = World(text)
    r = w.run(PREEMPT)
    assert r.phases["default/high"] == "Inqueue"
    assert sorted(k for k, _ in r.evictions) == ["default/low-0", "default/low-1"]
    w.tick(60)
    w.run(PREEMPT)
    assert len(w.bound("high")) == 1


def test_lower_priority_job_never_evicts_a_higher_priority_one_even_when_drf_would():
    # priority finds no victim (the running job outranks the preemptor), so Volcano would ask drf in the second
    # tier, which allows evicting by share. magma never lets a lower-priority job evict a higher one.
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("team") + PCS
            + gang_yaml("big", "team", 2, gpu=8, running_on=["n-0", "n-1"], min_member=1, priority_class="high")
            + gang_yaml("small", "team", 1, gpu=8, priority_class="low", creation=10))
    w = World(text)
    ssn = w.session(PREEMPT)
    for name in ("enqueue", "allocate"):
        ACTIONS[name](ssn, {})
    small = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == "small-0")
    big = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == "big-0")
    assert ssn.preemptable(small, [big]) == [big]  # the plugins' vote: drf decides in tier 2
    ACTIONS["preempt"](ssn, {})
    assert ssn.evictions == []
