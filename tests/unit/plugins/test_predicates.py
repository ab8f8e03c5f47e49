"""predicates plugin: kube-scheduler's filters with their reason texts, the per-class cache, and the
pod (anti-)affinity / topology spread counts kept up to date across placements."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from magma.api.config import PluginOption
from magma.api.load import load_text
from magma.cluster.memory import MemoryCluster
from magma.scheduler.framework import PLUGINS, Session, Statement, TaskStatus, build
from magma.scheduler.plugins import _selectors as sel
from magma.scheduler.plugins import predicates as P
from magma.scheduler.reasons import node_fit_summary

QUEUE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "default"},
         "spec": {"weight": 1}}


def node(name, labels=None, taints=(), unschedulable=False, cpu=32, memory="256Gi", gpu=8):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {"unschedulable": unschedulable, "taints": list(taints)},
            "status": {"allocatable": {"cpu": str(cpu), "memory": memory, "nvidia.com/gpu": str(gpu)}}}


def pod(name, ns="default", labels=None, on=None, spec=None, terminating=False, cpu=1):
    meta = {"name": name, "namespace": ns, "labels": labels or {}}
    if terminating:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    body = {"schedulerName": "volcano", "containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}],
            **(spec or {})}
    if on:
        body["nodeName"] = on
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body,
            "status": {"phase": "Running" if on else "Pending"}}


def session(objects, plugins=(("predicates", {}),)):
    res = load_text(yaml.safe_dump_all([QUEUE, *objects]))
    assert not res.problems, [p.format() for p in res.problems]
    snap = build(MemoryCluster(res.objects).state())
    opts = [PluginOption(name=n, arguments=dict(a)) for n, a in plugins]
    ssn = Session(snap, None, [opts])
    for o in opts:
        p = PLUGINS[o.name](dict(o.arguments))
        ssn.plugins[o.name] = p
        p.on_session_open(ssn)
    return ssn


def task(ssn, name):
    return next(t for t in ssn.tasks_by_uid.values() if t.name == name)


def all_rows(ssn):
    return np.arange(len(ssn.node_list))


def verdict(ssn, t, rows=None):
    """node name -> reason text (None: passes), from ssn.predicate."""
    rows = all_rows(ssn) if rows is None else rows
    r = ssn.predicate(t, rows)
    out = {ssn.node_list[i].name: None for i in rows}
    for text, failing in r.reasons:
        for i in rows[failing]:
            assert out[ssn.node_list[i].name] is None, "a node has one reason"
            out[ssn.node_list[i].name] = text
    assert all((out[ssn.node_list[i].name] is None) == bool(ok) for i, ok in zip(rows, r.mask))
    return out


def counts(ssn, t):
    r = ssn.predicate(t, all_rows(ssn))
    return {text: int(f.sum()) for text, f in r.reasons}


TAINT = {"key": "dedicated", "value": "a100", "effect": "NoSchedule"}


# ---------------------------------------------------------------- static filters

class TestStaticFilters:
    def test_unschedulable_and_its_toleration(self):
        ssn = session([node("n0"), node("n1", unschedulable=True), node("n2"),
                       pod("plain"),
                       pod("tolerant", spec={"tolerations": [{"key": "node.kubernetes.io/unschedulable",
                                                              "operator": "Exists", "effect": "NoSchedule"}]})])
        assert verdict(ssn, task(ssn, "plain")) == {"n0": None, "n1": "node(s) were unschedulable", "n2": None}
        assert counts(ssn, task(ssn, "plain")) == {"node(s) were unschedulable": 1}
        assert all(v is None for v in verdict(ssn, task(ssn, "tolerant")).values())

    def test_node_selector_and_required_affinity_seed_example(self):
        # Seed §8.1: nodeSelector ai-training/gpu-type plus required rdma-capable In [true].
        spec = {"nodeSelector": {"node-role.kubernetes.io/ai-training": "true", "gpu-type": "h100"},
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "rdma-capable", "operator": "In", "values": ["true"]}]}]}}}}
        base = {"node-role.kubernetes.io/ai-training": "true"}
        ssn = session([
            node("h1", {**base, "gpu-type": "h100", "rdma-capable": "true"}),
            node("h2", {**base, "gpu-type": "h100", "rdma-capable": "false"}),
            node("a1", {**base, "gpu-type": "a100", "rdma-capable": "true"}),
            node("x1", {"gpu-type": "h100", "rdma-capable": "true"}),
            pod("train", spec=spec)])
        v = verdict(ssn, task(ssn, "train"))
        assert v["h1"] is None
        assert {k for k, x in v.items() if x} == {"h2", "a1", "x1"}
        assert counts(ssn, task(ssn, "train")) == {"node(s) didn't match Pod's node affinity/selector": 3}

    def test_match_fields_on_node_name(self):
        spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]},
                                  {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}}}}
        ssn = session([node("n0", {"zone": "a"}), node("n1", {"zone": "b"}), node("n2", {"zone": "a"}),
                       pod("p", spec=spec)])
        v = verdict(ssn, task(ssn, "p"))
        assert [k for k, x in v.items() if x is None] == ["n1", "n2"]

    def test_taints_only_no_schedule_and_no_execute_filter(self):
        ssn = session([node("t0", taints=[TAINT]), node("t1", taints=[TAINT]), node("t2", taints=[TAINT]),
                       node("soft", taints=[{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]),
                       node("exec", taints=[{"key": "broken", "effect": "NoExecute"}]),
                       node("free"),
                       pod("plain"),
                       pod("a100", spec={"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "a100"}]}),
                       pod("all", spec={"tolerations": [{"operator": "Exists"}]})])
        assert counts(ssn, task(ssn, "plain")) == {"node(s) had untolerated taint {dedicated: a100}": 3,
                                                   "node(s) had untolerated taint {broken: }": 1}
        v = verdict(ssn, task(ssn, "a100"))
        assert v == {"t0": None, "t1": None, "t2": None, "soft": None,
                     "exec": "node(s) had untolerated taint {broken: }", "free": None}
        assert all(x is None for x in verdict(ssn, task(ssn, "all")).values())

    def test_first_failing_filter_wins_and_summary_text(self):
        ssn = session([node("n0", taints=[TAINT]), node("n1", taints=[TAINT]), node("n2", taints=[TAINT]),
                       node("n3", {"gpu-type": "a100"}, taints=[TAINT], unschedulable=True),
                       node("n4", {"gpu-type": "a100"}),
                       pod("p", spec={"nodeSelector": {"gpu-type": "h100"}})])
        t = task(ssn, "p")
        v = verdict(ssn, t)
        assert v["n3"] == "node(s) were unschedulable"  # not also counted as a taint or selector failure
        assert v["n0"] == "node(s) didn't match Pod's node affinity/selector"
        rows = all_rows(ssn)
        text = node_fit_summary(ssn, t, rows, ssn.predicate(t, rows), ssn.table.future_idle())
        assert text == ("0/5 nodes are available: 1 node(s) were unschedulable, "
                        "4 node(s) didn't match Pod's node affinity/selector")

    def test_taint_summary_reads_like_kube_scheduler(self):
        ssn = session([node("n0", taints=[TAINT]), node("n1", taints=[TAINT]), node("n2", taints=[TAINT]),
                       node("n3", gpu=4), pod("p", spec={"containers": [{"name": "c", "resources": {
                           "requests": {"nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}}}]})])
        t = task(ssn, "p")
        rows = all_rows(ssn)
        text = node_fit_summary(ssn, t, rows, ssn.predicate(t, rows), ssn.table.future_idle())
        assert text == ("0/4 nodes are available: 3 node(s) had untolerated taint {dedicated: a100}, "
                        "1 Insufficient nvidia.com/gpu (need 8, best node has 4 free)")

    def test_kept_summary_follows_the_offered_resources(self, monkeypatch):
        """fastpath.fit_summaries_kept: a summary over the same read-only result and request is made again when what
        the passing nodes are offered differs, and given again (not made) when it is the same."""
        from magma.scheduler import reasons
        from magma.scheduler.framework.session import read_only

        ssn = session([node("n0", gpu=4), node("n1", gpu=2), pod("p", spec={"containers": [{"name": "c", "resources": {
            "requests": {"nvidia.com/gpu": "8"}, "limits": {"nvidia.com/gpu": "8"}}}]})])
        t = task(ssn, "p")
        rows = all_rows(ssn)
        pred = ssn.predicate(t, rows)
        read_only(pred, freeze=True)
        made = []
        make = reasons._node_fit_summary
        monkeypatch.setattr(reasons, "_node_fit_summary", lambda *a: made.append(a) or make(*a))
        avail = ssn.table.future_idle()
        less = avail.copy()
        at = ssn.table.row["n0"], ssn.table.col["nvidia.com/gpu"]
        less[at] = avail[at] * 3 // 4  # 3 of its 4 GPUs
        texts = [node_fit_summary(ssn, t, rows, pred, a) for a in (avail, less, avail, less)]
        head = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu (need 8, best node has"
        assert texts[0] == texts[2] == f"{head} 4 free)"
        assert texts[1] == texts[3] == f"{head} 3 free)"
        assert len(made) == 2

    def test_enable_flags(self):
        objs = [node("n0", {"gpu-type": "a100"}, taints=[TAINT]), node("n1", {"gpu-type": "h100"}),
                pod("p", spec={"nodeSelector": {"gpu-type": "h100"}})]
        ssn = session(objs, [("predicates", {"predicate.NodeAffinityEnable": False})])
        assert verdict(ssn, task(ssn, "p"))["n0"] == "node(s) had untolerated taint {dedicated: a100}"
        ssn = session(objs, [("predicates", {"predicate.NodeAffinityEnable": "false",
                                             "predicate.TaintTolerationEnable": False})])
        assert all(x is None for x in verdict(ssn, task(ssn, "p")).values())
        # NodeUnschedulable has no flag: always on
        ssn = session([node("n0", unschedulable=True), pod("p")],
                      [("predicates", {f"predicate.{f}Enable": False for f in P.FLAGS})])
        assert verdict(ssn, task(ssn, "p")) == {"n0": "node(s) were unschedulable"}

    def test_subset_of_rows(self):
        ssn = session([node(f"n{i}", {"zone": "ab"[i % 2]}) for i in range(6)] +
                      [pod("p", spec={"nodeSelector": {"zone": "a"}})])
        rows = np.array([5, 2, 1])
        r = ssn.predicate(task(ssn, "p"), rows)
        assert r.mask.tolist() == [False, True, False]
        assert [(t, f.tolist()) for t, f in r.reasons] == [
            ("node(s) didn't match Pod's node affinity/selector", [True, False, True])]


class TestEquivalenceCache:
    def test_requirements_evaluated_once_per_distinct_value_and_cached(self, monkeypatch):
        calls = []
        real = sel.node_requirement_matches
        monkeypatch.setattr(sel, "node_requirement_matches", lambda *a: calls.append(a) or real(*a))
        nodes = [node(f"n{i}", {"zone": "abc"[i % 3], "gpu-type": "h100" if i % 2 else "a100"}) for i in range(300)]
        spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}]}}},
            "nodeSelector": {"gpu-type": "h100"}}
        ssn = session(nodes + [pod("p1", labels={"job": "1"}, spec=spec),
                               pod("p2", labels={"job": "2"}, spec=spec)])
        v = verdict(ssn, task(ssn, "p1"))
        assert sum(x is None for x in v.values()) == 100  # odd i with i % 3 != 0
        # zone: 3 values + absent; gpu-type: 2 values + absent -> 7 evaluations, not 600
        assert len(calls) == 7
        verdict(ssn, task(ssn, "p1"))
        verdict(ssn, task(ssn, "p2"))  # another shape with the same node constraints: cache hit
        assert len(calls) == 7
        plugin = ssn.plugins["predicates"]
        assert plugin.static(task(ssn, "p1")) is plugin.static(task(ssn, "p2"))

    def test_taint_classes_evaluated_once_per_class(self, monkeypatch):
        calls = []
        real = sel.first_untolerated
        monkeypatch.setattr(sel, "first_untolerated", lambda *a, **k: calls.append(a) or real(*a, **k))
        nodes = [node(f"n{i}", taints=[TAINT] if i % 2 else []) for i in range(200)]
        ssn = session(nodes + [pod("p")])
        assert counts(ssn, task(ssn, "p")) == {"node(s) had untolerated taint {dedicated: a100}": 100}
        assert len(calls) == 2


# ---------------------------------------------------------------- inter-pod affinity

def anti(selector, key="zone", ns=None):
    term = {"labelSelector": {"matchLabels": selector}, "topologyKey": key}
    if ns is not None:
        term["namespaces"] = ns
    return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}}


def affinity(selector, key="zone"):
    return {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": selector}, "topologyKey": key}]}}}


ZONES = [node("a0", {"zone": "a"}), node("a1", {"zone": "a"}), node("b0", {"zone": "b"}), node("b1", {"zone": "b"}),
         node("c0", {"zone": "c"}), node("nozone")]


class TestInterPodAffinity:
    def test_anti_affinity_against_placed_pods(self):
        ssn = session(ZONES + [pod("ps-0", labels={"app": "ps"}, on="a0"), pod("ps-1", labels={"app": "ps"}, on="c0"),
                               pod("w", spec=anti({"app": "ps"}))])
        v = verdict(ssn, task(ssn, "w"))
        assert v == {"a0": P.POD_ANTI_AFFINITY, "a1": P.POD_ANTI_AFFINITY, "b0": None, "b1": None,
                     "c0": P.POD_ANTI_AFFINITY, "nozone": None}
        assert counts(ssn, task(ssn, "w")) == {"node(s) didn't match pod anti-affinity rules": 3}

    def test_anti_affinity_namespaces(self):
        ssn = session(ZONES + [pod("ps-0", ns="other", labels={"app": "ps"}, on="a0"),
                               pod("w", spec=anti({"app": "ps"})),
                               pod("w2", spec=anti({"app": "ps"}, ns=["other"]))])
        assert all(x is None for x in verdict(ssn, task(ssn, "w")).values())  # default: own namespace
        assert counts(ssn, task(ssn, "w2")) == {P.POD_ANTI_AFFINITY: 2}

    def test_existing_pods_anti_affinity(self):
        ssn = session(ZONES + [pod("guard", labels={"app": "x"}, on="b0", spec=anti({"app": "web"}, "kubernetes.io/hostname")),
                               pod("web", labels={"app": "web"}), pod("db", labels={"app": "db"})])
        v = verdict(ssn, task(ssn, "web"))
        assert [k for k, x in v.items() if x] == ["b0"]
        assert v["b0"] == "node(s) didn't satisfy existing pods anti-affinity rules"
        assert all(x is None for x in verdict(ssn, task(ssn, "db")).values())

    def test_affinity_needs_a_matching_pod_in_the_domain(self):
        ssn = session(ZONES + [pod("db", labels={"app": "db"}, on="b1"),
                               pod("app", spec=affinity({"app": "db"}))])
        v = verdict(ssn, task(ssn, "app"))
        assert [k for k, x in v.items() if x is None] == ["b0", "b1"]
        assert v["nozone"] == "node(s) didn't match pod affinity rules"
        assert counts(ssn, task(ssn, "app")) == {"node(s) didn't match pod affinity rules": 4}

    def test_first_pod_of_a_self_affine_group(self):
        ssn = session(ZONES + [pod("g0", labels={"grp": "g"}, spec=affinity({"grp": "g"})),
                               pod("lonely", labels={"grp": "h"}, spec=affinity({"grp": "g"}))])
        # no pod matches anywhere, g0 matches its own term: any node with the zone label
        v = verdict(ssn, task(ssn, "g0"))
        assert [k for k, x in v.items() if x] == ["nozone"]
        # a pod that does not match its own term gets nothing
        assert counts(ssn, task(ssn, "lonely")) == {P.POD_AFFINITY: 6}
        # once g0 is placed in zone c, the group is pinned there
        g0 = task(ssn, "g0")
        ssn.allocate(g0, ssn.nodes["c0"])
        v = verdict(ssn, task(ssn, "lonely"))
        assert [k for k, x in v.items() if x is None] == ["c0"]

    def test_counts_follow_allocate_discard_and_evict(self):
        ssn = session(ZONES + [pod("ps-0", labels={"app": "ps"}, on="a0"),
                               pod("ps-1", labels={"app": "ps"}),
                               pod("w", spec=anti({"app": "ps"}))])
        w = task(ssn, "w")
        assert counts(ssn, w) == {P.POD_ANTI_AFFINITY: 2}
        stmt = Statement(ssn)
        stmt.allocate(task(ssn, "ps-1"), ssn.nodes["b1"])
        assert counts(ssn, w) == {P.POD_ANTI_AFFINITY: 4}
        stmt.discard()
        assert counts(ssn, w) == {P.POD_ANTI_AFFINITY: 2}
        stmt = Statement(ssn)
        stmt.evict(task(ssn, "ps-0"), "preempt")  # an evicted pod stops counting
        assert counts(ssn, w) == {}
        stmt.discard()
        assert counts(ssn, w) == {P.POD_ANTI_AFFINITY: 2}

    def test_existing_anti_affinity_from_a_pod_allocated_in_session(self):
        ssn = session(ZONES + [pod("guard", labels={"app": "x"}, spec=anti({"app": "web"})),
                               pod("web", labels={"app": "web"})])
        web = task(ssn, "web")
        assert counts(ssn, web) == {}
        ssn.allocate(task(ssn, "guard"), ssn.nodes["a1"])
        assert counts(ssn, web) == {P.EXISTING_ANTI_AFFINITY: 2}

    def test_terminating_pods_count_for_affinity(self):
        ssn = session(ZONES + [pod("ps-0", labels={"app": "ps"}, on="a0", terminating=True),
                               pod("w", spec=anti({"app": "ps"}))])
        assert counts(ssn, task(ssn, "w")) == {P.POD_ANTI_AFFINITY: 2}

    def test_flag_off(self):
        ssn = session(ZONES + [pod("ps-0", labels={"app": "ps"}, on="a0"), pod("w", spec=anti({"app": "ps"}))],
                      [("predicates", {"predicate.PodAffinityEnable": False})])
        assert counts(ssn, task(ssn, "w")) == {}


# ---------------------------------------------------------------- topology spread

def spread(max_skew=1, key="zone", selector=None, min_domains=None, **extra):
    c = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": selector if selector is not None else {"app": "w"}}, **extra}
    if min_domains is not None:
        c["minDomains"] = min_domains
    return {"topologySpreadConstraints": [c]}


class TestTopologySpread:
    def placed(self, per_zone):
        out = []
        for zone, n in per_zone.items():
            for i in range(n):
                out.append(pod(f"w-{zone}{i}", labels={"app": "w"}, on=f"{zone}0"))
        return out

    def test_skew_against_the_global_minimum(self):
        ssn = session(ZONES + self.placed({"a": 2, "c": 1}) + [pod("new", labels={"app": "w"}, spec=spread())])
        v = verdict(ssn, task(ssn, "new"))
        # counts a=2, b=0, c=1; min 0; skew = count + 1
        assert v == {"a0": P.SPREAD, "a1": P.SPREAD, "b0": None, "b1": None, "c0": P.SPREAD,
                     "nozone": P.SPREAD_LABEL}
        assert counts(ssn, task(ssn, "new")) == {
            "node(s) didn't match pod topology spread constraints": 3,
            "node(s) didn't match pod topology spread constraints (missing required label)": 1}

    def test_max_skew_and_self_match(self):
        ssn = session(ZONES + self.placed({"a": 2, "c": 1}) + [
            pod("new", labels={"app": "w"}, spec=spread(max_skew=2)),
            pod("other", labels={"app": "x"}, spec=spread(max_skew=1))])
        assert [k for k, x in verdict(ssn, task(ssn, "new")).items() if x] == ["a0", "a1", "nozone"]
        # not matching itself: skew = count - 0 -> a (2) fails, c (1) passes
        assert [k for k, x in verdict(ssn, task(ssn, "other")).items() if x] == ["a0", "a1", "nozone"]

    def test_counts_follow_allocations(self):
        ssn = session(ZONES + [pod(f"n{i}", labels={"app": "w"}, spec=spread()) for i in range(4)])
        ts = [task(ssn, f"n{i}") for i in range(4)]
        ssn.allocate(ts[0], ssn.nodes["a0"])
        assert [k for k, x in verdict(ssn, ts[1]).items() if x is None] == ["b0", "b1", "c0"]
        ssn.allocate(ts[1], ssn.nodes["b1"])
        ssn.allocate(ts[2], ssn.nodes["c0"])
        assert [k for k, x in verdict(ssn, ts[3]).items() if x is None] == ["a0", "a1", "b0", "b1", "c0"]

    def test_min_domains(self):
        ssn = session(ZONES + self.placed({"a": 1, "b": 1, "c": 1}) + [
            pod("new", labels={"app": "w"}, spec=spread(min_domains=5)),
            pod("ok", labels={"app": "w"}, spec=spread(min_domains=3))])
        # 3 domains < 5: global minimum treated as 0, so every zone has skew 2
        assert counts(ssn, task(ssn, "new"))[P.SPREAD] == 5
        assert counts(ssn, task(ssn, "ok")).get(P.SPREAD, 0) == 0

    def test_node_affinity_policy_limits_the_domains(self):
        # Only zones a and c match the nodeSelector: b (empty) is not a domain, so the minimum is 1.
        objs = [node("a0", {"zone": "a", "pool": "x"}), node("b0", {"zone": "b"}), node("c0", {"zone": "c", "pool": "x"}),
                pod("w0", labels={"app": "w"}, on="a0"), pod("w1", labels={"app": "w"}, on="c0"),
                pod("new", labels={"app": "w"}, spec={"nodeSelector": {"pool": "x"}, **spread()}),
                pod("ignore", labels={"app": "w"},
                    spec={"nodeSelector": {"pool": "x"}, **spread(nodeAffinityPolicy="Ignore")})]
        ssn = session(objs)
        assert [k for k, x in verdict(ssn, task(ssn, "new")).items() if x is None] == ["a0", "c0"]
        # with the policy Ignore, b counts (0 pods) and a, c reach skew 2
        v = verdict(ssn, task(ssn, "ignore"))
        assert v["a0"] == P.SPREAD and v["c0"] == P.SPREAD
        assert v["b0"] == "node(s) didn't match Pod's node affinity/selector"

    def test_namespace_terminating_and_empty_selector(self):
        ssn = session(ZONES + [
            pod("x0", ns="other", labels={"app": "w"}, on="a0"),
            pod("x1", labels={"app": "w"}, on="b0", terminating=True),
            pod("new", labels={"app": "w"}, spec=spread()),
            pod("empty", labels={"app": "w"}, spec=spread(selector={}))])
        # other-namespace and terminating pods do not count
        assert counts(ssn, task(ssn, "new")) == {P.SPREAD_LABEL: 1}
        ssn.allocate(task(ssn, "new"), ssn.nodes["a1"])
        # an empty selector counts nothing (kube-scheduler skips Empty selectors)
        assert counts(ssn, task(ssn, "empty")) == {P.SPREAD_LABEL: 1}

    def test_schedule_anyway_does_not_filter(self):
        c = spread()
        c["topologySpreadConstraints"][0]["whenUnsatisfiable"] = "ScheduleAnyway"
        ssn = session(ZONES + self.placed({"a": 5}) + [pod("new", labels={"app": "w"}, spec=c)])
        assert counts(ssn, task(ssn, "new")) == {}


# ---------------------------------------------------------------- property: cache == per-node reference

ZONE = st.sampled_from(["a", "b", "c", None])
GPU = st.sampled_from(["h100", "a100", None])
SIZE = st.sampled_from(["1", "4", "16", "x", None])
TAINTS = [{"key": "dedicated", "value": "a100", "effect": "NoSchedule"},
          {"key": "spot", "value": "yes", "effect": "PreferNoSchedule"},
          {"key": "broken", "effect": "NoExecute"},
          {"key": "dedicated", "value": "h100", "effect": "NoSchedule"}]
NODES = st.lists(st.tuples(ZONE, GPU, SIZE, st.sets(st.sampled_from(range(len(TAINTS))), max_size=2), st.booleans()),
                 min_size=1, max_size=12)

REQ = st.one_of(
    st.tuples(st.just("zone"), st.sampled_from(["In", "NotIn"]), st.lists(st.sampled_from("abc"), min_size=1, max_size=2)),
    st.tuples(st.sampled_from(["zone", "gpu", "size"]), st.sampled_from(["Exists", "DoesNotExist"]), st.just([])),
    st.tuples(st.just("size"), st.sampled_from(["Gt", "Lt"]), st.sampled_from([["3"], ["10"], ["x"]])),
    st.tuples(st.just("gpu"), st.just("In"), st.just([])),  # invalid: fails its term
)
FIELD = st.tuples(st.just("metadata.name"), st.sampled_from(["In", "NotIn"]),
                  st.sampled_from([["n0"], ["n3"], ["n1", "n2"]]))
TERM = st.tuples(st.lists(REQ, max_size=2), st.lists(FIELD, max_size=1))
TOLERATION = st.sampled_from([
    {"key": "dedicated", "operator": "Equal", "value": "a100"},
    {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "broken", "operator": "Exists"},
    {"operator": "Exists"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists"},
    {"key": "spot", "value": "yes", "effect": "PreferNoSchedule"},
])
POD = st.tuples(st.dictionaries(st.sampled_from(["zone", "gpu"]), st.sampled_from(["a", "b", "h100"]), max_size=1),
                st.one_of(st.none(), st.lists(TERM, max_size=2)),
                st.lists(TOLERATION, max_size=2))


def _req(k, op, v):
    return {"key": k, "operator": op, "values": v}


def build_cluster(nodes, pods):
    objs = []
    for i, (zone, gpu, size, taints, unsched) in enumerate(nodes):
        labels = {k: v for k, v in (("zone", zone), ("gpu", gpu), ("size", size)) if v is not None}
        objs.append(node(f"n{i}", labels, [TAINTS[t] for t in sorted(taints)], unsched))
    for j, (selector, terms, tols) in enumerate(pods):
        spec = {"nodeSelector": selector, "tolerations": tols}
        if terms is not None:
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [_req(*r) for r in e], "matchFields": [_req(*f) for f in fl]}
                                      for e, fl in terms]}}}
        objs.append(pod(f"p{j}", labels={"j": str(j % 2)}, spec=spec))
    return objs


def reference_static(nd, p):
    """Per node, kube-scheduler's filters in order, straight from the pure functions."""
    tols = p.spec.tolerations
    if nd.unschedulable and not sel.tolerates_unschedulable(tols):
        return P.UNSCHEDULABLE
    if not sel.required_node_affinity_matches(p.spec, nd.labels, nd.name):
        return P.NODE_AFFINITY
    t = sel.first_untolerated(nd.taints, tols)
    return sel.taint_text(t) if t is not None else None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(NODES, st.lists(POD, min_size=1, max_size=5))
