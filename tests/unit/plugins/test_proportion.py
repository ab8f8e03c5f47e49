"""proportion: realCapability, water-filling (flat and along the queue tree), order, limits, reclaim, enqueue.

Worked numbers use GPU clusters of 8-GPU nodes; `gpus()` reads a vector in GPUs.
"""

from __future__ import annotations

import types

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magma.api.resources import Resources
from magma.scheduler.framework import JobInfo, QueueInfo, TaskInfo, TaskStatus
from magma.scheduler.plugins._queuetree import ROOT, QueueAttr, QueueTree, water_fill
from magma.scheduler.plugins.proportion import build_attrs
from plugin_builders import gang, gpus, job, nodes, open_session, queue, task, tiers_config

CONF = tiers_config(["proportion"])
GPU = "nvidia.com/gpu"


def three_teams(requests=(32, 32, 32), running=(0, 0, 0), nodes_n=32, extra=()):
    """team-a/b/c weights 30/30/20, guarantees 64/64/32 GPUs; each a job of 8-GPU pods."""
    objs = nodes("gpu", nodes_n)
    objs += [queue("team-a", 30, guarantee={GPU: 64}), queue("team-b", 30, guarantee={GPU: 64}),
             queue("team-c", 20, guarantee={GPU: 32}), *extra]
    node_names = [f"gpu-{i}" for i in range(nodes_n)]
    used = 0
    for name, pods, run in zip("abc", requests, running):
        objs += gang(f"job-{name}", pods, queue=f"team-{name}", gpu=8, cpu=8, memory="64Gi", min_member=1,
                     running_on=node_names[used:used + run])
        used += run
    return objs


def attrs(ssn):
    return ssn.plugins["proportion"].attrs


def test_worked_example_weights_30_30_20_guarantees_64_64_32_on_256_gpus():
    ssn = open_session(three_teams(), CONF)
    at = attrs(ssn)
    # realCapability = (256 - 160) + guarantee
    assert [gpus(at[f"team-{x}"].real_capability) for x in "abc"] == [160, 160, 128]
    # round 1: 256 * 30/80 = 96, 96, 256 * 20/80 = 64 (all above their guarantees); nothing remains.
    assert [gpus(at[f"team-{x}"].deserved) for x in "abc"] == [96, 96, 64]
    # cpu and memory are capped by request: 32 pods x 8 cpu
    assert at["team-a"].deserved["cpu"] == 256_000


def test_small_request_is_floored_at_guarantee_and_the_rest_is_shared_again():
    # team-c asks only 16 GPUs: deserved = max(min(64, 16), 32) = 32 and it is met; round 2 shares the
    # remaining 256 - (96 + 96 + 32) = 32 between a and b: 112 each.
    ssn = open_session(three_teams(requests=(32, 32, 2)), CONF)
    at = attrs(ssn)
    assert [gpus(at[f"team-{x}"].deserved) for x in "abc"] == [112, 112, 32]


def test_only_queues_with_jobs_take_part_but_all_guarantees_reserve():
    extra = [queue("idle", 50, guarantee={GPU: 32})]
    ssn = open_session(three_teams(extra=extra), CONF)
    at = attrs(ssn)
    assert "idle" not in at
    # realCapability = (256 - 192) + guarantee
    assert [gpus(at[f"team-{x}"].real_capability) for x in "abc"] == [128, 128, 96]
    assert [gpus(at[f"team-{x}"].deserved) for x in "abc"] == [96, 96, 64]


def test_capability_caps_deserved_and_the_rest_goes_to_others():
    objs = nodes("gpu", 32) + [queue("a", 1, capability={GPU: 40}), queue("b", 1)]
    objs += gang("ja", 32, queue="a", gpu=8, min_member=1) + gang("jb", 32, queue="b", gpu=8, min_member=1)
    ssn = open_session(objs, CONF)
    at = attrs(ssn)
    assert gpus(at["a"].real_capability) == 40
    assert gpus(at["a"].deserved) == 40 and gpus(at["b"].deserved) == 216


