"""priority: job and task order, preemption by priority, starving."""

from __future__ import annotations

from magma.scheduler.plugins.priority import priority_victims, starving
from plugin_builders import gang, job, nodes, open_session, pod, podgroup, priority_class, task, tiers_config

CONF = tiers_config(["priority"])


def _world():
    objs = nodes("n", 4) + [priority_class("high", 1000), priority_class("low", 10)]
    objs += gang("hi", 2, priority_class="high", creation=5)
    objs += gang("lo", 2, priority_class="low", running_on=["n-0", "n-1"], creation=1)
    objs += gang("none", 1, running_on=["n-2"], creation=0)
    return objs


def test_job_order_by_priority_then_creation():
    ssn = open_session(_world(), CONF)
    assert [j.name for j in ssn.sorted_jobs(ssn.jobs.values())] == ["hi", "lo", "none"]


def test_task_order_by_task_priority():
    objs = nodes("n", 1) + [podgroup("pg", min_member=1)]
    objs += [pod("pg-a-0", "pg", priority=5), pod("pg-b-1", "pg", priority=50),
             pod("pg-c-2", "pg", annotations={"volcano.sh/task-priority": "500"})]
    ssn = open_session(objs, CONF)
    assert [t.name for t in ssn.sorted_tasks(job(ssn, "pg").tasks.values())] == ["pg-c-2", "pg-b-1", "pg-a-0"]


def test_preemptable_other_jobs_need_lower_job_priority():
    ssn = open_session(_world(), CONF)
    hi = task(ssn, "hi-worker-0")
    lo = task(ssn, "lo-worker-0")
    none = task(ssn, "none-worker-0")
    assert priority_victims(ssn, hi, [lo, none]) == [lo, none]
    # lo (10) may take from none (0) but not from hi (1000).
    assert priority_victims(ssn, lo, [none, hi]) == [none]
    assert ssn.preemptable(hi, [lo]) == [lo]
    assert ssn.preemptable(lo, [hi]) == []


def test_preemptable_same_job_needs_lower_task_priority():
    objs = nodes("n", 2) + [podgroup("pg", min_member=1)]
    objs += [pod("pg-0", "pg", priority=100), pod("pg-1", "pg", priority=10, node="n-0"),
             pod("pg-2", "pg", priority=100, node="n-1")]
    ssn = open_session(objs, CONF)
    actor = task(ssn, "pg-0")
    assert priority_victims(ssn, actor, [task(ssn, "pg-1"), task(ssn, "pg-2")]) == [task(ssn, "pg-1")]


def test_starving_when_not_all_tasks_placed():
    objs = nodes("n", 4) + gang("part", 3, min_member=1, running_on=["n-0"]) + gang("full", 2, running_on=["n-1", "n-2"])
    ssn = open_session(objs, CONF)
    assert starving(job(ssn, "part")) and not starving(job(ssn, "full"))
    assert ssn.job_starving(job(ssn, "part")) is True


def test_job_bounds_by_job_priority():
    from magma.scheduler.plugins.priority import priority_job_bounds

    ssn = open_session(_world(), CONF)
    lo_actor = task(ssn, "lo-worker-0")
    # lo (10) may take none (0) whole, nothing of hi (1000); its own job is judged task by task
    assert priority_job_bounds(ssn, lo_actor, [job(ssn, "none"), job(ssn, "hi"), job(ssn, "lo")]) == [
        (True, True), (False, False), (True, True)]


def test_session_job_bounds_any_tier_may_decide():
    # Tier 1 (priority) refuses an equal-priority job; tier 2 (drf) then decides: the session's bound is what drf
    # may give. With priority alone, nothing.
    objs = nodes("n", 2) + gang("q", 4, gpu=2, running_on=["n-0"] * 4, min_member=1)
    objs += gang("p", 1, gpu=2, min_member=1)
    both = open_session(objs, tiers_config(["priority"], ["drf"]))
    q = job(both, "q")
    assert both.victim_job_bounds("preemptable", task(both, "p-worker-0"), [q]) == [(True, False)]
    alone = open_session(objs, CONF)
    assert alone.victim_job_bounds("preemptable", task(alone, "p-worker-0"), [job(alone, "q")]) == [(False, False)]
