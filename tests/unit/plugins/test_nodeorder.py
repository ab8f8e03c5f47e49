"""nodeorder plugin: kube-scheduler's score formulas with Volcano's weights, worked by hand."""

from __future__ import annotations

import math

import numpy as np
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magma.api.config import PluginOption
from magma.api.load import load_text
from magma.cluster.memory import MemoryCluster
from magma.scheduler.framework import PLUGINS, Session, Statement, build
from magma.scheduler.plugins import nodeorder as N

QUEUE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
         "spec": {"weight": 1}}
OFF = {k: 0 for k in N.WEIGHTS}


def node(name, labels=None, taints=(), cpu="8", memory="8Gi", gpu=None):
    alloc = {"cpu": cpu, "memory": memory}
    if gpu is not None:
        alloc["nvidia.com/gpu"] = str(gpu)
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {"taints": list(taints)}, "status": {"allocatable": alloc}}


def pod(name, requests=None, labels=None, on=None, spec=None, ns="default", containers=None):
    body = {"schedulerName": "volcano",
            "containers": containers or [{"name": "c", "resources": {"requests": requests or {}}}], **(spec or {})}
    if on:
        body["nodeName"] = on
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
            "spec": body, "status": {"phase": "Running" if on else "Pending"}}


def session(objects, **weights):
    res = load_text(yaml.safe_dump_all([QUEUE, *objects]))
    assert not res.problems, [p.format() for p in res.problems]
    snap = build(MemoryCluster(res.objects).state())
    args = {**OFF, **weights}
    opts = [PluginOption(name="nodeorder", arguments=args)]
    ssn = Session(snap, None, [opts])
    p = PLUGINS["nodeorder"](dict(args))
    ssn.plugins["nodeorder"] = p
    p.on_session_open(ssn)
    return ssn


def task(ssn, name):
    return next(t for t in ssn.tasks_by_uid.values() if t.name == name)


def scores(ssn, name, nodes=None):
    names = nodes or [n.name for n in ssn.node_list]
    rows = np.array([ssn.table.row[n] for n in names])
    return dict(zip(names, ssn.node_scores(task(ssn, name), rows).tolist()))


