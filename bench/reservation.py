"""The cost of reservations and backfill (issue 7): one session on a busy cluster, with and without the plugin.

    python bench/reservation.py --nodes 1000
    python bench/reservation.py --nodes 5000 --estimates 0.5

A cluster of `--nodes` nodes x 8 GPUs filled with running gangs (1-16 pods, as bench/session.py's mode preempt
builds it, all in the queue `default`), started up to two hours ago, `--estimates` of them (default all) with `magma.io/expected-runtime`
(30 minutes to 4 hours); `--free` of the GPUs (default 2%) left idle. Pending: `--gangs` big gangs (16 pods x 8
GPUs) submitted first, then `--small` 1-GPU jobs (default one per node), the same share with estimates. One session
of `enqueue, allocate, backfill` with Volcano's default tiers, then the same with the reservation plugin added
(magma's default config). Prints both latencies, each action's share, pods placed, reservations made (with how many
have a known start), jobs backfilled, and the wall time spent in the reservation plugin's own code.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    FULL_SESSION_CONF,
    JobSpec,
    base_objects,
    common_args,
    config,
    emit,
    fill_gpus,
    job_objects,
    machine,
    new_cluster,
    run_session,
    timed_build,
)

from magma.api.objects import EXPECTED_RUNTIME, Pod  # noqa: E402
from magma.scheduler.plugins.reservation import ReservationPlan  # noqa: E402
from magma.scheduler.scheduler import Scheduler  # noqa: E402

NOW = 7200.0
WITH_RESERVATION = FULL_SESSION_CONF.rstrip() + "\n  - name: reservation\n"
ENTRY_POINTS = ("job_unplaced", "blocked", "explain", "admit_anyway", "job_enqueued", "on_allocate",
                "on_deallocate", "report", "backfilled")


class PluginClock:
    """Wall time spent inside the reservation plan's entry points (nested calls counted once)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.depth = 0
        for name in ENTRY_POINTS:
            setattr(ReservationPlan, name, self._timed(getattr(ReservationPlan, name)))

    def _timed(self, fn):
        def wrapper(*a, **kw):
            self.depth += 1
            t0 = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                self.depth -= 1
                if self.depth == 0:
                    self.seconds += time.perf_counter() - t0
        return wrapper


def objects(args) -> list:
    rng = random.Random(args.seed)
    objs = base_objects(args.nodes)
    busy = [("default", 1)]  # one queue: the share plugin does not hold jobs back, only room and order
    capacity = args.nodes * 8

    def shape(job) -> None:
        job.pods = rng.randint(1, 16)

    running = fill_gpus(rng, args.nodes, busy, shape)
    # Jobs that just ended leave the idle room, scattered over the cluster.
    rng.shuffle(running)
    freed = 0
    while running and freed < capacity * args.free:
        job, _ = running.pop()
        freed += job.pods * job.gpus
    for job, on in running:
        started = NOW - rng.uniform(0, 7200)
        runtime = rng.randint(30, 240) * 60 if rng.random() < args.estimates else None
        for o in job_objects(job, nodes=on):
            if isinstance(o, Pod):
                (o.status.model_extra or {})["startTime"] = started
                if runtime is not None:
                    o.metadata.annotations[EXPECTED_RUNTIME] = f"{runtime}s"
            objs.append(o)
    pending = [JobSpec(f"gang-{k:03d}", "default", 16, 8, creation=NOW + k) for k in range(args.gangs)]
    pending += [JobSpec(f"small-{k:06d}", "default", 1, 1, creation=NOW + 1000 + k) for k in range(args.small)]
    for job in pending:
        runtime = rng.randint(10, 120) * 60 if rng.random() < args.estimates else None
        for o in job_objects(job):
            if runtime is not None and not isinstance(o, Pod):
                o.metadata.annotations[EXPECTED_RUNTIME] = f"{runtime}s"
            objs.append(o)
    return objs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=1000, help="nodes of 8 GPUs (default 1000)")
    p.add_argument("--free", type=float, default=0.02, help="share of GPUs left idle (default 0.02)")
    p.add_argument("--gangs", type=int, default=10, help="pending 16 x 8-GPU gangs (default 10)")
    p.add_argument("--small", type=int, default=None, help="pending 1-GPU jobs (default: one per node)")
    p.add_argument("--estimates", type=float, default=1.0, help="share of jobs with an estimate (default 1)")
    common_args(p)
    args = p.parse_args(argv)
    if args.small is None:
        args.small = args.nodes
    print(f"magma reservation benchmark: {args.nodes} nodes x 8 GPUs, {args.free:.0%} idle, {args.gangs} gangs of "
          f"16 x 8 GPUs and {args.small} 1-GPU jobs pending, {args.estimates:.0%} with estimates, seed {args.seed}; "
          f"{machine()}")
    clock = PluginClock()
    runs = []
    for r in range(args.repeat):
        figures = {}
        for name, text in (("volcano", FULL_SESSION_CONF), ("reservation", WITH_RESERVATION)):
            objs = timed_build("generating objects", lambda: objects(args))
            cluster = new_cluster(objs)
            cluster.clock = lambda: NOW
            del objs
            scheduler = Scheduler(cluster, config(text))
            clock.seconds = 0.0
            m = run_session(scheduler)
            res = m.result
            own = clock.seconds
            known = sum(1 for v in res.reservations.values() if v.get("start") is not None)
            figures[name] = {
                "latencyMs": round(res.latency_ms, 1),
                "actionsMs": {k: round(v, 1) for k, v in res.action_ms.items()},
                "binds": len(res.binds), "reservations": len(res.reservations), "knownStart": known,
                "backfilled": len(res.backfilled),
                "pluginMs": round(own * 1000, 1) if name == "reservation" else None,
            }
            f = figures[name]
            print(f"run {r + 1} {name:11s}: session {f['latencyMs']:.0f} ms "
                  f"({', '.join(f'{k} {v:.0f}' for k, v in f['actionsMs'].items())}) | bound {f['binds']} pods"
                  + (f" | {f['reservations']} reservations ({known} with a known start), {f['backfilled']} jobs "
                     f"backfilled, {f['pluginMs']:.0f} ms of it in the reservation plugin"
                     if name == "reservation" else ""))
        runs.append(figures)
    emit({"runs": runs}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
