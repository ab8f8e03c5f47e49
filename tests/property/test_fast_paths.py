"""The scheduler's fast paths decide exactly what the straightforward code decides (issue 5).

Random small clusters and workloads run through the simulator (controller-less: PodGroups and pods arrive, run
for a while, finish, get deleted) twice: with every fast path off (`fastpath.disabled()`: a full snapshot every
session, per-job candidate arrays in allocate) and with them on, the kept snapshot checked record by record
against a full build at every session (`SnapshotCache.verify`, which also checks the job index: per-queue sums,
quiet jobs, against a fresh one). The configuration is drawn too: proportion, capacity (flat and hierarchical),
and one without preempt and reclaim, under which running jobs stay quiet (left out by the steps). Binds,
evictions, PodGroup phases, reasons, events, and every PodGroup and Queue status written must be the same,
session by session; in the fast run the scheduler also ingests the cluster's changes outside the session
(`Scheduler.ingest`) zero, one or two times before a session. A second test runs single sessions on bigger random
clusters with only the shared groups of allocate and backfill switched. A third checks the keys the fast paths
stand on: `Session.job_order_key` orders as `job_order_cmp`, and `Session.node_state_key` is `Session.node_state`'s
row, before and after placements. A fourth checks that job counts moved by status changes are a recount.

The workloads mix what the fast paths must notice: node labels and taints with nodeSelectors and tolerations
(predicate keys), preferred node affinity (scores normalised over the candidates: no shared group), required
pod anti-affinity (placement-sensitive), best-effort pods, pods without a group, pods of another scheduler,
gangs with minMember below their size, priorities (preemption), a queue tree with capabilities, grace periods
(Releasing, Pipelined) and deletions.
"""

from __future__ import annotations

import contextlib
import json
import random
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magma.api.config import parse_config
from magma.api.defaults import builtin_priority_classes, builtin_queues
from magma.api.objects import SIM_DURATION, Node, Object, Pod, PodGroup, PriorityClass, Queue
from magma.api.resources import Resources
from magma.cluster.memory import MemoryCluster
from magma.scheduler.framework import fastpath
from magma.scheduler.framework.cache import SnapshotCache
from magma.scheduler.framework.info import ALLOCATED, READY, JobInfo, TaskInfo, TaskStatus, _JobStats
from magma.scheduler.scheduler import Scheduler
from magma.sim.result import build_result
from magma.sim.runner import Simulation
from magma.sim.scenario import Scenario, Timed

CONF = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


# The queue-share plugins read their per-queue sums from the job index (fastpath.job_index): each is run.
CAPACITY_CONF = CONF.replace("name: proportion", "name: capacity")
HIERARCHICAL_CAPACITY_CONF = CONF.replace("name: proportion", "name: capacity\n    enableHierarchy: true")
# Without preempt and reclaim (which look at every running job), most running jobs are quiet at close.
NO_PREEMPT_CONF = CONF.replace("enqueue, allocate, preempt, reclaim, backfill", "enqueue, allocate, backfill")
CONFS = (CONF, CAPACITY_CONF, HIERARCHICAL_CAPACITY_CONF, NO_PREEMPT_CONF)


def _config(text: str = CONF):
    res = parse_config(text)
    assert res.config is not None, res.messages()
    return res.config


def node(i: int, rng: random.Random) -> Node:
    labels = {"kubernetes.io/hostname": f"n{i}", "zone": f"z{i % 2}", "gpu-type": rng.choice(["a", "b"])}
    spec: dict[str, Any] = {}
    if rng.random() < 0.2:
        spec["taints"] = [{"key": "dedicated", "value": "x", "effect": rng.choice(["NoSchedule", "PreferNoSchedule"])}]
    return Node.model_validate({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}", "labels": labels},
                                "spec": spec,
                                "status": {"allocatable": {"cpu": "32", "memory": "256Gi",
                                                           "nvidia.com/gpu": str(rng.choice([4, 8])),
                                                           "pods": str(rng.choice([4, 110]))}}})


def queue(name: str, parent: str | None, weight: int, cap: int | None, guarantee: int | None = None,
          deserved: int | None = None) -> Queue:
    spec: dict[str, Any] = {"weight": weight}
    if parent:
        spec["parent"] = parent
    if cap:
        spec["capability"] = {"nvidia.com/gpu": str(cap)}
    if guarantee:
        spec["guarantee"] = {"resource": {"nvidia.com/gpu": str(guarantee)}}
    if deserved:
        spec["deserved"] = {"nvidia.com/gpu": str(deserved)}
    return Queue.model_validate({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                 "metadata": {"name": name, "uid": f"q-{name}", "creationTimestamp": 0},
                                 "spec": spec, "status": {"state": "Open"}})