class TestResources:
    def objs(self):
        return [node("A", cpu="4", memory="8Gi"), node("B", cpu="8", memory="8Gi"),
                pod("used", {"cpu": "1", "memory": "2Gi"}, on="A"),
                pod("p", {"cpu": "1", "memory": "2Gi"})]

    def test_least_allocated(self):
        # A: cpu (4000-2000)*100//4000 = 50, mem (8-4)/8 -> 50 => 50
        # B: cpu (8000-1000)*100//8000 = 87, mem (8-2)/8 -> 75 => (87*50 + 75*50)//100 = 81
        assert scores(session(self.objs(), **{"leastrequested.weight": 1}), "p") == {"A": 50.0, "B": 81.0}
        assert scores(session(self.objs(), **{"leastrequested.weight": 3}), "p") == {"A": 150.0, "B": 243.0}

    def test_most_allocated(self):
        # A: 2000*100//4000 = 50, 4/8 -> 50 => 50; B: 1000*100//8000 = 12, 2/8 -> 25 => (12+25)//2 = 18
        assert scores(session(self.objs(), **{"mostrequested.weight": 1}), "p") == {"A": 50.0, "B": 18.0}

    def test_balanced_allocation(self):
        # A: cpu 2/4 = .5, mem 4/8 = .5 -> std 0 -> 100; B: 1/8 vs 2/8 -> std .0625 -> int(93.75) = 93
        assert scores(session(self.objs(), **{"balancedresource.weight": 1}), "p") == {"A": 100.0, "B": 93.0}

    def test_balanced_allocation_with_gpu_uses_population_std(self):
        objs = [node("G", cpu="8", memory="16Gi", gpu=8), node("C", cpu="8", memory="16Gi"),
                pod("p", {"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": "1"}),
                pod("q", {"cpu": "1", "memory": "4Gi"})]
        ssn = session(objs, **{"balancedresource.weight": 1})
        # G: (1/8, 4/16, 1/8): mean 1/6, std 0.0589 -> 94; C has no gpu: (1/8, 1/4) -> std 1/16 -> 93
        assert scores(ssn, "p") == {"G": 94.0, "C": 93.0}
        # a pod not asking for gpus leaves the gpu out everywhere
        assert scores(ssn, "q") == {"G": 93.0, "C": 93.0}

    def test_fraction_capped_at_one(self):
        objs = [node("A", cpu="1", memory="8Gi"), pod("p", {"cpu": "2", "memory": "1Gi"})]
        # cpu fraction 2 -> 1, memory 1/8: std = (1 - .125)/2 = .4375 -> 56
        assert scores(session(objs, **{"balancedresource.weight": 1}), "p") == {"A": 56.0}

    def test_best_effort_pod(self):
        objs = [node("A", cpu="4", memory="8Gi"), node("B", cpu="8", memory="8Gi"),
                pod("used", {"cpu": "1", "memory": "2Gi"}, on="A"), pod("be")]
        # balanced allocation skips best-effort pods
        assert scores(session(objs, **{"balancedresource.weight": 1}), "be") == {"A": 0.0, "B": 0.0}
        # least allocated counts 100m / 200Mi for the missing requests:
        # A: cpu (4000-1100)*100//4000 = 72, mem (8192-2048-200)/8192 -> 72 => 72
        # B: cpu (8000-100)*100//8000 = 98, mem (8192-200)/8192 -> 97 => 97
        assert scores(session(objs, **{"leastrequested.weight": 1}), "be") == {"A": 72.0, "B": 97.0}

    def test_nonzero_requested_of_placed_pods(self):
        # a placed pod without requests counts 100m / 200Mi on its node for Least/MostAllocated
        objs = [node("A", cpu="1", memory="1000Mi"), pod("be", on="A"), pod("p", {"cpu": "100m", "memory": "100Mi"})]
        # cpu (1000-200)*100//1000 = 80, memory (1000-300)/1000 -> 70 => 75
        assert scores(session(objs, **{"leastrequested.weight": 1}), "p") == {"A": 75.0}
        # ... but not for BalancedAllocation, which uses exact requests: .1 and .1 -> 100
        assert scores(session(objs, **{"balancedresource.weight": 1}), "p") == {"A": 100.0}

    def test_requested_follows_allocations(self):
        ssn = session(self.objs() + [pod("q", {"cpu": "1", "memory": "2Gi"})], **{"leastrequested.weight": 1})
        assert scores(ssn, "q") == {"A": 50.0, "B": 81.0}
        stmt = Statement(ssn)
        stmt.allocate(task(ssn, "p"), ssn.nodes["B"])
        # B now holds p: cpu (8000-2000)*100//8000 = 75, mem (8-4)/8 -> 50 => 62
        assert scores(ssn, "q") == {"A": 50.0, "B": 62.0}
        stmt.discard()
        assert scores(ssn, "q") == {"A": 50.0, "B": 81.0}
        # an eviction takes the pod out of the node's requests (Volcano removes it from the node info)
        stmt = Statement(ssn)
        stmt.evict(task(ssn, "used"), "preempt")
        assert scores(ssn, "q") == {"A": 75.0, "B": 81.0}


class TestNodeAffinity:
    def test_preferred_terms_normalised(self):
        pref = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 10, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
            {"weight": 5, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}}]}}}
        objs = [node("n1", {"zone": "a", "gpu": "h100"}), node("n2", {"zone": "a"}), node("n3", {"gpu": "x"}),
                node("n4"), pod("p", spec=pref), pod("plain")]
        ssn = session(objs, **{"nodeaffinity.weight": 2})
        # raw 15, 10, 5, 0 -> 100, 66, 33, 0 -> times 2
        assert scores(ssn, "p") == {"n1": 200.0, "n2": 132.0, "n3": 66.0, "n4": 0.0}
        # normalised over the candidates given
        assert scores(ssn, "p", ["n2", "n3", "n4"]) == {"n2": 200.0, "n3": 100.0, "n4": 0.0}
        assert set(scores(ssn, "plain").values()) == {0.0}


class TestTaintToleration:
    def test_reverse_normalised_prefer_no_schedule_count(self):
        soft = [{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"},
                {"key": "old", "value": "1", "effect": "PreferNoSchedule"}, {"key": "hard", "effect": "NoSchedule"}]
        objs = [node("n0"), node("n1", taints=soft[:1]), node("n2", taints=soft),
                pod("p"), pod("tol", spec={"tolerations": [{"key": "spot", "operator": "Exists"}]}),
                pod("hard", spec={"tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]})]
        ssn = session(objs, **{"tainttoleration.weight": 3})
        # intolerable counts 0, 1, 2 -> 100, 50, 0 -> times 3 (NoSchedule taints do not count)
        assert scores(ssn, "p") == {"n0": 300.0, "n1": 150.0, "n2": 0.0}
        # tolerating spot: counts 0, 0, 1
        assert scores(ssn, "tol") == {"n0": 300.0, "n1": 300.0, "n2": 0.0}
        # a NoSchedule toleration does not help against PreferNoSchedule
        assert scores(ssn, "hard") == scores(ssn, "p")
        # nothing intolerable anywhere: 100 for all
        assert scores(ssn, "p", ["n0"]) == {"n0": 300.0}


def pref_term(kind, weight, app, key):
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}}]}}


