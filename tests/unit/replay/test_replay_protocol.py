"""The FGD protocol: arrivals and tune-up, node ranks, the metric, the target workload and fragmentation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from magma.replay.openb import load_nodes, load_pods
from magma.replay.policies import make_policy
from magma.replay.protocol import arrivals, curve_points, node_ranks, run_seed, summarise, Workload
from magma.scheduler.framework.devices import TargetWorkload, fragmentation

from replay_builders import ABC, nodes, pods, state

DATA = Path(__file__).resolve().parents[3] / "data" / "openb"

# Five tasks (k, m): (1, 500), (1, 1000), (0, 0), (2, 1000), (1, 250); 4 GPUs of capacity, tune 1.3.
TINY = pods((1000, 1, 500), (1000, 1, 1000), (1000, 0, 0), (1000, 2, 1000), (1000, 1, 250))


@pytest.mark.parametrize("seed, order, ranks", [
    # From a Go program drawing as the simulator does: Seed; Int(); Shuffle(5); Intn(5) until total + m > 5200;
    # ten Int63(); Perm(3).
    (42, [1, 3, 4, 2, 0, 0, 2], [1, 2, 0]),
    (7, [3, 4, 2, 0, 1, 3], [0, 1, 2]),
])
def test_tune_up_and_ranks_match_go(seed, order, ranks):
    got, rng = arrivals(TINY, seed, 1.3, 4000)
    assert got == order
    assert node_ranks(rng, 3).tolist() == ranks


def test_tune_up_stops_on_the_per_gpu_share_not_the_whole_request():
    # The list asks 3750 of 4000; the target is 5200. Copies go after all originals, and the loop stops at the
    # first draw whose per-GPU m would pass the target.
    order, _ = arrivals(TINY, 42, 1.3, 4000)
    assert sorted(order[:5]) == [0, 1, 2, 3, 4]
    req = (TINY.num_gpu * TINY.gpu_milli).tolist()
    assert sum(req[i] for i in order) == 4250


def test_tune_down_removes_tasks():
    order, _ = arrivals(TINY, 42, 0.5, 4000)  # 3750 > 2000: remove drawn tasks until at most 2000
    req = (TINY.num_gpu * TINY.gpu_milli).tolist()
    assert sum(req[i] for i in order) <= 2000
    assert len(set(order)) == len(order)


def test_seed_42_on_the_trace_has_10866_tasks():
    pods_ = load_pods(DATA / "openb_pod_list_default.csv")
    order, _ = arrivals(pods_, 42, 1.3, 6_212_000)
    assert len(order) == 10866


def test_metric_rounding_and_fallback():
    # one GPU (1000 milli): x = round(A / 10) percent, y = round(U / 10, 2)
    arrived = np.array([100, 200, 204, 600, 1000, 1040])
    used = np.array([100, 200, 201, 500, 800, 800])
    pts = curve_points(arrived, used, 1, 104)
    assert pts[10] == 10.0
    assert pts[20] == 20.05  # mean of 20.0 and 20.1
    assert pts[11] == 10.0  # no event at 11: the events at 10..12
    assert pts[19] == 20.05  # events at 18..20
    assert 30 not in pts  # nothing within one percent
    assert pts[60] == 50.0 and pts[100] == 80.0 and pts[104] == 80.0


def test_metric_rounds_each_event_to_two_decimals_before_the_mean():
    # three GPUs: 1 milli allocated is 0.0333% -> 0.03; 2 milli -> 0.0667% -> 0.07; mean 0.05
    pts = curve_points(np.array([0, 0]), np.array([1, 2]), 3, 0)
    assert pts[0] == 0.05


def test_target_workload_prefix_and_frequencies():
    cpu = [c for c, _, _ in ABC]
    k = [x for _, x, _ in ABC]
    m = [x for _, _, x in ABC]
    tw = TargetWorkload.from_tasks(cpu, m, k, [""] * len(ABC), popularity=100)
    assert list(zip(tw.cpu, tw.milli, tw.count)) == [(4000, 500, 1), (8000, 1000, 1), (2000, 0, 0)]
    assert tw.p.tolist() == [0.5, 0.25, 0.25]
    # 60% of 8 tasks = 4.8: A (4) is not enough, A + B (6) is; B before C on equal count: larger cpu first.
    tw60 = TargetWorkload.from_tasks(cpu, m, k, [""] * len(ABC), popularity=60)
    assert list(tw60.cpu) == [4000, 8000]
    assert tw60.p.tolist() == pytest.approx([4 / 6, 2 / 6])


def test_target_workload_of_the_trace_is_35_classes():
    pods_ = load_pods(DATA / "openb_pod_list_default.csv")
    nodes_ = load_nodes(DATA / "openb_node_list_gpu_node.csv")
    tw = Workload(pods_, nodes_).target
    assert len(tw) == 35
    assert tw.p.sum() == pytest.approx(1.0)
    assert (tw.cpu[0], tw.milli[0], tw.count[0]) == (3152, 810, 1)  # 1047 tasks, the most common class


def test_fragmentation_by_hand():
    tw = TargetWorkload.from_tasks([c for c, _, _ in ABC], [x for _, _, x in ABC], [x for _, x, _ in ABC],
                                   [""] * 8, popularity=100)
    # node 1: 6 cores, GPUs 1000 + 300 free. A (4 cores, 500) fits: only the 300 GPU is its fragment.
    # B (8 cores, 1000) lacks cpu: all 1300 idle milli are fragment. CPU-only C: all 1300 too.
    # node 2: 10 cores, GPUs 200 + 300: nothing fits anywhere: 500 for every class.
    got = fragmentation(tw, np.array([6000, 10000]), np.array([[1000, 300], [200, 300]]))
    assert got.tolist() == [0.5 * 300 + 0.25 * 1300 + 0.25 * 1300, 500.0]


def test_fragmentation_model_access():
    tw = TargetWorkload.from_tasks([1000, 1000], [500, 500], [1, 1], ["A", "A"], popularity=100)
    acc = tw.access(["A", "B"])
    got = fragmentation(tw, np.array([8000, 8000]), np.array([[1000], [1000]]), acc)
    assert got.tolist() == [0.0, 1000.0]  # a node of another model is all fragment to the class


def test_run_seed_and_summary_on_a_tiny_cluster():
    node_list = nodes((16000, 2), (16000, 2))
    pod_list = pods(*ABC)
    wl = Workload(pod_list, node_list)
    tr = run_seed(node_list, wl, make_policy("bestfit"), 42, 1.3, track_frag=True)
    assert len(tr.arrived) == len(tr.placed) == len(tr.frag)
    assert tr.arrived[-1] <= 1.3 * 4000
    assert tr.allocated[-1] <= 4000
    assert (np.diff(tr.allocated) >= 0).all()
    res = summarise("bestfit", 1.3, [tr])
    doc = res.to_json()
    assert set(doc) >= {"policy", "seeds", "allocationAt", "curve"}
    assert doc["policy"] == "bestfit" and doc["seeds"] == [42]
    assert all(isinstance(a, int) and isinstance(v, float) for a, v in doc["curve"])


def test_deferred_fragmentation_equals_live_fragmentation():
    node_list = nodes((16000, 2), (32000, 4), (8000, 1))
    pod_list = pods(*ABC, (3000, 1, 300), (2000, 2, 1000))
    wl = Workload(pod_list, node_list)
    deferred = run_seed(node_list, wl, make_policy("bestfit"), 3, 1.3, track_frag=True)

    class LiveBestFit(type(make_policy("bestfit"))):
        needs_frag = True

    live = run_seed(node_list, wl, LiveBestFit(), 3, 1.3, track_frag=True)
    assert (deferred.allocated == live.allocated).all()
    assert deferred.frag.tolist() == live.frag.tolist()


def test_state_helper_sets_derived_arrays():
    st = state(nodes((16000, 2)), pods(*ABC), free=[(6000, [1000, 300])])
    assert st.nfull.tolist() == [1] and st.gmax.tolist() == [1000] and st.gsum.tolist() == [1300]
