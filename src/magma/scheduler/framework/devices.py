"""GPU devices per node: fragmentation math (part 1; the device table follows below)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

MILLI = 1000  # one whole GPU

# FGD's fragment buckets (the order matters: the simulator sums them in this order).
Q1_LACK_BOTH, Q2_LACK_GPU, Q3_SATISFIED, Q4_LACK_CPU, XL_SATISFIED, XR_LACK_CPU, NO_ACCESS = range(7)


@dataclass(frozen=True)
class TargetWorkload:
    """The workload a node's idle GPUs are judged against (FGD's "typical pods").

    A class is (cpu milli, per-GPU milli, GPU count, allowed models); `p` are the classes' frequencies (sum 1).
    CPU-only classes have milli 0 and count 0."""

    cpu: np.ndarray  # (J,) int64
    milli: np.ndarray  # (J,) int64
    count: np.ndarray  # (J,) int64
    models: tuple[frozenset[str] | None, ...]  # (J,) None: any model
    p: np.ndarray  # (J,) float64

    def __len__(self) -> int:
        return len(self.p)

    @classmethod
    def from_tasks(cls, cpu: Sequence[int], milli: Sequence[int], count: Sequence[int], specs: Sequence[str],
                   popularity: int = 95) -> "TargetWorkload":
        """FGD's typical pods from a task list: one class per (cpu, per-GPU milli, GPU count, model spec) with
        `specs` the `|`-separated allowed models ("" for any); classes by count, descending (ties: larger cpu,
        then milli, then count, then spec text); the shortest prefix covering `popularity` percent of the tasks;
        frequencies renormalised to sum 1.

        The arithmetic follows the FGD simulator's (float counts, p = count/total, then divided by
        covered/total), so that fragmentation values match it bit for bit."""
        counts: dict[tuple, int] = {}
        for c, m, k, spec in zip(cpu, milli, count, specs):
            gpu = bool(k) and bool(m)
            key = (int(c), int(m) if gpu else 0, int(k) if gpu else 0, spec if gpu else "")
            counts[key] = counts.get(key, 0) + 1
        if not counts:
            raise ValueError("an empty task list has no target workload")
        total = float(sum(counts.values()))
        # The simulator's order: descending by (count, cpu, milli, gpu count, spec), a total order.
        ranked = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        expected = float(popularity) * total / 100.0
        keep: list[tuple[tuple, int]] = []
        covered = 0.0
        for item in ranked:
            if covered >= expected:
                break
            keep.append(item)
            covered += float(item[1])
        p = [(float(n) / total) / (covered / total) for _, n in keep]
        return cls(
            cpu=np.array([k[0] for k, _ in keep], dtype=np.int64),
            milli=np.array([k[1] for k, _ in keep], dtype=np.int64),
            count=np.array([k[2] for k, _ in keep], dtype=np.int64),
            models=tuple((frozenset(x for x in k[3].split("|") if x) or None) for k, _ in keep),
            p=np.array(p, dtype=np.float64),
        )

    def access(self, node_models: Sequence[str]) -> np.ndarray:
        """(N, J) bool: may class j run on a node of this GPU model (CPU-only classes: always)."""
        out = np.ones((len(node_models), len(self)), dtype=bool)
        for j, allowed in enumerate(self.models):
            if allowed is not None and self.milli[j] > 0:
                out[:, j] = np.fromiter((m in allowed for m in node_models), dtype=bool, count=len(node_models))
        return out


def fragmentation(tw: TargetWorkload, cpu_free: np.ndarray, gpu_free: np.ndarray,
                  access: np.ndarray | None = None) -> np.ndarray:
    """FGD's expected GPU fragment of each node state, in milli-GPU: sum_j p_j * phi_j.

    `cpu_free` (M,), `gpu_free` (M, G) free milli per GPU (absent GPUs are 0), `access` (M, J) or None.
    phi_j is all the node's idle GPU (g) unless class j could run there now (enough GPUs with >= milli_j free,
    enough cpu, an allowed model), in which case it is only the idle GPU on GPUs too small for it; CPU-only
    classes count all idle GPU. The sum is formed exactly as the FGD simulator forms it (per-bucket running sums
    in class order, then the buckets but Q3 in order), so equal states give equal floats and scores derived from
    differences reproduce the simulator's integer truncation."""
    cpu_free = np.asarray(cpu_free, dtype=np.int64)
    gpu_free = np.asarray(gpu_free, dtype=np.int64)
    m = len(cpu_free)
    j = len(tw)
    if m == 0:
        return np.zeros(0, dtype=np.float64)
    g = gpu_free.sum(axis=1)
    fits = gpu_free[:, None, :] >= tw.milli[None, :, None]  # (M, J, G)
    can_host = np.count_nonzero(fits, axis=2) >= tw.count  # (M, J)
    small = (gpu_free[:, None, :] * ~fits).sum(axis=2)  # idle milli on GPUs too small for class j
    cpu_ok = cpu_free[:, None] >= tw.cpu
    gpu_class = tw.milli > 0
    # GPU classes: no access -> NO_ACCESS; can host: Q3 (its fragment counts in Q2) or Q4 (lacks cpu);
    # cannot host: Q2 or Q1 (lacks both). CPU-only classes: XL or XR. Q3 itself is never summed.
    bucket = np.where(cpu_ok, Q2_LACK_GPU, np.where(can_host, Q4_LACK_CPU, Q1_LACK_BOTH))
    satisfied = can_host & cpu_ok & gpu_class
    if access is not None:
        bucket = np.where(access, bucket, NO_ACCESS)
        satisfied &= access
    bucket = np.where(gpu_class, bucket, np.where(cpu_ok, XL_SATISFIED, XR_LACK_CPU))
    amount = np.where(satisfied, small, g[:, None])
    per = np.zeros((m, 7, j), dtype=np.float64)
    per[np.arange(m)[:, None], bucket, np.arange(j)[None, :]] = tw.p * amount
    # Running sums left to right (cumsum is sequential): the simulator's `bucket += p * amount` rounding, then
    # its sum over the buckets in order (Q3's stays 0).
    buckets = np.cumsum(per, axis=2)[:, :, -1]
    return np.cumsum(buckets, axis=1)[:, -1]


def dedupe_rows(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first, inverse) for the distinct rows of an int64 matrix: key[first][inverse] == key.

    Hashes rows to one 64-bit number and checks the result, falling back to an exact row sort on a collision."""
    h = np.zeros(len(key), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for c in range(key.shape[1]):
            h = h * np.uint64(0x100000001B3) ^ key[:, c].astype(np.uint64)
    _, first, inverse = np.unique(h, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if not (key[first][inverse] == key).all():
        _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
    return first, inverse
