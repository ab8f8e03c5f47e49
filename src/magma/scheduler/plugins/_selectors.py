"""Kubernetes matching rules as pure functions: label selectors, node selector terms, tolerations, pod
affinity terms. Not a plugin (the registry imports it and it registers nothing).

The semantics are kube-scheduler's (k8s.io/apimachinery labels, component-helpers nodeaffinity,
core/v1 helper ToleratesTaint), including its edges:

- Label selector (`matchLabels` + `matchExpressions`, used by pod affinity terms and topology spread
  constraints): a nil selector matches nothing, an empty one matches everything. `In` needs the key present
  with one of the values, `NotIn` matches when the key is absent or its value is not listed, `Exists` and
  `DoesNotExist` test presence. A requirement the API server would reject (In/NotIn without values,
  Exists/DoesNotExist with values, an unknown operator) makes the whole selector match nothing.
- Node selector term (required/preferred node affinity): `matchExpressions` and `matchFields` are ANDed;
  a term with neither matches nothing; terms of a NodeSelector are ORed and an empty term list matches
  nothing. `Gt`/`Lt` need exactly one value that parses as a base-10 int64 and compare the node's label
  parsed the same way (absent or non-numeric label: no match). `matchFields` only knows `metadata.name`,
  with `In`/`NotIn` and exactly one value. A requirement that does not parse fails its term (kube-scheduler's
  lazy-error node selector drops such a term).
- `nodeSelector` (the map): every key present with exactly that value.
- Toleration vs taint: an empty effect matches every effect, an empty key every key (with `Exists`);
  operator empty or `Equal` compares values (missing = ""), `Exists` ignores the value.
- Pod affinity term: matches a pod when the pod's namespace is in the term's namespaces, or the term's
  namespaceSelector matches the namespace, and the label selector matches the pod's labels. With neither
  `namespaces` nor `namespaceSelector`, the term's namespace is the namespace of the pod that carries it.
  magma has no Namespace objects, so a namespaceSelector is matched against the label every namespace
  carries, `kubernetes.io/metadata.name: <namespace>` (an empty selector still means all namespaces).

Selectors are normalised into hashable tuples (`Selector`) so that callers can use them as cache keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

# A normalised label selector: (matchLabels as (key, value) pairs, expressions as (key, op, values)).
# None is the nil selector (matches nothing).
Selector = tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str, tuple[str, ...]], ...]]
EVERYTHING: Selector = ((), ())
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
NAME_FIELD = "metadata.name"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
DO_NOT_SCHEDULE = ("NoSchedule", "NoExecute")

_INT64 = re.compile(r"[+-]?[0-9]+")
_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)
_LABEL_OPS = ("In", "NotIn", "Exists", "DoesNotExist")


def _get(obj: Any, name: str, default: Any = None) -> Any:
    """Attribute of a typed model or key of a plain dict (camelCase or snake_case)."""
    if obj is None:
        return default
    if isinstance(obj, Mapping):
        if name in obj:
            return obj[name]
        camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)
        return obj.get(camel, default)
    return getattr(obj, name, default)


def parse_int64(text: str | None) -> int | None:
    """Go's strconv.ParseInt(text, 10, 64): optional sign and digits only."""
    if text is None or not _INT64.fullmatch(text):
        return None
    v = int(text)
    return v if _INT64_MIN <= v <= _INT64_MAX else None


# ---------------------------------------------------------------- label selectors


def label_selector(sel: Any) -> Selector | None:
    """Normalise a LabelSelector (model or dict) into a hashable Selector; None stays None (matches nothing).

    A selector with an invalid requirement also becomes None: it can match nothing.
    """
    if sel is None:
        return None
    labels = tuple(sorted((str(k), str(v)) for k, v in (_get(sel, "match_labels") or {}).items()))
    exprs = []
    for e in _get(sel, "match_expressions") or ():
        key, op = _get(e, "key"), _get(e, "operator")
        values = tuple(str(v) for v in (_get(e, "values") or ()))
        if op not in _LABEL_OPS:
            return None
        if op in ("In", "NotIn") and not values:
            return None
        if op in ("Exists", "DoesNotExist") and values:
            return None
        exprs.append((key, op, tuple(sorted(set(values)))))
    return labels, tuple(exprs)


def with_match_labels(sel: Selector | None, extra: Mapping[str, str]) -> Selector | None:
    """The selector ANDed with key=value pairs (topology spread `matchLabelKeys`); nil stays nil."""
    if sel is None or not extra:
        return sel
    return tuple(sorted(sel[0] + tuple(extra.items()))), sel[1]


