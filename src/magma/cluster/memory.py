"""In-memory cluster: the interface implemented over plain dicts, for the simulator and tests."""

from __future__ import annotations

import functools
from typing import Callable, Iterable

from pydantic import BaseModel

from magma.api.objects import Command, Job, Node, Object, Pod, PodGroup, PodGroupStatus, PriorityClass, Queue

from .interface import ClusterError, ClusterState, Event


_MISSING = object()


@functools.cache
def _extra_name(cls: type[BaseModel], name: str) -> bool:
    """Whether pydantic's setattr of `name` on a `cls` puts the value in the extras and marks it set, and nothing
    else: a model keeping unknown fields, not frozen, not validating assignments, and `name` neither a field, private
    nor anything of the class (the status counts of a Queue). Its setattr looks that up again at every write."""
    config = cls.model_config
    return (config.get("extra") == "allow" and not config.get("frozen") and not config.get("validate_assignment")
            and not name.startswith("_") and name not in cls.model_fields and name not in cls.__class_vars__
            and getattr(cls, name, _MISSING) is _MISSING)


class MemoryCluster:
    """Objects in dicts; binding and eviction as a kube-apiserver would accept them.

    Eviction with a grace period marks the pod terminating (Releasing); `finish_deletions` removes it.
    A clock function gives event times (the simulator passes its virtual clock).

    Change log (for the scheduler's incremental snapshot): every write through these methods appends the object's
    (kind, key) to a log; `version` is the log's length so far and `changes_since(version)` what was written
    since. Code that changes a stored object in place (the simulator's kubelet setting a pod's phase) says so
    with `mark_changed(kind, key)`. `position(kind, key)` is the object's place in its kind's dict order (keys
    re-created after a deletion go to the end, as in the dict), so that a reader can keep that order without
    scanning the dict.
    """

    LOG_LIMIT = 200_000  # entries kept; a reader further behind gets None and reads everything again

    def __init__(self, objects: Iterable[Object] = (), clock: Callable[[], float] = lambda: 0.0,
                 grace_seconds: float = 0.0):
        self._state = ClusterState()
        self.clock = clock
        self.grace_seconds = grace_seconds
        self.events: list[Event] = []
        self.bindings: list[tuple[str, str]] = []  # (pod key, node) in order, for tests and traces
        self.evictions: list[tuple[str, str]] = []
        self._terminating: dict[str, float] = {}  # pod key -> time its deletion completes
        self._log: list[tuple[str, str]] = []
        self._log_start = 0  # version of _log[0]
        # The log's length so far, counting entries dropped from its head (read very often: a plain attribute, one
        # more at every entry).
        self.version = 0
        self._positions: dict[tuple[str, str], int] = {}
        self._next_position = 0
        for o in objects:
            self.add(o)

    # ---------------------------------------------------------------- change log
    def _changed(self, kind: str, key: str, created: bool = False, deleted: bool = False) -> None:
        if created:
            self._positions[(kind, key)] = self._next_position
            self._next_position += 1
        elif deleted:
            self._positions.pop((kind, key), None)
        self._log.append((kind, key))
        self.version += 1
        if len(self._log) > self.LOG_LIMIT:
            drop = len(self._log) // 2
            del self._log[:drop]
            self._log_start += drop

    def mark_changed(self, kind: str, key: str) -> None:
        """An object was changed in place (its fields, not its key): readers must look at it again."""
        self._changed(kind, key)

    def changes_since(self, version: int) -> list[tuple[str, str]] | None:
        """(kind, key) of every write since `version` (repeats possible), or None when the log no longer
        reaches back that far."""
        if version < self._log_start or version > self.version:
            return None
        return self._log[version - self._log_start:]

    def position(self, kind: str, key: str) -> int:
        """The object's place in its kind's dict order, as a number that only grows (-1: not stored)."""
        return self._positions.get((kind, key), -1)

    # ---------------------------------------------------------------- reads
    def state(self) -> ClusterState:
        self._state.now = self.clock()
        return self._state

    # ---------------------------------------------------------------- object store
    _TYPED = {Node: "nodes", Pod: "pods", PodGroup: "podgroups", Queue: "queues", PriorityClass: "priority_classes",
              Job: "jobs", Command: "commands"}

    _ATTR_OF_KIND = {cls.KIND: attr for cls, attr in _TYPED.items()}

    def _bucket(self, kind: str) -> dict[str, Object]:
        attr = self._ATTR_OF_KIND.get(kind)
        if attr is not None:
            return getattr(self._state, attr)
        return self._state.others.setdefault(kind, {})

    def add(self, obj: Object) -> None:
        """Store an object as it is (replacing one with the same key)."""
        kind = obj.KIND or obj.kind
        bucket = self._bucket(kind)
        created = obj.key not in bucket
        bucket[obj.key] = obj
        self._changed(kind, obj.key, created=created)

    def create(self, obj: Object) -> None:
        kind = obj.KIND or obj.kind
        bucket = self._bucket(kind)
        if obj.key in bucket:
            raise ClusterError(f"{kind} {obj.key} already exists")
        bucket[obj.key] = obj
        self._changed(kind, obj.key, created=True)

    def update(self, obj: Object) -> None:
        kind = obj.KIND or obj.kind
        bucket = self._bucket(kind)
        if obj.key not in bucket:
            raise ClusterError(f"{kind} {obj.key} not found")
        bucket[obj.key] = obj
        self._changed(kind, obj.key)

    def delete(self, kind: str, key: str) -> None:
        if kind == "Pod":
            self.delete_pod(key)
        elif self._bucket(kind).pop(key, None) is not None:
            self._changed(kind, key, deleted=True)

    def get(self, kind: str, key: str) -> Object | None:
        return self._bucket(kind).get(key)

    def delete_pod(self, key: str) -> None:
        if self._state.pods.pop(key, None) is not None:
            self._changed("Pod", key, deleted=True)
        self._terminating.pop(key, None)

    def delete_node(self, name: str) -> None:
        if self._state.nodes.pop(name, None) is not None:
            self._changed("Node", name, deleted=True)

    # ---------------------------------------------------------------- writes the scheduler makes
    def bind(self, pod_key: str, node_name: str, annotations: dict[str, str] | None = None) -> None:
        """Bind a pending pod, first writing `annotations` on it (as a scheduler patches a pod before binding)."""
        pod = self._state.pods.get(pod_key)
        if pod is None:
            raise ClusterError(f"pod {pod_key} not found")
        if pod.spec.node_name:
            raise ClusterError(f"pod {pod_key} is already bound to {pod.spec.node_name}")
        if pod.metadata.deletion_timestamp is not None:
            raise ClusterError(f"pod {pod_key} is being deleted")
        if node_name not in self._state.nodes:
            raise ClusterError(f"node {node_name} not found")
        if annotations:
            pod.metadata.annotations.update(annotations)
        pod.spec.node_name = node_name
        self.bindings.append((pod_key, node_name))
        self._changed("Pod", pod_key)

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
            self._changed("Pod", pod_key)

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
        self._changed("PodGroup", key)

    def update_queue_status(self, name: str, status: dict) -> None:
        q = self._state.queues.get(name)
        if q is None:
            raise ClusterError(f"queue {name} not found")
        st = q.status
        for k, v in status.items():
            if _extra_name(type(st), k):
                st.__pydantic_extra__[k] = v  # type: ignore[index]  # (what pydantic's setattr does, directly)
                st.__pydantic_fields_set__.add(k)
            else:
                setattr(st, k, v)
        self._changed("Queue", name)

    def record_event(self, type: str, reason: str, kind: str, key: str, message: str) -> None:
        self.events.append(Event(self.clock(), type, reason, kind, key, message))
