"""conformance: never evict what keeps the cluster itself running (Volcano's conformance plugin).

Preemptable and Reclaimable drop every candidate that is system-critical (priorityClassName
system-cluster-critical or system-node-critical) or lives in kube-system (`TaskInfo.critical`).

`volcano.sh/preemptable: "false"` (pod annotation or label, else the PodGroup's; `TaskInfo.preemptable`):
Volcano honours it in the preempt and reclaim actions, which leave such tasks out of the candidate list
before any plugin votes. magma's actions do the same (use `evictable(task)` to filter candidates), and this
plugin drops such tasks as well, so that no action or tier can hand one out as a victim.

Note on tier voting (reference §3): a plugin returning no victims ends its tier without a decision and the
next tier is asked, so a vote alone cannot protect a task; filtering candidates with `evictable` first can.
"""

from __future__ import annotations

from ..framework import Session, TaskInfo, plugin

NAME = "conformance"


def evictable(task: TaskInfo) -> bool:
    """Whether any action may evict this task at all."""
    return task.preemptable and not task.critical


def conformance_victims(candidates: list[TaskInfo]) -> list[TaskInfo]:
    return [t for t in candidates if evictable(t)]


@plugin(NAME)
class ConformancePlugin:
    def __init__(self, arguments: dict | None = None):
        self.arguments = dict(arguments or {})

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_fn("preemptable", NAME, lambda actor, cands: (conformance_victims(cands), False))
        ssn.add_fn("reclaimable", NAME, lambda actor, cands: (conformance_victims(cands), False))
