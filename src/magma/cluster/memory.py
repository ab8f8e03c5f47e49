"""In-memory cluster: the interface implemented over plain dicts, for the simulator and tests."""

from __future__ import annotations

from typing import Callable, Iterable

from magma.api.objects import Command, Job, Node, Object, Pod, PodGroup, PodGroupStatus, PriorityClass, Queue

from .interface import ClusterError, ClusterState, Event


class MemoryCluster:
    """Objects in dicts; binding and eviction as a kube-apiserver would accept them.

    Eviction with a grace period marks the pod terminating (Releasing); `finish_deletions` removes it.
    A clock function gives event times (the simulator passes its virtual clock).
    """

    def __init__(self, objects: Iterable[Object] = (), clock: Callable[[], float] = lambda: 0.0,
                 grace_seconds: float = 0.0):
        self._state = ClusterState()
        self.clock = clock
        self.grace_seconds = grace_seconds
        self.events: list[Event] = []
        self.bindings: list[tuple[str, str]] = []  # (pod key, node) in order, for tests and traces
        self.evictions: list[tuple[str, str]] = []
        self._terminating: dict[str, float] = {}  # pod key -> time its deletion completes
        for o in objects:
            self.add(o)

    # ---------------------------------------------------------------- reads
    def state(self) -> ClusterState:
        self._state.now = self.clock()
        return self._state

    # ---------------------------------------------------------------- object store
    _TYPED = {Node: "nodes", Pod: "pods", PodGroup: "podgroups", Queue: "queues", PriorityClass: "priority_classes",
              Job: "jobs", Command: "commands"}

    def _bucket(self, kind: str) -> dict[str, Object]:
        for cls, attr in self._TYPED.items():
            if cls.KIND == kind:
                return getattr(self._state, attr)
        return self._state.others.setdefault(kind, {})

    def add(self, obj: Object) -> None:
        """Store an object as it is (replacing one with the same key)."""
        kind = obj.KIND or obj.kind
        self._bucket(kind)[obj.key] = obj

    def create(self, obj: Object) -> None:
        kind = obj.KIND or obj.kind
        bucket = self._bucket(kind)
        if obj.key in bucket:
            raise ClusterError(f"{kind} {obj.key} already exists")
        bucket[obj.key] = obj

    def update(self, obj: Object) -> None:
        kind = obj.KIND or obj.kind
        bucket = self._bucket(kind)
        if obj.key not in bucket:
            raise ClusterError(f"{kind} {obj.key} not found")
        bucket[obj.key] = obj

    def delete(self, kind: str, key: str) -> None:
        if kind == "Pod":
            self.delete_pod(key)
        else:
            self._bucket(kind).pop(key, None)

    def get(self, kind: str, key: str) -> Object | None:
        return self._bucket(kind).get(key)

    def delete_pod(self, key: str) -> None:
        self._state.pods.pop(key, None)
        self._terminating.pop(key, None)

    def delete_node(self, name: str) -> None:
        self._state.nodes.pop(name, None)

    # ---------------------------------------------------------------- writes the scheduler makes
    def bind(self, pod_key: str, node_name: str) -> None:
        pod = self._state.pods.get(pod_key)
        if pod is None:
            raise ClusterError(f"pod {pod_key} not found")
        if pod.spec.node_name:
            raise ClusterError(f"pod {pod_key} is already bound to {pod.spec.node_name}")
        if pod.metadata.deletion_timestamp is not None:
            raise ClusterError(f"pod {pod_key} is being deleted")
        if node_name not in self._state.nodes:
            raise ClusterError(f"node {node_name} not found")
        pod.spec.node_name = node_name
        self.bindings.append((pod_key, node_name))

    def evict(self, pod_key: str, reason: str) -> None:
        pod = self._state.pods.get(pod_key)
        if pod is None:
            raise ClusterError(f"pod {pod_key} not found")
        if pod.metadata.deletion_timestamp is not None:
            return  # already terminating: eviction is idempotent
        self.evictions.append((pod_key, reason))
        grace = pod.spec.termination_grace_period_seconds
        grace = self.grace_seconds if grace is None else grace
        if grace <= 0 or not pod.spec.node_name:
            self.delete_pod(pod_key)
        else:
            pod.metadata.deletion_timestamp = self.clock()
            self._terminating[pod_key] = self.clock() + grace

    def finish_deletions(self, now: float | None = None) -> list[str]:
        """Remove terminating pods whose grace period has ended; returns their keys."""
        now = self.clock() if now is None else now
        done = [k for k, t in self._terminating.items() if t <= now]
        for k in done:
            self.delete_pod(k)
        return done

    def update_podgroup_status(self, key: str, status: PodGroupStatus) -> None:
        pg = self._state.podgroups.get(key)
        if pg is None:
            raise ClusterError(f"podgroup {key} not found")
        pg.status = status

    def update_queue_status(self, name: str, status: dict) -> None:
        q = self._state.queues.get(name)
        if q is None:
            raise ClusterError(f"queue {name} not found")
        for k, v in status.items():
            setattr(q.status, k, v)

    def record_event(self, type: str, reason: str, kind: str, key: str, message: str) -> None:
        self.events.append(Event(self.clock(), type, reason, kind, key, message))
