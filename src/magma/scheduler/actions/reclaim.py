"""reclaim: a queue under its deserved share takes resources back from queues over theirs (reference §5).

Volcano's reclaim, as magma keeps it: queues are popped by QueueOrder and skipped when Overused; their starving
jobs are taken by JobOrder and their pending tasks by TaskOrder. A task with `preemptionPolicy: Never` is
skipped; the queue must be Preemptive for it (allocated + request <= deserved). Victims are Running,
preemptable tasks of other queues that are `reclaimable`, as the Reclaimable vote allows; they are evicted
(reason "reclaim") until the task fits a node, where it is pipelined. The job's statement is committed only when
JobPipelined holds, else discarded.

magma's changes are those of preempt (see preempt.py and docs/volcano-differences.md): starving by any vote
(#3787), Pending jobs that preemption could serve are considered (enqueue gate), gang-aware victim sets (a job
pushed below minAvailable is evicted whole, and the cheapest set per preemptor task served is chosen across
nodes), and belt-and-braces checks: preemptable "false", system-critical pods, Never, `reclaimable: false`
queues and their sub-queues, victims only from queues over their deserved share (when a share plugin publishes
it: the plugins' vote alone does not ensure it, since a first tier of gang and conformance decides before
proportion is asked) and never below a queue's guarantee.
"""

from __future__ import annotations

from ..framework import JobInfo, QueueInfo, Session, Statement, TaskStatus, action
from .allocate import OrderedHeap, group_key
from .preempt import Evictor, _remaining_same, collect_preemptors, finish_job, starving

S = TaskStatus


@action("reclaim")
def reclaim(ssn: Session, arguments: dict) -> None:
    ev = Evictor(ssn, dict(arguments or {}), "reclaim")
    queues: OrderedHeap[QueueInfo] = OrderedHeap(ssn.queue_order_cmp)
    preemptors: dict[str, OrderedHeap[JobInfo]] = {}
    for job in collect_preemptors(ssn):
        if job.queue not in preemptors:
            preemptors[job.queue] = OrderedHeap(ssn.job_order_cmp)
            queues.push(ssn.queues[job.queue])
        preemptors[job.queue].push(job)

    while queues:
        queue = queues.pop()
        if ssn.overused(queue):
            continue
        jobs = preemptors[queue.name]
        while jobs:
            job = jobs.pop()
            stmt = Statement(ssn)
            tasks = ssn.sorted_tasks([t for t in job.tasks.values() if t.status is S.PENDING])
            failed: set = set()
            while tasks and starving(ssn, job):
                task = tasks.pop(0)
                if task.never_preempts or group_key(task) in failed:
                    continue
                if not ev.cross_entitled(queue, task):
                    continue  # Volcano's Preemptive, judged along the branch (see Evictor.entitlement)
                if ev.place(stmt, task, job, "cross", _remaining_same(tasks, task)):
                    failed.clear()
                else:
                    failed.add(group_key(task))
            finish_job(ssn, ev, stmt, job)
