"""Preempt and reclaim decide exactly the same with and without their fast paths (`fastpath.preempt_pruning`,
`fastpath.preempt_caches`), each switched off alone or both.

The simulations of test_fast_paths.py evict now and then; this test makes eviction the common case: random small
clusters filled with running gangs (some at priority `low`, some not preemptable, some bare pods) in two queues of
a queue tree, and pending gangs at priority `high` in those queues (preempt) or in queues that run nothing
(reclaim). Two sessions each (the second after the evicted pods are gone), with and without the fast paths:
binds, evictions, phases and reasons must be equal. A fixed sample of seeds must show both preempt and reclaim
evicting, so that the comparison is not vacuous.
"""

from __future__ import annotations

import contextlib
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magma.api.config import parse_config
from magma.api.defaults import builtin_priority_classes, builtin_queues
from magma.api.objects import Object, Pod, PodGroup, PriorityClass
from magma.cluster.memory import MemoryCluster
from magma.scheduler.framework import fastpath
from magma.scheduler.scheduler import Scheduler

from test_fast_paths import CONF, node, queue


def _config(actions: str):
    res = parse_config(CONF.replace("enqueue, allocate, preempt, reclaim, backfill", actions))
    assert res.config is not None, res.messages()
    return res.config


def job(name: str, rng: random.Random, queue_name: str, pc: str | None, size: int, gpus: int,
        on: list[str] | None, t: float) -> list[Object]:
    ns = rng.choice(["a", "b"])
    req: dict[str, str] = {"cpu": rng.choice(["1", "2"]), "memory": "4Gi"}
    if gpus:
        req["nvidia.com/gpu"] = str(gpus)
    spec: dict[str, Any] = {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {"requests": req}}]}
    if pc:
        spec["priorityClassName"] = pc
    if rng.random() < 0.1:
        spec["nodeSelector"] = {"gpu-type": "a"}
    pg_ann: dict[str, str] = {}
    if on and rng.random() < 0.1:
        pg_ann["volcano.sh/preemptable"] = "false"
    pg_spec: dict[str, Any] = {"minMember": rng.randint(1, size), "queue": queue_name}
    if pc:
        pg_spec["priorityClassName"] = pc
    if gpus and rng.random() < 0.5:
        pg_spec["minResources"] = {"nvidia.com/gpu": str(gpus * pg_spec["minMember"])}
    objs: list[Object] = [PodGroup.model_validate({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns, "uid": f"pg-{name}", "creationTimestamp": t, "annotations": pg_ann},
        "spec": pg_spec, "status": {"phase": "Running" if on else "Pending"}})]
    for i in range(size):
        spec_i = dict(spec)
        if on:
            spec_i["nodeName"] = on[i]
        objs.append(Pod.model_validate({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{name}-{i}", "namespace": ns, "uid": f"p-{name}-{i}", "creationTimestamp": t,
                         "annotations": {"scheduling.k8s.io/group-name": name, "volcano.sh/task-spec": "worker"}},
            "spec": spec_i, "status": {"phase": "Running" if on else "Pending"}}))
    return objs


def full_cluster(seed: int, n_nodes: int, n_pending: int) -> list[Object]:
    """Nodes filled (first fit on GPUs and pods) with running gangs of qa and qb, then pending gangs."""
    rng = random.Random(seed)
    nodes = [node(i, rng) for i in range(n_nodes)]
    objs: list[Object] = list(nodes)
    objs += [queue("root", None, 1, None), queue("org", "root", 2, rng.choice([None, 64])),
             queue("qa", "org", rng.randint(1, 3), None), queue("qb", "org", 1, None),
             queue("qc", "root", rng.randint(1, 2), None), queue("qd", "org", 1, None)]
    objs += [PriorityClass.model_validate({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                           "metadata": {"name": n}, "value": v}) for n, v in (("low", 10), ("high", 1000))]
    have = {o.name for o in objs if isinstance(o, (PriorityClass,)) or getattr(o, "KIND", "") == "Queue"}
    objs += [q for q in builtin_queues() if q.name not in have]
    objs += [pc for pc in builtin_priority_classes() if pc.name not in have]
    free = {n.name: [int(str(n.status.allocatable["nvidia.com/gpu"])), int(str(n.status.allocatable["pods"]))]
            for n in nodes}
    j = 0
    misses = 0
    while misses < 20:
        size, gpus = rng.randint(1, 4), rng.choice([1, 1, 2, 4])
        on = []
        for _ in range(size):
            fits = [n for n, (g, p) in free.items() if g >= gpus and p >= 1]
            if not fits:
                break
            pick = rng.choice(fits[:3])
            free[pick][0] -= gpus
            free[pick][1] -= 1
            on.append(pick)
        if len(on) < size:
            for n in on:
                free[n][0] += gpus
                free[n][1] += 1
            misses += 1
            continue
        objs += job(f"r{j}", rng, rng.choice(["qa", "qa", "qb"]), rng.choice(["low", None]), size, gpus, on, float(j))
        j += 1
    for k in range(n_pending):
        q = rng.choice(["qa", "qb", "qc", "qd"])
        pc = rng.choice(["high", "high", None]) if q in ("qa", "qb") else rng.choice(["high", None])
        objs += job(f"p{k}", rng, q, pc, rng.randint(1, 4), rng.choice([1, 2, 4]), None, 1000.0 + k)
    return objs


