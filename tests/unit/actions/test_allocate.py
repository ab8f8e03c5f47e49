"""allocate: gangs all-or-nothing, pipelining onto releasing resources, queue bounds and fit reasons in numbers,
deterministic ties, predicates evaluated once per task shape, node sampling."""

from __future__ import annotations

import types

import numpy as np
import pytest

from action_builders import (
    World,
    conf,
    gang_yaml,
    node_yaml,
    nodes_yaml,
    pod_yaml,
    podgroup_yaml,
    queue_yaml,
)
from magma.scheduler.actions.allocate import NodeSampling, need_continue_allocating
from magma.scheduler.framework import ACTIONS, PredicateResult, TaskStatus, plugin
from magma.scheduler.reasons import job_reason

S = TaskStatus
GANG = conf("enqueue, allocate", ["priority", "gang"], ["predicates", "nodeorder"])
FULL = conf("enqueue, allocate, backfill", ["priority", "gang", "conformance"],
            ["overcommit", "drf", "predicates", "proportion", "nodeorder"])
NO_PLUGINS = conf("enqueue, allocate", ["conformance"])


def one_gpu_gang(name: str, replicas: int, min_member: int | None = None, **kw) -> str:
    return gang_yaml(name, "team", replicas, gpu=1, cpu="1", memory="1Gi", min_member=min_member, **kw)


def test_four_pod_gang_on_three_free_gpus_places_nothing():
    w = World(nodes_yaml("n", 3, gpu=1) + queue_yaml("team") + one_gpu_gang("big", 4))
    r = w.run(GANG)
    assert r.binds == []
    assert w.bound() == {}
    assert r.reasons["default/big"] == (
        "4/4 tasks in gang unschedulable: 0/3 nodes are available: "
        "3 Insufficient nvidia.com/gpu (need 1, best node has 0 free)")
    assert r.phases["default/big"] == "Inqueue"


def test_three_pod_gang_on_three_free_gpus_places_all_three():
    w = World(nodes_yaml("n", 3, gpu=1) + queue_yaml("team") + one_gpu_gang("fits", 3))
    r = w.run(GANG)
    assert sorted(n for _, n in r.binds) == ["n-0", "n-1", "n-2"]
    assert r.phases["default/fits"] == "Running"
    assert "default/fits" not in r.reasons


def test_gang_that_does_not_fit_does_not_block_a_later_one_that_does():
    w = World(nodes_yaml("n", 3, gpu=1) + queue_yaml("team")
              + one_gpu_gang("big", 4) + one_gpu_gang("small", 3, creation=5))
    r = w.run(GANG)
    assert set(w.bound("small")) == {"small-0", "small-1", "small-2"}
    assert w.bound("big") == {}
    assert r.reasons["default/big"].startswith("4/4 tasks in gang unschedulable: 0/3 nodes are available")


def test_elastic_job_places_beyond_min_available_one_task_per_turn():
    w = World(nodes_yaml("n", 3, gpu=1) + queue_yaml("team") + one_gpu_gang("el", 5, min_member=2))
    r = w.run(GANG)
    assert len(r.binds) == 3  # 2 to make the gang, then one more per turn while room is left
    assert r.phases["default/el"] == "Running"
    assert r.reasons["default/el"].startswith("2/5 tasks in gang unschedulable: 0/3 nodes are available")


def test_pipelines_onto_releasing_resources_and_binds_once_released():
    # n-0 runs an old pod being deleted (30 s grace): its 8 GPUs are Releasing. A 1-pod job waits for them.
    text = (node_yaml("n-0", gpu=8) + queue_yaml("team")
            + gang_yaml("old", "team", 1, gpu=8, running_on=["n-0"], grace=30)
            + gang_yaml("new", "team", 1, gpu=8, creation=5))
    w = World(text)
    w.cluster.evict("default/old-0", "test")  # now terminating
    r = w.run(GANG)
    assert r.binds == []  # pipelined: nothing bound while the GPUs are still held
    ssn = w.session(GANG)
    ACTIONS["enqueue"](ssn, {})
    ACTIONS["allocate"](ssn, {})
    task = next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == "new-0")
    assert task.status is S.PIPELINED and task.nominated_node == "n-0"
    w.tick(31)  # the old pod is gone
    r = w.run(GANG)
    assert r.binds == [("default/new-0", "n-0")]


