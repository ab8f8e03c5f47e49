"""capacity: explicit deserved, realCapability as the allocation bound, reclaim keeping guarantees, hierarchy."""

from __future__ import annotations

from magma.scheduler.plugins._queuetree import INF
from plugin_builders import gang, gpus, job, nodes, open_session, pod, podgroup, queue, task, tiers_config

GPU = "nvidia.com/gpu"
FLAT = tiers_config(["capacity"])
HIER = tiers_config([{"name": "capacity", "enableHierarchy": True}])


def flat_world(running_a=14):
    objs = nodes("gpu", 32)
    objs += [queue("qa", 1, deserved={GPU: 96}, guarantee={GPU: 32}), queue("qb", 1, deserved={GPU: 64}),
             queue("qc", 1)]
    names = [f"gpu-{i}" for i in range(32)]
    objs += gang("ja", 32, queue="qa", gpu=8, cpu=1, memory="1Gi", min_member=1, running_on=names[:running_a])
    objs += gang("jb", 32, queue="qb", gpu=8, cpu=1, memory="1Gi", min_member=1, running_on=names[16:18])
    objs += gang("jc", 32, queue="qc", gpu=8, cpu=1, memory="1Gi", min_member=1, running_on=names[18:22])
    return objs


def test_flat_real_capability_and_deserved():
    ssn = open_session(flat_world(), FLAT)
    at = ssn.plugins["capacity"].attrs
    # realCapability = (256 - 32) + guarantee
    assert [gpus(at[q].real_capability) for q in ("qa", "qb", "qc")] == [256, 224, 224]
    assert gpus(at["qa"].deserved) == 96 and gpus(at["qb"].deserved) == 64 and at["qc"].deserved.is_empty()
    assert at["qa"].share == 112 / 96 and at["qb"].share == 16 / 64 and at["qc"].share == 1.0


def test_deserved_capped_by_capability_and_floored_by_guarantee():
    objs = nodes("gpu", 4) + [queue("x", 1, deserved={GPU: 64}, capability={GPU: 24}),
                              queue("y", 1, deserved={GPU: 4}, guarantee={GPU: 8})]
    objs += gang("jx", 1, queue="x", gpu=8) + gang("jy", 1, queue="y", gpu=8)
    ssn = open_session(objs, FLAT)
    at = ssn.plugins["capacity"].attrs
    assert gpus(at["x"].real_capability) == 24 and gpus(at["x"].deserved) == 24
    assert gpus(at["y"].deserved) == 8


def test_queue_order_share_then_deserved_before_best_effort():
    ssn = open_session(flat_world(), FLAT)
    qs = [ssn.queues[n] for n in ("qa", "qb", "qc")]
    assert [q.name for q in ssn.sorted_queues(qs)] == ["qb", "qc", "qa"]
    # qa at exactly its deserved (share 1) ties with best-effort qc (share 1): the queue with deserved first.
    ssn = open_session(flat_world(running_a=12), FLAT)
    qs = [ssn.queues[n] for n in ("qc", "qa", "qb")]
    assert [q.name for q in ssn.sorted_queues(qs)] == ["qb", "qa", "qc"]


def test_allocatable_bound_is_real_capability_not_deserved():
    ssn = open_session(flat_world(), FLAT)
    qa = ssn.queues["qa"]
    # qa holds 112 > deserved 96 but below realCapability 256: still allocatable.
    assert ssn.allocatable(qa, task(ssn, "ja-worker-20"))
    objs = nodes("gpu", 4) + [queue("x", 1, capability={GPU: 16})]
    objs += gang("jx", 3, queue="x", gpu=8, cpu=1, memory="1Gi", min_member=1, running_on=["gpu-0", "gpu-1"])
    ssn = open_session(objs, FLAT)
    t = task(ssn, "jx-worker-2")
    assert not ssn.allocatable(ssn.queues["x"], t)
    assert ssn.plugins["capacity"].not_allocatable(ssn.queues["x"], t) == \
        "queue x: nvidia.com/gpu real capability 16, allocated 16, task needs 8"


