"""Kubernetes matching semantics of the pure functions in plugins/_selectors.py.

Cases follow kube-scheduler / apimachinery behaviour (labels.Requirement, nodeaffinity's lazy-error node
selector, Toleration.ToleratesTaint, AffinityTerm.Matches).
"""

from __future__ import annotations

import pytest

from magma.api.objects import LabelSelector, NodeSelectorTerm, PodAffinityTerm, Taint, Toleration
from magma.scheduler.plugins import _selectors as s


def sel(match_labels=None, exprs=()):
    return s.label_selector({"matchLabels": match_labels or {},
                             "matchExpressions": [{"key": k, "operator": op, "values": list(v)} for k, op, v in exprs]})


# ---------------------------------------------------------------- label selectors

class TestLabelSelector:
    def test_nil_matches_nothing_empty_matches_everything(self):
        assert s.label_selector(None) is None
        assert not s.selector_matches(None, {})
        assert not s.selector_matches(None, {"a": "1"})
        empty = s.label_selector(LabelSelector())
        assert empty == s.EVERYTHING
        assert s.selector_matches(empty, {})
        assert s.selector_matches(empty, {"a": "1"})

    def test_match_labels_needs_key_and_exact_value(self):
        x = sel({"app": "web"})
        assert s.selector_matches(x, {"app": "web", "x": "y"})
        assert not s.selector_matches(x, {"app": "web2"})
        assert not s.selector_matches(x, {})

    @pytest.mark.parametrize("op,values,labels,want", [
        ("In", ["a", "b"], {"k": "a"}, True),
        ("In", ["a", "b"], {"k": "c"}, False),
        ("In", ["a"], {}, False),  # In needs the key
        ("NotIn", ["a"], {"k": "b"}, True),
        ("NotIn", ["a"], {"k": "a"}, False),
        ("NotIn", ["a"], {}, True),  # NotIn matches an absent key
        ("Exists", [], {"k": ""}, True),
        ("Exists", [], {}, False),
        ("DoesNotExist", [], {}, True),
        ("DoesNotExist", [], {"k": "x"}, False),
    ])
    def test_expressions(self, op, values, labels, want):
        assert s.selector_matches(sel(exprs=[("k", op, values)]), labels) is want

    @pytest.mark.parametrize("op,values", [("In", []), ("NotIn", []), ("Exists", ["a"]),
                                           ("DoesNotExist", ["a"]), ("Gt", ["1"])])
    def test_invalid_requirement_makes_selector_match_nothing(self, op, values):
        assert s.label_selector({"matchExpressions": [{"key": "k", "operator": op, "values": values}]}) is None

    def test_labels_and_expressions_are_anded(self):
        x = sel({"app": "web"}, [("tier", "In", ["fe"]), ("canary", "DoesNotExist", [])])
        assert s.selector_matches(x, {"app": "web", "tier": "fe"})
        assert not s.selector_matches(x, {"app": "web", "tier": "fe", "canary": "1"})
        assert not s.selector_matches(x, {"app": "db", "tier": "fe"})

    def test_normalised_selectors_are_equal_and_hashable(self):
        a = sel({"b": "2", "a": "1"}, [("k", "In", ["y", "x", "x"])])
        b = sel({"a": "1", "b": "2"}, [("k", "In", ["x", "y"])])
        assert a == b and hash(a) == hash(b)

    def test_with_match_labels_ands_and_keeps_nil(self):
        x = s.with_match_labels(sel({"app": "web"}), {"rev": "7"})
        assert s.selector_matches(x, {"app": "web", "rev": "7"})
        assert not s.selector_matches(x, {"app": "web", "rev": "8"})
        assert s.with_match_labels(None, {"rev": "7"}) is None
        # conflicting values for one key can match nothing
        y = s.with_match_labels(sel({"app": "web"}), {"app": "db"})
        assert not s.selector_matches(y, {"app": "web"}) and not s.selector_matches(y, {"app": "db"})


# ---------------------------------------------------------------- node selectors

def term(exprs=(), fields=()):
    return NodeSelectorTerm.model_validate({
        "matchExpressions": [{"key": k, "operator": op, "values": list(v)} for k, op, v in exprs],
        "matchFields": [{"key": k, "operator": op, "values": list(v)} for k, op, v in fields],
    })