def test_gang_part_idle_part_releasing_is_kept_pipelined_not_bound():
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("team")
            + gang_yaml("old", "team", 1, gpu=8, running_on=["n-1"], grace=30)
            + gang_yaml("new", "team", 2, gpu=8, creation=5))
    w = World(text)
    w.cluster.evict("default/old-0", "test")
    ssn = w.session(GANG)
    ACTIONS["enqueue"](ssn, {})
    ACTIONS["allocate"](ssn, {})
    job = next(j for j in ssn.jobs.values() if j.name == "new")
    statuses = sorted(t.status.value for t in job.tasks.values())
    assert statuses == ["Allocated", "Pipelined"]  # kept: neither committed nor discarded
    assert ssn.binds == []


def test_pending_jobs_wait_for_enqueue_when_it_is_configured():
    text = nodes_yaml("n", 1, gpu=8) + queue_yaml("team") + gang_yaml("j", "team", 1, gpu=8, phase="Pending")
    w = World(text)
    ssn = w.session(conf("enqueue, allocate", ["gang"]))
    ACTIONS["allocate"](ssn, {})  # enqueue has not run: the job is still Pending
    assert ssn.binds == []
    w2 = World(text)
    r = w2.run(conf("allocate", ["gang"]))  # no enqueue action: allocate promotes Pending jobs itself
    assert r.binds == [("default/j-0", "n-0")]


def test_invalid_job_is_skipped_with_its_validation_reason():
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("team") + podgroup_yaml("short", "team", 3, phase="Inqueue")
            + pod_yaml("short-0", "short", gpu=1))
    w = World(text)
    r = w.run(GANG)
    assert r.binds == []
    assert "1 valid" in r.reasons["default/short"] and "minMember 3" in r.reasons["default/short"]


def test_fit_summary_names_resources_and_taints_in_numbers():
    # 3 nodes with 4 of 8 GPUs used, 1 node with 8 free GPUs but a taint the job does not tolerate.
    text = (nodes_yaml("busy", 3, gpu=8)
            + node_yaml("a100-0", gpu=8, taints=[{"key": "dedicated", "value": "a100"}])
            + queue_yaml("team")
            + "".join(gang_yaml(f"small-{i}", "team", 1, gpu=4, running_on=[f"busy-{i}"]) for i in range(3))
            + gang_yaml("big", "team", 4, gpu=8, creation=5, min_member=4))
    w = World(text)
    r = w.run(GANG)
    assert r.reasons["default/big"] == (
        "4/4 tasks in gang unschedulable: 0/4 nodes are available: "
        "1 node(s) had untolerated taint {dedicated: a100}, "
        "3 Insufficient nvidia.com/gpu (need 8, best node has 4 free)")


def test_queue_bound_reason_in_numbers():
    text = (nodes_yaml("n", 4, gpu=8) + queue_yaml("team-cv", capability={"nvidia.com/gpu": 16})
            + gang_yaml("running", "team-cv", 2, gpu=8, running_on=["n-0", "n-1"])
            + gang_yaml("more", "team-cv", 2, gpu=8, creation=5))
    w = World(text)
    r = w.run(conf("allocate", ["priority", "gang"], ["predicates", "proportion", "nodeorder"]))
    assert r.binds == []
    assert r.reasons["default/more"] == "queue team-cv: deserved 16 nvidia.com/gpu, allocated 16, job needs 16 more"


def test_overused_queue_is_dropped_with_a_reason():
    text = (nodes_yaml("n", 4, gpu=8) + queue_yaml("a") + queue_yaml("b")
            + gang_yaml("a-run", "a", 3, gpu=8, running_on=["n-0", "n-1", "n-2"])
            + gang_yaml("a-more", "a", 1, gpu=8, cpu="0", memory="0Gi", creation=5)
            + gang_yaml("b-job", "b", 1, gpu=8, creation=6))
    w = World(text)
    r = w.run(conf("allocate", ["priority", "gang"], ["predicates", "proportion", "nodeorder"]))
    # a's deserved share (24 GPUs, 24 cpu: its request) is what it holds: Overused, dropped; b gets the node.
    assert r.binds == [("default/b-job-0", "n-3")]
    assert "queue a is overused" in r.reasons["default/a-more"]


