"""gang: validity, readiness, starving (with the seed's §11 tiers), victims, close conditions and events."""

from __future__ import annotations

from pathlib import Path

import yaml

from magma.api.config import config_from_configmap
from magma.api.load import load_text
from magma.scheduler.plugins.gang import (
    gang_breaks_job,
    gang_expand_victims,
    gang_victims,
    gang_whole_job_victims,
    validate,
)
from plugin_builders import close, gang, job, node, nodes, open_session, pod, podgroup, task, tiers_config

SEED = Path(__file__).resolve().parents[2] / "data" / "seed" / "s11-12"
GANG_ONLY = tiers_config(["gang"])


def test_not_enough_tasks_names_the_numbers():
    objs = nodes("n", 2) + [podgroup("pg", min_member=4), pod("pg-0", "pg"), pod("pg-1", "pg")]
    ssn = open_session(objs, GANG_ONLY)
    r = ssn.job_valid(job(ssn, "pg"))
    assert not r.passed and r.reason == "NotEnoughTasks"
    assert "2 valid" in r.message and "minMember 4" in r.message


def test_not_enough_pods_of_task():
    objs = nodes("n", 2) + [podgroup("pg", min_member=4, min_task_member={"worker": 3, "ps": 1})]
    objs += [pod(f"pg-w-{i}", "pg", role="worker") for i in range(2)]
    objs += [pod(f"pg-ps-{i}", "pg", role="ps") for i in range(2)]
    ssn = open_session(objs, GANG_ONLY)
    r = validate(job(ssn, "pg"))
    assert r is not None and r.reason == "NotEnoughPodsOfTask"
    assert "task worker has 2 valid pods, its minAvailable is 3" in r.message


def test_task_level_check_skipped_when_job_min_below_task_sum():
    # Volcano: minAvailable < sum of task minimums -> only the job-level count matters.
    objs = nodes("n", 2) + [podgroup("pg", min_member=2, min_task_member={"worker": 3, "ps": 1})]
    objs += [pod(f"pg-w-{i}", "pg", role="worker") for i in range(2)]
    ssn = open_session(objs, GANG_ONLY)
    assert validate(job(ssn, "pg")) is None


def test_ready_pipelined_starving_follow_the_counts():
    objs = nodes("n", 2) + gang("g", 2, gpu=8)
    ssn = open_session(objs, GANG_ONLY)
    j = job(ssn, "g")
    t0, t1 = sorted(j.tasks.values(), key=lambda t: t.name)
    assert not ssn.job_ready(j) and ssn.job_starving(j) and not ssn.job_pipelined(j)
    ssn.allocate(t0, ssn.nodes["n-0"])
    assert not ssn.job_ready(j) and ssn.job_starving(j)
    ssn.pipeline(t1, ssn.nodes["n-1"])
    assert not ssn.job_ready(j)
    assert ssn.job_pipelined(j) and not ssn.job_starving(j)
    ssn.unallocate(t1)
    ssn.allocate(t1, ssn.nodes["n-1"])
    assert ssn.job_ready(j)


def test_job_order_puts_unready_jobs_first():
    objs = nodes("n", 2) + gang("ready", 1, running_on=["n-0"], creation=0) + gang("waiting", 1, creation=10)
    ssn = open_session(objs, GANG_ONLY)
    order = ssn.sorted_jobs(ssn.jobs.values())
    assert [j.name for j in order] == ["waiting", "ready"]


def test_victims_keep_the_gang_unless_the_whole_job_is_offered():
    objs = nodes("n", 4) + gang("big", 4, min_member=2, gpu=2, running_on=["n-0", "n-0", "n-1", "n-1"])
    objs += gang("exact", 2, gpu=2, running_on=["n-2", "n-3"])
    ssn = open_session(objs, GANG_ONLY)
    big = sorted(job(ssn, "big").tasks.values(), key=lambda t: t.name)
    exact = sorted(job(ssn, "exact").tasks.values(), key=lambda t: t.name)
    # Volcano's rule: a job with 4 ready and minAvailable 2 gives up 2 tasks, no more ...
    assert [t.name for t in gang_victims(ssn, big[:3])] == ["big-worker-0", "big-worker-1"]
    # ... unless all of it is offered: then all of it may go (the action must then evict it whole).
    assert len(gang_victims(ssn, big)) == 4
    # A job at exactly its gang gives nothing piecemeal ...
    assert gang_victims(ssn, exact[:1]) == []
    preemptor = task(ssn, "big-worker-0")
    assert ssn.preemptable(preemptor, exact[:1]) == []
    # ... but the whole job can go when every evictable task of it is offered.
    assert {t.name for t in gang_victims(ssn, exact)} == {"exact-worker-0", "exact-worker-1"}
    assert {t.name for t in ssn.preemptable(preemptor, exact)} == {"exact-worker-0", "exact-worker-1"}