def test_static_cache_equals_per_node_reference(nodes, pods):
    ssn = session(build_cluster(nodes, pods))
    for j in range(len(pods)):
        t = task(ssn, f"p{j}")
        got = verdict(ssn, t)
        want = {nd.name: reference_static(nd, t.pod) for nd in ssn.node_list}
        assert got == want
        # and on a random-ish subset of rows, in another order
        rows = np.array(list(reversed(range(0, len(ssn.node_list), 2))))
        sub = verdict(ssn, t, rows)
        assert sub == {ssn.node_list[i].name: want[ssn.node_list[i].name] for i in rows}
        for text in want.values():
            event(f"reason: {text}")


# ---------------------------------------------------------------- property: dynamic filters == reference

APPS = ["ps", "worker", "db"]
TERM_SPEC = st.tuples(st.sampled_from(APPS), st.sampled_from(["zone", "kubernetes.io/hostname"]),
                      st.sampled_from([None, ["n1"], ["n1", "n2"]]))
NO_TERMS = st.one_of(st.just([]), st.just([]), st.lists(TERM_SPEC, max_size=2))
NAMESPACE = st.sampled_from(["n1", "n1", "n1", "n2"])
INCOMING = st.tuples(st.sampled_from(APPS), NAMESPACE, NO_TERMS, NO_TERMS,
                     st.one_of(st.none(), st.tuples(st.integers(1, 2), st.sampled_from(["ps", "ps", "worker"]),
                                                    st.sampled_from(["zone", "kubernetes.io/hostname"]),
                                                    st.one_of(st.none(), st.integers(1, 5)))))
