"""Builders for plugin unit tests: cluster objects, configs, and a session with chosen plugins opened.

Tests open sessions directly (snapshot + config + the plugins under test), without running any action.
"""

from __future__ import annotations

import textwrap
from typing import Any, Iterable

from magma.api.config import default_config, parse_config
from magma.api.defaults import builtin_queues
from magma.api.objects import Node, Pod, PodGroup, PriorityClass, Queue
from magma.cluster.memory import MemoryCluster
from magma.scheduler.framework import PLUGINS, Session, build

import magma.scheduler.plugins  # noqa: F401,E402  (registers the plugins)


def node(name: str, gpu: int = 8, cpu: int = 96, memory: str = "1Ti", labels: dict | None = None) -> Node:
    alloc: dict[str, Any] = {"cpu": str(cpu), "memory": memory, "pods": "110"}
    if gpu:
        alloc["nvidia.com/gpu"] = str(gpu)
    return Node.model_validate({"apiVersion": "v1", "kind": "Node",
                                "metadata": {"name": name, "labels": labels or {}},
                                "status": {"allocatable": alloc}})


def nodes(prefix: str, count: int, **kw) -> list[Node]:
    return [node(f"{prefix}-{i}", **kw) for i in range(count)]


def queue(name: str, weight: int = 1, parent: str | None = None, guarantee: dict | None = None,
          capability: dict | None = None, deserved: dict | None = None, reclaimable: bool | None = None,
          priority: int | None = None, state: str | None = None, annotations: dict | None = None,
          creation: float = 0.0) -> Queue:
    spec: dict[str, Any] = {"weight": weight}
    if parent:
        spec["parent"] = parent
    if guarantee:
        spec["guarantee"] = {"resource": {k: str(v) for k, v in guarantee.items()}}
    if capability:
        spec["capability"] = {k: str(v) for k, v in capability.items()}
    if deserved:
        spec["deserved"] = {k: str(v) for k, v in deserved.items()}
    if reclaimable is not None:
        spec["reclaimable"] = reclaimable
    if priority is not None:
        spec["priority"] = priority
    return Queue.model_validate({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                 "metadata": {"name": name, "annotations": annotations or {},
                                              "uid": f"q-{name}", "creationTimestamp": creation},
                                 "spec": spec, "status": {"state": state or "Open"}})


def podgroup(name: str, queue: str = "default", ns: str = "default", min_member: int = 1,
             min_resources: dict | None = None, phase: str | None = None, priority_class: str | None = None,
             creation: float = 0.0, annotations: dict | None = None, min_task_member: dict | None = None,
             conditions: list | None = None) -> PodGroup:
    spec: dict[str, Any] = {"minMember": min_member, "queue": queue}
    if min_resources:
        spec["minResources"] = {k: str(v) for k, v in min_resources.items()}
    if priority_class:
        spec["priorityClassName"] = priority_class
    if min_task_member:
        spec["minTaskMember"] = min_task_member
    status: dict[str, Any] = {}
    if phase:
        status["phase"] = phase
    if conditions:
        status["conditions"] = conditions
    return PodGroup.model_validate({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                                    "metadata": {"name": name, "namespace": ns, "uid": f"pg-{ns}-{name}",
                                                 "creationTimestamp": creation,
                                                 "annotations": annotations or {}},
                                    "spec": spec, "status": status})


def pod(name: str, group: str, ns: str = "default", gpu: int = 0, cpu: float = 1, memory: str = "1Gi",
        node: str | None = None, phase: str | None = None, priority: int | None = None, role: str = "",
        annotations: dict | None = None, priority_class: str | None = None, creation: float = 0.0,
        labels: dict | None = None) -> Pod:
    req: dict[str, Any] = {"cpu": str(cpu)}
    if memory:
        req["memory"] = memory
    if gpu:
        req["nvidia.com/gpu"] = str(gpu)
    ann = {"scheduling.k8s.io/group-name": group, **(annotations or {})}
    if role:
        ann["volcano.sh/task-spec"] = role
    spec: dict[str, Any] = {"schedulerName": "volcano",
                            "containers": [{"name": "c", "resources": {"requests": req}}]}
    if node:
        spec["nodeName"] = node
    if priority is not None:
        spec["priority"] = priority
    if priority_class:
        spec["priorityClassName"] = priority_class
    if phase is None:
        phase = "Running" if node else "Pending"
    return Pod.model_validate({"apiVersion": "v1", "kind": "Pod",
                               "metadata": {"name": name, "namespace": ns, "uid": f"pod-{ns}-{name}",
                                            "annotations": ann, "labels": labels or {},
                                            "creationTimestamp": creation},
                               "spec": spec, "status": {"phase": phase}})


