"""FGD's openb experiment, exactly: arrivals, node ranks, one-task-at-a-time placement, and the metric.

This is the protocol of the FGD paper (Weng et al., USENIX ATC'23) as its simulator
(hkust-adsl/kubernetes-scheduler-simulator) runs it; `/work/shared/reference/fgd-protocol.md` in the project's
steering notes spells it out. Per seed:

1. One Go `math/rand` generator seeded with the seed (`gorand.GoRand`); one draw is discarded (the simulator logs
   `rand.Int()`), then the name-sorted tasks are shuffled (Go's Fisher-Yates `Shuffle`).
2. Tune-up to `tune` x the cluster's GPU capacity (milli-GPU): starting from the list's total k*m, draw a uniform
   index into the ORIGINAL name-sorted list; stop when total + m (per-GPU milli, not k*m) would exceed the target,
   else append a copy of that task after all the shuffled originals and add its k*m. (A tune below the list's total
   removes uniformly drawn tasks instead, as the simulator's tune-down does.)
3. Ten draws are discarded (the simulator's informers consume them), then `Perm(N)` over the name-sorted nodes
   gives each node its rank. Equal scores always go to the lowest rank.
4. Tasks arrive one at a time in list order and never leave. A task goes to the best feasible node by the policy's
   score; a task that fits nowhere is dropped for good (its GPU request still counts as arrived).

Feasibility: cpu and memory fit; a GPU task needs a node with GPUs of an allowed model and, for k = 1, one GPU with
at least m free, for k > 1, k fully free GPUs.

Metric, after every arrival: A = cumulative k*m arrived, U = milli-GPU allocated; x = round(A / G / 10) (G = GPU
count), y = round(U / G / 10, 2); the value at a = 0..130 is round(mean of y over events with x = a, 2) (when there
are none, over x in [a-1, a+1]). Python's `round` is the simulator's analysis script's.

Performance: a score depends only on the node's own state and the task's class (cpu, k, m, model spec), so every
class keeps its scores over all nodes and re-scores only nodes whose state changed since (one node per arrival);
nodes in identical states share one computation where a policy batches them (see policies/fgd.py).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from magma.scheduler.framework.devices import MILLI, TargetWorkload, fragmentation, state_fragmentation

from .gorand import GoRand
from .openb import NodeList, PodList

if TYPE_CHECKING:
    from .policies.base import Policy

INFORMER_DRAWS = 10  # draws made between the tune-up and the node permutation
DEFAULT_TUNE = 1.3
DEFAULT_SEEDS = tuple(range(42, 52))


# ---------------------------------------------------------------------------------------------- arrivals


def arrivals(pods: PodList, seed: int, tune: float, capacity_milli: int) -> tuple[list[int], GoRand]:
    """Steps 1-2 (and the discarded draws of step 3): the arrival order as indices into the name-sorted task
    list, and the generator, positioned for the node permutation."""
    rng = GoRand(seed)
    rng.int()
    order = list(range(len(pods)))
    rng.shuffle_list(order)
    req = (pods.num_gpu * pods.gpu_milli).tolist()
    per_gpu = pods.gpu_milli.tolist()
    total = int(sum(req))
    target = tune * float(capacity_milli)
    n = len(pods)
    if tune <= 0 or float(total) == target:
        pass
    elif float(total) < target:
        while True:
            idx = rng.intn(n)
            if float(total + per_gpu[idx]) > target:
                break
            total += req[idx]
            order.append(idx)
    else:
        while float(total) > target:
            if not order:
                raise ValueError("tune-down emptied the task list")
            pos = rng.intn(len(order))
            total -= req[order.pop(pos)]
    for _ in range(INFORMER_DRAWS):
        rng.int63()
    return order, rng


def node_ranks(rng: GoRand, n: int) -> np.ndarray:
    """Step 3: node i (name order) gets rank perm[i]; lower rank wins ties."""
    return np.array(rng.perm(n), dtype=np.int64)


# ---------------------------------------------------------------------------------------------- classes


@dataclass(frozen=True)
class TaskClass:
    """What scores depend on: cpu, GPU count k, per-GPU milli m and the allowed models."""

    id: int
    cpu: int
    k: int
    m: int
    spec: str  # "" or "A|B"
    access: np.ndarray | None  # (N,) allowed node rows for a GPU task with a model spec, else None

    @property
    def share(self) -> bool:
        return self.k == 1 and self.m < MILLI

    @property
    def gpu(self) -> bool:
        return self.k > 0

    @property
    def request(self) -> int:
        return self.k * self.m

    @property
    def tag(self) -> int:
        """GpuClustering's tag: 0 for a sharing task, k for a k-whole-GPU task, -1 for a CPU-only task."""
        if not self.k:
            return -1
        return 0 if self.share else self.k