def job_objects(j: int, rng: random.Random, queues: list[str], t: float) -> list[Object]:
    """A PodGroup and its pods (or a bare pod), with the features listed in the module doc."""
    name = f"j{j}"
    ns = rng.choice(["a", "b"])
    size = rng.randint(1, 4)
    gpus = rng.choice([0, 1, 2, 4])
    cpu = rng.choice(["1", "2"])
    req = {"cpu": cpu, "memory": "4Gi"}
    if gpus:
        req["nvidia.com/gpu"] = str(gpus)
    if rng.random() < 0.1:
        req = {}  # best effort
    pc = rng.choice(["low", "high", None])
    spec: dict[str, Any] = {"schedulerName": "volcano" if rng.random() < 0.95 else "other",
                            "containers": [{"name": "c", "resources": {"requests": req}}],
                            "terminationGracePeriodSeconds": rng.choice([0, 0, 5])}
    if pc:
        spec["priorityClassName"] = pc
    r = rng.random()
    if r < 0.15:
        spec["nodeSelector"] = {"gpu-type": "a"}
    elif r < 0.25:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "x", "effect": "NoSchedule"}]
    elif r < 0.32:
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 5, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]}}]}}
    elif r < 0.38:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": name}}}]}}
    bare = rng.random() < 0.1
    duration = str(rng.choice([30, 60, 300]))
    objs: list[Object] = []
    if not bare:
        pg_spec: dict[str, Any] = {"minMember": rng.randint(1, size), "queue": rng.choice(queues)}
        if pc:
            pg_spec["priorityClassName"] = pc
        if gpus and rng.random() < 0.7:
            pg_spec["minResources"] = {"nvidia.com/gpu": str(gpus * pg_spec["minMember"])}
        objs.append(PodGroup.model_validate({
            "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": ns, "uid": f"pg-{name}", "creationTimestamp": t,
                         "annotations": {SIM_DURATION: f"{duration}s"}},
            "spec": pg_spec, "status": {"phase": "Pending"}}))
    for i in range(1 if bare else size):
        ann = {} if bare else {"scheduling.k8s.io/group-name": name, "volcano.sh/task-spec": "worker"}
        if bare:
            ann[SIM_DURATION] = f"{duration}s"
            ann["scheduling.volcano.sh/queue-name"] = rng.choice(queues)
        objs.append(Pod.model_validate({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{name}-{i}", "namespace": ns, "uid": f"p-{name}-{i}", "creationTimestamp": t,
                         "labels": {"app": name}, "annotations": ann},
            "spec": spec, "status": {"phase": "Pending"}}))
    return objs


def scenario(seed: int, n_nodes: int, n_jobs: int, conf: str = CONF) -> Scenario:
    rng = random.Random(seed)
    objs: list[Object] = [node(i, rng) for i in range(n_nodes)]
    objs += [queue("root", None, 1, None), queue("org", "root", 2, rng.choice([None, 16])),
             queue("qa", "org", rng.randint(1, 3), rng.choice([None, 8]), deserved=rng.choice([None, 4, 12])),
             queue("qb", "org", 1, None, guarantee=rng.choice([None, 2])),
             queue("qc", "root", rng.randint(1, 2), None, guarantee=rng.choice([None, 4]))]
    objs += [PriorityClass.model_validate({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                           "metadata": {"name": n}, "value": v}) for n, v in (("low", 10), ("high", 1000))]
    have = {o.name for o in objs if isinstance(o, (Queue, PriorityClass))}
    objs += [q for q in builtin_queues() if q.name not in have]
    objs += [pc for pc in builtin_priority_classes() if pc.name not in have]
    sc = Scenario(config=_config(conf))
    sc.initial = objs
    for j in range(n_jobs):
        t = 0.0 if j < n_jobs // 2 else float(rng.randint(1, 120))
        for o in job_objects(j, rng, ["qa", "qb", "qc", "default"], t):
            dur = o.annotations.get(SIM_DURATION)
            if dur:
                sc.durations[(o.KIND, o.key)] = float(dur[:-1])
            if t > 0:
                sc.arrivals.append(Timed(t, o))
            else:
                sc.initial.append(o)
        if rng.random() < 0.1:
            sc.deletions.append((float(rng.randint(5, 200)), "PodGroup", f"a/j{j}"))
    sc.arrivals.sort(key=lambda x: x.time)
    sc.deletions.sort(key=lambda d: d[0])
    return sc


