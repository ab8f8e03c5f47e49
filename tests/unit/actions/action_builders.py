"""Builders for action tests: small clusters written as YAML, a MemoryCluster, a Scheduler, and helpers to read
back what a session did.

    world = World(nodes_yaml("gpu", 4, gpu=8) + queue_yaml("team", weight=1) + gang_yaml("a", "team", 4, gpu=8))
    result = world.run(CONF)             # one Scheduler.run_once on the in-memory cluster
    world.bound("a")                     # {pod name: node}
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Iterable

import yaml

from magma.api.config import config_from_configmap, parse_config
from magma.api.defaults import builtin_queues
from magma.api.load import load_text
from magma.api.objects import Pod, Queue
from magma.cluster.memory import MemoryCluster
from magma.scheduler.framework import Session, build
from magma.scheduler.scheduler import Scheduler, SessionResult


def config(text: str):
    result = parse_config(textwrap.dedent(text))
    assert result.config is not None, result.messages()
    return result.config


def conf(actions: str, *tiers: Iterable[str], extra: str = "") -> Any:
    """A config with the given actions and tiers of plugin names."""
    lines = [f'actions: "{actions}"', "tiers:"]
    for tier in tiers:
        lines.append("- plugins:")
        for p in tier:
            lines.append(f"  - name: {p}")
    return config("\n".join(lines) + "\n" + textwrap.dedent(extra))


def _doc(text: str) -> str:
    return "---\n" + textwrap.dedent(text).strip() + "\n"


def node_yaml(name: str, gpu: int = 8, cpu: int = 64, memory: str = "512Gi", labels: dict | None = None,
              taints: list[dict] | None = None, pods: int = 110) -> str:
    lab = "{" + ", ".join(f"{k}: \"{v}\"" for k, v in (labels or {}).items()) + "}"
    tnt = ""
    if taints:
        tnt = "\nspec:\n  taints:" + "".join(
            f"\n  - {{key: {t['key']}, value: \"{t.get('value', '')}\", effect: {t.get('effect', 'NoSchedule')}}}"
            for t in taints)
    gpu_line = f"\n    nvidia.com/gpu: \"{gpu}\"" if gpu else ""
    return _doc(f"""
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {lab}{tnt}
status:
  allocatable:
    cpu: "{cpu}"
    memory: {memory}
    pods: "{pods}"{gpu_line}
""")


def nodes_yaml(prefix: str, count: int, **kw) -> str:
    return "".join(node_yaml(f"{prefix}-{i}", **kw) for i in range(count))


def queue_yaml(name: str, weight: int = 1, parent: str | None = None, guarantee: dict | None = None,
               capability: dict | None = None, reclaimable: bool | None = None, state: str | None = None) -> str:
    spec = [f"weight: {weight}"]
    if parent:
        spec.append(f"parent: {parent}")
    if guarantee:
        spec.append("guarantee:\n    resource: {" + ", ".join(f"{k}: \"{v}\"" for k, v in guarantee.items()) + "}")
    if capability:
        spec.append("capability: {" + ", ".join(f"{k}: \"{v}\"" for k, v in capability.items()) + "}")
    if reclaimable is not None:
        spec.append(f"reclaimable: {str(reclaimable).lower()}")
    status = f"\nstatus:\n  state: {state}" if state else ""
    body = "\n  ".join(spec)
    return _doc(f"""
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: {name}
spec:
  {body}{status}