def test_equal_scores_pick_the_lowest_node_row():
    text = nodes_yaml("n", 5, gpu=8) + queue_yaml("team") + gang_yaml("j", "team", 1, gpu=2)
    for _ in range(2):  # same input, same answer
        w = World(text)
        r = w.run(conf("allocate", ["gang"]))  # no scoring plugin: every node scores 0
        assert r.binds == [("default/j-0", "n-0")]


def test_tasks_of_a_gang_fill_nodes_by_score_not_randomly():
    text = nodes_yaml("n", 4, gpu=8) + queue_yaml("team") + gang_yaml("j", "team", 4, gpu=4)
    w = World(text)
    binpack = conf("allocate", ["gang"], ["binpack"])
    r = w.run(binpack)
    nodes = sorted(n for _, n in r.binds)
    assert nodes == ["n-0", "n-0", "n-1", "n-1"]  # binpack fills a node before opening the next


def test_need_continue_allocating_follows_volcano():
    w = World(nodes_yaml("n", 1, gpu=1) + queue_yaml("team") + one_gpu_gang("el", 4, min_member=2)
              + one_gpu_gang("all", 2))
    ssn = w.session(GANG)
    el = next(j for j in ssn.jobs.values() if j.name == "el")
    whole = next(j for j in ssn.jobs.values() if j.name == "all")
    assert need_continue_allocating(whole) is False  # minAvailable == number of tasks: stop at the first failure
    el.fit_errors[next(iter(el.tasks))] = "x"
    assert need_continue_allocating(el) is True  # no per-task minimum: the others may still make the gang


# ---------------------------------------------------------------- performance by design


_CALLS: dict[str, list] = {"predicate": [], "score": []}


@plugin("test-counting")
class CountingPlugin:
    """A predicate and a score that record every call (rows asked for)."""

    def __init__(self, arguments):
        pass

    def on_session_open(self, ssn):
        def predicate(task, rows):
            _CALLS["predicate"].append(len(rows))
            return PredicateResult(np.ones(len(rows), dtype=bool))

        def score(task, rows):
            _CALLS["score"].append(len(rows))
            return np.zeros(len(rows))

        ssn.add_fn("predicate", "test-counting", predicate)
        ssn.add_fn("node_order", "test-counting", score)


def stand_in_config(actions, plugins, action_args=None):
    """A config stand-in (the parser only knows real plugin names)."""
    def option(name):
        return types.SimpleNamespace(name=name, arguments={}, enabled=lambda flag: True)

    return types.SimpleNamespace(
        actions=actions, runnable_actions=actions, tiers=[types.SimpleNamespace(plugins=[option(p) for p in plugins])],
        action_arguments=lambda name: dict((action_args or {}).get(name, {})))


def test_identical_tasks_evaluate_predicates_once_and_rescore_only_changed_rows():
    _CALLS["predicate"].clear()
    _CALLS["score"].clear()
    w = World(nodes_yaml("n", 20, gpu=8) + queue_yaml("team") + gang_yaml("g", "team", 16, gpu=8))
    r = w.run(stand_in_config(["allocate"], ["gang", "test-counting"]))
    assert len(r.binds) == 16
    assert _CALLS["predicate"] == [20]  # one shape, one evaluation over all 20 nodes
    assert _CALLS["score"][0] == 20  # all candidate rows scored once ...
    assert all(n <= 1 for n in _CALLS["score"][1:])  # ... then only the row that changed (full nodes drop out)


