"""sla: jobs that waited too long go first and are let through (Volcano's sla plugin).

The waiting time is the job's PodGroup annotation `volcano.sh/sla-waiting-time` (else `sla-waiting-time`;
the Volcano Job controller copies Job annotations to the PodGroup), else the plugin argument
`sla-waiting-time`. Durations as magma reads them everywhere (`90s`, `15m`, `1h30m`, `2d`, seconds); zero,
negative or unreadable values mean no waiting time.

- JobOrder: jobs with a waiting time before jobs without; between two, the earlier deadline
  (creation + waiting time) first.
- JobEnqueueable and JobPipelined: Permit once the job has waited its time (session time - creation >= waiting
  time), else Abstain. Time is the session's clock (virtual in the simulator), not the wall clock.
"""

from __future__ import annotations

from magma.api.duration import parse_duration

from ..framework import ABSTAIN, PERMIT, JobInfo, Session, plugin
from ._queuetree import typed_argument

NAME = "sla"
ANNOTATIONS = ("volcano.sh/sla-waiting-time", "sla-waiting-time")


def _seconds(value) -> float | None:
    try:
        s = parse_duration(value)
    except (ValueError, TypeError):
        return None
    return s if s > 0 else None


def job_waiting_time(job: JobInfo) -> float | None:
    ann = job.podgroup.annotations if job.podgroup is not None else {}
    for key in ANNOTATIONS:
        if key in ann:
            s = _seconds(ann[key])
            if s is not None:
                return s
    return None


@plugin(NAME)
class SlaPlugin:
    def __init__(self, arguments: dict | None = None):
        self.arguments = dict(arguments or {})
        raw = typed_argument(NAME, self.arguments, "sla-waiting-time", None)
        self.waiting_time = raw if isinstance(raw, (int, float)) and raw > 0 else None
        self._cache: dict[str, float | None] = {}

    def waiting(self, job: JobInfo) -> float | None:
        if job.uid not in self._cache:
            own = job_waiting_time(job)
            self._cache[job.uid] = own if own is not None else self.waiting_time
        return self._cache[job.uid]

    def deadline(self, job: JobInfo) -> float | None:
        w = self.waiting(job)
        return None if w is None else job.creation + w

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        ssn.add_fn("job_order", NAME, self.job_order)
        ssn.add_fn("job_enqueueable", NAME, self.permit)
        ssn.add_fn("job_pipelined", NAME, self.permit)

    def job_order(self, a: JobInfo, b: JobInfo) -> int:
        da, db = self.deadline(a), self.deadline(b)
        if da is None or db is None:
            return (da is None) - (db is None)
        return (da > db) - (da < db)

    def permit(self, job: JobInfo) -> int:
        w = self.waiting(job)
        if w is None or self.ssn.now - job.creation < w:
            return ABSTAIN
        return PERMIT