class Workload:
    """A name-sorted task list prepared for replay: per task its class and memory; the classes; FGD's target."""

    def __init__(self, pods: PodList, nodes: NodeList, popularity: int = 95):
        self.pods = pods
        self.memory = pods.memory
        self.request = pods.num_gpu * pods.gpu_milli
        keys: dict[tuple, int] = {}
        cls = np.empty(len(pods), dtype=np.int64)
        for i in range(len(pods)):
            k = int(pods.num_gpu[i])
            key = (int(pods.cpu[i]), k, int(pods.gpu_milli[i]), pods.gpu_spec[i] if k else "")
            cls[i] = keys.setdefault(key, len(keys))
        self.task_class = cls
        models = np.array(nodes.model, dtype=object)
        has_gpu = nodes.gpus > 0
        self.classes: list[TaskClass] = []
        for (cpu, k, m, spec), cid in keys.items():
            access = None
            if k and spec:
                allowed = {s for s in spec.split("|") if s}
                access = has_gpu & np.fromiter((mo in allowed for mo in models), dtype=bool, count=len(models))
            elif k:
                access = has_gpu if not has_gpu.all() else None
            self.classes.append(TaskClass(cid, cpu, k, m, spec, access))
        self.target = TargetWorkload.from_tasks(pods.cpu, pods.gpu_milli, pods.num_gpu, pods.gpu_spec, popularity)
        self.target_access = self.target.access(list(nodes.model))


# ---------------------------------------------------------------------------------------------- cluster state


class ClusterState:
    """Free resources per node as arrays. `gpu` is (N, G) free milli per GPU (absent GPUs 0)."""

    def __init__(self, nodes: NodeList, workload: Workload, track_frag: bool = True):
        n = len(nodes)
        self.n = n
        self.g = max(int(nodes.gpus.max()), 1)
        self.names = nodes.names
        self.cpu_cap = nodes.cpu.astype(np.int64)
        self.mem_cap = nodes.memory.astype(np.int64)
        self.ngpu = nodes.gpus.astype(np.int64)
        self.models = nodes.model
        self.cpu = self.cpu_cap.copy()
        self.mem = self.mem_cap.copy()
        self.gpu = np.zeros((n, self.g), dtype=np.int64)
        for i, k in enumerate(self.ngpu.tolist()):
            self.gpu[i, :k] = MILLI
        self.nfull = self.ngpu.copy()  # fully free GPUs
        self.gmax = np.where(self.ngpu > 0, MILLI, 0).astype(np.int64)  # largest free share of one GPU
        self.gsum = self.ngpu * MILLI  # free GPU milli
        self.gpu_cap = int(self.gsum.sum())
        # GpuClustering's tags: column 0 counts sharing tasks, column k counts k-GPU tasks.
        self.tags = np.zeros((n, self.g + 2), dtype=np.int64)
        self.ntags = np.zeros(n, dtype=np.int64)  # distinct tags present
        self.version = np.zeros(n, dtype=np.int64)
        self.clock = 0
        self.allocated = 0  # milli-GPU
        self.workload = workload
        self.target = workload.target
        self.track_frag = track_frag
        self.frag = fragmentation(self.target, self.cpu, self.gpu, workload.target_access) if track_frag else None
        self.frag_total = float(self.frag.sum()) if track_frag else 0.0

    def feasible(self, tc: TaskClass, memory: int) -> np.ndarray:
        ok = (self.cpu >= tc.cpu) & (self.mem >= memory)
        if tc.k:
            if tc.share:
                ok &= self.gmax >= tc.m
            else:
                ok &= self.nfull >= tc.k
            if tc.access is not None:
                ok &= tc.access
        return ok

    def place(self, node: int, tc: TaskClass, memory: int, gpus: Sequence[int],
              frag_after: float | None = None) -> None:
        """Take the task's resources on `node` (GPUs by index). `frag_after`, when the policy already knows the
        node's new fragmentation, saves recomputing it."""
        self.cpu[node] -= tc.cpu
        self.mem[node] -= memory
        if tc.k:
            row = self.gpu[node]
            for i in gpus:
                row[i] -= tc.m
                if row[i] < 0:
                    raise AssertionError(f"GPU {i} of node {self.names[node]} over-allocated")
            self.nfull[node] = int((row == MILLI).sum())
            self.gmax[node] = int(row.max())
            self.gsum[node] = int(row.sum())
            self.allocated += tc.k * tc.m
            tag = tc.tag
            if self.tags[node, tag] == 0:
                self.ntags[node] += 1
            self.tags[node, tag] += 1
        self.clock += 1
        self.version[node] = self.clock
        if self.track_frag:
            if frag_after is not None:
                new = frag_after
            else:
                new = float(fragmentation(self.target, self.cpu[node:node + 1], self.gpu[node:node + 1],
                                          self.workload.target_access[node:node + 1])[0])
            self.frag_total += new - float(self.frag[node])
            self.frag[node] = new