def test_whole_job_helpers():
    objs = nodes("n", 2) + gang("exact", 2, gpu=2, running_on=["n-0", "n-1"])
    objs += gang("loose", 3, min_member=1, gpu=1, running_on=["n-0", "n-1", "n-1"])
    ssn = open_session(objs, GANG_ONLY)
    exact = job(ssn, "exact")
    loose = job(ssn, "loose")
    assert {t.name for t in gang_whole_job_victims(ssn, exact)} == {"exact-worker-0", "exact-worker-1"}
    assert gang_breaks_job(ssn, exact, 1) and not gang_breaks_job(ssn, loose, 2) and gang_breaks_job(ssn, loose, 3)
    one = task(ssn, "exact-worker-1")
    expanded = gang_expand_victims(ssn, [one, task(ssn, "loose-worker-2")])
    assert [t.name for t in expanded] == ["exact-worker-1", "loose-worker-2", "exact-worker-0"]


def _seed_objects():
    text = (SEED / "12-queues.yaml").read_text()
    res = load_text(text)
    assert not res.problems
    objs = list(res.objects) + nodes("h100", 4)
    objs += [podgroup("emergency-hotfix-training", queue="emergency", min_member=2, priority_class="emergency",
                      phase="Inqueue")]
    objs += [pod(f"emergency-hotfix-training-worker-{i}", "emergency-hotfix-training", gpu=8,
                 priority_class="emergency") for i in range(2)]
    return objs


def _seed_config():
    doc = yaml.safe_load((SEED / "11-configmap.yaml").read_text())
    return config_from_configmap(doc["data"]).unwrap()


def test_seed_config_makes_a_pending_emergency_gang_starving():
    """Seed §11 tiers: priority, gang (enablePreemptable: true), conformance in tier 1. The session ANDs
    priority's and gang's JobStarving; both say yes for a gang that is still waiting, so preempt runs."""
    conf = _seed_config()
    ssn = open_session(_seed_objects(), conf, plugins=["priority", "gang", "conformance"])
    em = job(ssn, "emergency-hotfix-training")
    assert em.priority == 100000
    assert ssn.job_starving(em) is True


def test_starving_vote_for_a_running_gang_wanting_more():
    # 2 of 4 running, minAvailable 2: priority says starving (2 < 4), gang says not (2 >= 2): the tier ANDs to
    # False (Volcano's behaviour, #3787); with gang's enableJobStarving: false only priority votes.
    objs = nodes("n", 4) + gang("elastic", 4, min_member=2, running_on=["n-0", "n-1"])
    both = open_session(objs, tiers_config(["priority", "gang"]))
    assert both.job_starving(job(both, "elastic")) is False
    off = open_session(objs, tiers_config(["priority", {"name": "gang", "enableJobStarving": False}]))
    assert off.job_starving(job(off, "elastic")) is True


def test_close_sets_conditions_and_records_one_event_per_new_message():
    objs = [node("n-0", gpu=8)] + gang("big", 2, gpu=8, phase="Inqueue") + gang("fine", 1, gpu=1, running_on=["n-0"])
    ssn = open_session(objs, GANG_ONLY)
    big = job(ssn, "big")
    big.fit_errors["x"] = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu (need 8, best node has 7 free)"
    close(ssn)
    cond = next(c for c in big.conditions if c.type == "Unschedulable")
    assert cond.reason == "NotEnoughResources" and cond.status == "True" and cond.transition_id == "test-session"
    assert cond.message.startswith("2/2 tasks in gang unschedulable: 0/1 nodes are available")
    fine = job(ssn, "fine")
    assert [c.type for c in fine.conditions] == ["Scheduled"]
    events = [e for e in ssn.events if e[1] == "Unschedulable"]
    assert events == [("Warning", "Unschedulable", "PodGroup", "default/big", cond.message)]

    # Next session: the PodGroup already carries that condition; no second event for the same message.
    objs2 = [node("n-0", gpu=8)] + gang("big", 2, gpu=8, phase="Inqueue", conditions=[cond.model_dump(by_alias=True)])
    ssn2 = open_session(objs2, GANG_ONLY)
    job(ssn2, "big").fit_errors["x"] = big.fit_errors["x"]
    close(ssn2)
    assert [e for e in ssn2.events if e[1] == "Unschedulable"] == []


def test_close_reports_not_enough_tasks():
    objs = nodes("n", 2) + [podgroup("pg", min_member=3), pod("pg-0", "pg")]
    ssn = open_session(objs, GANG_ONLY)
    close(ssn)
    cond = job(ssn, "pg").conditions[-1]
    assert cond.type == "Unschedulable" and cond.reason == "NotEnoughTasks"
    assert "1/3 pods of the gang exist" in cond.message
