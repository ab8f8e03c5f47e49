"""The simulator's own fast paths record exactly what the straightforward loop records (issue 5).

Random small clusters with Volcano Jobs (through the job controller: PodGroups, pods, policies, restarts, commands,
ttl deletions) beside bare PodGroups and pods run through the simulator twice: with every fast path off
(`fastpath.disabled()`: the controller syncs every job at every step, the recorder scans every pod, every session
runs) and with them on (`event_driven_controller`, `incremental_recorder`, `skip_quiet_sessions`, the controller's
`fast_template_copy`, `job_defaults_check`, `queue_sync_recounted`, `light_podgroup_syncs`, `settled_pass_skipped`,
`ttl_syncs_light` and `podgroup_quantities_shared`, and the scheduler's). The result JSON (but the count and latency of
sessions), every sample of the time series, the pod runs, owners, job starts and ends, binds, evictions, events and
the pods, PodGroups and Jobs left in the cluster must be the same; the sessions that bound or evicted must be the
same; and the fast run may only leave out sessions of the slow run.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magma.api.defaults import default_job
from magma.api.objects import Command, Job
from magma.scheduler.framework import fastpath
from magma.sim.result import build_result
from magma.sim.runner import Simulation
from magma.sim.scenario import Scenario, Timed, load_scenario

from test_fast_paths import _config, job_objects, scenario as podgroup_scenario

POLICIES = [
    [],
    [{"event": "PodEvicted", "action": "RestartJob"}],
    [{"event": "PodFailed", "action": "RestartJob"}, {"event": "PodPending", "action": "AbortJob", "timeout": "40s"}],
    [{"event": "TaskCompleted", "action": "CompleteJob"}],
]


def volcano_job(j: int, rng: random.Random, queues: list[str], t: float) -> Job:
    tasks = []
    for name in rng.sample(["worker", "ps"], rng.randint(1, 2)):
        gpus = rng.choice([0, 1, 2, 4])
        res: dict[str, Any] = {"requests": {"cpu": rng.choice(["1", "2"]), "memory": "2Gi"}}
        if gpus:
            res["limits"] = {"nvidia.com/gpu": gpus}
        tasks.append({"name": name, "replicas": rng.randint(1, 3),
                      "template": {"spec": {"containers": [{"name": "main", "resources": res}],
                                            "restartPolicy": "OnFailure"}}})
    total = sum(t["replicas"] for t in tasks)
    spec: dict[str, Any] = {"schedulerName": "volcano", "queue": rng.choice(queues), "tasks": tasks,
                            "minAvailable": rng.randint(1, total), "policies": rng.choice(POLICIES),
                            "maxRetry": rng.choice([1, 3])}
    ttl = rng.choice([None, 0, 20, 300])
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    pc = rng.choice([None, "low", "high"])
    if pc:
        spec["priorityClassName"] = pc
    return Job.model_validate({
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
        "metadata": {"name": f"v{j}", "namespace": rng.choice(["a", "b"]), "creationTimestamp": t},
        "spec": spec})


def command(i: int, rng: random.Random, job: Job) -> Command:
    return Command.model_validate({
        "apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
        "metadata": {"name": f"cmd{i}", "namespace": job.namespace},
        "action": rng.choice(["AbortJob", "ResumeJob", "RestartJob", "CompleteJob", "TerminateJob"]),
        "targetObject": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": job.name}})


def scenario(seed: int, n_nodes: int, n_pgs: int, n_jobs: int) -> Scenario:
    rng = random.Random(seed)
    sc = podgroup_scenario(seed, n_nodes, n_pgs)
    queues = ["qa", "qb", "qc", "default"]
    for j in range(n_jobs):
        t = 0.0 if rng.random() < 0.3 else float(rng.randint(1, 200))
        job = volcano_job(j, rng, queues, t)
        if rng.random() < 0.5:
            job = default_job(job)  # as a scenario's loader leaves it (the controller then finds no default missing)
        sc.durations[("Job", job.key)] = float(rng.choice([20, 60, 200]))
        if t > 0:
            sc.arrivals.append(Timed(t, job))
        else:
            sc.initial.append(job)
        r = rng.random()
        if r < 0.15:
            sc.arrivals.append(Timed(float(rng.randint(5, 300)), command(j, rng, job)))
        elif r < 0.25:
            sc.deletions.append((float(rng.randint(5, 300)), "Job", job.key))
    if n_nodes > 1 and rng.random() < 0.2:
        sc.deletions.append((float(rng.randint(30, 200)), "Node", f"n{n_nodes - 1}"))
    # a late PodGroup, so that jobs come after idle stretches
    for o in job_objects(n_pgs + 1, rng, queues, 400.0):
        sc.arrivals.append(Timed(400.0, o))
    sc.arrivals.sort(key=lambda x: x.time)
    sc.deletions.sort(key=lambda d: d[0])
    return sc


def _dump(obj) -> dict:
    """The object's fields, but the PodGroup conditions' transitionID (random: a new one at every write)."""
    out = obj.model_dump()
    for c in (out.get("status") or {}).get("conditions") or []:
        c.pop("transition_id", None)
    return out


def run(seed: int, n_nodes: int, n_pgs: int, n_jobs: int, fast: bool, switches: tuple[str, ...] = ()) -> tuple:
    """The simulation's records, with every fast path (or those named) off unless `fast`."""
    sim = Simulation(scenario(seed, n_nodes, n_pgs, n_jobs), period=1.0, until=900)
    with contextlib.nullcontext() if fast else fastpath.disabled(*switches):
        trace = sim.run()
    result = build_result(sim)
    result["summary"].pop("sessions")
    result["summary"].pop("sessionLatencyMs")
    acting = [(s.time, s.binds, s.evictions) for s in trace.sessions if s.binds or s.evictions]
    samples = [(s.time, s.gpu_allocated, s.gpu_total, s.deserved) for s in trace.samples]
    events = [(e.time, e.type, e.reason, e.kind, e.key, e.message) for e in sim.cluster.events]
    recorded = (list(trace.pod_runs.items()), list(trace.job_of_pod.items()), list(trace.job_start.items()),
                list(trace.job_end.items()), trace.evicted_pods, trace.reservations, trace.backfilled,
                trace.stop_reason, trace.end_time)
    state = sim.cluster.state()
    # the objects the controller made and wrote (pods from templates, PodGroups, Job statuses), as they end
    objects = [(key, _dump(obj)) for objs in (state.pods, state.podgroups, state.jobs) for key, obj in objs.items()]
    same = (json.dumps(result, sort_keys=True, default=str), acting, samples, events, recorded,
            sim.cluster.bindings, sim.cluster.evictions, objects)
    return same, {s.time for s in trace.sessions}, trace.skipped_sessions


