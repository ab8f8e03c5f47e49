"""Full scheduling sessions on generated clusters (issue 5, benchmark 1).

    python bench/session.py --nodes 5000 --pending-pods 40000 --gang-size 8      # target: < 1 s
    python bench/session.py --nodes 10000 --pending-pods 100000 --gang-size 8    # target: < 3 s
    python bench/session.py --mode preempt --nodes 5000                          # target: < 2 s

Modes:
- `empty` (default): an empty cluster and `--pending-pods` pending pods in gang jobs (PodGroups Pending, with
  minResources); one session of `enqueue, allocate, backfill` with Volcano's default tiers. One job in 100 is
  a gang of best-effort pods, for backfill.
- `preempt`: a full cluster (every GPU taken by running gangs of the queues nlp, cv and research, half of them
  at priority `low`) and `--preemptors` pending jobs: half at priority `high` in those queues (preempt), half in
  the queues speech and infra that run nothing (reclaim); one session of
  `enqueue, allocate, preempt, reclaim, backfill`.

Before the session the scheduler's cache ingests the generated objects (`Scheduler.ingest`, as Volcano's
informers convert pods as they arrive); that time is printed on its own ("ingest"). Prints the session latency (`SessionResult.latency_ms`, as `magma simulate` reports it) with each action's
share, pods placed (binds) and evicted, pods placed per second, and the process's peak memory.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    FULL_SESSION_CONF,
    PREEMPT_CONF,
    base_objects,
    common_args,
    config,
    emit,
    fill_gpus,
    job_objects,
    machine,
    max_rss_mb,
    new_cluster,
    profiled,
    random_jobs,
    run_session,
    status,
    timed_build,
)

from magma.scheduler.scheduler import Scheduler  # noqa: E402


def empty_cluster_objects(args) -> list:
    rng = random.Random(args.seed)
    objs = base_objects(args.nodes)
    for job in random_jobs(rng, args.pending_pods, args.gang_size, best_effort=args.best_effort):
        objs += job_objects(job)
    return objs


def full_cluster_objects(args) -> list:
    rng = random.Random(args.seed)
    objs = base_objects(args.nodes)
    busy = [("nlp", 3), ("cv", 2), ("research", 2)]

    def shape(job) -> None:
        job.pods = args.gang_size or rng.randint(1, 16)
        job.priority = "low" if rng.random() < 0.5 else "normal"

    for job, on in fill_gpus(rng, args.nodes, busy, shape):
        objs += job_objects(job, nodes=on)
    half = args.preemptors // 2
    pre = random_jobs(rng, 10**9, None, prefix="pre", priority="high", queues=busy, start=10**6, max_jobs=half)
    rec = random_jobs(rng, 10**9, None, prefix="rec", queues=[("speech", 1), ("infra", 1)], start=2 * 10**6,
                      max_jobs=args.preemptors - half)
    for job in pre + rec:
        job.creation = 10**6 + job.creation % 10**6
        objs += job_objects(job)
    return objs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=["empty", "preempt"], default="empty")
    p.add_argument("--nodes", type=int, default=1000, help="nodes of 8 GPUs (default 1000)")
    p.add_argument("--pending-pods", type=int, default=None,
                   help="pending pods in mode empty (default: 8 per node)")
    p.add_argument("--gang-size", type=int, default=None, help="pods per job (default: 1-16 at random)")
    p.add_argument("--best-effort", type=float, default=0.01, help="share of best-effort jobs (mode empty)")
    p.add_argument("--preemptors", type=int, default=100, help="pending jobs in mode preempt (default 100)")
    common_args(p)
    args = p.parse_args(argv)
    if args.pending_pods is None:
        args.pending_pods = 8 * args.nodes
    conf = config(PREEMPT_CONF if args.mode == "preempt" else FULL_SESSION_CONF)

    print(f"magma session benchmark: mode {args.mode}, {args.nodes} nodes x 8 GPUs, "
          + (f"{args.pending_pods} pending pods" if args.mode == "empty" else f"{args.preemptors} preemptor jobs")
          + f", gangs of {args.gang_size or '1-16'} pods, seed {args.seed}; {machine()}")
    runs = []
    for r in range(args.repeat):
        build = empty_cluster_objects if args.mode == "empty" else full_cluster_objects
        objs = timed_build("generating objects", lambda: build(args))
        cluster = new_cluster(objs)
        del objs
        pods = cluster.state().pods.values()
        pending = sum(1 for p in pods if not p.spec.node_name)
        running = len(pods) - pending
        scheduler = Scheduler(cluster, conf)
        # The scheduler's cache takes the objects in as they arrive (Volcano's informers), outside the session:
        # timed here on its own and reported beside the session.
        with status("ingesting the objects"):
            gc.collect()  # as before the session (common.run_session): the generator's garbage is not the ingest's
            t0 = time.perf_counter()
            scheduler.ingest()
            ingest_ms = (time.perf_counter() - t0) * 1000
        with status("running the session"), profiled(args.profile, args.profile_out):
            m = run_session(scheduler, trace_memory=args.tracemalloc)
        res = m.result
        secs = res.latency_ms / 1000
        placed = len(res.binds)
        next_binds = None
        if args.mode == "preempt":
            # Preemption pipelines the preemptors onto the room it frees; they bind in the next session.
            cluster.finish_deletions(float("inf"))
            next_binds = len(scheduler.run_once().binds)
        figures = {
            "mode": args.mode, "nodes": args.nodes, "pendingPods": pending, "runningPods": running,
            "ingestMs": round(ingest_ms, 1), "latencyMs": round(res.latency_ms, 1),
            "actionsMs": {k: round(v, 1) for k, v in res.action_ms.items()},
            "binds": placed, "evictions": len(res.evictions), "bindsNextSession": next_binds,
            # preempt mode: the pods placed (pipelined) by preemption, bound in the next session
            "podsPerSecond": round((next_binds if next_binds is not None else placed) / secs) if secs else None,
            "maxRssMiB": round(max_rss_mb()), "gcMs": round(m.gc_ms, 1),
        }
        if m.traced_peak_mb is not None:
            figures["tracedPeakMiB"] = round(m.traced_peak_mb)
        runs.append(figures)
        other = res.latency_ms - sum(res.action_ms.values())
        print(f"run {r + 1}: ingest {ingest_ms:.0f} ms (outside the session) | session {res.latency_ms:.0f} ms "
              f"({', '.join(f'{k} {v:.0f}' for k, v in res.action_ms.items())}, open+close {other:.0f}) "
              f"| {pending} pending, {running} running pods | bound {placed}, evicted {len(res.evictions)} "
              + (f"(bound in the next session: {next_binds}) " if next_binds is not None else "")
              + f"| {figures['podsPerSecond']} pods/s | peak RSS {figures['maxRssMiB']} MiB "
              f"| cyclic GC {m.gc_ms:.0f} ms of it ({m.gc_runs} runs)"
              + (f" | traced peak {m.traced_peak_mb:.0f} MiB (latency under tracemalloc)"
                 if m.traced_peak_mb is not None else ""))
    emit({"runs": runs}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
