"""Shared pieces of the benchmarks: generated clusters and workloads, measurement, printing.

Everything here is deterministic for a given `--seed`: the same command builds the same cluster and jobs, so
anyone can re-run a figure from BENCHMARKS.md.

The generated cluster (issue 5, "Benchmarks to write"):
- N nodes x 8 GPUs (192 cpu, 2 TiB, 110 pods), labelled with hostname, zone (4), rack (32 nodes each) and GPU
  model (3 in 4 nodes h100, the rest a100); one node in 20 is tainted `dedicated=inference:NoSchedule`;
- a weighted, hierarchical queue tree: root -> org-a (weight 3) {nlp 3, cv 2, speech 1} and org-b (weight 2)
  {research 2, infra 1}, plus Volcano's `default` queue;
- gang jobs (a PodGroup with minMember = its pod count and minResources, and its pods) of 1-16 pods, or of a
  fixed size (`--gang-size`), in the leaf queues by weight; a pod asks for 1, 2, 4 or 8 GPUs (one size per job)
  with cpu and memory in proportion; one job in 10 wants `gpu-type: a100` by nodeSelector, one in 20 tolerates
  the inference taint; three PriorityClasses (low 100, normal 1000 - the global default -, high 10000).

Measurement is the scheduler's own: `Scheduler.run_once()` returns `SessionResult.latency_ms`, the figure
`magma simulate --json` reports as `summary.sessionLatencyMs`. Peak memory is the process's peak resident set
(`resource.getrusage(...).ru_maxrss`), which includes building the cluster objects; `--tracemalloc` also
reports the peak of Python allocations during the measured session (tracemalloc slows Python down several
times, so the latency of that run is not comparable and is printed as such).
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import random
import resource
import sys
import time
import tracemalloc
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))  # runnable from a checkout without installing

from magma.api.config import VOLCANO_DEFAULT_CONF  # noqa: E402
from magma.api.config import parse_config  # noqa: E402
from magma.api.defaults import builtin_priority_classes, builtin_queues  # noqa: E402
from magma.api.objects import Node, Object, Pod, PodGroup, PriorityClass, Queue  # noqa: E402
from magma.cluster.memory import MemoryCluster  # noqa: E402
from magma.scheduler.scheduler import Scheduler, SessionResult  # noqa: E402

GPU = "nvidia.com/gpu"
NODE_GPUS = 8
NODE_CPU = 192
NODE_MEMORY_GI = 2048
# (leaf queue, parent, weight); parents first.
QUEUES = [("org-a", "root", 3), ("org-b", "root", 2),
          ("nlp", "org-a", 3), ("cv", "org-a", 2), ("speech", "org-a", 1),
          ("research", "org-b", 2), ("infra", "org-b", 1)]
LEAVES = [(name, w) for name, parent, w in QUEUES if parent != "root"]
PRIORITIES = {"low": 100, "normal": 1000, "high": 10000}
GPU_MIX = ((1, 0.4), (2, 0.3), (4, 0.2), (8, 0.1))  # GPUs per pod, weight

FULL_SESSION_CONF = VOLCANO_DEFAULT_CONF  # Volcano's built-in config, as the benchmark asks

PREEMPT_CONF = FULL_SESSION_CONF.replace('"enqueue, allocate, backfill"',
                                         '"enqueue, allocate, preempt, reclaim, backfill"')


def config(text: str):
    res = parse_config(text)
    assert res.config is not None, res.messages()
    return res.config


# ---------------------------------------------------------------- objects


def node(i: int) -> Node:
    labels = {
        "kubernetes.io/hostname": f"node-{i:05d}",
        "topology.kubernetes.io/zone": f"zone-{i % 4}",
        "rack": f"rack-{i // 32:04d}",
        "gpu-type": "a100" if i % 4 == 3 else "h100",
    }
    spec: dict[str, Any] = {}
    if i % 20 == 7:
        spec["taints"] = [{"key": "dedicated", "value": "inference", "effect": "NoSchedule"}]
    return Node.model_validate({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i:05d}", "labels": labels},
        "spec": spec,
        "status": {"allocatable": {"cpu": str(NODE_CPU), "memory": f"{NODE_MEMORY_GI}Gi",
                                   GPU: str(NODE_GPUS), "pods": "110"}}})


def queue(name: str, parent: str | None, weight: int) -> Queue:
    spec: dict[str, Any] = {"weight": weight, "reclaimable": True}
    if parent:
        spec["parent"] = parent
    return Queue.model_validate({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                 "metadata": {"name": name, "uid": f"q-{name}", "creationTimestamp": 0},
                                 "spec": spec, "status": {"state": "Open"}})


def priority_class(name: str, value: int) -> PriorityClass:
    return PriorityClass.model_validate({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                         "metadata": {"name": name}, "value": value,
                                         "globalDefault": name == "normal"})


@dataclass
class JobSpec:
    name: str
    queue: str
    pods: int
    gpus: int  # per pod (0: best-effort pod, no request)
    priority: str = "normal"
    selector: dict[str, str] = field(default_factory=dict)
    tolerates: bool = False
    creation: float = 0.0
    cpu_only: bool = False  # with gpus 0: a small cpu/memory request instead of none (best-effort)

    def request(self) -> dict[str, str]:
        if self.gpus == 0:
            return {"cpu": "1", "memory": "1Gi"} if self.cpu_only else {}
        return {"cpu": str(self.gpus * 16), "memory": f"{self.gpus * 128}Gi", GPU: str(self.gpus)}


def job_objects(job: JobSpec, nodes: list[str] | None = None, phase: str | None = None) -> list[Object]:
    """The PodGroup and pods of a job; pods on `nodes` (same length as the pods) run there."""
    ns = f"team-{job.queue}"
    req = job.request()
    min_res = {}
    if req:
        min_res = {"cpu": str(int(req["cpu"]) * job.pods),
                   "memory": f"{int(req['memory'][:-2]) * job.pods}Gi"}
        if job.gpus:
            min_res[GPU] = str(job.gpus * job.pods)
    pg_phase = phase or ("Running" if nodes else "Pending")
    spec: dict[str, Any] = {"minMember": job.pods, "queue": job.queue, "priorityClassName": job.priority}
    if min_res:
        spec["minResources"] = min_res
    objs: list[Object] = [PodGroup.model_validate({
        "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
        "metadata": {"name": job.name, "namespace": ns, "uid": f"pg-{job.name}",
                     "creationTimestamp": job.creation},
        "spec": spec, "status": {"phase": pg_phase}})]
    pod_spec: dict[str, Any] = {"schedulerName": "volcano", "priorityClassName": job.priority,
                                "containers": [{"name": "main", "resources": {"requests": req}}]}
    if job.selector:
        pod_spec["nodeSelector"] = dict(job.selector)
    if job.tolerates:
        pod_spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "inference",
                                    "effect": "NoSchedule"}]
    for i in range(job.pods):
        spec_i = dict(pod_spec)
        on = nodes[i] if nodes else None
        if on:
            spec_i["nodeName"] = on
        objs.append(Pod.model_validate({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{job.name}-worker-{i}", "namespace": ns, "uid": f"pod-{job.name}-{i}",
                         "creationTimestamp": job.creation, "labels": {"app": job.name},
                         "annotations": {"scheduling.k8s.io/group-name": job.name, "volcano.sh/task-spec": "worker"}},
            "spec": spec_i, "status": {"phase": "Running" if on else "Pending"}}))
    return objs


def base_objects(n_nodes: int) -> list[Object]:
    objs: list[Object] = [node(i) for i in range(n_nodes)]
    objs.append(queue("root", None, 1))
    objs += [queue(name, parent, w) for name, parent, w in QUEUES]
    objs += [priority_class(n, v) for n, v in PRIORITIES.items()]
    have = {o.name for o in objs if isinstance(o, (Queue, PriorityClass))}
    objs += [q for q in builtin_queues() if q.name not in have]
    objs += [pc for pc in builtin_priority_classes() if pc.name not in have]
    return objs


def random_jobs(rng: random.Random, pods: int, gang_size: int | None, prefix: str = "job",
                priority: str = "normal", queues: list[tuple[str, int]] | None = None,
                gpu_mix=GPU_MIX, best_effort: float = 0.0, start: int = 0,
                max_jobs: int | None = None) -> list[JobSpec]:
    """Jobs until `pods` pods (or `max_jobs` jobs): gangs of `gang_size` (or 1-16), leaf queues by weight."""
    queues = queues or LEAVES
    names, weights = [q for q, _ in queues], [w for _, w in queues]
    sizes, size_w = [g for g, _ in gpu_mix], [w for _, w in gpu_mix]
    out: list[JobSpec] = []
    left = pods
    i = start
    while left > 0 and (max_jobs is None or len(out) < max_jobs):
        n = min(gang_size or rng.randint(1, 16), left)
        be = best_effort and rng.random() < best_effort
        j = JobSpec(name=f"{prefix}-{i:06d}", queue=rng.choices(names, weights)[0], pods=n,
                    gpus=0 if be else rng.choices(sizes, size_w)[0], priority=priority,
                    creation=float(i))
        r = rng.random()
        if r < 0.10:
            j.selector = {"gpu-type": "a100"}
        elif r < 0.15:
            j.tolerates = True
        out.append(j)
        left -= n
        i += 1
    return out


class Packer:
    """Places running jobs on nodes first-fit, as a filled cluster would look (GPUs only, nodes in order)."""

    def __init__(self, n_nodes: int):
        self.free = [NODE_GPUS] * n_nodes
        self.pods = [0] * n_nodes
        self.cursor = 0
        self.n = n_nodes

    def allowed(self, i: int, job: JobSpec) -> bool:
        if job.selector and i % 4 != 3:
            return False
        if i % 20 == 7 and not job.tolerates:
            return False
        return True

    def place(self, job: JobSpec, max_pods: int = 110) -> list[str] | None:
        out: list[int] = []
        i = self.cursor
        scanned = 0
        free = list(self.free)
        pods = list(self.pods)
        while len(out) < job.pods and scanned < self.n:
            if self.allowed(i, job) and free[i] >= job.gpus and pods[i] < max_pods:
                free[i] -= job.gpus
                pods[i] += 1
                out.append(i)
                continue
            i = (i + 1) % self.n
            scanned += 1
        if len(out) < job.pods:
            return None
        self.free, self.pods = free, pods
        self.cursor = out[-1]
        return [f"node-{i:05d}" for i in out]


def fill_gpus(rng: random.Random, n_nodes: int, queues: list[tuple[str, int]],
              shape: Callable[[JobSpec], None]) -> list[tuple[JobSpec, list[str]]]:
    """Running gangs placed first-fit until every GPU is taken (or 50 jobs did not fit), the last holes filled
    with single 1-GPU pods; `shape(job)` sets each job's size (and whatever else) before it is placed."""
    packer = Packer(n_nodes)
    running: list[tuple[JobSpec, list[str]]] = []
    capacity = n_nodes * NODE_GPUS
    used, i, misses = 0, 0, 0
    while misses < 50 and used < capacity:
        job = random_jobs(rng, 1, None, prefix="run", queues=queues, start=i)[0]
        shape(job)
        job.creation = float(i)
        i += 1
        on = packer.place(job)
        if on is None:
            misses += 1
            job.pods, job.gpus, job.selector, job.tolerates = 1, 1, {}, True
            on = packer.place(job)
            if on is None:
                continue
        running.append((job, on))
        used += job.pods * job.gpus
    return running