class TestNodeSelector:
    @pytest.mark.parametrize("op,values,value,want", [
        ("In", ["a"], "a", True), ("In", ["a"], "b", False), ("In", ["a"], None, False),
        ("NotIn", ["a"], "b", True), ("NotIn", ["a"], "a", False), ("NotIn", ["a"], None, True),
        ("Exists", [], "x", True), ("Exists", [], None, False),
        ("DoesNotExist", [], None, True), ("DoesNotExist", [], "", False),
        ("Gt", ["5"], "6", True), ("Gt", ["5"], "5", False), ("Gt", ["5"], "-7", False),
        ("Lt", ["5"], "4", True), ("Lt", ["5"], "5", False), ("Lt", ["-3"], "-4", True),
        ("Gt", ["5"], None, False),  # absent label never compares
        ("Gt", ["5"], "6x", False), ("Gt", ["5"], " 6", False), ("Gt", ["5"], "6.0", False),
        ("Lt", ["5"], "+4", True),  # Go's ParseInt takes a sign
        ("Gt", ["5"], "99999999999999999999", False),  # out of int64 range
    ])
    def test_requirement(self, op, values, value, want):
        assert s.node_requirement_matches(op, values, value) is want

    @pytest.mark.parametrize("op,values", [("In", []), ("NotIn", []), ("Exists", ["x"]), ("DoesNotExist", ["x"]),
                                           ("Gt", []), ("Gt", ["1", "2"]), ("Gt", ["x"]), ("Lt", ["1.5"]),
                                           ("Bogus", ["a"])])
    def test_invalid_requirement_never_matches(self, op, values):
        assert not s.node_requirement_valid(op, values)
        for v in (None, "", "1", "x", "a"):
            assert s.node_requirement_matches(op, values, v) is False

    def test_term_ands_expressions_and_fields(self):
        t = term([("zone", "In", ["a", "b"]), ("gpu", "Exists", [])], [("metadata.name", "In", ["n1"])])
        assert s.node_selector_term_matches(t, {"zone": "a", "gpu": "h100"}, "n1")
        assert not s.node_selector_term_matches(t, {"zone": "a", "gpu": "h100"}, "n2")
        assert not s.node_selector_term_matches(t, {"zone": "c", "gpu": "h100"}, "n1")
        assert not s.node_selector_term_matches(t, {"zone": "a"}, "n1")

    def test_empty_term_matches_nothing(self):
        assert not s.node_selector_term_matches(term(), {"a": "b"}, "n1")
        assert not s.node_selector_matches([term()], {}, "n1")

    def test_terms_are_ored_and_no_terms_match_nothing(self):
        t1, t2 = term([("zone", "In", ["a"])]), term([("zone", "In", ["b"])])
        assert s.node_selector_matches([t1, t2], {"zone": "b"}, "n")
        assert not s.node_selector_matches([t1, t2], {"zone": "c"}, "n")
        assert not s.node_selector_matches([], {"zone": "a"}, "n")
        # an empty term next to a real one does not widen the match
        assert not s.node_selector_matches([term(), t1], {"zone": "c"}, "n")

    def test_invalid_requirement_fails_only_its_term(self):
        bad = term([("zone", "In", [])])
        good = term([("zone", "Exists", [])])
        assert not s.node_selector_matches([bad], {"zone": "a"}, "n")
        assert s.node_selector_matches([bad, good], {"zone": "a"}, "n")

    @pytest.mark.parametrize("key,op,values,name,want", [
        ("metadata.name", "In", ["n1"], "n1", True),
        ("metadata.name", "In", ["n1"], "n2", False),
        ("metadata.name", "NotIn", ["n1"], "n2", True),
        ("metadata.name", "NotIn", ["n1"], "n1", False),
        ("metadata.name", "In", ["n1", "n2"], "n1", False),  # exactly one value
        ("metadata.name", "Exists", [], "n1", False),  # only In / NotIn
        ("metadata.uid", "NotIn", ["x"], "n1", False),  # only metadata.name
    ])
    def test_match_fields(self, key, op, values, name, want):
        assert s.field_requirement_matches(key, op, values, name) is want
        assert s.node_selector_term_matches(term(fields=[(key, op, values)]), {}, name) is want

    def test_node_selector_map(self):
        assert s.node_selector_map_matches({}, {})
        assert s.node_selector_map_matches({"gpu": "h100"}, {"gpu": "h100", "x": "1"})
        assert not s.node_selector_map_matches({"gpu": "h100"}, {"gpu": "a100"})
        assert not s.node_selector_map_matches({"gpu": ""}, {})  # the key must exist, even for ""
        assert s.node_selector_map_matches({"gpu": ""}, {"gpu": ""})

    def test_required_node_affinity_combines_selector_and_terms(self):
        from magma.api.objects import PodSpec

        spec = PodSpec.model_validate({
            "nodeSelector": {"pool": "gpu"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "rdma", "operator": "In", "values": ["true"]}]}]}}},
        })
        assert s.required_node_affinity_matches(spec, {"pool": "gpu", "rdma": "true"}, "n")
        assert not s.required_node_affinity_matches(spec, {"pool": "gpu"}, "n")
        assert not s.required_node_affinity_matches(spec, {"rdma": "true"}, "n")
        empty_terms = PodSpec.model_validate({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}})
        assert not s.required_node_affinity_matches(empty_terms, {"a": "b"}, "n")
        assert s.required_node_affinity_matches(PodSpec(), {}, "n")

    def test_preferred_score_sums_matching_weights(self):
        from magma.api.objects import PodSpec

        spec = PodSpec.model_validate({"affinity": {"nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
                {"weight": 5, "preference": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}},
                {"weight": 7, "preference": {}},
            ]}}})
        assert s.preferred_node_affinity_score(spec, {"zone": "a", "gpu": "x"}, "n") == 15
        assert s.preferred_node_affinity_score(spec, {"gpu": "x"}, "n") == 5
        assert s.preferred_node_affinity_score(spec, {}, "n") == 0


