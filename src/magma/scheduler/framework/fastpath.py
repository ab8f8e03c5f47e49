"""Switches for the scheduler's fast paths (docs: BENCHMARKS.md, "Scheduling speed").

Every fast path gives the decisions of the straightforward code it shortcuts; tests run small random clusters
with each switch on and off and compare binds, evictions, phases and reasons (tests/property/
test_fast_paths.py). The switches exist for those tests and for measuring; nothing else should turn them off.

- `shared_groups` (allocate): a group of identical tasks (same shape, request and score inputs) keeps its
  feasibility masks and a heap of node scores for the whole action, not only for one job's turn; after each
  placement only the rows that changed are re-checked and re-scored (a few rows in plain ints, keyed by
  `Session.node_state_key`). Used when every score function scores a node from that node's own state
  (`Session.node_scores_key`), without node sampling or reservations.
- `backfill_groups` (backfill): the same for backfill's BestEffort tasks: tasks with equal predicate inputs,
  request and score inputs keep the rows that pass and fit Idle with their scores in a heap for the whole
  action, re-checking and re-scoring only the rows placed on since; off for the rest of the action once a
  placement-sensitive pod is placed.
- `job_order_key` (enqueue, allocate, backfill): when every JobOrder function says which key it compares
  (`Session.job_order_key`), the job heaps order jobs by that key taken at push time instead of calling the
  plugins' comparison functions at every comparison; a job's JobOrder figures do not change while it waits in
  these heaps.
- `queue_order_memo` (enqueue, allocate, backfill): the queue heap keeps each pair's QueueOrder answer until
  the next allocate or deallocate event, when every queue-order function's plugin says its order follows those
  events alone (`Session.queue_order_cmp_memo`).
- `queue_bound_memo` (allocate's reasons): the queue-bound reason of a refused job is kept per queue and need
  until the next allocate or deallocate event (its figures change only then): `reasons.queue_bound_reason`.
- `incremental_snapshot` (scheduler): the scheduler keeps the previous session's records and applies only the
  objects the cluster reports as changed since (`MemoryCluster.changes_since`); a cluster without a change log
  gets a full snapshot every session. `Scheduler.ingest()` applies them outside a session, as objects arrive
  (Volcano's informers); the session's snapshot then takes only what arrived since.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

shared_groups = True
backfill_groups = True
job_order_key = True
queue_order_memo = True
queue_bound_memo = True
incremental_snapshot = True

_NAMES = ("shared_groups", "backfill_groups", "job_order_key", "queue_order_memo", "queue_bound_memo",
          "incremental_snapshot")


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
