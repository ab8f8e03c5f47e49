"""A session where nothing changed (issue 5, benchmark 2): the cost of the snapshot and of a quiet session.

    python bench/steady_state.py --nodes 10000 --running-pods 100000     # target: < 50 ms

Builds a cluster of `--nodes` nodes x 8 GPUs running `--running-pods` pods in gang jobs (GPU pods and cpu-only
pods, about 10 per node at the default sizes; every PodGroup Running, no pending pod), runs one session to warm
the scheduler (its first snapshot is built from scratch) and a second one (which takes in the PodGroup statuses
the first wrote), then `--sessions` sessions with no change in between,
and prints the latency of each (`SessionResult.latency_ms`, as `magma simulate` reports it): min, median, max.
The scheduler object is kept between sessions, as `magma scheduler` and the simulator keep it.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    FULL_SESSION_CONF,
    Packer,
    base_objects,
    common_args,
    config,
    emit,
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


def running_objects(args) -> list:
    """Running gangs until `running_pods`: GPU pods first-fit on GPUs, then cpu-only pods on every node."""
    rng = random.Random(args.seed)
    objs = base_objects(args.nodes)
    packer = Packer(args.nodes)
    placed = 0
    gpu_pods = int(args.running_pods * 0.7)
    i = 0
    misses = 0
    while placed < gpu_pods and misses < 50:
        job = random_jobs(rng, 1, None, prefix="run", start=i)[0]
        job.pods = min(rng.randint(1, 16), gpu_pods - placed)
        job.gpus = 1
        i += 1
        on = packer.place(job)
        if on is None:
            misses += 1
            continue
        objs += job_objects(job, nodes=on)
        placed += job.pods
    # cpu-only pods (1 cpu, 1 GiB each) spread over the nodes
    while placed < args.running_pods:
        job = random_jobs(rng, 1, None, prefix="cpu", start=i)[0]
        job.pods = min(rng.randint(1, 16), args.running_pods - placed)
        job.gpus, job.cpu_only = 0, True
        job.selector, job.tolerates = {}, True
        i += 1
        nodes = []
        for _ in range(job.pods):
            n = packer.cursor = (packer.cursor + 1) % packer.n
            nodes.append(f"node-{n:05d}")
        objs += job_objects(job, nodes=nodes)
        placed += job.pods
    return objs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=10000)
    p.add_argument("--running-pods", type=int, default=100000)
    p.add_argument("--sessions", type=int, default=10, help="no-change sessions to measure after the warm-up")
    common_args(p)
    args = p.parse_args(argv)
    conf = config(FULL_SESSION_CONF)
    print(f"magma steady-state benchmark: {args.nodes} nodes, {args.running_pods} running pods, "
          f"{args.sessions} no-change sessions, seed {args.seed}; {machine()}")
    objs = timed_build("generating objects", lambda: running_objects(args))
    cluster = new_cluster(objs)
    del objs
    state = cluster.state()
    print(f"  {len(state.pods)} pods ({sum(1 for p in state.pods.values() if p.spec.node_name)} running), "
          f"{len(state.podgroups)} PodGroups")
    scheduler = Scheduler(cluster, conf)
    with status("first session (cold)"):
        first = run_session(scheduler)
    print(f"first session (cold snapshot): {first.result.latency_ms:.0f} ms, bound {len(first.result.binds)}")
    # The first session writes every PodGroup's status (conditions, counts): the second applies those writes.
    with status("second session"):
        second = run_session(scheduler)
    print(f"second session (the first one's PodGroup status writes): {second.result.latency_ms:.0f} ms")
    lat = []
    gc_ms = []
    with status("no-change sessions"), profiled(args.profile, args.profile_out):
        for _ in range(args.sessions):
            m = run_session(scheduler, trace_memory=args.tracemalloc)
            lat.append(m.result.latency_ms)
            gc_ms.append(m.gc_ms)
            assert not m.result.binds and not m.result.evictions
    cache = scheduler.cache
    figures = {"nodes": args.nodes, "runningPods": args.running_pods, "coldMs": round(first.result.latency_ms, 1),
               "secondMs": round(second.result.latency_ms, 1),
               "minMs": round(min(lat), 2), "medianMs": round(statistics.median(lat), 2),
               "maxMs": round(max(lat), 2), "maxRssMiB": round(max_rss_mb()),
               "gcMsMax": round(max(gc_ms), 1),
               "incrementalSnapshots": cache.incremental_builds if cache else 0}
    print(f"no-change session: min {figures['minMs']} ms, median {figures['medianMs']} ms, "
          f"max {figures['maxMs']} ms (cyclic GC up to {figures['gcMsMax']} ms of one) | "
          f"{figures['incrementalSnapshots']} incremental snapshots | peak RSS {figures['maxRssMiB']} MiB")
    emit(figures, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