# ---------------------------------------------------------------------------------------------- one seed


@dataclass
class SeedTrace:
    """Per arrival: cumulative arrived milli-GPU, allocated milli-GPU, cluster fragmentation (milli-GPU)."""

    seed: int
    arrived: np.ndarray
    allocated: np.ndarray
    frag: np.ndarray | None
    placed: np.ndarray  # bool
    total_gpus: int
    seconds: float = 0.0

    def points(self, top: int) -> dict[int, float]:
        return curve_points(self.arrived, self.allocated, self.total_gpus, top)

    def frag_points(self, top: int) -> dict[int, float]:
        if self.frag is None:
            return {}
        return curve_points(self.arrived, self.frag, self.total_gpus, top)


def curve_points(arrived: np.ndarray, value: np.ndarray, total_gpus: int, top: int) -> dict[int, float]:
    """The simulator's analysis: mean of round(value/G/10, 2) over events with round(A/G/10) = a (a = 0..top;
    when no event has x = a, over x in [a-1, a+1]), rounded to 2 decimals."""
    x = np.rint(arrived / total_gpus / 10)
    y = [round(v, 2) for v in (value / total_gpus / 10).tolist()]
    ya = np.array(y, dtype=np.float64)
    out: dict[int, float] = {}
    for a in range(0, top + 1):
        sel = x == a
        if not sel.any():
            sel = (x >= a - 1) & (x <= a + 1)
            if not sel.any():
                continue
        # The exact sum (math.fsum) reproduces the published means at every point; a pairwise or running float
        # sum rounds the other way at a few exact halves.
        vals = ya[sel].tolist()
        out[a] = round(math.fsum(vals) / len(vals), 2)
    return out


def run_seed(nodes: NodeList, workload: Workload, policy: "Policy", seed: int, tune: float = DEFAULT_TUNE,
             track_frag: bool = True) -> SeedTrace:
    """Replay one seed with one policy. With `track_frag` the trace also holds the cluster's fragmentation after
    every arrival: kept live when the policy reads it, else computed at the end from the recorded node states
    (one vectorised pass instead of one call per arrival)."""
    t0 = time.perf_counter()
    order, rng = arrivals(workload.pods, seed, tune, nodes.total_gpu_milli)
    ranks = node_ranks(rng, len(nodes))
    live = policy.needs_frag
    state = ClusterState(nodes, workload, track_frag=live)
    policy.bind(state, ranks, rng)
    classes = workload.classes
    task_class = workload.task_class.tolist()
    memory = workload.memory.tolist()
    request = workload.request.tolist()
    n = len(order)
    arrived = np.empty(n, dtype=np.int64)
    allocated = np.empty(n, dtype=np.int64)
    frag = np.empty(n, dtype=np.float64) if (track_frag and live) else None
    deferred = track_frag and not live
    rec_node = np.full(n, -1, dtype=np.int64) if deferred else None
    rec_cpu = np.zeros(n, dtype=np.int64) if deferred else None
    rec_gpu = np.zeros((n, state.g), dtype=np.int64) if deferred else None
    placed = np.zeros(n, dtype=bool)
    a_total = 0
    for e, t in enumerate(order):
        tc = classes[task_class[t]]
        mem = memory[t]
        rows = np.flatnonzero(state.feasible(tc, mem))
        if rows.size:
            node = policy.select(tc, rows, mem)
            gpus = policy.gpus(node, tc) if tc.k else ()
            state.place(node, tc, mem, gpus, policy.after_frag(node, tc) if live else None)
            placed[e] = True
            if deferred:
                rec_node[e] = node
                rec_cpu[e] = state.cpu[node]
                rec_gpu[e] = state.gpu[node]
        a_total += request[t]
        arrived[e] = a_total
        allocated[e] = state.allocated
        if frag is not None:
            frag[e] = state.frag_total
    if deferred:
        frag = _replay_frag(nodes, workload, state.g, rec_node, rec_cpu, rec_gpu)
    return SeedTrace(seed, arrived, allocated, frag, placed, int(nodes.gpus.sum()), time.perf_counter() - t0)


