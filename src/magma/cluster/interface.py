"""The one narrow seam between magma's logic and a cluster.

The scheduler and the controller only ever see this interface. `memory.MemoryCluster` implements it in
process (simulator, tests); the Kubernetes implementation talks to a real API server. Like httpx's transports:
one seam, a real and an in-memory implementation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from magma.api.objects import Command, Job, Node, Object, Pod, PodGroup, PodGroupStatus, PriorityClass, Queue


class ClusterError(RuntimeError):
    """A write the cluster refused (pod already bound, object gone, conflict)."""


@dataclass(slots=True)  # no __dict__: a long simulation records hundreds of thousands
class Event:
    time: float
    type: str  # Normal | Warning
    reason: str
    kind: str
    key: str
    message: str

    def to_json(self) -> dict:
        return {"time": self.time, "type": self.type, "reason": self.reason,
                "object": f"{self.kind} {self.key}", "message": self.message}


@dataclass
class ClusterState:
    """What the scheduler reads at session open. Dicts are keyed by `ns/name` (namespaced) or name."""

    nodes: dict[str, Node] = field(default_factory=dict)
    pods: dict[str, Pod] = field(default_factory=dict)
    podgroups: dict[str, PodGroup] = field(default_factory=dict)
    queues: dict[str, Queue] = field(default_factory=dict)
    priority_classes: dict[str, PriorityClass] = field(default_factory=dict)
    jobs: dict[str, Job] = field(default_factory=dict)
    commands: dict[str, Command] = field(default_factory=dict)
    # Anything else the controller makes (Service, ConfigMap, Secret, ...): kind -> key -> object.
    others: dict[str, dict[str, Object]] = field(default_factory=dict)
    now: float = 0.0


class Cluster(Protocol):
    def state(self) -> ClusterState: ...

    # Generic object writes, as the controller needs them (create fails if the key exists).
    def create(self, obj: Object) -> None: ...

    def update(self, obj: Object) -> None: ...

    def delete(self, kind: str, key: str) -> None: ...

    def get(self, kind: str, key: str) -> Object | None: ...

    def bind(self, pod_key: str, node_name: str, annotations: dict[str, str] | None = None) -> None:
        """Bind a pending pod (after writing `annotations` on it); raises ClusterError if it is gone or bound."""

    def evict(self, pod_key: str, reason: str) -> None:
        """Delete a pod gracefully (it is Releasing until its grace period ends)."""

    def update_podgroup_status(self, key: str, status: PodGroupStatus) -> None: ...

    def update_queue_status(self, name: str, status: dict) -> None: ...

    def record_event(self, type: str, reason: str, kind: str, key: str, message: str) -> None: ...