def test_capability_of_zero_is_a_limit_not_unlimited():
    objs = nodes("gpu", 4) + [queue("cpu-only", 1, capability={GPU: 0}), queue("b", 1)]
    objs += gang("x", 2, queue="cpu-only", gpu=8, min_member=1) + gang("y", 2, queue="b", gpu=8, min_member=1)
    ssn = open_session(objs, CONF)
    at = attrs(ssn)
    assert at["cpu-only"].real_capability[GPU] == 0 and at["cpu-only"].deserved[GPU] == 0
    assert gpus(at["b"].deserved) == 16


def test_water_fill_trims_volcanos_guarantee_overshoot():
    # weights 1/1/1, guarantees 50/0/0 of a pool of 99: Volcano's loop gives 50/33/33 = 116.
    def member(name, g):
        m = QueueAttr(name=name, weight=1, request=Resources({GPU: 10**9}), floor=Resources({GPU: g}))
        m.real_capability = Resources({GPU: 10**9})
        return m

    ms = [member("a", 50_000), member("b", 0), member("c", 0)]
    water_fill(Resources({GPU: 99_000}), ms)
    assert [m.deserved[GPU] for m in ms] == [50_000, 24_500, 24_500]


def test_queue_order_priority_then_share():
    extra = [queue("vip", 1, priority=10)]
    objs = three_teams(running=(12, 4, 0), extra=extra) + gang("v", 1, queue="vip", gpu=8)
    ssn = open_session(objs, CONF)
    order = [q.name for q in ssn.sorted_queues([ssn.queues[n] for n in ("team-a", "team-b", "team-c", "vip")])]
    # vip first (priority 10); then by share = allocated / deserved: c holds nothing; with vip's weight 1 in
    # the pool, a and b deserve 256 * 30/81 = 94.8 GPUs: b 32/94.8, a 96/94.8.
    assert order == ["vip", "team-c", "team-b", "team-a"]
    at = attrs(ssn)
    assert abs(at["team-a"].deserved[GPU] - 256_000 * 30 / 81) <= 2  # exact integers, rounded down per round
    assert at["team-c"].share == 0
    assert at["team-a"].share == 96_000 / at["team-a"].deserved[GPU] > 1


def test_overused_and_allocatable_on_requested_dimensions():
    ssn = open_session(three_teams(running=(12, 4, 0)), CONF)
    qa, qb = ssn.queues["team-a"], ssn.queues["team-b"]
    # team-a holds 96 GPUs = deserved on GPUs but its cpu deserved 256 > 96 allocated: not overused.
    assert not ssn.overused(qa)
    # a GPU task does not fit team-a's deserved any more; team-b has 64 GPUs left.
    assert not ssn.allocatable(qa, task(ssn, "job-a-worker-20"))
    assert ssn.allocatable(qb, task(ssn, "job-b-worker-20"))
    why = ssn.plugins["proportion"].not_allocatable(qa, task(ssn, "job-a-worker-20"))
    assert why == "queue team-a: nvidia.com/gpu deserved 96, allocated 96, task needs 8"
    # allocating updates the queue through the event handler
    t = task(ssn, "job-b-worker-20")
    ssn.allocate(t, ssn.nodes["gpu-31"])
    assert gpus(attrs(ssn)["team-b"].allocated) == 40


def test_overused_when_deserved_within_allocated():
    # team-c asks 4 pods (32 GPUs) and runs all 4: deserved = request = allocated on every dimension.
    ssn = open_session(three_teams(requests=(32, 32, 4), running=(0, 0, 4)), CONF)
    assert ssn.overused(ssn.queues["team-c"])


