"""The starvation story on the simulator (reservation plugin, docs/reservation-backfill.md).

A small cluster (4 nodes x 4 GPUs) is kept busy by a stream of 1-GPU jobs, more than it can finish; an 8-GPU gang
(2 workers x 4 GPUs) arrives 5 minutes in. With Volcano's default config the gang never starts; with magma's
default config it gets a reservation and starts in bounded time, exactly when planned when every job says how long
it runs, and after the reserved nodes drained when none does; meanwhile the small jobs keep the cluster busy.
"""

from __future__ import annotations

import json

import pytest

from magma.api.config import VOLCANO_DEFAULT_CONF
from magma.sim.report import render_report
from magma.sim.result import build_result
from magma.sim.runner import Simulation
from magma.sim.scenario import load_scenario

NODES, GPUS = 4, 4
FILL, EVERY, STREAM_UNTIL = 16, 40, 60 * 60
GANG_AT, GANG_RUNS = 300, 900
UNTIL = 60 * 60  # the stream never stops

CLUSTER = f"""
apiVersion: sim.magma.io/v1alpha1
kind: NodePool
metadata: {{name: gpu}}
spec:
  count: {NODES}
  allocatable: {{cpu: "32", memory: 256Gi, nvidia.com/gpu: "{GPUS}"}}
"""


def _job(name: str, submit: int, minutes: int, gpus: int, replicas: int, estimate: bool) -> str:
    ann = f"sim.magma.io/submit-at: {submit}s, sim.magma.io/duration: {minutes}m"
    if estimate:
        ann += f", magma.io/expected-runtime: {minutes}m"
    return f"""---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
  annotations: {{{ann}}}
spec:
  minAvailable: {replicas}
  tasks:
  - name: worker
    replicas: {replicas}
    template:
      spec:
        containers:
        - name: c
          resources: {{limits: {{nvidia.com/gpu: {gpus}, cpu: "{gpus}", memory: {8 * gpus}Gi}}}}
"""


def small_minutes(i: int) -> int:
    return 5 + (i * 7) % 16  # 5..20 minutes, spread