def gang(name: str, n: int, queue: str = "default", ns: str = "default", gpu: int = 8, cpu: float = 8,
         memory: str = "64Gi", running_on: list[str] | None = None, min_member: int | None = None,
         with_min_resources: bool = False, phase: str | None = None, priority_class: str | None = None,
         creation: float = 0.0, role: str = "worker", annotations: dict | None = None, **pg) -> list:
    """A PodGroup with n identical pods; the first len(running_on) run on those nodes."""
    running_on = running_on or []
    mm = n if min_member is None else min_member
    min_res = None
    if with_min_resources:
        min_res = {"cpu": cpu * mm, "memory": memory_times(memory, mm)}
        if gpu:
            min_res["nvidia.com/gpu"] = gpu * mm
    if phase is None:
        phase = "Running" if len(running_on) >= mm and mm > 0 else ("Inqueue" if running_on else "Pending")
    objs: list = [podgroup(name, queue=queue, ns=ns, min_member=mm, min_resources=min_res, phase=phase,
                           priority_class=priority_class, creation=creation, annotations=annotations, **pg)]
    for i in range(n):
        objs.append(pod(f"{name}-{role}-{i}", name, ns=ns, gpu=gpu, cpu=cpu, memory=memory,
                        node=running_on[i] if i < len(running_on) else None, role=role,
                        priority_class=priority_class, creation=creation))
    return objs


def memory_times(memory: str, k: int) -> str:
    num = "".join(ch for ch in memory if ch.isdigit())
    unit = memory[len(num):]
    return f"{int(num) * k}{unit}"


def priority_class(name: str, value: int) -> PriorityClass:
    return PriorityClass.model_validate({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                         "metadata": {"name": name}, "value": value})


def config(text: str | None = None):
    if text is None:
        return default_config()
    result = parse_config(textwrap.dedent(text))
    assert result.config is not None, result.messages()
    return result.config


def tiers_config(*tiers: Iterable[str | dict]):
    """A config from tiers of plugin names (or full plugin dicts)."""
    import yaml

    doc = {"actions": "enqueue, allocate", "tiers": [
        {"plugins": [p if isinstance(p, dict) else {"name": p} for p in tier]} for tier in tiers]}
    return config(yaml.safe_dump(doc))


def open_session(objects: list, conf=None, plugins: Iterable[str] | None = None, now: float = 0.0,
                 cluster: MemoryCluster | None = None) -> Session:
    """Snapshot + session, opening the named plugins (default: every configured plugin we implement)."""
    conf = conf if conf is not None else default_config()
    if cluster is None:
        have = {o.name for o in objects if isinstance(o, Queue)}
        objects = list(objects) + [q for q in builtin_queues() if q.name not in have]
        cluster = MemoryCluster(objects, clock=lambda: now)
    else:
        cluster.clock = lambda: now
    snap = build(cluster.state())
    tiers = [list(t.plugins) for t in conf.tiers]
    ssn = Session(snap, conf, tiers, cluster)
    ssn.uid = "test-session"
    wanted = set(plugins) if plugins is not None else None
    for tier in tiers:
        for opt in tier:
            if wanted is not None and opt.name not in wanted:
                continue
            cls = PLUGINS.get(opt.name)
            if cls is None:
                continue
            p = cls(dict(opt.arguments or {}))
            ssn.plugins[opt.name] = p
            p.on_session_open(ssn)
    return ssn


def close(ssn: Session) -> None:
    for p in ssn.plugins.values():
        fn = getattr(p, "on_session_close", None)
        if fn:
            fn(ssn)


def job(ssn: Session, name: str, ns: str = "default"):
    return next(j for j in ssn.jobs.values() if j.key == f"{ns}/{name}")


def task(ssn: Session, name: str, ns: str = "default"):
    return next(t for j in ssn.jobs.values() for t in j.tasks.values() if t.name == name and t.namespace == ns)


def gpus(res) -> float:
    return res["nvidia.com/gpu"] / 1000


MINE = ("gang", "priority", "conformance", "drf", "proportion", "capacity", "overcommit", "sla", "fairshare")
