"""The session framework: snapshot, session with tiered voting, statement, registries."""

from .info import ALLOCATED, ON_NODE, PREEMPTABLE, READY, JobInfo, NodeInfo, QueueInfo, TaskInfo, TaskStatus
from .registry import ACTIONS, PLUGINS, action, plugin
from .session import ABSTAIN, PERMIT, REJECT, EventHandler, PredicateResult, Session, ValidateResult
from .snapshot import Snapshot, build
from .statement import Statement

__all__ = [
    "ABSTAIN", "ACTIONS", "ALLOCATED", "EventHandler", "JobInfo", "NodeInfo", "ON_NODE", "PERMIT", "PREEMPTABLE", "PLUGINS",
    "PredicateResult", "QueueInfo", "READY", "REJECT", "Session", "Snapshot", "Statement", "TaskInfo",
    "TaskStatus", "ValidateResult", "action", "build", "plugin",
]
