"""sla: waiting time from the PodGroup annotation or the argument; overdue jobs first and let through."""

from __future__ import annotations

from plugin_builders import gang, job, nodes, open_session, queue, tiers_config

SLA_1H = tiers_config([{"name": "sla", "arguments": {"sla-waiting-time": "1h"}}])


def world():
    objs = nodes("gpu", 1)
    objs += gang("a", 1, creation=0, annotations={"sla-waiting-time": "10m"})
    objs += gang("b", 1, creation=100)
    objs += gang("c", 1, creation=50, annotations={"volcano.sh/sla-waiting-time": "2h", "sla-waiting-time": "1s"})
    return objs


def test_waiting_times_and_permits_on_the_session_clock():
    ssn = open_session(world(), SLA_1H, now=700)
    sla = ssn.plugins["sla"]
    assert sla.waiting(job(ssn, "a")) == 600 and sla.waiting(job(ssn, "b")) == 3600
    assert sla.waiting(job(ssn, "c")) == 7200  # the volcano.sh/ key wins
    assert ssn.job_enqueueable(job(ssn, "a")) is True and sla.permit(job(ssn, "a")) == 1
    assert sla.permit(job(ssn, "b")) == 0  # 600 s waited of 3600: abstain
    assert sla.permit(job(ssn, "a")) == 1 and ssn.job_pipelined(job(ssn, "a"))


def test_order_by_deadline_jobs_with_sla_first():
    ssn = open_session(world(), SLA_1H)
    assert [j.name for j in ssn.sorted_jobs(ssn.jobs.values())] == ["a", "b", "c"]  # 600, 3700, 7250
    no_global = open_session(world(), tiers_config(["sla"]))
    assert [j.name for j in no_global.sorted_jobs(no_global.jobs.values())] == ["a", "c", "b"]


def test_overdue_job_passes_a_rejecting_quota_in_a_later_tier():
    objs = nodes("gpu", 1) + [queue("small", 1, capability={"nvidia.com/gpu": 8})]
    objs += gang("big", 2, queue="small", gpu=8, with_min_resources=True, creation=0,
                 annotations={"sla-waiting-time": "5m"})
    conf = tiers_config(["sla"], ["proportion"])
    early = open_session(objs, conf, now=60)
    assert early.job_enqueueable(job(early, "big")) is False  # proportion: 16 > 8
    late = open_session(objs, conf, now=301)
    assert late.job_enqueueable(job(late, "big")) is True


def test_invalid_or_non_positive_times_are_ignored():
    objs = nodes("gpu", 1) + gang("x", 1, annotations={"sla-waiting-time": "soon"}) + \
        gang("y", 1, annotations={"sla-waiting-time": "0s"})
    ssn = open_session(objs, tiers_config(["sla"]))
    assert ssn.plugins["sla"].waiting(job(ssn, "x")) is None
    assert ssn.plugins["sla"].waiting(job(ssn, "y")) is None
