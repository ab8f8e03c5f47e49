"""Why a job waits, in numbers.

Volcano says "0/32 nodes are available: 29 Insufficient nvidia.com/gpu"; magma says how much was needed and
how close the best node came, and names the queue bound with its figures when the queue is what holds a
job back. The same text goes to the PodGroup condition, the Unschedulable event, `magma explain` and the
simulator's report (seed pitfall 8: a gang failure always has a clear hint).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from typing import Any

import numpy as np

from magma.api.resources import PODS, Resources

from .framework import READY, JobInfo, PredicateResult, Session, TaskInfo, TaskStatus, fastpath
from .framework.kept import Memo
from .framework.session import read_only

S = TaskStatus


@functools.lru_cache(maxsize=4096)
def _amount(name: str, value: int) -> str:
    return Resources({name: int(value)}).quantity_text(name)


# Node-fit summaries by everything they read (fastpath.fit_summaries_kept): the predicate result itself (read-only, so
# that its contents cannot change; kept results come back session after session), the rows, the request, what the rows
# that pass are offered, the node count and the table's columns. A job waiting for room meets the same nodes again.
# Only for a few rows: the key grows with them, and on a large cluster making it costs about what it saves.
_FIT_SUMMARIES = Memo(1024)
_FIT_SUMMARY_ROWS = 256


def node_fit_summary(ssn: Session, task: TaskInfo, rows: np.ndarray, pred: PredicateResult,
                     avail: np.ndarray) -> str:
    """`0/32 nodes are available: 29 Insufficient nvidia.com/gpu (need 8, best node has 4 free), ...`.

    `rows` are the candidate node rows, `pred` the predicate result over them, `avail` the resources
    the action offered (future idle) for all nodes.
    """
    if not fastpath.fit_summaries_kept or len(rows) > _FIT_SUMMARY_ROWS or not read_only(pred):
        return _node_fit_summary(ssn, task, rows, pred, avail)
    table = ssn.table
    key = (id(pred), rows.tobytes(), task.vec.tobytes(), avail[rows[pred.mask]].tobytes(), len(ssn.node_list),
           tuple(table.dims))
    got = _FIT_SUMMARIES.get(key)
    if got is None or got[0] is not pred:  # (the entry holds the result: its id stays its own)
        got = _FIT_SUMMARIES.keep(key, (pred, _node_fit_summary(ssn, task, rows, pred, avail)))
    return got[1]


def _node_fit_summary(ssn: Session, task: TaskInfo, rows: np.ndarray, pred: PredicateResult,
                      avail: np.ndarray) -> str:
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


_VOLATILE = re.compile(r"expected start in [0-9dhms]+|\d+ jobs? backfilled meanwhile|; now .*$")


def event_key(message: str | None) -> str | None:
    """What an Unschedulable event says, for telling whether it changed: a reservation's message without the figures
    that change every session (time to start, backfill count, the present fit), so that its event is not repeated
    each session for them alone."""
    if message and message.startswith("reserved "):
        return _VOLATILE.sub("#", message)
    return message


# ---------------------------------------------------------------- queue figures


def queue_figures(ssn: Session, names: list[str] | None = None) -> dict[str, dict]:
    """Per queue {"deserved", "allocated", "realCapability", "guarantee", ...} as the share plugin publishes them:
    `ssn.queue_shares` once published (session close), else live from any plugin offering `report()`
    (proportion, capacity). Empty when no share plugin runs. With `names`, the figures of those queues are
    right (others may be missing): a plugin with `report_of(name)` is asked for those alone."""
    shares = getattr(ssn, "queue_shares", None)
    if isinstance(shares, dict) and shares:
        return shares
    out: dict[str, dict] = {}
    for report_of, report in _figure_sources(ssn):
        report_of = report_of if names is not None else None
        if report_of is not None:
            for name in names:
                try:
                    got = report_of(name)
                except Exception:  # a plugin's report must never break a reason
                    continue
                if isinstance(got, dict):
                    out[name] = got
            continue
        if report is not None:
            try:
                got = report()
            except Exception:  # a plugin's report must never break a reason
                continue
            if isinstance(got, dict):
                out.update({k: v for k, v in got.items() if isinstance(v, dict)})
    return out


def _figure_sources(ssn: Session) -> list[tuple[Any, Any]]:
    """Per plugin of the session that offers figures, its `report_of` and `report` (each None when it has none
    callable), in the plugins' order; kept on the session for as many plugins as it has (they are only ever added)."""
    plugins = getattr(ssn, "plugins", {})
    kept = getattr(ssn, "_figure_sources", None)
    if kept is not None and kept[0] == len(plugins):
        return kept[1]
    sources = []
    for p in plugins.values():
        report_of, report = getattr(p, "report_of", None), getattr(p, "report", None)
        report_of, report = report_of if callable(report_of) else None, report if callable(report) else None
        if report_of is not None or report is not None:  # (a plugin with neither adds nothing)
            sources.append((report_of, report))
    try:
        ssn._figure_sources = (len(plugins), sources)
    except AttributeError:  # a session stand-in without attributes of its own
        pass
    return sources


