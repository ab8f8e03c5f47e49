"""End-to-end simulator tests: the JSON contract, the seed's stories and the run-loop rules."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from magma.cli.main import app
from magma.sim.result import build_result
from magma.sim.runner import Simulation
from magma.sim.scenario import ScenarioError, load_scenario

ROOT = Path(__file__).parent.parent.parent
EXAMPLES = ROOT / "examples"
runner = CliRunner()


def simulate(paths, config=None, until=None, period=1.0):
    scenario = load_scenario(paths, config)
    sim = Simulation(scenario, period=period, until=until)
    sim.run()
    return sim, build_result(sim)


def job(result, name):
    return next(j for j in result["jobs"] if j["name"] == name)


@pytest.fixture(scope="module")
def seed_run():
    return simulate([EXAMPLES / "seed-h100"], until=1800)


def test_result_matches_the_contract(seed_run):
    _, r = seed_run
    assert r["schemaVersion"] == 1 and r["endTime"] == 1800
    assert {"jobs", "queues", "summary", "events"} <= set(r)
    for j in r["jobs"]:
        assert {"namespace", "name", "kind", "queue", "phase", "submitTime", "startTime", "endTime", "preemptions",
                "restarts", "pods"} <= set(j)
        assert j["kind"] in ("Job", "PodGroup")
        for p in j["pods"]:
            assert {"name", "task", "node", "phase", "startTime", "endTime", "nominatedNode"} <= set(p)
            assert p["phase"] in ("Pending", "Pipelined", "Allocated", "Binding", "Bound", "Running", "Releasing",
                                  "Succeeded", "Failed", "Unknown")
    assert {j["name"] for j in r["jobs"] if j["kind"] == "Job"} >= {"emergency-hotfix-training", "nlp-train-0"}
    s = r["summary"]
    for k in ("gpuAllocation", "avgWaitSeconds", "p99WaitSeconds", "makespanSeconds", "preemptions", "sessions",
              "sessionLatencyMs"):
        assert k in s
    assert 0 <= s["gpuAllocation"] <= 1
    assert set(s["sessionLatencyMs"]) == {"mean", "p99", "max"}
    q = {q["name"]: q for q in r["queues"]}
    assert q["team-nlp"]["parent"] == "ai-org" and q["team-nlp"]["weight"] == 30
    assert isinstance(q["team-nlp"]["allocated"]["nvidia.com/gpu"], int)
    assert isinstance(q["ai-org"]["allocated"]["cpu"], float)
    json.dumps(r)  # serialisable


def test_seed_emergency_story(seed_run):
    sim, r = seed_run
    e = job(r, "emergency-hotfix-training")
    # Arrives at 10 minutes into a full cluster, runs within a few sessions on two whole nodes.
    assert e["submitTime"] == 600.0
    assert e["startTime"] is not None and e["startTime"] - e["submitTime"] <= 5
    assert e["phase"] == "Running" and len({p["node"] for p in e["pods"]}) == 2
    # Its GPUs came from preempting team work; nothing was taken from the emergency queue.
    assert r["summary"]["preemptions"] > 0
    assert all(j["preemptions"] == 0 for j in r["jobs"] if j["queue"] == "emergency")
    # No team was pushed below its guarantee.
    guarantee = {"team-nlp": 64, "team-cv": 64, "team-research": 32}
    alloc = {q["name"]: q["allocated"].get("nvidia.com/gpu", 0) for q in r["queues"]}
    for team, g in guarantee.items():
        assert alloc[team] >= g, (team, alloc)
    # Gangs never run partly: every team job runs all 4 pods or none.
    for j in r["jobs"]:
        running = sum(1 for p in j["pods"] if p["phase"] == "Running")
        assert running in (0, len(j["pods"])) or j["queue"] == "emergency"


def test_deadlock_without_gang_and_progress_with_gang():
    base = EXAMPLES / "deadlock"
    _, without = simulate([base / "cluster.yaml", base / "jobs.yaml"], config=base / "without-gang.conf", until=4 * 3600)
    a, b = job(without, "job-a"), job(without, "job-b")
    assert sum(1 for p in a["pods"] if p["node"]) == 3  # A holds the three free GPUs ...
    assert sum(1 for p in b["pods"] if p["node"]) == 0  # ... and B gets nothing
    assert a["endTime"] is None and b["endTime"] is None  # nobody finishes: deadlock
    _, with_gang = simulate([base / "cluster.yaml", base / "jobs.yaml"], config=base / "with-gang.conf", until=4 * 3600)
    a, b = job(with_gang, "job-a"), job(with_gang, "job-b")
    assert b["startTime"] == 0.0 and b["endTime"] == 3600.0 and b["phase"] == "Completed"
    assert a["startTime"] is None and all(p["node"] is None for p in a["pods"])
    assert "nvidia.com/gpu" in (a["reason"] or "")


def test_queue_sharing_caps_and_reclaim():
    sim, r = simulate([EXAMPLES / "queue-sharing"], until=3 * 3600)
    peak_c = max(s.gpu_allocated.get("team-c", 0) for s in sim.trace.samples)
    assert peak_c <= 16
    # team-a arrives at 10m and gets GPUs back within minutes, by reclaiming from team-b.
    a_start = min(job(r, f"a-train-{i}")["startTime"] or 1e9 for i in range(4))
    assert 600 <= a_start <= 900
    assert r["summary"]["preemptions"] > 0
    for s in sim.trace.samples:
        if s.time > 900:
            assert s.gpu_allocated.get("team-b", 0) >= 8 or s.time > 7200  # guarantee kept while team-b has work


def test_until_zero_runs_exactly_one_session(seed_run):
    scenario = load_scenario([EXAMPLES / "seed-h100"])
    sim = Simulation(scenario, until=0)
    sim.run()
    assert len(sim.trace.sessions) == 1 and sim.trace.end_time == 0 and sim.trace.last is not None


def test_default_stop_when_nothing_can_change():
    base = EXAMPLES / "deadlock"
    sim, r = simulate([base / "cluster.yaml", base / "jobs.yaml"], config=base / "with-gang.conf")
    assert r["summary"]["stopReason"] == "nothing can change any more"
    assert job(r, "job-b")["endTime"] == 3600.0
    assert r["endTime"] == 3601.0  # the session after job-b's completion saw nothing left to change
    assert r["summary"]["sessions"] < 10  # idle stretches are skipped


def test_work_clock_starts_when_gang_complete(tmp_path):
    (tmp_path / "s.yaml").write_text("""
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", nvidia.com/gpu: "2"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: g, namespace: ns, annotations: {sim.magma.io/duration: 100s}}
spec: {minMember: 2}
---
apiVersion: v1
kind: Pod
metadata: {name: g-0, namespace: ns, annotations: {scheduling.k8s.io/group-name: g}}
spec: {schedulerName: volcano, containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: g-1, namespace: ns, annotations: {scheduling.k8s.io/group-name: g, sim.magma.io/submit-at: 50s}}
spec: {schedulerName: volcano, containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}
""")
    _, r = simulate([tmp_path], period=10)
    g = job(r, "g")
    assert g["startTime"] == 50.0  # the second member arrives at 50s
    assert g["endTime"] == 150.0 and g["phase"] == "Completed"
    assert all(p["phase"] == "Succeeded" for p in g["pods"])


def test_deleted_node_fails_its_pods(tmp_path):
    (tmp_path / "s.yaml").write_text("""