def test_not_open_queue_refuses():
    objs = three_teams(extra=()) + [queue("closed", 1, state="Closed")] + gang("x", 1, queue="closed")
    ssn = open_session(objs, CONF)
    q = ssn.queues["closed"]
    assert not ssn.allocatable(q, task(ssn, "x-worker-0"))
    assert not ssn.job_enqueueable(job(ssn, "x"))
    assert job(ssn, "x").reason == "queue closed is Closed, not Open"


def test_reclaimable_victims_until_queue_back_within_deserved():
    # team-a runs 14 pods = 112 GPUs (deserved 96): two pods over. team-c reclaims.
    ssn = open_session(three_teams(running=(14, 2, 0)), CONF)
    reclaimer = task(ssn, "job-c-worker-0")
    cands = sorted((t for t in job(ssn, "job-a").tasks.values() if t.node), key=lambda t: t.name)
    victims = ssn.plugins["proportion"].reclaim_victims(reclaimer, cands)
    # victims are taken while the queue's allocation is not within deserved: 112 -> 104 -> 96 (stop)
    assert len(victims) == 2


def test_reclaim_never_from_a_non_reclaimable_queue_nor_below_guarantee():
    objs = nodes("gpu", 4)
    objs += [queue("keep", 1, reclaimable=False), queue("guaranteed", 1, guarantee={GPU: 16}), queue("hungry", 1)]
    objs += gang("k", 2, queue="keep", gpu=8, cpu=1, memory="1Gi", running_on=["gpu-0", "gpu-1"], min_member=1)
    objs += gang("g", 2, queue="guaranteed", gpu=8, cpu=1, memory="1Gi", running_on=["gpu-2", "gpu-3"], min_member=1)
    objs += gang("h", 4, queue="hungry", gpu=8, cpu=1, memory="1Gi", min_member=1)
    ssn = open_session(objs, CONF)
    at = attrs(ssn)
    # guaranteed: realCap = 16 + 16 = 32, floor 16; keep and hungry split the rest.
    assert gpus(at["guaranteed"].deserved) == 16
    p = ssn.plugins["proportion"]
    reclaimer = task(ssn, "h-worker-0")
    # keep is over its deserved but not reclaimable
    assert gpus(at["keep"].allocated) > gpus(at["keep"].deserved)
    assert p.reclaim_victims(reclaimer, [task(ssn, "k-worker-0")]) == []
    # guaranteed holds exactly its guarantee: not over deserved, and taking a pod would break the guarantee
    assert p.reclaim_victims(reclaimer, [task(ssn, "g-worker-0")]) == []


def _team_c_world(new_pods: int):
    # team-c: realCap 128. It runs a 12-pod job (minResources 96 GPUs, so nothing elastic), has an Inqueue job
    # reserving 16 more, and a new job asks `new_pods` x 8 GPUs.
    objs = three_teams(requests=(1, 1, 0))
    objs += gang("run", 12, queue="team-c", gpu=8, cpu=8, memory="64Gi", with_min_resources=True,
                 running_on=[f"gpu-{i}" for i in range(12)])
    objs += gang("waiting", 2, queue="team-c", gpu=8, cpu=8, memory="64Gi", with_min_resources=True, phase="Inqueue")
    objs += gang("new", new_pods, queue="team-c", gpu=8, cpu=8, memory="64Gi", with_min_resources=True)
    return objs


def test_enqueue_reason_with_numbers_and_event():
    ssn = open_session(_team_c_world(3), CONF)
    at = attrs(ssn)["team-c"]
    assert gpus(at.inqueue) == 16 and gpus(at.allocated) == 96 and gpus(at.elastic) == 0
    new = job(ssn, "new")
    assert ssn.job_enqueueable(new) is False
    assert new.reason == ("queue team-c: nvidia.com/gpu real capability 128, allocated 96, inqueue 16, "
                          "job needs 24 more")
    ev = [e for e in ssn.events if e[3] == "default/new"]
    assert ev and ev[0][:3] == ("Normal", "Unschedulable", "PodGroup")
    assert ev[0][4].startswith("queue resource quota insufficient: insufficient nvidia.com/gpu")


