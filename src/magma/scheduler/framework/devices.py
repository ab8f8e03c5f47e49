"""GPU devices per node: each GPU's free share, vGPU slots and memory, NVLink domains; and GPU fragmentation.

Requests (what a pod asks for, read from its resource requests):
- `nvidia.com/gpu: k` (k whole GPUs, each fully free; NVIDIA's device plugin). magma also reads a fraction below
  one GPU (`500m`, which Kubernetes itself refuses for extended resources but magma's own scenarios and trace
  replays use) as a share of one GPU's compute, and rounds a fractional amount above one up to whole GPUs.
- Volcano's device sharing (volcano-vgpu-device-plugin / HAMi): `volcano.sh/vgpu-number: n` vGPUs, each on a
  different GPU, each with `volcano.sh/vgpu-cores` percent of the GPU's compute (default 0, as Volcano's
  DefaultCores) and `volcano.sh/vgpu-memory` MiB or `volcano.sh/vgpu-memory-percentage` percent of its memory
  (default: all of it). A vGPU takes one of the GPU's slots (`deviceSplitCount`). Its share of the GPU (for
  fragmentation and scores) is the larger of its compute and its memory fraction.
  As Volcano's IgnoredDevicesList, vgpu-memory, vgpu-memory-percentage and vgpu-cores are accounted per GPU here,
  not as node resources; vgpu-number stays a node resource (the device plugin advertises GPUs x split count).

Nodes (read from allocatable resources, labels and annotations):
- GPU count: allocatable `nvidia.com/gpu`, else the label `nvidia.com/gpu.count` (NVIDIA GPU feature discovery),
  else allocatable `volcano.sh/vgpu-number` divided by the split count.
- Model: label `nvidia.com/gpu.product` (GFD). Memory per GPU in MiB: label `nvidia.com/gpu.memory` (GFD), else
  allocatable `volcano.sh/vgpu-memory` divided by the GPU count, else unknown (memory is then not checked).
- vGPU slots per GPU: label or annotation `magma.io/vgpu-split` (default 10, the vGPU device plugin's default).
- NVLink domains: label or annotation `magma.io/nvlink-domains`, GPU index groups such as `0-3;4-7` or
  `0,1,2,3;4,5,6,7` (in a label, where `;` and `,` are not allowed: `0-3_4-7`, `0.1.2.3_4.5.6.7`). NVIDIA's device
  plugin and GFD publish no intra-node NVLink topology (GFD's `nvidia.com/gpu.clique` is the multi-node NVLink
  fabric), so magma reads its own key; a node without it is one domain. A multi-GPU pod goes inside one domain
  when one has room (the tightest such domain, to keep large domains whole), else across as few domains as it can.

The table is built at session open from the pods on each node: a pod magma bound carries the GPUs it was given in
the annotation `magma.io/gpu-ids`; others (bound by someone else) are re-derived in creation order and kept current by an event handler on allocate and
deallocate; users (the magma plugin) listen for changed rows. When the session has any shared GPU (a fraction or a
vGPU), `enable_capacity_columns` adds one NodeTable column per kind of pending device request ("GPU with 470m
free", "fully free GPU", ...) whose idle value is the number of GPUs that can take one more such request, so the
actions' vectorised resource fit, which they re-check for changed nodes after every placement, is exact per GPU.
A pod holding or asking for k whole GPUs counts k in every column (what evicting it gives back), so preemption and
reclaim can free whole GPUs for any request; a GPU share is not credited back that way (shares do not add up: two
300m shares on two GPUs do not make room for 600m), so preemption does not evict shares to make room for a share.

Fragmentation: FGD's measure (Weng et al., ATC'23) of a node's idle GPU that the typical tasks could not use,
computed exactly as the FGD simulator computes it (see `fragmentation`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

import numpy as np

# Written on a pod when magma binds it: the indices of the GPUs it was given ("0,1"), so that every later
# session (and a restarted scheduler) accounts the same GPUs, as Volcano's device sharing records its choice.
GPU_IDS_ANNOTATION = "magma.io/gpu-ids"

if TYPE_CHECKING:
    from .info import TaskInfo
    from .session import Session

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


def after_states(cpu_free: np.ndarray, gpu_free: np.ndarray, cpu: int, count: int, milli: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Candidate placements of one task on M node states: (row, gpu, cpu_after, gpu_after).

    A task asking for part of one GPU (count 1, milli < 1000) has one candidate per GPU with enough free share
    (`gpu` is that GPU's index); any other task has one candidate per row (`gpu` -1): whole GPUs come from the
    lowest-index fully free ones, a CPU-only task changes only the cpu. Rows without room give no candidate."""
    m = len(cpu_free)
    if count == 1 and milli < MILLI:
        rows, gpus = np.nonzero(gpu_free >= milli)
        gpu_after = gpu_free[rows]
        gpu_after[np.arange(len(rows)), gpus] -= milli
        return rows, gpus, cpu_free[rows] - cpu, gpu_after
    rows = np.arange(m)
    gpu_after = gpu_free.copy()
    if count:
        full = gpu_after == MILLI
        gpu_after[full & (np.cumsum(full, axis=1) <= count)] -= MILLI
    return rows, np.full(m, -1, dtype=np.int64), cpu_free - cpu, gpu_after


