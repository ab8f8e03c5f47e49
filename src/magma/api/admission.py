"""Admission rules: what Volcano's webhooks (and the Kubernetes API server in front of them) would refuse.

Everything here is a pure function of a `World`, the objects of a set of manifests plus the built-ins (queues
`default` and `root`, PriorityClasses `system-cluster-critical` and `system-node-critical`), and returns a list of
`Problem`s. A Problem of severity "error" is a rejection; "warning" marks something Volcano accepts but that will
not do what the author most likely wants (the seed article's pitfalls). Every problem names the file and the line
of the offending field, and the field as a dotted path (`spec.tasks[0].minAvailable`; map keys that are not plain
identifiers in brackets: `spec.capability[nvidia.com/gpu]`).

Defaults are applied first, as Volcano's mutating webhooks run before validation (see `defaults.py`).

Where magma differs from Volcano on purpose, the rule says so in its message or comment:
- a Queue with a guarantee and no deserved for that resource, and child queues with a guarantee (or deserved)
  under a parent that sets none, are warnings (Volcano v1.15+ rejects them; older Volcano and the seed article's
  own examples accept them);
- the sum of the children's guarantee/deserved is also checked against the parent's capability, and the
  guarantees of root's children against the cluster's allocatable when nodes are given (the checklist's
  "guarantee 和 capability 计算过，避免超发");
- a queue that still has PodGroups or Jobs cannot be deleted (pitfall 6);
- referenced PriorityClasses must exist for Jobs and PodGroups too (pitfall 7), not only for Pods.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from pydantic import BaseModel

from .defaults import (
    DEFAULT_QUEUE,
    PLUGINS_NEEDING_SVC,
    ROOT_QUEUE,
    SYSTEM_PRIORITY_CLASSES,
    builtin_priority_classes,
    builtin_queues,
    default_job,
    default_podgroup,
    default_queue,
    is_builtin,
)
from .objects import (
    GROUP_NAME_ANNOTATION,
    Job,
    LifecyclePolicy,
    Node,
    NodePool,
    Object,
    Pod,
    PodGroup,
    PriorityClass,
    Queue,
    ResourceList,
    resources_of,
)
from .problems import Problem
from .quantity import Quantity
from .resources import Resources

# ---------------------------------------------------------------- constants (Volcano's spellings)

#: Scheduler names whose pods magma schedules.
SCHEDULER_NAMES: tuple[str, ...] = ("volcano", "magma")

#: Job plugins Volcano's controller knows (pkg/controllers/job/plugins/factory.go).
JOB_PLUGINS: tuple[str, ...] = ("env", "svc", "ssh", "tensorflow", "mpi", "pytorch", "hcclrank", "ray")

#: Lifecycle policy events and actions a user may write (the webhook's allow-lists).
POLICY_EVENTS: tuple[str, ...] = (
    "*", "PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted", "TaskFailed", "JobUpdated",
)
POLICY_ACTIONS: tuple[str, ...] = (
    "AbortJob", "RestartJob", "RestartTask", "RestartPod", "RestartPartition", "TerminateJob", "CompleteJob",
    "ResumeJob",
)
ANY_EVENT = "*"

#: Volcano's webhook flag --max-queue-depth (default 5).
MAX_QUEUE_DEPTH = 5
#: Queue weight range of the Queue CRD.
MIN_QUEUE_WEIGHT, MAX_QUEUE_WEIGHT = 1, 65535
#: Kubernetes refuses user PriorityClasses above this value.
HIGHEST_USER_PRIORITY = 1_000_000_000

MPI_DEFAULT_MASTER = "master"

HIERARCHY_ANNOTATION = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_ANNOTATION = "volcano.sh/hierarchy-weights"
JDB_ANNOTATIONS = ("volcano.sh/jdb-min-available", "volcano.sh/jdb-max-unavailable")
GROUP_NAME_KEYS = (GROUP_NAME_ANNOTATION, "scheduling.volcano.sh/group-name")
GROUP_NAME_LABEL = "scheduling.x-k8s.io/pod-group"

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_GO_DURATION = re.compile(r"^[-+]?(0|((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+)$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_POSITIVE_NUMBER = re.compile(r"^[0-9]+(\.[0-9]+)?$")


# ---------------------------------------------------------------- the world


@dataclass
class World:
    """The objects of a set of manifests, by kind and key, plus Volcano's and Kubernetes' built-ins.

    Queues, PriorityClasses and Nodes are keyed by name; PodGroups, Jobs and Pods by `namespace/name`.
    The first object of a kind and key wins; later ones are kept in `duplicates` as (first, later).
    A manifest may redefine a built-in (`default`, `root`, a system PriorityClass): it replaces it.
    """

    queues: dict[str, Queue] = field(default_factory=dict)
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    podgroups: dict[str, PodGroup] = field(default_factory=dict)
    jobs: dict[str, Job] = field(default_factory=dict)
    pods: dict[str, Pod] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    others: dict[tuple[str, str], Object] = field(default_factory=dict)
    duplicates: list[tuple[Object, Object]] = field(default_factory=list)
    scheduler_names: tuple[str, ...] = SCHEDULER_NAMES
    # Lookup tables, set only while `admit` runs (the tables above may be changed by callers between runs).
    _index: "_Index | None" = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for q in builtin_queues():
            if q.name not in self.queues:
                self.queues = {q.name: q, **self.queues}
        for pc in builtin_priority_classes():
            self.priority_classes.setdefault(pc.name, pc)

    @classmethod
    def from_objects(cls, objects: Iterable[Object], scheduler_names: tuple[str, ...] = SCHEDULER_NAMES) -> "World":
        world = cls(scheduler_names=scheduler_names)
        for obj in objects:
            world.add(obj)
        return world

    def add(self, obj: Object) -> None:
        if isinstance(obj, NodePool):
            for node in obj.nodes():
                self.add(node)
            return
        table: dict
        key: Any = obj.key
        if isinstance(obj, Queue):
            table = self.queues
        elif isinstance(obj, PriorityClass):
            table = self.priority_classes
        elif isinstance(obj, PodGroup):
            table = self.podgroups
        elif isinstance(obj, Job):
            table = self.jobs
        elif isinstance(obj, Pod):
            table = self.pods
        elif isinstance(obj, Node):
            table = self.nodes
        else:
            table = self.others
            key = (_kind(obj), obj.key)
        first = table.get(key)
        if first is not None and not is_builtin(first):
            self.duplicates.append((first, obj))
            return
        table[key] = obj

    def objects(self) -> list[Object]:
        """Every object given (not the built-ins, not the duplicates)."""
        out: list[Object] = []
        for table in (self.priority_classes, self.queues, self.podgroups, self.jobs, self.pods, self.nodes,
                      self.others):
            out += [o for o in table.values() if not is_builtin(o)]
        return out

    def children_of(self, name: str) -> list[Queue]:
        """Queues whose parent is `name`, in the order they were given."""
        if self._index is not None:
            return self._index.children.get(name, [])
        return [q for q in self.queues.values() if q.name != name and q.parent_name == name]

    def pods_of_group(self, namespace: str, group: str) -> list[Pod]:
        """Pods of `namespace` whose group annotation names `group`."""
        if self._index is not None:
            return self._index.members.get((namespace, group), [])
        return [p for p in self.pods.values() if p.namespace == namespace and p.group_name == group]

    def podgroup_namespaces(self, name: str) -> list[str]:
        """Namespaces that hold a PodGroup called `name`."""
        if self._index is not None:
            return self._index.group_namespaces.get(name, [])
        return sorted(pg.namespace for pg in self.podgroups.values() if pg.name == name)

    def total_allocatable(self) -> Resources:
        """Sum of the allocatable of the Ready nodes (Volcano's TotalResource)."""
        total = Resources()
        for node in self.nodes.values():
            if node.ready():
                total = total + node.allocatable()
        return total


@dataclass
class _Index:
    children: dict[str, list[Queue]]
    members: dict[tuple[str, str], list[Pod]]
    group_namespaces: dict[str, list[str]]

    @classmethod
    def build(cls, world: World) -> "_Index":
        children: dict[str, list[Queue]] = {}
        for q in world.queues.values():
            parent = q.parent_name
            if parent is not None and parent != q.name:
                children.setdefault(parent, []).append(q)
        members: dict[tuple[str, str], list[Pod]] = {}
        for p in world.pods.values():
            g = p.group_name
            if g:
                members.setdefault((p.namespace, g), []).append(p)
        spaces: dict[str, list[str]] = {}
        for pg in world.podgroups.values():
            spaces.setdefault(pg.name, []).append(pg.namespace)
        return cls(children, members, {k: sorted(v) for k, v in spaces.items()})


def apply_defaults(world: World) -> World:
    """A new World whose Queues, Jobs and PodGroups carry Volcano's defaults."""
    return World(
        queues={k: (q if is_builtin(q) else default_queue(q)) for k, q in world.queues.items()},
        priority_classes=dict(world.priority_classes),
        podgroups={k: default_podgroup(pg) for k, pg in world.podgroups.items()},
        jobs={k: default_job(j) for k, j in world.jobs.items()},
        pods=dict(world.pods),
        nodes=dict(world.nodes),
        others=dict(world.others),
        duplicates=list(world.duplicates),
        scheduler_names=world.scheduler_names,
    )


# ---------------------------------------------------------------- helpers


def _kind(obj: Object) -> str:
    return type(obj).KIND or obj.kind


def dotted(path: Iterable) -> str:
    """`("spec", "tasks", 0, "minAvailable")` -> `spec.tasks[0].minAvailable`; odd map keys in brackets."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.match(str(part)):
            out += ("." if out else "") + str(part)
        else:
            out += f"[{part}]"
    return out


def problem(obj: Object, path: tuple, message: str, severity: str = "error") -> Problem:
    """A problem on `obj` at the field `path` (API names), with the line of that field."""
    return Problem(obj.source.file, obj.source.line_of(path), _kind(obj), obj.key, dotted(path), message,
                   severity)  # type: ignore[arg-type]


class _Report:
    def __init__(self, obj: Object):
        self.obj = obj
        self.items: list[Problem] = []

    def error(self, path: tuple, message: str) -> None:
        self.items.append(problem(self.obj, path, message, "error"))

    def warn(self, path: tuple, message: str) -> None:
        self.items.append(problem(self.obj, path, message, "warning"))


def _where(obj: Object) -> str:
    return f"{obj.source.file}:{obj.source.line_of(('metadata', 'name'))}"


def _names(items: Iterable[str], limit: int = 8) -> str:
    items = list(items)
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _res(name: str, units: int) -> str:
    """One resource amount as text: `nvidia.com/gpu: 64`, `memory: 256Gi`."""
    return f"{name}: {Resources({name: units}).quantity_text(name) if units else '0'}"


def _label_problems(value: str) -> str | None:
    if len(value) > 63:
        return f"is {len(value)} characters long, at most 63 are allowed"
    if not _DNS1123_LABEL.match(value):
        return "must consist of lower-case letters, digits and '-', and start and end with a letter or digit"
    return None


def _did_you_mean(value: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(value, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _is_integer_resource(name: str) -> bool:
    """Kubernetes' IsIntegerResourceName: extended resources (a domain-prefixed name outside kubernetes.io)."""
    if name.startswith("requests."):
        return False
    return "/" in name and "kubernetes.io/" not in name


# ---------------------------------------------------------------- top level


def admit(world: World) -> list[Problem]:
    """Every admission problem of the world's objects, defaults applied first, sorted by file and line."""
    out: list[Problem] = []
    world._index = _Index.build(world)
    try:
        out += check_duplicates(world)
        for pc in world.priority_classes.values():
            if not is_builtin(pc):
                out += check_priority_class(world, pc)
        out += check_global_default(world)
        for q in world.queues.values():
            if not is_builtin(q):
                out += check_queue(world, q)
        out += check_queue_tree(world)
        for job in world.jobs.values():
            out += check_job(world, job)
        for pg in world.podgroups.values():
            out += check_podgroup(world, pg)
        for pod in world.pods.values():
            out += check_pod(world, pod)
    finally:
        world._index = None
    return sorted(out, key=lambda p: (p.file, p.line))


def check_duplicates(world: World) -> list[Problem]:
    out = []
    for first, later in world.duplicates:
        kind = _kind(later)
        out.append(problem(
            later, ("metadata", "name"),
            f"duplicate {kind} {later.key}: already defined at {_where(first)}; keep one definition or rename "
            f"this one (the first definition is the one used)",
        ))
    return out


# ---------------------------------------------------------------- PriorityClass


def check_priority_class(world: World, pc: PriorityClass) -> list[Problem]:
    r = _Report(pc)
    if pc.name in SYSTEM_PRIORITY_CLASSES:
        expected = SYSTEM_PRIORITY_CLASSES[pc.name]
        if pc.value != expected:
            r.error(("value",), f"{pc.name} is a built-in PriorityClass with value {expected}, not {pc.value}; "
                                f"remove this definition or set value: {expected}")
    elif pc.name.startswith("system-"):
        r.error(("metadata", "name"), "names starting with 'system-' are reserved for Kubernetes' own "
                                      "PriorityClasses; rename it")
    elif pc.value > HIGHEST_USER_PRIORITY:
        r.error(("value",), f"value {pc.value} is above {HIGHEST_USER_PRIORITY}, the highest value Kubernetes "
                            f"allows for a user-defined PriorityClass; lower it")
    return r.items


def check_global_default(world: World) -> list[Problem]:
    out = []
    first: PriorityClass | None = None
    for pc in world.priority_classes.values():
        if not pc.global_default:
            continue
        if first is None:
            first = pc
            continue
        out.append(problem(
            pc, ("globalDefault",),
            f"PriorityClass {first.name} ({_where(first)}) is already the global default; only one PriorityClass "
            f"may set globalDefault: true, remove it from one of them",
        ))
    return out


# ---------------------------------------------------------------- Queue


_QUEUE_SECTIONS = (
    ("capability", ("spec", "capability")),
    ("deserved", ("spec", "deserved")),
    ("guarantee", ("spec", "guarantee", "resource")),
)


def _section(q: Queue, name: str) -> ResourceList:
    if name == "capability":
        return q.spec.capability
    if name == "deserved":
        return q.spec.deserved
    return q.spec.guarantee.resource


def _ancestors(world: World, q: Queue) -> tuple[list[Queue], str | None]:
    """The chain of ancestors below root, nearest first, and what ended the walk early:
    None (reached root), 'missing:<name>' or 'cycle'."""
    chain: list[Queue] = []
    seen = {q.name}
    parent = q.parent_name
    while parent and parent != ROOT_QUEUE:
        if parent in seen:
            return chain, "cycle"
        pq = world.queues.get(parent)
        if pq is None:
            return chain, f"missing:{parent}"
        seen.add(parent)
        chain.append(pq)
        parent = pq.parent_name
    return chain, None


def check_queue(world: World, queue: Queue) -> list[Problem]:
    """Rules on one queue by itself and against its ancestors."""
    q = default_queue(queue)
    r = _Report(queue)

    state = q.status.state
    if state not in ("Open", "Closed"):
        r.error(("status", "state"), f"state {state!r} cannot be set: a queue is created or updated as Open or "
                                     f"Closed (Closing and Unknown are set by Volcano); use Open or Closed")
    if not (MIN_QUEUE_WEIGHT <= q.spec.weight <= MAX_QUEUE_WEIGHT):
        r.error(("spec", "weight"), f"weight {q.spec.weight} is outside {MIN_QUEUE_WEIGHT}..{MAX_QUEUE_WEIGHT}; "
                                    f"use a weight in that range")
    if q.spec.priority is not None and q.spec.priority < 0:
        r.error(("spec", "priority"), f"priority {q.spec.priority} is negative; use 0 or more")

    # Quantities: non-negative; whole numbers for extended resources such as nvidia.com/gpu.
    bad: set[tuple[str, str]] = set()
    for sec, base in _QUEUE_SECTIONS:
        for name, qty in _section(q, sec).items():
            if qty.value < 0:
                r.error(base + (name,), f"{sec} {name}: {qty.text} is negative; use 0 or more")
                bad.add((sec, name))
            elif _is_integer_resource(name) and qty.value.denominator != 1:
                r.error(base + (name,), f"{sec} {name}: {qty.text} is not a whole number; {name} is an extended "
                                        f"resource and must be counted in whole units")
                bad.add((sec, name))

    cap, des, gua = q.capability(), q.deserved(), q.guarantee()
    cap_names, des_names = set(q.spec.capability), set(q.spec.deserved)
    gua_names = set(q.spec.guarantee.resource)
    gpath, dpath, cpath = _QUEUE_SECTIONS[2][1], _QUEUE_SECTIONS[1][1], _QUEUE_SECTIONS[0][1]

    no_deserved = []
    for name in sorted(gua_names):
        if ("guarantee", name) in bad:
            continue
        if name in des_names and ("deserved", name) not in bad:
            if gua[name] > des[name]:
                r.error(gpath + (name,), f"guarantee {_res(name, gua[name])} is above deserved "
                                         f"{_res(name, des[name])}; lower the guarantee or raise deserved "
                                         f"(guarantee <= deserved <= capability)")
                continue
        elif name not in des_names and gua[name] > 0:
            no_deserved.append(name)
        if name in cap_names and ("capability", name) not in bad and gua[name] > cap[name]:
            r.error(gpath + (name,), f"guarantee {_res(name, gua[name])} is above capability "
                                     f"{_res(name, cap[name])}; the queue can never use what it is guaranteed: "
                                     f"lower the guarantee or raise the capability")
    for name in sorted(des_names):
        if ("deserved", name) in bad or ("capability", name) in bad:
            continue
        if name in cap_names and des[name] > cap[name]:
            r.error(dpath + (name,), f"deserved {_res(name, des[name])} is above capability "
                                     f"{_res(name, cap[name])}; lower deserved or raise the capability")
    if no_deserved:
        r.warn(gpath, f"guarantee sets {_names(no_deserved)} but deserved does not; Volcano v1.15+ rejects this "
                      f"(deserved must be >= guarantee for every guaranteed resource): add spec.deserved with at "
                      f"least " + ", ".join(_res(n, gua[n]) for n in no_deserved))

    if queue.name == ROOT_QUEUE:
        for sec, base in _QUEUE_SECTIONS:
            if _section(q, sec):
                r.error(base, f"root's {sec} cannot be set: Volcano's webhook protects root's capability, "
                              f"deserved and guarantee (root always spans the whole cluster); remove it and set "
                              f"limits on a child queue instead")
        if q.spec.parent and q.spec.parent != ROOT_QUEUE:
            r.error(("spec", "parent"), "root is the top of the queue tree and cannot have a parent; remove "
                                        "spec.parent")
        return r.items

    r.items += _check_parent(world, queue)
    r.items += _check_hierarchy_annotations(world, queue)

    # Capability no higher than the nearest ancestor (below root) that limits the same resource.
    chain, _ = _ancestors(world, queue)
    for name in sorted(cap_names):
        if ("capability", name) in bad or cap[name] <= 0:
            continue
        for anc in chain:
            limit = anc.capability()[name]
            if limit > 0:
                if cap[name] > limit:
                    r.error(cpath + (name,), f"capability {_res(name, cap[name])} is above the capability of "
                                             f"ancestor queue {anc.name} ({_res(name, limit)}); lower it to at "
                                             f"most {Resources({name: limit}).quantity_text(name)} or raise "
                                             f"{anc.name}'s capability")
                break
    return r.items


def _check_parent(world: World, queue: Queue) -> list[Problem]:
    r = _Report(queue)
    parent = queue.spec.parent
    path = ("spec", "parent")
    if parent == queue.name:
        r.error(path, f"queue {queue.name} names itself as its parent; name another queue (or root)")
        return r.items
    if parent and parent not in world.queues:
        known = [q for q in world.queues if q != queue.name]
        r.error(path, f"parent queue {parent!r} does not exist{_did_you_mean(parent, known)}; create it first or "
                      f"name an existing queue (root when none)")
        return r.items
    chain, stop = _ancestors(world, queue)
    if stop == "cycle":
        names = [queue.name] + [a.name for a in chain]
        loop_start = chain[-1].parent_name if chain else queue.name
        whose = "queue parents" if loop_start == queue.name else f"the ancestors of {queue.name}"
        r.error(path, f"{whose} form a cycle ({' -> '.join(names)} -> {loop_start}); every chain of "
                      f"parents must end at root: point one of them at root or another queue")
        return r.items
    if stop is None:
        depth = 1 + len(chain)
        if depth > MAX_QUEUE_DEPTH:
            names = " -> ".join([ROOT_QUEUE] + [a.name for a in reversed(chain)] + [queue.name])
            r.error(path, f"queue {queue.name} is at depth {depth} ({names}), deeper than Volcano's maximum of "
                          f"{MAX_QUEUE_DEPTH}; attach it higher in the tree")
    return r.items


def _check_hierarchy_annotations(world: World, queue: Queue) -> list[Problem]:
    """The older hierarchical-DRF annotations `volcano.sh/hierarchy` and `volcano.sh/hierarchy-weights`."""
    r = _Report(queue)
    ann = queue.annotations
    hierarchy, weights = ann.get(HIERARCHY_ANNOTATION, ""), ann.get(HIERARCHY_WEIGHTS_ANNOTATION, "")
    if not hierarchy and not weights:
        return r.items
    wpath = ("metadata", "annotations", HIERARCHY_WEIGHTS_ANNOTATION)
    hpath = ("metadata", "annotations", HIERARCHY_ANNOTATION)
    paths, ws = hierarchy.split("/"), weights.split("/")
    if not hierarchy or not weights or len(paths) != len(ws):
        r.error(wpath if weights else hpath,
                f"{HIERARCHY_ANNOTATION} ({hierarchy!r}, {len(paths) if hierarchy else 0} levels) and "
                f"{HIERARCHY_WEIGHTS_ANNOTATION} ({weights!r}, {len(ws) if weights else 0} weights) must have the "
                f"same number of '/'-separated parts; give one weight per level")
        return r.items
    for w in ws:
        if not _POSITIVE_NUMBER.match(w) or float(w) <= 0:
            r.error(wpath, f"weight {w!r} in {weights!r} is not a number above 0; use positive numbers such as "
                           f"1/2/3")
            return r.items
    for other in world.queues.values():
        theirs = other.annotations.get(HIERARCHY_ANNOTATION, "")
        if other.name != queue.name and theirs and theirs.startswith(hierarchy + "/"):
            r.error(hpath, f"{hierarchy!r} is a prefix of queue {other.name}'s hierarchy {theirs!r}; a queue "
                           f"cannot sit on an inner node of another queue's path, choose a leaf path")
            break
    return r.items


def check_queue_tree(world: World) -> list[Problem]:
    """Sums over siblings: children's guarantee (and deserved) within the parent's, and within its capability;
    root's children's guarantees within the cluster's allocatable when nodes are given."""
    out: list[Problem] = []
    for parent in world.queues.values():
        children = [c for c in world.children_of(parent.name) if not is_builtin(c)]
        if not children:
            continue
        if parent.name == ROOT_QUEUE:
            if world.nodes:
                out += _check_root_children(world, children)
            continue
        for sec, base in _QUEUE_SECTIONS[1:]:  # deserved, guarantee
            out += _check_sibling_sum(parent, children, sec, base)
    return out


def _check_sibling_sum(parent: Queue, children: list[Queue], sec: str, base: tuple) -> list[Problem]:
    out: list[Problem] = []
    word = "guarantees" if sec == "guarantee" else "deserved amounts"
    own = resources_of(_section(parent, sec))
    own_names = set(_section(parent, sec))
    cap = parent.capability()
    cap_names = set(parent.spec.capability)
    names = sorted({n for c in children for n in _section(c, sec)})
    unbounded: list[str] = []
    for name in names:
        total = 0
        parts: list[str] = []
        reported = False
        for child in children:
            amount = resources_of(_section(child, sec))[name] if name in _section(child, sec) else 0
            if amount == 0:
                continue
            total += amount
            parts.append(f"{child.name} {Resources({name: amount}).quantity_text(name)}")
            bounds = []
            if name in own_names:
                bounds.append((sec, own[name]))
            if name in cap_names and cap[name] > 0:
                bounds.append(("capability", cap[name]))
            for bound_kind, limit in bounds:
                if total > limit and not reported:
                    fix = "raise the parent's " + bound_kind
                    out.append(problem(
                        child, base + (name,),
                        f"{word} of the children of {parent.name} sum to {_res(name, total)} "
                        f"({', '.join(parts)}) but parent {parent.name} has {bound_kind} {_res(name, limit)}; "
                        f"lower a child's {sec} or {fix}",
                    ))
                    reported = True
        if name not in own_names and total > 0:
            unbounded.append(f"{_res(name, total)}")
    if unbounded:
        # Volcano v1.15+ compares the children's sum with the parent's own guarantee/deserved, a missing
        # resource counting as zero, so it rejects these children; magma only bounds them by capability.
        target = parent if not is_builtin(parent) else children[0]
        out.append(problem(
            target, base,
            f"children of {parent.name} set {sec} ({', '.join(unbounded)} in total) but {parent.name} sets no "
            f"{sec} for it; Volcano v1.15+ rejects such child queues: give {parent.name} a {sec} of at least "
            f"that much to stay compatible",
            "warning",
        ))
    return out


def _check_root_children(world: World, children: list[Queue]) -> list[Problem]:
    out: list[Problem] = []
    cluster = world.total_allocatable()
    gpath = _QUEUE_SECTIONS[2][1]
    names = sorted({n for c in children for n in c.spec.guarantee.resource})
    for name in names:
        total = 0
        parts: list[str] = []
        for child in children:
            amount = child.guarantee()[name]
            if amount <= 0:
                continue
            total += amount
            parts.append(f"{child.name} {Resources({name: amount}).quantity_text(name)}")
            if total > cluster[name]:
                have = _res(name, cluster[name])
                out.append(problem(
                    child, gpath + (name,),
                    f"guarantees of root's children sum to {_res(name, total)} ({', '.join(parts)}) but the "
                    f"cluster's {len(world.nodes)} node(s) have {have} allocatable in total; lower a guarantee or "
                    f"add nodes",
                ))
                break
    return out


def check_queue_delete(world: World, queue_name: str) -> list[Problem]:
    """Why the queue cannot be deleted (empty when it can)."""
    q = world.queues.get(queue_name)
    path = ("metadata", "name")

    def refuse(message: str) -> list[Problem]:
        if q is None:
            return [Problem("<command>", 0, "Queue", queue_name, dotted(path), message)]
        return [problem(q, path, message)]

    if queue_name == DEFAULT_QUEUE:
        return refuse("the `default` queue cannot be deleted: jobs and PodGroups without a queue go there")
    if queue_name == ROOT_QUEUE:
        return refuse("the `root` queue cannot be deleted: it is the top of the queue tree")
    if q is None:
        return refuse(f"there is no queue named {queue_name!r}{_did_you_mean(queue_name, world.queues)}")
    out: list[Problem] = []
    children = world.children_of(queue_name)
    if children:
        out += refuse(f"queue {queue_name} has {len(children)} child queue(s): "
                      f"{_names(c.name for c in children)}; delete or re-parent them first")
    users = [f"PodGroup {pg.key}" for pg in world.podgroups.values()
             if (pg.spec.queue or DEFAULT_QUEUE) == queue_name]
    users += [f"Job {j.key}" for j in world.jobs.values() if (j.spec.queue or DEFAULT_QUEUE) == queue_name]
    if users:
        out += refuse(f"queue {queue_name} still has {len(users)} PodGroup(s)/Job(s): {_names(users)}; stop and "
                      f"delete them (or move them to another queue) before deleting the queue")
    return out


# ---------------------------------------------------------------- Job


def _queue_reference(world: World, r: _Report, qname: str, path: tuple, what: str, strict_leaf: bool) -> None:
    q = world.queues.get(qname)
    if q is None:
        leaves = [n for n, x in world.queues.items() if n != ROOT_QUEUE and not world.children_of(n)]
        r.error(path, f"queue {qname!r} does not exist{_did_you_mean(qname, world.queues)}; create it or submit "
                      f"the {what} to an existing queue ({_names(leaves)})")
        return
    if q.state != "Open":
        r.error(path, f"queue {qname} is {q.state}; only Open queues accept a {what}: open the queue or use "
                      f"another one")
    if qname == ROOT_QUEUE:
        if strict_leaf:
            r.error(path, f"a {what} cannot be submitted to the root queue; submit it to a leaf queue")
        else:
            r.warn(path, f"the root queue runs no {what}s itself; submit it to a leaf queue (Volcano's webhook "
                         f"accepts it, but with hierarchical queues only leaf queues run jobs)")
        return
    children = world.children_of(qname)
    if children:
        msg = (f"queue {qname} has {len(children)} child queue(s) ({_names(c.name for c in children)}); only "
               f"leaf queues take jobs: submit the {what} to one of them")
        if strict_leaf:
            r.error(path, msg)
        else:
            r.warn(path, msg + " (Volcano's PodGroup webhook accepts it, but with hierarchical queues it never "
                               "runs)")


def _priority_class_reference(world: World, r: _Report, name: str | None, path: tuple) -> None:
    if name and name not in world.priority_classes:
        r.error(path, f"PriorityClass {name!r} does not exist{_did_you_mean(name, world.priority_classes)}; "
                      f"create it before this object (Kubernetes rejects pods that name a missing PriorityClass)")


def check_job(world: World, job: Job) -> list[Problem]:
    """Volcano's Job admission rules, on the job with its defaults applied."""
    d = default_job(job)
    r = _Report(job)
    spec, raw = d.spec, job.spec

    # Name: an object name (DNS-1123 subdomain) that Volcano also requires to be a qualified name (<= 63).
    name_ok = True
    if len(job.name) > 63 or not _DNS1123_SUBDOMAIN.match(job.name) or not _QUALIFIED_NAME.match(job.name):
        name_ok = False
        r.error(("metadata", "name"),
                f"job name {job.name!r} is invalid: it "
                + (f"is {len(job.name)} characters long, at most 63 are allowed" if len(job.name) > 63 else
                   "must consist of lower-case letters, digits, '-' and '.', and start and end with a letter or "
                   "digit")
                + "; rename the job")

    for key, value in (("minAvailable", raw.min_available), ("maxRetry", raw.max_retry),
                       ("ttlSecondsAfterFinished", raw.ttl_seconds_after_finished)):
        if value is not None and value < 0:
            r.error(("spec", key), f"{key} {value} is negative; use 0 or more")

    if not spec.tasks:
        r.error(("spec", "tasks"), "the job has no tasks; add at least one task with replicas and a pod template")

    plugins = spec.plugins
    svc_on = "svc" in plugins or any(p in plugins for p in PLUGINS_NEEDING_SVC)
    seen: dict[str, int] = {}
    total = 0
    for i, task in enumerate(spec.tasks):
        base = ("spec", "tasks", i)
        raw_task = raw.tasks[i]
        total += max(task.replicas, 0)
        tname = task.name or ""
        task_name_ok = True
        if raw_task.name:
            why = _label_problems(tname)
            if why:
                task_name_ok = False
                r.error(base + ("name",), f"task name {tname!r} {why} (a DNS-1123 label); rename the task")
        if tname in seen:
            task_name_ok = False
            r.error(base + ("name",), f"duplicate task name {tname!r}: task {seen[tname]} has the same name; "
                                      f"give every task a distinct name")
        else:
            seen[tname] = i
        if task.replicas < 0:
            r.error(base + ("replicas",), f"replicas {task.replicas} is negative; use 0 or more")
        if task.min_available is not None:
            if task.min_available < 0:
                r.error(base + ("minAvailable",), f"minAvailable {task.min_available} is negative; use 0 or more")
            elif task.min_available > task.replicas:
                r.error(base + ("minAvailable",),
                        f"minAvailable {task.min_available} is greater than replicas {task.replicas} in task "
                        f"{tname}; lower minAvailable to at most {task.replicas} or raise replicas")
        if raw_task.max_retry is not None and raw_task.max_retry < 0:
            r.error(base + ("maxRetry",), f"maxRetry {raw_task.max_retry} is negative; use 0 or more")
        r.items += _check_policies(job, task.policies, base + ("policies",))

        pod_spec = task.template.spec
        if not pod_spec.containers:
            r.error(base + ("template", "spec", "containers"),
                    "the pod template has no containers; add at least one container")
        else:
            for c_i, c in enumerate(pod_spec.containers):
                if not c.name:
                    r.error(base + ("template", "spec", "containers", c_i, "name"),
                            "the container has no name; every container needs a name (a DNS-1123 label)")
        _priority_class_reference(world, r, pod_spec.priority_class_name,
                                  base + ("template", "spec", "priorityClassName"))

        # Pod names: Volcano checks `<job>-<task>-<task index>`; the pods are `<job>-<task>-<replica index>`.
        if name_ok and task_name_ok:
            volcano_name = f"{job.name}-{tname}-{i}"
            longest = f"{job.name}-{tname}-{max(task.replicas - 1, 0)}"
            npath = base + ("name",)
            if len(volcano_name) > 63:
                r.error(npath, f"pod names such as {volcano_name!r} would be {len(volcano_name)} characters, more "
                               f"than the 63 Volcano allows; shorten the job or task name")
            elif len(longest) > 63:
                msg = (f"the pod name {longest!r} would be {len(longest)} characters, more than 63")
                if svc_on:
                    r.error(npath, msg + "; the svc plugin uses pod names as host names, which Kubernetes limits "
                                         "to 63 characters: shorten the job or task name")
                else:
                    r.warn(npath, msg + "; pod host names are cut at 63 characters: shorten the job or task name")

        depends = task.depends_on
        if depends is not None:
            names = depends.get("name") if isinstance(depends, dict) else None
            if isinstance(names, str):
                names = [names]
            if isinstance(names, list):
                task_names = [t.name for t in spec.tasks]
                for k, dep in enumerate(names):
                    if dep not in task_names:
                        r.error(base + ("dependsOn", "name", k),
                                f"task {tname} depends on task {dep!r}, which the job does not have"
                                f"{_did_you_mean(str(dep), [n for n in task_names if n])}; name one of its tasks")

    r.items += _check_task_cycle(job, spec)

    if raw.min_available and raw.min_available > total and spec.tasks:
        r.error(("spec", "minAvailable"),
                f"minAvailable {raw.min_available} is greater than the {total} replicas of all tasks together; "
                f"lower minAvailable to at most {total} or add replicas")
    if raw.min_success is not None and spec.tasks and raw.min_success > total:
        r.warn(("spec", "minSuccess"), f"minSuccess {raw.min_success} is greater than the {total} replicas of all "
                                       f"tasks; the job can never complete: lower it to at most {total}")

    for pname in plugins:
        if pname not in JOB_PLUGINS:
            r.error(("spec", "plugins", pname), f"unknown job plugin {pname!r}{_did_you_mean(pname, JOB_PLUGINS)}; "
                                                f"known plugins: {', '.join(JOB_PLUGINS)}")
    if "mpi" in plugins:
        master = _flag_value(plugins.get("mpi") or [], "master") or MPI_DEFAULT_MASTER
        if master not in [t.name for t in spec.tasks]:
            r.error(("spec", "plugins", "mpi"),
                    f"the mpi plugin's master task {master!r} is not a task of this job; name a task {master!r} "
                    f"or pass --master=<task> to the plugin")

    r.items += _check_policies(job, spec.policies, ("spec", "policies"))
    _queue_reference(world, r, spec.queue or DEFAULT_QUEUE, ("spec", "queue"), "job", strict_leaf=True)
    _priority_class_reference(world, r, spec.priority_class_name, ("spec", "priorityClassName"))

    if spec.scheduler_name and spec.scheduler_name not in world.scheduler_names:
        r.warn(("spec", "schedulerName"),
               f"schedulerName {spec.scheduler_name!r} is not one of {', '.join(world.scheduler_names)}; the job's "
               f"pods go to that scheduler, not to magma/Volcano: remove it or set schedulerName: volcano")

    # Pitfall 3: minAvailable 1 on a multi-pod job turns gang scheduling off.
    if spec.min_available == 1 and total > 1:
        path = ("spec", "minAvailable")
        if not raw.min_available:
            path = next((("spec", "tasks", i, "minAvailable") for i, t in enumerate(raw.tasks)
                         if t.min_available is not None), path)
        r.warn(path, f"minAvailable is 1 for a job of {total} pods, so gang scheduling is effectively off: pods "
                     f"start one by one and a half-placed job holds resources; set minAvailable to {total} (or to "
                     f"the real minimum the training needs)")
    return r.items


def _flag_value(args: list, flag: str) -> str | None:
    """The value of `--flag=value`, `-flag=value` or `--flag value` in Go-style plugin arguments."""
    for k, arg in enumerate(args):
        if not isinstance(arg, str):
            continue
        for prefix in (f"--{flag}=", f"-{flag}="):
            if arg.startswith(prefix):
                return arg[len(prefix):]
        if arg in (f"--{flag}", f"-{flag}") and k + 1 < len(args) and isinstance(args[k + 1], str):
            return args[k + 1]
    return None


def _check_task_cycle(job: Job, spec) -> list[Problem]:
    graph: dict[str, list[str]] = {}
    for t in spec.tasks:
        names = t.depends_on.get("name") if isinstance(t.depends_on, dict) else None
        if isinstance(names, str):
            names = [names]
        graph[t.name or ""] = [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
    if not any(graph.values()):
        return []
    state: dict[str, int] = {}

    def visit(n: str, stack: list[str]) -> list[str] | None:
        state[n] = 1
        for m in graph.get(n, []):
            if m not in graph:
                continue
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m] if m in stack else [n, m]
            if state.get(m) is None:
                found = visit(m, stack + [m])
                if found:
                    return found
        state[n] = 2
        return None

    for n in graph:
        if state.get(n) is None:
            cycle = visit(n, [n])
            if cycle:
                idx = next(i for i, t in enumerate(spec.tasks) if (t.name or "") == cycle[0])
                return [problem(job, ("spec", "tasks", idx, "dependsOn"),
                                f"task dependencies form a cycle ({' -> '.join(cycle)}); dependsOn must form a "
                                f"directed acyclic graph: remove one dependency")]
    return []


def _check_policies(obj: Object, policies: list[LifecyclePolicy], base: tuple) -> list[Problem]:
    r = _Report(obj)
    events_seen: dict[str, tuple] = {}
    codes_seen: dict[int, tuple] = {}
    valid = ", ".join(POLICY_EVENTS)
    actions = ", ".join(POLICY_ACTIONS)
    for j, p in enumerate(policies):
        pb = base + (j,)
        has_event = bool(p.event) or bool(p.events)
        has_code = p.exit_code is not None
        if has_event and has_code:
            r.error(pb + ("exitCode",), "the policy sets both an event and exitCode; a policy reacts to events or "
                                        "to an exit code, not both: split it into two policies")
            continue
        if not has_event and not has_code:
            r.error(pb, "the policy sets neither event(s) nor exitCode; give it an event (e.g. PodFailed) or a "
                        "non-zero exitCode, and an action")
            continue
        if p.timeout is not None and not _GO_DURATION.match(str(p.timeout)):
            r.error(pb + ("timeout",), f"timeout {p.timeout!r} is not a duration; write e.g. 30s, 10m or 1h30m")
        if has_event:
            if p.action not in POLICY_ACTIONS:
                r.error(pb + ("action",) if p.action else pb,
                        (f"unknown action {p.action!r}{_did_you_mean(p.action, POLICY_ACTIONS)}" if p.action
                         else "the policy has no action") + f"; valid actions are {actions}")
            listed: list[tuple[str, tuple]] = [(e, pb + ("events", k)) for k, e in enumerate(p.events)]
            if p.event:
                listed.append((p.event, pb + ("event",)))
            within: set[str] = set()
            for ev, path in listed:
                if ev in within:
                    continue
                within.add(ev)
                if ev not in POLICY_EVENTS:
                    r.error(path, f"unknown event {ev!r}{_did_you_mean(ev, POLICY_EVENTS)}; valid events are "
                                  f"{valid}")
                elif ev in events_seen:
                    r.error(path, f"event {ev} already has a policy ({dotted(events_seen[ev])}); one policy per "
                                  f"event: merge them")
                else:
                    events_seen[ev] = path
        else:
            code = p.exit_code
            if code == 0:
                r.error(pb + ("exitCode",), "exitCode 0 means success and cannot trigger a policy; use a non-zero "
                                            "exit code")
            elif code in codes_seen:
                r.error(pb + ("exitCode",), f"exitCode {code} already has a policy ({dotted(codes_seen[code])}); "
                                            f"one policy per exit code: merge them")
            else:
                codes_seen[code] = pb + ("exitCode",)  # type: ignore[index]
            if p.action and p.action not in POLICY_ACTIONS:
                r.error(pb + ("action",), f"unknown action {p.action!r}{_did_you_mean(p.action, POLICY_ACTIONS)}; "
                                          f"valid actions are {actions}")
            elif not p.action:
                r.warn(pb, f"the policy for exitCode {code} has no action, so it does nothing; add an action "
                           f"({actions})")
    if ANY_EVENT in events_seen and len(events_seen) > 1:
        others = [e for e in events_seen if e != ANY_EVENT]
        r.error(events_seen[ANY_EVENT], f"event '*' covers every event, so no other event may have a policy in the "
                                        f"same list (found {', '.join(others)}); drop '*' or the others")
    return r.items


def check_job_update(old: Job, new: Job) -> list[Problem]:
    """Volcano's update rule: only minAvailable, tasks[*].replicas, tasks[*].minAvailable and priorityClassName
    may change; tasks may not be added or removed; the new counts must be consistent."""
    o, n = default_job(old), default_job(new)
    r = _Report(new)
    total = 0
    for i, task in enumerate(n.spec.tasks):
        base = ("spec", "tasks", i)
        if task.replicas < 0:
            r.error(base + ("replicas",), f"replicas {task.replicas} is negative; use 0 or more")
        if task.min_available is not None:
            if task.min_available < 0:
                r.error(base + ("minAvailable",), f"minAvailable {task.min_available} is negative; use 0 or more")
            elif task.min_available > task.replicas:
                r.error(base + ("minAvailable",), f"minAvailable {task.min_available} is greater than replicas "
                                                  f"{task.replicas}; lower it or raise replicas")
        total += max(task.replicas, 0)
    ma = n.spec.min_available or 0
    if ma < 0:
        r.error(("spec", "minAvailable"), f"minAvailable {ma} is negative; use 0 or more")
    elif ma > total:
        r.error(("spec", "minAvailable"), f"minAvailable {ma} is greater than the {total} replicas of all tasks; "
                                          f"lower it or add replicas")
    if len(o.spec.tasks) != len(n.spec.tasks):
        r.error(("spec", "tasks"), f"job updates may not add or remove tasks (the job has {len(o.spec.tasks)}, the "
                                   f"update has {len(n.spec.tasks)}); delete and recreate the job instead")
        return r.items
    old_spec, new_spec = _plain(o.spec), _plain(n.spec)
    for spec_ in (old_spec, new_spec):
        spec_.pop("minAvailable", None)
        spec_.pop("priorityClassName", None)
        for t in spec_.get("tasks", []):
            t.pop("replicas", None)
            t.pop("minAvailable", None)
    for path in _diff(old_spec, new_spec, ("spec",))[:10]:
        r.error(path, "this field may not change on update: only minAvailable, tasks[*].replicas, "
                      "tasks[*].minAvailable and priorityClassName can; delete and recreate the job to change it")
    return r.items


def _plain(value: Any) -> Any:
    """A model as plain data for semantic comparison: API names, quantities by value, empty values dropped."""
    if isinstance(value, BaseModel):
        out: dict[str, Any] = {}
        for name, f in type(value).model_fields.items():
            out[f.alias or name] = _plain(getattr(value, name))
        for k, v in (value.model_extra or {}).items():
            out[k] = _plain(v)
        return {k: v for k, v in out.items() if v not in (None, {}, [], "")}
    if isinstance(value, Quantity):
        return ("quantity", value.value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if _plain(v) not in (None, {}, [], "")}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _diff(a: Any, b: Any, path: tuple) -> list[tuple]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[tuple] = []
        for k in list(a) + [k for k in b if k not in a]:
            if a.get(k) != b.get(k):
                out += _diff(a.get(k), b.get(k), path + (k,))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                out += _diff(x, y, path + (i,))
        return out
    return [path] if a != b else []


# ---------------------------------------------------------------- PodGroup


def check_podgroup(world: World, podgroup: PodGroup) -> list[Problem]:
    d = default_podgroup(podgroup)
    r = _Report(podgroup)
    _queue_reference(world, r, d.spec.queue or DEFAULT_QUEUE, ("spec", "queue"), "PodGroup", strict_leaf=False)
    _priority_class_reference(world, r, d.spec.priority_class_name, ("spec", "priorityClassName"))
    mm = d.spec.min_member
    if mm < 0:
        r.error(("spec", "minMember"), f"minMember {mm} is negative; use 1 or more")
    for task, n in d.spec.min_task_member.items():
        if n < 0:
            r.error(("spec", "minTaskMember", task), f"minTaskMember {task}: {n} is negative; use 0 or more")
    for name, qty in d.spec.min_resources.items():
        if qty.value < 0:
            r.error(("spec", "minResources", name), f"minResources {name}: {qty.text} is negative; use 0 or more")
    members = world.pods_of_group(podgroup.namespace, podgroup.name)
    if mm == 0:
        r.warn(("spec", "minMember"), "minMember 0 turns gang scheduling off: every pod starts on its own; set it "
                                      "to the number of pods that must run together")
    elif mm == 1 and len(members) > 1:
        r.warn(("spec", "minMember"), f"minMember is 1 but {len(members)} pods belong to this PodGroup, so gang "
                                      f"scheduling is effectively off; set minMember to {len(members)} (or the real "
                                      f"minimum the training needs)")
    elif 0 < len(members) < mm:
        r.warn(("spec", "minMember"), f"minMember is {mm} but only {len(members)} pod(s) in these manifests belong "
                                      f"to this PodGroup ({_names(p.name for p in members)}); the gang can never "
                                      f"be complete, so they wait forever: add pods or lower minMember")
    return r.items


# ---------------------------------------------------------------- Pod


def check_pod(world: World, pod: Pod) -> list[Problem]:
    r = _Report(pod)
    if not pod.spec.containers:
        r.error(("spec", "containers"), "the pod has no containers; add at least one container")
    _priority_class_reference(world, r, pod.spec.priority_class_name, ("spec", "priorityClassName"))
    scheduler = pod.spec.scheduler_name or "default-scheduler"
    ours = scheduler in world.scheduler_names

    group = pod.group_name
    if group:
        key = next((k for k in GROUP_NAME_KEYS if pod.annotations.get(k)), None)
        gpath = ("metadata", "annotations", key) if key else ("metadata", "labels", GROUP_NAME_LABEL)
        if f"{pod.namespace}/{group}" not in world.podgroups:
            elsewhere = world.podgroup_namespaces(group)
            if elsewhere:
                r.warn(gpath, f"PodGroup {group} exists only in namespace {', '.join(elsewhere)}, not in this pod's "
                              f"namespace {pod.namespace}; Volcano ignores a group annotation that points to another "
                              f"namespace (PodGroups are namespaced), so the pod is never gang-scheduled: create the "
                              f"pod in {elsewhere[0]} or a PodGroup {group} in {pod.namespace}")
            else:
                r.warn(gpath, f"no PodGroup named {group} in namespace {pod.namespace}; the pod waits until that "
                              f"PodGroup exists: create it or fix the name")
        if not ours:
            spath = ("spec", "schedulerName")
            r.warn(spath, f"the pod names PodGroup {group} but its schedulerName is {scheduler!r}, so the "
                          f"default scheduler (not Volcano/magma) places it one pod at a time and the gang is "
                          f"ignored; set spec.schedulerName: volcano")
    if ours:
        found = [k for k in JDB_ANNOTATIONS if k in pod.annotations]
        if len(found) > 1:
            r.error(("metadata", "annotations", found[1]),
                    f"{found[0]} and {found[1]} cannot be set together; keep one of them")
        for k in found:
            why = _jdb_value_problem(pod.annotations[k])
            if why:
                r.error(("metadata", "annotations", k), f"{k}: {pod.annotations[k]!r} {why}")
    if world.nodes and pod.spec.node_name and pod.spec.node_name not in world.nodes:
        r.warn(("spec", "nodeName"), f"node {pod.spec.node_name!r} is not among the given nodes"
                                     f"{_did_you_mean(pod.spec.node_name, world.nodes)}; the pod cannot run there")
    return r.items


def _jdb_value_problem(value: str) -> str | None:
    v = value.strip()
    if v.endswith("%"):
        try:
            pct = int(v[:-1])
        except ValueError:
            return "is not a percentage; write e.g. 50%"
        if not 0 < pct < 100:
            return "must be a percentage between 1% and 99%"
        return None
    try:
        n = int(v)
    except ValueError:
        return "is neither a positive integer nor a percentage; write e.g. 2 or 50%"
    if n <= 0:
        return "must be a positive integer"
    return None


__all__ = [
    "World",
    "admit",
    "apply_defaults",
    "check_duplicates",
    "check_global_default",
    "check_job",
    "check_job_update",
    "check_pod",
    "check_podgroup",
    "check_priority_class",
    "check_queue",
    "check_queue_delete",
    "check_queue_tree",
    "dotted",
    "problem",
    "SCHEDULER_NAMES",
    "JOB_PLUGINS",
    "POLICY_EVENTS",
    "POLICY_ACTIONS",
    "MAX_QUEUE_DEPTH",
]