# ---------------------------------------------------------------- taints and tolerations

def tol(**kw):
    return Toleration.model_validate(kw)


def taint(key, value=None, effect="NoSchedule"):
    return Taint(key=key, value=value, effect=effect)


class TestTolerations:
    @pytest.mark.parametrize("t,taint_,want", [
        (tol(key="k", operator="Equal", value="v", effect="NoSchedule"), taint("k", "v"), True),
        (tol(key="k", operator="Equal", value="v"), taint("k", "v", "NoExecute"), True),  # empty effect: all
        (tol(key="k", operator="Equal", value="v", effect="NoExecute"), taint("k", "v"), False),
        (tol(key="k", value="v"), taint("k", "v"), True),  # empty operator means Equal
        (tol(key="k", value="w"), taint("k", "v"), False),
        (tol(key="k"), taint("k"), True),  # Equal with both values empty
        (tol(key="k"), taint("k", "v"), False),
        (tol(key="k", operator="Exists"), taint("k", "anything"), True),
        (tol(key="j", operator="Exists"), taint("k"), False),
        (tol(operator="Exists"), taint("any", "thing", "NoExecute"), True),  # empty key + Exists: everything
        (tol(operator="Exists", effect="NoSchedule"), taint("any", "x", "NoExecute"), False),
        (tol(operator="Equal", value="v"), taint("any", "v"), True),  # empty key: key not compared
        (tol(operator="Equal", value="v"), taint("any", "w"), False),
        (tol(key="k", operator="Exists", effect="PreferNoSchedule"), taint("k", None, "PreferNoSchedule"), True),
    ])
    def test_tolerates(self, t, taint_, want):
        assert s.tolerates(t, taint_) is want

    def test_first_untolerated_ignores_prefer_no_schedule_and_keeps_order(self):
        taints = [taint("soft", "x", "PreferNoSchedule"), taint("a", "1"), taint("b", "2", "NoExecute")]
        assert s.first_untolerated(taints, []).key == "a"
        assert s.first_untolerated(taints, [tol(key="a", operator="Exists")]).key == "b"
        assert s.first_untolerated(taints, [tol(operator="Exists")]) is None
        assert s.first_untolerated([taint("soft", "x", "PreferNoSchedule")], []) is None

    def test_count_intolerable_uses_only_soft_tolerations(self):
        taints = [taint("a", "1", "PreferNoSchedule"), taint("b", "2", "PreferNoSchedule"), taint("c", "3")]
        assert s.count_intolerable(taints, []) == 2
        assert s.count_intolerable(taints, [tol(key="a", operator="Exists", effect="PreferNoSchedule")]) == 1
        assert s.count_intolerable(taints, [tol(key="a", operator="Exists")]) == 1  # empty effect counts
        assert s.count_intolerable(taints, [tol(key="a", operator="Exists", effect="NoSchedule")]) == 2

    def test_unschedulable_toleration(self):
        assert not s.tolerates_unschedulable([])
        assert s.tolerates_unschedulable([tol(key="node.kubernetes.io/unschedulable", operator="Exists")])
        assert s.tolerates_unschedulable([tol(key="node.kubernetes.io/unschedulable", effect="NoSchedule")])
        assert not s.tolerates_unschedulable([tol(key="node.kubernetes.io/unschedulable", effect="NoExecute",
                                                  operator="Exists")])
        assert s.tolerates_unschedulable([tol(operator="Exists")])

    def test_taint_text(self):
        assert s.taint_text(taint("dedicated", "a100")) == "node(s) had untolerated taint {dedicated: a100}"
        assert s.taint_text(taint("gpu")) == "node(s) had untolerated taint {gpu: }"