ZONES = [node("a0", {"zone": "a"}), node("a1", {"zone": "a"}), node("b0", {"zone": "b"}), node("c0", {"zone": "c"})]


class TestInterPodAffinity:
    def test_incoming_preferred_terms(self):
        spec = {"affinity": {**pref_term("podAffinity", 10, "db", "zone"),
                             **pref_term("podAntiAffinity", 5, "web", "kubernetes.io/hostname")}}
        objs = ZONES + [pod("db", labels={"app": "db"}, on="a0"), pod("w1", labels={"app": "web"}, on="a1"),
                        pod("w2", labels={"app": "web"}, on="b0"), pod("p", spec=spec)]
        # raw: a0 +10, a1 +10-5, b0 -5, c0 0 -> min-max: 100, 66, 0, 33; times 2
        assert scores(session(objs, **{"podaffinity.weight": 2}), "p") == {"a0": 200.0, "a1": 132.0, "b0": 0.0,
                                                                          "c0": 66.0}

    def test_placed_pods_preferred_terms_and_required_terms(self):
        spec = {"affinity": pref_term("podAffinity", 20, "x", "kubernetes.io/hostname")}
        anti = {"affinity": pref_term("podAntiAffinity", 30, "x", "zone")}
        hard = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}]}}}
        objs = ZONES + [pod("likes-x", labels={"app": "y"}, on="c0", spec=spec),
                        pod("hates-x", labels={"app": "y"}, on="b0", spec=anti),
                        pod("needs-x", labels={"app": "y"}, on="a1", spec=hard),
                        pod("x", labels={"app": "x"}), pod("z", labels={"app": "z"})]
        ssn = session(objs, **{"podaffinity.weight": 1})
        # raw: c0 +20, b0 -30, others 0 (Volcano's HardPodAffinityWeight is 0) -> 60, 0, 60, 100
        assert scores(ssn, "x") == {"a0": 60.0, "a1": 60.0, "b0": 0.0, "c0": 100.0}
        assert set(scores(ssn, "z").values()) == {0.0}

    def test_follows_allocations(self):
        spec = {"affinity": pref_term("podAffinity", 10, "db", "zone")}
        objs = ZONES + [pod("db", labels={"app": "db"}), pod("p", spec=spec)]
        ssn = session(objs, **{"podaffinity.weight": 1})
        assert set(scores(ssn, "p").values()) == {0.0}
        ssn.allocate(task(ssn, "db"), ssn.nodes["b0"])
        assert scores(ssn, "p") == {"a0": 0.0, "a1": 0.0, "b0": 100.0, "c0": 0.0}


def soft_spread(key, max_skew=1):
    return {"topologySpreadConstraints": [{"maxSkew": max_skew, "topologyKey": key,
                                           "whenUnsatisfiable": "ScheduleAnyway",
                                           "labelSelector": {"matchLabels": {"app": "w"}}}]}


