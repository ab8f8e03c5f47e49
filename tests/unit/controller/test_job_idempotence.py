"""Random kubelet/scheduler/user moves: after any of them, a second sync changes nothing."""

from __future__ import annotations

import random

import pytest

from controller_harness import Harness, make_job, task

POLICY_SETS = [
    [],
    [{"event": "PodFailed", "action": "RestartJob"}],
    [{"event": "PodEvicted", "action": "RestartTask"}, {"exitCode": 7, "action": "RestartPod"}],
    [{"event": "PodPending", "action": "AbortJob", "timeout": "20s"}, {"event": "TaskCompleted",
                                                                      "action": "CompleteJob"}],
]


@pytest.mark.parametrize("seed", range(12))
def test_random_moves_then_sync_is_a_fixed_point(seed):
    rnd = random.Random(seed)
    jobs = [make_job(f"j{i}", minAvailable=rnd.choice([1, 2, 3]), maxRetry=rnd.choice([1, 3, 5]),
                     tasks=[task("master", 1), task("worker", 2)], policies=rnd.choice(POLICY_SETS),
                     plugins=rnd.choice([{}, {"env": [], "svc": []}, {"pytorch": [], "svc": []}]),
                     ttlSecondsAfterFinished=rnd.choice([None, 30]))
            for i in range(3)]
    h = Harness(*jobs, grace=rnd.choice([0.0, 5.0]))
    h.sync()
    for _ in range(60):
        move = rnd.choice(["enqueue", "phase", "phase", "phase", "evict", "command", "advance", "finish", "unknown"])
        keys = sorted(h.state.jobs)
        if not keys:
            break
        key = rnd.choice(keys)
        pods = sorted(h.pods(key))
        if move == "enqueue" and h.pg(key) is not None:
            h.enqueue(key, phase=rnd.choice(["Inqueue", "Running"]))
        elif move == "unknown" and h.pg(key) is not None:
            h.enqueue(key, phase="Unknown")
        elif move == "phase" and pods:
            name = rnd.choice(pods)
            phase = rnd.choice(["Running", "Running", "Succeeded", "Failed"])
            h.set_phase(name, phase, exit_code=rnd.choice([0, 1, 7]) if phase == "Failed" else None,
                        restarts=rnd.choice([None, 0, 3]))
        elif move == "evict" and pods:
            pod = h.pod(rnd.choice(pods))
            if pod.metadata.deletion_timestamp is None:
                pod.spec.node_name = pod.spec.node_name or "n1"
                h.evict(pod.name)
        elif move == "command":
            h.command(rnd.choice(["AbortJob", "ResumeJob", "RestartJob", "CompleteJob", "TerminateJob"]),
                      target=key.split("/")[1], name=f"c{rnd.random()}")
        elif move == "advance":
            h.advance(rnd.choice([1, 10, 40]))
        elif move == "finish":
            h.advance(5)
            h.cluster.finish_deletions()
        h.sync()
        before = h.snapshot()
        assert h.sync() is False, move
        assert h.snapshot() == before
        for job in h.state.jobs.values():
            s = job.status
            assert s.state.phase in ("Pending", "Running", "Restarting", "Aborting", "Aborted", "Completing",
                                     "Completed", "Terminating", "Terminated", "Failed")
            assert s.retry_count <= job.spec.max_retry
            pods = h.pods(job.key)
            assert s.pending + s.running + s.succeeded + s.failed + s.unknown + s.terminating >= 0
            if s.state.phase in ("Aborted", "Completed", "Failed", "Terminated"):
                assert h.pg(job.key) is None
                assert all(p.status.phase in ("Succeeded", "Failed") or p.metadata.deletion_timestamp is not None
                           for p in pods.values())
