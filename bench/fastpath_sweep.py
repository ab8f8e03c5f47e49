"""Compare the scheduler's decisions with the fast paths off and on over many random seeds (issue 5).

    python bench/fastpath_sweep.py --rounds 300 --seed 1

Each round draws one case of each identity test in tests/property (a simulation of PodGroups, a single session
with and without shared groups, a simulation with Volcano Jobs through the controller, a preempt/reclaim session
on a full cluster) and runs it with every fast path off and on. Prints every difference and the count; exits 1 if
there is any. The tests run a few dozen cases each; this is for a deeper look after changing a fast path.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests" / "property"), str(ROOT / "tests")]

from rich.progress import Progress  # noqa: E402

import test_fast_paths as sim_pg  # noqa: E402
import test_preempt_fast_paths as preempt  # noqa: E402
import test_sim_fast_paths as sim_jobs  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    diffs = 0
    with Progress() as progress:
        bar = progress.add_task("comparing", total=args.rounds)
        for _ in range(args.rounds):
            s = rng.randrange(10**6)
            conf = rng.choice(sim_pg.CONFS)
            a = (s, rng.randint(1, 6), rng.randint(1, 14))
            if sim_pg.run(*a, fast=False, conf=conf) != sim_pg.run(*a, fast=True, conf=conf):
                progress.console.print(f"difference: PodGroup simulation {a}")
                diffs += 1
            b = (s, rng.randint(1, 40), rng.randint(1, 60))
            if sim_pg.one_session(*b, shared=False) != sim_pg.one_session(*b, shared=True):
                progress.console.print(f"difference: shared groups {b}")
                diffs += 1
            c = (s, rng.randint(1, 5), rng.randint(0, 6), rng.randint(1, 10))
            try:
                sim_jobs.compare(*c)
            except AssertionError:
                progress.console.print(f"difference: Volcano Job simulation {c}")
                diffs += 1
            actions, switches = rng.choice(preempt.ACTIONS), rng.choice(preempt.SWITCHES)
            d = (s, rng.randint(1, 12), rng.randint(1, 8))
            if preempt.sessions(*d, False, actions, switches) != preempt.sessions(*d, True, actions):
                progress.console.print(f"difference: preempt {d} {actions!r} {switches}")
                diffs += 1
            progress.advance(bar)
    print(f"{args.rounds} rounds (4 comparisons each), {diffs} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    raise SystemExit(main())