def _replay_frag(nodes: NodeList, workload: Workload, g: int, rec_node: np.ndarray, rec_cpu: np.ndarray,
                 rec_gpu: np.ndarray) -> np.ndarray:
    """Cluster fragmentation after every arrival, from the node states recorded after each placement."""
    n0 = len(nodes)
    gpu0 = np.zeros((n0, g), dtype=np.int64)
    for i, k in enumerate(nodes.gpus.tolist()):
        gpu0[i, :k] = MILLI
    access = workload.target_access
    _, access_id = np.unique(access, axis=0, return_inverse=True)
    access_id = access_id.reshape(-1)
    current = state_fragmentation(workload.target, nodes.cpu.astype(np.int64), gpu0, access, access_id)
    hit = np.flatnonzero(rec_node >= 0)
    rows = rec_node[hit]
    new = state_fragmentation(workload.target, rec_cpu[hit], rec_gpu[hit], access[rows], access_id[rows])
    out = np.empty(len(rec_node), dtype=np.float64)
    total = float(current.sum())
    k = 0
    for e in range(len(rec_node)):
        node = rec_node[e]
        if node >= 0:
            v = float(new[k])
            total += v - float(current[node])
            current[node] = v
            k += 1
        out[e] = total
    return out


# ---------------------------------------------------------------------------------------------- many seeds


@dataclass
class ReplayResult:
    policy: str
    seeds: list[int]
    tune: float
    top: int
    per_seed: dict[int, dict[int, float]] = field(default_factory=dict)
    frag_per_seed: dict[int, dict[int, float]] = field(default_factory=dict)
    failed: dict[int, int] = field(default_factory=dict)
    tasks: dict[int, int] = field(default_factory=dict)
    seconds: dict[int, float] = field(default_factory=dict)

    def mean_at(self, a: int, which: str = "alloc") -> float | None:
        src = self.per_seed if which == "alloc" else self.frag_per_seed
        vals = [pts[a] for pts in src.values() if a in pts]
        if not vals:
            return None
        return round(sum(vals) / len(vals), 2)

    def curve(self, which: str = "alloc") -> list[list[float]]:
        out = []
        for a in range(self.top + 1):
            v = self.mean_at(a, which)
            if v is not None:
                out.append([a, v])
        return out

    def to_json(self) -> dict:
        at = {str(a): self.mean_at(a) for a in (50, 80, 90, 100, 110, 120, self.top) if a <= self.top}
        return {
            "policy": self.policy,
            "seeds": list(self.seeds),
            "tune": self.tune,
            "allocationAt": {k: v for k, v in sorted(at.items(), key=lambda kv: int(kv[0])) if v is not None},
            "curve": self.curve(),
            "perSeedAt100": {str(s): pts.get(100) for s, pts in self.per_seed.items()},
            "fragmentationCurve": self.curve("frag") if self.frag_per_seed else [],
            "failedTasks": {str(s): n for s, n in self.failed.items()},
            "arrivedTasks": {str(s): n for s, n in self.tasks.items()},
            "secondsPerSeed": {str(s): round(v, 3) for s, v in self.seconds.items()},
        }


def top_percent(tune: float) -> int:
    return int(math.floor(tune * 100 + 1e-9))


def summarise(policy: str, tune: float, traces: Sequence[SeedTrace]) -> ReplayResult:
    top = top_percent(tune)
    res = ReplayResult(policy=policy, seeds=[t.seed for t in traces], tune=tune, top=top)
    for t in traces:
        res.per_seed[t.seed] = t.points(top)
        if t.frag is not None:
            res.frag_per_seed[t.seed] = t.frag_points(top)
        res.failed[t.seed] = int((~t.placed).sum())
        res.tasks[t.seed] = int(len(t.placed))
        res.seconds[t.seed] = t.seconds
    return res


def replay(nodes: NodeList, pods: PodList, policy_name: str, seeds: Sequence[int], tune: float = DEFAULT_TUNE,
           track_frag: bool = True, on_seed: Callable[[SeedTrace], None] | None = None,
           workload: Workload | None = None) -> ReplayResult:
    """Run seeds one after another in this process (see cli/replay.py for the parallel runner)."""
    from .policies import make_policy

    wl = workload or Workload(pods, nodes)
    traces = []
    for s in seeds:
        tr = run_seed(nodes, wl, make_policy(policy_name), s, tune, track_frag)
        traces.append(tr)
        if on_seed:
            on_seed(tr)
    return summarise(policy_name, tune, traces)
