"""A Statement groups placement changes so that a gang is placed whole or not at all.

Operations change the session at once (so later decisions see them); `commit` makes them real in the
cluster (bind, evict), `discard` undoes them in reverse order. Volcano's Statement, the same contract.
"""

from __future__ import annotations

from dataclasses import dataclass

from .info import NodeInfo, TaskInfo, TaskStatus
from .session import Session


@dataclass(slots=True)
class _Op:
    kind: str  # allocate | pipeline | evict
    task: TaskInfo
    node: NodeInfo | None = None
    previous: TaskStatus | None = None
    reason: str = ""


class Statement:
    def __init__(self, session: Session):
        self.session = session
        self.ops: list[_Op] = []

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        self.session.allocate(task, node)
        self.ops.append(_Op("allocate", task, node))

    def pipeline(self, task: TaskInfo, node: NodeInfo) -> None:
        self.session.pipeline(task, node)
        self.ops.append(_Op("pipeline", task, node))

    def evict(self, task: TaskInfo, reason: str) -> None:
        previous = task.status
        self.session.evict(task)
        self.ops.append(_Op("evict", task, self.session.nodes[task.node], previous, reason))

    def discard(self) -> None:
        for op in reversed(self.ops):
            if op.kind == "evict":
                self.session.unevict(op.task, op.previous)
            else:
                self.session.unallocate(op.task)
        self.ops.clear()

    def commit(self) -> None:
        """Evictions first (they free what the allocations may be waiting for), then binds."""
        for op in self.ops:
            if op.kind == "evict":
                self.session.commit_evict(op.task, op.reason)
        for op in self.ops:
            if op.kind == "allocate":
                self.session.commit_bind(op.task)
        self.ops.clear()