def run(seed: int, n_nodes: int, n_jobs: int, fast: bool, conf: str = CONF) -> tuple:
    sim = Simulation(scenario(seed, n_nodes, n_jobs, conf), period=1.0, until=600)
    # Every PodGroup and Queue status write, in order (the transition ids are random: left out).
    writes: list[tuple] = []
    write = sim.cluster.update_podgroup_status

    def logged(key: str, status: Any) -> None:
        writes.append((sim.clock.now(), key, status.phase, status.running, status.succeeded, status.failed,
                       [(c.type, c.status, c.reason, c.message, c.last_transition_time) for c in status.conditions]))
        write(key, status)

    sim.cluster.update_podgroup_status = logged  # type: ignore[method-assign]
    write_queue = sim.cluster.update_queue_status

    last_queue: dict[str, str] = {}

    def logged_queue(name: str, status: dict) -> None:  # the queues' allocations (close's queue_status)
        # Writes that change a queue's status are compared, by the status they leave: a skipped quiet session
        # (skip_quiet_sessions) would only have written the same status again, and close does not write a status
        # the queue already has (queue_status_kept).
        write_queue(name, status)
        text = json.dumps(sim.cluster.state().queues[name].status.model_dump(), sort_keys=True, default=str)
        if last_queue.get(name) != text:
            last_queue[name] = text
            writes.append((sim.clock.now(), name, text))

    sim.cluster.update_queue_status = logged_queue  # type: ignore[method-assign]
    ctx = contextlib.nullcontext() if fast else fastpath.disabled()
    if fast:
        # The scheduler's cache takes changes in outside the session (`Scheduler.ingest`, as objects arrive):
        # before some sessions, once or twice, so that sessions see what was ingested earlier and what not.
        rng = random.Random(seed)
        run_once = sim.scheduler.run_once

        def ingest_then_run():
            for _ in range(rng.choice([0, 1, 2])):
                sim.scheduler.ingest()
            return run_once()

        sim.scheduler.run_once = ingest_then_run
    SnapshotCache.verify = fast
    try:
        with ctx:
            trace = sim.run()
    finally:
        SnapshotCache.verify = False
    result = build_result(sim)
    result.pop("summary")  # latencies
    # every step's time and allocation, and the sessions that acted (skip_quiet_sessions leaves out sessions that
    # would repeat a quiet one: tests/property/test_sim_fast_paths.py)
    sessions = ([(s.time, s.gpu_allocated) for s in trace.samples],
                [(s.time, s.binds, s.evictions) for s in trace.sessions if s.binds or s.evictions])
    events = [(e.type, e.reason, e.kind, e.key, e.message) for e in sim.cluster.events]
    if fast:
        assert sim.scheduler.cache is not None and sim.scheduler.cache.incremental_builds > 0
        # the job index was kept (and checked against a fresh one at every session: SnapshotCache.verify)
        assert sim.scheduler.cache.index is not None and sim.scheduler.cache.index.built
    return (sessions, json.dumps(result, sort_keys=True, default=str), events, sim.cluster.bindings,
            sim.cluster.evictions, writes)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n_nodes=st.integers(1, 6), n_jobs=st.integers(1, 14), conf=st.sampled_from(CONFS))
def test_simulations_decide_the_same_with_and_without_fast_paths(seed, n_nodes, n_jobs, conf):
    assert run(seed, n_nodes, n_jobs, fast=False, conf=conf) == run(seed, n_nodes, n_jobs, fast=True, conf=conf)


def one_session(seed: int, n_nodes: int, n_jobs: int, shared: bool) -> tuple:
    sc = scenario(seed, n_nodes, n_jobs)
    objs = sc.initial + [a.obj for a in sc.arrivals]
    cluster = MemoryCluster(objs, clock=lambda: 100.0)
    ctx = contextlib.nullcontext() if shared else fastpath.disabled("shared_groups", "backfill_groups")
    with ctx:
        r = Scheduler(cluster, _config()).run_once()
    return r.binds, r.evictions, sorted(r.phases.items()), sorted(r.reasons.items())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n_nodes=st.integers(1, 40), n_jobs=st.integers(1, 60))
def test_allocate_shared_groups_place_the_same(seed, n_nodes, n_jobs):
    assert one_session(seed, n_nodes, n_jobs, shared=False) == one_session(seed, n_nodes, n_jobs, shared=True)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n_nodes=st.integers(1, 20), n_jobs=st.integers(1, 40))