def label_requirement_matches(key: str, op: str, values: Sequence[str], labels: Mapping[str, str]) -> bool:
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    return False


def selector_matches(sel: Selector | None, labels: Mapping[str, str]) -> bool:
    """Does a normalised selector match a label set? None matches nothing; an empty selector everything."""
    if sel is None:
        return False
    match_labels, exprs = sel
    for k, v in match_labels:
        if labels.get(k) != v:
            return False
    return all(label_requirement_matches(k, op, vals, labels) for k, op, vals in exprs)


# ---------------------------------------------------------------- node selectors


def node_requirement_valid(op: str, values: Sequence[str]) -> bool:
    if op in ("In", "NotIn"):
        return len(values) > 0
    if op in ("Exists", "DoesNotExist"):
        return len(values) == 0
    if op in ("Gt", "Lt"):
        return len(values) == 1 and parse_int64(values[0]) is not None
    return False


def node_requirement_matches(op: str, values: Sequence[str], value: str | None) -> bool:
    """One matchExpressions requirement against a node's value for its key (None: the label is absent)."""
    if not node_requirement_valid(op, values):
        return False
    if op == "In":
        return value is not None and value in values
    if op == "NotIn":
        return value is None or value not in values
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    have = parse_int64(value)
    if have is None:
        return False
    want = parse_int64(values[0])
    return have > want if op == "Gt" else have < want


def field_requirement_matches(key: str, op: str, values: Sequence[str], node_name: str) -> bool:
    """One matchFields requirement: only metadata.name, In/NotIn, exactly one value."""
    if key != NAME_FIELD or len(values) != 1:
        return False
    if op == "In":
        return node_name == values[0]
    if op == "NotIn":
        return node_name != values[0]
    return False


def node_selector_term_matches(term: Any, labels: Mapping[str, str], node_name: str) -> bool:
    exprs = _get(term, "match_expressions") or ()
    fields = _get(term, "match_fields") or ()
    if not exprs and not fields:
        return False
    for e in exprs:
        vals = tuple(_get(e, "values") or ())
        if not node_requirement_matches(_get(e, "operator"), vals, labels.get(_get(e, "key"))):
            return False
    for f in fields:
        if not field_requirement_matches(_get(f, "key"), _get(f, "operator"), tuple(_get(f, "values") or ()),
                                         node_name):
            return False
    return True


def node_selector_matches(terms: Iterable[Any], labels: Mapping[str, str], node_name: str) -> bool:
    """Terms of a NodeSelector are ORed; no terms match nothing."""
    return any(node_selector_term_matches(t, labels, node_name) for t in terms)