# ---------------------------------------------------------------- measuring


@dataclass
class Measured:
    result: SessionResult
    wall_ms: float
    traced_peak_mb: float | None = None
    gc_ms: float = 0.0  # time the cyclic garbage collector ran during the session (part of the latency)
    gc_runs: int = 0


class GcTimer:
    """Time spent in Python's cyclic garbage collector (gc.callbacks), to say how much of a latency it is."""

    def __init__(self) -> None:
        self.ms = 0.0
        self.runs = 0
        self._t0 = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            self.ms += (time.perf_counter() - self._t0) * 1000
            self.runs += 1

    def __enter__(self) -> "GcTimer":
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc) -> None:
        gc.callbacks.remove(self)


def run_session(scheduler: Scheduler, trace_memory: bool = False) -> Measured:
    gc.collect()
    if trace_memory:
        tracemalloc.start()
    with GcTimer() as gct:
        t0 = time.perf_counter()
        result = scheduler.run_once()
        wall = (time.perf_counter() - t0) * 1000
    peak = None
    if trace_memory:
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return Measured(result, wall, peak, gct.ms, gct.runs)


def max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


@contextmanager
def profiled(kind: str | None, out: str | None) -> Iterator[None]:
    """Optionally profile the measured part with pyinstrument (`--profile pyinstrument`)."""
    if kind != "pyinstrument":
        yield
        return
    from pyinstrument import Profiler

    p = Profiler(interval=0.001)
    p.start()
    try:
        yield
    finally:
        p.stop()
        text = p.output_text(unicode=False, color=False, show_all=False)
        if out:
            Path(out).write_text(text)
            print(f"profile: {out}")
        else:
            print(text)


def common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=1, help="random seed of the generated workload (default 1)")
    p.add_argument("--repeat", type=int, default=1, help="measure this many times on fresh clusters, report each")
    p.add_argument("--tracemalloc", action="store_true",
                   help="also trace Python allocations during the session (slows it down several times)")
    p.add_argument("--profile", choices=["pyinstrument"], default=None,
                   help="profile the measured session(s) with pyinstrument")
    p.add_argument("--profile-out", default=None, help="write the profile text here instead of stdout")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON line at the end")


def machine() -> str:
    import os

    return (f"{platform.machine()}, {os.cpu_count()} CPU(s), Python {platform.python_version()} "
            f"({platform.python_implementation()})")


@contextmanager
def status(text: str) -> Iterator[None]:
    """A rich spinner while building or running something long (stderr, only on a terminal)."""
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        yield
        return
    with console.status(text):
        yield


def timed_build(label: str, fn: Callable[[], Any]) -> Any:
    t0 = time.perf_counter()
    with status(label):
        out = fn()
    print(f"  {label}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return out


def new_cluster(objects: list[Object]) -> MemoryCluster:
    return MemoryCluster(objects, clock=lambda: 1000.0)


def emit(figures: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(figures))
