"""Loaders for Alibaba's "openb" GPU trace (clusterdata cluster-trace-gpu-v2023), as the FGD paper replays it.

Two CSV files:
- nodes (`openb_node_list_gpu_node.csv`): `sn, cpu_milli, memory_mib, gpu, model`;
- tasks (`openb_pod_list_*.csv`): `name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec` (and qos, phase and
  times, which the replay ignores: tasks never leave).

Both lists come back sorted by name (the order the FGD simulator starts from). Values are normalised the way the
simulator reads them: `gpu_milli` is clamped to [0, 1000], a task with `num_gpu` 0 or `gpu_milli` 0 asks for no GPU
(both become 0), `gpu_spec` is a `|`-separated list of allowed GPU models (empty, or pandas' `nan`, for any).

A bad row raises `TraceError`, whose message names the file, the line (1 is the header) and the column.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MILLI = 1000
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec")


class TraceError(ValueError):
    """A trace file that cannot be used: `file:line: column NAME: reason`."""

    def __init__(self, path: str | Path, line: int | None, column: str | None, reason: str):
        self.path, self.line, self.column, self.reason = str(path), line, column, reason
        where = self.path if line is None else f"{self.path}:{line}"
        col = f" column {column!r}:" if column else ""
        super().__init__(f"{where}:{col} {reason}")


@dataclass(frozen=True)
class NodeList:
    path: str
    names: tuple[str, ...]
    cpu: np.ndarray  # milli-CPU
    memory: np.ndarray  # MiB
    gpus: np.ndarray  # GPUs per node (each 1000 milli)
    model: tuple[str, ...]  # GPU model, "" for none

    def __len__(self) -> int:
        return len(self.names)

    @property
    def total_gpu_milli(self) -> int:
        return int(self.gpus.sum()) * MILLI


@dataclass(frozen=True)
class PodList:
    path: str
    names: tuple[str, ...]
    cpu: np.ndarray  # milli-CPU
    memory: np.ndarray  # MiB
    num_gpu: np.ndarray  # k
    gpu_milli: np.ndarray  # m, per GPU, 0..1000
    gpu_spec: tuple[str, ...]  # "" or "A|B"

    def __len__(self) -> int:
        return len(self.names)

    @property
    def total_gpu_milli(self) -> int:
        return int((self.num_gpu * self.gpu_milli).sum())

    def models(self, i: int) -> frozenset[str] | None:
        """The GPU models task i may run on, None for any."""
        spec = self.gpu_spec[i]
        allowed = frozenset(s for s in spec.split("|") if s)
        return allowed or None


def _rows(path: Path, required: tuple[str, ...]):
    try:
        f = open(path, newline="", encoding="utf-8")
    except OSError as e:
        raise TraceError(path, None, None, f"cannot read: {e.strerror or e}") from None
    with f:
        reader = csv.reader(f)
        try:
            header = next(reader)
        except StopIteration:
            raise TraceError(path, 1, None, "empty file (a header line is required)") from None
        except csv.Error as e:
            raise TraceError(path, 1, None, f"not CSV: {e}") from None
        header = [h.strip().lstrip("\ufeff") for h in header]
        missing = [c for c in required if c not in header]
        if missing:
            raise TraceError(path, 1, missing[0], f"missing column (the header has {', '.join(header)})")
        col = {name: header.index(name) for name in required}
        try:
            for row in reader:
                line = reader.line_num
                if not row or all(not c.strip() for c in row):
                    continue
                if len(row) < len(header):
                    short = header[len(row)]
                    raise TraceError(path, line, short, f"row has {len(row)} fields, the header {len(header)}")
                yield line, {name: row[i].strip() for name, i in col.items()}
        except csv.Error as e:
            raise TraceError(path, reader.line_num, None, f"not CSV: {e}") from None


def _int(path: Path, line: int, column: str, text: str, minimum: int = 0) -> int:
    try:
        value = int(text)
    except ValueError:
        try:
            f = float(text)
        except ValueError:
            raise TraceError(path, line, column, f"{text!r} is not a number") from None
        if not f.is_integer():
            raise TraceError(path, line, column, f"{text!r} is not a whole number") from None
        value = int(f)
    if value < minimum:
        raise TraceError(path, line, column, f"{value} is below {minimum}")
    return value


def _text(value: str) -> str:
    return "" if value.lower() == "nan" else value


def load_nodes(path: str | Path) -> NodeList:
    """Nodes sorted by name. Every node needs a name, non-negative cpu and memory, and a GPU count."""
    path = Path(path)
    rows: list[tuple[str, int, int, int, str]] = []
    seen: dict[str, int] = {}
    for line, r in _rows(path, NODE_COLUMNS):
        name = r["sn"]
        if not name:
            raise TraceError(path, line, "sn", "empty node name")
        if name in seen:
            raise TraceError(path, line, "sn", f"node {name!r} is listed twice (first on line {seen[name]})")
        seen[name] = line
        cpu = _int(path, line, "cpu_milli", r["cpu_milli"])
        mem = _int(path, line, "memory_mib", r["memory_mib"])
        gpus = _int(path, line, "gpu", r["gpu"])
        model = _text(r["model"])
        if gpus and not model:
            raise TraceError(path, line, "model", f"node {name!r} has {gpus} GPU(s) but no model")
        rows.append((name, cpu, mem, gpus, model if gpus else ""))
    if not rows:
        raise TraceError(path, None, None, "no nodes")
    rows.sort(key=lambda t: t[0])
    return NodeList(
        path=str(path),
        names=tuple(r[0] for r in rows),
        cpu=np.array([r[1] for r in rows], dtype=np.int64),
        memory=np.array([r[2] for r in rows], dtype=np.int64),
        gpus=np.array([r[3] for r in rows], dtype=np.int64),
        model=tuple(r[4] for r in rows),
    )


def load_pods(path: str | Path) -> PodList:
    """Tasks sorted by name, normalised as the FGD simulator reads them (see the module doc)."""
    path = Path(path)
    rows: list[tuple[str, int, int, int, int, str]] = []
    seen: dict[str, int] = {}
    for line, r in _rows(path, POD_COLUMNS):
        name = r["name"]
        if not name:
            raise TraceError(path, line, "name", "empty task name")
        if name in seen:
            raise TraceError(path, line, "name", f"task {name!r} is listed twice (first on line {seen[name]})")
        seen[name] = line
        cpu = _int(path, line, "cpu_milli", r["cpu_milli"])
        mem = _int(path, line, "memory_mib", r["memory_mib"])
        k = _int(path, line, "num_gpu", r["num_gpu"])
        m = min(_int(path, line, "gpu_milli", r["gpu_milli"]), MILLI)
        if k == 0 or m == 0:
            k = m = 0
        if k > 1 and m < MILLI:
            raise TraceError(path, line, "gpu_milli",
                             f"a task asking for {k} GPUs must take whole GPUs (gpu_milli 1000), not {m}")
        spec = "|".join(s.strip() for s in _text(r["gpu_spec"]).split("|") if s.strip())
        rows.append((name, cpu, mem, k, m, spec))
    if not rows:
        raise TraceError(path, None, None, "no tasks")
    rows.sort(key=lambda t: t[0])
    return PodList(
        path=str(path),
        names=tuple(r[0] for r in rows),
        cpu=np.array([r[1] for r in rows], dtype=np.int64),
        memory=np.array([r[2] for r in rows], dtype=np.int64),
        num_gpu=np.array([r[3] for r in rows], dtype=np.int64),
        gpu_milli=np.array([r[4] for r in rows], dtype=np.int64),
        gpu_spec=tuple(r[5] for r in rows),
    )


def write_pods(path: str | Path, pods: PodList) -> None:
    """Write a task list in openb's format (the columns the replay reads, plus empty qos and times)."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(list(POD_COLUMNS) + ["qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"])
        for i, name in enumerate(pods.names):
            w.writerow([name, int(pods.cpu[i]), int(pods.memory[i]), int(pods.num_gpu[i]), int(pods.gpu_milli[i]),
                        pods.gpu_spec[i], "", "", "", "", ""])
