"""backfill: place BestEffort pods (no resource request) of running or admitted jobs (reference §5).

Volcano's backfill: jobs that are not Pending and pass JobValid contribute their Pending BestEffort tasks (and
their Pipelined BestEffort tasks, un-pipelined first); the tasks are visited queue by queue (QueueOrder), job by
job (JobOrder), task by task (TaskOrder). Each task goes to the best-scoring node that passes the predicates and
still has a pod slot; there is no gang check before the placement. As in Volcano, where Session.Allocate binds
a job's allocated tasks once the job is ready, magma keeps one statement per job and commits it (binding its
tasks) as soon as JobReady holds; tasks of a job that never becomes ready stay Allocated in the session only.

magma's reservation-based backfill of big gangs is not here: the `reservation` plugin makes allocate itself
place later jobs only where they do not delay a reserved gang (docs/reservation-backfill.md). This action stays
Volcano's, for BestEffort pods, which take no reserved resources (only a pod slot).
"""

from __future__ import annotations

import numpy as np

from ..framework import JobInfo, QueueInfo, Session, Statement, TaskInfo, TaskStatus, action
from ..framework.jobindex import session_jobs
from .. import reasons
from .allocate import OrderedHeap, PredicateCache, flag, sorted_by_uid

S = TaskStatus
_WAITING = frozenset({S.PENDING, S.PIPELINED})


def _pick_tasks(ssn: Session) -> list[TaskInfo]:
    queues: OrderedHeap[QueueInfo] = OrderedHeap(ssn.queue_order_cmp)
    jobs: dict[str, OrderedHeap[JobInfo]] = {}
    tasks: dict[str, list[TaskInfo]] = {}
    for job in sorted_by_uid(session_jobs(ssn)):  # the index leaves out quiet jobs
        if job.is_pending():
            continue
        if not ssn.job_valid(job).passed:
            continue
        queue = ssn.queues.get(job.queue)
        if queue is None:
            continue
        if not job.count(_WAITING):
            continue  # nothing pending or pipelined (counted once per change of the job's tasks)
        mine = [t for t in job.tasks.values() if t.best_effort and t.status is S.PENDING]
        for t in [t for t in job.tasks.values() if t.best_effort and t.status is S.PIPELINED]:
            ssn.unallocate(t)  # Volcano un-pipelines them and tries again
            mine.append(t)
        if not mine:
            continue
        tasks[job.uid] = ssn.sorted_tasks(mine)
        if queue.name not in jobs:
            jobs[queue.name] = OrderedHeap(ssn.job_order_cmp)
            queues.push(queue)
        jobs[queue.name].push(job)
    out: list[TaskInfo] = []
    while queues:
        queue = queues.pop()
        heap = jobs[queue.name]
        while heap:
            out.extend(tasks[heap.pop().uid])
    return out


@action("backfill")
def backfill(ssn: Session, arguments: dict) -> None:
    arguments = dict(arguments or {})
    predicates = PredicateCache(ssn, flag(arguments.get("predicateErrorCacheEnable"), True))
    table = ssn.table
    statements: dict[str, Statement] = {}
    for task in _pick_tasks(ssn):
        job = ssn.jobs[task.job]
        pred = predicates.get(task)
        # A BestEffort task asks only for a pod slot; the table's pods column checks it.
        feasible = np.flatnonzero(pred.mask & table.fits(task.vec, table.idle))
        if not len(feasible):
            job.fit_errors[task.uid] = reasons.node_fit_summary(ssn, task, predicates.rows, pred, table.idle)
            continue
        scores = ssn.node_scores(task, feasible)
        row = int(feasible[int(np.argmax(scores))])  # lowest row among equal scores
        stmt = statements.get(job.uid)
        if stmt is None:
            stmt = statements[job.uid] = Statement(ssn)
        stmt.allocate(task, ssn.node_list[row])
        if ssn.job_ready(job):
            stmt.commit()
