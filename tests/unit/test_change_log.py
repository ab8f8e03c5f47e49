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


def test_queue_status_writes_are_pydantic_setattrs():
    """`update_queue_status` writes a status count straight into the extras: the status is what setattr makes of it
    (values, fields set, dump), and a declared field still goes through setattr."""
    written = _queue("q")
    cluster = MemoryCluster([written])
    by_hand = _queue("q")
    for status in ({"pending": 2, "state": "Open"}, {"pending": 0, "running": 1}, {"state": "Closing"}):
        cluster.update_queue_status("q", status)
        for k, v in status.items():
            setattr(by_hand.status, k, v)
        assert written.status == by_hand.status and written.dump() == by_hand.dump()
        assert written.status.__pydantic_fields_set__ == by_hand.status.__pydantic_fields_set__
    assert written.status.state == "Closing" and written.status.__pydantic_extra__ == {"pending": 0, "running": 1}
