"""priority: order by PriorityClass, protect higher priorities from preemption (Volcano's priority plugin).

- JobOrder: higher job priority first (the PodGroup's priorityClassName, else the global default, else 0).
- TaskOrder: higher task priority first (pod priority, overridden by `volcano.sh/task-priority`).
- Preemptable: a task of another job is a victim only when its job's priority is lower than the preemptor's
  job's; a task of the preemptor's own job only when its task priority is lower than the preemptor's.
  A preemptor whose job is gone from the session gets no victims.
- JobStarving: ready + pipelined < number of tasks (the job wants more than it has). Priority registers no
  Reclaimable function: reclaim is about queue fairness, not priority.
"""

from __future__ import annotations

from ..framework import READY, JobInfo, Session, TaskInfo, TaskStatus, plugin

NAME = "priority"


def _desc(a: int, b: int) -> int:
    return (a < b) - (a > b)


def job_order(a: JobInfo, b: JobInfo) -> int:
    return _desc(a.priority, b.priority)


job_order.key = lambda j: -j.priority  # type: ignore[attr-defined]  # the same order as a key (Session.job_order_key)


def task_order(a: TaskInfo, b: TaskInfo) -> int:
    return _desc(a.priority, b.priority)


task_order.key = lambda t: -t.priority  # type: ignore[attr-defined]  # the same order as a sort key (Session.sorted_tasks)


_PIPELINED = frozenset({TaskStatus.PIPELINED})


def starving(job: JobInfo) -> bool:
    return job.count(READY) + job.count(_PIPELINED) < len(job.tasks)  # (frozensets: counted once per change)


def priority_victims(ssn: Session, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
    pjob = ssn.jobs.get(preemptor.job)
    if pjob is None:
        return []
    victims = []
    for t in candidates:
        job = ssn.jobs.get(t.job)
        if job is None:
            continue
        if job is not pjob:
            if job.priority < pjob.priority:
                victims.append(t)
        elif t.priority < preemptor.priority:
            victims.append(t)
    return victims


def priority_job_bounds(ssn: Session, preemptor: TaskInfo, jobs: list[JobInfo]) -> list[tuple[bool, bool]]:
    """What `priority_victims` may give of each job (Session.victim_job_bounds): the whole job or none of it, by
    job priority, unless it is the preemptor's own job (judged task by task)."""
    pjob = ssn.jobs.get(preemptor.job)
    out = []
    for job in jobs:
        ok = pjob is not None and ssn.jobs.get(job.uid) is job and (job is pjob or job.priority < pjob.priority)
        out.append((ok, ok))
    return out


def priority_job_bounds_key(ssn: Session, preemptor: TaskInfo) -> tuple:
    """What `priority_job_bounds` reads besides each job's fixed fields, for jobs of the session (each is the
    session's own): the preemptor's job and its priority."""
    pjob = ssn.jobs.get(preemptor.job)
    return (NAME, preemptor.job, None if pjob is None else pjob.priority)


@plugin(NAME)
class PriorityPlugin:
    def __init__(self, arguments: dict | None = None):
        self.arguments = dict(arguments or {})

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_fn("task_order", NAME, task_order)
        ssn.add_fn("job_order", NAME, job_order)

        def vote(actor: TaskInfo, cands: list[TaskInfo]) -> tuple[list[TaskInfo], bool]:
            return priority_victims(ssn, actor, cands), False

        vote.job_bounds = lambda actor, jobs: priority_job_bounds(ssn, actor, jobs)  # type: ignore[attr-defined]
        vote.job_bounds_key = lambda actor: priority_job_bounds_key(ssn, actor)  # type: ignore[attr-defined]
        ssn.add_fn("preemptable", NAME, vote)
        ssn.add_fn("job_starving", NAME, starving)
