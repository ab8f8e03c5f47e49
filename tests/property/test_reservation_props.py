"""Properties of reservations and backfill (the reservation plugin, docs/reservation-backfill.md), on random
clusters busy with running pods of random sizes, start times and run-time estimates:

- given accurate estimates, whatever allocate backfills after reserving for a gang never delays the gang's
  planned start: planning it again on the cluster as allocate left it gives the same start or an earlier one;
- a reservation never exceeds its queue's entitlement: what the queue still holds at the planned start plus the
  gang stays within the bound the queue's share plugin allocates up to (proportion: deserved; capacity: real
  capability), and within the deserved share when the reservation is marked entitled;
- a reservation of a queue that would be over its deserved share never holds against a job of another queue
  that stays within its own deserved share.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "actions"))

from action_builders import World, config, group_yaml, nodes_yaml, queue_yaml  # noqa: E402
from magma.api.resources import GPU, Resources  # noqa: E402
from magma.scheduler.framework import ACTIONS  # noqa: E402
from magma.scheduler.framework.info import ON_NODE, TaskStatus  # noqa: E402
from magma.scheduler.plugins.reservation import task_runtime  # noqa: E402
from magma.scheduler.scheduler import Scheduler, SessionResult, close_session  # noqa: E402

NOW = 1000.0


def conf(share: str = "proportion", max_jobs: int = 4):
    return config(f"""
        actions: "allocate"
        tiers:
        - plugins:
          - name: priority
          - name: gang
          - name: conformance
        - plugins:
          - name: drf
          - name: predicates
          - name: {share}
          - name: nodeorder
          - name: reservation
            arguments: {{reservation.maxJobs: {max_jobs}}}
        """)


runtimes = st.one_of(st.none(), st.integers(30, 3000))


def _estimate(seconds: int | None) -> str | None:
    return None if seconds is None else f"{seconds}s"


@st.composite
def busy_clusters(draw, queues=("default",)):
    """Nodes filled with running pods (random sizes, starts, estimates), a gang first in line that cannot fit now,
    then small jobs of random sizes and estimates."""
    n_nodes = draw(st.integers(2, 5))
    gpn = draw(st.sampled_from([4, 8]))
    text = nodes_yaml("n", n_nodes, gpu=gpn, cpu=256, memory="2048Gi")
    running = 0
    for i in range(n_nodes):
        free = gpn
        while free > 0:
            g = draw(st.integers(1, free))
            if draw(st.integers(0, 5)) == 0:
                break  # leave some room
            free -= g
            rt = draw(runtimes)
            started = NOW - draw(st.integers(0, 1200))
            text += group_yaml(f"run-{i}-{running}", 1, g, 0.0, _estimate(rt), "Running", [f"n-{i}"], started,
                               queue=draw(st.sampled_from(queues)))
            running += 1
    gang_queue = draw(st.sampled_from(queues))
    replicas = draw(st.integers(1, n_nodes))
    per = draw(st.sampled_from([gpn // 2, gpn]))
    text += group_yaml("gang", replicas, per, 10.0, _estimate(draw(runtimes)), queue=gang_queue)
    for k in range(draw(st.integers(0, 8))):
        q = draw(st.sampled_from(queues))
        text += group_yaml(f"small-{k}", draw(st.integers(1, 2)), draw(st.integers(1, gpn)), 20.0 + k,
                           _estimate(draw(runtimes)), queue=q)
    return text


def session(world: World, cfg):
    """One scheduler session, keeping the session object (Scheduler.run_once without throwing it away)."""
    sched = Scheduler(world.cluster, cfg)
    ssn = sched.open_session()
    for name in cfg.runnable_actions:
        ACTIONS[name](ssn, cfg.action_arguments(name))
    close_session(ssn, SessionResult(uid=ssn.uid, time=ssn.now))
    return ssn


def job_named(ssn, name):
    return next(j for j in ssn.jobs.values() if j.name == name)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(busy_clusters())
def test_backfill_never_delays_the_planned_start(text):
    world = World(text)
    world.now = NOW
    cfg = conf()
    ssn = session(world, cfg)
    plan = ssn.reservations
    gang = job_named(ssn, "gang")
    mine = next((r for r in plan.res if r.job is gang), None)
    if mine is None or mine.start is None:
        return  # placed, or nothing to compare (no reservation, or one with an unknown start)
    # The cluster as allocate left it (bound pods start now), planned again at the same time.
    again = Scheduler(world.cluster, cfg).open_session()
    replanned = again.reservations.plan(job_named(again, "gang"))
    assert replanned is not None and replanned.start is not None
    assert replanned.start <= mine.start, (replanned.start, mine.start)


def _expected_end(ssn, task) -> float:
    job = ssn.jobs.get(task.job)
    rt = task_runtime(task, job)
    if rt is None:
        return math.inf
    start = None
    if task.status not in (TaskStatus.ALLOCATED, TaskStatus.PIPELINED, TaskStatus.BINDING) and task.pod is not None:
        start = (task.pod.status.model_extra or {}).get("startTime")
    return (NOW if start is None else float(start)) + rt


@st.composite
def shared_clusters(draw):
    queues = ("qa", "qb", "qc")
    text = ""
    for q in queues:
        weight = draw(st.integers(1, 3))
        deserved = draw(st.sampled_from([None, 4, 8, 16]))
        text += queue_yaml(q, weight=weight, capability={GPU: draw(st.sampled_from([8, 16, 24, 64]))})
        if deserved is not None:  # capacity reads spec.deserved
            text = text.replace(f"name: {q}\nspec:\n  weight: {weight}",
                                f"name: {q}\nspec:\n  weight: {weight}\n  deserved: {{nvidia.com/gpu: \"{deserved}\"}}")
    return text + draw(busy_clusters(queues=queues)), draw(st.sampled_from(["proportion", "capacity"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(shared_clusters())
def test_no_reservation_exceeds_its_queue_entitlement(case):
    text, share = case
    world = World(text)
    world.now = NOW
    ssn = session(world, conf(share, max_jobs=6))
    plan = ssn.reservations
    attrs = ssn.plugins[share].attrs
    bound_of = "deserved" if share == "proportion" else "real_capability"
    for r in plan.res:
        q = r.job.queue
        reserved_rows = set(r.rows.tolist())
        # What the queue still holds when the gang starts (start unknown: all but what is on the draining nodes).
        held = Resources()
        for job in ssn.jobs.values():
            if job.queue != q:
                continue
            for t in job.tasks.values():
                if t.status not in ON_NODE or t.status is TaskStatus.RELEASING:
                    continue
                row = ssn.nodes[t.node].index
                gone = row in reserved_rows if r.start is None else _expected_end(ssn, t) <= r.start
                if not gone:
                    held = held + t.resreq
        at = attrs[q]
        future = held + r.need
        assert future[GPU] <= getattr(at, bound_of)[GPU], (q, held, r.need, getattr(at, bound_of))
        if r.entitled:  # a share counts on the resources it names
            assert at.deserved[GPU] > 0 and future[GPU] <= at.deserved[GPU], (q, held, r.need, at.deserved)
        # A reservation over its queue's share never holds against another queue within its own share.
        if not r.entitled:
            for job in ssn.jobs.values():
                if job.queue == q or job is r.job or not job.pending_tasks():
                    continue
                t = job.pending_tasks()[0]
                other = attrs.get(job.queue)
                if other is not None and 0 < (other.allocated + t.resreq)[GPU] <= other.deserved[GPU]:
                    assert not plan.applies(r, job, t.resreq)