def compare(seed: int, n_nodes: int, n_pgs: int, n_jobs: int) -> int:
    slow, slow_times, slow_skipped = run(seed, n_nodes, n_pgs, n_jobs, fast=False)
    fast, fast_times, fast_skipped = run(seed, n_nodes, n_pgs, n_jobs, fast=True)
    assert slow_skipped == 0
    assert slow == fast
    assert fast_times <= slow_times and len(slow_times) - len(fast_times) == fast_skipped
    return fast_skipped


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n_nodes=st.integers(1, 5), n_pgs=st.integers(0, 6), n_jobs=st.integers(1, 10))
def test_simulations_with_volcano_jobs_record_the_same_with_and_without_fast_paths(seed, n_nodes, n_pgs, n_jobs):
    compare(seed, n_nodes, n_pgs, n_jobs)


def test_quiet_sessions_are_skipped_and_controller_syncs_few_jobs():
    """The fast paths do act on such workloads (the comparison above is not vacuous)."""
    skipped = sum(compare(seed, 4, 4, 8) for seed in range(3))
    assert skipped > 0


def test_clock_reading_plugins_turn_skipping_off():
    sc = scenario(7, 3, 3, 6)
    sc.config = _config(
        'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: gang\n  - name: sla\n'
        '    arguments:\n      sla-waiting-time: 1m\n  - name: predicates\n  - name: proportion\n')
    sim = Simulation(sc, period=1.0, until=600)
    trace = sim.run()
    assert trace.skipped_sessions == 0 and trace.sessions