PLACED = st.tuples(st.sampled_from(["ps", "ps", "worker", "db"]), NAMESPACE, st.integers(0, 20),
                   st.sampled_from([False, False, False, True]),
                   st.lists(TERM_SPEC, max_size=1))


def _terms(specs):
    out = []
    for app, key, nss in specs:
        t = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
        if nss is not None:
            t["namespaces"] = nss
        out.append(t)
    return out


def reference_dynamic(ssn, t, counted):
    """Per node, InterPodAffinity then PodTopologySpread, scanning every counted pod."""
    pt_labels, ns = dict(t.pod.labels), t.pod.namespace
    aff = t.pod.spec.affinity
    req_aff = [sel.affinity_term(x, ns) for x in (aff.pod_affinity.required_during_scheduling_ignored_during_execution
                                                 if aff and aff.pod_affinity else [])]
    req_anti = [sel.affinity_term(x, ns) for x in (aff.pod_anti_affinity.required_during_scheduling_ignored_during_execution
                                                  if aff and aff.pod_anti_affinity else [])]
    pods = [(p, ssn.nodes[p_node]) for p, p_node in counted]

    def same(nd, other, key):
        return key in nd.labels and key in other.labels and nd.labels[key] == other.labels[key]

    out = {}
    any_match = any(sel.matches_all_terms(req_aff, p.labels, p.namespace) and
                    any(term.topology_key in pn.labels for term in req_aff) for p, pn in pods)
    for nd in ssn.node_list:
        reason = None
        if req_aff:
            ok = all(term.topology_key in nd.labels and any(
                sel.matches_all_terms(req_aff, p.labels, p.namespace) and same(nd, pn, term.topology_key)
                for p, pn in pods) for term in req_aff)
            if not ok and not any_match and sel.matches_all_terms(req_aff, pt_labels, ns) and \
                    all(term.topology_key in nd.labels for term in req_aff):
                ok = True
            if not ok:
                reason = P.POD_AFFINITY
        if reason is None and any(term.matches(p.labels, p.namespace) and same(nd, pn, term.topology_key)
                                  for term in req_anti for p, pn in pods):
            reason = P.POD_ANTI_AFFINITY
        if reason is None:
            for p, pn in pods:
                pa = p.spec.affinity
                terms = pa.pod_anti_affinity.required_during_scheduling_ignored_during_execution \
                    if pa and pa.pod_anti_affinity else []
                if any(sel.affinity_term(x, p.namespace).matches(pt_labels, ns) and same(nd, pn, x.topology_key)
                       for x in terms):
                    reason = P.EXISTING_ANTI_AFFINITY
                    break
        if reason is None:
            for c in t.pod.spec.topology_spread_constraints:
                key = c.topology_key
                if key not in nd.labels:
                    reason = P.SPREAD_LABEL
                    break
                s = sel.label_selector(c.label_selector)
                domains: dict[str, int] = {}
                for other in ssn.node_list:
                    if key in other.labels and sel.required_node_affinity_matches(t.pod.spec, other.labels, other.name):
                        domains.setdefault(other.labels[key], 0)
                for p, pn in pods:
                    if (p.namespace == ns and p.metadata.deletion_timestamp is None and s and
                            sel.selector_matches(s, p.labels) and pn.labels.get(key) in domains and
                            sel.required_node_affinity_matches(t.pod.spec, pn.labels, pn.name)):
                        domains[pn.labels[key]] += 1
                low = min(domains.values()) if domains else 0
                if c.min_domains is not None and len(domains) < c.min_domains:
                    low = 0
                skew = domains.get(nd.labels[key], 0) + (1 if sel.selector_matches(s, pt_labels) else 0) - low
                if skew > c.max_skew:
                    reason = P.SPREAD
                    break
        out[nd.name] = reason
    return out