def state_fragmentation(tw: TargetWorkload, cpu_free: np.ndarray, gpu_free: np.ndarray, access: np.ndarray,
                        access_id: np.ndarray | None = None) -> np.ndarray:
    """fragmentation() of many states, computed once per distinct (cpu, GPUs, access class) state.
    `access_id` (M,) numbers the distinct access rows (None: all rows alike)."""
    if len(cpu_free) <= 8:
        return fragmentation(tw, cpu_free, gpu_free, access)
    ids = np.zeros(len(cpu_free), dtype=np.int64) if access_id is None else access_id
    key = np.concatenate([cpu_free[:, None], gpu_free, ids[:, None]], axis=1)
    first, inverse = dedupe_rows(key)
    return fragmentation(tw, cpu_free[first], gpu_free[first], access[first])[inverse]


# ================================================================================================ requests

GPU = "nvidia.com/gpu"
VGPU_NUMBER = "volcano.sh/vgpu-number"
VGPU_MEMORY = "volcano.sh/vgpu-memory"
VGPU_MEMORY_PERCENTAGE = "volcano.sh/vgpu-memory-percentage"
VGPU_CORES = "volcano.sh/vgpu-cores"
PER_DEVICE_RESOURCES = (VGPU_MEMORY, VGPU_MEMORY_PERCENTAGE, VGPU_CORES)
GPU_COUNT_LABEL = "nvidia.com/gpu.count"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"
NVLINK_DOMAINS = "magma.io/nvlink-domains"
VGPU_SPLIT = "magma.io/vgpu-split"
DEFAULT_VGPU_SPLIT = 10
PLAIN_SLOTS = 1000  # fractions of a plain GPU are bounded by its compute share, not by slots


@dataclass(frozen=True)
class GpuRequest:
    """What one pod asks of GPU devices."""

    count: int  # GPUs (each vGPU on a different GPU)
    milli: int = MILLI  # compute share of each GPU, 1..1000
    memory: int = 0  # vGPU: MiB of each GPU's memory (0 and memory_percent 0: all of it)
    memory_percent: int = 0
    vgpu: bool = False
    model: str = ""  # required GPU model (the pod's nodeSelector on nvidia.com/gpu.product), "" for any

    @property
    def exclusive(self) -> bool:
        """Whole plain GPUs: each must be fully free and is taken whole."""
        return not self.vgpu and self.milli >= MILLI

    @property
    def kind(self) -> tuple:
        """What decides which GPUs can take one more of it (the count aside)."""
        if self.exclusive:
            return ("whole",)
        if not self.vgpu:
            return ("share", self.milli)
        return ("vgpu", self.milli, self.memory, self.memory_percent)

    def one(self) -> "GpuRequest":
        return GpuRequest(1, self.milli, self.memory, self.memory_percent, self.vgpu, self.model)

    def column_name(self) -> str:
        """The NodeTable column for this kind; reasons print it as `Insufficient <name>`."""
        if self.exclusive:
            return "fully free GPU"
        if not self.vgpu:
            return f"GPU with {self.milli}m free"
        mem = (f"{self.memory}Mi memory" if self.memory else f"{self.memory_percent}% memory" if self.memory_percent
               else "all its memory")
        return f"vGPU slot with {self.milli // 10}% compute and {mem}"