def test_finished_pods_deleted_at_ttl_need_no_session():
    """skip_inert_writes: a ttl deletion takes away pods no record reflects (the job finished, its PodGroup is gone);
    the session it would start repeats the last quiet one, and is skipped, with everything recorded the same."""
    seed = Path(__file__).resolve().parents[2] / "examples" / "seed-h100"
    job = """---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: short
  namespace: team-nlp
  annotations: {sim.magma.io/submit-at: 10s, sim.magma.io/duration: 100s}
spec:
  queue: team-nlp
  minAvailable: 2
  ttlSecondsAfterFinished: 300
  tasks:
    - name: worker
      replicas: 2
      template:
        spec:
          containers:
            - name: main
              image: train:latest
              resources: {limits: {nvidia.com/gpu: 8, cpu: "48", memory: 512Gi}}
"""

    def simulate(skip_inert: bool) -> tuple:
        with tempfile.TemporaryDirectory() as tmp:
            f = Path(tmp) / "job.yaml"
            f.write_text(job)
            sc = load_scenario([seed / "cluster.yaml", seed / "queues.yaml", seed / "scheduler-config.yaml", f])
        sim = Simulation(sc, period=1.0)
        with contextlib.nullcontext() if skip_inert else fastpath.disabled("skip_inert_writes"):
            trace = sim.run()
        result = build_result(sim)
        result["summary"].pop("sessions")
        result["summary"].pop("sessionLatencyMs")
        events = [(e.time, e.type, e.reason, e.kind, e.key, e.message) for e in sim.cluster.events]
        return json.dumps(result, sort_keys=True), events, [s.time for s in trace.sessions]

    off, on = simulate(False), simulate(True)
    assert off[:2] == on[:2]
    deleted_at = 10 + 1 + 100 + 300  # bound at 11 s, finished 100 s later, deleted after the ttl
    assert any(deleted_at <= t <= deleted_at + 1 for t in off[2])
    assert not any(deleted_at <= t <= deleted_at + 1 for t in on[2])
    assert set(on[2]) < set(off[2])


SEED_DIR = Path(__file__).resolve().parents[2] / "examples" / "seed-h100"


def seed_gangs(tmp: Path, seed: int, jobs: int) -> Scenario:
    """The seed cluster (examples/seed-h100) with gangs of 2-4 pods x 4-8 GPUs (some elastic: minAvailable below the
    pods) arriving in its team queues within an hour, team-nlp's first: more than the cluster and the teams' shares,
    so that queues stop gangs part-way; some pinned to one node, so that a share may allow more than the nodes
    hold."""
    rng = random.Random(seed)
    docs = []
    for i in range(jobs):
        pods, gpus, at = rng.choice([2, 4]), rng.choice([4, 8]), rng.randint(1, 3600)
        # team-nlp first (its share then covers the cluster), the others later: their shares grow before the room
        queue = "team-nlp" if at < 1200 else rng.choice(["team-nlp", "team-cv", "team-research"])
        gang = rng.choice([pods, pods, rng.randint(1, pods)])
        # some pinned to one of a few nodes: their queue's share may let in more than those nodes hold
        pin = f"nodeSelector: {{kubernetes.io/hostname: h100-{rng.randint(0, 3)}}}" if rng.random() < 0.25 else ""
        docs.append(f"""---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: g{i}
  namespace: {queue}
  annotations: {{sim.magma.io/submit-at: {at}s, sim.magma.io/duration: {rng.randint(600, 5400)}s}}
spec:
  queue: {queue}
  minAvailable: {gang}
  tasks:
    - name: worker
      replicas: {pods}
      template:
        spec:
          {pin}
          containers:
            - name: c
              resources: {{limits: {{nvidia.com/gpu: {gpus}, cpu: "{6 * gpus}", memory: {64 * gpus}Gi}}}}
""")
    path = tmp / "gangs.yaml"
    path.write_text("".join(docs))
    names = ("cluster.yaml", "queues.yaml", "scheduler-config.yaml")
    return load_scenario([SEED_DIR / n for n in names] + [path])