class TestTopologySpread:
    def placed(self):
        return [pod("w0", labels={"app": "w"}, on="a0"), pod("w1", labels={"app": "w"}, on="a0"),
                pod("w2", labels={"app": "w"}, on="b0")]

    def test_zone(self):
        ssn = session(ZONES + self.placed() + [pod("p", labels={"app": "w"}, spec=soft_spread("zone"))],
                      **{"podtopologyspread.weight": 2})
        # 3 domains: weight ln(5); a: 2*1.609 = 3.22 -> 3, b: 1.609 -> 2, c: 0
        # normalised 100*(max+min-s)//max: a 0, b 33, c 100; times 2
        assert scores(ssn, "p") == {"a0": 0.0, "a1": 0.0, "b0": 66.0, "c0": 200.0}

    def test_hostname_counts_per_node(self):
        ssn = session(ZONES + self.placed() + [pod("p", labels={"app": "w"},
                                                   spec=soft_spread("kubernetes.io/hostname", max_skew=2))],
                      **{"podtopologyspread.weight": 1})
        # 4 nodes: ln(6) = 1.79; a0: 2*1.79 + 1 = 4.58 -> 5, a1: 1, b0: 2.79 -> 3, c0: 1; max 5, min 1
        # 100*(6 - s)//5: a0 20, a1 100, b0 60, c0 100
        assert scores(ssn, "p") == {"a0": 20.0, "a1": 100.0, "b0": 60.0, "c0": 100.0}

    def test_nodes_without_the_key_score_zero(self):
        ssn = session(ZONES + [node("bare")] + self.placed() + [pod("p", labels={"app": "w"}, spec=soft_spread("zone"))],
                      **{"podtopologyspread.weight": 1})
        assert scores(ssn, "p") == {"a0": 0.0, "a1": 0.0, "b0": 33.0, "c0": 100.0, "bare": 0.0}

    def test_only_candidate_domains_count(self):
        ssn = session(ZONES + self.placed() + [pod("p", labels={"app": "w"}, spec=soft_spread("zone"))],
                      **{"podtopologyspread.weight": 1})
        # candidates b0 and c0: 2 domains, ln(4); b: 1.386 -> 1, c: 0 -> b 0, c 100
        assert scores(ssn, "p", ["b0", "c0"]) == {"b0": 0.0, "c0": 100.0}

    def test_no_constraints_no_score(self):
        ssn = session(ZONES + self.placed() + [pod("p", labels={"app": "w"})], **{"podtopologyspread.weight": 2})
        assert set(scores(ssn, "p").values()) == {0.0}


class TestWeights:
    def test_defaults_match_volcano(self):
        p = PLUGINS["nodeorder"]({})
        assert p.weights == {"leastrequested.weight": 1, "mostrequested.weight": 0, "balancedresource.weight": 1,
                             "nodeaffinity.weight": 2, "podaffinity.weight": 2, "tainttoleration.weight": 3,
                             "imagelocality.weight": 1, "podtopologyspread.weight": 2}

    def test_default_sum(self):
        objs = [node("A", cpu="4", memory="8Gi"), node("B", cpu="8", memory="8Gi"),
                pod("used", {"cpu": "1", "memory": "2Gi"}, on="A"), pod("p", {"cpu": "1", "memory": "2Gi"})]
        res = load_text(yaml.safe_dump_all([QUEUE, *objs]))
        ssn = Session(build(MemoryCluster(res.objects).state()), None, [[PluginOption(name="nodeorder")]])
        PLUGINS["nodeorder"]({}).on_session_open(ssn)
        # least 50/81, balanced 100/93, taints 100/100 * 3, image locality 0
        assert scores(ssn, "p") == {"A": 50 + 100 + 300.0, "B": 81 + 93 + 300.0}

    def test_disabled_by_flag(self):
        objs = [node("A"), pod("p", {"cpu": "1"})]
        res = load_text(yaml.safe_dump_all([QUEUE, *objs]))
        ssn = Session(build(MemoryCluster(res.objects).state()), None,
                      [[PluginOption(name="nodeorder", flags={"enableNodeOrder": False})]])
        PLUGINS["nodeorder"]({}).on_session_open(ssn)
        assert scores(ssn, "p") == {"A": 0.0}

    def test_empty_rows(self):
        ssn = session([node("A"), pod("p")], **{"leastrequested.weight": 1})
        assert ssn.node_scores(task(ssn, "p"), np.array([], dtype=np.int64)).shape == (0,)


# ---------------------------------------------------------------- property: vectorised == per-node formulas

CONTAINER = st.tuples(st.one_of(st.none(), st.integers(0, 4000)), st.one_of(st.none(), st.integers(0, 8192)),
                      st.integers(0, 2))
POD_SPEC = st.lists(CONTAINER, min_size=1, max_size=2)
NODE_SPEC = st.tuples(st.integers(0, 16000), st.integers(0, 32768), st.sampled_from([0, 4, 8]),
                      st.lists(POD_SPEC, max_size=3), st.integers(0, 2))


def _containers(spec):
    out = []
    for i, (cpu, mem, gpu) in enumerate(spec):
        req = {}
        if cpu is not None:
            req["cpu"] = f"{cpu}m"
        if mem is not None:
            req["memory"] = f"{mem}Mi"
        if gpu:
            req["nvidia.com/gpu"] = str(gpu)
        out.append({"name": f"c{i}", "resources": {"requests": req}})
    return out


