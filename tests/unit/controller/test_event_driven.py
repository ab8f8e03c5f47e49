"""The event-driven sync visits only the jobs something happened to (fastpath.event_driven_controller)."""

from __future__ import annotations

import contextlib

from controller_harness import Harness, make_job

from magma.controller.job import JobController
from magma.scheduler.framework import fastpath


def visits(h: Harness) -> list[str]:
    seen: list[str] = []
    original = JobController._sync_one

    def counting(self, job, *args):
        seen.append(job.key)
        return original(self, job, *args)

    JobController._sync_one = counting
    try:
        h.sync()
    finally:
        JobController._sync_one = original
    return seen


def running_jobs(n: int, **spec) -> Harness:
    h = Harness(*[make_job(f"j{i}", **spec) for i in range(n)])
    h.sync()
    for i in range(n):
        h.enqueue(f"ns/j{i}")
    h.sync()
    for i in range(n):
        h.run_all(f"ns/j{i}")
    h.sync()
    h.sync()
    return h


def test_only_the_job_of_a_changed_pod_is_synced():
    h = running_jobs(12)
    assert visits(h) == []
    h.set_phase("j7-worker-0", "Failed", exit_code=1)
    assert visits(h) == ["ns/j7"]  # the gang restarts: its pods deleted and made again, its status written
    assert h.job("ns/j7").status.retry_count == 1
    assert visits(h) == []  # its own writes, taken in, call for no other sync


def test_a_podgroup_write_syncs_its_job():
    h = running_jobs(5)
    h.enqueue("ns/j3", phase="Unknown")
    assert visits(h) == ["ns/j3"]


def test_ttl_is_a_timer():
    h = running_jobs(4, ttlSecondsAfterFinished=30)
    for name in ("j2-worker-0", "j2-worker-1"):
        h.set_phase(name, "Succeeded")
    h.sync()
    assert h.phase("ns/j2") == "Completed"
    assert h.ctl.next_timer(h.t) == h.t + 30
    h.advance(29)
    assert visits(h) == []
    h.advance(1)
    assert visits(h) == ["ns/j2"]
    assert "ns/j2" not in h.state.jobs and not h.pods("ns/j2")


def test_switched_off_every_job_is_synced():
    h = running_jobs(6)
    with fastpath.disabled("event_driven_controller"):
        assert sorted(visits(h)) == [f"ns/j{i}" for i in range(6)]


def objects(h: Harness) -> dict:
    """Every Job, PodGroup and pod, with all their fields (statuses included)."""
    st = h.state
    return {kind: {k: o.model_dump() for k, o in objs.items()}
            for kind, objs in (("jobs", st.jobs), ("podgroups", st.podgroups), ("pods", st.pods))}


def calls(h: Harness, method: str) -> int:
    """How many times a sync calls the JobController's `method` (taking a sync context)."""
    count = 0
    original = getattr(JobController, method)

    def counting(self, ctx):
        nonlocal count
        count += 1
        return original(self, ctx)

    setattr(JobController, method, counting)
    try:
        h.sync()
    finally:
        setattr(JobController, method, original)
    return count


def passes(h: Harness) -> int:
    """How many state passes a sync runs."""
    return calls(h, "_default_pass")


def _unschedulable(h: Harness, key: str, message: str) -> None:
    """The scheduler's session writes the PodGroup's status: a condition, the phase left as it is."""
    from magma.api.objects import PodGroupCondition

    pg = h.pg(key)
    pg.status.conditions = [PodGroupCondition(type="Unschedulable", status="True", reason="NotEnoughResources",
                                              message=message, last_transition_time=h.t)]
    h.cluster.mark_changed("PodGroup", pg.key)


