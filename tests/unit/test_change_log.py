"""MemoryCluster's change log: `version` counts every write, entries dropped from the log's head included, and
`changes_since` gives what was written since a version while the log reaches back to it."""

from __future__ import annotations

from magma.api.objects import Queue
from magma.cluster.memory import MemoryCluster


def _queue(name: str) -> Queue:
    return Queue.model_validate({"metadata": {"name": name}, "spec": {"weight": 1}})


def test_version_counts_every_write_across_a_trimmed_log():
    cluster = MemoryCluster()
    cluster.LOG_LIMIT = 8
    cluster.add(_queue("q0"))
    seen = cluster.version
    assert seen == 1
    for i in range(1, 30):
        cluster.add(_queue(f"q{i}"))
        cluster.mark_changed("Queue", f"q{i}")
        assert cluster.version == cluster._log_start + len(cluster._log) == 1 + 2 * i
    assert cluster.changes_since(seen) is None  # dropped from the head: read everything again
    recent = cluster.version - 3
    assert cluster.changes_since(recent) == [("Queue", "q28"), ("Queue", "q29"), ("Queue", "q29")]
    assert cluster.changes_since(cluster.version) == []
    assert cluster.changes_since(cluster.version + 1) is None
