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

import heapq

import numpy as np

from ..framework import JobInfo, QueueInfo, Session, Statement, TaskInfo, TaskStatus, action, fastpath
from ..framework.jobindex import session_jobs
from .. import reasons
from .allocate import OrderedHeap, PredicateCache, flag, placement_sensitive, sorted_by_uid, state_scores

S = TaskStatus
_WAITING = frozenset({S.PENDING, S.PIPELINED})


def _pick_tasks(ssn: Session) -> list[TaskInfo]:
    queues: OrderedHeap[QueueInfo] = OrderedHeap(ssn.queue_order_cmp_memo())
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
            jobs[queue.name] = OrderedHeap(ssn.job_order_cmp, key=ssn.job_order_key())
            queues.push(queue)
        jobs[queue.name].push(job)
    out: list[TaskInfo] = []
    while queues:
        queue = queues.pop()
        heap = jobs[queue.name]
        while heap:
            out.extend(tasks[heap.pop().uid])
    return out


class BackfillGroup:
    """The fast path of backfill's node choice (fastpath.backfill_groups), as allocate's SharedGroup: tasks with
    equal predicate inputs, request and score inputs keep, for the whole action, the rows that pass the
    predicates and fit Idle, with their scores in a heap of (-score, row, stamp). A placement logs its row; on
    use the group re-checks and re-scores only the rows logged since. The top of the heap is the highest score
    and, among equal scores, the lowest row: what argmax over the feasible rows picks."""

    def __init__(self, ssn: Session, pred, task: TaskInfo, log: list[int]):
        self.ssn = ssn
        self.pred = pred
        self.vec = task.vec
        self.log = log
        self.version = len(log)
        table = ssn.table
        self.fit = pred.mask & table.fits(self.vec, table.idle)
        self.stamp = [0] * len(self.fit)
        self.memo: dict[bytes, float] = {}
        self.heap: list[tuple[float, int, int]] = []
        self._push(task, np.flatnonzero(self.fit))
        heapq.heapify(self.heap)

    def _push(self, task: TaskInfo, rows: np.ndarray, heap_push: bool = False) -> None:
        if not len(rows):
            return
        scores = state_scores(self.ssn, self.memo, task, rows)
        stamp, heap = self.stamp, self.heap
        for row, sc in zip(rows.tolist(), (-scores).tolist()):
            if heap_push:
                heapq.heappush(heap, (sc, row, stamp[row]))
            else:
                heap.append((sc, row, stamp[row]))

    def best(self, task: TaskInfo) -> int | None:
        log = self.log
        if self.version != len(log):
            rows = np.unique(np.asarray(log[self.version:], dtype=np.int64))
            self.version = len(log)
            idle = self.ssn.table.idle
            self.fit[rows] = self.pred.mask[rows] & (idle[rows] >= self.vec).all(axis=1)
            stamp = self.stamp
            for r in rows.tolist():
                stamp[r] += 1
            self._push(task, rows[self.fit[rows]], heap_push=True)
        heap, stamp = self.heap, self.stamp
        while heap:
            _, row, st = heap[0]
            if st == stamp[row]:
                return row
            heapq.heappop(heap)
        return None


@action("backfill")
def backfill(ssn: Session, arguments: dict) -> None:
    arguments = dict(arguments or {})
    predicates = PredicateCache(ssn, flag(arguments.get("predicateErrorCacheEnable"), True))
    table = ssn.table
    statements: dict[str, Statement] = {}
    # Shared groups while no placement-sensitive pod (inter-pod affinity, topology spread) has been placed: such
    # a pod changes other nodes' predicates and scores, so the rest of the action takes the plain path.
    share = fastpath.backfill_groups and predicates.enabled
    groups: dict[tuple, BackfillGroup] = {}
    log: list[int] = []  # rows placed on, in order
    for task in _pick_tasks(ssn):
        job = ssn.jobs[task.job]
        pred = predicates.get(task)
        group = None
        if share and not placement_sensitive(task):
            score_key = ssn.node_scores_key(task)
            if score_key is not None:
                key = (ssn.predicate_key(task) or task.shape, task.resreq, len(task.vec), score_key)
                group = groups.get(key)
                if group is None:
                    group = groups[key] = BackfillGroup(ssn, pred, task, log)
        if group is not None:
            row = group.best(task)
            if row is None:
                job.fit_errors[task.uid] = reasons.node_fit_summary(ssn, task, predicates.rows, pred, table.idle)
                continue
        else:
            # A BestEffort task asks only for a pod slot; the table's pods column checks it.
            feasible = np.flatnonzero(pred.mask & table.fits(task.vec, table.idle))
            if not len(feasible):
                job.fit_errors[task.uid] = reasons.node_fit_summary(ssn, task, predicates.rows, pred, table.idle)
                continue
            scores = ssn.node_scores(task, feasible)
            row = int(feasible[int(np.argmax(scores))])  # lowest row among equal scores
        if placement_sensitive(task):
            share = False
        log.append(row)
        stmt = statements.get(job.uid)
        if stmt is None:
            stmt = statements[job.uid] = Statement(ssn)
        stmt.allocate(task, ssn.node_list[row])
        if ssn.job_ready(job):
            if share:
                log.extend(op.node.index for op in stmt.ops)  # a refused bind frees its row again
            stmt.commit()