def _podgroup_writes(light: bool) -> tuple:
    """Jobs whose PodGroups the scheduler writes (conditions, Inqueue, Running), with a spec changed by hand once;
    what the syncs write and how many state passes they run."""
    h = Harness(*[make_job(f"j{i}") for i in range(3)])
    counts = []
    with contextlib.nullcontext() if light else fastpath.disabled("light_podgroup_syncs"):
        counts.append(passes(h))
        h.advance(1)
        _unschedulable(h, "ns/j0", "0/1 nodes are available")  # a PodGroupPending event, nothing else
        counts.append(passes(h))
        _unschedulable(h, "ns/j0", "0/1 nodes are available")  # the same again: no event
        counts.append(passes(h))
        h.enqueue("ns/j1")  # no longer Pending: pods are made
        counts.append(passes(h))
        h.run_all("ns/j1")
        counts.append(passes(h))
        h.enqueue("ns/j1", phase="Running")  # Running, as the session writes it once the pods run
        counts.append(passes(h))
        h.pg("ns/j2").spec.min_member = 7  # a spec that is not what the job asks for: written back
        h.cluster.mark_changed("PodGroup", h.pg("ns/j2").key)
        counts.append(passes(h))
        h.enqueue("ns/j1", phase="Unknown")  # an event for the policies
        counts.append(passes(h))
    return objects(h), [(e.type, e.reason, e.key, e.message) for e in h.cluster.events], counts


def test_podgroup_status_writes_need_no_state_pass():
    """fastpath.light_podgroup_syncs: the same objects and events, without the state passes after the scheduler's
    writes of a PodGroup's status (conditions, Running)."""
    fast_objects, fast_events, fast = _podgroup_writes(light=True)
    slow_objects, slow_events, slow = _podgroup_writes(light=False)
    assert fast_objects == slow_objects and fast_events == slow_events
    assert any(e[1] == "PodGroupPending" for e in fast_events)
    assert [pg["spec"]["min_member"] for pg in fast_objects["podgroups"].values()] == [2, 2, 2]  # j2's written back
    assert fast[1] == fast[2] == fast[5] == 0 < slow[1]  # conditions, the same again, Running: no pass
    assert fast[3] > 0 and fast[6] > 0 and fast[7] > 0  # Inqueue, a changed spec, Unknown: the passes run
    assert sum(fast) < sum(slow)


def test_orphans_of_a_deleted_job_are_collected():
    """The Jobs gone are found from the uids that left (a deletion, a Job applied again with another uid)."""
    h = running_jobs(3)
    old = h.job("ns/j1")
    pods = set(h.pods("ns/j1"))
    assert pods
    h.cluster.delete("Job", "ns/j1")  # deleted without the controller being told (no job_deleted call)
    h.sync()
    assert not h.pods("ns/j1") and h.pg("ns/j1") is None
    assert all(f"ns/{p}" not in h.state.pods for p in pods)
    assert old.metadata.uid not in h.ctl.jobs._known_uids
    before = h.job("ns/j2").metadata.uid
    renewed = make_job("j2", uid="another-uid")
    h.cluster.update(renewed)  # the same name, another uid: the old one's objects are orphans
    h.sync()
    assert before not in h.ctl.jobs._known_uids
    assert h.pg("ns/j2") is not None and h.pg("ns/j2").metadata.owner_references[0].uid == "another-uid"
    assert not any(o.metadata.owner_references and o.metadata.owner_references[0].uid == before
                   for o in list(h.state.pods.values()) + list(h.state.podgroups.values()))
    assert all(p.metadata.owner_references[0].uid == "another-uid" for p in h.pods("ns/j2").values())


