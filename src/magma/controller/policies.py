"""Lifecycle policies of a Volcano Job: which action an event (or exit code) asks for.

Restates Volcano's `applyPolicies` (pkg/controllers/job/job_controller_util.go):

- task-level policies of the event's task are read first, then the job-level policies; the first match wins;
- a policy matches when its `event`/`events` contain the event or `*`, or when its `exitCode` equals the exit
  code of the failed pod (exit code 0 never matches: admission forbids it);
- `PodPending` only matches a policy that has a `timeout` (a pod is pending for a while, not at an instant);
- a policy's `timeout` delays the action; the delayed action is dropped if the pod recovers first;
- internal events (OutOfSync, CommandIssued, PodRunning) never match, not even `*`;
- no match: `SyncJob` (just reconcile).

`JobUnknown` is accepted as another spelling of the `Unknown` event (the PodGroup went Unknown: some pods
run while others cannot be scheduled).
"""

from __future__ import annotations

from dataclasses import dataclass

from magma.api.duration import parse_duration
from magma.api.objects import JobSpec, LifecyclePolicy

# Events
ANY_EVENT = "*"
POD_FAILED = "PodFailed"
POD_EVICTED = "PodEvicted"
POD_PENDING = "PodPending"
POD_RUNNING = "PodRunning"
JOB_UNKNOWN = "Unknown"
TASK_COMPLETED = "TaskCompleted"
TASK_FAILED = "TaskFailed"
OUT_OF_SYNC = "OutOfSync"
COMMAND_ISSUED = "CommandIssued"
JOB_UPDATED = "JobUpdated"
INTERNAL_EVENTS = frozenset({OUT_OF_SYNC, COMMAND_ISSUED, POD_RUNNING})
POD_EVENTS = frozenset({POD_PENDING, POD_RUNNING, POD_FAILED, POD_EVICTED})
EVENT_ALIASES = {"JobUnknown": JOB_UNKNOWN}

# Actions
ABORT_JOB = "AbortJob"
RESTART_JOB = "RestartJob"
RESTART_TASK = "RestartTask"
RESTART_POD = "RestartPod"
RESTART_PARTITION = "RestartPartition"
TERMINATE_JOB = "TerminateJob"
COMPLETE_JOB = "CompleteJob"
RESUME_JOB = "ResumeJob"
SYNC_JOB = "SyncJob"
INTERNAL_ACTIONS = frozenset({SYNC_JOB, "EnqueueJob", "SyncQueue", "OpenQueue", "CloseQueue"})
JOB_ACTIONS = frozenset({ABORT_JOB, RESTART_JOB, TERMINATE_JOB, COMPLETE_JOB, RESUME_JOB})


@dataclass(frozen=True)
class Decision:
    action: str
    delay: float | None = None  # seconds; None = at once
    source: str = ""  # which policy decided, for messages ("task worker policy 1", "job policy 0", "")


def action_type(action: str) -> str:
    """Volcano's grouping of actions for cancelling delayed ones: job, task, pod or partition."""
    if action == RESTART_TASK:
        return "task"
    if action == RESTART_POD:
        return "pod"
    if action == RESTART_PARTITION:
        return "partition"
    return "job"


def _events(policy: LifecyclePolicy) -> list[str]:
    out = list(policy.events)
    if policy.event:
        out.append(policy.event)
    return [EVENT_ALIASES.get(e, e) for e in out]


def _timeout(policy: LifecyclePolicy) -> float | None:
    if policy.timeout is None:
        return None
    try:
        return parse_duration(policy.timeout)
    except ValueError:
        return None


def _match(policy: LifecyclePolicy, event: str, exit_code: int) -> Decision | None:
    events = _events(policy)
    timeout = _timeout(policy)
    if events and event and (event in events or ANY_EVENT in events):
        if event != POD_PENDING or timeout is not None:
            return Decision(policy.action or SYNC_JOB, timeout or None)
    if policy.exit_code is not None and policy.exit_code != 0 and policy.exit_code == exit_code:
        return Decision(policy.action or SYNC_JOB, timeout or None)
    return None


def apply_policies(spec: JobSpec, event: str, task: str = "", exit_code: int = 0) -> Decision:
    """The action Volcano takes for `event` of a pod of `task` (task "" for job-level events)."""
    event = EVENT_ALIASES.get(event, event)
    if event in INTERNAL_EVENTS:
        return Decision(SYNC_JOB)
    if task:
        for t in spec.tasks:
            if t.name == task:
                for i, policy in enumerate(t.policies):
                    d = _match(policy, event, exit_code)
                    if d is not None:
                        return Decision(d.action, d.delay, f"task {task} policy {i}")
                break
    for i, policy in enumerate(spec.policies):
        d = _match(policy, event, exit_code)
        if d is not None:
            return Decision(d.action, d.delay, f"job policy {i}")
    return Decision(SYNC_JOB)