def figure(fig: dict | None, key: str) -> Resources | None:
    """One figure of a queue's published figures, as Resources (None when it has no figures or not that one)."""
    if not fig:
        return None
    v = fig.get(key)
    if v is None:
        return None
    return v if isinstance(v, Resources) else Resources(v)


def ancestors(ssn: Session, name: str) -> list[str]:
    """The queue's ancestors, nearest first (cycles cut)."""
    out: list[str] = []
    q = ssn.queues.get(name)
    while q is not None and q.parent and q.parent not in out and q.parent != name:
        out.append(q.parent)
        q = ssn.queues.get(q.parent)
    return out


_BOUND = READY - {S.ALLOCATED}
_PIPELINED = frozenset({S.PIPELINED})


def gang_need(ssn: Session, job: JobInfo, task: TaskInfo | None = None) -> Resources:
    """What the job still needs to start: the requests of its gang's missing tasks, counting only what is bound
    or pipelined (a gang half-placed in an open statement counts as not placed), or at least `task`'s request.

    When the missing tasks are all the waiting ones or none (no TaskOrder to ask), the need is a function of the
    tasks' statuses and minAvailable: kept with the job's counts (`JobInfo.memo`) for the sessions it waits."""
    summed = job.memo(("reasons.gang_need", job.min_available), _whole_need)
    if summed is None:  # some of the waiting tasks, the first in TaskOrder
        summed = _gang_sum(ssn.sorted_tasks(_waiting(job))[:_missing(job)])
    empty, need = summed
    if task is not None and empty:
        return task.resreq.without(PODS)
    return need


def _waiting(job: JobInfo) -> list[TaskInfo]:
    return [t for t in job.tasks.values() if t.status in (S.PENDING, S.ALLOCATED)]


def _whole_need(job: JobInfo) -> tuple[bool, Resources] | None:
    """`_gang_sum` of the job's waiting tasks when every one or none is missing; None when it takes some of them."""
    waiting, missing = _waiting(job), _missing(job)
    if 0 < missing < len(waiting):
        return None
    return _gang_sum(waiting[:missing])


def _missing(job: JobInfo) -> int:
    return max(job.min_available - job.count(_BOUND) - job.count(_PIPELINED), 0)


def _gang_sum(missing: list[TaskInfo]) -> tuple[bool, Resources]:
    """(whether the `missing` tasks ask for nothing at all, what they ask for but pods)."""
    need = Resources.sum(t.resreq for t in missing)
    return need.is_empty(), need.without(PODS)


def queue_bound_reason(ssn: Session, queue_name: str, need: Resources) -> str:
    """`queue team-cv: deserved 96 nvidia.com/gpu, allocated 96, job needs 16 more` for the first queue on the way
    up whose deserved (else real capability) the job's need exceeds; without published figures the numbers of
    the queue are left out.

    The figures it reads (deserved, real capability, allocated) change only with allocate and deallocate events:
    with fastpath.queue_bound_memo the reason is kept per queue and need until the next event (a queue that
    refuses many jobs alike, in one allocate action)."""
    if not fastpath.queue_bound_memo:
        return _queue_bound_reason(ssn, queue_name, need)
    published = bool(getattr(ssn, "queue_shares", None))
    events = getattr(ssn, "placement_events", None)
    memo = ssn.__dict__.get("_queue_bound_memo")
    if memo is None or memo[0] != (events, published):
        memo = ssn.__dict__["_queue_bound_memo"] = ((events, published), {})
    key = (queue_name, need)
    got = memo[1].get(key)
    if got is None:
        got = memo[1][key] = _queue_bound_reason(ssn, queue_name, need)
    return got


# Queue-bound reasons by what their texts say (fastpath.queue_bound_kept): the verdict `_bound_verdict` draws from the
# need and the path's figures. A job its queue's share holds back is refused again for the same resources, session
# after session, while the figures of the others (cpu and memory allocated, mostly) move.
_BOUND_TEXTS = Memo(4096)


def _queue_bound_reason(ssn: Session, queue_name: str, need: Resources) -> str:
    q = ssn.queues.get(queue_name)
    if q is not None and q.state != "Open":
        return f"queue {queue_name} is {q.state}, not Open"
    chain = [queue_name, *ancestors(ssn, queue_name)]
    figures = queue_figures(ssn, chain)
    bounds = tuple((name, figure(fig, "deserved"), figure(fig, "realCapability"), figure(fig, "allocated"))
                   for name in chain for fig in (figures.get(name),))
    verdict = _bound_verdict(need, bounds)
    if not fastpath.queue_bound_kept:
        return _bound_text(verdict)
    got = _BOUND_TEXTS.get(verdict)
    if got is None:
        got = _BOUND_TEXTS.keep(verdict, _bound_text(verdict))
    return got


