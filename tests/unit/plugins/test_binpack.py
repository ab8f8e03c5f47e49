"""binpack plugin: Volcano's formula, worked by hand."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from magma.api.config import PluginOption
from magma.api.load import load_text
from magma.cluster.memory import MemoryCluster
import magma.scheduler.plugins  # noqa: F401  (registers the plugins)
from magma.scheduler.framework import PLUGINS, Session, build

QUEUE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
         "spec": {"weight": 1}}
SEED_ARGS = {"binpack.weight": 10, "binpack.cpu": 1, "binpack.memory": 1,
             "binpack.resources": "nvidia.com/gpu", "binpack.resources.nvidia.com/gpu": 5}


def node(name, cpu="8", memory="16Gi", gpu=None, **extra):
    alloc = {"cpu": cpu, "memory": memory, **extra}
    if gpu is not None:
        alloc["nvidia.com/gpu"] = str(gpu)
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": alloc}}


def pod(name, on=None, **requests):
    body = {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {"requests": {
        k.replace("_", "/").replace("nvidia/gpu", "nvidia.com/gpu").replace("example/foo", "example.com/foo"): str(v)
        for k, v in requests.items()}}}]}
    if on:
        body["nodeName"] = on
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": body,
            "status": {"phase": "Running" if on else "Pending"}}


def session(objects, args):
    res = load_text(yaml.safe_dump_all([QUEUE, *objects]))
    assert not res.problems, [p.format() for p in res.problems]
    ssn = Session(build(MemoryCluster(res.objects).state()), None, [[PluginOption(name="binpack", arguments=args)]])
    p = PLUGINS["binpack"](dict(args))
    ssn.plugins["binpack"] = p
    p.on_session_open(ssn)
    return ssn


def scores(ssn, name):
    t = next(t for t in ssn.tasks_by_uid.values() if t.name == name)
    rows = np.arange(len(ssn.node_list))
    return {ssn.node_list[i].name: s for i, s in zip(rows, ssn.node_scores(t, rows).tolist())}


def cluster():
    return [node("N1", gpu=8), node("N2", gpu=8), node("N3"),
            pod("u1", on="N1", cpu=2, memory="4Gi", nvidia_gpu=4),
            pod("u2", on="N2", cpu=2, memory="4Gi", nvidia_gpu=7),
            pod("u3", on="N3", cpu=2, memory="4Gi"),
            pod("p", cpu=2, memory="4Gi", nvidia_gpu=2)]


def test_worked_example_with_gpu_weight():
    s = scores(session(cluster(), SEED_ARGS), "p")
    # N1: cpu 1*(2+2)/8 = .5, memory 1*(4+4)/16 = .5, gpu 5*(2+4)/8 = 3.75; (4.75 / 7) * 100 * 10
    assert s["N1"] == pytest.approx(4.75 / 7 * 1000)
    # N2: gpu 2 + 7 > 8 -> the node scores 0
    assert s["N2"] == 0.0
    # N3 has no gpu: its score is 0 but its weight still counts: (1 / 7) * 1000
    assert s["N3"] == pytest.approx(1000 / 7)


def test_defaults_weigh_cpu_and_memory_only():
    s = scores(session(cluster(), {}), "p")
    # gpu has no weight: ignored, even the overflow on N2
    assert s == pytest.approx({"N1": 50.0, "N2": 50.0, "N3": 50.0})


def test_negative_resource_weights_become_one():
    args = {"binpack.cpu": -3, "binpack.memory": 2, "binpack.resources": "nvidia.com/gpu",
            "binpack.resources.nvidia.com/gpu": -1}
    s = scores(session(cluster(), args), "p")
    # N1: cpu 1*.5, memory 2*.5, gpu 1*.75 -> 2.25 / 4 * 100
    assert s["N1"] == pytest.approx(2.25 / 4 * 100)


def test_zero_weight_resource_counts_nothing():
    args = {"binpack.cpu": 0, "binpack.memory": 1}
    objs = [node("N", cpu="1"), pod("p", cpu=2, memory="4Gi")]
    # cpu overflows but has weight 0: no zeroing; only memory counts: 4/16 -> 25
    assert scores(session(objs, args), "p") == pytest.approx({"N": 25.0})


def test_weight_zero_registers_nothing_and_weight_scales():
    ssn = session(cluster(), {"binpack.weight": 0})
    assert set(scores(ssn, "p").values()) == {0.0}
    s = scores(session(cluster(), {"binpack.weight": "3"}), "p")  # a quoted number is read as the number
    assert s["N1"] == pytest.approx(150.0)


def test_unlisted_resource_ignored_and_listed_missing_one():
    objs = [node("N", **{"example.com/foo": "4"}), pod("p", cpu=4, memory="8Gi", example_foo=2)]
    assert scores(session(objs, {}), "p") == pytest.approx({"N": 50.0})
    args = {"binpack.resources": "example.com/foo, nvidia.com/gpu", "binpack.resources.example.com/foo": 2}
    # foo: 2 * 2/4 = 1 -> (0.5 + 0.5 + 1) / 4 * 100
    assert scores(session(objs, args), "p") == pytest.approx({"N": 50.0})


def test_used_counts_terminating_pods():
    objs = [node("N"), pod("p", cpu=2, memory="4Gi")]
    done = pod("old", on="N", cpu=2, memory="4Gi")
    done["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    s = scores(session(objs + [done], {}), "p")
    assert s == pytest.approx({"N": 50.0})  # (4/8 + 8/16) / 2 * 100


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 16), st.integers(0, 16), st.integers(1, 16), st.integers(0, 5), st.integers(0, 5),
       st.integers(1, 10))
def test_formula(alloc_cpu, used_cpu, req_cpu, wc, wm, w):
    objs = [node("N", cpu=str(alloc_cpu), memory="16Gi"), pod("p", cpu=req_cpu, memory="4Gi")]
    if used_cpu:
        objs.append(pod("u", on="N", cpu=used_cpu))
    s = scores(session(objs, {"binpack.weight": w, "binpack.cpu": wc, "binpack.memory": wm}), "p")["N"]
    if wc and used_cpu + req_cpu > alloc_cpu:
        assert s == 0.0
    elif wc + wm == 0:
        assert s == 0.0
    else:
        want = (wc * (req_cpu + used_cpu) / alloc_cpu + wm * 4 / 16) / (wc + wm) * 100 * w
        assert s == pytest.approx(want)
