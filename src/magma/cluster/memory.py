"""In-memory cluster: the interface implemented over plain dicts, for the simulator and tests."""

from __future__ import annotations

from typing import Callable, Iterable

from magma.api.objects import Node, Object, Pod, PodGroup, PodGroupStatus, PriorityClass, Queue

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
    def add(self, obj: Object) -> None:
        s = self._state
        if isinstance(obj, Node):
            s.nodes[obj.name] = obj
        elif isinstance(obj, Pod):
            s.pods[obj.key] = obj
        elif isinstance(obj, PodGroup):
            s.podgroups[obj.key] = obj
        elif isinstance(obj, Queue):
            s.queues[obj.name] = obj
        elif isinstance(obj, PriorityClass):
            s.priority_classes[obj.name] = obj
        else:
            raise TypeError(f"MemoryCluster does not store {obj.KIND}")

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
