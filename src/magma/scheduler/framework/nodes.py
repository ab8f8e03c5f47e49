"""Node resources as integer arrays: one row per node, one column per resource.

Volcano keeps Idle, Used, Releasing and Pipelined per node; so does this table, as numpy arrays, so that
"which nodes can hold this request" is one vectorised comparison instead of a loop over nodes. The `pods`
column counts tasks against the node's pod limit (kubelet's default 110 when a node does not say).
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from magma.api.resources import PODS, Resources, scale

from .info import TaskInfo, TaskStatus

DEFAULT_MAX_PODS = 110
_ARRAYS = ("alloc", "used", "releasing", "pipelined", "idle")  # every per-node array: `copy` copies these alone


def copies_fit(room: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """Per row of `room` (free resources per node, possibly negative), how many copies of request `vec` it holds."""
    dims = vec > 0
    return (np.maximum(room[:, dims], 0) // vec[dims]).min(axis=1)


def room_copies(room: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """Per row of `room` (future idle), how many tasks asking `vec` it takes one after another: `copies_fit`, and
    none on a node short on a resource the task does not ask for (`NodeTable.fits` compares every column)."""
    copies = copies_fit(room, vec)
    zero = vec <= 0
    if zero.any():
        copies[(room[:, zero] < vec[zero]).any(axis=1)] = 0
    return copies


class NodeTable:
    def __init__(self, names: Sequence[str], allocatable: Sequence[Resources], extra_dims: Iterable[str] = ()):
        dims = {PODS}
        for r in allocatable:
            dims.update(r)
        dims.update(extra_dims)
        # cpu and memory first, then the rest sorted: stable column order for reproducible output.
        head = [d for d in ("cpu", "memory") if d in dims]
        # Shared by the table's copies (`copy`): replaced when a column is added, never changed in place.
        self.dims: list[str] = head + sorted(dims - set(head))
        self.col = {d: i for i, d in enumerate(self.dims)}
        self.names = list(names)
        self.row = {n: i for i, n in enumerate(self.names)}
        n, r = len(self.names), len(self.dims)
        self.alloc = np.zeros((n, r), dtype=np.int64)
        for i, res in enumerate(allocatable):
            for name, v in res.items():
                self.alloc[i, self.col[name]] = v
            if PODS not in res:
                self.alloc[i, self.col[PODS]] = DEFAULT_MAX_PODS * scale(PODS)
        self.used = np.zeros((n, r), dtype=np.int64)
        self.releasing = np.zeros((n, r), dtype=np.int64)
        self.pipelined = np.zeros((n, r), dtype=np.int64)
        self.idle = self.alloc.copy()

    def __len__(self) -> int:
        return len(self.names)

    def copy(self) -> "NodeTable":
        """A table with the same nodes and columns and its own arrays (a session's copy of a kept table). The column
        names and positions are shared: `_add_dim` gives a table new ones rather than changing them."""
        t = object.__new__(NodeTable)
        d = t.__dict__
        d.update(self.__dict__)
        d.pop("_vecs", None)  # its columns may grow apart from ours
        for attr in _ARRAYS:
            d[attr] = d[attr].copy()
        return t

    def vec(self, res: Resources, pods: int = 1) -> np.ndarray:
        """A request as a row; every task also takes one pod slot. Unknown names widen the table."""
        for name in res:
            if name not in self.col:
                self._add_dim(name)
        cache = self.__dict__.setdefault("_vecs", {})  # request -> row, for this set of columns
        key = (res, pods, len(self.dims))
        v = cache.get(key)
        if v is None:
            v = np.zeros(len(self.dims), dtype=np.int64)
            for name, amount in res.items():
                v[self.col[name]] = amount
            v[self.col[PODS]] += pods * scale(PODS)
            if len(cache) < 4096:
                cache[key] = v
        return v.copy()  # callers may change their row

    def _add_dim(self, name: str) -> None:
        # new lists and dicts, not changed in place: copies of this table share them (`copy`)
        self.col = {**self.col, name: len(self.dims)}
        self.dims = [*self.dims, name]
        pad = np.zeros((len(self.names), 1), dtype=np.int64)
        for attr in _ARRAYS:
            setattr(self, attr, np.hstack([getattr(self, attr), pad]))

    def resources(self, row: np.ndarray) -> Resources:
        """A row back into a Resources vector (pods column dropped)."""
        # (the row as Python ints at once: the same amounts as indexing it element by element)
        return Resources({d: v for d, v in zip(self.dims, row.tolist()) if d != PODS and v})

    # Volcano's NodeInfo.AddTask / RemoveTask, for one node row.
    def add_task(self, i: int, task: TaskInfo) -> None:
        v = task.vec
        if task.status is TaskStatus.RELEASING:
            self.releasing[i] += v
            self.idle[i] -= v
            self.used[i] += v
        elif task.status is TaskStatus.PIPELINED:
            self.pipelined[i] += v
        else:
            self.idle[i] -= v
            self.used[i] += v

    def remove_task(self, i: int, task: TaskInfo) -> None:
        v = task.vec
        if task.status is TaskStatus.RELEASING:
            self.releasing[i] -= v
            self.idle[i] += v
            self.used[i] -= v
        elif task.status is TaskStatus.PIPELINED:
            self.pipelined[i] -= v
        else:
            self.idle[i] += v
            self.used[i] -= v

    def future_idle(self) -> np.ndarray:
        """Idle + Releasing - Pipelined: what a node will have once its terminating pods are gone."""
        return self.idle + self.releasing - self.pipelined

    def fits(self, vec: np.ndarray, avail: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Boolean mask: does `vec` fit in `avail` (rows of it, or all)."""
        a = avail if rows is None else avail[rows]
        return (a >= vec).all(axis=1)

    def total(self) -> Resources:
        return self.resources(self.alloc.sum(axis=0)) if len(self.names) else Resources()
