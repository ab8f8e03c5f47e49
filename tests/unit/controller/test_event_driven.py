"""The event-driven sync visits only the jobs something happened to (fastpath.event_driven_controller)."""

from __future__ import annotations

from controller_harness import Harness, make_job

from magma.controller.job import JobController
from magma.scheduler.framework import fastpath


def visits(h: Harness) -> list[str]:
    seen: list[str] = []
    original = JobController._sync_one

    def counting(self, job, *args):
        seen.append(job.key)
        return original(self, job, *args)

    JobController._sync_one = counting
    try:
        h.sync()
    finally:
        JobController._sync_one = original
    return seen


def running_jobs(n: int, **spec) -> Harness:
    h = Harness(*[make_job(f"j{i}", **spec) for i in range(n)])
    h.sync()
    for i in range(n):
        h.enqueue(f"ns/j{i}")
    h.sync()
    for i in range(n):
        h.run_all(f"ns/j{i}")
    h.sync()
    h.sync()
    return h


def test_only_the_job_of_a_changed_pod_is_synced():
    h = running_jobs(12)
    assert visits(h) == []
    h.set_phase("j7-worker-0", "Failed", exit_code=1)
    assert visits(h) == ["ns/j7"]  # the gang restarts: its pods deleted and made again, its status written
    assert h.job("ns/j7").status.retry_count == 1
    assert visits(h) == []  # its own writes, taken in, call for no other sync


def test_a_podgroup_write_syncs_its_job():
    h = running_jobs(5)
    h.enqueue("ns/j3", phase="Unknown")
    assert visits(h) == ["ns/j3"]


def test_ttl_is_a_timer():
    h = running_jobs(4, ttlSecondsAfterFinished=30)
    for name in ("j2-worker-0", "j2-worker-1"):
        h.set_phase(name, "Succeeded")
    h.sync()
    assert h.phase("ns/j2") == "Completed"
    assert h.ctl.next_timer(h.t) == h.t + 30
    h.advance(29)
    assert visits(h) == []
    h.advance(1)
    assert visits(h) == ["ns/j2"]
    assert "ns/j2" not in h.state.jobs and not h.pods("ns/j2")


def test_switched_off_every_job_is_synced():
    h = running_jobs(6)
    with fastpath.disabled("event_driven_controller"):
        assert sorted(visits(h)) == [f"ns/j{i}" for i in range(6)]
