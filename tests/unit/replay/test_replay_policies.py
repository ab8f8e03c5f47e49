"""Each replay policy's scores and GPU choice on small states worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from magma.replay.gorand import GoRand
from magma.replay.policies import BASELINES, NAMES, canonical, make_policy
from magma.scheduler.plugins.magma import MagmaScorer, cpu_per_gpu

from replay_builders import ABC, nodes, pods, state, task_class


def bind(policy, st, seed=1):
    policy.bind(st, np.arange(st.n), GoRand(seed))
    return policy


def scores(name, st, cpu, k, m, rows=None):
    p = bind(make_policy(name), st)
    rows = np.arange(st.n) if rows is None else np.asarray(rows)
    return p.scores(task_class(st, cpu, k, m), rows).tolist()


def test_names_and_aliases():
    assert BASELINES == ("random", "dotprod", "gpu-clustering", "gpu-packing", "bestfit", "fgd")
    assert set(NAMES) == set(BASELINES) | {"binpack", "magma"}
    assert canonical("GpuPacking") == "gpu-packing" and canonical("best-fit") == "bestfit"
    with pytest.raises(KeyError):
        canonical("worst-fit")


def test_bestfit():
    # free 64 cores and 1500 milli-GPU, task 4 cores and 500: 100 * (1 - (0.5 * 60/128 + 0.5 * 1000/8000)) = 70.3
    st = state(nodes((64000, 2)), pods((4000, 1, 500)), free=[(64000, [1000, 500])])
    assert scores("bestfit", st, 4000, 1, 500) == [70.0]


def test_dotprod():
    # 1 - (64/128 * 4/128 + 1500/8000 * 500/8000) / 2 = 0.98633 -> 98
    st = state(nodes((64000, 2)), pods((4000, 1, 500)), free=[(64000, [1000, 500])])
    assert scores("dotprod", st, 4000, 1, 500) == [98.0]


def test_gpu_clustering():
    node_list = nodes((96000, 8), (96000, 8), (96000, 8), (96000, 8))
    st = state(node_list, pods((4000, 1, 300), (4000, 1, 1000), (2000, 0, 0)),
               free=[(90000, [1000, 1000, 1000, 1000, 1000, 1000, 1000, 500]),  # hosts a share task only
                     (90000, [1000, 1000, 1000, 1000, 1000, 1000, 0, 500]),  # a share and a 1-GPU task
                     (96000, [1000] * 8),  # no GPU task
                     (90000, [1000, 1000, 1000, 1000, 0, 0, 0, 0])])  # 1-GPU tasks only
    st.tags[0, 0] = 1
    st.tags[1, 0] = st.tags[1, 1] = 1
    st.tags[3, 1] = 4
    st.ntags[:] = [1, 2, 0, 1]
    # base 25 * (8000 - g) // 8000: 1 (g 7500), 4 (g 6500), 0 (g 8000), 12 (g 4000)
    assert scores("gpu-clustering", st, 4000, 1, 300) == [76.0, 54.0, 25.0, 12.0]
    assert scores("gpu-clustering", st, 4000, 1, 1000) == [1.0, 54.0, 25.0, 87.0]
    assert scores("gpu-clustering", st, 2000, 0, 0) == [0.0, 0.0, 0.0, 0.0]


def test_gpu_packing():
    node_list = nodes((96000, 8), (96000, 2), (96000, 3), (96000, 3), (96000, 3))
    st = state(node_list, pods((4000, 1, 300), (4000, 2, 1000), (2000, 0, 0)),
               free=[(96000, [1000] * 8),  # all free, 8 GPUs: max(33 - 8, 8) = 25
                     (96000, [1000, 1000]),  # all free, 2 GPUs: 31
                     (96000, [1000, 400, 200]),  # tightest fit 400: 100 - (40 // 10) = 96
                     (96000, [1000, 200, 0]),  # only a fully free GPU fits: max(50 - 1, 33) = 49
                     (96000, [1000, 1000, 500])])  # two whole GPUs on a used node: max(50 - 2, 33) = 48
    assert scores("gpu-packing", st, 4000, 1, 300) == [25.0, 31.0, 96.0, 49.0, 95.0]  # last: 100 - 50 // 10
    assert scores("gpu-packing", st, 4000, 2, 1000, rows=[0, 1, 4]) == [25.0, 31.0, 48.0]
    assert scores("gpu-packing", st, 2000, 0, 0) == [0.0] * 5


def test_fgd_score_and_gpu_choice():
    # Target: A (4 cores, 500m) p 0.5, B (8 cores, 1 GPU) p 0.25, C (2 cores, CPU only) p 0.25 (the task
    # scored here, 1 core and 300m, is 1 of 9 tasks: the 88% prefix leaves its class out).
    # The node (6 cores, GPUs 1000 + 300) has frag 0.5 * 300 + 0.25 * 1300 + 0.25 * 1300 = 800.
    # A 300m task with 1 core on GPU 0 leaves [700, 300], 5 cores: frag 0.5 * 300 + 0.25 * 1000 * 2 = 650,
    # score trunc(100 * sigmoid(150 / 1000)) = 53; on GPU 1 it leaves [1000, 0]: frag 0 + 250 + 250 = 500,
    # score trunc(100 * sigmoid(0.3)) = 57. FGD takes GPU 1.
    st = state(nodes((16000, 2)), pods(*ABC, (1000, 1, 300)), free=[(6000, [1000, 300])], popularity=88)
    assert st.frag.tolist() == [800.0]
    p = bind(make_policy("fgd"), st)
    tc = task_class(st, 1000, 1, 300)
    assert p.scores(tc, np.array([0])).tolist() == [57.0]
    assert math.trunc(100 / (1 + math.exp(-0.15))) == 53 and math.trunc(100 / (1 + math.exp(-0.3))) == 57
    assert p.select(tc, np.array([0])) == 0
    assert p.gpus(0, tc) == [1]
    assert p.after_frag(0, tc) == 500.0


def test_fgd_scores_cpu_only_tasks_and_whole_gpus():
    st = state(nodes((16000, 2)), pods(*ABC), free=[(6000, [1000, 300])], popularity=100)
    # a whole-GPU task (8 cores) does not fit in 6 cores, but scoring it is defined: GPU 0 taken, cpu 0 left.
    # CPU-only 2 cores: [1000, 300], 4 cores: A still fits (frag 150), B and C 1300 each -> 800: gain 0 -> 50.
    assert scores("fgd", st, 2000, 0, 0) == [50.0]


def test_binpack_volcano_formula():
    # cpu 64 cores with 16 used, memory 256Gi unused, GPUs 2000m with 500 used; task 4 cores, 16Gi, 500m:
    # ((4 + 16) / 64 + 16 / 256 + (500 + 500) / 2000) / 3 * 100 = 29.1667
    st = state(nodes((64000, 2, "G", 262144)), pods((4000, 1, 500, 16384)), free=[(48000, [1000, 500])])
    p = bind(make_policy("binpack"), st)
    tc = task_class(st, 4000, 1, 500)
    assert p.scores(tc, np.array([0]), memory=16384).tolist() == pytest.approx([(20 / 64 + 16 / 256 + 0.5) / 3 * 100])
    # zero memory is not requested: it leaves the average
    assert p.scores(tc, np.array([0]), memory=0).tolist() == pytest.approx([(20 / 64 + 0.5) / 2 * 100])


def test_ties_go_to_the_lowest_rank():
    st = state(nodes((64000, 2), (64000, 2), (64000, 2)), pods((4000, 1, 500)))
    p = make_policy("bestfit")
    p.bind(st, np.array([2, 0, 1]), GoRand(1))
    assert p.select(task_class(st, 4000, 1, 500), np.array([0, 1, 2])) == 1


def test_default_gpu_choice_best_fit_share_and_lowest_whole():
    st = state(nodes((64000, 4)), pods((4000, 1, 300), (4000, 2, 1000)), free=[(64000, [1000, 400, 300, 1000])])
    p = bind(make_policy("bestfit"), st)
    assert p.gpus(0, task_class(st, 4000, 1, 300)) == [2]
    assert p.gpus(0, task_class(st, 4000, 2, 1000)) == [0, 3]


def test_random_uses_the_go_stream():
    st = state(nodes((64000, 4), (64000, 4), (64000, 4)), pods((4000, 1, 300)),
               free=[(64000, [1000, 400, 300, 1000])] * 3)
    p = bind(make_policy("random"), st, seed=5)
    tc = task_class(st, 4000, 1, 300)
    ref = GoRand(5)
    rows = np.array([0, 2])
    assert p.select(tc, rows) == rows[ref.intn(2)]
    assert p.select(tc, np.array([1])) == 1  # one feasible node: no draw
    picked = p.gpus(0, tc)
    choice = -1
    for seen, i in enumerate([0, 1, 2, 3], start=1):  # reservoir over the four fitting GPUs
        if ref.intn(seen) == 0:
            choice = i
    assert picked == [choice]


def test_magma_scorer_by_hand():
    # Same node and target as the FGD example. rho = (0.5 * 4000 + 0.25 * 8000) / (0.5 * 500 + 0.25 * 1000) = 8.
    # strand before: 1300 - 6000/8 = 550. On GPU 1: frag 500, strand 1000 - 5000/8 = 375,
    # gain (800 + 550) - (500 + 375) = 475 -> trunc(100 * sigmoid(0.475)) = 61, + 0.5 (a GPU in use)
    # + 0.4 * (1 - 0/1000) = 61.9. On GPU 0: gain 1350 - (650 + 375) = 325 -> 58 + 0.5 + 0.4 * 0.3 = 58.62.
    st = state(nodes((16000, 2)), pods(*ABC, (1000, 1, 300)), free=[(6000, [1000, 300])], popularity=88)
    assert cpu_per_gpu(st.target) == 8.0
    p = bind(make_policy("magma"), st)
    tc = task_class(st, 1000, 1, 300)
    assert p.scores(tc, np.array([0])).tolist() == pytest.approx([61.9])
    assert math.trunc(100 / (1 + math.exp(-0.475))) == 61 and math.trunc(100 / (1 + math.exp(-0.325))) == 58
    p.select(tc, np.array([0]))
    assert p.gpus(0, tc) == [1]
    scorer = MagmaScorer.for_target(st.target)
    s, g, after = scorer.evaluate(np.array([6000]), np.array([[1000, 300]]), np.array([2000]),
                                  st.workload.target_access[:1], np.array([800.0]), 1000, 1, 300)
    assert s.tolist() == pytest.approx([61.9]) and g.tolist() == [1] and after.tolist() == [500.0]


def test_magma_prefers_a_used_node_when_fgd_ties():
    # Two empty 2-GPU nodes and one with a GPU in use; a whole-GPU task: the FGD part ties, the bonus decides.
    st = state(nodes((64000, 2), (64000, 2), (64000, 2)), pods(*ABC),
               free=[(64000, [1000, 1000]), (64000, [1000, 500]), (64000, [1000, 1000])], popularity=100)
    s = scores("magma", st, 8000, 1, 1000)
    assert s[1] == s[0] + 0.5 == s[2] + 0.5


def test_magma_avoids_stranding_gpus_behind_spent_cpu():
    # A CPU-only task of 6 cores: on the GPU-dense node (8 cores for 2 GPUs) it would strand GPUs the remaining
    # 2 cores cannot feed at 8 cores per GPU; on the cpu-rich node nothing changes. FGD sees no difference yet
    # beyond its classes; magma's stranding term does.
    st = state(nodes((16000, 2), (96000, 2)), pods(*ABC, (6000, 0, 0)),
               free=[(16000, [1000, 1000]), (96000, [1000, 1000])], popularity=100)
    s = scores("magma", st, 6000, 0, 0)
    assert s[1] > s[0]
