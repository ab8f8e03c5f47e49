"""task-topology plugin: buckets, task order and node scores from PodGroup annotations."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

import magma.scheduler.plugins  # noqa: F401  (registers the plugins)
from magma.api.config import PluginOption
from magma.api.load import load_text
from magma.cluster.memory import MemoryCluster
from magma.scheduler.framework import PLUGINS, Session, Statement, build
from magma.scheduler.plugins import task_topology as TT

QUEUE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
         "spec": {"weight": 1}}


def node(name, cpu="16", gpu=8):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "nvidia.com/gpu": str(gpu)}}}


def podgroup(name, annotations, min_member=1):
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "annotations": annotations}, "spec": {"minMember": min_member}}


def pod(job, role, i, on=None, cpu="1", gpu="0"):
    body = {"schedulerName": "volcano",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "nvidia.com/gpu": gpu}}}]}
    if on:
        body["nodeName"] = on
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{job}-{role}-{i}",
                         "annotations": {"scheduling.k8s.io/group-name": job, "volcano.sh/task-spec": role}},
            "spec": body, "status": {"phase": "Running" if on else "Pending"}}


def session(objects, args=None, others=()):
    res = load_text(yaml.safe_dump_all([QUEUE, *objects]))
    assert not res.problems, [p.format() for p in res.problems]
    opts = [PluginOption(name="task-topology", arguments=args or {})]
    ssn = Session(build(MemoryCluster(res.objects).state()), None, [opts])
    p = PLUGINS["task-topology"](dict(args or {}))
    ssn.plugins["task-topology"] = p
    p.on_session_open(ssn)
    return ssn


def task(ssn, name):
    return next(t for t in ssn.tasks_by_uid.values() if t.name == name)


def scores(ssn, name, nodes=None):
    names = nodes or [n.name for n in ssn.node_list]
    rows = np.array([ssn.table.row[n] for n in names])
    return dict(zip(names, ssn.node_scores(task(ssn, name), rows).tolist()))


def buckets(ssn, job="default/tf"):
    m = ssn.plugins["task-topology"].managers[job]
    out = []
    for b in m.buckets:
        out.append(sorted(t.name for t in b.tasks.values()))
    return out


def ps_worker(annotations, ps=2, workers=4, placed=()):
    objs = [node("n1"), node("n2"), node("n3"), podgroup("tf", annotations)]
    for i in range(ps):
        objs.append(pod("tf", "ps", i, on=dict(placed).get(f"ps-{i}")))
    for i in range(workers):
        objs.append(pod("tf", "worker", i, on=dict(placed).get(f"worker-{i}")))
    return objs


class TestSettings:
    def test_seed_job_plugin_form_is_read_from_the_podgroup(self):
        ssn = session(ps_worker({TT.JOB_PLUGIN: json.dumps(["--task-affinity=ps,worker"])}))
        assert buckets(ssn) == [["tf-ps-0", "tf-ps-1", "tf-worker-0", "tf-worker-1", "tf-worker-2", "tf-worker-3"]]

    def test_annotations_win_over_job_plugin_args(self):
        ann = {TT.JOB_PLUGIN: "--task-affinity=ps,worker --task-anti-affinity=worker",
               TT.ANTI_AFFINITY: "ps"}
        m = session(ps_worker(ann)).plugins["task-topology"].managers["default/tf"]
        assert m.self_anti == {"ps"}
        assert m.inter_aff == {"ps": {"worker"}, "worker": {"ps"}}

    @pytest.mark.parametrize("ann", [{TT.AFFINITY: "ps,chief"}, {TT.AFFINITY: "ps,ps"}, {TT.TASK_ORDER: "ps,ps"}])
    def test_invalid_settings_disable_the_job(self, ann):
        assert "default/tf" not in session(ps_worker(ann)).plugins["task-topology"].managers

    def test_no_settings_or_no_pending_tasks(self):
        assert session(ps_worker({})).plugins["task-topology"].managers == {}
        placed = [(f"ps-{i}", "n1") for i in range(2)] + [(f"worker-{i}", "n2") for i in range(4)]
        ssn = session(ps_worker({TT.AFFINITY: "ps,worker"}, placed=placed))
        assert ssn.plugins["task-topology"].managers == {}

    def test_spaces_around_roles(self):
        ssn = session(ps_worker({TT.AFFINITY: " ps , worker "}))
        assert len(buckets(ssn)) == 1


class TestBuckets:
    def test_affinity_with_self_anti_affinity_splits_buckets(self):
        # ps: self anti-affinity (priority 4) and affinity with workers; ps pods go first, one bucket each,
        # then workers join the bucket with the most affinity, ties to the smaller pending request.
        ssn = session(ps_worker({TT.AFFINITY: "ps,worker", TT.ANTI_AFFINITY: "ps"}))
        assert buckets(ssn) == [["tf-ps-0", "tf-worker-0", "tf-worker-2"], ["tf-ps-1", "tf-worker-1", "tf-worker-3"]]

    def test_placed_tasks_seed_one_bucket_per_node(self):
        ssn = session(ps_worker({TT.AFFINITY: "ps,worker", TT.ANTI_AFFINITY: "ps"},
                                placed=[("ps-0", "n2"), ("ps-1", "n3")]))
        m = ssn.plugins["task-topology"].managers["default/tf"]
        assert [b.on_node for b in m.buckets] == [{ssn.table.row["n2"]: 1}, {ssn.table.row["n3"]: 1}]
        assert buckets(ssn) == [["tf-worker-0", "tf-worker-2"], ["tf-worker-1", "tf-worker-3"]]
        assert m.max_size == 3


class TestTaskOrder:
    def test_bucket_members_first_then_order(self):
        objs = ps_worker({TT.AFFINITY: "worker", TT.TASK_ORDER: "worker"}, ps=2, workers=2)
        ssn = session(objs)
        ordered = [t.name for t in ssn.sorted_tasks(ssn.jobs["default/tf"].tasks.values())]
        # workers (self affinity) are in a bucket, ps are not
        assert ordered[:2] == ["tf-worker-0", "tf-worker-1"]
        assert set(ordered[2:]) == {"tf-ps-0", "tf-ps-1"}

    def test_task_order_annotation_inside_a_bucket(self):
        for order, first in (("worker,ps", "tf-worker-0"), ("ps,worker", "tf-ps-0")):
            ssn = session(ps_worker({TT.AFFINITY: "ps,worker", TT.TASK_ORDER: order}, ps=1, workers=1))
            ordered = [t.name for t in ssn.sorted_tasks(ssn.jobs["default/tf"].tasks.values())]
            assert ordered[0] == first

    def test_bigger_and_older_buckets_first(self):
        ssn = session(ps_worker({TT.AFFINITY: "ps,worker", TT.ANTI_AFFINITY: "ps"}, ps=2, workers=3))
        # buckets: [ps-0, worker-0, worker-2] (3 pending) and [ps-1, worker-1] (2 pending)
        ordered = [t.name for t in ssn.sorted_tasks(ssn.jobs["default/tf"].tasks.values())]
        assert ordered == ["tf-ps-0", "tf-worker-0", "tf-worker-2", "tf-ps-1", "tf-worker-1"]


class TestScores:
    def test_co_location_attracts(self):
        ssn = session(ps_worker({TT.AFFINITY: "ps,worker"}))
        # one bucket of 6 pending: everywhere 6 (pending members) * 100 / 6
        assert scores(ssn, "tf-worker-0") == {"n1": 100.0, "n2": 100.0, "n3": 100.0}
        ssn.allocate(task(ssn, "tf-ps-0"), ssn.nodes["n2"])
        # n2 has one member placed: 1 + 5 pending; others 5 -> scaled by 100 / 6
        assert scores(ssn, "tf-worker-0") == pytest.approx({"n1": 500 / 6, "n2": 100.0, "n3": 500 / 6})

    def test_weight(self):
        ssn = session(ps_worker({TT.AFFINITY: "ps,worker"}), args={"task-topology.weight": 3})
        assert scores(ssn, "tf-worker-0") == {"n1": 300.0, "n2": 300.0, "n3": 300.0}

    def test_anti_affinity_penalty_counts_pods_already_on_the_node(self):
        ssn = session(ps_worker({TT.ANTI_AFFINITY: "worker"}, ps=0, workers=3, placed=[("worker-0", "n1")]))
        # bucket members: worker-1 and worker-2 pending (worker-0 seeded its own bucket on n1)
        s = scores(ssn, "tf-worker-1")
        m = ssn.plugins["task-topology"].managers["default/tf"]
        size = m.max_size
        b = m.bucket(task(ssn, "tf-worker-1"))
        pending = len(b.tasks)
        assert s["n1"] == pytest.approx((pending - 1) * 100 / size)  # one worker there already
        assert s["n2"] == pytest.approx(pending * 100 / size)

    def test_node_that_cannot_hold_the_task_scores_zero(self):
        objs = [node("big", gpu=8), node("small", gpu=1), podgroup("tf", {TT.AFFINITY: "worker"})]
        objs += [pod("tf", "worker", i, gpu="2") for i in range(2)]
        ssn = session(objs)
        s = scores(ssn, "tf-worker-0")
        assert s["small"] == 0.0 and s["big"] == 100.0

    def test_members_left_out_when_the_bucket_does_not_fit(self):
        objs = [node("n4", gpu=4), node("n8", gpu=8), podgroup("tf", {TT.AFFINITY: "worker"})]
        objs += [pod("tf", "worker", i, gpu="2") for i in range(4)]
        ssn = session(objs)
        # bucket: 4 pending workers asking 8 GPUs; n4 holds 4: two other members must be left out
        s = scores(ssn, "tf-worker-0")
        assert s == pytest.approx({"n4": (4 - 2) * 100 / 4, "n8": 100.0})

    def test_out_of_bucket_and_other_jobs_score_zero(self):
        objs = ps_worker({TT.AFFINITY: "worker"}, ps=1, workers=2)
        objs += [podgroup("other", {}), pod("other", "x", 0)]
        ssn = session(objs)
        assert set(scores(ssn, "tf-ps-0").values()) == {0.0}
        assert set(scores(ssn, "other-x-0").values()) == {0.0}

    def test_discard_undoes_the_bucket_update(self):
        ssn = session(ps_worker({TT.AFFINITY: "ps,worker"}))
        before = scores(ssn, "tf-worker-0")
        stmt = Statement(ssn)
        stmt.allocate(task(ssn, "tf-ps-0"), ssn.nodes["n3"])
        assert scores(ssn, "tf-worker-0")["n3"] > scores(ssn, "tf-worker-0")["n1"]
        stmt.discard()
        assert scores(ssn, "tf-worker-0") == before
        m = ssn.plugins["task-topology"].managers["default/tf"]
        assert len(m.bucket(task(ssn, "tf-ps-0")).tasks) == 6
