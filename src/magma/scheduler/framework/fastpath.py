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
- `job_index` (scheduler, with the incremental snapshot): per job, what the plugins' opens sum per queue
  (allocated, request, inqueue, elastic, overcommit's inqueue), drf's share and the resources it names, and
  whether the job is quiet (nothing to place, ready, valid, its PodGroup status already what close writes) are
  kept across sessions and updated for the jobs that changed only (framework/jobindex.py). The plugins read
  their per-queue sums from it; enqueue, allocate, backfill and close visit only the jobs that are not quiet
  and those the session changed.
- `proportion_memo` (proportion): what proportion's open computes from few inputs is kept by those inputs and
  taken again when they come back: the queues' bounds (guarantee, capability, realCapability, floor: from the
  cluster total, the resources, the queue tree and specs) and each water-fill's deserved shares (from the pool
  and every sibling's weight, realCapability, request and floor).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

shared_groups = True
incremental_snapshot = True
job_index = True
proportion_memo = True

_NAMES = ("shared_groups", "incremental_snapshot", "job_index", "proportion_memo")


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