def _records(sim: Simulation) -> tuple:
    result = build_result(sim)
    result["summary"].pop("sessions")
    result["summary"].pop("sessionLatencyMs")
    events = [(e.time, e.type, e.reason, e.kind, e.key, e.message) for e in sim.cluster.events]
    return json.dumps(result, sort_keys=True, default=str), events, sim.cluster.bindings, sim.cluster.evictions


def _short_turns(monkeypatch) -> list[tuple[str, int]]:
    """Record the turns allocate passes over (`Allocator._stops_short`): ("quota", k) for a queue bound written
    after k placements, ("nodes", c) for a node-fit summary written after c."""
    from magma.scheduler.actions import allocate

    judge = allocate.Allocator._stops_short
    seen: list[tuple[str, int]] = []

    def counting(self, job, queue, tasks):
        k = self.ssn.allocatable_left(queue, tasks[0], exact=True) if tasks else None
        errors = dict(job.fit_errors)
        got = judge(self, job, queue, tasks)
        if got:
            homeless = [uid for uid in job.fit_errors if uid not in errors]
            if homeless:
                seen.append(("nodes", [t.uid for t in tasks].index(homeless[0])))
            else:
                seen.append(("quota", k))
        return got

    monkeypatch.setattr(allocate.Allocator, "_stops_short", counting)
    return seen


def _same_with_and_without(tmp_path, switch: str) -> None:
    for seed in range(3):
        fast = Simulation(seed_gangs(tmp_path, seed, 90), until=7200)
        fast.run()
        slow = Simulation(seed_gangs(tmp_path, seed, 90), until=7200)
        with fastpath.disabled(switch):
            slow.run()
        assert _records(fast) == _records(slow), seed


def test_gang_turns_the_queue_share_stops_are_passed_over_with_the_same_outcome(monkeypatch, tmp_path):
    """fastpath.allocate_quota_bound passes over allocate turns that would place tasks and then meet the queue's
    share (not only turns refused at once), and the simulations record the same as with every turn tried."""
    seen = _short_turns(monkeypatch)
    _same_with_and_without(tmp_path, "allocate_quota_bound")
    assert any(kind == "quota" and k >= 1 for kind, k in seen), sorted(seen)


def test_gang_turns_the_nodes_stop_are_passed_over_with_the_same_outcome(monkeypatch, tmp_path):
    """fastpath.allocate_node_bound passes over allocate turns that would place tasks and then find no node for the
    next (not only turns failing at once), and the simulations record the same, fit summaries included, as with
    every turn tried."""
    seen = _short_turns(monkeypatch)
    _same_with_and_without(tmp_path, "allocate_node_bound")
    assert any(kind == "nodes" and c >= 1 for kind, c in seen), sorted(seen)
    assert any(kind == "nodes" and c == 0 for kind, c in seen), sorted(seen)


def test_the_node_bound_is_not_tried_at_a_jobs_first_turn(monkeypatch, tmp_path):
    """A job's first turn is tried in full: on an empty cluster most turns place their gang, and counting copies
    over every node would be paid for nothing. The bound answers for turns after one that met a task no node held."""
    from magma.scheduler.actions import allocate

    seen = _short_turns(monkeypatch)
    turn, judge = allocate.Allocator.allocate_job, allocate.Allocator._stops_short
    had_turn: set[str] = set()
    first_turn_stops: list[str] = []

    def counting_turns(self, job, queue, tasks):
        try:
            return turn(self, job, queue, tasks)
        finally:
            had_turn.add(job.uid)

    def first_turns_watched(self, job, queue, tasks):
        errors = dict(job.fit_errors)
        got = judge(self, job, queue, tasks)
        if got and job.uid not in had_turn and set(job.fit_errors) - set(errors):
            first_turn_stops.append(job.uid)
        return got

    monkeypatch.setattr(allocate.Allocator, "allocate_job", counting_turns)
    monkeypatch.setattr(allocate.Allocator, "_stops_short", first_turns_watched)
    for seed in range(2):
        Simulation(seed_gangs(tmp_path, seed, 90), until=7200).run()
    assert first_turn_stops == []
    assert any(kind == "nodes" for kind, _ in seen)