def test_preemptive_needs_room_in_deserved_on_some_requested_resource():
    ssn = open_session(flat_world(), FLAT)
    assert ssn.preemptive(ssn.queues["qb"], task(ssn, "jb-worker-5"))  # 24 <= 64
    assert not ssn.preemptive(ssn.queues["qa"], task(ssn, "ja-worker-20"))  # 120 > 96, cpu deserved 0
    assert not ssn.preemptive(ssn.queues["qc"], task(ssn, "jc-worker-20"))  # best effort


def test_reclaim_over_deserved_keeps_guarantee_and_takes_best_effort():
    ssn = open_session(flat_world(), FLAT)
    cap = ssn.plugins["capacity"]
    reclaimer = task(ssn, "jb-worker-5")
    qa_tasks = [t for t in job(ssn, "ja").tasks.values() if t.node]
    victims = cap.reclaim_victims(reclaimer, qa_tasks)
    assert len(victims) == 2  # 112 -> 104 -> 96, then within deserved
    qc_tasks = [t for t in job(ssn, "jc").tasks.values() if t.node]
    assert len(cap.reclaim_victims(reclaimer, qc_tasks)) == 4  # no deserved: immediate victims


def test_reclaim_never_below_guarantee():
    objs = nodes("gpu", 4) + [queue("g", 1, deserved={GPU: 8}, guarantee={GPU: 16}), queue("r", 1, deserved={GPU: 16})]
    objs += gang("jg", 2, queue="g", gpu=8, cpu=1, memory="1Gi", min_member=1, running_on=["gpu-0", "gpu-1"])
    objs += gang("jr", 2, queue="r", gpu=8, cpu=1, memory="1Gi", min_member=1)
    ssn = open_session(objs, FLAT)
    at = ssn.plugins["capacity"].attrs["g"]
    assert gpus(at.deserved) == 16  # max(8, guarantee 16)
    victims = ssn.plugins["capacity"].reclaim_victims(task(ssn, "jr-worker-0"), list(job(ssn, "jg").tasks.values()))
    assert victims == []


def test_reclaim_skips_victims_sharing_no_resource_with_the_reclaimer():
    objs = nodes("gpu", 2) + [queue("a", 1), queue("b", 1, deserved={GPU: 8})]
    objs += [podgroup("cpu-job", queue="a", phase="Running"), pod("cpu-pod", "cpu-job", cpu=4, memory="", node="gpu-0")]
    objs += [podgroup("gpu-job", queue="b", phase="Inqueue"), pod("gpu-pod", "gpu-job", cpu=0, memory="", gpu=8)]
    ssn = open_session(objs, FLAT)
    assert ssn.plugins["capacity"].reclaim_victims(task(ssn, "gpu-pod"), [task(ssn, "cpu-pod")]) == []


def test_reclaim_never_from_non_reclaimable_queue():
    objs = nodes("gpu", 4) + [queue("keep", 1, reclaimable=False), queue("r", 1, deserved={GPU: 16})]
    objs += gang("jk", 2, queue="keep", gpu=8, cpu=1, memory="1Gi", min_member=1, running_on=["gpu-0", "gpu-1"])
    objs += gang("jr", 2, queue="r", gpu=8, cpu=1, memory="1Gi", min_member=1)
    ssn = open_session(objs, FLAT)
    assert ssn.plugins["capacity"].reclaim_victims(task(ssn, "jr-worker-0"), list(job(ssn, "jk").tasks.values())) == []


def test_enqueue_against_real_capability():
    objs = nodes("gpu", 4) + [queue("x", 1, capability={GPU: 24})]
    objs += gang("run", 2, queue="x", gpu=8, cpu=1, memory="1Gi", with_min_resources=True, running_on=["gpu-0", "gpu-1"])
    objs += gang("new", 2, queue="x", gpu=8, cpu=1, memory="1Gi", with_min_resources=True)
    objs += gang("small", 1, queue="x", gpu=8, cpu=1, memory="1Gi", with_min_resources=True)
    ssn = open_session(objs, FLAT)
    new = job(ssn, "new")
    assert ssn.job_enqueueable(new) is False
    assert new.reason == "queue x: nvidia.com/gpu real capability 24, allocated 16, inqueue 0, job needs 16 more"
    small = job(ssn, "small")
    assert ssn.job_enqueueable(small) is True
    ssn.job_enqueued(small)
    assert ssn.job_enqueueable(small) is False  # its own reservation now fills the queue


