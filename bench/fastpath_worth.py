"""What each fast path is worth on the simulator workload: CPU seconds with it off against all on (issue 5).

    python bench/fastpath_worth.py                                  # every switch, the 1-day run, 2 rounds
    python bench/fastpath_worth.py --switches job_index,shared_groups --rounds 3
    python bench/fastpath_worth.py --group queue_status_memo,queue_order_memo --jobs 10000 --days 7

The workload is bench/simulator_week.py's (`--jobs`, `--days`, `--seed`; by default its 1-day run). Each round
runs the simulation with all fast paths on, then once with each named switch off, then all on again, in one
process, so that the machine's drift falls on both sides alike; the figure is the median CPU time of the runs
(`time.process_time`, steadier than wall time on a shared machine) and the change against the median of the
all-on runs. `--group` turns the named switches off together instead, in one run per round: switches that are
each within the noise can add up. A switch that only shortcuts work at scale (thousands of nodes) shows nothing
here: measure those with bench/session.py. Decisions do not depend on the switches (bench/fastpath_sweep.py).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine  # noqa: E402
from simulator_week import scenario_paths, workload_args  # noqa: E402

from magma.scheduler.framework import fastpath  # noqa: E402
from magma.sim.runner import Simulation  # noqa: E402
from magma.sim.scenario import load_scenario  # noqa: E402


def cpu_seconds(paths: list[Path], off: tuple[str, ...]) -> float:
    """CPU seconds of one simulation run (loading excluded) with the switches `off` turned off."""
    sim = Simulation(load_scenario(paths))
    t0 = time.process_time()
    with fastpath.disabled(*off) if off else contextlib.nullcontext():
        sim.run()
    return time.process_time() - t0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--switches", help="comma-separated switches to measure one by one (default: every switch)")
    p.add_argument("--group", help="comma-separated switches to turn off together")
    p.add_argument("--rounds", type=int, default=2)
    workload_args(p, jobs=1430, days=1.0)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    known = set(fastpath._NAMES)
    if args.group:
        cases = [tuple(args.group.split(","))]
    else:
        cases = [(n,) for n in (args.switches.split(",") if args.switches else fastpath._NAMES)]
    unknown = sorted({n for case in cases for n in case} - known)
    if unknown:
        p.error(f"unknown switch(es) {', '.join(unknown)}; the switches are listed in "
                f"src/magma/scheduler/framework/fastpath.py (_NAMES)")
    print(f"magma fast-path worth: {args.jobs} jobs over {args.days:g} days (bench/simulator_week.py's workload), "
          f"{args.rounds} round(s); {machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        paths = scenario_paths(args, Path(tmp))

        from rich.progress import Progress

        on: list[float] = []
        off: dict[tuple[str, ...], list[float]] = {case: [] for case in cases}
        with Progress(transient=True) as progress:
            bar = progress.add_task("measuring", total=args.rounds * (len(cases) + 2))
            for _ in range(args.rounds):
                on.append(cpu_seconds(paths, ()))
                progress.advance(bar)
                for case in cases:
                    off[case].append(cpu_seconds(paths, case))
                    progress.advance(bar)
                on.append(cpu_seconds(paths, ()))
                progress.advance(bar)
    base = statistics.median(on)
    print(f"all on: {base:.2f} s CPU (median of {', '.join(f'{x:.2f}' for x in on)})")
    rows = sorted(((statistics.median(v), case, v) for case, v in off.items()), reverse=True)
    for med, case, runs in rows:
        print(f"{'+'.join(case):32s} off: {med:6.2f} s  {100 * (med / base - 1):+6.1f} %   "
              f"({', '.join(f'{x:.2f}' for x in runs)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