def node_selector_map_matches(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """A pod's `nodeSelector` map."""
    return all(k in labels and labels[k] == v for k, v in selector.items())


def required_node_affinity_matches(pod_spec: Any, labels: Mapping[str, str], node_name: str) -> bool:
    """kube-scheduler's RequiredNodeAffinity: nodeSelector AND required node affinity terms (when set)."""
    if not node_selector_map_matches(_get(pod_spec, "node_selector") or {}, labels):
        return False
    affinity = _get(pod_spec, "affinity")
    na = _get(affinity, "node_affinity")
    required = _get(na, "required_during_scheduling_ignored_during_execution")
    if required is None:
        return True
    return node_selector_matches(_get(required, "node_selector_terms") or (), labels, node_name)


def preferred_node_affinity_score(pod_spec: Any, labels: Mapping[str, str], node_name: str) -> int:
    """Sum of the weights of the preferred node affinity terms a node matches (terms of weight 0 ignored)."""
    affinity = _get(pod_spec, "affinity")
    na = _get(affinity, "node_affinity")
    total = 0
    for p in _get(na, "preferred_during_scheduling_ignored_during_execution") or ():
        w = _get(p, "weight") or 0
        if w and node_selector_term_matches(_get(p, "preference"), labels, node_name):
            total += w
    return total


# ---------------------------------------------------------------- taints and tolerations


def tolerates(toleration: Any, taint: Any) -> bool:
    """Kubernetes' Toleration.ToleratesTaint."""
    effect = _get(toleration, "effect") or ""
    if effect and effect != _get(taint, "effect"):
        return False
    key = _get(toleration, "key") or ""
    if key and key != _get(taint, "key"):
        return False
    op = _get(toleration, "operator") or ""
    if op in ("", "Equal"):
        return (_get(toleration, "value") or "") == (_get(taint, "value") or "")
    return op == "Exists"


def tolerated(taint: Any, tolerations: Iterable[Any]) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def first_untolerated(taints: Iterable[Any], tolerations: Sequence[Any],
                      effects: Sequence[str] = DO_NOT_SCHEDULE) -> Any | None:
    """The first taint with one of `effects` that no toleration tolerates (kube-scheduler's filter order)."""
    for taint in taints:
        if _get(taint, "effect") in effects and not tolerated(taint, tolerations):
            return taint
    return None


def count_intolerable(taints: Iterable[Any], tolerations: Sequence[Any]) -> int:
    """TaintToleration's score input: PreferNoSchedule taints not tolerated by the tolerations whose effect
    is empty or PreferNoSchedule."""
    soft = [t for t in tolerations if (_get(t, "effect") or "") in ("", "PreferNoSchedule")]
    return sum(1 for taint in taints if _get(taint, "effect") == "PreferNoSchedule" and not tolerated(taint, soft))


def tolerates_unschedulable(tolerations: Iterable[Any]) -> bool:
    """NodeUnschedulable: does the pod tolerate {node.kubernetes.io/unschedulable, NoSchedule}?"""
    taint = {"key": UNSCHEDULABLE_TAINT, "value": "", "effect": "NoSchedule"}
    return tolerated(taint, tolerations)


def taint_text(taint: Any) -> str:
    """kube-scheduler's TaintToleration reason."""
    return f"node(s) had untolerated taint {{{_get(taint, 'key')}: {_get(taint, 'value') or ''}}}"


# ---------------------------------------------------------------- pod affinity terms


@dataclass(frozen=True)
class AffinityTerm:
    """A pod (anti-)affinity term resolved against the namespace of the pod that carries it."""

    selector: Selector | None
    namespaces: frozenset[str]
    namespace_selector: Selector | None  # None: no selector (only `namespaces` count)
    topology_key: str

    def matches(self, labels: Mapping[str, str], namespace: str) -> bool:
        return namespace_matches(self, namespace) and selector_matches(self.selector, labels)


def affinity_term(term: Any, owner_namespace: str) -> AffinityTerm:
    namespaces = frozenset(_get(term, "namespaces") or ())
    raw_ns_sel = _get(term, "namespace_selector")
    ns_sel = label_selector(raw_ns_sel) if raw_ns_sel is not None else None
    if raw_ns_sel is None and not namespaces:
        namespaces = frozenset({owner_namespace})
    return AffinityTerm(label_selector(_get(term, "label_selector")), namespaces, ns_sel,
                        _get(term, "topology_key") or "")


def namespace_matches(term: AffinityTerm, namespace: str) -> bool:
    if namespace in term.namespaces:
        return True
    return term.namespace_selector is not None and selector_matches(
        term.namespace_selector, {NAMESPACE_NAME_LABEL: namespace})


def matches_all_terms(terms: Sequence[AffinityTerm], labels: Mapping[str, str], namespace: str) -> bool:
    """kube-scheduler's podMatchesAllAffinityTerms: false for no terms."""
    return bool(terms) and all(t.matches(labels, namespace) for t in terms)


# ---------------------------------------------------------------- plugin arguments (shared by the node plugins)

_GO_BOOL = {s: True for s in ("1", "t", "T", "TRUE", "true", "True")} | {
    s: False for s in ("0", "f", "F", "FALSE", "false", "False")}


def arg_bool(args: Mapping[str, Any], key: str, default: bool) -> bool:
    """A boolean argument: a YAML bool or a string strconv.ParseBool takes; anything else keeps the default."""
    v = args.get(key)
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v in _GO_BOOL:
        return _GO_BOOL[v]
    return default


def arg_int(args: Mapping[str, Any], key: str, default: int) -> int:
    """An integer argument. Volcano's GetInt only takes an unquoted int; magma also takes a whole float or a
    numeric string (as the config loader documents). Anything else keeps the default."""
    v = args.get(key)
    if isinstance(v, bool) or v is None:
        return default
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v) if v.is_integer() else default
    if isinstance(v, str):
        try:
            f = float(v.strip())
        except ValueError:
            return default
        return int(f) if f.is_integer() else default
    return default


def arg_list(args: Mapping[str, Any], key: str) -> list[str]:
    """A "a, b" list argument (a YAML list or tuple is taken as well)."""
    v = args.get(key)
    if isinstance(v, str):
        items = v.split(",")
    elif isinstance(v, (list, tuple)):
        items = [str(x) for x in v]
    else:
        return []
    return [s.strip() for s in items if s.strip()]
