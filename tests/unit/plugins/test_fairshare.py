"""fairshare: decayed usage ledger across sessions, fair-tree queue order, namespace order within a queue."""

from __future__ import annotations

import math

import pytest

from magma.api.defaults import builtin_queues
from magma.cluster.memory import MemoryCluster
from magma.scheduler.plugins.fairshare import DOMINANT, FairshareLedger, ledger_for
from plugin_builders import close, gang, job, nodes, open_session, queue, tiers_config

GPU = "nvidia.com/gpu"
FS = tiers_config([{"name": "fairshare", "arguments": {"fairshare.half-life": "1h"}}])


def test_ledger_decay_math():
    led = FairshareLedger(half_life=3600)
    led.observe(0, {("q", "ns"): {GPU: 8.0}})
    led.advance(3600)
    tau = 3600 / math.log(2)
    # 8 GPUs held for one half-life: U = 8 * tau * (1 - 1/2), i.e. a decayed average of 4 GPUs
    assert led.decayed(("q", "ns"), GPU) == pytest.approx(8 * tau * 0.5)
    led.observe(3600, {})
    led.advance(7200)
    assert led.decayed(("q", "ns"), GPU) / tau == pytest.approx(2.0)
    # short intervals add about amount x seconds
    led2 = FairshareLedger(half_life=3600)
    led2.observe(0, {("q", "ns"): {GPU: 8.0}})
    led2.advance(1)
    assert led2.decayed(("q", "ns"), GPU) == pytest.approx(8.0, rel=1e-3)


def test_ledger_lives_on_the_cluster():
    cluster = MemoryCluster(builtin_queues())
    a = ledger_for(cluster, 3600)
    assert cluster.fairshare_ledger is a and ledger_for(cluster, 60) is a and a.half_life == 60


def _two_queue_cluster():
    objs = nodes("gpu", 8) + [queue("qa", 1), queue("qb", 1)] + builtin_queues()
    objs += gang("heavy", 8, queue="qa", gpu=8, cpu=1, memory="1Gi", running_on=[f"gpu-{i}" for i in range(8)])
    return MemoryCluster(objs)


def test_recent_heavy_user_is_ordered_after_an_idle_queue_and_the_effect_decays():
    cluster = _two_queue_cluster()
    s1 = open_session([], FS, plugins=["fairshare"], now=0, cluster=cluster)
    close(s1)  # qa held 64 GPUs from t=0

    # One hour later qa's job is gone; both queues have a pending job and qb runs one 8-GPU pod.
    for i in range(8):
        cluster.delete_pod(f"default/heavy-worker-{i}")
    for o in gang("a2", 1, queue="qa", gpu=8, cpu=1, memory="1Gi") + \
            gang("b2", 2, queue="qb", gpu=8, cpu=1, memory="1Gi", min_member=1, running_on=["gpu-0"]):
        cluster.add(o)
    s2 = open_session([], FS, plugins=["fairshare"], now=3600, cluster=cluster)
    fs = s2.plugins["fairshare"]
    qa, qb = s2.queues["qa"], s2.queues["qb"]
    # qa: decayed average of 64 GPUs over one half-life = 32; qb: 8 held now
    assert fs.branch_load("qa", GPU) == pytest.approx(32.0)
    assert fs.branch_load("qb", GPU) == pytest.approx(8.0)
    assert s2.queue_order_cmp(qb, qa) < 0
    close(s2)

    # 20 hours later (20 half-lives) qa's past has faded below qb's current 8 GPUs (+ its own decayed past).
    s3 = open_session([], FS, plugins=["fairshare"], now=3600 + 20 * 3600, cluster=cluster)
    fs3 = s3.plugins["fairshare"]
    assert fs3.branch_load("qa", GPU) == pytest.approx(32.0 * 2 ** -20, rel=1e-6)
    assert s3.queue_order_cmp(s3.queues["qa"], s3.queues["qb"]) < 0