ZONE_LIST = st.lists(st.sampled_from(["a", "b", "c", None]), min_size=2, max_size=8)
MOVES = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 7), st.booleans()), max_size=6)
SPREAD_ONLY = st.tuples(st.sampled_from(APPS), NAMESPACE, st.just([]), st.just([]),
                        st.tuples(st.integers(1, 2), st.sampled_from(["ps", "ps", "worker"]),
                                  st.sampled_from(["zone", "kubernetes.io/hostname"]),
                                  st.one_of(st.none(), st.integers(1, 5))))
PLACED_PLAIN = st.tuples(st.sampled_from(["ps", "ps", "worker"]), NAMESPACE, st.integers(0, 20),
                         st.sampled_from([False, False, False, True]), st.just([]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ZONE_LIST, st.lists(PLACED, max_size=8), st.lists(INCOMING, min_size=1, max_size=4), MOVES)
def test_dynamic_filters_equal_reference(zones, placed, incoming, moves):
    run_dynamic(zones, placed, incoming, moves)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ZONE_LIST, st.lists(PLACED_PLAIN, max_size=10), st.lists(SPREAD_ONLY, min_size=1, max_size=4), MOVES)
def test_spread_filter_equals_reference(zones, placed, incoming, moves):
    run_dynamic(zones, placed, incoming, moves)