def _bound_verdict(need: Resources, bounds: tuple) -> tuple:
    """Everything the reason says, from the path's figures ((name, deserved, real capability, allocated) per queue):
    (label, the first queue whose bound the need exceeds, per resource it exceeds (name, bound, allocated, need)), or
    (None, the job's own queue, per resource needed (name, need)) when none does."""
    amounts = need._v
    needed = [r for r in sorted(amounts) if amounts[r] > 0]
    for index, label in ((1, "deserved"), (2, "real capability")):
        for chain_figures in bounds:
            name, bound, alloc = chain_figures[0], chain_figures[index], chain_figures[3]
            if bound is None or alloc is None:
                continue
            b, a = bound._v, alloc._v
            bad = tuple((r, b.get(r, 0), a.get(r, 0), amounts[r]) for r in needed
                        if a.get(r, 0) + amounts[r] > b.get(r, 0))
            if bad:
                return label, name, bad
    return None, bounds[0][0], tuple((r, amounts[r]) for r in needed)


def _bound_text(verdict: tuple) -> str:
    """The reason of `_queue_bound_reason` from its verdict."""
    label, name, figures = verdict
    if label is not None:
        return f"queue {name}: " + "; ".join(
            f"{label} {_amount(r, bound)} {r}, allocated {_amount(r, alloc)}, job needs {_amount(r, more)} more"
            for r, bound, alloc, more in figures)
    return (f"queue {name}: its share allows no more now, job needs "
            + ", ".join(f"{_amount(r, more)} {r}" for r, more in figures) + " more")


def record_queue_bound(ssn: Session, queue, job: JobInfo, task: TaskInfo) -> None:
    """Allocatable said no: put the queue bound, in numbers, on the job (once per session)."""
    if job.reason:
        return
    job.reason = queue_bound_reason(ssn, queue.name, gang_need(ssn, job, task))
    job.reason_code = job.reason_code or "NotEnoughResources"


def queue_overused_reason(ssn: Session, queue) -> str:
    fig = queue_figures(ssn).get(queue.name)
    deserved, alloc = figure(fig, "deserved"), figure(fig, "allocated")
    if deserved is None or alloc is None:
        return f"queue {queue.name} is overused: it holds its deserved share already"
    dims = [r for r in sorted(deserved) if deserved[r] > 0 or alloc[r] > 0] or sorted(alloc)
    figs = ", ".join(f"{r} deserved {_amount(r, deserved[r])}, allocated {_amount(r, alloc[r])}" for r in dims)
    return f"queue {queue.name} is overused ({figs}): no more allocation this session"


def enqueue_reason(ssn: Session, job: JobInfo) -> str:
    """Why enqueue kept the job Pending, when no plugin said it: its minResources against the queue's real
    capability (if published) and the cluster's idle resources."""
    need = job.min_resources.without(PODS)
    dims = [r for r in sorted(need) if need[r] > 0]
    fig = queue_figures(ssn).get(job.queue)
    real, alloc = figure(fig, "realCapability"), figure(fig, "allocated")
    if real is not None and alloc is not None:
        inq = figure(fig, "inqueue") or Resources()
        bad = [r for r in dims if need[r] + alloc[r] + inq[r] > real[r]]
        if bad:
            return f"queue {job.queue}: " + "; ".join(
                f"{r} real capability {_amount(r, real[r])}, allocated {_amount(r, alloc[r])}, inqueue "
                f"{_amount(r, inq[r])}, job needs {_amount(r, need[r])} more" for r in bad)
    table = ssn.table
    idle = table.resources(table.idle.sum(axis=0)) if len(table) else Resources()
    parts = [f"{r} needs {_amount(r, need[r])}, cluster has {_amount(r, max(idle[r], 0))} idle of "
             f"{_amount(r, ssn.total[r])}" for r in dims]
    return "not admitted by enqueue: minResources " + ("; ".join(parts) if parts else need.format())


# ---------------------------------------------------------------- the job's reason


def job_reason(ssn: Session, job: JobInfo) -> str | None:
    """The job-level reason, always with numbers: the queue, enqueue or validation reason an action or plugin
    set, else the gang summary with the first task's node-fit summary."""
    if job.reason:
        return job.reason
    waiting = job.count({S.PENDING, S.PIPELINED})
    if not waiting and job.is_ready():
        return None
    total = len(job.tasks)
    if total == 0:
        return f"no pods yet: 0/{job.min_available} pods of the gang exist"
    valid = job.valid_count()
    missing_valid = job.min_available - valid
    if missing_valid > 0:
        return (f"{valid}/{job.min_available} pods of the gang exist; "
                f"minMember {job.min_available} cannot be met until {missing_valid} more are created")
    detail = next(iter(job.fit_errors.values()), None)
    if job.is_pending():
        if detail:
            return detail
        need = job.min_resources.without(PODS)
        return (f"job is Pending: not yet admitted by enqueue ({total} pods, minMember {job.min_available}, "
                f"minResources {need.format()})")
    msg = f"{waiting}/{total} tasks in gang unschedulable"
    if detail:
        return f"{msg}: {detail}"
    pipelined = job.count({S.PIPELINED})
    ready = job.ready_count()
    if pipelined:
        return (f"{msg}: {pipelined} pipelined onto resources still being released "
                f"({ready} ready, minAvailable {job.min_available})")
    return f"{msg}: {ready} ready, minAvailable {job.min_available}, not placed in this session"
