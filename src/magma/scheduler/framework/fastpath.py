"""Switches for the scheduler's fast paths (docs: BENCHMARKS.md, "Scheduling speed").

Every fast path gives the decisions of the straightforward code it shortcuts; tests run small random clusters
with each switch on and off and compare binds, evictions, phases and reasons (tests/property/
test_fast_paths.py). The switches exist for those tests and for measuring; nothing else should turn them off.

- `shared_groups` (allocate): a group of identical tasks (same shape, request and score inputs) keeps its
  feasibility masks and a heap of node scores for the whole action, not only for one job's turn; after each
  placement only the rows that changed are re-checked and re-scored. Used when every score function scores a
  node from that node's own state (`Session.node_scores_key`), without node sampling or reservations.
- `incremental_snapshot` (scheduler): the scheduler keeps the previous session's records and applies only the
  objects the cluster reports as changed since (`MemoryCluster.changes_since`); a cluster without a change log
  gets a full snapshot every session.
- `event_driven_controller` (controller): the job controller syncs only the jobs whose Job, PodGroup or pods
  were written since its previous sync (the cluster's change log), whose commands arrived or whose timers
  (delayed actions, ttl) are due, as Volcano's work queue of job keys does; the queue controller keeps its
  PodGroup counts from the same log. A cluster without a change log gets a full sync every time.
- `incremental_recorder` (simulator): the recorder and the virtual kubelet follow the pods the change log names
  instead of scanning every pod at every step.
- `skip_quiet_sessions` (simulator): a session whose inputs are those of the last session that ran, when that
  session changed nothing, is not run again: its result is reused (sim/runner.py says when this is exact).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

shared_groups = True
incremental_snapshot = True
event_driven_controller = True
incremental_recorder = True
skip_quiet_sessions = True

_NAMES = ("shared_groups", "incremental_snapshot", "event_driven_controller", "incremental_recorder",
          "skip_quiet_sessions")


@contextmanager
def disabled(*names: str) -> Iterator[None]:
    """Turn the named fast paths (all when none is named) off inside the block."""
    names = names or _NAMES
    g = globals()
    before = {n: g[n] for n in names}
    try:
        for n in names:
            g[n] = False
        yield
    finally:
        g.update(before)
