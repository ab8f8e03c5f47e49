"""Queue controller: Open / Closing / Closed, Commands, PodGroup counts, hierarchy."""

from __future__ import annotations

from controller_harness import Harness, make_job, queue
from magma.api.objects import PodGroup


def podgroup(name: str, q: str, phase: str) -> PodGroup:
    return PodGroup.model_validate({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                                    "metadata": {"name": name, "namespace": "ns"},
                                    "spec": {"minMember": 1, "queue": q}, "status": {"phase": phase}})


def status(h, name):
    q = h.state.queues[name]
    return q.status.state, {k: getattr(q.status, k) for k in ("pending", "inqueue", "running", "unknown",
                                                              "completed")}


def test_new_queue_is_opened_and_counts_podgroups():
    h = Harness(queue("team"), podgroup("a", "team", "Pending"), podgroup("b", "team", "Running"),
                podgroup("c", "team", "Running"), podgroup("d", "team", "Inqueue"), podgroup("e", "team", "Completed"),
                podgroup("f", "team", "Unknown"))
    assert h.sync() is True
    assert status(h, "team") == ("Open", {"pending": 1, "inqueue": 1, "running": 2, "unknown": 1, "completed": 1})
    assert status(h, "default")[0] == "Open"
    assert h.sync() is False


def test_close_empty_queue_is_closed_at_once():
    h = Harness(queue("team"))
    h.sync()
    h.command("CloseQueue", target="team", kind="Queue")
    h.sync()
    assert status(h, "team")[0] == "Closed"
    assert h.state.commands == {}
    assert any(e.reason == "CloseQueue" and e.kind == "Queue" for e in h.cluster.events)


def test_close_queue_with_running_podgroups_goes_closing_then_closed():
    pg = podgroup("a", "team", "Running")
    h = Harness(queue("team"), pg, podgroup("b", "team", "Completed"), podgroup("c", "team", "Pending"))
    h.sync()
    h.command("CloseQueue", target="team", kind="Queue")
    h.sync()
    assert status(h, "team")[0] == "Closing"
    h.sync()
    assert status(h, "team")[0] == "Closing"
    pg.status.phase = "Completed"
    h.cluster.mark_changed("PodGroup", pg.key)  # an in-place write: say so (the controller follows the change log)
    h.sync()
    assert status(h, "team")[0] == "Closed"


def test_open_closed_and_closing_queues():
    h = Harness(queue("a", state="Closed"), queue("b", state="Closing"), podgroup("x", "b", "Running"))
    h.sync()
    assert status(h, "a")[0] == "Closed" and status(h, "b")[0] == "Closing"
    h.command("OpenQueue", target="a", kind="Queue", name="open-a")
    h.command("OpenQueue", target="b", kind="Queue", name="open-b")
    h.sync()
    assert status(h, "a")[0] == "Open" and status(h, "b")[0] == "Open"


def test_closing_a_job_queue_waits_for_the_job():
    from controller_harness import make_job

    h = Harness(queue("team"), make_job(queue="team"))
    h.start()
    h.enqueue(phase="Running")  # the scheduler's session marks the PodGroup Running
    h.command("CloseQueue", target="team", kind="Queue")
    h.sync()
    assert status(h, "team")[0] == "Closing"
    for name in h.pods():
        h.set_phase(name, "Succeeded")
    h.sync()  # job completes, its PodGroup is deleted
    assert h.phase() == "Completed"
    assert status(h, "team")[0] == "Closed"


def test_root_cannot_be_closed():
    h = Harness()
    h.sync()
    h.command("CloseQueue", target="root", kind="Queue")
    h.sync()
    assert status(h, "root")[0] == "Open"