def request_of(resreq: Mapping[str, int], node_selector: Mapping[str, str] | None = None) -> GpuRequest | None:
    """The GPU request in a pod's resources (magma's integer units: milli for these names), None for none."""
    model = (node_selector or {}).get(GPU_PRODUCT_LABEL, "")
    n = int(resreq.get(VGPU_NUMBER, 0))
    if n > 0:
        cores = min(max(int(resreq.get(VGPU_CORES, 0)) // 1000, 0), 100)
        memory = max(int(resreq.get(VGPU_MEMORY, 0)) // 1000, 0)
        pct = min(max(int(resreq.get(VGPU_MEMORY_PERCENTAGE, 0)) // 1000, 0), 100)
        return GpuRequest(math.ceil(n / 1000), cores * 10, memory, pct, True, model)
    g = int(resreq.get(GPU, 0))
    if g <= 0:
        return None
    if g < MILLI:
        return GpuRequest(1, g, model=model)
    return GpuRequest(math.ceil(g / MILLI), MILLI, model=model)


def task_request(task: "TaskInfo") -> GpuRequest | None:
    pod = task.pod
    return request_of(task.resreq, pod.spec.node_selector if pod is not None else None)


def parse_domains(text: str, gpus: int) -> np.ndarray:
    """GPU -> NVLink domain id from `0-3;4-7`, `0,1;2,3` or (label form) `0-3_4-7`; unlisted GPUs each get a
    domain of their own. Raises ValueError on a malformed text."""
    dom = np.full(gpus, -1, dtype=np.int64)
    text = text.strip()
    groups = [g for g in re.split(r"[;_\s]+", text) if g]
    for d, group in enumerate(groups):
        for item in re.split(r"[,.+]", group):
            if not item:
                continue
            if "-" in item:
                a, b = item.split("-", 1)
                idx = range(int(a), int(b) + 1)
            else:
                idx = range(int(item), int(item) + 1)
            for i in idx:
                if 0 <= i < gpus:
                    dom[i] = d
    free_id = len(groups)
    for i in range(gpus):
        if dom[i] < 0:
            dom[i] = free_id
            free_id += 1
    return dom


# ================================================================================================ the table


@dataclass
class Assignment:
    row: int
    gpus: tuple[int, ...]
    milli: int  # taken from each GPU
    memory: int
    slots: int


def _int_label(values: Mapping[str, str], key: str) -> int | None:
    v = values.get(key)
    if v is None:
        return None
    try:
        return int(float(str(v).strip()))
    except ValueError:
        return None


class DeviceTable:
    """Per node row (the session's NodeTable rows): GPUs and their free share, memory and vGPU slots."""

    KEY = "_magma_devices"

    def __init__(self, ssn: "Session"):
        self.ssn = ssn
        nodes = ssn.node_list
        n = len(nodes)
        self.n = n
        counts, models, memory, slots, domains = [], [], [], [], []
        for nd in nodes:
            meta = {**getattr(nd, "annotations", {}), **nd.labels}  # a label wins over an annotation
            alloc = nd.allocatable
            split = _int_label(meta, VGPU_SPLIT) or DEFAULT_VGPU_SPLIT
            k = alloc.get(GPU, 0) // MILLI
            if not k:
                k = _int_label(nd.labels, GPU_COUNT_LABEL) or 0
            vgpu_slots = alloc.get(VGPU_NUMBER, 0) // MILLI
            if not k and vgpu_slots:
                k = max(vgpu_slots // split, 1)
            mem = _int_label(nd.labels, GPU_MEMORY_LABEL) or 0
            if not mem and k and alloc.get(VGPU_MEMORY, 0):
                mem = alloc.get(VGPU_MEMORY, 0) // MILLI // k
            counts.append(int(k))
            models.append(nd.labels.get(GPU_PRODUCT_LABEL, ""))
            memory.append(int(mem))
            slots.append(split if vgpu_slots else PLAIN_SLOTS)
            spec = meta.get(NVLINK_DOMAINS)
            try:
                domains.append(parse_domains(spec, k) if spec else np.zeros(k, dtype=np.int64))
            except ValueError:
                domains.append(np.zeros(k, dtype=np.int64))
        g = max(max(counts, default=0), 1)
        self.g = g
        self.ngpu = np.array(counts, dtype=np.int64)
        self.models = models
        self.memory = np.array(memory, dtype=np.int64)
        self.slots = np.array(slots, dtype=np.int64)
        self.exists = np.arange(g)[None, :] < self.ngpu[:, None]
        self.free = np.where(self.exists, MILLI, 0).astype(np.int64)
        self.mem_free = np.where(self.exists, self.memory[:, None], 0).astype(np.int64)
        self.slots_free = np.where(self.exists, self.slots[:, None], 0).astype(np.int64)
        self.domain = np.full((n, g), -1, dtype=np.int64)
        for i, d in enumerate(domains):
            self.domain[i, :len(d)] = d
        self.assignments: dict[str, Assignment] = {}
        self.rows: dict[str, int] = {}  # task uid -> row, for every task the table saw placed
        self.requests: dict[str, GpuRequest | None] = {}
        self.listeners: list[Callable[[int], None]] = []
        self.chooser: Callable[[int, GpuRequest, "TaskInfo", np.ndarray], int] | None = None
        self.columns: dict[tuple, int] = {}
        self._column_req: dict[tuple, GpuRequest] = {}
        self.version = 0
        # Pods already on nodes: those whose GPUs were recorded at bind first, then the rest oldest first.
        placed = sorted((t for nd in nodes for t in nd.tasks.values()),
                        key=lambda t: (self._recorded(t) is None, t.creation, t.uid))
        for t in placed:
            self._place(t, notify=False)

    def _recorded(self, task: "TaskInfo") -> tuple[int, ...] | None:
        """The GPU indices written on the pod when magma bound it (GPU_IDS_ANNOTATION), if valid."""
        pod = task.pod
        raw = pod.metadata.annotations.get(GPU_IDS_ANNOTATION) if pod is not None else None
        if not raw:
            return None
        try:
            ids = tuple(int(x) for x in raw.split(","))
        except ValueError:
            return None
        row = self.ssn.table.row.get(task.node or "")
        if row is None or any(i < 0 or i >= self.ngpu[row] for i in ids) or len(set(ids)) != len(ids):
            return None
        return ids

    def bind_annotations(self, task: "TaskInfo") -> dict[str, str]:
        """What to write on a pod as it is bound: the GPUs it was given, so the next session knows them."""
        a = self.assignments.get(task.uid)
        return {GPU_IDS_ANNOTATION: ",".join(map(str, a.gpus))} if a is not None else {}

    # ------------------------------------------------------------ session attachment
    @classmethod
    def of(cls, ssn: "Session") -> "DeviceTable":
        """The session's table, built and hooked to the session's events on first use."""
        table = ssn.__dict__.get(cls.KEY)
        if table is None:
            from .session import EventHandler

            table = cls(ssn)
            ssn.__dict__[cls.KEY] = table
            table._per_device_columns()
            ssn.add_event_handler(EventHandler(allocate=table._on_allocate, deallocate=table._on_deallocate))
            ssn.bind_annotators.append(table.bind_annotations)
        return table

    def request(self, task: "TaskInfo") -> GpuRequest | None:
        if task.uid not in self.requests:
            self.requests[task.uid] = task_request(task)
        return self.requests[task.uid]

    # ------------------------------------------------------------ per-GPU arithmetic
    def need(self, req: GpuRequest, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(share, memory) one GPU of each row gives to one unit of the request."""
        m = len(rows)
        if req.exclusive:
            return np.full(m, MILLI, dtype=np.int64), self.memory[rows]
        if not req.vgpu:
            return np.full(m, req.milli, dtype=np.int64), np.zeros(m, dtype=np.int64)
        devmem = self.memory[rows]
        if req.memory:
            mem = np.full(m, req.memory, dtype=np.int64)
        elif req.memory_percent:
            mem = devmem * req.memory_percent // 100
        else:
            mem = devmem.copy()
        mem_share = np.where(devmem > 0, -(-mem * MILLI // np.maximum(devmem, 1)), 0)
        share = np.minimum(np.maximum(mem_share, req.milli), MILLI)
        return share.astype(np.int64), np.where(devmem > 0, mem, 0).astype(np.int64)

    def fits(self, req: GpuRequest, rows: np.ndarray) -> np.ndarray:
        """(M, G): can GPU i of each row take one unit of the request now."""
        rows = np.asarray(rows, dtype=np.int64)
        ex = self.exists[rows]
        if req.exclusive:
            return ex & (self.free[rows] == MILLI) & (self.slots_free[rows] == self.slots[rows, None]) & \
                (self.mem_free[rows] == self.memory[rows, None])
        share, mem = self.need(req, rows)
        ok = ex & (self.free[rows] >= share[:, None])
        if req.vgpu:
            ok &= (self.mem_free[rows] >= mem[:, None]) & (self.slots_free[rows] >= 1)
        return ok

    def capacity(self, req: GpuRequest, rows: np.ndarray) -> np.ndarray:
        """How many GPUs of each row can take one unit of the request now."""
        return self.fits(req, rows).sum(axis=1)

    def structurally_possible(self, req: GpuRequest, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(enough GPUs on the node at all, GPUs big enough in memory) per row, whatever runs there now."""
        rows = np.asarray(rows, dtype=np.int64)
        enough = self.ngpu[rows] >= req.count
        if req.vgpu and req.memory:
            big = (self.memory[rows] == 0) | (self.memory[rows] >= req.memory)
        else:
            big = np.ones(len(rows), dtype=bool)
        return enough, big

    def free_total(self, rows: np.ndarray | None = None) -> np.ndarray:
        return (self.free if rows is None else self.free[rows]).sum(axis=1)

    # ------------------------------------------------------------ choosing GPUs
    def choose(self, row: int, req: GpuRequest, task: "TaskInfo | None" = None) -> list[int]:
        """The GPUs of `row` a request takes (empty when it does not fit). One GPU share: the chooser's pick (the
        magma plugin's) or the tightest GPU; several GPUs: inside one NVLink domain when one has room (the
        tightest such domain), else across as few domains as possible; within a domain tightest GPUs first,
        lowest index on ties."""
        fit = self.fits(req, np.array([row]))[0]
        cand = np.flatnonzero(fit)
        if len(cand) < req.count:
            return []
        free = self.free[row]
        if req.count == 1 and not req.exclusive:
            if self.chooser is not None and task is not None:
                pick = self.chooser(row, req, task, cand)
                if pick in set(cand.tolist()):
                    return [int(pick)]
            return [int(cand[np.lexsort((cand, free[cand]))[0]])]
        dom = self.domain[row, cand]
        doms, sizes = np.unique(dom, return_counts=True)
        order = np.lexsort((cand, free[cand]))  # tightest first, then lowest index
        roomy = doms[sizes >= req.count]
        if len(roomy):
            best = roomy[np.argmin(sizes[sizes >= req.count])]  # the tightest domain that holds it all
            picked = [int(c) for c in cand[order] if self.domain[row, c] == best]
            return picked[:req.count]
        picked: list[int] = []
        for d in doms[np.lexsort((doms, -sizes))]:  # largest domains first: as few domains as possible
            picked += [int(c) for c in cand[order] if self.domain[row, c] == d]
            if len(picked) >= req.count:
                break
        return picked[:req.count]

    def one_domain(self, req: GpuRequest, rows: np.ndarray) -> np.ndarray:
        """Per row: can the request's GPUs all come from one NVLink domain now."""
        rows = np.asarray(rows, dtype=np.int64)
        fit = self.fits(req, rows)
        out = np.zeros(len(rows), dtype=bool)
        if not len(rows):
            return out
        dom = self.domain[rows]
        top = int(dom.max()) + 1 if dom.size else 1
        for d in range(max(top, 1)):
            out |= (fit & (dom == d)).sum(axis=1) >= req.count
        return out

    # ------------------------------------------------------------ accounting
    def _place(self, task: "TaskInfo", notify: bool = True) -> None:
        if task.node is None or task.uid in self.assignments:
            return
        row = self.ssn.table.row.get(task.node)
        if row is None:
            return
        self.rows[task.uid] = row
        req = self.request(task)
        if req is not None and self.ngpu[row] > 0:
            recorded = None if notify else self._recorded(task)
            gpus = list(recorded) if recorded is not None and len(recorded) == req.count else self.choose(row, req, task)
            if not gpus:  # over-committed (an eviction undone, a pod bound elsewhere): take the roomiest GPUs
                gpus = np.argsort(-self.free[row, :self.ngpu[row]], kind="stable")[:req.count].tolist()
            share, mem = self.need(req, np.array([row]))
            if req.exclusive:
                a = Assignment(row, tuple(gpus), MILLI, int(self.memory[row]), int(self.slots[row]))
            else:
                a = Assignment(row, tuple(gpus), int(share[0]), int(mem[0]), 1 if req.vgpu else 0)
            for i in a.gpus:
                self.free[row, i] -= a.milli
                self.mem_free[row, i] -= a.memory
                self.slots_free[row, i] -= a.slots
            self.assignments[task.uid] = a
            self.version += 1
        if notify:
            self._changed(row)

    def _release(self, task: "TaskInfo") -> None:
        row = self.rows.pop(task.uid, None)
        a = self.assignments.pop(task.uid, None)
        if a is not None:
            for i in a.gpus:
                self.free[a.row, i] += a.milli
                self.mem_free[a.row, i] += a.memory
                self.slots_free[a.row, i] += a.slots
            self.version += 1
            row = a.row
        if row is not None:
            self._changed(row)

    def _on_allocate(self, task: "TaskInfo") -> None:
        self._place(task)

    def _on_deallocate(self, task: "TaskInfo") -> None:
        self._release(task)

    def _changed(self, row: int) -> None:
        if self.columns:
            self._update_columns(np.array([row]))
        for fn in self.listeners:
            fn(row)

    # ------------------------------------------------------------ NodeTable columns
    def _per_device_columns(self) -> None:
        """vgpu-memory, vgpu-memory-percentage and vgpu-cores are per-GPU amounts (Volcano's IgnoredDevicesList):
        the node-wide resource check must not see them."""
        table = self.ssn.table
        cols = [table.col[r] for r in PER_DEVICE_RESOURCES if r in table.col]
        if not cols:
            return
        for arr in (table.used, table.releasing, table.pipelined):
            arr[:, cols] = 0
        table.idle[:, cols] = table.alloc[:, cols]
        for t in self._all_tasks():
            if t.vec is not None:
                t.vec[[c for c in cols if c < len(t.vec)]] = 0

    def _all_tasks(self) -> list["TaskInfo"]:
        seen: dict[int, "TaskInfo"] = {}
        for t in self.ssn.tasks_by_uid.values():
            seen[id(t)] = t
        for nd in self.ssn.node_list:
            for t in nd.tasks.values():
                seen[id(t)] = t
        return list(seen.values())

    def sharing(self, pending: Iterable["TaskInfo"]) -> bool:
        """Does this session share GPUs (a placed or pending fraction or vGPU)?"""
        for a in self.assignments.values():
            if a.milli < MILLI or a.slots == 1:  # a fraction of a GPU, or a vGPU
                return True
        return any((r := self.request(t)) is not None and not r.exclusive for t in pending)

    def enable_capacity_columns(self, pending: Iterable["TaskInfo"]) -> None:
        """One NodeTable column per kind of pending GPU request, valued at the number of GPUs that can take one
        more, and each such task's request vector asking for its count there (see the module doc)."""
        table = self.ssn.table
        tasks = [t for t in pending if self.request(t) is not None]
        kinds: dict[tuple, GpuRequest] = {}
        for t in tasks:
            r = self.request(t)
            kinds.setdefault(r.kind, r.one())
        new = [k for k in kinds if k not in self.columns]
        if not new:
            return
        for k in new:
            name = kinds[k].column_name()
            if name in table.col:  # a node resource of that name (never expected): keep it apart
                name = f"{name} (devices)"
            table._add_dim(name)
            self.columns[k] = table.col[name]
            self._column_req[k] = kinds[k]
        width = len(table.dims)
        for t in self._all_tasks():
            if t.vec is not None and len(t.vec) < width:
                t.vec = np.concatenate([t.vec, np.zeros(width - len(t.vec), dtype=t.vec.dtype)])
        cols = list(self.columns.values())
        for t in tasks:
            r = self.request(t)
            t.vec[self.columns[r.kind]] = r.count * MILLI
        # Whole GPUs are room for every kind: a task holding (or asking for) k whole GPUs counts k in every
        # column, exactly what evicting it gives back, so preemption and reclaim can free whole GPUs.
        for t in self._all_tasks():
            r = self.request(t)
            if r is not None and r.exclusive and t.vec is not None:
                t.vec[cols] = r.count * MILLI
        self._update_columns(np.arange(self.n))

    def _update_columns(self, rows: np.ndarray) -> None:
        table = self.ssn.table
        cap = self.ngpu[rows] * MILLI
        for k, col in self.columns.items():
            count = self.capacity(self._column_req[k], rows) * MILLI
            table.alloc[rows, col] = cap
            table.idle[rows, col] = count
            table.used[rows, col] = cap - count
            table.releasing[rows, col] = 0
            table.pipelined[rows, col] = 0
