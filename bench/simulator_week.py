"""The simulator on the seed cluster under a week of synthetic multi-team load (issue 5, benchmark 3).

    python bench/simulator_week.py                         # target: the week in < 10 s of wall time
    python bench/simulator_week.py --jobs 2000 --days 1    # a smaller run

The seed cluster of examples/seed-h100 (32 nodes x 8 H100, the queue tree root -> ai-org -> team-nlp, team-cv,
team-research, emergency, and its scheduler config: enqueue, allocate, preempt, backfill), with `--jobs` Volcano
Jobs arriving at random (Poisson) over `--days` virtual days, in the three team queues by weight 3:3:2:
1, 2 or 4 pods (40/30/30 %) of 1, 2, 4 or 8 GPUs each (30/20/20/30 %), 6 cpu and 64 GiB per GPU, working
2 to 90 minutes (log-uniform), minAvailable all pods, `ttlSecondsAfterFinished: 300` (finished jobs are deleted
as a team's cleanup would); about three quarters of the cluster's GPU-time is asked for, in bursts. Every
`--emergency-every` hours an emergency job (2 pods x 8 GPUs, PriorityClass emergency, one hour) arrives in the
`emergency` queue and preempts team work.

Prints the wall time of the whole run (loading excluded), virtual time simulated per wall second, sessions
run, session latency (mean, p99, max: the `summary.sessionLatencyMs` of `magma simulate --json`, from
`SessionResult.latency_ms`) and the share of the wall time spent in scheduler sessions.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import ROOT, GcTimer, common_args, emit, machine, max_rss_mb, profiled, timed_build  # noqa: E402

from magma.sim.runner import Simulation, latency_stats  # noqa: E402
from magma.sim.scenario import load_scenario  # noqa: E402

SEED_DIR = ROOT / "examples" / "seed-h100"
TEAMS = [("team-nlp", 3), ("team-cv", 3), ("team-research", 2)]


def job_yaml(name: str, ns: str, queue: str, submit: float, duration: float, pods: int, gpus: int,
             priority: str = "normal") -> str:
    return f"""---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
  namespace: {ns}
  annotations:
    sim.magma.io/submit-at: {submit:.0f}s
    sim.magma.io/duration: {duration:.0f}s
spec:
  schedulerName: volcano
  queue: {queue}
  minAvailable: {pods}
  priorityClassName: {priority}
  ttlSecondsAfterFinished: 300
  tasks:
    - name: worker
      replicas: {pods}
      template:
        spec:
          restartPolicy: OnFailure
          containers:
            - name: main
              image: train:latest
              resources:
                limits: {{nvidia.com/gpu: {gpus}, cpu: "{6 * gpus}", memory: {64 * gpus}Gi}}