def write_scenario(path, estimates: bool, volcano: bool = False):
    (path / "cluster.yaml").write_text(CLUSTER)
    times = [0] * FILL + list(range(EVERY, STREAM_UNTIL + 1, EVERY))
    jobs = "".join(_job(f"small-{i:03d}", t, small_minutes(i), 1, 1, estimates) for i, t in enumerate(times))
    jobs += _job("gang", GANG_AT, GANG_RUNS // 60, GPUS, 2, estimates)
    (path / "jobs.yaml").write_text(jobs)
    conf = None
    if volcano:
        conf = path.parent / f"{path.name}-volcano.conf"
        conf.write_text(VOLCANO_DEFAULT_CONF)
    return [path], conf


def run(tmp_path_factory, name, estimates, volcano=False):
    path = tmp_path_factory.mktemp(name)
    paths, conf = write_scenario(path, estimates, volcano)
    sim = Simulation(load_scenario(paths, conf), until=UNTIL)
    sim.run()
    return sim, build_result(sim)


@pytest.fixture(scope="module")
def volcano(tmp_path_factory):
    return run(tmp_path_factory, "volcano", estimates=True, volcano=True)


@pytest.fixture(scope="module")
def estimated(tmp_path_factory):
    return run(tmp_path_factory, "estimates", estimates=True)


@pytest.fixture(scope="module")
def unestimated(tmp_path_factory):
    return run(tmp_path_factory, "no-estimates", estimates=False)


def gang(result):
    return next(j for j in result["jobs"] if j["name"] == "gang")


def utilisation(sim, start, end) -> float:
    """Time-averaged share of GPUs allocated over [start, end)."""
    samples = [s for s in sim.trace.samples if start <= s.time < end]
    assert samples
    area = 0.0
    points = samples + [None]
    for a, b in zip(points, points[1:]):
        t1 = b.time if b is not None else end
        area += sum(a.gpu_allocated.values()) / a.gpu_total * (t1 - a.time)
    return area / (end - samples[0].time)


def test_volcano_default_starves_the_gang(volcano):
    sim, r = volcano
    g = gang(r)
    assert g["startTime"] is None and g["reservedAt"] is None
    assert r["summary"]["reservedJobs"] == 0 and r["summary"]["backfilledJobs"] == 0
    # ... while small jobs kept starting all along: the cluster was busy, just never for the gang.
    late_starts = [j for j in r["jobs"] if j["name"] != "gang" and (j["startTime"] or 0) > 50 * 60]
    assert late_starts
    assert utilisation(sim, GANG_AT, UNTIL) > 0.9


def test_reservation_starts_the_gang_when_planned(estimated):
    sim, r = estimated
    g = gang(r)
    assert g["reservedAt"] is not None and g["startTime"] is not None
    plans = [p for _, p in sim.trace.reservations["Job default/gang"]]
    assert all(p is not None for p in plans)
    # Accurate estimates: no backfilled job ever delayed the planned start, and the gang started on time.
    assert plans == sorted(plans, reverse=True)
    assert g["startTime"] <= plans[0]
    assert g["plannedStart"] == g["startTime"]
    # Bounded: the reservation holds once the jobs ahead of it in line have started; small jobs run <= 20 min.
    assert g["startTime"] - g["reservedAt"] <= 20 * 60 + 60
    assert g["endTime"] == g["startTime"] + GANG_RUNS
    assert g["reason"] is None


def test_small_jobs_backfill_while_the_gang_waits(estimated):
    sim, r = estimated
    g = gang(r)
    backfilled = [j for j in r["jobs"] if j["backfilled"]]
    assert backfilled and r["summary"]["backfilledJobs"] == len(backfilled)
    # Backfilled jobs started while the gang waited, and each ended before the gang's start or stayed off its nodes.
    gang_nodes = {p["node"] for p in g["pods"]}
    for j in backfilled:
        assert g["reservedAt"] <= j["startTime"] < g["startTime"] or j["startTime"] >= g["startTime"]
    during = [j for j in backfilled if j["startTime"] < g["startTime"]]
    assert during
    for j in during:
        on_gang_nodes = {p["node"] for p in j["pods"]} & gang_nodes
        if on_gang_nodes and j["endTime"] is not None:
            assert j["endTime"] <= g["startTime"]
    assert utilisation(sim, g["reservedAt"], g["startTime"]) > 0.8


def test_without_estimates_the_reserved_nodes_drain(estimated, unestimated):
    sim, r = unestimated
    g = gang(r)
    assert g["reservedAt"] is not None and g["startTime"] is not None
    assert g["plannedStart"] is None  # start unknown: nothing says when the small jobs end
    # Nothing new lands on the draining nodes, so the gang starts once their longest job ended.
    assert g["startTime"] - g["reservedAt"] <= 20 * 60 + 60
    # Estimates let small jobs use the reserved nodes meanwhile: higher utilisation while the gang waits.
    sim_e, r_e = estimated
    ge = gang(r_e)
    assert utilisation(sim_e, ge["reservedAt"], ge["startTime"]) > utilisation(sim, g["reservedAt"], g["startTime"])


def test_result_and_report_mark_reservations(estimated):
    sim, r = estimated
    for j in r["jobs"]:
        assert {"reservedAt", "plannedStart", "backfilled"} <= set(j)
    assert {"reservedJobs", "backfilledJobs"} <= set(r["summary"])
    json.dumps(r)
    html = render_report(sim, r, "starvation")
    assert "waiting with a reservation" in html and "started as backfill" in html


def test_reason_while_reserved(tmp_path_factory):
    path = tmp_path_factory.mktemp("reason")
    paths, _ = write_scenario(path, estimates=True)
    sim = Simulation(load_scenario(paths), until=GANG_AT + 600)
    sim.run()
    r = build_result(sim)
    g = gang(r)
    assert g["startTime"] is None
    reason = g["reason"]
    assert reason.startswith("reserved 1 node (4 nvidia.com/gpu), expected start in ") or \
        reason.startswith("reserved 2 nodes (8 nvidia.com/gpu), expected start in "), reason
    assert "backfilled meanwhile" in reason


def test_the_starvation_example_is_what_its_generator_writes():
    import importlib.util
    from pathlib import Path

    from magma.api.config import parse_config, volcano_default_config

    folder = Path(__file__).resolve().parents[2] / "examples" / "starvation"
    spec = importlib.util.spec_from_file_location("starvation_generate", folder / "generate.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert (folder / "estimates" / "small-jobs.yaml").read_text() == gen.render(True)
    assert (folder / "no-estimates" / "small-jobs.yaml").read_text() == gen.render(False)
    assert parse_config((folder / "volcano.conf").read_text()).unwrap() == volcano_default_config()
