"""binpack: prefer the nodes that the task fills most (Volcano's binpack plugin), vectorised over nodes.

Arguments (Volcano's names and defaults):
  binpack.weight (1)            the plugin's weight; 0 registers no score at all
  binpack.cpu (1), binpack.memory (1)
  binpack.resources "a, b"      extra resources to weigh, each with
  binpack.resources.<name> (1)  its weight
A negative cpu, memory or resource weight becomes 1 (as in Volcano; binpack.weight is taken as given).

For every resource the task requests (non-zero) that has a weight:
    s_r = w_r * (request_r + used_r) / allocatable_r      (0 when allocatable_r is 0 or w_r is 0; w_r is still
                                                           counted in the sum of weights when allocatable_r is 0)
and if request_r + used_r > allocatable_r for any of them the node scores 0. Then
    score = (sum s_r / sum w_r) * 100 * binpack.weight.
Resources without a weight are ignored. `used` is the node's Used (tasks on it, including terminating ones,
not pipelined ones), as in Volcano.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from magma.api.resources import CPU, MEMORY

from ..framework import Session, TaskInfo, plugin
from ..framework.kept import Memo, by_arguments
from . import _selectors as sel

NAME = "binpack"


def _weight(args: dict[str, Any], key: str) -> int:
    w = sel.arg_int(args, key, 1)
    return 1 if w < 0 else w


def _read_setup(args: dict[str, Any]) -> tuple[int, dict[str, int]]:
    """(binpack.weight, the weight per resource) as the arguments give them."""
    resources: dict[str, int] = {}
    for name in sel.arg_list(args, "binpack.resources"):
        resources[name] = _weight(args, f"binpack.resources.{name}")
    resources[CPU] = _weight(args, "binpack.cpu")
    resources[MEMORY] = _weight(args, "binpack.memory")
    return sel.arg_int(args, "binpack.weight", 1), resources


# The weights by the plugin's arguments (fastpath.plugin_setup_kept): the plugin is made every session with them.
_SETUPS = Memo(65)


@plugin(NAME)
class Binpack:
    def __init__(self, arguments: dict[str, Any] | None = None):
        args = arguments or {}
        self.weight, resources = by_arguments(_SETUPS, args, _read_setup)
        self.resources = dict(resources)  # (each plugin its own dict)
        self.arguments = args

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        if self.weight != 0:
            ssn.add_fn("node_order", NAME, self.scores)

    def score_key(self, task: TaskInfo) -> tuple:
        """The score on a node depends on the task's request and that node's Used and allocatable only."""
        return (NAME, task.resreq)

    def scores(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        table = self.ssn.table
        score = np.zeros(len(rows), dtype=np.float64)
        weight_sum = 0
        overflow = np.zeros(len(rows), dtype=bool)
        for name, request in task.resreq.items():
            if request == 0 or name not in self.resources:
                continue
            w = self.resources[name]
            weight_sum += w
            if w == 0:
                continue
            if name in table.col:
                col = table.col[name]
                alloc = table.alloc[rows, col]
                used = table.used[rows, col]
            else:
                alloc = used = np.zeros(len(rows), dtype=np.int64)
            final = used + request
            has = alloc != 0
            overflow |= has & (final > alloc)
            score += np.where(has, final * w / np.where(has, alloc, 1), 0.0)
        if weight_sum > 0:
            score /= weight_sum
        score *= 100 * self.weight
        return np.where(overflow, 0.0, score)