def _lifecycles(skip: bool) -> tuple:
    """Jobs made, enqueued, run, finished in one step (Pending to Running to Completed), finished with a pod left
    running (killed), evicted, scaled down; what the syncs write, and how many state passes they run."""
    from controller_harness import task

    h = Harness(make_job("a"), make_job("b", minAvailable=2), make_job("c", minAvailable=1),
                make_job("e", minAvailable=2, minSuccess=1),
                make_job("d", tasks=[task("worker", 3)], minAvailable=2, policies=[
                    {"event": "PodPending", "action": "AbortJob", "timeout": "30s"}]))
    counts = []
    with contextlib.nullcontext() if skip else fastpath.disabled("settled_pass_skipped"):
        counts.append(passes(h))  # new jobs: status and PodGroup
        for key in ("ns/a", "ns/b", "ns/c", "ns/d", "ns/e"):
            h.enqueue(key)
        counts.append(passes(h))  # pods made (d's PodPending timers set)
        h.run_all("ns/a")
        h.run_all("ns/e")
        counts.append(passes(h))
        h.set_phase("e-worker-0", "Succeeded")  # e: Completed at minSuccess, its running pod killed
        counts.append(passes(h))
        for name in h.pods("ns/b"):
            h.set_phase(name, "Succeeded")  # b: Pending, then Running, then at once Completed
        h.set_phase("c-worker-0", "Running")
        counts.append(passes(h))
        h.evict("c-worker-0")
        counts.append(passes(h))
        h.job("ns/a").spec.tasks[0].replicas = 1  # scaled down: a pod deleted
        h.cluster.update(h.job("ns/a"))
        counts.append(passes(h))
        h.advance(31)  # d's pods still pending: AbortJob
        counts.append(passes(h))
        counts.append(passes(h))
    return objects(h), [(e.type, e.reason, e.key, e.message) for e in h.cluster.events], counts


def h_pods(objects: dict, job: str) -> list[str]:
    return [k for k, pod in objects["pods"].items() if pod["metadata"]["annotations"].get("volcano.sh/job-name") == job
            and pod["status"]["phase"] not in ("Succeeded", "Failed")]


def test_a_pass_after_a_settled_one_is_skipped():
    """fastpath.settled_pass_skipped: the same objects and events with fewer state passes; b goes from Pending to
    Running and on to Completed in one sync (the pass after Running is not skipped)."""
    fast_objects, fast_events, fast = _lifecycles(skip=True)
    slow_objects, slow_events, slow = _lifecycles(skip=False)
    assert fast_objects == slow_objects and fast_events == slow_events
    assert any(e[2] == "ns/b" and "Running -> Completed" in e[3] for e in fast_events)
    assert any(e[2] == "ns/d" and "Aborting" in e[3] for e in fast_events)
    assert any(e[2] == "ns/e" and "MinSuccessReached" in e[3] for e in fast_events) and not h_pods(fast_objects, "e")
    assert fast[0] < slow[0] and fast[1] < slow[1] and sum(fast) < sum(slow)


def test_podgroups_share_their_quantities():
    """fastpath.podgroup_quantities_shared: PodGroups asking for the same amounts share the quantities read from
    them; the PodGroups are the same as with each read on its own."""

    def podgroups(shared: bool) -> Harness:
        h = Harness(make_job("a"), make_job("b"))
        with contextlib.nullcontext() if shared else fastpath.disabled("podgroup_quantities_shared"):
            h.sync()
        return h

    fast, slow = podgroups(True), podgroups(False)
    assert objects(fast)["podgroups"] == objects(slow)["podgroups"]
    assert fast.pg("ns/a").spec.min_resources["cpu"] is fast.pg("ns/b").spec.min_resources["cpu"]
    assert slow.pg("ns/a").spec.min_resources["cpu"] is not slow.pg("ns/b").spec.min_resources["cpu"]
    assert fast.pg("ns/a").spec.min_resources["cpu"].raw == "2"


def observations(h: Harness) -> int:
    """How many jobs a sync observes (reads their pods for events)."""
    return calls(h, "_observe")