def test_enqueue_fits_exactly_then_counts_as_inqueue():
    ssn = open_session(_team_c_world(2), CONF)
    new = job(ssn, "new")
    assert ssn.job_enqueueable(new) is True  # 16 + 96 + 16 = 128
    ssn.job_enqueued(new)
    assert gpus(attrs(ssn)["team-c"].inqueue) == 32


def test_enqueue_permits_without_min_resources():
    ssn = open_session(three_teams(running=(0, 0, 16)), CONF)
    assert ssn.job_enqueueable(job(ssn, "job-c")) is True


def test_elastic_part_is_not_counted_against_the_queue():
    # A running job with minResources 1 pod (8 GPUs) but 12 pods running: 88 GPUs are elastic.
    objs = three_teams(requests=(1, 1, 1))
    objs += gang("el", 12, queue="team-c", gpu=8, cpu=8, memory="64Gi", min_member=1, with_min_resources=True,
                 running_on=[f"gpu-{i}" for i in range(12)], phase="Running")
    objs += gang("new", 5, queue="team-c", gpu=8, cpu=8, memory="64Gi", with_min_resources=True)
    ssn = open_session(objs, CONF)
    at = attrs(ssn)["team-c"]
    assert gpus(at.elastic) == 88
    # 40 + 96 + 0 - 88 = 48 <= 128
    assert ssn.job_enqueueable(job(ssn, "new")) is True


# ---------------------------------------------------------------- hierarchy

def test_seed_6_2_tree_parent_share_split_among_children():
    # root: ai-org (10) and other (10) share 80 GPUs: 40 each; ai-org splits 40 as 2:3 = 16 / 24.
    objs = nodes("gpu", 10)
    objs += [queue("ai-org", 10, parent="root"), queue("ai-team-1", 2, parent="ai-org"),
             queue("ai-team-2", 3, parent="ai-org"), queue("other", 10)]
    for q in ("ai-team-1", "ai-team-2", "other"):
        objs += gang(f"j-{q}", 10, queue=q, gpu=8, cpu=1, memory="1Gi", min_member=1)
    ssn = open_session(objs, CONF)
    at = attrs(ssn)
    assert gpus(at["ai-org"].deserved) == 40 and gpus(at["other"].deserved) == 40
    assert gpus(at["ai-team-1"].deserved) == 16 and gpus(at["ai-team-2"].deserved) == 24
    assert gpus(at["ai-org"].request) == 160


def test_seed_12_tree_with_capability_and_guarantees():
    # 40 nodes = 320 GPUs. root: ai-org (w100, cap 256, guarantees below it 176) and default (w1, asks 64).
    from magma.api.load import load_text
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "data" / "seed" / "s11-12" / "12-queues.yaml").read_text()
    objs = [o for o in load_text(text).objects if o.kind == "Queue"] + nodes("h100", 40)
    for q in ("team-nlp", "team-cv", "team-research", "emergency"):
        objs += gang(f"j-{q}", 40, queue=q, gpu=8, cpu=1, memory="1Gi", min_member=1)
    objs += gang("d", 8, queue="default", gpu=8, cpu=1, memory="1Gi", min_member=1)
    ssn = open_session(objs, CONF)
    at = attrs(ssn)
    assert gpus(at["ai-org"].eff_guarantee) == 176
    assert gpus(at["ai-org"].real_capability) == 256 and gpus(at["default"].real_capability) == 144
    assert gpus(at["ai-org"].deserved) == 256 and gpus(at["default"].deserved) == 64
    # below ai-org: free = 256 - 176 = 80; realCap = 80 + guarantee
    assert [gpus(at[q].real_capability) for q in ("team-nlp", "team-cv", "team-research", "emergency")] == \
        [144, 144, 112, 96]
    # weights 30/30/20/100 of 256: 42.7 -> 64 (guarantee), 64, 28.4 -> 32, 142.2 -> 96 (realCap)
    assert [gpus(at[q].deserved) for q in ("team-nlp", "team-cv", "team-research", "emergency")] == \
        [64, 64, 32, 96]
    ssn.plugins["proportion"].on_session_close(ssn)
    assert gpus(ssn.queue_shares["team-nlp"]["deserved"]) == 64
    assert "root" not in ssn.queue_shares or not ssn.plugins["proportion"].tree.virtual_root