def _sum(spec, nonzero):
    cpu = sum((c if c is not None else (100 if nonzero else 0)) for c, _, _ in spec)
    mem = sum((m * 2**20 if m is not None else (200 * 2**20 if nonzero else 0)) for _, m, _ in spec)
    return cpu, mem, sum(g for _, _, g in spec) * 1000


def ref_scores(nodes, incoming):
    """Per node, kube-scheduler's LeastAllocated + BalancedAllocation + TaintToleration, the Go way."""
    pc, pm, pg = _sum(incoming, True)
    ec, em, eg = _sum(incoming, False)
    least, balanced, soft = [], [], []
    for alloc_c, alloc_m, alloc_g, pods, n_soft in nodes:
        nzc = sum(_sum(p, True)[0] for p in pods) + pc
        nzm = sum(_sum(p, True)[1] for p in pods) + pm
        total = wsum = 0
        for r, c in ((nzc, alloc_c), (nzm, alloc_m * 2**20)):
            if c == 0:
                continue
            total += (0 if r > c else (c - r) * 100 // c) * 50
            wsum += 50
        least.append(total // wsum if wsum else 0)
        fr = []
        for r, c in ((sum(_sum(p, False)[0] for p in pods) + ec, alloc_c),
                     (sum(_sum(p, False)[1] for p in pods) + em, alloc_m * 2**20),
                     (sum(_sum(p, False)[2] for p in pods) + eg, alloc_g * 1000 if eg else 0)):
            if c:
                fr.append(min(r / c, 1.0))
        if len(fr) == 2:
            std = abs((fr[0] - fr[1]) / 2)
        elif len(fr) > 2:
            mean = sum(fr) / len(fr)
            std = math.sqrt(sum((f - mean) * (f - mean) for f in fr) / len(fr))
        else:
            std = 0.0
        balanced.append(0 if (ec == 0 and em == 0 and eg == 0) else int((1 - std) * 100))
        soft.append(n_soft)
    top = max(soft)
    taints = [100] * len(soft) if top == 0 else [100 - 100 * s // top for s in soft]
    return [a + b + 3 * c for a, b, c in zip(least, balanced, taints)]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(NODE_SPEC, min_size=1, max_size=6), POD_SPEC)
def test_default_weights_equal_per_node_formulas(nodes, incoming):
    objs = []
    soft = [{"key": f"s{i}", "value": "x", "effect": "PreferNoSchedule"} for i in range(2)]
    for i, (c, m, g, pods, n_soft) in enumerate(nodes):
        objs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"},
                     "spec": {"taints": soft[:n_soft]},
                     "status": {"allocatable": {"cpu": f"{c}m", "memory": f"{m}Mi", "nvidia.com/gpu": str(g)}}})
        for j, p in enumerate(pods):
            objs.append(pod(f"x{i}-{j}", on=f"n{i}", containers=_containers(p)))
    objs.append(pod("p", containers=_containers(incoming)))
    res = load_text(yaml.safe_dump_all([QUEUE, *objs]))
    ssn = Session(build(MemoryCluster(res.objects).state()), None, [[PluginOption(name="nodeorder")]])
    PLUGINS["nodeorder"]({}).on_session_open(ssn)
    got = scores(ssn, "p")
    assert [got[f"n{i}"] for i in range(len(nodes))] == ref_scores(nodes, incoming)


def test_score_key_kept_until_a_placed_pod_brings_a_matching_term():
    """fastpath.score_keys_kept: a task's score key is asked again after a pod whose preferred anti-affinity matches
    the task is placed (its scores then depend on which nodes are candidates), and after it leaves."""
    avoid_web = {"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}},
                                           "topologyKey": "kubernetes.io/hostname"}}]}}}
    ssn = session([node("n0"), node("n1"), pod("web", {"cpu": "1"}, labels={"app": "web"}),
                   pod("guard", {"cpu": "1"}, labels={"app": "guard"}, spec=avoid_web)],
                  **{"podaffinity.weight": 2, "leastrequested.weight": 1})
    plugin = ssn.plugins["nodeorder"]
    web, guard = task(ssn, "web"), task(ssn, "guard")
    assert plugin.score_key(web) is not None
    ssn.allocate(guard, ssn.nodes["n0"])
    assert plugin.score_key(web) is None
    ssn.unallocate(guard)
    assert plugin.score_key(web) is not None
