"""Workload mixes: task lists drawn from a base list (openb's default) with one kind of task made more common.

A mix is a new list of the same length as the base, each task drawn with replacement from the base list with a
weight per task (numpy's PCG64 generator seeded with the mix seed, so a (kind, share, seed) triple always gives the
same list). Weights are 1 except for the emphasised kind, whose weight w is chosen so that in expectation the kind
takes `share` of the measure below:

| kind        | emphasised tasks                  | measure                               | default list |
|-------------|-----------------------------------|---------------------------------------|--------------|
| `multigpu`  | tasks asking for 2 or more GPUs   | share of the GPU demand (k * m)       | 7.3 %        |
| `gpushare`  | tasks asking for part of one GPU  | share of the GPU tasks (by count)     | 43.6 %       |
| `cpu`       | CPU-only tasks                    | share of all tasks (by count)         | 13.3 %       |

For a count measure w = share/(1 - share) * (n_other/n_kind); for the demand measure the same with demand sums.
Task names are `<kind><percent>-s<seed>-<index>`, so the list sorts in draw order. `bigcpu` is a fourth kind:
every drawn task's cpu is scaled by `share` (e.g. 1.5), a uniform CPU-pressure increase on top of the default mix.
"""

from __future__ import annotations

import numpy as np

from .openb import MILLI, PodList

KINDS = ("multigpu", "gpushare", "cpu", "bigcpu")


def _mask(pods: PodList, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """(emphasised tasks, the population the share is measured over) as boolean masks, and weights basis."""
    k, m = pods.num_gpu, pods.gpu_milli
    if kind == "multigpu":
        return k >= 2, k > 0
    if kind == "gpushare":
        return (k == 1) & (m < MILLI), k > 0
    if kind == "cpu":
        return k == 0, np.ones(len(pods), dtype=bool)
    raise ValueError(f"unknown mix kind {kind!r} (known: {', '.join(KINDS)})")


def weights(pods: PodList, kind: str, share: float) -> np.ndarray:
    """Per-task draw weights that give the emphasised kind `share` of its measure, in expectation."""
    if not 0.0 < share < 1.0:
        raise ValueError(f"share must be between 0 and 1, not {share}")
    emph, pop = _mask(pods, kind)
    measure = (pods.num_gpu * pods.gpu_milli).astype(np.float64) if kind == "multigpu" else np.ones(len(pods))
    a = float(measure[emph & pop].sum())
    b = float(measure[~emph & pop].sum())
    if a == 0 or b == 0:
        raise ValueError(f"the base list has no tasks of kind {kind!r} (or only those)")
    w = np.ones(len(pods), dtype=np.float64)
    w[emph] = share / (1.0 - share) * b / a
    return w


def make_mix(base: PodList, kind: str, share: float, seed: int, size: int | None = None) -> PodList:
    """A task list of `size` (default: the base's length) drawn from `base` (see the module doc)."""
    n = size or len(base)
    rng = np.random.Generator(np.random.PCG64(seed))
    if kind == "bigcpu":
        if share <= 0:
            raise ValueError("the cpu scale of a bigcpu mix must be positive")
        idx = rng.choice(len(base), size=n, replace=True)
        cpu = np.rint(base.cpu[idx] * share).astype(np.int64)
    else:
        w = weights(base, kind, share)
        idx = rng.choice(len(base), size=n, replace=True, p=w / w.sum())
        cpu = base.cpu[idx]
    pct = int(round(share * 100))
    names = tuple(f"{kind}{pct}-s{seed}-{i:05d}" for i in range(n))
    return PodList(
        path=f"{kind}{pct}-s{seed}",
        names=names,
        cpu=cpu.copy(),
        memory=base.memory[idx].copy(),
        num_gpu=base.num_gpu[idx].copy(),
        gpu_milli=base.gpu_milli[idx].copy(),
        gpu_spec=tuple(base.gpu_spec[i] for i in idx.tolist()),
    )


def describe(pods: PodList) -> dict[str, float]:
    """The measures of the table above, for a list (percent)."""
    k, m = pods.num_gpu, pods.gpu_milli
    demand = (k * m).astype(np.float64)
    gpu = k > 0
    return {
        "tasks": len(pods),
        "multigpuDemandPercent": round(100 * float(demand[k >= 2].sum() / max(demand.sum(), 1)), 1),
        "shareOfGpuTasksPercent": round(100 * float(((k == 1) & (m < MILLI)).sum() / max(gpu.sum(), 1)), 1),
        "cpuOnlyTasksPercent": round(100 * float((~gpu).sum() / len(pods)), 1),
        "cpuPerGpu": round(float(pods.cpu.sum() / max(demand.sum(), 1)), 2),
    }
