"""drf: dominant shares, job order, preemption rule, event handlers, hierarchical DRF."""

from __future__ import annotations

import pytest

from plugin_builders import gang, job, nodes, open_session, queue, task, tiers_config

DRF = tiers_config(["drf"])


def _world():
    # 2 nodes: 192 cpu, 2Ti memory, 16 GPUs in total.
    objs = nodes("n", 2)
    objs += gang("a", 2, gpu=4, cpu=8, memory="64Gi", running_on=["n-0"], min_member=1)  # 4 GPU of 16 -> 0.25
    objs += gang("b", 2, gpu=0, cpu=48, memory="16Gi", running_on=["n-1"], min_member=1)  # 48 cpu of 192 -> 0.25
    objs += gang("c", 1, gpu=1, cpu=1, memory="1Gi", running_on=["n-1"], min_member=1)  # 1/16 GPU -> 0.0625
    objs += gang("d", 1, gpu=1, min_member=1)  # nothing allocated -> 0
    return objs


def test_share_is_the_dominant_fraction_of_the_cluster():
    ssn = open_session(_world(), DRF)
    drf = ssn.plugins["drf"]
    assert drf.shares[job(ssn, "a").uid] == pytest.approx(4 / 16)
    assert drf.shares[job(ssn, "b").uid] == pytest.approx(48 / 192)
    assert drf.shares[job(ssn, "c").uid] == pytest.approx(1 / 16)
    assert drf.shares[job(ssn, "d").uid] == 0


def test_job_order_lower_share_first():
    ssn = open_session(_world(), DRF)
    order = [j.name for j in ssn.sorted_jobs(ssn.jobs.values())]
    assert order[:2] == ["d", "c"]
    assert set(order[2:]) == {"a", "b"}


def test_preemptable_compares_shares_after_the_move():
    ssn = open_session(_world(), DRF)
    drf = ssn.plugins["drf"]
    # d asks 1 GPU: ls = 1/16. Taking a's only running pod leaves a at 0 < 1/16: not a victim.
    assert drf.victims(task(ssn, "d-worker-0"), [task(ssn, "a-worker-0")]) == []
    # a's pending pod asks 4 more GPUs: ls = 8/16; c would drop to 0: not a victim.
    assert drf.victims(task(ssn, "a-worker-1"), [task(ssn, "c-worker-0")]) == []


def test_preemptable_equal_shares_count():
    # p asks 4 GPUs: ls = 4/16. q runs 2 x 4 GPUs: losing one leaves 4/16 (equal: victim), losing both 0 (not).
    objs = nodes("n", 2) + gang("q", 2, gpu=4, cpu=1, memory="1Gi", running_on=["n-0", "n-1"], min_member=1)
    objs += gang("p", 1, gpu=4, cpu=1, memory="1Gi", min_member=1)
    ssn = open_session(objs, DRF)
    q = sorted(job(ssn, "q").tasks.values(), key=lambda t: t.name)
    assert ssn.plugins["drf"].victims(task(ssn, "p-worker-0"), q) == [q[0]]


def test_preemptable_victims_cumulative_within_a_job():
    # A big job with 4 pods of 2 GPUs (8/16 = 0.5) and a small preemptor asking 2 GPUs (2/16 = 0.125).
    objs = nodes("n", 2) + gang("big", 4, gpu=2, running_on=["n-0"] * 4, min_member=1)
    objs += gang("small", 1, gpu=2, min_member=1)
    ssn = open_session(objs, DRF)
    small = task(ssn, "small-worker-0")
    big = sorted(job(ssn, "big").tasks.values(), key=lambda t: t.name)
    # rs after taking 1, 2, 3, 4 pods: 6/16, 4/16, 2/16, 0 -> victims while 0.125 <= rs (equal counts).
    assert [t.name for t in ssn.plugins["drf"].victims(small, big)] == [
        "big-worker-0", "big-worker-1", "big-worker-2"]


def test_event_handlers_keep_shares_current():
    objs = nodes("n", 2) + gang("x", 2, gpu=4, min_member=1)
    ssn = open_session(objs, DRF)
    drf = ssn.plugins["drf"]
    x = job(ssn, "x")
    t0, t1 = sorted(x.tasks.values(), key=lambda t: t.name)
    ssn.allocate(t0, ssn.nodes["n-0"])
    assert drf.shares[x.uid] == pytest.approx(0.25)
    ssn.pipeline(t1, ssn.nodes["n-1"])
    assert drf.shares[x.uid] == pytest.approx(0.5)
    ssn.unallocate(t1)
    assert drf.shares[x.uid] == pytest.approx(0.25)
    assert drf.total_allocated["nvidia.com/gpu"] == 4000