def test_closing_a_parent_closes_children_and_opening_reopens_them():
    h = Harness(queue("org"), queue("t1", parent="org"), queue("t2", parent="org", state="Closed"))
    h.sync()
    h.command("CloseQueue", target="org", kind="Queue")
    h.sync()
    q = h.state.queues
    assert [status(h, n)[0] for n in ("org", "t1", "t2")] == ["Closed", "Closed", "Closed"]
    assert q["t1"].annotations["volcano.sh/closed-by-parent"] == "true"
    assert "volcano.sh/closed-by-parent" not in q["t2"].annotations
    # a child cannot be opened under a closed parent
    h.command("OpenQueue", target="t1", kind="Queue", name="open-t1")
    h.sync()
    assert status(h, "t1")[0] == "Closed"
    h.command("OpenQueue", target="org", kind="Queue", name="open-org")
    h.sync()
    assert [status(h, n)[0] for n in ("org", "t1", "t2")] == ["Open", "Open", "Closed"]
    assert q["t1"].annotations["volcano.sh/closed-by-parent"] == "false"


def test_command_for_missing_queue_is_dropped():
    h = Harness()
    h.command("CloseQueue", target="nope", kind="Queue")
    h.sync()
    assert h.state.commands == {}


def test_job_command_for_missing_job_is_dropped():
    h = Harness(make_job())
    h.command("AbortJob", target="other")
    h.sync()
    assert h.state.commands == {}
    assert h.phase() == "Pending"



def test_a_queue_applied_again_without_status_gets_its_counts_back():
    """A Queue re-applied from a manifest has no status counts (they are extra fields): reading it for the quiet
    check does not fail, and the next sync writes the counts again."""
    from magma.controller.queue import _read

    h = Harness(queue("team"), podgroup("a", "team", "Running"))
    h.sync()
    bare = queue("team")
    assert _read(bare) is not None  # no AttributeError for the missing counts
    h.cluster.update(bare)
    h.sync()
    assert status(h, "team") == ("Open", {"pending": 0, "inqueue": 0, "running": 1, "unknown": 0, "completed": 0})


def _queue_run(seed: int) -> tuple[list, int]:
    """A random run of PodGroup moves, queue commands and re-applied queues; what the queues and events say after
    every sync, and how many queues the syncs visited."""
    import random

    from magma.controller.queue import QueueController

    rng = random.Random(seed)
    names = ["org", "t1", "t2", "u"]
    h = Harness(queue("org"), queue("t1", parent="org"), queue("t2", parent="org"), queue("u"),
                *[podgroup(f"p{i}", rng.choice(names), "Pending") for i in range(8)])
    visited = 0
    original = QueueController._sync_queue

    def counting(self, *args):
        nonlocal visited
        visited += 1
        return original(self, *args)

    QueueController._sync_queue = counting
    seen = []
    try:
        for step in range(40):
            r = rng.random()
            if r < 0.6:
                pg = h.state.podgroups[f"ns/p{rng.randrange(8)}"]
                pg.status.phase = rng.choice(["Pending", "Inqueue", "Running", "Unknown", "Completed"])
                if rng.random() < 0.2:
                    pg.spec.queue = rng.choice(names)
                h.cluster.mark_changed("PodGroup", pg.key)
            elif r < 0.75:
                h.command(rng.choice(["OpenQueue", "CloseQueue"]), target=rng.choice(names), kind="Queue",
                          name=f"c{step}")
            elif r < 0.8:
                h.cluster.update(queue(rng.choice(names[1:3]), parent="org"))
            h.sync()
            seen.append(([(n, status(h, n), dict(h.state.queues[n].annotations)) for n in sorted(h.state.queues)],
                         len(h.cluster.events)))
        seen.append([(e.type, e.reason, e.key, e.message) for e in h.cluster.events])
    finally:
        QueueController._sync_queue = original
    return seen, visited


def test_visiting_only_recounted_queues_changes_nothing():
    """fastpath.queue_sync_recounted: the same states, counts, annotations and events, with fewer queues visited."""
    from magma.scheduler.framework import fastpath

    fewer = 0
    for seed in range(30):
        fast, fast_visits = _queue_run(seed)
        with fastpath.disabled("queue_sync_recounted"):
            slow, slow_visits = _queue_run(seed)
        assert fast == slow
        assert fast_visits <= slow_visits
        fewer += slow_visits - fast_visits
    assert fewer > 0