def _ttl_runs_out(light: bool) -> tuple:
    """Jobs with a ttl finished in several ways (all pods succeeded; Completed at minSuccess with a pod left running,
    killed; failed at maxRetry; a Service plugin; written after it finished; a command at the ttl; a pod written after
    it finished): what the syncs write, and how many jobs the syncs at the ttls observe."""
    h = Harness(*[make_job(name, ttlSecondsAfterFinished=30, **spec) for name, spec in (
        ("a", {}), ("b", {"minSuccess": 1}), ("c", {"maxRetry": 1}), ("d", {"plugins": {"svc": []}}), ("e", {}),
        ("f", {}), ("g", {}))])
    names = ("a", "b", "c", "d", "e", "f", "g")
    counts = []
    with contextlib.nullcontext() if light else fastpath.disabled("ttl_syncs_light"):
        h.sync()
        for key in names:
            h.enqueue(f"ns/{key}")
        h.sync()
        for key in names:
            h.run_all(f"ns/{key}")
        h.sync()
        for key in ("b", "d", "e", "f", "g"):
            for name in h.pods(f"ns/{key}"):
                h.set_phase(name, "Succeeded")
        h.set_phase("b-worker-0", "Succeeded")  # b: Completed at minSuccess, its running pod killed
        h.set_phase("c-worker-0", "Failed", exit_code=1)  # c: restarted once, Failed at maxRetry
        h.sync()
        h.sync()
        h.advance(10)
        for name in h.pods("ns/a"):
            h.set_phase(name, "Succeeded")  # a: finished later
        h.set_phase("g-worker-0", "Succeeded")  # g: a pod written (the same phase) after it finished
        h.sync()
        h.advance(20)
        h.job("ns/e").metadata.annotations["touched"] = "yes"  # e: written after it finished
        h.cluster.update(h.job("ns/e"))
        h.command("AbortJob", target="f")  # f: a command
        counts.append(observations(h))  # b, c, d, e, f, g: ttl due; only e and f observed
        h.advance(10)
        counts.append(observations(h))  # a: ttl due, not observed
        counts.append(observations(h))
    return objects(h), [(e.type, e.reason, e.key, e.message) for e in h.cluster.events], counts


def test_a_ttl_alone_needs_no_observation():
    """fastpath.ttl_syncs_light: the same objects and events when finished jobs' ttls run out, without observing the
    jobs nothing was written to since their passes settled."""
    fast_objects, fast_events, fast = _ttl_runs_out(light=True)
    slow_objects, slow_events, slow = _ttl_runs_out(light=False)
    assert fast_objects == slow_objects and fast_events == slow_events
    assert [e[2] for e in fast_events if e[1] == "TTLExpired"] == [f"ns/{k}" for k in "bcdefga"]
    assert not fast_objects["jobs"] and not fast_objects["pods"] and not fast_objects["podgroups"]
    assert fast == [2, 0, 0] and slow == [6, 1, 0]


def test_the_pods_found_are_kept_until_a_pod_of_the_job_is_written():
    """The index answers a job's pods again from what it found, until a write of one of its pods: a PodGroup write
    keeps the answer; a pod's status written, a pod taken over by another job's name, a pod deleted ask again."""
    h = running_jobs(2)
    index = h.ctl.jobs._index

    def fresh(key: str) -> dict:
        index.pods_found.pop(key, None)
        return index.pods(h.state, h.job(key))

    j0, j1 = h.job("ns/j0"), h.job("ns/j1")
    first, other = index.pods(h.state, j0), index.pods(h.state, j1)
    assert list(first) == ["j0-worker-0", "j0-worker-1"]
    h.enqueue("ns/j0", phase="Running")
    index.refresh()
    assert index.pods(h.state, j0) is first
    h.set_phase("j0-worker-0", "Succeeded")
    index.refresh()
    again = index.pods(h.state, j0)
    assert again is not first and again == first
    assert index.pods(h.state, j1) is other
    pod = h.pod("j0-worker-1")
    pod.metadata.annotations["volcano.sh/job-name"] = "j1"
    h.cluster.mark_changed("Pod", pod.key)
    index.refresh()
    assert list(index.pods(h.state, j0)) == ["j0-worker-0"]
    assert index.pods(h.state, j1) is not other
    assert index.pods(h.state, j1) == fresh("ns/j1")
    h.cluster.delete("Pod", "ns/j0-worker-0")
    index.refresh()
    assert index.pods(h.state, j0) == {} == fresh("ns/j0")
