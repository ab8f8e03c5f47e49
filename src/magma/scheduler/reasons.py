"""Why a job waits, in numbers.

Volcano says "0/32 nodes are available: 29 Insufficient nvidia.com/gpu"; magma says how much was needed and
how close the best node came, and names the queue bound with its figures when the queue is what holds a
job back. The same text goes to the PodGroup condition, the Unschedulable event, `magma explain` and the
simulator's report (seed pitfall 8: a gang failure always has a clear hint).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from magma.api.resources import PODS, Resources

from .framework import JobInfo, PredicateResult, Session, TaskInfo, TaskStatus

S = TaskStatus


def _amount(name: str, value: int) -> str:
    return Resources({name: int(value)}).quantity_text(name)


def node_fit_summary(ssn: Session, task: TaskInfo, rows: np.ndarray, pred: PredicateResult,
                     avail: np.ndarray) -> str:
    """`0/32 nodes are available: 29 Insufficient nvidia.com/gpu (need 8, best node has 4 free), ...`.

    `rows` are the candidate node rows, `pred` the predicate result over them, `avail` the resources
    the action offered (future idle) for all nodes.
    """
    table = ssn.table
    counts: Counter[str] = Counter()
    order: list[str] = []

    def add(reason: str, n: int) -> None:
        if n:
            if reason not in counts:
                order.append(reason)
            counts[reason] += n

    for reason, failing in pred.reasons:
        add(reason, int(failing.sum()))
    passed = rows[pred.mask]
    fits = table.fits(task.vec, avail, passed) if len(passed) else np.zeros(0, dtype=bool)
    short = passed[~fits]
    if len(short):
        a = avail[short]
        lacking = a < task.vec  # per node, per resource
        # A node is reported once, under its first missing resource (column order: cpu, memory, then sorted).
        first = np.argmax(lacking, axis=1)
        for col in np.unique(first):
            name = table.dims[col]
            nodes = short[first == col]
            best = int(avail[nodes, col].max())
            need = int(task.vec[col])
            if name == PODS:
                add("Too many pods", len(nodes))
            else:
                add(f"Insufficient {name} (need {_amount(name, need)}, best node has {_amount(name, max(best, 0))} free)",
                    len(nodes))
    available = int(fits.sum())
    total = len(ssn.node_list)
    parts = [f"{counts[r]} {r}" for r in order]
    head = f"{available}/{total} nodes are available"
    return head + (": " + ", ".join(parts) if parts else "")


def job_reason(ssn: Session, job: JobInfo) -> str | None:
    """The job-level reason: the queue or enqueue reason an action set, else the gang summary."""
    if job.reason:
        return job.reason
    waiting = job.count({S.PENDING, S.PIPELINED})
    if not waiting and job.is_ready():
        return None
    total = len(job.tasks)
    if total == 0:
        return f"no pods yet: 0/{job.min_available} pods of the gang exist"
    missing_valid = job.min_available - job.valid_count()
    if missing_valid > 0:
        return (f"{job.valid_count()}/{job.min_available} pods of the gang exist; "
                f"minMember {job.min_available} cannot be met until {missing_valid} more are created")
    detail = next(iter(job.fit_errors.values()), None)
    if job.is_pending():
        return detail or f"job is Pending: waiting for enqueue"
    unsched = waiting
    msg = f"{unsched}/{total} tasks in gang unschedulable"
    return f"{msg}: {detail}" if detail else msg