def test_weights_scale_the_comparison():
    objs = nodes("gpu", 8) + [queue("big", 3), queue("small", 1)] + builtin_queues()
    objs += gang("x", 4, queue="big", gpu=8, cpu=1, memory="1Gi", running_on=[f"gpu-{i}" for i in range(4)])
    objs += gang("y", 2, queue="small", gpu=8, cpu=1, memory="1Gi", running_on=["gpu-4", "gpu-5"])
    ssn = open_session([], FS, plugins=["fairshare"], cluster=MemoryCluster(objs))
    # big: 32 GPUs / weight 3 = 10.7 < small: 16 / 1
    assert ssn.queue_order_cmp(ssn.queues["big"], ssn.queues["small"]) < 0


def test_fair_tree_compares_branches_level_by_level():
    objs = nodes("gpu", 8) + builtin_queues()
    objs += [queue("p1", 1), queue("a", 1, parent="p1"), queue("b", 1, parent="p1"), queue("p2", 1),
             queue("c", 1, parent="p2")]
    objs += gang("ja", 4, queue="a", gpu=8, cpu=1, memory="1Gi", running_on=[f"gpu-{i}" for i in range(4)])
    objs += gang("jb", 1, queue="b", gpu=8, cpu=1, memory="1Gi")
    objs += gang("jc", 2, queue="c", gpu=8, cpu=1, memory="1Gi", running_on=["gpu-4"], min_member=1)
    ssn = open_session([], FS, plugins=["fairshare"], cluster=MemoryCluster(objs))
    b, c = ssn.queues["b"], ssn.queues["c"]
    # b holds nothing, but its branch p1 holds 32 GPUs against p2's 8: c goes first.
    assert ssn.queue_order_cmp(c, b) < 0
    # within p1, b (0) before a (32)
    assert ssn.queue_order_cmp(b, ssn.queues["a"]) < 0


def test_namespaces_within_a_queue_and_event_handlers():
    objs = nodes("gpu", 8) + [queue("q", 1)] + builtin_queues()
    objs += gang("busy-run", 3, queue="q", ns="team-x", gpu=8, cpu=1, memory="1Gi",
                 running_on=["gpu-0", "gpu-1", "gpu-2"])
    objs += gang("x-new", 1, queue="q", ns="team-x", gpu=8, cpu=1, memory="1Gi", creation=0)
    objs += gang("y-new", 1, queue="q", ns="team-y", gpu=8, cpu=1, memory="1Gi", creation=10)
    ssn = open_session([], FS, plugins=["fairshare"], cluster=MemoryCluster(objs))
    x, y = job(ssn, "x-new", "team-x"), job(ssn, "y-new", "team-y")
    assert ssn.job_order_cmp(y, x) < 0
    # give team-y 4 pods' worth during the session: now team-x (24) is below team-y (32)
    fs = ssn.plugins["fairshare"]
    t = next(iter(y.tasks.values()))
    for _ in range(4):
        fs._move(t, 1)
    assert ssn.job_order_cmp(x, y) < 0


def test_dominant_share_unit_without_the_resource_key():
    objs = nodes("cpu", 2, gpu=0) + [queue("q1", 1), queue("q2", 1)] + builtin_queues()
    objs += gang("a", 1, queue="q1", gpu=0, cpu=48, memory="1Gi", running_on=["cpu-0"])
    objs += gang("b", 1, queue="q2", gpu=0, cpu=8, memory="1Gi", running_on=["cpu-1"])
    ssn = open_session([], FS, plugins=["fairshare"], cluster=MemoryCluster(objs))
    fs = ssn.plugins["fairshare"]
    assert fs.unit() == DOMINANT
    assert fs.branch_load("q1", DOMINANT) == pytest.approx(48 / 192)
    assert ssn.queue_order_cmp(ssn.queues["q2"], ssn.queues["q1"]) < 0