def test_predicate_cache_can_be_switched_off():
    _CALLS["predicate"].clear()
    w = World(nodes_yaml("n", 4, gpu=8) + queue_yaml("team") + gang_yaml("a", "team", 1, gpu=8)
              + gang_yaml("b", "team", 1, gpu=8, creation=5))
    w.run(stand_in_config(["allocate"], ["gang", "test-counting"]))
    assert _CALLS["predicate"] == [4]  # two jobs, one shape: cached across jobs
    _CALLS["predicate"].clear()
    w = World(nodes_yaml("n", 4, gpu=8) + queue_yaml("team") + gang_yaml("a", "team", 1, gpu=8)
              + gang_yaml("b", "team", 1, gpu=8, creation=5))
    w.run(stand_in_config(["allocate"], ["gang", "test-counting"],
                          {"allocate": {"predicateErrorCacheEnable": False}}))
    assert _CALLS["predicate"] == [4, 4]


def test_placement_sensitive_pods_see_each_other():
    # Required anti-affinity on hostname between the gang's own pods: every pod on its own node.
    kw = {"labels": {"group": "spread"}, "anti_affinity_key": "kubernetes.io/hostname"}
    text = "".join(node_yaml(f"n-{i}", gpu=8, labels={"kubernetes.io/hostname": f"n-{i}"}) for i in range(3))
    w = World(text + queue_yaml("team") + gang_yaml("spread", "team", 3, gpu=1, pod_kw=kw))
    r = w.run(conf("allocate", ["gang"], ["predicates", "binpack"]))
    assert sorted(n for _, n in r.binds) == ["n-0", "n-1", "n-2"]


# ---------------------------------------------------------------- node sampling


@pytest.mark.parametrize("n,args,expected", [
    (50, {"percentageOfNodesToFind": 0}, 50),  # up to minNodesToFind: all nodes
    (1000, {}, 1000),  # magma's default: all nodes
    (1000, {"percentageOfNodesToFind": 0}, 420),  # Volcano adaptive: (50 - 1000/125)% = 42%
    (10000, {"percentageOfNodesToFind": 0}, 500),  # floor at minPercentageOfNodesToFind 5%
    (1000, {"percentageOfNodesToFind": 5}, 100),  # at least minNodesToFind
    (1000, {"percentageOfNodesToFind": 100}, 1000),
])
def test_sampling_counts(n, args, expected):
    assert NodeSampling(args).count(n) == expected


def test_sampling_rotates_its_start_across_searches():
    s = NodeSampling({"percentageOfNodesToFind": 10, "minNodesToFind": 2})
    mask = np.ones(30, dtype=bool)
    first = s.sample(mask)
    second = s.sample(mask)
    assert list(first) == [0, 1, 2]
    assert list(second) == [3, 4, 5]


def test_sampling_argument_changes_the_allocate_search():
    # binpack prefers the half-used last node; a 1% sample (100 nodes from row 0) never sees it.
    text = (nodes_yaml("n", 150, gpu=8) + queue_yaml("team")
            + gang_yaml("used", "team", 1, gpu=4, running_on=["n-149"]) + gang_yaml("j", "team", 1, gpu=4))
    w = World(text)
    r = w.run(stand_in_config(["allocate"], ["gang", "binpack"]))
    assert r.binds == [("default/j-0", "n-149")]  # magma's default: every node considered
    w = World(text)
    r = w.run(stand_in_config(["allocate"], ["gang", "binpack"], {"allocate": {"percentageOfNodesToFind": 1}}))
    assert r.binds == [("default/j-0", "n-0")]  # Volcano's sampling


def test_job_reason_is_numeric_for_pending_jobs():
    text = nodes_yaml("n", 1, gpu=8) + queue_yaml("team") + gang_yaml("j", "team", 2, gpu=8, phase="Pending",
                                                                    min_resources=True)
    ssn = World(text).session(NO_PLUGINS)
    job = next(iter(j for j in ssn.jobs.values() if j.name == "j"))
    text = job_reason(ssn, job)
    assert "minMember 2" in text and "nvidia.com/gpu: 16" in text


def test_bad_sampling_arguments_keep_the_defaults():
    s = NodeSampling({"percentageOfNodesToFind": "lots", "minNodesToFind": None})
    assert not s.enabled and s.count(5000) == 5000
    assert NodeSampling({"percentageOfNodesToFind": "0"}).count(1000) == 420
