"""Run (policy, seed) replays over worker processes and summarise them per policy.

Each worker loads the node and task lists once; jobs are (policy, seed) pairs; results come back as SeedTrace
arrays (a few hundred kB per seed). With one worker everything runs in this process.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Sequence

from .openb import NodeList, PodList
from .protocol import ReplayResult, SeedTrace, Workload, run_seed, summarise

_WORKER: dict = {}


def _init(nodes: NodeList, pods: PodList, track_frag: bool) -> None:
    _WORKER["nodes"] = nodes
    _WORKER["workload"] = Workload(pods, nodes)
    _WORKER["frag"] = track_frag


def _run(job: tuple[str, int, float]) -> tuple[str, SeedTrace]:
    from .policies import make_policy

    policy, seed, tune = job
    tr = run_seed(_WORKER["nodes"], _WORKER["workload"], make_policy(policy), seed, tune, _WORKER["frag"])
    return policy, tr


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def run_many(nodes: NodeList, pods: PodList, policies: Sequence[str], seeds: Sequence[int], tune: float,
             jobs: int = 1, track_frag: bool = True,
             on_done: Callable[[str, SeedTrace], None] | None = None) -> list[ReplayResult]:
    """Every policy on every seed; results in the order of `policies`, seeds in the order given."""
    work = [(p, s, tune) for p in policies for s in seeds]
    traces: dict[str, dict[int, SeedTrace]] = {p: {} for p in policies}
    if jobs <= 1 or len(work) <= 1:
        _init(nodes, pods, track_frag)
        for w in work:
            p, tr = _run(w)
            traces[p][tr.seed] = tr
            if on_done:
                on_done(p, tr)
    else:
        with ProcessPoolExecutor(max_workers=min(jobs, len(work)), initializer=_init,
                                 initargs=(nodes, pods, track_frag)) as ex:
            for p, tr in ex.map(_run, work):
                traces[p][tr.seed] = tr
                if on_done:
                    on_done(p, tr)
    return [summarise(p, tune, [traces[p][s] for s in seeds]) for p in policies]
