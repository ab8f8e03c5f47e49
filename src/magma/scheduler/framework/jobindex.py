"""The jobs a session can act on, and per-queue sums of the jobs' figures, kept across sessions (fastpath.job_index).

In a big cluster most jobs run, whole and unchanged, from one session to the next: no action does anything with
them and close writes nothing for them. Visiting each of them in every plugin's open, every action and close costs
more than the rest of a quiet session. The incremental snapshot (cache.py) knows which jobs changed since the last
session; this index keeps, per job, what the session would compute from it at open, and updates only the changed
jobs (its old figures subtracted, its new ones added):

- `records`: per job its queue, its figures (`SUMS`: allocated, request, inqueue and elastic as the queue-share
  plugins count them, overcommit's inqueue), its dominant share (drf), the resources it names (share_dims), and
  whether it is *quiet*: the scheduler's `quiet` function (scheduler.py) says so when no action would do anything
  with the job and close would write nothing for it (all its pods placed, ready, valid, its PodGroup status
  already what close would write), giving the phase close reports for it;
- per queue the sums of the figures, the number of jobs and their uids in order (enqueue's queue order);
- `active`: the jobs that are not quiet. A session visits those and the jobs it changed itself (their tasks,
  `Session.touched_tasks`; their per-session fields, the cache's `touched` set): `session_jobs(ssn)`.

A full build of the snapshot rebuilds the index; `verify` checks the kept index against a fresh one (tests).
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from magma.api.resources import EMPTY, Resources

from . import fastpath
from .info import JobInfo

# The summed figures, in the order `figures` gives them.
SUMS = ("allocated", "request", "inqueue", "elastic", "overcommit")
_ALLOCATED = 0


@dataclass(eq=False)
class JobRecord:
    queue: str
    key: str
    order: tuple[int, int]  # (bare pod job, position): the job's place in the snapshot's job order
    sums: tuple[Resources, ...]  # per SUMS
    share: float  # drf's dominant share of the allocation
    dims: frozenset[str]  # resources the job names (minResources, its tasks' requests)
    phase: str | None  # the phase close reports when the job is quiet; None: not quiet

    def same(self, other: "JobRecord") -> bool:
        return (self.queue, self.key, self.order, self.sums, self.share, self.dims, self.phase) == (
            other.queue, other.key, other.order, other.sums, other.share, other.dims, other.phase)


# figures(job, total) -> (sums per SUMS, share, dims); quiet(job) -> the close phase of a quiet job, else None.
Figures = Callable[[JobInfo, Resources], tuple[tuple[Resources, ...], float, frozenset]]
Quiet = Callable[[JobInfo], "str | None"]


class JobIndex:
    def __init__(self, figures: Figures, quiet: Quiet, touched: set):
        self.figures = figures
        self.quiet = quiet
        self.touched = touched  # the cache's set of jobs whose per-session fields a session set
        self.built = False
        self.total = Resources()
        self.records: dict[str, JobRecord] = {}
        self.queue_sums: dict[str, list[Resources]] = {}
        self.queue_uids: dict[str, list[str]] = {}  # sorted
        self.dims: Counter = Counter()
        self.keys: Counter = Counter()
        self.active: set[str] = set()
        self.allocated: dict[str, Resources] = {}  # drf's per-job allocation, every job
        self.shares: dict[str, float] = {}  # drf's per-job share, every job
        self.phases: dict[str, str] = {}  # job key -> close phase, quiet jobs only
        self._active_order: list[str] | None = None  # `active` in job order, made on first use
        # total_sum's last, by figure: (queues_written then, the queues' vectors, their sum)
        self._totals: dict[int, tuple[int, tuple[Resources, ...], Resources]] = {}
        self.queues_written = 0  # writes to queue_sums or queue_uids since the index was built (_add, _remove, _move)
        self._names: tuple[int, list[str]] | None = None  # queue_names' last: (queues_written then, the names)
        self.figures_kept = 0  # jobs updated with their figures kept (fastpath.index_status_writes_kept)
        # visit's last answer: (the session's touched tasks, how many, how many jobs touched, the active order, jobs)
        self._visited: tuple | None = None
        self.visits_kept = 0  # visits answered so (fastpath.index_visits_kept)

    # ------------------------------------------------------------------ upkeep (the cache calls these)
    def rebuild(self, jobs: dict[str, JobInfo], total: Resources, order: Callable[[JobInfo], tuple[int, int]]) -> None:
        counts = self.figures_kept, self.visits_kept
        self.__init__(self.figures, self.quiet, self.touched)
        self.figures_kept, self.visits_kept = counts  # (counts over the index's life)
        self.built = True
        self.total = total
        for uid, job in jobs.items():
            self._add(uid, job, order(job), bulk=True)
        # per queue, the sums in one pass (Resources.sum: no intermediate vectors) and the uids sorted once
        by_queue: dict[str, list[str]] = {}
        for uid, rec in self.records.items():
            by_queue.setdefault(rec.queue, []).append(uid)
        records = self.records
        for q, uids in by_queue.items():
            self.queue_sums[q] = [Resources.sum(records[u].sums[i] for u in uids) for i in range(len(SUMS))]
            uids.sort()
        self.queue_uids = by_queue

    def update(self, uids: set[str], jobs: dict[str, JobInfo], order: Callable[[JobInfo], tuple[int, int]],
               same_figures: set[str] | frozenset[str] = frozenset()) -> None:
        """Jobs `uids` changed (or appeared, or went): take their old figures out and their new ones in.
        `same_figures`: those of them that are the records they were, with the same tasks and phase, their
        PodGroup's status written (fastpath.index_status_writes_kept): their figures are what they were, and
        only whether they are quiet is asked again."""
        if len(uids) > 256 and len(uids) * 4 > len(self.records):  # most jobs changed (every PodGroup's status
            # written, say): summing afresh is quicker than taking each job out and in
            self.rebuild(jobs, self.total, order)
            return
        records = self.records
        keep = same_figures if fastpath.index_status_writes_kept else ()
        for uid in uids:
            job = jobs.get(uid)
            old = records.get(uid)
            if job is None:
                if old is not None:
                    self._remove(uid)
                continue
            place = order(job)
            if old is not None and uid in keep:
                self.figures_kept += 1
                rec = JobRecord(job.queue, job.key, place, old.sums, old.share, old.dims, self.quiet(job))
            else:
                rec = self._record(job, place)
            if old is not None:
                if rec.same(old):
                    continue  # what it counts is what it counted (a PodGroup status written back, say)
                if fastpath.index_moves_in_place and self._move(uid, old, rec):
                    continue
                self._remove(uid)
            self._add(uid, job, place, rec=rec)

    def _move(self, uid: str, old: JobRecord, rec: JobRecord) -> bool:
        """`_remove` then `_add` for a job that stays in its queue (not its only job) under the same key, place and
        resources, leaving every figure, list and dict as they leave them (values and order) with less work: a sum
        whose figure did not change is left as it is when taking it out and in again would give it back in the same
        order (no resource of the figure drops out of it on the way); so are the resource counts. False: not such a
        job, nothing done."""
        if rec.queue != old.queue or rec.key != old.key or rec.order != old.order or rec.dims != old.dims:
            return False
        if len(self.queue_uids[rec.queue]) < 2:
            return False
        del self.records[uid]
        self.records[uid] = rec
        q = self.queue_sums[rec.queue]
        for i, (a, b) in enumerate(zip(old.sums, rec.sums)):
            if a == b and not _drops(q[i], a):
                continue
            self.queues_written += 1
            q[i] = q[i] - a + b
        dims = self.dims
        if any(dims[d] == 1 for d in rec.dims):  # one would leave the Counter and come back last
            self._uncount(old.dims)
            dims.update(rec.dims)
        keys = self.keys
        if keys[rec.key] == 1:
            del keys[rec.key]
            keys[rec.key] = 1
        del self.allocated[uid], self.shares[uid]
        self.allocated[uid] = rec.sums[_ALLOCATED]
        self.shares[uid] = rec.share
        if old.phase is not None:
            del self.phases[old.key]
        if rec.phase is not None:
            self.phases[rec.key] = rec.phase
        if (old.phase is None) != (rec.phase is None):  # (active: not quiet; the same order, so still in place)
            (self.active.add if rec.phase is None else self.active.discard)(uid)
            self._active_order = None
        return True

    def _record(self, job: JobInfo, order: tuple[int, int]) -> JobRecord:
        sums, share, dims = self.figures(job, self.total)
        return JobRecord(job.queue, job.key, order, sums, share, dims, self.quiet(job))

    def _add(self, uid: str, job: JobInfo, order: tuple[int, int], bulk: bool = False,
             rec: JobRecord | None = None) -> None:
        """Record a job (`rec`: its record, already made); `bulk`: the queue's sums and uids are made by the
        caller (rebuild)."""
        if rec is None:
            rec = self._record(job, order)
        self.records[uid] = rec
        sums, share, dims = rec.sums, rec.share, rec.dims
        if not bulk:
            self.queues_written += 1
            q = self.queue_sums.get(rec.queue)
            if q is None:
                self.queue_sums[rec.queue] = list(sums)
            else:
                for i, r in enumerate(sums):
                    q[i] = q[i] + r
            bisect.insort(self.queue_uids.setdefault(rec.queue, []), uid)
        self.dims.update(dims)
        self.keys[rec.key] += 1
        self.allocated[uid] = sums[_ALLOCATED]
        self.shares[uid] = share
        if rec.phase is None:
            self.active.add(uid)
            self._active_order = None
        else:
            self.phases[rec.key] = rec.phase

    def _remove(self, uid: str) -> None:
        rec = self.records.pop(uid)
        uids = self.queue_uids[rec.queue]
        del uids[bisect.bisect_left(uids, uid)]
        self.queues_written += 1
        if not uids:
            del self.queue_uids[rec.queue], self.queue_sums[rec.queue]
        else:
            q = self.queue_sums[rec.queue]
            for i, r in enumerate(rec.sums):
                q[i] = q[i] - r
        self._uncount(rec.dims)
        self.keys[rec.key] -= 1
        if not self.keys[rec.key]:
            del self.keys[rec.key]
        del self.allocated[uid], self.shares[uid]
        if uid in self.active:
            self.active.discard(uid)
            self._active_order = None
        if rec.phase is not None:
            del self.phases[rec.key]

    def _uncount(self, dims: frozenset[str]) -> None:
        """Take a job's resources out of the resource counts (a resource no job names any more leaves them)."""
        counts = self.dims
        for d in dims:
            n = counts[d] - 1
            if n:
                counts[d] = n
            else:
                del counts[d]

    # ------------------------------------------------------------------ the session's view
    def usable(self, ssn: Any) -> bool:
        """The index stands for the session's jobs: the same jobs, job keys not shared (close keys its phases
        by job key)."""
        return len(self.records) == len(ssn.jobs) and len(self.keys) == len(self.records)

    def queue_names(self) -> list[str]:
        """Queues holding jobs, in the order of their first job by uid (as the actions meet them)."""
        got = self._names
        if got is None or got[0] != self.queues_written:
            got = self._names = (self.queues_written, sorted(self.queue_uids, key=lambda q: self.queue_uids[q][0]))
        return list(got[1])

    def queue_sum(self, queue: str, name: str) -> Resources:
        q = self.queue_sums.get(queue)
        return q[SUMS.index(name)] if q is not None else Resources()

    def total_sum(self, name: str) -> Resources:
        """The sum of figure `name` over the queues; again the same vector while those are the same vectors."""
        i = SUMS.index(name)
        got = self._totals.get(i)
        if got is not None and got[0] == self.queues_written:
            return got[2]  # no queue's sums written since: the same vectors
        parts = tuple(q[i] for q in self.queue_sums.values())
        if got is not None and len(got[1]) == len(parts) and all(a is b for a, b in zip(got[1], parts)):
            self._totals[i] = (self.queues_written, parts, got[2])
            return got[2]  # (vectors never change: the same ones in the same order have the same sum)
        total = Resources.sum(parts)
        self._totals[i] = (self.queues_written, parts, total)
        return total

    def job_dims(self) -> set[str]:
        return set(self.dims)

    def visit(self, ssn: Any) -> list[JobInfo]:
        """The jobs not quiet at open and those the session changed so far, in the snapshot's job order."""
        jobs, records, active = ssn.jobs, self.records, self.active
        if self._active_order is None:
            self._active_order = sorted(active, key=lambda u: records[u].order)
        # The session's touched tasks and jobs only grow while it runs (they are put back between sessions): with
        # as many as at the last visit of the same session, over the same active jobs, the answer is the last one.
        tasks, last = ssn.touched_tasks, self._visited
        if (last is not None and tasks is not None and last[0] is tasks and last[1] == len(tasks)
                and last[2] == len(self.touched) and last[3] is self._active_order and fastpath.index_visits_kept):
            self.visits_kept += 1
            return list(last[4])
        out = [jobs[u] for u in self._active_order]
        extra = {t.job for t in tasks or () if t.job not in active}
        extra.update(j.uid for j in self.touched if j.uid not in active)
        if extra:
            out += [jobs[u] for u in extra if u in records and u in jobs]
            out.sort(key=lambda j: records[j.uid].order)
        if tasks is not None:
            self._visited = (tasks, len(tasks), len(self.touched), self._active_order, out)
        return list(out)

    def queue_allocations(self, ssn: Any) -> dict[str, Resources]:
        """`Session.queue_allocations` now: the sums at open, with the jobs whose tasks the session changed
        counted as they are now."""
        changed: dict[str, JobInfo] = {}
        for task in ssn.touched_tasks or ():
            job = ssn.jobs.get(task.job)
            if job is not None and task.job in self.records:
                changed[task.job] = job
        out = {}
        for q in ssn.queues:
            sums = self.queue_sums.get(q)
            out[q] = sums[_ALLOCATED] if sums is not None else EMPTY  # (vectors never change: one empty one)
        for uid, job in changed.items():
            q = job.queue
            if q in out:
                out[q] = out[q] - self.records[uid].sums[_ALLOCATED] + job.allocated()
        return out

    # ------------------------------------------------------------------ verification (tests)
    def verify(self, jobs: dict[str, JobInfo], total: Resources, order: Callable[[JobInfo], tuple[int, int]]) -> None:
        """Assert that the kept index is what a rebuild from `jobs` gives."""
        fresh = JobIndex(self.figures, self.quiet, self.touched)
        fresh.rebuild(jobs, total, order)
        assert self.total == fresh.total, "index: cluster total differs"
        assert set(self.records) == set(fresh.records), "index: other jobs"
        for uid, rec in self.records.items():
            assert rec.same(fresh.records[uid]), f"index: job {uid}: {rec} != {fresh.records[uid]}"
        assert self.queue_uids == fresh.queue_uids, "index: queue uids differ"
        assert {q: list(s) for q, s in self.queue_sums.items()} == fresh.queue_sums, \
            f"index: queue sums {self.queue_sums} != {fresh.queue_sums}"
        assert self.dims == fresh.dims and self.keys == fresh.keys, "index: dims or keys differ"
        assert self.active == fresh.active, f"index: active {self.active} != {fresh.active}"
        assert self.allocated == fresh.allocated and self.shares == fresh.shares, "index: drf figures differ"
        assert self.phases == fresh.phases, "index: phases differ"


def _drops(total: Resources, part: Resources) -> bool:
    """Whether `total - part` leaves out a resource of `total` (its amount is all in `part`)."""
    have = total._v
    return any(have.get(k, 0) == v for k, v in part.items())


def session_jobs(ssn: Any) -> Iterable[JobInfo]:
    """The jobs a step of the session must visit: every job, or, with the index (fastpath.job_index), the jobs
    that are not quiet and those the session changed so far. A quiet job is one no step would do anything with."""
    index = getattr(ssn, "job_index", None)
    if index is None:
        return ssn.jobs.values()
    return index.visit(ssn)