# With preempt first, preempt's own reclaiming across queues (docs/volcano-differences.md) leaves reclaim little.
ACTIONS = ["enqueue, allocate, preempt, reclaim, backfill", "enqueue, allocate, reclaim, backfill"]


PREEMPT_SWITCHES = ("preempt_pruning", "preempt_caches", "preempt_active_jobs", "drf_vote_bound", "preempt_free_room",
                    "scores_across_sessions", "preempt_vote_bound", "preempt_job_quota", "preempt_lazy_setup",
                    "preempt_figures_memo", "preempt_fit_once", "preempt_gang_bound")
SWITCHES = [PREEMPT_SWITCHES, *((name,) for name in PREEMPT_SWITCHES)]  # all of them off, and each alone


def sessions(seed: int, n_nodes: int, n_pending: int, fast: bool, actions: str = ACTIONS[0],
             switches: tuple[str, ...] = SWITCHES[0]) -> tuple:
    cluster = MemoryCluster(full_cluster(seed, n_nodes, n_pending), clock=lambda: 1000.0)
    scheduler = Scheduler(cluster, _config(actions))
    ctx = contextlib.nullcontext() if fast else fastpath.disabled(*switches)
    out = []
    with ctx:
        for _ in range(2):
            r = scheduler.run_once()
            out.append((r.binds, r.evictions, sorted(r.phases.items()), sorted(r.reasons.items())))
            cluster.finish_deletions(float("inf"))
    return tuple(out)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n_nodes=st.integers(1, 12), n_pending=st.integers(1, 8),
       actions=st.sampled_from(ACTIONS), switches=st.sampled_from(SWITCHES))
def test_preempt_and_reclaim_decide_the_same_with_and_without_fast_paths(seed, n_nodes, n_pending, actions,
                                                                         switches):
    assert (sessions(seed, n_nodes, n_pending, False, actions, switches)
            == sessions(seed, n_nodes, n_pending, True, actions))


def test_the_workload_makes_preempt_and_reclaim_evict():
    """Most seeds evict (so the comparison above is not vacuous), by preempt and by reclaim."""
    evicting: dict[str, int] = {"preempt": 0, "reclaim": 0}
    for actions in ACTIONS:
        for seed in range(10):
            reasons = {reason for (_, evictions, _, _) in sessions(seed, 8, 6, True, actions) for _, reason in evictions}
            for r in reasons & set(evicting):
                evicting[r] += 1
    assert evicting["preempt"] >= 5 and evicting["reclaim"] >= 3, evicting


def test_jobs_that_cannot_be_pipelined_are_passed_over_with_the_same_decisions(monkeypatch):
    """fastpath.preempt_gang_bound passes over turns in this workload (the bound is below the gang's need), and
    the sessions decide as with every turn tried."""
    from magma.scheduler.actions import preempt

    passed = []
    judge = preempt.Evictor.cannot_pipeline

    def counting(self, pjob, tasks, cross, need):
        passed.append(judge(self, pjob, tasks, cross, need))
        return passed[-1]

    monkeypatch.setattr(preempt.Evictor, "cannot_pipeline", counting)
    for seed in range(12):
        fast = sessions(seed, 8, 6, True)
        assert fast == sessions(seed, 8, 6, False, switches=("preempt_gang_bound",)), seed
    assert sum(passed) >= 5 and not all(passed), (sum(passed), len(passed))