# ---------------------------------------------------------------- pod affinity terms

def aff(**kw):
    return s.affinity_term(PodAffinityTerm.model_validate({"topologyKey": "zone", **kw}), "team-a")


class TestAffinityTerm:
    def test_default_namespace_is_the_owner_pods(self):
        t = aff(labelSelector={"matchLabels": {"app": "ps"}})
        assert t.matches({"app": "ps"}, "team-a")
        assert not t.matches({"app": "ps"}, "team-b")
        assert not t.matches({"app": "worker"}, "team-a")

    def test_explicit_namespaces(self):
        t = aff(labelSelector={}, namespaces=["x", "y"])
        assert t.matches({}, "x") and t.matches({"a": "b"}, "y")
        assert not t.matches({}, "team-a")

    def test_empty_namespace_selector_means_all_namespaces(self):
        t = aff(labelSelector={"matchLabels": {"app": "ps"}}, namespaceSelector={})
        assert t.matches({"app": "ps"}, "anything")

    def test_namespace_selector_by_name_label(self):
        t = aff(labelSelector={}, namespaceSelector={"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["p", "q"]}]})
        assert t.matches({}, "p") and not t.matches({}, "team-a")
        # namespaces and namespaceSelector are ORed
        t2 = aff(labelSelector={}, namespaces=["r"], namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": "p"}})
        assert t2.matches({}, "r") and t2.matches({}, "p") and not t2.matches({}, "team-a")

    def test_nil_label_selector_matches_no_pod(self):
        t = aff()
        assert not t.matches({}, "team-a")

    def test_matches_all_terms(self):
        a = aff(labelSelector={"matchLabels": {"app": "ps"}})
        b = aff(labelSelector={"matchExpressions": [{"key": "role", "operator": "Exists"}]})
        assert s.matches_all_terms((a, b), {"app": "ps", "role": "x"}, "team-a")
        assert not s.matches_all_terms((a, b), {"app": "ps"}, "team-a")
        assert not s.matches_all_terms((), {"app": "ps"}, "team-a")


class TestArguments:
    def test_bool(self):
        assert s.arg_bool({}, "k", True) is True
        assert s.arg_bool({"k": False}, "k", True) is False
        assert s.arg_bool({"k": "false"}, "k", True) is False
        assert s.arg_bool({"k": "T"}, "k", False) is True
        assert s.arg_bool({"k": "nope"}, "k", True) is True

    def test_int(self):
        assert s.arg_int({"k": 10}, "k", 1) == 10
        assert s.arg_int({"k": "10"}, "k", 1) == 10
        assert s.arg_int({"k": 2.0}, "k", 1) == 2
        assert s.arg_int({"k": 2.5}, "k", 1) == 1
        assert s.arg_int({"k": "ten"}, "k", 1) == 1
        assert s.arg_int({"k": True}, "k", 1) == 1
        assert s.arg_int({"k": -3}, "k", 1) == -3

    def test_list(self):
        assert s.arg_list({"k": "nvidia.com/gpu, example.com/foo,"}, "k") == ["nvidia.com/gpu", "example.com/foo"]
        assert s.arg_list({"k": ["a", "b"]}, "k") == ["a", "b"]
        assert s.arg_list({}, "k") == []
