"""gang: all-or-nothing scheduling of a job's minAvailable pods (Volcano's gang plugin).

Extension points, as Volcano registers them:
- JobValid: `NotEnoughPodsOfTask` when a task role has fewer valid pods than its minAvailable (checked only when
  the job's minAvailable is at least the sum of the task minimums), then `NotEnoughTasks` when valid pods
  (allocated-like, succeeded, pipelined, pending) number fewer than minMember. Messages carry the numbers.
- JobReady: ready pods (Allocated, Binding, Bound, Running, Succeeded) plus pending best-effort pods reach
  minAvailable, and every task role reaches its own minimum.
- JobPipelined: the same counting pipelined pods too (Permit, else Reject).
- JobStarving: ready + pipelined < minAvailable. With the default tiers (priority and gang in tier 1) the session
  ANDs this with priority's "ready + pipelined < number of tasks": a job still waiting for its gang is starving
  by both, so preemption works for it (Volcano #3787 bites only jobs whose gang already runs).
- JobOrder: jobs that are not ready first.
- Preemptable / Reclaimable: a task is a victim while its job keeps more than minAvailable ready pods.
- Close: an `Unschedulable` condition (reason NotEnoughResources, NotEnoughTasks or NotEnoughPodsOfTask) with the
  job's reason in numbers and a Warning `Unschedulable` event on the PodGroup for every job that is not ready;
  a `Scheduled` condition for ready jobs.

Deliberate differences from Volcano:
- Whole-gang eviction. Volcano never lets gang give up a task whose eviction would leave its job with
  minAvailable ready pods or fewer; a job running exactly its gang (every single-pod job, for instance) can then
  never be preempted or reclaimed. magma also permits such tasks when the candidate list offered to the vote
  holds *every* evictable task (Bound or Running) of that job, i.e. when the action evicts the whole job. An
  action that takes such a victim must evict the whole job: `gang_expand_victims(ssn, victims)` adds the rest,
  `gang_whole_job_victims(ssn, job)` lists a job's evictable tasks, `gang_breaks_job` says whether a set of
  evictions leaves a job below its gang. A gang is never left half-running by magma's preemption.
- The Unschedulable Warning event is recorded when the condition is new or its message changed, not at every
  session (Kubernetes folds repeated events into a count anyway; the simulator's event list stays readable).
"""

from __future__ import annotations

from collections import Counter

from ..framework import ALLOCATED, READY, JobInfo, PERMIT, REJECT, Session, TaskInfo, TaskStatus, ValidateResult, plugin
from ..framework.jobindex import session_jobs
from ..reasons import event_key, job_reason

S = TaskStatus
NAME = "gang"
SCHEDULED_REASON = "tasks in gang are ready to be scheduled"


# ---------------------------------------------------------------- counting (Volcano's JobInfo methods)


def _task_checks_apply(job: JobInfo) -> bool:
    return job.min_available >= sum(job.task_min_available.values())


_PIPELINED = frozenset({S.PIPELINED})
_RELEASING = frozenset({S.RELEASING})
_VALID = ALLOCATED | {S.SUCCEEDED, S.PIPELINED, S.PENDING}


def pending_best_effort(job: JobInfo) -> int:
    return job.pending_best_effort()  # counted once per change of the job's tasks (JobInfo.stats)


def ready_num(job: JobInfo) -> int:
    return job.count(READY)


def pipelined_num(job: JobInfo) -> int:
    return job.count(_PIPELINED)


def valid_num(job: JobInfo) -> int:
    return job.count(_VALID)


def is_ready(job: JobInfo) -> bool:
    return job.memo("gang.is_ready", _is_ready)  # asked at every JobOrder comparison: once per change


def _is_ready(job: JobInfo) -> bool:
    return ready_needed(job) == 0


def is_pipelined(job: JobInfo) -> bool:
    return job.memo("gang.is_pipelined", _is_pipelined)


def _is_pipelined(job: JobInfo) -> bool:
    return placements_needed(job) == 0


def placements_needed(job: JobInfo) -> int:
    """How many more tasks must be placed before the JobPipelined vote can permit (Session.pipeline_need): each
    placement adds one to the pipelined and ready count it compares with minAvailable."""
    return max(0, job.min_available - pipelined_num(job) - ready_num(job) - pending_best_effort(job))


