"""The magma plugin and the GPU device table: requests, node reading, per-GPU accounting (fractions, vGPUs),
NVLink domains, and magma's score in live sessions."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
import yaml

from magma.api.config import parse_config
from magma.api.defaults import builtin_queues
from magma.api.load import load_text
from magma.api.resources import Resources
from magma.cluster.memory import MemoryCluster
from magma.scheduler.framework import Statement, TaskStatus
from magma.scheduler.framework.devices import (
    MILLI,
    DeviceTable,
    GpuRequest,
    parse_domains,
    request_of,
)
from magma.scheduler.plugins.magma import MagmaScorer
from magma.scheduler.scheduler import Scheduler

CONF = parse_config(textwrap.dedent("""
    actions: "enqueue, allocate, backfill"
    tiers:
    - plugins:
      - name: priority
      - name: gang
    - plugins:
      - name: predicates
      - name: magma
""")).unwrap()


def node(name, gpu=2, cpu="32", labels=None, annotations=None, vgpu=None, vgpu_memory=None):
    a = {"cpu": cpu, "memory": "256Gi", "pods": "110"}
    if vgpu is not None:
        a["volcano.sh/vgpu-number"] = str(vgpu)
    if vgpu_memory is not None:
        a["volcano.sh/vgpu-memory"] = str(vgpu_memory)
    if gpu:
        a["nvidia.com/gpu"] = str(gpu)
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
            "status": {"allocatable": a}}


def pod(name, gpu=None, cpu="2", on=None, creation=0, group=None, selector=None, **extra):
    req = {"cpu": cpu, "memory": "4Gi"}
    if gpu is not None:
        req["nvidia.com/gpu"] = str(gpu)
    for k, v in extra.items():
        req["volcano.sh/" + k.replace("_", "-")] = str(v)
    spec = {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {"requests": req}}]}
    if on:
        spec["nodeName"] = on
    if selector:
        spec["nodeSelector"] = selector
    meta = {"name": name, "namespace": "default", "creationTimestamp": creation}
    if group:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": {"phase": "Running" if on else "Pending"}}


def podgroup(name, min_member):
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": min_member, "queue": "default"}, "status": {"phase": "Inqueue"}}


def scheduler(objects) -> Scheduler:
    res = load_text(yaml.safe_dump_all(objects))
    assert not res.problems, [p.format() for p in res.problems]
    return Scheduler(MemoryCluster(list(res.objects) + builtin_queues()), CONF)


def devices(ssn) -> DeviceTable:
    return ssn.__dict__[DeviceTable.KEY]


def held(ssn) -> dict[str, tuple[str, tuple[int, ...]]]:
    dev = devices(ssn)
    return {uid.split("/")[-1]: (ssn.node_list[a.row].name, a.gpus) for uid, a in dev.assignments.items()}


# ---------------------------------------------------------------------------------------------- requests


def test_requests():
    r = lambda **kw: request_of(Resources.parse(kw))  # noqa: E731
    assert r(**{"nvidia.com/gpu": "2"}) == GpuRequest(2, MILLI)
    assert r(**{"nvidia.com/gpu": "2"}).exclusive
    assert r(**{"nvidia.com/gpu": "500m"}) == GpuRequest(1, 500)
    assert not r(**{"nvidia.com/gpu": "500m"}).exclusive
    assert r(**{"nvidia.com/gpu": "1500m"}) == GpuRequest(2, MILLI)
    assert r(cpu="4") is None
    v = r(**{"volcano.sh/vgpu-number": "2", "volcano.sh/vgpu-cores": "30", "volcano.sh/vgpu-memory": "4096"})
    assert v == GpuRequest(2, 300, 4096, 0, True)
    assert r(**{"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory-percentage": "25"}).memory_percent == 25
    assert request_of(Resources.parse({"nvidia.com/gpu": "1"}), {"nvidia.com/gpu.product": "A100"}).model == "A100"


def test_nvlink_domain_text():
    assert parse_domains("0-3;4-7", 8).tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert parse_domains("0-3_4-7", 8).tolist() == [0, 0, 0, 0, 1, 1, 1, 1]  # label form
    assert parse_domains("0,1;2,3", 6).tolist() == [0, 0, 1, 1, 2, 3]  # unlisted GPUs: a domain each


def test_node_reading_gfd_labels_vgpu_split_and_domains():
    sch = scheduler([
        node("plain", gpu=8, annotations={"magma.io/nvlink-domains": "0-3;4-7"},
             labels={"nvidia.com/gpu.product": "H100", "nvidia.com/gpu.memory": "81559"}),
        node("vgpu", gpu=0, labels={"nvidia.com/gpu.count": "4", "nvidia.com/gpu.memory": "16384"},
             vgpu=40),
        node("split", gpu=0, annotations={"magma.io/vgpu-split": "5"}, vgpu=10,
             vgpu_memory=32768),
        node("cpu", gpu=0),
    ])
    ssn = sch.open_session()
    dev = DeviceTable.of(ssn)
    rows = {nd.name: nd.index for nd in ssn.node_list}
    assert dev.ngpu[[rows["plain"], rows["vgpu"], rows["split"], rows["cpu"]]].tolist() == [8, 4, 2, 0]
    assert dev.models[rows["plain"]] == "H100"
    assert dev.memory[[rows["plain"], rows["vgpu"], rows["split"]]].tolist() == [81559, 16384, 16384]
    assert dev.slots[[rows["vgpu"], rows["split"]]].tolist() == [10, 5]
    assert dev.domain[rows["plain"]].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]


# ---------------------------------------------------------------------------------------------- accounting


def test_fractions_share_gpus_and_the_fifth_does_not_fit():
    sch = scheduler([node("n0"), node("n1")] + [pod(f"p{i}", gpu="600m", creation=i) for i in range(5)])
    result = sch.run_once()
    assert sorted(n for _, n in result.binds) == ["n0", "n0", "n1", "n1"]
    reason = result.reasons["default/podgroup-p4"]
    assert "2 Insufficient GPU with 600m free (need 1, best node has 0 free)" in reason
    ssn = sch.open_session()  # the bound pods hold one GPU each, re-derived at the next session
    assert sorted(g for _, g in held(ssn).values()) == [(0,), (0,), (1,), (1,)]
    assert devices(ssn).free.tolist() == [[400, 400], [400, 400]]


def test_a_gang_of_fractions_is_checked_per_gpu_not_per_node():
    # 3 x 600m is 1800m, less than the node's 2000m, but only two GPUs can take 600m: the gang cannot start.
    objs = [node("n0"), podgroup("g", 3)] + [pod(f"g-{i}", gpu="600m", group="g") for i in range(3)]
    result = scheduler(objs).run_once()
    assert result.binds == []
    assert "Insufficient GPU with 600m free" in result.reasons["default/g"]


def test_whole_gpus_need_fully_free_ones_next_to_shares():
    objs = [node("n0", gpu=2), pod("share", gpu="300m", on="n0"), pod("two", gpu=2, creation=1)]
    sch = scheduler(objs)
    ssn = sch.open_session()
    table = ssn.table
    col = table.col["fully free GPU"]
    assert table.idle[0, col] == 1 * MILLI and table.alloc[0, col] == 2 * MILLI
    two = next(t for t in ssn.tasks_by_uid.values() if t.name == "two")
    assert two.vec[col] == 2 * MILLI
    assert sch.run_once().binds == []


def test_vgpus_by_memory_and_slots():
    # 2 GPUs of 16 GiB with 10 vGPU slots each: 6000 MiB vGPUs fit two per GPU (the third would need 18000).
    objs = [node("v", gpu=0, labels={"nvidia.com/gpu.memory": "16000"}, vgpu=20)]
    objs += [pod(f"v{i}", vgpu_number=1, vgpu_memory=6000, creation=i) for i in range(5)]
    sch = scheduler(objs)
    result = sch.run_once()
    assert len(result.binds) == 4
    assert "vGPU slot with 0% compute and 6000Mi memory" in result.reasons["default/podgroup-v4"]
    dev = devices(sch.open_session())
    assert dev.mem_free.tolist() == [[4000, 4000]]
    assert dev.slots_free.tolist() == [[8, 8]]


def test_vgpu_cores_bound_compute():
    objs = [node("v", gpu=0, labels={"nvidia.com/gpu.memory": "16000"}, vgpu=20)]
    objs += [pod(f"c{i}", vgpu_number=1, vgpu_cores=60, vgpu_memory=1000, creation=i) for i in range(3)]
    result = scheduler(objs).run_once()
    assert len(result.binds) == 2  # 60% compute each: one per GPU


def test_per_device_resources_are_not_node_resources():
    # The node does not advertise volcano.sh/vgpu-memory; the request for it is checked per GPU, not per node.
    objs = [node("v", gpu=0, labels={"nvidia.com/gpu.memory": "16000"}, vgpu=10),
            pod("v0", vgpu_number=1, vgpu_memory=2000)]
    assert scheduler(objs).run_once().binds == [("default/v0", "v")]


def test_discard_gives_the_gpus_back():
    sch = scheduler([node("n0"), pod("a", gpu="700m")])
    ssn = sch.open_session()
    dev = DeviceTable.of(ssn)
    task = next(t for t in ssn.tasks_by_uid.values() if t.name == "a")
    stmt = Statement(ssn)
    stmt.allocate(task, ssn.node_list[0])
    assert dev.free_total().tolist() == [1300]
    stmt.discard()
    assert dev.free_total().tolist() == [2000]
    assert task.status is TaskStatus.PENDING and not dev.assignments


# ---------------------------------------------------------------------------------------------- NVLink


def test_multi_gpu_pods_go_inside_one_nvlink_domain():
    # GPU 0 is busy: a 4-GPU pod fits only in domain 4-7; then a 2-GPU pod takes the tightest domain with room
    # (0-3, with 3 free), leaving 4-7 whole for nothing else here.
    objs = [node("n", gpu=8, cpu="96", annotations={"magma.io/nvlink-domains": "0-3;4-7"}),
            pod("busy", gpu=1, on="n"), pod("four", gpu=4, creation=1), pod("two", gpu=2, creation=2)]
    sch = scheduler(objs)
    sch.run_once()
    got = held(sch.open_session())
    assert got["busy"] == ("n", (0,))
    assert got["four"] == ("n", (4, 5, 6, 7))
    assert got["two"] == ("n", (1, 2))


def test_nvlink_bonus_prefers_a_node_where_the_pod_stays_in_one_domain():
    objs = [node("split", gpu=8, cpu="96", annotations={"magma.io/nvlink-domains": "0-1;2-3;4-5;6-7"}),
            node("whole", gpu=8, cpu="96", annotations={"magma.io/nvlink-domains": "0-3;4-7"}),
            pod("four", gpu=4)]
    ssn = scheduler(objs).open_session()
    task = next(t for t in ssn.tasks_by_uid.values() if t.name == "four")
    rows = np.arange(2)
    s = ssn.node_scores(task, rows)
    assert s[1] - s[0] == pytest.approx(5.0)
    assert devices(ssn).one_domain(devices(ssn).request(task), rows).tolist() == [False, True]


# ---------------------------------------------------------------------------------------------- magma's score


def test_score_is_the_shared_scorer_over_the_session_arrays():
    objs = [node("a", gpu=4, cpu="64"), node("b", gpu=4, cpu="16"), pod("busy", gpu="500m", on="a"),
            pod("x", gpu="300m", cpu="4"), pod("y", gpu=1, cpu="8"), pod("z", cpu="6")]
    ssn = scheduler(objs).open_session()
    plugin = ssn.plugins["magma"]
    dev = devices(ssn)
    rows = np.arange(2)
    cpu_col = ssn.table.col["cpu"]
    for name in ("x", "y", "z"):
        task = next(t for t in ssn.tasks_by_uid.values() if t.name == name)
        req = dev.request(task)
        count, milli = (0, 0) if req is None else (req.count, req.milli)
        want, _, _ = plugin.scorer.evaluate(ssn.table.idle[:, cpu_col], dev.free, dev.ngpu * MILLI, plugin.access,
                                            plugin.frag, int(task.resreq["cpu"]), count, milli)
        assert ssn.node_scores(task, rows).tolist() == pytest.approx(np.where(np.isfinite(want), want, 0).tolist())
    assert isinstance(plugin.scorer, MagmaScorer)


def test_a_share_goes_on_the_gpu_already_in_use():
    objs = [node("n", gpu=2, cpu="32"), pod("busy", gpu="600m", on="n"), pod("small", gpu="300m", creation=1)]
    sch = scheduler(objs)
    assert sch.run_once().binds == [("default/small", "n")]
    assert held(sch.open_session())["small"] == ("n", (0,))  # on the busy GPU, GPU 1 stays whole


def test_weight_zero_keeps_devices_but_registers_no_score():
    conf = parse_config(textwrap.dedent("""
        actions: "enqueue, allocate"
        tiers:
        - plugins:
          - name: predicates
          - name: magma
            arguments: {magma.weight: 0}
    """)).unwrap()
    res = load_text(yaml.safe_dump_all([node("n0"), pod("p", gpu="600m")]))
    sch = Scheduler(MemoryCluster(list(res.objects) + builtin_queues()), conf)
    ssn = sch.open_session()
    task = next(iter(ssn.tasks_by_uid.values()))
    assert ssn.node_scores(task, np.arange(1)).tolist() == [0.0]
    assert DeviceTable.KEY in ssn.__dict__
    assert sch.run_once().binds == [("default/p", "n0")]


def test_predicate_fails_nodes_without_enough_gpus():
    objs = [node("one", gpu=1), node("cpu", gpu=0), node("four", gpu=4), pod("p", gpu=2)]
    ssn = scheduler(objs).open_session()
    task = next(iter(ssn.tasks_by_uid.values()))
    res = ssn.plugins["magma"].predicate(task, np.arange(3))
    names = [nd.name for nd in ssn.node_list]
    assert dict(zip(names, res.mask.tolist())) == {"one": False, "cpu": False, "four": True}
    assert res.reasons[0][0] == "node(s) did not have enough GPUs"


# ---------------------------------------------------------------------------------------------- invariants

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["200m", "300m", "500m", "700m", "1", "2"]), min_size=1, max_size=12),
       st.lists(st.sampled_from(["100m", "400m", "1"]), max_size=4))
def test_no_gpu_is_ever_over_committed(pending, running):
    objs = [node("a", gpu=2), node("b", gpu=4, annotations={"magma.io/nvlink-domains": "0-1;2-3"})]
    objs += [pod(f"r{i}", gpu=g, on="ab"[i % 2], creation=i) for i, g in enumerate(running)]
    objs += [pod(f"p{i}", gpu=g, creation=10 + i) for i, g in enumerate(pending)]
    sch = scheduler(objs)
    sch.run_once()
    ssn = sch.open_session()
    dev = devices(ssn)
    assert (dev.free >= 0).all()
    used = np.zeros_like(dev.free)
    for a in dev.assignments.values():
        for i in a.gpus:
            used[a.row, i] += a.milli
    assert ((used + dev.free) == np.where(dev.exists, MILLI, 0)).all()


def test_cached_scores_follow_placements():
    objs = [node("a", gpu=2, cpu="32"), node("b", gpu=2, cpu="32"),
            pod("x", gpu="600m", cpu="4", creation=0), pod("y", gpu="300m", cpu="4", creation=1),
            pod("z", gpu="300m", cpu="4", creation=2)]
    ssn = scheduler(objs).open_session()
    tasks = {t.name: t for t in ssn.tasks_by_uid.values()}
    rows = np.arange(2)
    before = ssn.node_scores(tasks["y"], rows).tolist()
    stmt = Statement(ssn)
    stmt.allocate(tasks["x"], ssn.node_list[0])
    after = ssn.node_scores(tasks["z"], rows).tolist()  # same kind as y: served from the cache where valid
    plugin = ssn.plugins["magma"]
    fresh = plugin.scorer.evaluate(plugin._cpu_free(rows), devices(ssn).free, devices(ssn).ngpu * MILLI,
                                   plugin.access, plugin.frag, 4000, 1, 300)[0].tolist()
    assert after == pytest.approx(fresh)
    assert after[1] == pytest.approx(before[1]) and after[0] != pytest.approx(before[0])
    stmt.discard()
    assert ssn.node_scores(tasks["z"], rows).tolist() == pytest.approx(before)


def test_preemption_still_frees_whole_gpus_when_gpus_are_shared():
    # A running whole-GPU pod of a low-priority job makes way for a high-priority one of the same queue while a
    # GPU share is pending (so the per-GPU capacity columns are on): the evicted pod's GPUs count in them.
    conf = parse_config(textwrap.dedent("""
        actions: "enqueue, allocate, preempt"
        tiers:
        - plugins:
          - name: priority
          - name: gang
          - name: conformance
        - plugins:
          - name: predicates
          - name: proportion
          - name: magma
    """)).unwrap()

    def group(name, prio, creation):
        return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": {"name": name, "namespace": "default", "creationTimestamp": creation},
                "spec": {"minMember": 1, "queue": "team", "priorityClassName": prio},
                "status": {"phase": "Running" if name == "low" else "Inqueue"}}

    def member(name, grp, gpu, creation, on=None):
        p = pod(name, gpu=gpu, on=on, creation=creation, group=grp)
        p["spec"]["priorityClassName"] = {"low": "low", "sh": "low"}.get(grp, "high")
        p["spec"]["terminationGracePeriodSeconds"] = 30
        return p

    objs = [node("n-0", gpu=2),
            {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "team"},
             "spec": {"weight": 1}},
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"}, "value": 10},
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
             "value": 1000},
            group("low", "low", 0), member("low-0", "low", 2, 0, on="n-0"),
            group("high", "high", 10), member("high-0", "high", 2, 10),
            group("sh", "low", 20), member("sh-0", "sh", "300m", 20)]
    res = load_text(yaml.safe_dump_all(objs))
    assert not res.problems, [p.format() for p in res.problems]
    sch = Scheduler(MemoryCluster(list(res.objects) + builtin_queues(), grace_seconds=30), conf)
    ssn = sch.open_session()
    assert "fully free GPU" in ssn.table.col
    result = sch.run_once()
    assert result.evictions == [("default/low-0", "preempt")]
    assert "pipelined onto 1 node(s)" in result.reasons["default/high"]


def test_bound_pods_carry_their_gpu_ids_and_the_next_session_reuses_them():
    # Shares bound in one session must be accounted on the same GPUs in the next one, whatever the creation
    # order says (a re-derivation in creation order could over-commit a GPU).
    objs = [node("a", gpu=2)]
    objs += [pod("r0", gpu="100m", on="a", creation=0)]
    objs += [pod(f"p{i}", gpu=g, creation=10 + i) for i, g in enumerate(["200m", "200m", "300m", "300m", "300m", "500m"])]
    sch = scheduler(objs)
    result = sch.run_once()
    assert len(result.binds) == 6
    pods = sch.cluster.state().pods
    ids = {k: p.metadata.annotations.get("magma.io/gpu-ids") for k, p in pods.items() if k != "default/r0"}
    assert all(v in ("0", "1") for v in ids.values()), ids
    dev = devices(sch.open_session())
    assert (dev.free >= 0).all()
    assert dev.free[0].sum() == 2000 - 100 - 1800
