"""The job index (fastpath.job_index): a session where nothing changed visits no running job, and what the index
holds for the plugins is what the straightforward sums give."""

from __future__ import annotations

from action_builders import World, conf, gang_yaml, nodes_yaml, queue_yaml
from magma.scheduler.framework import fastpath
from magma.scheduler.framework.jobindex import session_jobs
from magma.scheduler.plugins._queuetree import share_dims
from magma.scheduler.scheduler import Scheduler

CONF = conf("enqueue, allocate, backfill", ["priority", "gang", "conformance"],
            ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"])


def world() -> World:
    return World(nodes_yaml("n", 2, gpu=8) + queue_yaml("team")
                 + gang_yaml("a", "team", 2, gpu=4, running_on=["n-0", "n-0"])
                 + gang_yaml("b", "team", 2, gpu=4, running_on=["n-1", "n-1"], min_resources=True)
                 + gang_yaml("big", "team", 2, gpu=8, phase="Pending"))


def test_a_quiet_session_visits_only_the_jobs_that_wait():
    w = world()
    w.tick(0)  # the kubelet starts the bound pods
    scheduler = Scheduler(w.cluster, CONF)
    scheduler.run_once()  # writes every PodGroup's status (conditions, counts)
    scheduler.run_once()  # takes those writes in: the running jobs are quiet now
    ssn = scheduler.open_session()
    assert ssn.job_index is not None
    assert [j.name for j in session_jobs(ssn)] == ["big"]  # admitted, waiting for room: visited; a and b: not
    assert ssn.job_index.queue_allocations(ssn) == ssn.queue_allocations()
    assert ssn.job_index.queue_sum("team", "allocated") == sum(
        (j.allocated() for j in ssn.jobs.values() if j.queue == "team"), start=type(ssn.total)())
    dims = share_dims(ssn)
    ssn.job_index = None
    assert share_dims(ssn) == dims
    result = scheduler.run_once()
    assert result.phases == {"default/a": "Running", "default/b": "Running", "default/big": "Inqueue"}
    assert "default/big" in result.reasons


def test_without_the_fast_path_every_job_is_visited():
    w = world()
    w.tick(0)
    scheduler = Scheduler(w.cluster, CONF)
    with fastpath.disabled("job_index"):
        scheduler.run_once()
        scheduler.run_once()
        ssn = scheduler.open_session()
        assert ssn.job_index is None
        assert sorted(j.name for j in session_jobs(ssn)) == ["a", "b", "big"]


def test_preempt_takes_a_queues_jobs_from_the_index_as_grouping_every_job_gives_them():
    from magma.scheduler.actions.preempt import Evictor

    w = world()
    w.tick(0)
    scheduler = Scheduler(w.cluster, CONF)
    scheduler.run_once()
    ssn = scheduler.open_session()
    assert ssn.job_index is not None
    from_index = Evictor(ssn, {}, "preempt")
    got = {q: from_index.queue_jobs(q) for q in ("team", "none")}
    assert from_index._jobs_by_queue is None  # (nothing grouped every job)
    grouped = Evictor(ssn, {}, "preempt").jobs_by_queue()
    assert got == {"team": grouped["team"], "none": []}
    assert got["team"] == sorted(ssn.jobs.values(), key=lambda j: j.uid)  # every job is in team, by uid
