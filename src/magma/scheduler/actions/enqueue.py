"""enqueue: admit Pending jobs (PodGroups) to Inqueue, the gate before allocation (reference §5).

Queues are popped by QueueOrder; from the popped queue one Pending job is popped by JobOrder. A job without
minResources is admitted at once; otherwise the plugins vote (JobEnqueueable: proportion/capacity against the
queue's real capability, overcommit against the cluster's overcommitted idle resources, ...). An admitted job
is Inqueue (`job.phase`, written to the PodGroup at session close), the plugins hear about it (JobEnqueued:
they count its minResources as reserved), and `job.enqueued_this_session` is set. The queue is pushed back
either way, until all its Pending jobs were considered once.

A rejected job gets a reason in numbers when no plugin gave one (reasons.enqueue_reason).

magma addition (docs/volcano-differences.md, "the enqueue gate"): the gate must not keep a job Pending forever
when preemption would run it. A rejected job that preemption could serve (higher priority than running
preemptable work of its queue, or a queue under its deserved share while other queues are over theirs; see
preempt.preemption_candidate) is handled in one of two ways:
- it has pods: it stays Pending and the preempt (and reclaim) action considers it as a preemptor; if preemption
  pipelines its gang, that action admits it (Inqueue, JobEnqueued);
- it has no pods yet (a Volcano Job's controller creates pods only after the PodGroup left Pending): it is
  admitted here, so that its pods get created and preemption can act on them in the next session.

magma addition (the `reservation` plugin, docs/reservation-backfill.md): the load gates (overcommit's idle
resources, proportion's and capacity's allocated + inqueue) must not keep a big gang Pending forever while small
jobs are admitted around it. When only those rejected a job (every other plugin agrees), it is admitted anyway if it
is first in line of its queue and the queue's real capability can hold it (then allocate reserves for it), or if it
fits in the idle resources not yet promised to admitted jobs and in its queue's real capability next to its
allocation (then allocate may backfill it); see ReservationPlan.admit_anyway.
"""

from __future__ import annotations

from ..framework import JobInfo, QueueInfo, Session, action, fastpath
from ..framework.jobindex import session_jobs
from .. import reasons
from .allocate import OrderedHeap, sorted_by_uid
from .preempt import RunningWork, preemption_candidate


def admit(ssn: Session, job: JobInfo) -> None:
    ssn.job_enqueued(job)
    job.phase = "Inqueue"
    job.enqueued_this_session = True


@action("enqueue")
def enqueue(ssn: Session, arguments: dict) -> None:
    jobs = list(session_jobs(ssn))
    pending: dict[str, list[JobInfo]] = {}  # per queue of the session, its Pending jobs
    for job in jobs:
        if job.is_pending():
            queue = ssn.queues.get(job.queue)
            if queue is not None:
                got = pending.get(queue.name)
                if got is None:
                    pending[queue.name] = [job]
                else:
                    got.append(job)
    if fastpath.enqueue_idle and not pending:
        return  # no job to consider (fastpath.enqueue_idle)
    # Each queue's jobs by uid, then in JobOrder (a queue's only job needs no order, nor the sort key made for the
    # session).
    waiting = {name: OrderedHeap(ssn.job_order_cmp, sorted_by_uid(queue_jobs),
                                 key=ssn.job_order_key() if len(queue_jobs) > 1 else None)
               for name, queue_jobs in pending.items()}

    gate = Gate(ssn)
    if fastpath.enqueue_idle and len(waiting) <= 1:
        # One queue with Pending jobs: the queue order cannot interleave it with another one (each other queue
        # would be popped once and dropped), so its jobs are considered in job order without ordering the queues
        # (asking the queue-order functions would change nothing: see fastpath.enqueue_idle).
        for queue_jobs in waiting.values():
            while queue_jobs:
                gate.consider(queue_jobs.pop())
        return
    queues: OrderedHeap[QueueInfo] = OrderedHeap(ssn.queue_order_cmp_memo(), queue_order(ssn, jobs))
    while queues:
        queue = queues.pop()
        queue_jobs = waiting.get(queue.name)
        if not queue_jobs:
            continue
        gate.consider(queue_jobs.pop())
        queues.push(queue)


def queue_order(ssn: Session, jobs: list[JobInfo]) -> list[QueueInfo]:
    """The session's queues holding jobs, as first met in uid order of the jobs (the order they are pushed in)."""
    order: list[QueueInfo] = []
    seen: set[str] = set()
    index = getattr(ssn, "job_index", None)
    if index is not None:
        # Every queue with jobs, in the order of its first job by uid (as the loop below meets them); the jobs
        # to look at are those that are not quiet (a quiet job is not Pending).
        for name in index.queue_names():
            queue = ssn.queues.get(name)
            if queue is not None:
                seen.add(name)
                order.append(queue)
    for job in sorted_by_uid(jobs):
        queue = ssn.queues.get(job.queue)
        if queue is not None and queue.name not in seen:
            seen.add(queue.name)
            order.append(queue)
    return order


class Gate:
    """One enqueue action's verdicts on Pending jobs, one job at a time."""

    def __init__(self, ssn: Session):
        self.ssn = ssn
        self.plan = getattr(ssn, "reservations", None)  # the reservation plugin's plan, when configured
        self.work: RunningWork | None = None  # made when first needed

    def consider(self, job: JobInfo) -> None:
        ssn = self.ssn
        if job.min_resources.is_empty() or ssn.job_enqueueable(job):
            admit(ssn, job)
            return
        if not job.reason:
            job.reason = reasons.enqueue_reason(ssn, job)
        if not job.tasks and preemption_candidate(ssn, job, self.running_work()):
            # No pods to preempt with yet: admit so that they get created (see the module docstring).
            admit(ssn, job)
            job.reason = (f"{job.reason}; admitted anyway: its priority {job.priority} can preempt "
                          f"running work, pods not created yet")
        elif self.plan is not None and (note := self.plan.admit_anyway(job)):
            admit(ssn, job)
            job.reason = f"{job.reason}; {note}"

    def running_work(self) -> RunningWork:
        if self.work is None:
            self.work = RunningWork(self.ssn)
        return self.work
