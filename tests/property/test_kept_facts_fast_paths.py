"""Fast paths over the records kept across sessions (fastpath.py) decide as the straightforward code does:
`node_facts_kept` and `queues_kept` when nodes and queues change between sessions (test_fast_paths' random
simulations, with Node and Queue objects written again at random times: labels, taints, cordons; queue weights,
capabilities, parents), `pod_facts_kept` and the job index's paths. Fast paths off and on, compared as there."""

from __future__ import annotations

import random
from unittest import mock

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magma.scheduler.framework import fastpath
from magma.sim.scenario import Timed

import test_fast_paths as tfp

_scenario = tfp.scenario


def scenario_with_updates(seed: int, n_nodes: int, n_jobs: int, conf: str = tfp.CONF):
    sc = _scenario(seed, n_nodes, n_jobs, conf)
    rng = random.Random(seed + 1)
    for _ in range(rng.randint(1, 4)):
        t = float(rng.randint(1, 200))
        if rng.random() < 0.5:
            nd = tfp.node(rng.randrange(n_nodes), rng)  # new labels (gpu-type) and taints drawn again
            if rng.random() < 0.2:
                nd.spec.unschedulable = True
            sc.arrivals.append(Timed(t, nd))
        else:
            name = rng.choice(["qa", "qb", "qc"])
            parent = rng.choice(["org", "root"]) if name != "qc" else "root"
            q = tfp.queue(name, parent, rng.randint(1, 3), rng.choice([None, 4, 8]), guarantee=rng.choice([None, 2]))
            for count in ("pending", "inqueue", "running", "unknown", "completed"):
                setattr(q.status, count, 0)  # (the queue controller reads the counts it wrote before)
            sc.arrivals.append(Timed(t, q))
    sc.arrivals.sort(key=lambda x: x.time)
    return sc


def _recorded_runs(seed: int, n_nodes: int, n_jobs: int, conf: str, switch: str) -> tuple[list, list]:
    """tfp.run with the fast path `switch` off, then on: the results and the simulations."""
    sims = []

    class Recorded(tfp.Simulation):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            sims.append(self)

    with mock.patch.object(tfp, "Simulation", Recorded):
        with fastpath.disabled(switch):
            off = tfp.run(seed, n_nodes, n_jobs, fast=True, conf=conf)
        on = tfp.run(seed, n_nodes, n_jobs, fast=True, conf=conf)
    return [off, on], sims


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n_nodes=st.integers(1, 6), n_jobs=st.integers(1, 14),
       conf=st.sampled_from(tfp.CONFS))
def test_node_and_queue_updates_decide_the_same(seed, n_nodes, n_jobs, conf):
    with mock.patch.object(tfp, "scenario", scenario_with_updates):
        slow = tfp.run(seed, n_nodes, n_jobs, fast=False, conf=conf)
        fast = tfp.run(seed, n_nodes, n_jobs, fast=True, conf=conf)
    assert slow == fast


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n_nodes=st.integers(1, 6), n_jobs=st.integers(1, 14),
       conf=st.sampled_from(tfp.CONFS))
def test_pods_written_in_place_keep_their_facts(seed, n_nodes, n_jobs, conf):
    """`pod_facts_kept`: pods bound, started, finished and evicted in place keep the request and shape of their
    record; the kept snapshot is checked against a full build at every session (`SnapshotCache.verify`) and the
    run decides as it does with the pods' facts derived again."""
    (derived, kept), sims = _recorded_runs(seed, n_nodes, n_jobs, conf, "pod_facts_kept")
    assert derived == kept
    assert sims[0].scheduler.cache.facts_kept == 0
    if sims[1].cluster.bindings:  # a bound pod is written in place: its next ingest keeps its facts
        assert sims[1].scheduler.cache.facts_kept > 0


# the job index's fast paths, and the count each keeps of the times it was taken
_INDEX_PATHS = [("index_status_writes_kept", "figures_kept"), ("index_visits_kept", "visits_kept")]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n_nodes=st.integers(1, 6), n_jobs=st.integers(1, 14),
       conf=st.sampled_from(tfp.CONFS), path=st.sampled_from(_INDEX_PATHS))
def test_job_index_paths_decide_the_same(seed, n_nodes, n_jobs, conf, path):
    """`index_status_writes_kept`: a job whose PodGroup status alone was written, keeping its phase, keeps its
    figures in the job index; `index_visits_kept`: a session's steps visit the jobs found at the last visit while
    it touched nothing more. The index is checked against a fresh one at every session (`SnapshotCache.verify`)
    and the run decides as it does without the path."""
    switch, count = path
    (off, on), sims = _recorded_runs(seed, n_nodes, n_jobs, conf, switch)
    assert off == on
    assert getattr(sims[0].scheduler.cache.index, count) == 0


@pytest.mark.parametrize("switch,count", _INDEX_PATHS)
def test_job_index_paths_are_taken(switch, count):
    # gangs that run have their PodGroup's Running counts written, their phase kept; sessions visit jobs in
    # several steps
    (off, on), sims = _recorded_runs(3, 4, 10, tfp.CONF, switch)
    assert off == on
    assert getattr(sims[1].scheduler.cache.index, count) > 0
