"""overcommit: admit jobs while the cluster, over-committed by a factor, has room for them (Volcano's overcommit).

- idle = total * overcommit-factor - used, where used is every node's used resources (pods of any scheduler,
  terminating ones included) and the factor (argument `overcommit-factor`, default 1.2) is at least 1.
- inqueue = minResources of Inqueue jobs, plus minResources not yet allocated of Running jobs whose allocated
  tasks reach minMember, plus the minResources of jobs enqueued this session.
- JobEnqueueable: Permit without minResources; else Permit when inqueue + minResources <= idle on the resources
  minResources names; otherwise Reject, with the event "resource in cluster is overused" and the figures in
  `job.reason`.
"""

from __future__ import annotations

from fractions import Fraction

from magma.api.resources import EMPTY, Resources

from ..framework import PERMIT, REJECT, JobInfo, Session, fastpath, plugin
from ..framework.kept import Memo, by_arguments
from ._queuetree import amount, has_min_resources, job_inqueue, job_min_resources, requested_dims
from ._queuetree import typed_argument

NAME = "overcommit"
DEFAULT_FACTOR = 1.2


def _read_factor(arguments: dict) -> float:
    factor = typed_argument(NAME, arguments, "overcommit-factor", DEFAULT_FACTOR)
    if not isinstance(factor, (int, float)) or factor < 1.0:
        factor = DEFAULT_FACTOR
    return factor


# The factor by its argument and the overcommitted total by the total and the factor (fastpath.plugin_setup_kept):
# the plugin is made and opened every session with the same configuration, over a cluster total that seldom changes.
_FACTORS = Memo(65)
_TOTALS = Memo(65)


def _factor(arguments: dict) -> float:
    return by_arguments(_FACTORS, arguments, _read_factor)


def _overcommitted(total: Resources, factor: float) -> Resources:
    if not fastpath.plugin_setup_kept:
        return total.scaled(Fraction(str(factor)))
    key = (tuple(total.items()), factor)  # (names in their order, which the answer keeps)
    got = _TOTALS.get(key)
    if got is None:
        got = _TOTALS.keep(key, total.scaled(Fraction(str(factor))))
    return got


# The used and idle vectors at open by what they are made of (fastpath.plugin_setup_kept): the table's columns and
# its used amounts summed over the nodes (a row's bytes: small whatever the cluster's size), the total and the factor.
# Sessions often open over used amounts seen before.
_OPENED = Memo(1024)


def _used_and_idle(table, total: Resources, factor: float) -> tuple[Resources, Resources]:
    if not len(table):
        used = Resources()
        return used, _overcommitted(total, factor) - used
    row = table.used.sum(axis=0)
    if not fastpath.plugin_setup_kept:
        used = table.resources(row)
        return used, _overcommitted(total, factor) - used
    key = (total, factor, tuple(table.dims), row.tobytes())
    got = _OPENED.get(key)
    if got is None:
        used = table.resources(row)
        got = _OPENED.keep(key, (used, _overcommitted(total, factor) - used))
    return got


@plugin(NAME)
class OvercommitPlugin:
    def __init__(self, arguments: dict | None = None):
        self.arguments = dict(arguments or {})
        self.factor = _factor(self.arguments)
        self.idle = self.inqueue = self.used = EMPTY  # (set at open; vectors never change: the one empty one)

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.total = ssn.total
        self.used, self.idle = _used_and_idle(ssn.table, ssn.total, self.factor)
        inqueue = EMPTY
        index = getattr(ssn, "job_index", None)
        if index is not None:
            inqueue = index.total_sum("overcommit")  # the same sum, kept across sessions (fastpath.job_index)
        for job in ssn.jobs.values() if index is None else ():
            if not has_min_resources(job):
                continue
            if job.phase == "Inqueue":
                inqueue = inqueue + job_min_resources(job)
            else:
                inqueue = inqueue + job_inqueue(job)
        self.inqueue = inqueue
        ssn.add_fn("job_enqueueable", NAME, self.job_enqueueable)
        ssn.add_fn("job_enqueued", NAME, self.job_enqueued)

    def job_enqueueable(self, job: JobInfo) -> int:
        if not has_min_resources(job):
            return PERMIT
        need = job_min_resources(job)
        # exceeding_on(inqueue + need, idle, the resources it asks for), in plain ints per resource
        inqueue, idle = self.inqueue._v, self.idle._v
        amounts = need._v
        bad = [r for r in requested_dims(need) if inqueue.get(r, 0) + amounts[r] > idle.get(r, 0)]
        if not bad:
            return PERMIT
        job.reason = "cluster over-commit limit: " + "; ".join(
            f"{r} idle {amount(r, max(self.idle[r], 0))} (total {amount(r, self.total[r])} x {self.factor:g}"
            f" - used {amount(r, self.used[r])}), inqueue {amount(r, self.inqueue[r])}, job needs {amount(r, need[r])}"
            for r in bad)
        self.ssn.record_event("Normal", "Unschedulable", "PodGroup", job.key,
                              "resource in cluster is overused: " + ", ".join(f"overused {r}" for r in bad)
                              + f" ({job.reason})")
        return REJECT

    def job_enqueued(self, job: JobInfo) -> None:
        if has_min_resources(job):
            self.inqueue = self.inqueue + job_min_resources(job)