def run_dynamic(zones, placed, incoming, moves):
    nodes = [node(f"m{i}", {"zone": z} if z else {}) for i, z in enumerate(zones)]
    objs = list(nodes)
    for k, (app, ns, where, term, anti_specs) in enumerate(placed):
        spec = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": _terms(anti_specs)}}} \
            if anti_specs else {}
        objs.append(pod(f"x{k}", ns=ns, labels={"app": app}, on=f"m{where % len(zones)}", spec=spec, terminating=term))
    for k, (app, ns, aff_specs, anti_specs, spr) in enumerate(incoming):
        spec = {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": _terms(aff_specs)},
                             "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": _terms(anti_specs)}}}
        if spr is not None:
            skew, sapp, key, md = spr
            c = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchLabels": {"app": sapp}}}
            if md is not None:
                c["minDomains"] = md
            spec["topologySpreadConstraints"] = [c]
        objs.append(pod(f"in{k}", ns=ns, labels={"app": app}, spec=spec))
    ssn = session(objs)
    counted = [(t.pod, t.node) for t in ssn.tasks_by_uid.values() if t.node is not None]
    incoming_tasks = [task(ssn, f"in{k}") for k in range(len(incoming))]

    def check():
        for t in incoming_tasks:
            if t.node is None:
                got = verdict(ssn, t)
                assert got == reference_dynamic(ssn, t, counted)
                for text in got.values():
                    event(f"reason: {text}")

    check()
    stmt, in_stmt = Statement(ssn), []
    for which, where, discard in moves:
        t = incoming_tasks[which % len(incoming_tasks)]
        if t.node is None:
            nd = ssn.node_list[where % len(ssn.node_list)]
            stmt.allocate(t, nd)
            in_stmt.append(t)
            counted.append((t.pod, nd.name))
            check()
            if discard:
                stmt.discard()
                counted = [c for c in counted if all(c[0] is not x.pod for x in in_stmt)]
                stmt, in_stmt = Statement(ssn), []
                check()