def test_allocatable_checks_every_ancestor():
    # ai-org deserves 40; ai-team-1 already runs 5 pods (40 GPUs, over its 16): ai-team-2 is within its own
    # deserved (24) but ai-org is full.
    objs = nodes("gpu", 10)
    objs += [queue("ai-org", 10), queue("ai-team-1", 2, parent="ai-org"),
             queue("ai-team-2", 3, parent="ai-org"), queue("other", 10)]
    objs += gang("t1", 10, queue="ai-team-1", gpu=8, cpu=1, memory="1Gi", min_member=1,
                 running_on=[f"gpu-{i}" for i in range(5)])
    objs += gang("t2", 10, queue="ai-team-2", gpu=8, cpu=1, memory="1Gi", min_member=1)
    objs += gang("o", 10, queue="other", gpu=8, cpu=1, memory="1Gi", min_member=1)
    ssn = open_session(objs, CONF)
    p = ssn.plugins["proportion"]
    t2 = task(ssn, "t2-worker-0")
    assert gpus(p.attrs["ai-team-2"].deserved) == 24 and gpus(p.attrs["ai-org"].allocated) == 40
    assert p.not_allocatable(ssn.queues["ai-team-2"], t2) == \
        "queue ai-org: nvidia.com/gpu deserved 40, allocated 40, task needs 8"
    # not Overused: ai-org's cpu deserved (20 cores asked) is above its 5 allocated cores
    assert not ssn.overused(ssn.queues["ai-team-2"])
    assert ssn.allocatable(ssn.queues["other"], task(ssn, "o-worker-0"))
    # a parent queue cannot take jobs
    assert "not a leaf" in p.not_allocatable(ssn.queues["ai-org"], t2)


def test_team_under_a_full_department_can_still_reclaim_from_a_sibling():
    # Seed §12 shape: 32 nodes (256 GPUs) all held by team-nlp and team-cv (128 each) inside ai-org; the
    # emergency queue (guarantee 16) asks 16 GPUs. ai-org is full, so nothing is allocatable, but emergency
    # is within its own deserved: it may reclaim, and team-nlp (over its deserved 120) gives victims.
    from magma.api.load import load_text
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "data" / "seed" / "s11-12" / "12-queues.yaml").read_text()
    objs = [o for o in load_text(text).objects if o.kind == "Queue"] + nodes("h100", 32)
    names = [f"h100-{i}" for i in range(32)]
    objs += gang("nlp", 16, queue="team-nlp", gpu=8, cpu=0, memory="", running_on=names[:16], min_member=1)
    objs += gang("cv", 16, queue="team-cv", gpu=8, cpu=0, memory="", running_on=names[16:], min_member=1)
    objs += gang("hotfix", 2, queue="emergency", gpu=8, cpu=0, memory="", phase="Inqueue")
    ssn = open_session(objs, CONF)
    at = attrs(ssn)
    # ai-org's children: 256 x 30/160 = 48 -> 64 (guarantee), 64, 160 -> 16 (request, met); the 112 left go
    # 56/56 to nlp and cv: 120 each.
    assert [gpus(at[q].deserved) for q in ("team-nlp", "team-cv", "emergency")] == [120, 120, 16]
    em, t = ssn.queues["emergency"], task(ssn, "hotfix-worker-0")
    assert not ssn.allocatable(em, t)
    assert not ssn.overused(em) and ssn.preemptive(em, t)
    victims = ssn.plugins["proportion"].reclaim_victims(t, sorted(job(ssn, "nlp").tasks.values(), key=lambda x: x.name))
    assert len(victims) == 1  # 128 -> 120, then within deserved


