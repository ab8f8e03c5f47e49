"""Workload mixes: deterministic from their seed, and the emphasised kind near its share."""

from __future__ import annotations

from pathlib import Path

import pytest

from magma.replay.mixes import describe, make_mix, weights
from magma.replay.openb import load_pods

DATA = Path(__file__).resolve().parents[3] / "data" / "openb"


@pytest.fixture(scope="module")
def base():
    return load_pods(DATA / "openb_pod_list_default.csv")


def test_same_seed_same_list(base):
    a = make_mix(base, "multigpu", 0.3, 1)
    b = make_mix(base, "multigpu", 0.3, 1)
    c = make_mix(base, "multigpu", 0.3, 2)
    assert a.names == b.names and a.cpu.tolist() == b.cpu.tolist() and a.num_gpu.tolist() == b.num_gpu.tolist()
    assert a.num_gpu.tolist() != c.num_gpu.tolist()
    assert len(a) == len(base) and list(a.names) == sorted(a.names)


@pytest.mark.parametrize("kind, share, measure", [
    ("multigpu", 0.3, "multigpuDemandPercent"),
    ("gpushare", 0.7, "shareOfGpuTasksPercent"),
    ("cpu", 0.3, "cpuOnlyTasksPercent"),
])
def test_share_of_the_emphasised_kind(base, kind, share, measure):
    got = describe(make_mix(base, kind, share, 1))[measure]
    assert abs(got - share * 100) < 3.0


def test_weights_give_the_share_in_expectation(base):
    w = weights(base, "cpu", 0.5)
    cpu_only = base.num_gpu == 0
    assert w[cpu_only].sum() / w.sum() == pytest.approx(0.5)


def test_bigcpu_scales_cpu(base):
    m = make_mix(base, "bigcpu", 1.5, 1)
    assert describe(m)["cpuPerGpu"] > describe(base)["cpuPerGpu"] * 1.4


def test_bad_kind_and_share(base):
    with pytest.raises(ValueError):
        make_mix(base, "tpu", 0.5, 1)
    with pytest.raises(ValueError):
        make_mix(base, "cpu", 1.5, 1)