def test_keys_agree_with_what_they_stand_for(seed, n_nodes, n_jobs):
    """`Session.job_order_key` orders jobs as `job_order_cmp` does, and `Session.node_state_key(row)` is the row of
    `Session.node_state` as bytes, before and after some placements."""
    sc = scenario(seed, n_nodes, n_jobs)
    cluster = MemoryCluster(sc.initial + [a.obj for a in sc.arrivals], clock=lambda: 100.0)
    scheduler = Scheduler(cluster, _config())
    scheduler.ingest()
    ssn = scheduler.open_session()
    rng = random.Random(seed)

    def check() -> None:
        key = ssn.job_order_key()
        assert key is not None
        jobs = list(ssn.jobs.values())
        for a in jobs:
            for b in rng.sample(jobs, min(len(jobs), 8)):
                c = ssn.job_order_cmp(a, b)
                assert (c < 0) == (key(a) < key(b)) and (c > 0) == (key(a) > key(b))
        rows = np.arange(len(ssn.node_list), dtype=np.int64)
        states = ssn.node_state(rows)
        for r in rows.tolist():
            assert ssn.node_state_key(r) == states[r].tobytes()

    check()
    pending = [t for j in ssn.jobs.values() for t in j.tasks.values() if t.status is TaskStatus.PENDING]
    for t in rng.sample(pending, min(len(pending), 5)):
        ssn.allocate(t, rng.choice(ssn.node_list))
    check()


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 10**6), n_tasks=st.integers(1, 12), n_changes=st.integers(1, 30))
def test_job_counts_moved_by_status_changes_are_a_recount(seed, n_tasks, n_changes):
    """fastpath.incremental_job_stats: after any status changes, a job's counts per status, its counts per status
    set asked before, and its pending best-effort count are what a recount of its tasks gives; figures derived from
    the counts (`memo`) are dropped at every change."""
    rng = random.Random(seed)
    statuses = list(TaskStatus)
    job = JobInfo(uid="j", name="j", namespace="a", queue="q")
    for i in range(n_tasks):
        req = Resources() if rng.random() < 0.3 else Resources.of(cpu=1)
        job.tasks[f"t{i}"] = TaskInfo(uid=f"t{i}", name=f"t{i}", namespace="a", job="j", role="", index=i,
                                      resreq=req, status=rng.choice(statuses))
    sets = [READY, ALLOCATED, frozenset({TaskStatus.PENDING, TaskStatus.PIPELINED})]
    for s in sets:
        job.count(s)
    job.memo("x", lambda j: 1)
    for _ in range(n_changes):
        task = rng.choice(list(job.tasks.values()))
        task.status = rng.choice(statuses)
        st_ = job._stats
        assert st_ is not None and not st_.memo  # moved, not dropped; derived figures dropped
        fresh = _JobStats(job)
        assert st_.counts == fresh.counts
        assert st_.pending_best_effort == fresh.pending_best_effort
        for s in sets:
            assert job.count(s) == sum(1 for t in job.tasks.values() if t.status in s)
        job.memo("x", lambda j: 1)


def test_no_anti_carriers_without_a_scan_is_what_the_scan_finds(monkeypatch):
    """fastpath.anti_carriers_kept: whenever the node index says, without a scan, that no placed pod carries a
    required anti-affinity term, none on the session's nodes does (pod, carried terms, not removed); the kept
    snapshot's count is checked against a full build at every session (`SnapshotCache.verify`, in `run`); and the
    simulations decide the same as with every fast path off. The answer is given both ways (no carrier, and a
    carrier on the records or on a node the session changed)."""
    from magma.scheduler.plugins import _nodeindex

    answers: list[bool] = []
    method = _nodeindex.NodeIndex._no_anti_carriers

    def checked(self) -> bool:
        got = method(self)
        if got:
            assert not any(t.pod is not None and _nodeindex._carries(t) and self.terms(t).req_anti
                           and t.uid not in self._removed for nd in self.nodes for t in nd.tasks.values())
        answers.append(got)
        return got

    monkeypatch.setattr(_nodeindex.NodeIndex, "_no_anti_carriers", checked)
    for seed in range(6):
        assert run(seed, 4, 10, fast=False) == run(seed, 4, 10, fast=True)
    assert True in answers and False in answers


def test_an_anti_affinity_pod_the_session_placed_is_seen_without_a_scan():
    """fastpath.anti_carriers_kept: with none on the snapshot's records, a pod with a required anti-affinity term
    the session itself places (on a node it thereby changes) makes the index answer "not known", and the carried
    terms then come from the scan."""
    from magma.scheduler.plugins._nodeindex import NodeIndex

    for seed in range(200):
        sc = scenario(seed, 3, 12)
        cluster = MemoryCluster(sc.initial + [a.obj for a in sc.arrivals], clock=lambda: 100.0)
        scheduler = Scheduler(cluster, _config())
        scheduler.ingest()
        ssn = scheduler.open_session()
        index = NodeIndex.of(ssn)
        anti = [t for j in ssn.jobs.values() for t in j.tasks.values()
                if t.status is TaskStatus.PENDING and index.terms(t).req_anti]
        if ssn.snapshot.anti_carriers != 0 or not anti:
            continue
        assert index._no_anti_carriers() and index.carried("anti") == []
        ssn.allocate(anti[0], ssn.node_list[0])
        assert not index._no_anti_carriers()
        assert index.carried("anti")
        return
    raise AssertionError("no scenario with a pending anti-affinity pod and none placed")