def test_hierarchical_reclaim_needs_the_victims_branch_over_deserved():
    # ai-team-1 (deserved 16) runs 32 GPUs, ai-team-2 runs 0; ai-org as a whole (32 <= 40) is within its
    # deserved, so `other` may not reclaim from ai-team-1, but ai-team-2 (its sibling) may.
    objs = nodes("gpu", 10)
    objs += [queue("ai-org", 10), queue("ai-team-1", 2, parent="ai-org"),
             queue("ai-team-2", 3, parent="ai-org"), queue("other", 10)]
    objs += gang("t1", 10, queue="ai-team-1", gpu=8, cpu=1, memory="1Gi", min_member=1,
                 running_on=[f"gpu-{i}" for i in range(4)])
    objs += gang("t2", 10, queue="ai-team-2", gpu=8, cpu=1, memory="1Gi", min_member=1)
    objs += gang("o", 10, queue="other", gpu=8, cpu=1, memory="1Gi", min_member=1)
    ssn = open_session(objs, CONF)
    p = ssn.plugins["proportion"]
    victim = task(ssn, "t1-worker-0")
    assert p.reclaim_victims(task(ssn, "o-worker-0"), [victim]) == []
    assert p.reclaim_victims(task(ssn, "t2-worker-0"), [victim]) == [victim]


# ---------------------------------------------------------------- properties (hypothesis)

DIMS = ("cpu", GPU)


@st.composite
def worlds(draw):
    """A random queue tree with feasible guarantees (each level's guarantees fit in its parent's budget),
    capabilities at least the guarantees, random requests, and a random cluster."""
    total = {d: draw(st.integers(0, 64)) * 1000 for d in DIMS}
    queues: dict[str, QueueInfo] = {}
    budgets: dict[str, dict[str, int]] = {ROOT: dict(total)}
    caps: dict[str, dict[str, int] | None] = {ROOT: None}
    queues[ROOT] = QueueInfo(name=ROOT, uid=ROOT)
    frontier = [ROOT]
    count = 0
    n_queues = draw(st.integers(1, 9))
    while frontier and count < n_queues:
        parent = frontier.pop(0)
        for _ in range(draw(st.integers(1, 3))):
            if count >= n_queues:
                break
            count += 1
            name = f"q{count}"
            remaining = budgets[parent]
            budget = {d: draw(st.integers(0, remaining[d])) for d in DIMS}
            budgets[parent] = {d: remaining[d] - budget[d] for d in DIMS}
            own = budget if draw(st.booleans()) else {d: 0 for d in DIMS}
            cap = None
            if draw(st.booleans()):
                cap = {d: budget[d] + draw(st.integers(1, 32)) * 1000 for d in DIMS}
            queues[name] = QueueInfo(name=name, uid=name, parent=parent, weight=draw(st.integers(1, 100)),
                                     guarantee=Resources(own), capability=Resources(cap or {}))
            budgets[name] = dict(budget)
            caps[name] = cap
            frontier.append(name)
    for q in queues.values():
        if q.parent in queues:
            queues[q.parent].children.append(q.name)
    jobs = {}
    for q in queues.values():
        if q.children or q.name == ROOT or not draw(st.booleans()):
            continue
        tasks = {}
        for i in range(draw(st.integers(0, 3))):
            req = Resources({d: draw(st.integers(0, 48)) * 1000 for d in DIMS})
            status = draw(st.sampled_from([TaskStatus.PENDING, TaskStatus.RUNNING]))
            tasks[f"{q.name}-t{i}"] = TaskInfo(uid=f"{q.name}-t{i}", name=f"{q.name}-t{i}", namespace="ns",
                                               job=f"j-{q.name}", role="", index=i, resreq=req, status=status)
        jobs[f"j-{q.name}"] = JobInfo(uid=f"j-{q.name}", name=f"j-{q.name}", namespace="ns", queue=q.name,
                                      tasks=tasks, phase="Running")
    ssn = types.SimpleNamespace(total=Resources(total), queues=queues, jobs=jobs)
    return ssn, caps


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_hierarchical_deserved_properties(world):
    ssn, caps = world
    tree = QueueTree(ssn.queues)
    at = build_attrs(ssn, tree)
    total = ssn.total
    for name, a in at.items():
        # deserved never exceeds the cluster, its realCapability, nor the queue's capability
        for d in DIMS:
            assert a.deserved[d] <= total[d], (name, d)
            assert a.deserved[d] <= a.real_capability[d], (name, d)
            if caps.get(name) is not None:
                assert a.deserved[d] <= caps[name][d], (name, d)
        # children's deserved never add up to more than their parent's
        kids = [at[c] for c in tree.children(name) if c in at]
        if kids:
            for d in DIMS:
                assert sum(k.deserved[d] for k in kids) <= a.deserved[d], (name, d)
        # guarantees are honoured when asked for
        if name != ROOT:
            for d in DIMS:
                g = a.guarantee[d]
                if a.request[d] >= g:
                    assert a.deserved[d] >= g, (name, d, a.deserved, a.guarantee, a.request)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 100), st.integers(0, 100), st.integers(0, 200), st.integers(0, 300)),
                min_size=1, max_size=6),
       st.integers(0, 400))