# ---------------------------------------------------------------- hierarchical DRF

def _hdrf_world(a_running: int, b_running: int):
    objs = nodes("n", 2)
    objs += [queue("qa", annotations={"volcano.sh/hierarchy": "root/a", "volcano.sh/hierarchy-weights": "1/1"}),
             queue("qb", annotations={"volcano.sh/hierarchy": "root/b", "volcano.sh/hierarchy-weights": "1/3"})]
    on = ["n-0"] * 4 + ["n-1"] * 4
    objs += gang("ja", 6, queue="qa", gpu=2, cpu=1, memory="1Gi", running_on=on[:a_running], min_member=1)
    objs += gang("jb", 6, queue="qb", gpu=2, cpu=1, memory="1Gi", running_on=on[4:4 + b_running], min_member=1)
    return objs


HDRF = tiers_config([{"name": "drf", "enableHierarchy": True}])


def test_hdrf_orders_queues_by_share_over_weight():
    # qb holds 8 GPUs (0.5 / weight 3 = 0.167), qa holds 4 GPUs (0.25 / weight 1): qb is served first.
    ssn = open_session(_hdrf_world(a_running=2, b_running=4), HDRF)
    qa, qb = ssn.queues["qa"], ssn.queues["qb"]
    assert ssn.queue_order_cmp(qb, qa) < 0
    tree = ssn.plugins["drf"].tree()
    assert tree.children["b"].share == pytest.approx(0.5)
    assert tree.children["a"].share == pytest.approx(0.25)


def test_hdrf_reclaim_only_while_the_reclaimer_stays_behind():
    # qa 8 GPUs, qb 4: moving 2 GPUs gives qb 6/16/3 = 0.125 < qa 6/16 = 0.375 -> victim.
    ssn = open_session(_hdrf_world(a_running=4, b_running=2), HDRF)
    reclaimer = task(ssn, "jb-worker-5")
    victim = task(ssn, "ja-worker-0")
    assert ssn.plugins["drf"].hdrf_victims(reclaimer, [victim]) == [victim]
    # qa 4 GPUs, qb 8: qb + 2 = 10/16/3 = 0.208 > qa - 2 = 2/16 = 0.125 -> not a victim.
    ssn = open_session(_hdrf_world(a_running=2, b_running=4), HDRF)
    reclaimer = task(ssn, "jb-worker-5")
    victim = task(ssn, "ja-worker-0")
    assert ssn.plugins["drf"].hdrf_victims(reclaimer, [victim]) == []


def test_hdrf_off_beside_proportion():
    conf = tiers_config([{"name": "drf", "enableHierarchy": True}, "proportion"])
    ssn = open_session(_hdrf_world(2, 4), conf, plugins=["drf"])
    assert ssn.plugins["drf"].hierarchy is False
    assert "drf" not in ssn._fns["queue_order"]


def test_job_bounds_follow_the_share_left():
    # big runs 4 x 2 GPUs (8/16): a preemptor asking 2 GPUs (ls = 2/16) may take some of big but not all of it
    # (taking all leaves 0); one asking 10 GPUs (ls = 10/16) may take none of it (8/16 is already below).
    objs = nodes("n", 2) + gang("big", 4, gpu=2, running_on=["n-0"] * 4, min_member=1)
    objs += gang("small", 1, gpu=2, min_member=1) + gang("huge", 1, gpu=10, min_member=1)
    ssn = open_session(objs, DRF)
    drf = ssn.plugins["drf"]
    big = job(ssn, "big")
    assert drf.job_bounds(task(ssn, "small-worker-0"), [big]) == [(True, False)]
    assert drf.job_bounds(task(ssn, "huge-worker-0"), [big]) == [(False, False)]
    # what victims gives agrees: some of big for small, none for huge
    tasks = sorted(big.tasks.values(), key=lambda t: t.name)
    assert drf.victims(task(ssn, "small-worker-0"), tasks)
    assert drf.victims(task(ssn, "huge-worker-0"), tasks) == []


def test_job_bounds_every_task_when_the_preemptor_asks_nothing_dominant():
    # A preemptor asking no resource of the cluster has share 0: every task of a job may be given.
    objs = nodes("n", 2) + gang("q", 2, gpu=4, cpu=1, memory="1Gi", running_on=["n-0", "n-1"], min_member=1)
    objs += gang("p", 1, gpu=0, cpu=0, memory="0", min_member=1)
    ssn = open_session(objs, DRF)
    assert ssn.plugins["drf"].job_bounds(task(ssn, "p-worker-0"), [job(ssn, "q")]) == [(True, True)]