""")


def priority_class_yaml(name: str, value: int, never: bool = False) -> str:
    policy = "\npreemptionPolicy: Never" if never else ""
    return _doc(f"""
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: {name}
value: {value}{policy}
""")


def pod_yaml(name: str, group: str, ns: str = "default", gpu: int = 0, cpu: str = "1", memory: str = "1Gi",
             node: str | None = None, priority_class: str | None = None, role: str = "worker",
             annotations: dict | None = None, labels: dict | None = None, grace: int | None = None,
             never: bool = False, tolerations: list[dict] | None = None, node_selector: dict | None = None,
             best_effort: bool = False, anti_affinity_key: str | None = None, creation: float = 0,
             started: float | None = None, deadline: int | None = None) -> str:
    ann = {"scheduling.k8s.io/group-name": group, "volcano.sh/task-spec": role, **(annotations or {})}
    ann_text = "".join(f"\n    {k}: \"{v}\"" for k, v in ann.items())
    lab_text = "".join(f"\n    {k}: \"{v}\"" for k, v in (labels or {}).items())
    req = "{}" if best_effort else ("{cpu: \"" + cpu + "\", memory: " + memory
                                    + (f", nvidia.com/gpu: \"{gpu}\"" if gpu else "") + "}")
    extra = ""
    if node:
        extra += f"\n  nodeName: {node}"
    if priority_class:
        extra += f"\n  priorityClassName: {priority_class}"
    if grace is not None:
        extra += f"\n  terminationGracePeriodSeconds: {grace}"
    if never:
        extra += "\n  preemptionPolicy: Never"
    if deadline:
        extra += f"\n  activeDeadlineSeconds: {deadline}"
    if tolerations:
        extra += "\n  tolerations:" + "".join(
            f"\n  - {{key: {t['key']}, operator: Equal, value: \"{t.get('value', '')}\", effect: NoSchedule}}"
            for t in tolerations)
    if node_selector:
        extra += "\n  nodeSelector: {" + ", ".join(f"{k}: \"{v}\"" for k, v in node_selector.items()) + "}"
    if anti_affinity_key:
        extra += textwrap.indent(textwrap.dedent(f"""
            affinity:
              podAntiAffinity:
                requiredDuringSchedulingIgnoredDuringExecution:
                - topologyKey: {anti_affinity_key}
                  labelSelector:
                    matchLabels: {{group: {group}}}"""), "  ")
    phase = "Running" if node else "Pending"
    if node and started is not None:
        phase += f"\n  startTime: {started}"
    labels_block = f"\n  labels:{lab_text}" if lab_text else ""
    return _doc(f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {ns}
  creationTimestamp: {creation}
  annotations:{ann_text}{labels_block}
spec:
  schedulerName: volcano{extra}
  containers:
  - name: main
    resources:
      requests: {req}
status:
  phase: {phase}
""")


def podgroup_yaml(name: str, queue: str, min_member: int, ns: str = "default", min_resources: dict | None = None,
                  phase: str | None = None, priority_class: str | None = None,
                  annotations: dict | None = None, creation: float = 0) -> str:
    spec = [f"minMember: {min_member}", f"queue: {queue}"]
    if min_resources:
        spec.append("minResources: {" + ", ".join(f"{k}: \"{v}\"" for k, v in min_resources.items()) + "}")
    if priority_class:
        spec.append(f"priorityClassName: {priority_class}")
    ann = ""
    if annotations:
        ann = "\n  annotations:" + "".join(f"\n    {k}: \"{v}\"" for k, v in annotations.items())
    status = f"\nstatus:\n  phase: {phase}" if phase else ""
    body = "\n  ".join(spec)
    return _doc(f"""
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: {name}
  namespace: {ns}
  creationTimestamp: {creation}{ann}
spec:
  {body}{status}
""")


def gang_yaml(name: str, queue: str, replicas: int, gpu: int = 8, cpu: str = "8", memory: str = "64Gi",
              min_member: int | None = None, running_on: list[str] | None = None, ns: str = "default",
              priority_class: str | None = None, phase: str | None = None, min_resources: bool = False,
              grace: int | None = None, pod_kw: dict | None = None, pg_annotations: dict | None = None,
              creation: int = 0) -> str:
    """A PodGroup and its pods `<name>-<i>`; the first len(running_on) pods run on those nodes."""
    running_on = running_on or []
    mm = replicas if min_member is None else min_member
    if phase is None:
        phase = "Running" if len(running_on) >= mm else "Inqueue"
    mr = None
    if min_resources:
        mr = {"cpu": str(int(cpu) * mm), "memory": f"{int(memory[:-2]) * mm}{memory[-2:]}"}
        if gpu:
            mr["nvidia.com/gpu"] = str(gpu * mm)
    out = podgroup_yaml(name, queue, mm, ns=ns, min_resources=mr, phase=phase, priority_class=priority_class,
                        annotations=pg_annotations, creation=creation)
    for i in range(replicas):
        out += pod_yaml(f"{name}-{i}", name, ns=ns, gpu=gpu, cpu=cpu, memory=memory,
                        node=running_on[i] if i < len(running_on) else None, priority_class=priority_class,
                        grace=grace, creation=creation, **(pod_kw or {}))
    return out


def group_yaml(name: str, replicas: int, gpu: int, creation: float, runtime: str | None = None,
               phase: str = "Inqueue", nodes: list[str] | None = None, started: float = 0.0,
               priority_class: str | None = None, min_resources: bool = False, deadline: int | None = None,
               queue: str = "default") -> str:
    """A PodGroup and its `replicas` worker pods of 1 cpu, 1Gi and `gpu` GPUs each, Pending, or Running on `nodes`
    since `started`; `runtime` is the magma.io/expected-runtime estimate (e.g. "10m"); minResources counts GPUs."""
    mr = {"nvidia.com/gpu": str(gpu * replicas)} if min_resources else None
    out = podgroup_yaml(name, queue, replicas, min_resources=mr, phase=phase, priority_class=priority_class,
                        creation=creation)
    ann = {"magma.io/expected-runtime": runtime} if runtime else None
    for i in range(replicas):
        out += pod_yaml(f"{name}-{i}", name, gpu=gpu, node=nodes[i] if nodes else None,
                        priority_class=priority_class, annotations=ann, creation=creation, started=started,
                        deadline=deadline)
    return out