def test_water_fill_never_hands_out_more_than_the_pool(members, pool):
    ms = []
    for i, (w, g, cap, req) in enumerate(members):
        m = QueueAttr(name=f"q{i}", weight=w, request=Resources({GPU: req * 1000}),
                      real_capability=Resources({GPU: cap * 1000}), floor=Resources({GPU: min(g, cap) * 1000}))
        ms.append(m)
    water_fill(Resources({GPU: pool * 1000}), ms)
    assert sum(m.deserved[GPU] for m in ms) <= pool * 1000
    for m in ms:
        assert m.deserved[GPU] <= m.real_capability[GPU]
    if sum(m.floor[GPU] for m in ms) <= pool * 1000:
        for m in ms:
            assert m.deserved[GPU] >= m.floor[GPU]


def _filled(members: list[tuple], pool: dict) -> list[QueueAttr]:
    """Members (weight, realCapability, request, floor) water-filled from `pool`."""
    ms = [QueueAttr(name=f"q{i}", weight=w, real_capability=Resources(cap), request=Resources(req),
                    floor=Resources(floor)) for i, (w, cap, req, floor) in enumerate(members)]
    water_fill(Resources(pool), ms)
    return ms


_AMOUNT = st.integers(-3, 400).map(lambda v: v * 250)  # some negative, zero (absent) and uneven amounts
_VECTOR = st.dictionaries(st.sampled_from(["cpu", "memory", GPU]), _AMOUNT, max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), _VECTOR, _VECTOR, _VECTOR), min_size=1, max_size=6), _VECTOR)
def test_water_fill_in_ints_gives_the_resources_arithmetic_answer(members, pool):
    """fastpath.water_fill_ints: the same deserved (amounts and the order of their names) and shares."""
    from magma.scheduler.framework import fastpath

    def fill() -> list[tuple]:
        return [(list(m.deserved.items()), m.share) for m in _filled(members, pool)]

    with fastpath.disabled("water_fill_ints", "water_fill_lean"):
        plain = fill()
    with fastpath.disabled("water_fill_lean"):  # fastpath.water_fill_lean: no Fraction, no trim without overshoot
        assert fill() == plain
    with fastpath.disabled("water_fill_columns"):
        assert fill() == plain
    # fastpath.water_fill_columns: the same amounts and shares (a vector may list its names in another order)
    assert [(sorted(d), share) for d, share in fill()] == [(sorted(d), share) for d, share in plain]