# ---------------------------------------------------------------- hierarchical

def hier_world(t1_running=10, t2_running=2):
    objs = nodes("gpu", 32)
    objs += [queue("dept", 1, capability={GPU: 100}, guarantee={GPU: 40}),
             queue("t1", 1, parent="dept", guarantee={GPU: 24}, deserved={GPU: 50}),
             queue("t2", 1, parent="dept", guarantee={GPU: 8}, deserved={GPU: 30}),
             queue("other", 1, guarantee={GPU: 16})]
    names = [f"gpu-{i}" for i in range(32)]
    objs += gang("j1", 16, queue="t1", gpu=8, cpu=1, memory="1Gi", min_member=1, running_on=names[:t1_running])
    objs += gang("j2", 16, queue="t2", gpu=8, cpu=1, memory="1Gi", min_member=1,
                 running_on=names[t1_running:t1_running + t2_running])
    objs += gang("jo", 4, queue="other", gpu=8, cpu=1, memory="1Gi", min_member=1)
    return objs


def test_hierarchical_real_capability_inherits_and_reserves_sibling_guarantees():
    ssn = open_session(hier_world(), HIER)
    at = ssn.plugins["capacity"].attrs
    assert at["root"].real_capability[GPU] == INF
    # dept: min(INF - (40 + 16) + 40, 100) = 100; below it free = 100 - 32
    assert gpus(at["dept"].real_capability) == 100
    assert gpus(at["t1"].real_capability) == 68 + 24 and gpus(at["t2"].real_capability) == 68 + 8
    assert at["t1"].capability[GPU] == 100_000  # inherited from dept
    assert gpus(at["root"].guarantee) == 56 and gpus(at["root"].deserved) == 40 + 16
    assert gpus(at["dept"].allocated) == 96  # rolled up


def test_hierarchical_allocatable_checks_ancestors_and_leaves_only():
    ssn = open_session(hier_world(), HIER)
    cap = ssn.plugins["capacity"]
    t = task(ssn, "j2-worker-5")
    # t2: 16 + 8 <= 76, but dept: 96 + 8 > 100
    assert cap.not_allocatable(ssn.queues["t2"], t) == \
        "queue dept: nvidia.com/gpu real capability 100, allocated 96, task needs 8"
    ssn2 = open_session(hier_world(t1_running=8), HIER)
    assert ssn2.allocatable(ssn2.queues["t2"], task(ssn2, "j2-worker-5"))
    assert "not a leaf" in cap.not_allocatable(ssn.queues["dept"], t)


def test_hierarchical_job_in_parent_queue_is_rejected_alone():
    objs = hier_world() + gang("bad", 1, queue="dept", gpu=8, cpu=1, memory="1Gi")
    ssn = open_session(objs, HIER)
    assert ssn.job_enqueueable(job(ssn, "bad")) is False
    assert job(ssn, "bad").reason == "queue dept is not a leaf queue; only leaf queues hold jobs"
    assert ssn.job_enqueueable(job(ssn, "jo")) is True


def test_hierarchical_queue_order_compares_branches():
    # dept's branch (96 / deserved 40) is far over; other holds nothing: other first; inside dept,
    # t2 (16/30) before t1 (80/50).
    ssn = open_session(hier_world(), HIER)
    qs = [ssn.queues[n] for n in ("t1", "t2", "other")]
    assert [q.name for q in ssn.sorted_queues(qs)] == ["other", "t2", "t1"]


def test_event_handlers_roll_up():
    ssn = open_session(hier_world(t1_running=8), HIER)
    t = task(ssn, "j2-worker-5")
    ssn.allocate(t, ssn.nodes["gpu-31"])
    at = ssn.plugins["capacity"].attrs
    assert gpus(at["t2"].allocated) == 24 and gpus(at["dept"].allocated) == 88
    assert at["dept"].share == 88 / 40
    ssn.unallocate(t)
    assert gpus(at["dept"].allocated) == 80