class World:
    """A MemoryCluster built from YAML (plus the built-in queues), with a virtual clock."""

    def __init__(self, yaml_text: str, grace_seconds: float = 0.0):
        loaded = load_text(yaml_text)
        assert not loaded.problems, [p.format() for p in loaded.problems]
        assert not loaded.unreadable, loaded.unreadable
        objects = list(loaded.objects)
        have = {o.name for o in objects if isinstance(o, Queue)}
        objects += [q for q in builtin_queues() if q.name not in have]
        self.now = 0.0
        self.cluster = MemoryCluster(objects, clock=lambda: self.now, grace_seconds=grace_seconds)
        self.results: list[SessionResult] = []

    def run(self, config, times: int = 1) -> SessionResult:
        for _ in range(times):
            self.results.append(Scheduler(self.cluster, config).run_once())
        return self.results[-1]

    def tick(self, seconds: float = 1.0, kubelet: bool = True) -> None:
        """Advance the clock, finish deletions whose grace ended, and (kubelet) start bound pods."""
        self.now += seconds
        self.cluster.finish_deletions()
        if kubelet:
            for p in self.pods():
                if p.spec.node_name and p.status.phase == "Pending" and p.metadata.deletion_timestamp is None:
                    p.status.phase = "Running"

    def session(self, config) -> Session:
        """A session opened on the current state (plugins opened, no action run)."""
        return Scheduler(self.cluster, config).open_session()

    def pods(self) -> list[Pod]:
        return list(self.cluster.state().pods.values())

    def pod(self, name: str, ns: str = "default") -> Pod | None:
        return self.cluster.state().pods.get(f"{ns}/{name}")

    def bound(self, group: str | None = None) -> dict[str, str]:
        """Pod name -> node for pods with a node (not being deleted), optionally of one PodGroup."""
        return {p.name: p.spec.node_name for p in self.pods()
                if p.spec.node_name and p.metadata.deletion_timestamp is None
                and (group is None or p.group_name == group)}

    def phase(self, group: str, ns: str = "default") -> str | None:
        pg = self.cluster.state().podgroups.get(f"{ns}/{group}")
        return pg.status.phase if pg else None

    def evicted(self) -> list[str]:
        return [k.split("/", 1)[1] for k, _ in self.cluster.evictions]


def snapshot(world: World):
    return build(world.cluster.state())


# ---------------------------------------------------------------- the seed's §11-12 world

SEED = Path(__file__).resolve().parents[2] / "data" / "seed" / "s11-12"


def seed_config():
    """The seed's §11 ConfigMap, as written (actions "enqueue, allocate, preempt, backfill")."""
    cm = yaml.safe_load((SEED / "11-configmap.yaml").read_text())
    result = config_from_configmap(cm["data"])
    assert result.config is not None, result.messages()
    return result.config


def seed_world(podless: bool = False) -> World:
    """The seed's §12 cluster: 32 nodes x 8 GPUs, all busy with team jobs (team-nlp 96 GPUs in three 4-pod gangs,
    team-cv 96 in six 2-pod gangs, team-research 64 in eight single pods), the §12 queues and PriorityClass, and
    the emergency job (2 pods x 8 GPUs, priority 100000) arriving Pending: with its pods, or (`podless`) as a
    Volcano Job's PodGroup before the controller created them."""
    text = (SEED / "12-queues.yaml").read_text()
    text += nodes_yaml("gpu", 32, gpu=8, cpu=128, memory="1024Gi")
    nodes = iter(f"gpu-{i}" for i in range(32))

    def take(k):
        return [next(nodes) for _ in range(k)]

    for i in range(3):
        text += gang_yaml(f"nlp-{i}", "team-nlp", 4, running_on=take(4), ns="nlp", grace=30)
    for i in range(6):
        text += gang_yaml(f"cv-{i}", "team-cv", 2, running_on=take(2), ns="cv", grace=30)
    for i in range(8):
        text += gang_yaml(f"res-{i}", "team-research", 1, running_on=take(1), ns="research", grace=30)
    if podless:
        text += podgroup_yaml("emergency-hotfix-training", "emergency", 2, phase="Pending",
                              priority_class="emergency", min_resources={"nvidia.com/gpu": "16"}, creation=100)
    else:
        text += gang_yaml("emergency-hotfix-training", "emergency", 2, gpu=8, priority_class="emergency",
                          phase="Pending", min_resources=True, creation=100)
    return World(text)
