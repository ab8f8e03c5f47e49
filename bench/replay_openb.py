"""FGD's openb replay: reproduction of the published baselines, magma against FGD, and wall times.

    python bench/replay_openb.py                    # everything (about 3-5 minutes on 2 cores)
    python bench/replay_openb.py --section repro    # the six baselines (+ binpack, magma), 10 seeds
    python bench/replay_openb.py --section speed    # one seed of each policy in this process, timed
    python bench/replay_openb.py --section mixes    # magma vs FGD on workload mixes (and held-out seeds)

Prints the figures BENCHMARKS.md quotes ("## Placement quality: FGD's openb replay"). Deterministic: the same
command gives the same allocation figures; only the times vary with the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # runnable from a checkout without installing

from magma.replay.mixes import describe, make_mix  # noqa: E402
from magma.replay.openb import load_nodes, load_pods  # noqa: E402
from magma.replay.policies import BASELINES, make_policy  # noqa: E402
from magma.replay.protocol import Workload, run_seed  # noqa: E402
from magma.replay.runner import default_jobs, run_many  # noqa: E402

DATA = ROOT / "data" / "openb"
PUBLISHED = {"random": 86.30, "dotprod": 90.62, "gpu-clustering": 91.65, "gpu-packing": 91.78,
             "bestfit": 92.86, "fgd": 95.23}
MIXES = [("multigpu", 0.3), ("multigpu", 0.5), ("gpushare", 0.7), ("gpushare", 0.9), ("cpu", 0.3),
         ("bigcpu", 1.5)]


def machine() -> str:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0, 0, 0)
    return (f"{platform.python_implementation()} {platform.python_version()}, {platform.machine()}, "
            f"{default_jobs()} core(s) available, load average {load[0]:.1f}")


def repro(nodes, pods, seeds, jobs) -> None:
    names = list(BASELINES) + ["binpack", "magma"]
    print(f"## reproduction: {len(names)} policies x {len(seeds)} seeds, {jobs} worker(s)")
    t0 = time.perf_counter()
    results = run_many(nodes, pods, names, seeds, 1.3, jobs=jobs, track_frag=False)
    wall = time.perf_counter() - t0
    print(f"{'policy':16s} {'at 90':>7s} {'at 100':>7s} {'published':>9s} {'diff':>6s} {'at 130':>7s} "
          f"{'s/seed':>7s}")
    base_wall = 0.0
    for r in results:
        per = sum(r.seconds.values()) / len(r.seconds)
        pub = PUBLISHED.get(r.policy)
        diff = f"{r.mean_at(100) - pub:+.2f}" if pub is not None else ""
        print(f"{r.policy:16s} {r.mean_at(90):7.2f} {r.mean_at(100):7.2f} {pub if pub else '':>9} {diff:>6s} "
              f"{r.mean_at(130):7.2f} {per:7.2f}")
        if r.policy in BASELINES:
            base_wall += sum(r.seconds.values())
    print(f"all {len(names)} policies x {len(seeds)} seeds: {wall:.1f} s wall; the six baselines' seeds add up to "
          f"{base_wall:.1f} s of worker time ({base_wall / jobs:.1f} s on {jobs} workers)")
    t0 = time.perf_counter()
    run_many(nodes, pods, list(BASELINES), seeds, 1.3, jobs=jobs, track_frag=False)
    print(f"the six baselines x {len(seeds)} seeds alone: {time.perf_counter() - t0:.1f} s wall")
    per_seed = {r.policy: r.per_seed for r in results}
    print("per-seed at 100% arrived:")
    for name in names:
        print(f"  {name:16s} " + " ".join(f"{per_seed[name][s][100]:6.2f}" for s in seeds))


def speed(nodes, pods) -> None:
    print("## one seed (42) of each policy in this process, with and without the fragmentation curve")
    wl = Workload(pods, nodes)
    run_seed(nodes, wl, make_policy("bestfit"), 42, 1.3, track_frag=False)  # warm-up (imports, caches)
    for name in list(BASELINES) + ["binpack", "magma"]:
        best_plain = best_frag = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            run_seed(nodes, wl, make_policy(name), 42, 1.3, track_frag=False)
            best_plain = min(best_plain, time.perf_counter() - t0)
            t0 = time.perf_counter()
            run_seed(nodes, wl, make_policy(name), 42, 1.3, track_frag=True)
            best_frag = min(best_frag, time.perf_counter() - t0)
        print(f"  {name:16s} {best_plain:5.2f} s   with fragmentation curve {best_frag:5.2f} s   (best of 3)")


def mixes(nodes, pods, seeds, jobs, heldout) -> None:
    print(f"## magma vs FGD on workload mixes (mix seed 1), seeds {seeds[0]}-{seeds[-1]}")
    print(f"{'workload':16s} {'fgd 90':>7s} {'magma 90':>8s} {'fgd 100':>8s} {'magma 100':>9s} {'diff':>6s} "
          f"{'fgd 130':>8s} {'magma 130':>9s}  mix")
    lists = [("openb default", pods)] + [(f"{k}{int(s * 100)}", make_mix(pods, k, s, 1)) for k, s in MIXES]
    for label, pl in lists:
        fgd, mag = run_many(nodes, pl, ["fgd", "magma"], seeds, 1.3, jobs=jobs, track_frag=False)
        d = mag.mean_at(100) - fgd.mean_at(100)
        print(f"{label:16s} {fgd.mean_at(90):7.2f} {mag.mean_at(90):8.2f} {fgd.mean_at(100):8.2f} "
              f"{mag.mean_at(100):9.2f} {d:+6.2f} {fgd.mean_at(130):8.2f} {mag.mean_at(130):9.2f}  {describe(pl)}")
    print(f"## held-out seeds {heldout[0]}-{heldout[-1]} on the default list")
    res = run_many(nodes, pods, list(BASELINES) + ["magma"], heldout, 1.3, jobs=jobs, track_frag=False)
    for r in res:
        print(f"  {r.policy:16s} at 100: {r.mean_at(100):6.2f}   at 130: {r.mean_at(130):6.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--section", choices=["all", "repro", "speed", "mixes"], default="all")
    ap.add_argument("--jobs", type=int, default=default_jobs())
    args = ap.parse_args()
    print(machine())
    nodes = load_nodes(DATA / "openb_node_list_gpu_node.csv")
    pods = load_pods(DATA / "openb_pod_list_default.csv")
    seeds = list(range(42, 52))
    if args.section in ("all", "repro"):
        repro(nodes, pods, seeds, args.jobs)
    if args.section in ("all", "speed"):
        speed(nodes, pods)
    if args.section in ("all", "mixes"):
        mixes(nodes, pods, seeds, args.jobs, list(range(52, 62)))


if __name__ == "__main__":
    main()