def ready_needed(job: JobInfo) -> int:
    """How many more tasks must be placed before the JobReady vote can hold (Session.ready_need): a placement adds
    at most one to the ready count it compares with minAvailable."""
    return max(0, job.min_available - ready_num(job) - pending_best_effort(job))


def ready_vote(job: JobInfo) -> bool:
    return task_ready(job) and is_ready(job)


def pipelined_vote(job: JobInfo) -> int:
    return PERMIT if task_pipelined(job) and is_pipelined(job) else REJECT


ready_vote.placements_needed = ready_needed  # type: ignore[attr-defined]
pipelined_vote.placements_needed = placements_needed  # type: ignore[attr-defined]


def is_starving(job: JobInfo) -> bool:
    return job.memo("gang.is_starving", _is_starving)


def _is_starving(job: JobInfo) -> bool:
    return pipelined_num(job) + ready_num(job) < job.min_available


def _role_counts(job: JobInfo, statuses, best_effort_pending: bool) -> Counter:
    c: Counter = Counter()
    for t in job.tasks.values():
        if t.status in statuses or (best_effort_pending and t.status is S.PENDING and t.best_effort):
            c[t.role] += 1
    return c


def _roles_short(job: JobInfo, counts: Counter) -> list[tuple[str, int, int]]:
    """(role, have, need) for every task role under its own minimum."""
    if not _task_checks_apply(job):
        return []
    return [(role, counts[role], need) for role, need in job.task_min_available.items()
            if need > 0 and counts[role] < need]


_READY_ROLES = ALLOCATED | {S.SUCCEEDED}
_PIPELINED_ROLES = ALLOCATED | {S.SUCCEEDED, S.PIPELINED}


def _roles_short_memo(job: JobInfo, statuses: frozenset, best_effort_pending: bool) -> list[tuple[str, int, int]]:
    """`_roles_short` of the counts, once per change of the job's tasks (JobInfo.memo)."""
    if not job.task_min_available:
        return []  # no role has a minimum
    return job.memo(("gang.roles_short", statuses, best_effort_pending),
                    lambda j: _roles_short(j, _role_counts(j, statuses, best_effort_pending)))


def task_valid(job: JobInfo) -> list[tuple[str, int, int]]:
    return _roles_short_memo(job, _VALID, False)


def task_ready(job: JobInfo) -> bool:
    return not _roles_short_memo(job, _READY_ROLES, True)


def task_pipelined(job: JobInfo) -> bool:
    return not _roles_short_memo(job, _PIPELINED_ROLES, True)


def validate(job: JobInfo) -> ValidateResult | None:
    return job.memo("gang.validate", _validate)  # a function of the tasks' statuses and the PodGroup


def _validate(job: JobInfo) -> ValidateResult | None:
    short = task_valid(job)
    if short:
        text = "; ".join(f"task {role or '<unnamed>'} has {have} valid pods, its minAvailable is {need}"
                         for role, have, need in short)
        return ValidateResult(False, "NotEnoughPodsOfTask",
                              f"not enough valid pods of each task for gang-scheduling: {text}")
    valid = valid_num(job)
    if valid < job.min_available:
        return ValidateResult(False, "NotEnoughTasks",
                              f"not enough valid tasks for gang-scheduling: {valid} valid, "
                              f"minMember {job.min_available}")
    return None


# ---------------------------------------------------------------- victims (helpers for preempt and reclaim)


def gang_whole_job_victims(ssn: Session, job: JobInfo) -> list[TaskInfo]:
    """Every task of `job` an action would have to evict to evict the whole job (Bound or Running)."""
    return list(ssn.victim_order(job))


def gang_breaks_job(ssn: Session, job: JobInfo, evicting: int) -> bool:
    """Whether evicting `evicting` more ready tasks of `job` leaves it below minAvailable."""
    return ready_num(job) - evicting < job.min_available


def gang_expand_victims(ssn: Session, victims: list[TaskInfo]) -> list[TaskInfo]:
    """`victims` plus, for every job they would push below minAvailable, the rest of that job's evictable
    tasks (so that the job is evicted whole). Judged against the session's current state."""
    out = list(victims)
    ids = {t.uid for t in out}
    per_job = Counter(t.job for t in victims if t.status in READY)
    for uid, n in per_job.items():
        job = ssn.jobs.get(uid)
        if job is None or not gang_breaks_job(ssn, job, n):
            continue
        for t in gang_whole_job_victims(ssn, job):
            if t.uid not in ids:
                out.append(t)
                ids.add(t.uid)
    return out