def test_sessions_repeating_the_last_on_its_own_status_writes_are_skipped():
    """skip_inert_writes: a session after one that bound and evicted nothing and wrote only PodGroup statuses
    that keep each job's phase sees what that one saw; it is skipped, and everything is recorded the same (the
    events that report a condition's change are not recorded again; those of jobs without a PodGroup are)."""
    gained = 0
    for seed in range(4):
        slow, slow_times, slow_skipped = run(seed, 3, 5, 8, fast=False, switches=("skip_inert_writes",))
        fast, fast_times, fast_skipped = run(seed, 3, 5, 8, fast=True)
        assert slow == fast
        assert fast_times <= slow_times
        gained += fast_skipped - slow_skipped
    assert gained > 0


def _kept_across_sessions(monkeypatch, tmp_path, switch: str, asked_name: str, made_name: str, memo) -> None:
    """A text kept across sessions (`memo`, fast path `switch`): asked for (`reasons.<asked_name>`) more often than
    made (`reasons.<made_name>`) in a simulation, and the simulations record the same with the switch off."""
    from magma.scheduler import reasons

    counts = {asked_name: 0, made_name: 0}

    def counting(name):
        fn = getattr(reasons, name)

        def counted(*a):
            counts[name] += 1
            return fn(*a)
        return counted

    for name in counts:
        monkeypatch.setattr(reasons, name, counting(name))
    memo.clear()
    Simulation(seed_gangs(tmp_path, 0, 90), until=7200).run()
    assert 0 < counts[made_name] < counts[asked_name], counts
    _same_with_and_without(tmp_path, switch)


def test_queue_bound_texts_are_kept_across_sessions_by_their_figures(monkeypatch, tmp_path):
    """fastpath.queue_bound_kept: a queue-bound reason whose need and path figures were met in an earlier session is
    given again without being written; the simulations record the same as with every text written."""
    from magma.scheduler import reasons

    _kept_across_sessions(monkeypatch, tmp_path, "queue_bound_kept", "_queue_bound_reason", "_bound_text",
                          reasons._BOUND_TEXTS)


def test_node_fit_summaries_are_kept_across_sessions_by_what_they_read(monkeypatch, tmp_path):
    """fastpath.fit_summaries_kept: a node-fit summary over a kept predicate result, the same request and the same
    offered resources is given again without being made; the simulations record the same as with every summary made."""
    from magma.scheduler import reasons

    _kept_across_sessions(monkeypatch, tmp_path, "fit_summaries_kept", "node_fit_summary", "_node_fit_summary",
                          reasons._FIT_SUMMARIES)


def test_the_kubelets_earliest_end_off_its_heap_is_the_scans():
    """With its tracker (incremental_recorder) the kubelet reads the earliest end of the started units' work off its
    heap of ends when the top is current (`_Running.earliest_end`) instead of looking at every started unit: the
    same time the look gives."""
    sim = Simulation(scenario(3, 4, 4, 8), period=1.0, until=900)
    read: list[float] = []

    def check(t: float, _horizon: float) -> None:
        tracker = sim.kubelet._running
        started, durations = sim.kubelet.work.started, sim.kubelet.durations
        end = tracker.earliest_end(t)
        if end is not None:
            read.append(end)
            assert end == min((s + durations[u] for u, s in started.items() if s + durations[u] > t), default=math.inf)

    sim.run(check)
    assert any(end != math.inf for end in read)
