"""magma: GPU placement that keeps the cluster able to take the work still to come.

The plugin registers, under the name `magma`:
- a predicate for GPU requests (fractions of a GPU, Volcano vGPUs, whole GPUs): a node fails when it has fewer
  GPUs than asked or GPUs with less memory than a vGPU asks, whatever runs there. Whether GPUs have room *now*
  is a resource fit: with shared GPUs in the session the device table adds per-GPU capacity columns to the
  NodeTable (see framework/devices.py), so the actions' vectorised fit, re-checked for changed nodes after every
  placement, is exact per GPU (the predicate itself leaves room to the fit, so preemption can free whole GPUs);
- node_order_batch: `MagmaScorer` below, the same function `magma replay openb --policy magma` measures, over the
  session's NodeTable (cpu: the node's future idle) and device table (GPU free shares), plus a bonus for a
  multi-GPU pod that fits inside one NVLink domain of the node;
- through the device table's event handler, the GPU choice at allocation: a GPU share goes on the GPU the
  scorer likes best, several GPUs inside one NVLink domain when they can (see DeviceTable.choose).

The target workload (what fragmentation is judged against) is the session's own jobs' tasks, pending and
placed, as FGD's typical pods: classes of (cpu, GPU share, GPU count, model) covering 95% of them.

Arguments (all optional):
  magma.weight (1)            multiplies the score; 0 registers no score (devices and predicate only)
  magma.strandWeight (1.0)    weight of the cpu-stranding term
  magma.usedBonus (0.5)       for a node already using a GPU
  magma.tightBonus (0.4)      for a GPU share, times how little it leaves on its GPU
  magma.nvlinkBonus (5)       for a multi-GPU pod that fits in one NVLink domain of the node
  magma.popularity (95)       percent of the tasks the target workload's classes cover
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from magma.api.resources import CPU

from ..framework import PredicateResult, Session, TaskInfo, TaskStatus, plugin
from ..framework.devices import (
    MILLI,
    DeviceTable,
    GpuRequest,
    TargetWorkload,
    after_states,
    state_fragmentation,
)
from . import _selectors as sel

NAME = "magma"
TOO_FEW_GPUS = "node(s) did not have enough GPUs"
TOO_SMALL_GPUS = "node(s) had GPUs with too little memory"


@dataclass(frozen=True)
class MagmaScorer:
    """magma's node score for one task over many node states (vectorised), shared by the live plugin and the
    trace replay.

    With frag(n) FGD's expected GPU fragment of node n against the target workload and
    strand(n) = max(0, g_n - c_n / rho) the idle GPU the node's free cpu cannot feed at the target's cpu-per-GPU
    ratio rho (its GPU classes), a candidate placement scores

        trunc(100 * sigmoid(([frag + w * strand]_before - [frag + w * strand]_after) / 1000))
        + used_bonus   if the node already has a GPU in use (keeps empty nodes for whole-node jobs)
        + tight_bonus * (1 - f_after / 1000)   for a GPU share: the chosen GPU's free share left, tighter is better

    The first term is FGD's score with the stranding term added to its fragmentation; the bonuses (together below
    1) only order nodes FGD's integer score ties. A sharing task tries every GPU with room and keeps its best
    (lowest index on ties)."""

    target: TargetWorkload
    rho: float
    strand_weight: float = 1.0
    used_bonus: float = 0.5
    tight_bonus: float = 0.4

    @classmethod
    def for_target(cls, target: TargetWorkload, **options) -> "MagmaScorer":
        return cls(target=target, rho=cpu_per_gpu(target), **options)

    def strand(self, cpu_free: np.ndarray, gpu_free_total: np.ndarray) -> np.ndarray:
        if self.rho <= 0 or self.strand_weight == 0:
            return np.zeros(len(cpu_free))
        return np.maximum(0.0, gpu_free_total - cpu_free / self.rho)

    def candidate_scores(self, cpu_free: np.ndarray, gpu_free: np.ndarray, gpu_capacity: np.ndarray,
                         access: np.ndarray, frag_before: np.ndarray, rows: np.ndarray, gpus: np.ndarray,
                         cpu_after: np.ndarray, gpu_after: np.ndarray, share: bool,
                         access_id: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(score, fragmentation after) of candidate after-states; `rows` index the node arrays."""
        after = state_fragmentation(self.target, cpu_after, gpu_after, access[rows],
                                    None if access_id is None else access_id[rows])
        total_b = gpu_free[rows].sum(axis=1)
        total_a = gpu_after.sum(axis=1)
        w = self.strand_weight
        gain = (frag_before[rows] + w * self.strand(cpu_free[rows], total_b)) - \
               (after + w * self.strand(cpu_after, total_a))
        score = np.trunc(1.0 / (1.0 + np.exp(-(gain / 1000.0))) * 100.0)
        score = score + self.used_bonus * (total_b < gpu_capacity[rows])
        if share:
            left = gpu_after[np.arange(len(rows)), gpus]
            score = score + self.tight_bonus * (1.0 - left / MILLI)
        return score, after

    def evaluate(self, cpu_free: np.ndarray, gpu_free: np.ndarray, gpu_capacity: np.ndarray, access: np.ndarray,
                 frag_before: np.ndarray, cpu: int, count: int, milli: int, access_id: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(score, chosen GPU or -1, fragmentation after) for each of M feasible node states.

        cpu_free (M,), gpu_free (M, G) free milli per GPU, gpu_capacity (M,) milli of all the node's GPUs,
        access (M, J) may target class j use the node's GPU model, frag_before (M,) their fragmentation now.
        Rows where the task has no room score -inf."""
        m = len(cpu_free)
        share = count == 1 and milli < MILLI
        rows, gpus, cpu_a, gpu_a = after_states(cpu_free, gpu_free, cpu, count, milli)
        score, after = self.candidate_scores(cpu_free, gpu_free, gpu_capacity, access, frag_before, rows, gpus,
                                             cpu_a, gpu_a, share, access_id)
        out_score = np.full(m, -np.inf)
        out_gpu = np.full(m, -1, dtype=np.int64)
        out_after = np.zeros(m)
        if not share:
            out_score[rows], out_after[rows] = score, after
            return out_score, out_gpu, out_after
        g = gpu_free.shape[1]
        mat = np.full((m, g), -np.inf)
        mat[rows, gpus] = score
        aft = np.zeros((m, g))
        aft[rows, gpus] = after
        best = np.argmax(mat, axis=1)  # first maximum: lowest GPU index on ties
        idx = np.arange(m)
        out_score = mat[idx, best]
        has = np.isfinite(out_score)
        out_gpu[has] = best[has]
        out_after[has] = aft[idx, best][has]
        return out_score, out_gpu, out_after


def cpu_per_gpu(target: TargetWorkload) -> float:
    """milli-CPU per milli-GPU of the target workload's GPU classes (0 when it has none)."""
    g = target.milli > 0
    gpu = float((target.p[g] * target.count[g] * target.milli[g]).sum())
    if gpu <= 0:
        return 0.0
    return float((target.p[g] * target.cpu[g]).sum()) / gpu


def _arg_float(args: dict[str, Any], key: str, default: float) -> float:
    v = args.get(key)
    if isinstance(v, bool) or v is None:
        return default
    try:
        f = float(v)
    except (TypeError, ValueError):
        return default
    return f if f >= 0 else default


@plugin(NAME)
class Magma:
    def __init__(self, arguments: dict[str, Any] | None = None):
        args = arguments or {}
        self.arguments = args
        self.weight = sel.arg_int(args, "magma.weight", 1)
        self.strand_weight = _arg_float(args, "magma.strandWeight", 1.0)
        self.used_bonus = _arg_float(args, "magma.usedBonus", 0.5)
        self.tight_bonus = _arg_float(args, "magma.tightBonus", 0.4)
        self.nvlink_bonus = _arg_float(args, "magma.nvlinkBonus", 5.0)
        self.popularity = min(max(sel.arg_int(args, "magma.popularity", 95), 1), 100)

    # ------------------------------------------------------------ session
    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        dev = self.devices = DeviceTable.of(ssn)
        pending = [t for j in ssn.jobs.values() for t in j.tasks.values() if t.status is TaskStatus.PENDING]
        if dev.sharing(pending):
            dev.enable_capacity_columns(pending)
        self.scorer = None
        target = self._target_workload()
        if target is not None:
            self.scorer = MagmaScorer.for_target(target, strand_weight=self.strand_weight,
                                                 used_bonus=self.used_bonus, tight_bonus=self.tight_bonus)
            self.access = target.access(dev.models)
            _, ids = np.unique(self.access, axis=0, return_inverse=True)
            self.access_id = ids.reshape(-1).astype(np.int64)
            self.frag = state_fragmentation(target, self._cpu_free(), dev.free, self.access, self.access_id)
            # Scores depend only on the node's own state: cached per kind of task, recomputed for changed rows.
            self._version = np.zeros(dev.n, dtype=np.int64)
            self._clock = 0
            self._cache: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
            dev.listeners.append(self._row_changed)
            dev.chooser = self._choose_gpu
        ssn.add_fn("predicate", NAME, self.predicate)
        if self.weight != 0 and self.scorer is not None:
            ssn.add_fn("node_order_batch", NAME, self.scores)

    def _cpu_free(self, rows: np.ndarray | None = None) -> np.ndarray:
        t = self.ssn.table
        if CPU not in t.col:
            return np.zeros(t.alloc.shape[0] if rows is None else len(rows), dtype=np.int64)
        c = t.col[CPU]
        sl = slice(None) if rows is None else rows
        return t.idle[sl, c] + t.releasing[sl, c] - t.pipelined[sl, c]

    def _share(self, req: GpuRequest) -> int:
        """A request's GPU share for the workload model (vGPU memory shares at the median GPU memory)."""
        if not req.vgpu:
            return min(req.milli, MILLI)
        known = self.devices.memory[self.devices.memory > 0]
        devmem = int(np.median(known)) if len(known) else 0
        if req.memory and devmem:
            mem_share = -(-req.memory * MILLI // devmem)
        elif req.memory_percent:
            mem_share = req.memory_percent * 10
        elif not req.memory:
            mem_share = MILLI
        else:
            mem_share = 0
        return int(min(max(req.milli, mem_share), MILLI))

    def _target_workload(self) -> TargetWorkload | None:
        cpu, milli, count, spec = [], [], [], []
        for job in self.ssn.jobs.values():
            for t in job.tasks.values():
                if t.status in (TaskStatus.SUCCEEDED, TaskStatus.FAILED):
                    continue
                req = self.devices.request(t)
                cpu.append(int(t.resreq.get(CPU, 0)))
                if req is None:
                    milli.append(0)
                    count.append(0)
                    spec.append("")
                else:
                    milli.append(self._share(req))
                    count.append(req.count)
                    spec.append(req.model)
        if not cpu:
            return None
        return TargetWorkload.from_tasks(cpu, milli, count, spec, self.popularity)

    def _row_changed(self, row: int) -> None:
        self._clock += 1
        self._version[row] = self._clock
        r = np.array([row])
        self.frag[row] = state_fragmentation(self.scorer.target, self._cpu_free(r), self.devices.free[r],
                                             self.access[r])[0]

    # ------------------------------------------------------------ predicate
    def predicate(self, task: TaskInfo, rows: np.ndarray) -> PredicateResult:
        rows = np.asarray(rows, dtype=np.int64)
        req = self.devices.request(task)
        if req is None:
            return PredicateResult(np.ones(len(rows), dtype=bool))
        enough, big = self.devices.structurally_possible(req, rows)
        reasons = []
        if (~enough).any():
            reasons.append((TOO_FEW_GPUS, ~enough))
        if (enough & ~big).any():
            reasons.append((TOO_SMALL_GPUS, enough & ~big))
        return PredicateResult(enough & big, reasons)

    # ------------------------------------------------------------ scores
    def _shape(self, req: GpuRequest | None, rows: np.ndarray) -> list[tuple[np.ndarray, int, int]]:
        """(row positions, count, milli) groups for the scorer: a vGPU's share depends on the node's memory."""
        if req is None:
            return [(np.arange(len(rows)), 0, 0)]
        if not req.vgpu:
            return [(np.arange(len(rows)), req.count, req.milli)]
        share, _ = self.devices.need(req, rows)
        out = []
        for s in np.unique(share):
            pos = np.flatnonzero(share == s)
            # Several vGPUs are scored as one share (an approximation); a full-GPU vGPU as whole GPUs.
            out.append((pos, req.count if s >= MILLI else 1, int(min(s, MILLI))))
        return out

    def scores(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return np.zeros(0, dtype=np.float64)
        dev = self.devices
        req = dev.request(task)
        cpu = int(task.resreq.get(CPU, 0))
        key = (cpu,) if req is None else (cpu, req.count, req.kind)
        entry = self._cache.get(key)
        if entry is None:
            entry = self._cache[key] = (np.zeros(dev.n), np.full(dev.n, -1, dtype=np.int64))
        cached, stamp = entry
        stale = rows[stamp[rows] != self._version[rows]]
        if len(stale):
            cpu_free = self._cpu_free(stale)
            cap = dev.ngpu[stale] * MILLI
            for pos, count, milli in self._shape(req, stale):
                r = stale[pos]
                s, _, _ = self.scorer.evaluate(cpu_free[pos], dev.free[r], cap[pos], self.access[r], self.frag[r],
                                               cpu, count, milli, access_id=self.access_id[r])
                cached[r] = np.where(np.isfinite(s), s, 0.0)
            stamp[stale] = self._version[stale]
        out = cached[rows].copy()
        if req is not None and req.count >= 2 and self.nvlink_bonus:
            out += self.nvlink_bonus * dev.one_domain(req, rows)
        return out * self.weight

    # ------------------------------------------------------------ GPU choice (device table callback)
    def _choose_gpu(self, row: int, req: GpuRequest, task: TaskInfo, candidates: np.ndarray) -> int:
        """The GPU a share goes on: the scorer's best among the GPUs with room (the task's cpu is already taken
        from the node when this runs, so the node's state before it is rebuilt)."""
        dev = self.devices
        r = np.array([row])
        share, _ = dev.need(req, r)
        milli = int(share[0])
        cpu = int(task.resreq.get(CPU, 0))
        cpu_before = self._cpu_free(r) + cpu
        gpu = dev.free[r]
        cand = np.asarray(candidates, dtype=np.int64)
        gpu_after = np.repeat(gpu, len(cand), axis=0)
        gpu_after[np.arange(len(cand)), cand] -= milli
        pos = np.zeros(len(cand), dtype=np.int64)
        score, _ = self.scorer.candidate_scores(cpu_before, gpu, dev.ngpu[r] * MILLI, self.access[r], self.frag[r],
                                                pos, cand, cpu_before[pos] - cpu, gpu_after, True)
        return int(cand[int(np.argmax(score))])
