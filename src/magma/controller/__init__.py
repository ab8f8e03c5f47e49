"""magma's controllers: Volcano Jobs (job.py, jobplugins/) and Queues (queue.py).

`Controller(cluster)` is what the simulator (every virtual second, after the scheduler session and the virtual
kubelet) and the `magma controller` command call:

- `sync() -> bool`: run the job controller, then the queue controller, once; True if anything was written;
- `next_timer(now) -> float | None`: the next time a sync would act on its own (policy timeouts, ttl), so a
  simulator may skip idle time up to it;
- `job_deleted(job)`: a Job was deleted; delete what it owns (what Kubernetes' garbage collector does).
"""

from __future__ import annotations

from magma.api.objects import Job
from magma.cluster.interface import Cluster

from .job import JobController
from .queue import QueueController


class Controller:
    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.jobs = JobController(cluster)
        self.queues = QueueController(cluster)

    def sync(self) -> bool:
        changed = self.jobs.sync()
        changed = self.queues.sync() or changed
        return changed

    def next_timer(self, now: float) -> float | None:
        return self.jobs.next_timer(now)

    def job_deleted(self, job: Job) -> None:
        self.jobs.job_deleted(job)


__all__ = ["Controller", "JobController", "QueueController"]