# ------------------------------------------------------ the scan of placed pods (fastpath.placed_rows_kept)

def _placed_view(idx) -> tuple:
    """What the scan stands for: the carried terms (in order, with counts) and NonZeroRequested per node."""
    carried = {kind: [(c.term.topology_key, c.weight, c.total, c.counts.tolist()) for c in idx.carried(kind)]
               for kind in ("anti", "pref_aff", "pref_anti")}
    return carried, idx.nonzero_requested().tolist()


def _placed_story(view_first: bool) -> list:
    """Placements, an eviction and an undo, with the index asked before or only after the first of them, and
    the facts classes built at the end (a selector's counts)."""
    from magma.scheduler.plugins._nodeindex import NodeIndex

    no_memory = {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    ssn = session(ZONES + [pod("guard", labels={"app": "x"}, on="b0", spec=anti({"app": "web"})),
                           pod("idle", labels={"app": "y"}, on="a0", spec=no_memory),
                           pod("w", labels={"app": "w"}, spec=anti({"app": "db"}, "kubernetes.io/hostname")),
                           pod("plain", labels={"app": "p"}, spec=no_memory)])
    idx = NodeIndex.of(ssn)
    views = [_placed_view(idx)] if view_first else []
    ssn.evict(task(ssn, "guard"))
    ssn.allocate(task(ssn, "w"), ssn.nodes["a1"])
    views.append(_placed_view(idx))
    ssn.allocate(task(ssn, "plain"), ssn.nodes["a1"])
    ssn.unallocate(task(ssn, "w"))
    ssn.unevict(task(ssn, "guard"), TaskStatus.RUNNING)  # removed before the scan, counted again
    views.append(_placed_view(idx))
    ssn.evict(task(ssn, "guard"))
    idx.pod_counts(("test",), lambda fc: True)  # builds the facts classes
    ssn.allocate(task(ssn, "w"), ssn.nodes["c0"])
    ssn.unallocate(task(ssn, "plain"))
    views.append(_placed_view(idx))
    return views


@pytest.mark.parametrize("view_first", [True, False])
def test_scan_of_placed_pods_counts_what_the_build_counts(view_first):
    from magma.scheduler.framework import fastpath

    with fastpath.disabled("placed_rows_kept"):
        built = _placed_story(view_first)
    scanned = _placed_story(view_first)
    assert scanned == built
    last = scanned[-1]
    assert [(c[0], c[2]) for c in last[0]["anti"]] == [("kubernetes.io/hostname", 1)]  # the guard's is evicted
    assert [(c[0], c[2]) for c in scanned[0][0]["anti"]] == ([("zone", 1)] if view_first else
                                                              [("kubernetes.io/hostname", 1)])
    assert last[1][0] == [1000, 200 * 1024 * 1024]  # "idle" states no memory: NonZeroRequested counts 200Mi


def test_placed_rows_are_kept_while_a_node_holds_the_same_tasks():
    from magma.scheduler.plugins._nodeindex import NodeIndex, _PlacedRows

    ssn = session(ZONES + [pod("a", on="a0"), pod("b", on="b0")])
    idx = NodeIndex.of(ssn)
    idx.carried("anti")
    kept = _PlacedRows.of(ssn.node_list, ssn.table)
    before = list(kept.rows)
    again = NodeIndex(ssn)  # a later session over the same node list and task objects
    again.carried("anti")
    assert _PlacedRows.of(ssn.node_list, ssn.table) is kept
    assert all(x is y for x, y in zip(kept.rows, before))
    moved = ssn.nodes["a0"].tasks.pop(next(iter(ssn.nodes["a0"].tasks)))
    ssn.nodes["c0"].tasks[moved.uid] = moved
    NodeIndex(ssn).carried("anti")
    a0, c0 = ssn.nodes["a0"].index, ssn.nodes["c0"].index
    assert kept.rows[a0] is not before[a0] and kept.rows[c0] is not before[c0]
    assert kept.rows[a0].uids == frozenset() and kept.rows[c0].uids == {moved.uid}
    b0 = ssn.nodes["b0"].index
    assert kept.rows[b0] is before[b0]


def test_verdicts_kept_with_the_node_facts_until_placed_pods_matter():
    """fastpath.predicates_kept: a later session over the same nodes gets the kept verdict (the same object), equal
    to one computed afresh; once a placed pod's anti-affinity matters to the task, the verdict is computed again."""
    from magma.scheduler.framework import fastpath

    res = load_text(yaml.safe_dump_all([QUEUE, *ZONES, pod("w", labels={"app": "web"}),
                                        pod("guard", labels={"app": "x"}, spec=anti({"app": "web"}, "zone"))]))
    snap = build(MemoryCluster(res.objects).state())
    snap.node_list = sorted(snap.nodes.values(), key=lambda n: n.index)  # one node list, as a kept snapshot has

    def open_on(snapshot):
        opts = [PluginOption(name="predicates", arguments={})]
        ssn = Session(snapshot, None, [opts])
        p = PLUGINS["predicates"]({})
        ssn.plugins["predicates"] = p
        p.on_session_open(ssn)
        return ssn

    first, second = open_on(snap), open_on(snap)
    rows = all_rows(first)
    kept = first.plugins["predicates"].predicate(task(first, "w"), rows)
    again = second.plugins["predicates"].predicate(task(second, "w"), all_rows(second))
    assert again is kept and not kept.mask.flags.writeable
    with fastpath.disabled("predicates_kept"):
        fresh = open_on(snap).plugins["predicates"].predicate(task(first, "w"), rows)
    assert np.array_equal(fresh.mask, kept.mask) and [t for t, _ in fresh.reasons] == [t for t, _ in kept.reasons]
    second.allocate(task(second, "guard"), second.nodes["a0"])  # its anti-affinity now keeps web out of zone a
    after = second.plugins["predicates"].predicate(task(second, "w"), all_rows(second))
    assert after is not kept
    assert [n.name for n, ok in zip(second.node_list, after.mask) if not ok] == ["a0", "a1"]


# ------------------------------------------------------ kept across sessions (pod_terms_kept, predicate_sums_kept)

def test_pod_terms_are_kept_across_sessions_by_shape():
    """fastpath.pod_terms_kept: a later session's index gives the terms parsed for a pod of that shape before, equal
    to a fresh parse; off, each session parses again."""
    from magma.scheduler.framework import fastpath
    from magma.scheduler.plugins._nodeindex import NodeIndex, parse_pod_terms

    objects = ZONES + [pod("w", labels={"app": "w"}, spec=anti({"app": "db"}))]
    first, second = session(objects), session(objects)
    a, b = task(first, "w"), task(second, "w")
    assert a is not b and a.shape == b.shape
    got = NodeIndex.of(first).terms(a)
    assert NodeIndex.of(second).terms(b) is got
    assert got == parse_pod_terms(b)
    with fastpath.disabled("pod_terms_kept"):
        assert NodeIndex.of(session(objects)).terms(b) is not got


def test_predicate_combination_is_kept_for_the_same_read_only_results():
    """fastpath.predicate_sums_kept: the same read-only plugin verdict gives the same (read-only) combination, equal
    to the one made afresh; a writable verdict is combined anew every time."""
    from magma.scheduler.framework import fastpath

    ssn = session(ZONES + [pod("p", spec={"nodeSelector": {"zone": "a"}})])
    t, rows = task(ssn, "p"), all_rows(ssn)
    first = ssn.predicate(t, rows)
    assert ssn.predicate(t, rows) is first and not first.mask.flags.writeable
    with fastpath.disabled("predicate_sums_kept"):
        fresh = ssn.predicate(t, rows)
    assert fresh is not first
    assert fresh.mask.tolist() == first.mask.tolist() == [True, True, False, False, False, False]
    assert [(r, f.tolist()) for r, f in fresh.reasons] == [(r, f.tolist()) for r, f in first.reasons]
    with fastpath.disabled("predicates_kept"):  # the plugin's verdict is made afresh (writable): no keeping
        assert ssn.predicate(t, rows) is not ssn.predicate(t, rows)