"""


def workload(args) -> str:
    rng = random.Random(args.seed)
    horizon = args.days * 86400
    rate = args.jobs / horizon
    t = 0.0
    out = []
    names, weights = [q for q, _ in TEAMS], [w for _, w in TEAMS]
    for i in range(args.jobs):
        t += rng.expovariate(rate)
        t = min(t, horizon)
        q = rng.choices(names, weights)[0]
        pods = rng.choices([1, 2, 4], [4, 3, 3])[0]
        gpus = rng.choices([1, 2, 4, 8], [3, 2, 2, 3])[0]
        duration = math.exp(rng.uniform(math.log(120), math.log(5400)))
        out.append(job_yaml(f"{q.removeprefix('team-')}-{i:05d}", q, q, max(t, 1.0), duration, pods, gpus))
    if args.emergency_every > 0:
        k = 0
        e = args.emergency_every * 3600 / 2
        while e < horizon:
            out.append(job_yaml(f"emergency-{k:03d}", "team-nlp", "emergency", e, 3600, 2, 8, "emergency"))
            k += 1
            e += args.emergency_every * 3600
    return "".join(out)


def workload_args(p: argparse.ArgumentParser, jobs: int, days: float) -> None:
    """The options `workload` reads but `--seed` (bench/common.py's `common_args` has it)."""
    p.add_argument("--jobs", type=int, default=jobs)
    p.add_argument("--days", type=float, default=days)
    p.add_argument("--emergency-every", type=float, default=12.0, help="hours between emergency jobs (0: none)")


def scenario_paths(args, tmp: Path) -> list[Path]:
    """The seed cluster's files and the workload (written into `tmp`): what `magma simulate` would be given."""
    path = tmp / "synthetic-jobs.yaml"
    path.write_text(workload(args))
    return [SEED_DIR / "cluster.yaml", SEED_DIR / "queues.yaml", SEED_DIR / "scheduler-config.yaml", path]


def session_parts(trace) -> dict[str, float]:
    """Seconds spent in each action, and in opening and closing, summed over the sessions run."""
    out: dict[str, float] = {}
    for s in trace.sessions:
        for k, v in s.action_ms.items():
            out[k] = out.get(k, 0.0) + v / 1000
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    workload_args(p, jobs=10000, days=7.0)
    p.add_argument("--period", type=float, default=1.0, help="session period in seconds (default 1)")
    p.add_argument("--json-out", help="write the simulation result (magma simulate --json's contract) to this path")
    common_args(p)
    args = p.parse_args(argv)
    print(f"magma simulator benchmark: seed cluster (32 x 8 H100), {args.jobs} jobs over {args.days:g} days, "
          f"emergency every {args.emergency_every:g} h, seed {args.seed}; {machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        paths = scenario_paths(args, Path(tmp))
        scenario = timed_build("loading the scenario", lambda: load_scenario(paths))
    sim = Simulation(scenario, period=args.period)

    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    err = Console(stderr=True)
    horizon = args.days * 86400
    t0, cpu0 = time.perf_counter(), time.process_time()
    with GcTimer() as gc_time, \
            Progress(TextColumn("simulating"), BarColumn(), TextColumn("{task.fields[t]}"), TimeElapsedColumn(),
                     console=err, disable=not err.is_terminal, transient=True) as progress, \
            profiled(args.profile, args.profile_out):
        task = progress.add_task("sim", total=horizon, t="")
        last = [0.0]

        def tick(t: float, _h: float) -> None:
            if t - last[0] >= 600:
                last[0] = t
                progress.update(task, completed=min(t, horizon), t=f"day {t / 86400:.2f}")

        trace = sim.run(progress=tick)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0  # this process's CPU time: steadier than wall time on a shared machine
    lat = latency_stats(trace.sessions)
    in_sessions = sum(s.latency_ms for s in trace.sessions) / 1000
    started = len(trace.job_start)
    figures = {
        "jobs": args.jobs, "days": args.days, "wallSeconds": round(wall, 2), "cpuSeconds": round(cpu, 2),
        "virtualSeconds": trace.end_time, "virtualDaysPerWallSecond": round(trace.end_time / 86400 / wall, 3),
        "sessions": len(trace.sessions), "sessionsSkipped": getattr(trace, "skipped_sessions", 0),
        "sessionLatencyMs": lat,
        "sessionShare": round(in_sessions / wall, 3), "jobsStarted": started,
        "binds": sum(s.binds for s in trace.sessions), "evictions": sum(s.evictions for s in trace.sessions),
        "maxRssMiB": round(max_rss_mb()), "stop": trace.stop_reason,
        "gcSeconds": round(gc_time.ms / 1000, 2),
        "loopSeconds": {k: round(v, 2) for k, v in trace.loop_seconds.items()},
        "sessionSeconds": {k: round(v, 2) for k, v in session_parts(trace).items()},
    }
    print(f"simulated {trace.end_time / 86400:.2f} virtual days in {wall:.1f} s wall ({cpu:.1f} s CPU) "
          f"({figures['virtualDaysPerWallSecond']} virtual days per wall second; a week in "
          f"{7 * 86400 / (trace.end_time / wall):.1f} s) | {len(trace.sessions)} sessions "
          f"({figures['sessionsSkipped']} skipped as repeats), latency mean "
          f"{lat['mean']:.2f} ms, p99 {lat['p99']:.2f} ms, max {lat['max']:.1f} ms | "
          f"{in_sessions:.1f} s in sessions ({figures['sessionShare'] * 100:.0f}%) | jobs started {started}, "
          f"pods bound {figures['binds']}, evicted {figures['evictions']} | peak RSS {figures['maxRssMiB']} MiB "
          f"| stopped: {trace.stop_reason}")
    print("where the wall time went (s): " + ", ".join(f"{k} {v:.1f}" for k, v in figures["loopSeconds"].items())
          + f", other {wall - sum(trace.loop_seconds.values()):.1f}; of all that, the cycle collector "
          f"{gc_time.ms / 1000:.1f} ({gc_time.runs} passes)")
    print("within sessions (s): " + ", ".join(f"{k} {v:.1f}" for k, v in figures["sessionSeconds"].items()))
    emit(figures, args.json)
    if args.json_out:
        import json

        from magma.sim.result import build_result

        Path(args.json_out).write_text(json.dumps(build_result(sim), indent=1, sort_keys=True, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