_POSITIVE = st.dictionaries(st.sampled_from(["cpu", "memory", GPU, "pods"]), st.integers(1, 400).map(lambda v: v * 250),
                            max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), _POSITIVE, _POSITIVE, _POSITIVE), min_size=1, max_size=6), _POSITIVE)
def test_water_fill_by_columns_gives_the_same_amounts(members, pool):
    """fastpath.water_fill_columns, taken for positive amounts only: the amounts and shares of the dict steps."""
    from magma.scheduler.framework import fastpath
    from magma.scheduler.plugins import _queuetree

    def fill() -> list[tuple]:
        return [(sorted(m.deserved.items()), m.share) for m in _filled(members, pool)]

    with fastpath.disabled("water_fill_columns"):
        plain = fill()
    taken = []
    columns = _queuetree._fill_columns
    _queuetree._fill_columns = lambda *a: taken.append(1) or columns(*a)
    try:
        assert fill() == plain
    finally:
        _queuetree._fill_columns = columns
    assert taken == [1]


def test_kept_refusals_read_only_the_refused_resources_figures():
    """fastpath.enqueue_verdicts_kept: a refusal's texts are kept by the refusing queue and the figures of the resources
    it refuses; a change elsewhere (cpu here) takes the kept texts, which are those made afresh."""
    from magma.scheduler.framework import fastpath
    from magma.scheduler.plugins import proportion
    from magma.scheduler.plugins._queuetree import QueueAttr

    def chain(cpu: int) -> list[QueueAttr]:
        return [QueueAttr(name="team", allocated=Resources.of(gpu=6, cpu=cpu), inqueue=Resources.of(gpu=1),
                          real_capability=Resources.of(gpu=8, cpu=64))]

    need = Resources.of(gpu=2, cpu=4)
    proportion._VERDICTS.clear()
    with fastpath.disabled("enqueue_verdicts_kept"):
        fresh = proportion.quota_verdict(chain(10), need)
        assert not proportion._VERDICTS
    assert fresh and "nvidia.com/gpu real capability 8" in fresh[0] and "cpu" not in fresh[0]
    assert proportion.quota_verdict(chain(10), need) == fresh
    assert len(proportion._VERDICTS) == 1
    assert proportion.quota_verdict(chain(20), need) == fresh  # cpu is not refused: the same key
    assert len(proportion._VERDICTS) == 1
    assert proportion.quota_verdict(chain(20), Resources.of(gpu=1)) == ()


def test_a_report_shows_the_bounds_the_record_holds_now():
    """QueueAttr.report keeps the finite forms of its bounds while the record holds the same vectors: a record given
    other bounds (a copy changed, say) reports those, unlimited dimensions left out as before."""
    import copy

    from magma.scheduler.plugins._queuetree import INF

    at = QueueAttr(name="team", deserved=Resources({GPU: 8000}), capability=Resources({GPU: 16000, "cpu": INF}),
                   real_capability=Resources({GPU: 12000, "cpu": INF}), allocated=Resources({GPU: 4000}))
    first = at.report()
    assert first["capability"] == Resources({GPU: 16000}) and first["realCapability"] == Resources({GPU: 12000})
    again = at.report()
    assert again == first and again is not first  # a dict of the caller's own
    assert again["realCapability"] is first["realCapability"]  # the kept finite form
    other = copy.copy(at)
    other.real_capability = Resources({GPU: 10000, "cpu": INF})
    other.deserved = Resources({GPU: 6000, "cpu": INF})
    assert other.report()["realCapability"] == Resources({GPU: 10000})
    assert other.report()["deserved"] == Resources({GPU: 6000})
    assert at.report()["realCapability"] == Resources({GPU: 12000}) and at.report()["deserved"] == at.deserved