apiVersion: v1
kind: Node
metadata: {name: n1, annotations: {sim.magma.io/delete-at: 30s}}
status: {allocatable: {cpu: "4"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
spec: {schedulerName: volcano, containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
""")
    sim, r = simulate([tmp_path], until=60, period=10)
    pod = sim.cluster.state().pods["ns/p"]
    assert pod.status.phase == "Failed"


def test_bad_input_exits_2_and_writes_nothing(tmp_path):
    (tmp_path / "bad.yaml").write_text("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
                                       "spec: {weight: -3, capability: {cpu: lots}}\n")
    out = tmp_path / "out.json"
    res = runner.invoke(app, ["simulate", str(tmp_path), "--json", str(out), "--report", str(tmp_path / "r.html")])
    assert res.exit_code == 2
    assert "bad.yaml:4: Queue q: spec.capability.cpu" in res.output
    assert "nothing was run" in res.output
    assert not out.exists() and not (tmp_path / "r.html").exists()


def test_bad_duration_annotation_is_named(tmp_path):
    (tmp_path / "s.yaml").write_text("""apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: g
  namespace: ns
  annotations:
    sim.magma.io/duration: soon
""")
    with pytest.raises(ScenarioError) as e:
        load_scenario([tmp_path])
    assert any("s.yaml:12: PodGroup ns/g: metadata.annotations.sim.magma.io/duration" in l for l in e.value.lines)


def test_cli_writes_json_and_report(tmp_path):
    out, rep = tmp_path / "r.json", tmp_path / "r.html"
    res = runner.invoke(app, ["simulate", str(EXAMPLES / "deadlock" / "cluster.yaml"),
                              str(EXAMPLES / "deadlock" / "jobs.yaml"), "--until", "2h", "--json", str(out),
                              "--report", str(rep)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["endTime"] == 7200
    html = rep.read_text()
    assert "GPU allocation by queue" in html and "plotly" in html and "job-b" in html


def test_explain_gives_numbers():
    res = runner.invoke(app, ["explain", str(EXAMPLES / "deadlock" / "cluster.yaml"),
                              str(EXAMPLES / "deadlock" / "jobs.yaml"), "--job", "ai-train/job-a", "--at", "10m"])
    assert res.exit_code == 0, res.output
    assert "PodGroup ai-train/job-a" in res.output and "not started" in res.output
    assert "4 pod(s) asking nvidia.com/gpu: 1" in res.output
    assert "nodes pass the predicates" in res.output


def test_a_run_leaves_the_cycle_collector_as_it_found_it():
    # The loop sets the scenario aside from the collector and runs its passes itself while it runs only.
    import gc

    thresholds = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    seen: list[bool] = []
    try:
        frozen = gc.get_freeze_count()
        Simulation(load_scenario([EXAMPLES / "queue-sharing"]), until=60).run(lambda t, h: seen.append(gc.isenabled()))
        assert seen and not any(seen)  # no automatic pass during the run...
        assert gc.isenabled() and gc.get_threshold() == (700, 10, 10)  # ...and the collector as it was after
        assert gc.get_freeze_count() <= frozen  # handed back (none were frozen before: none are now)
        gc.disable()
        Simulation(load_scenario([EXAMPLES / "queue-sharing"]), until=60).run()
        assert not gc.isenabled()  # a caller's "off" stays off
    finally:
        gc.enable()
        gc.set_threshold(*thresholds)


def test_the_loop_collects_when_the_tracked_objects_grew(monkeypatch):
    # Its own full passes, between steps, once the objects the collector tracks grew by _GC_GROWTH; the run records
    # the same as without them.
    import gc

    from magma.sim import runner

    passes: list[int] = []

    def counted(phase: str, info: dict) -> None:
        if phase == "stop":
            passes.append(info["generation"])

    plain = Simulation(load_scenario([EXAMPLES / "queue-sharing"]), until=60)
    plain.run()
    monkeypatch.setattr(runner, "_GC_GROWTH", 1000)
    collected = Simulation(load_scenario([EXAMPLES / "queue-sharing"]), until=60)
    gc.callbacks.append(counted)
    try:
        collected.run()
    finally:
        gc.callbacks.remove(counted)
    assert passes and set(passes) == {2}  # full passes only, and some ran
    results = [build_result(sim) for sim in (plain, collected)]
    for r in results:
        r.pop("summary")  # latencies
    assert json.dumps(results[0], default=str, sort_keys=True) == json.dumps(results[1], default=str, sort_keys=True)


def test_a_run_keeps_a_callers_frozen_objects_frozen():
    import gc

    gc.freeze()
    try:
        simulate([EXAMPLES / "queue-sharing"], until=60)
        assert gc.get_freeze_count() > 0  # not handed back (the count drops as frozen objects are freed)
    finally:
        gc.unfreeze()


def test_a_full_collection_during_a_run_sets_its_survivors_aside():
    # What survives a full pass during the run is frozen before the next step; all of it is handed back at the end,
    # and the run records what it records without the pass.
    import gc

    frozen_at: list[int] = []

    def progress(t: float, horizon: float) -> None:
        if not frozen_at:
            gc.collect()
        frozen_at.append(gc.get_freeze_count())

    plain = Simulation(load_scenario([EXAMPLES / "queue-sharing"]), until=60)
    collected = Simulation(load_scenario([EXAMPLES / "queue-sharing"]), until=60)
    plain.run()
    collected.run(progress)
    assert frozen_at[1] > frozen_at[0]  # set aside after the pass
    assert gc.get_freeze_count() == 0 and collected._after_collection not in gc.callbacks
    results = [build_result(sim) for sim in (plain, collected)]
    for r in results:
        r.pop("summary")  # latencies
    assert json.dumps(results[0], default=str, sort_keys=True) == json.dumps(results[1], default=str, sort_keys=True)