def gang_victims(ssn: Session, candidates: list[TaskInfo]) -> list[TaskInfo]:
    """Volcano's rule (a victim while its job keeps more than minAvailable ready tasks), plus the whole job
    when every evictable task of it is among the candidates."""
    offered = {t.uid for t in candidates}
    whole: dict[str, bool] = {}
    occupied: dict[str, int] = {}
    victims = []
    for t in candidates:
        job = ssn.jobs.get(t.job)
        if job is None:
            continue  # orphan task: its PodGroup is gone
        if job.uid not in whole:
            evictable = ssn.victim_order(job)  # (gang_whole_job_victims, without the copy)
            whole[job.uid] = bool(evictable) and all(e.uid in offered for e in evictable)
            occupied[job.uid] = ready_num(job)
        if whole[job.uid]:
            victims.append(t)
        elif occupied[job.uid] > job.min_available:
            occupied[job.uid] -= 1
            victims.append(t)
    return victims


# ---------------------------------------------------------------- the plugin


def _close_reason(job: JobInfo) -> str:
    if job.reason_code:
        return job.reason_code
    if task_valid(job):
        return "NotEnoughPodsOfTask"
    if valid_num(job) < job.min_available:
        return "NotEnoughTasks"
    return "NotEnoughResources"


def _skip_for_releasing(job: JobInfo) -> bool:
    """A job whose scheduled pods plus pods still terminating on nodes cover its gang, with nothing left to
    place, is not reported unschedulable (Volcano's shouldSkipUnschedulableForReleasing)."""
    if not job.count(_RELEASING):  # (the counts kept: no loop over the tasks of a job with none)
        return False
    releasing = sum(1 for t in job.tasks.values() if t.status is S.RELEASING and t.node)
    if not releasing or job.count({S.PENDING, S.PIPELINED}):
        return False
    return job.count({S.RUNNING, S.BOUND, S.FAILED, S.SUCCEEDED}) + releasing >= job.min_available


def _previous_message(job: JobInfo, type_: str) -> str | None:
    if job.podgroup is None:
        return None
    for c in job.podgroup.status.conditions:
        if c.type == type_ and c.status == "True":
            return c.message or ""
    return None


@plugin(NAME)
class GangPlugin:
    def __init__(self, arguments: dict | None = None):
        self.arguments = dict(arguments or {})

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_fns(NAME, {
            "job_valid": validate,
            "preemptable": lambda actor, cands: (gang_victims(ssn, cands), False),
            "reclaimable": lambda actor, cands: (gang_victims(ssn, cands), False),
            "job_order": job_order,
            "job_ready": ready_vote,
            "job_pipelined": pipelined_vote,
            "job_starving": is_starving,
        })

    def on_session_close(self, ssn: Session) -> None:
        from ..scheduler import condition_current, set_condition  # scheduler imports the plugins package

        for job in session_jobs(ssn):  # with the job index, quiet jobs are left out: nothing to set for them
            if not job.tasks:
                continue
            if is_ready(job):
                # Already so in the PodGroup (the common case: a running job): setting it again would write nothing.
                if job.conditions is not None or not condition_current(job, "Scheduled", SCHEDULED_REASON, ""):
                    set_condition(ssn, job, "Scheduled", SCHEDULED_REASON, "")
                continue
            if _skip_for_releasing(job):
                continue
            message = job_reason(ssn, job) or (
                f"{job.min_available - ready_num(job)}/{len(job.tasks)} tasks in gang unschedulable")
            previous = _previous_message(job, "Unschedulable")
            set_condition(ssn, job, "Unschedulable", _close_reason(job), message)
            if event_key(previous) != event_key(message):  # not again for a reservation's countdown alone
                # (once: recorded again only when the condition written at close changes; a job without a
                # PodGroup has no condition to compare with, and records it every session)
                ssn.record_event("Warning", "Unschedulable", "PodGroup", job.key, message,
                                 once=job.podgroup is not None)


def job_order(a: JobInfo, b: JobInfo) -> int:
    ra, rb = is_ready(a), is_ready(b)
    if ra == rb:
        return 0
    return 1 if ra else -1


job_order.key = is_ready  # type: ignore[attr-defined]  # not ready (False) first: the same order (Session.job_order_key)