def test_the_queue_share_bound_passes_over_turns_with_the_same_decisions(monkeypatch):
    """Within fastpath.preempt_gang_bound, a turn that can evict nothing of its queue places no more tasks than the
    queue's share lets in (`Evictor._quota_left`): that bound decides some turns here, with the same decisions."""
    from magma.scheduler.actions import preempt

    decided = []
    judge, quota = preempt.Evictor.cannot_pipeline, preempt.Evictor._quota_left
    left: list = []

    def counting_quota(self, queue, task, cross):
        left.append(quota(self, queue, task, cross))
        return left[-1]

    def counting(self, pjob, tasks, cross, need):
        left.clear()
        got = judge(self, pjob, tasks, cross, need)
        if got and left and left[-1] is not None and left[-1] < need:
            decided.append(pjob.uid)
        return got

    monkeypatch.setattr(preempt.Evictor, "_quota_left", counting_quota)
    monkeypatch.setattr(preempt.Evictor, "cannot_pipeline", counting)
    for seed in range(12):
        assert sessions(seed, 8, 6, True) == sessions(seed, 8, 6, False, switches=("preempt_gang_bound",)), seed
    assert decided


def _counted_with_and_without(switch: str, count: list[int]) -> tuple[int, int]:
    """`count[0]` over the sessions of six seeds with `switch` on, then off (the sessions must decide the same)."""
    runs = []
    for ctx in (contextlib.nullcontext(), fastpath.disabled(switch)):
        count[0] = 0
        with ctx:
            runs.append(([sessions(seed, 8, 6, True) for seed in range(6)], count[0]))
    assert runs[0][0] == runs[1][0]
    return runs[0][1], runs[1][1]


def test_kept_job_bounds_are_the_votes_asked_afresh_and_decide_the_same(monkeypatch):
    """fastpath.job_bounds_kept: each pair `Session.victim_job_bounds` gives is the one the bounds give when asked
    now; pairs kept from earlier turns and sessions are given (fewer jobs asked), and the sessions decide the same
    without them."""
    from magma.scheduler.framework import session as session_mod

    asked = [0]
    ask, bounds = session_mod._job_bounds, session_mod.Session.victim_job_bounds

    def counting(tiers, actor, jobs):
        asked[0] += len(jobs)
        return ask(tiers, actor, jobs)

    def checking(self, point, actor, jobs):
        got = bounds(self, point, actor, jobs)
        assert got == ask(self._bounds_tiers(point), actor, jobs)
        return got

    monkeypatch.setattr(session_mod, "_job_bounds", counting)
    monkeypatch.setattr(session_mod.Session, "victim_job_bounds", checking)
    asked_kept, asked_fresh = _counted_with_and_without("job_bounds_kept", asked)
    assert 0 < asked_kept < asked_fresh, (asked_kept, asked_fresh)


def test_kept_job_bounds_are_capped_per_job_and_decide_the_same(monkeypatch):
    """fastpath.job_bounds_kept keeps at most `_BOUNDS_PER_JOB` keys per job (the key follows the preemptor, so a
    long-running job would gather them): with the cap at 1, no job ever holds more, and the sessions still decide
    as with the switch off."""
    from magma.scheduler.framework import session as session_mod

    monkeypatch.setattr(session_mod, "_BOUNDS_PER_JOB", 1)
    bounds, most = session_mod.Session.victim_job_bounds, [0]

    def checking(self, point, actor, jobs):
        got = bounds(self, point, actor, jobs)
        for job in jobs:
            most[0] = max(most[0], len(job.stats().memo.get(session_mod._KEPT_BOUNDS) or ()))
        return got

    monkeypatch.setattr(session_mod.Session, "victim_job_bounds", checking)
    _counted_with_and_without("job_bounds_kept", [0])
    assert most[0] == 1


# drf moved into priority's tier: their bounds are ANDed there, where CONF ORs them across two tiers.
ONE_TIER_CONF = CONF.replace("  - name: drf\n", "").replace("  - name: conformance\n",
                                                            "  - name: conformance\n  - name: drf\n")


def test_kept_job_bounds_follow_a_change_of_configuration():
    """fastpath.job_bounds_kept: a scheduler given another configuration between sessions (the same plugins in
    other tiers) keeps its snapshot, and with it the jobs' kept pairs; the tiers' layout is part of their key, so
    the sessions decide as with the switch off."""
    assert ONE_TIER_CONF != CONF

    def run(seed: int, fast: bool) -> list:
        cluster = MemoryCluster(full_cluster(seed, 8, 6), clock=lambda: 1000.0)
        scheduler = Scheduler(cluster, parse_config(ONE_TIER_CONF).config)
        out = []
        with contextlib.nullcontext() if fast else fastpath.disabled("job_bounds_kept"):
            for text in (ONE_TIER_CONF, CONF, CONF, ONE_TIER_CONF):
                scheduler.config = parse_config(text).config
                r = scheduler.run_once()
                out.append((r.binds, r.evictions, sorted(r.phases.items()), sorted(r.reasons.items())))
                cluster.finish_deletions(float("inf"))
        return out

    for seed in range(40):
        assert run(seed, True) == run(seed, False), seed
