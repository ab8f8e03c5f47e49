"""Lifecycle policies: every event and action, exit codes, timeouts, precedence; magma's gang restart."""

from __future__ import annotations

import pytest

from controller_harness import Harness, make_job, task
from magma.api.objects import JobSpec
from magma.controller.job import GANG_RESTART_ANNOTATION
from magma.controller.policies import apply_policies


def spec(**kw) -> JobSpec:
    return JobSpec.model_validate({"tasks": [{"name": "worker", "replicas": 2, **kw.pop("task", {})}], **kw})


# ---------------------------------------------------------------- the pure decision table

@pytest.mark.parametrize("policies,event,task_name,code,want", [
    ([{"event": "PodFailed", "action": "RestartJob"}], "PodFailed", "worker", 1, ("RestartJob", None)),
    ([{"event": "PodEvicted", "action": "AbortJob"}], "PodEvicted", "worker", 0, ("AbortJob", None)),
    ([{"events": ["PodEvicted", "PodFailed"], "action": "TerminateJob"}], "PodFailed", "worker", 1,
     ("TerminateJob", None)),
    ([{"event": "*", "action": "CompleteJob"}], "TaskCompleted", "worker", 0, ("CompleteJob", None)),
    ([{"event": "*", "action": "CompleteJob"}], "PodRunning", "worker", 0, ("SyncJob", None)),  # internal
    ([{"event": "*", "action": "CompleteJob"}], "PodPending", "worker", 0, ("SyncJob", None)),  # no timeout
    ([{"event": "PodPending", "action": "AbortJob"}], "PodPending", "worker", 0, ("SyncJob", None)),
    ([{"event": "PodPending", "action": "AbortJob", "timeout": "10m"}], "PodPending", "worker", 0,
     ("AbortJob", 600.0)),
    ([{"event": "PodFailed", "action": "RestartJob", "timeout": "30s"}], "PodFailed", "worker", 1,
     ("RestartJob", 30.0)),
    ([{"event": "Unknown", "action": "RestartJob"}], "Unknown", "", 0, ("RestartJob", None)),
    ([{"event": "JobUnknown", "action": "RestartJob"}], "Unknown", "", 0, ("RestartJob", None)),
    ([{"event": "TaskFailed", "action": "AbortJob"}], "TaskFailed", "worker", 0, ("AbortJob", None)),
    ([{"exitCode": 3, "action": "RestartPod"}], "PodFailed", "worker", 3, ("RestartPod", None)),
    ([{"exitCode": 3, "action": "RestartPod"}], "PodFailed", "worker", 4, ("SyncJob", None)),
    ([{"exitCode": 3, "action": "RestartPod"}], "PodFailed", "worker", 0, ("SyncJob", None)),
    ([{"event": "PodEvicted", "action": "AbortJob"}], "PodFailed", "worker", 1, ("SyncJob", None)),
    ([], "PodFailed", "worker", 1, ("SyncJob", None)),
    # first match wins
    ([{"exitCode": 1, "action": "AbortJob"}, {"event": "PodFailed", "action": "RestartJob"}], "PodFailed",
     "worker", 1, ("AbortJob", None)),
])
def test_apply_policies_table(policies, event, task_name, code, want):
    d = apply_policies(spec(policies=policies), event, task_name, code)
    assert (d.action, d.delay) == want


def test_task_policies_win_over_job_policies():
    s = spec(policies=[{"event": "PodFailed", "action": "AbortJob"}],
             task={"policies": [{"event": "PodFailed", "action": "RestartTask"}]})
    assert apply_policies(s, "PodFailed", "worker", 1).action == "RestartTask"
    assert apply_policies(s, "PodFailed", "other", 1).action == "AbortJob"
    assert apply_policies(s, "PodFailed", "", 1).action == "AbortJob"


# ---------------------------------------------------------------- end to end, per event

def failed(h):
    h.set_phase("j-worker-0", "Failed", exit_code=1)


def evicted(h):
    h.evict("j-worker-0")


def task_completed(h):
    h.set_phase("j-worker-0", "Succeeded")
    h.set_phase("j-worker-1", "Succeeded")


def task_failed(h):
    h.set_phase("j-worker-0", "Running", restarts=3)


def unknown(h):
    h.enqueue(phase="Unknown")


EVENTS = {"PodFailed": failed, "PodEvicted": evicted, "TaskCompleted": task_completed, "TaskFailed": task_failed,
          "Unknown": unknown}

# action -> (phase after the sync, retryCount, pods left)
OUTCOMES = {
    "RestartJob": ("Pending", 1, set()),
    "AbortJob": ("Aborted", 0, None),
    "TerminateJob": ("Terminated", 0, None),
    "CompleteJob": ("Completed", 0, None),
}


@pytest.mark.parametrize("event", sorted(EVENTS))
@pytest.mark.parametrize("action", sorted(OUTCOMES))
def test_each_event_triggers_each_job_action(event, action):
    h = Harness(make_job(minAvailable=1, tasks=[task("worker", 2)],
                         policies=[{"event": event, "action": action}]))
    h.start()
    EVENTS[event](h)
    h.sync()
    phase, retries, pods = OUTCOMES[action]
    if event == "TaskCompleted" and action == "RestartJob":
        phase = "Pending"
    assert h.phase() == phase, (event, action, h.job().status.state)
    assert h.job().status.retry_count == retries
    assert any(f"Start to execute action {action}" in e.message for e in h.events("ExecuteAction"))
    if pods is not None:
        assert set(h.pods()) == pods
    # no pod of the job is left pending or running
    assert all(p.status.phase in ("Succeeded", "Failed") for p in h.pods().values())


def test_restart_task_kills_only_that_task():
    h = Harness(make_job(minAvailable=3, tasks=[
        task("ps", 1), task("worker", 2, policies=[{"event": "PodFailed", "action": "RestartTask"}])]))
    h.start()
    ps_uid = h.pod("j-ps-0").metadata.uid
    old = {n: p.metadata.uid for n, p in h.pods().items()}
    h.set_phase("j-worker-0", "Failed", exit_code=1)
    h.sync()
    job = h.job()
    assert job.status.retry_count == 1
    assert job.status.version == 0  # a targeted restart does not bump the version
    pods = h.pods()
    assert pods["j-ps-0"].metadata.uid == ps_uid
    assert pods["j-worker-0"].metadata.uid != old["j-worker-0"]
    assert pods["j-worker-1"].metadata.uid != old["j-worker-1"]
    assert h.pg() is not None  # the PodGroup stays: no re-enqueue needed
    assert h.phase() == "Pending"
    h.run_all()
    h.sync()
    assert h.phase() == "Running"


def test_restart_pod_recreates_only_that_pod():
    h = Harness(make_job(policies=[{"exitCode": 137, "action": "RestartPod"}]))
    h.start()
    keep = h.pod("j-worker-1").metadata.uid
    gone = h.pod("j-worker-0").metadata.uid
    h.set_phase("j-worker-0", "Failed", exit_code=137)
    h.sync()
    pods = h.pods()
    assert pods["j-worker-1"].metadata.uid == keep
    assert pods["j-worker-0"].metadata.uid != gone
    assert pods["j-worker-0"].status.phase == "Pending"
    assert h.job().status.retry_count == 1


def test_exit_code_policy_reads_first_container_exit_code():
    h = Harness(make_job(policies=[{"exitCode": 42, "action": "AbortJob"}],
                         annotations={GANG_RESTART_ANNOTATION: "false"}))
    h.start()
    h.set_phase("j-worker-0", "Failed", exit_code=1)
    h.sync()
    assert h.phase() == "Running"  # 1 != 42, and the default restart is off
    h.set_phase("j-worker-1", "Failed", exit_code=42)
    h.sync()
    assert h.phase() == "Aborted"


def test_pod_pending_timeout_fires_when_pod_stays_pending():
    h = Harness(make_job(policies=[{"event": "PodPending", "action": "AbortJob", "timeout": "60s"}]))
    h.sync()
    h.enqueue()
    h.t = 5
    h.sync()  # pods created at t=5
    assert h.ctl.next_timer(5) == 65
    assert any("Execute action AbortJob after 1m0s" in e.message for e in h.events("ExecuteAction"))
    h.t = 64
    h.sync()
    assert h.phase() == "Pending"
    h.t = 65
    h.sync()
    assert h.phase() == "Aborted"


def test_pod_pending_timeout_is_cancelled_when_pod_runs():
    h = Harness(make_job(policies=[{"event": "PodPending", "action": "AbortJob", "timeout": "60s"}]))
    h.sync()
    h.enqueue()
    h.sync()
    h.t = 30
    h.run_all()
    h.sync()
    assert h.phase() == "Running"
    assert h.ctl.next_timer(30) is None
    h.t = 100
    h.sync()
    assert h.phase() == "Running"


def test_delayed_pod_failed_action_is_cancelled_by_running_again():
    h = Harness(make_job(minAvailable=1, policies=[{"event": "PodFailed", "action": "RestartJob", "timeout": "30s"}]))
    h.start()
    h.set_phase("j-worker-0", "Failed", exit_code=1)
    h.sync()
    assert h.ctl.next_timer(0) == 30
    h.t = 10
    h.set_phase("j-worker-0", "Running")  # e.g. restarted in place
    h.sync()
    h.t = 40
    h.sync()
    assert h.phase() == "Running"
    assert h.job().status.retry_count == 0


def test_delayed_action_fires_after_timeout():
    h = Harness(make_job(minAvailable=1, policies=[{"event": "PodFailed", "action": "RestartJob", "timeout": "30s"}]))
    h.start()
    h.set_phase("j-worker-0", "Failed", exit_code=1)
    h.sync()
    assert h.phase() == "Running"
    h.t = 30
    h.sync()
    assert h.job().status.retry_count == 1


def test_events_of_an_old_version_trigger_nothing():
    h = Harness(make_job(policies=[{"event": "PodFailed", "action": "RestartJob"}]))
    h.start()
    h.job().status.version = 5  # pods carry version 0
    h.set_phase("j-worker-0", "Failed", exit_code=1)
    h.sync()
    assert h.job().status.retry_count == 0


def test_task_completed_only_when_all_replicas_succeeded():
    h = Harness(make_job(minAvailable=2, tasks=[
        task("master", 1, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}]), task("worker", 3)]))
    h.start()
    h.set_phase("j-worker-0", "Succeeded")
    h.sync()
    assert h.phase() == "Running"
    h.set_phase("j-master-0", "Succeeded")
    h.sync()
    assert h.phase() == "Completed"
    assert sorted(h.pods()) == ["j-master-0", "j-worker-0"]  # the running workers were killed


def test_task_failed_when_restarts_reach_task_max_retry():
    h = Harness(make_job(tasks=[task("worker", 2, maxRetry=2)], policies=[{"event": "TaskFailed",
                                                                             "action": "AbortJob"}]))
    h.start()
    h.set_phase("j-worker-0", "Running", restarts=1)
    h.sync()
    assert h.phase() == "Running"
    h.set_phase("j-worker-1", "Running", restarts=1)
    h.sync()
    assert h.phase() == "Aborted"


# ---------------------------------------------------------------- magma's default gang restart

def test_eviction_below_min_available_restarts_the_job_by_default():
    h = Harness(make_job(tasks=[task("worker", 4)]))
    h.start()
    h.evict("j-worker-2", "preempt")
    h.sync()
    job = h.job()
    assert job.status.retry_count == 1
    restart = next(e.message for e in h.events("JobStatusUpdate") if "-> Restarting" in e.message)
    assert "Running -> Restarting: PodEvicted" in restart
    assert "magma default" in restart and "preempt" in restart and "3 pods left of minAvailable 4" in restart
    assert h.pods() == {}  # the rest of the gang was killed, not left half-running
    assert h.phase() == "Pending"


def test_eviction_above_min_available_just_recreates_the_pod():
    h = Harness(make_job(minAvailable=2, tasks=[task("worker", 4)]))
    h.start()
    h.evict("j-worker-3")
    h.sync()
    assert h.job().status.retry_count == 0
    assert h.phase() == "Running"
    assert h.pod("j-worker-3").status.phase == "Pending"


def test_eviction_of_the_whole_gang_is_not_a_retry():
    h = Harness(make_job())
    h.start()
    h.evict("j-worker-0")
    h.evict("j-worker-1")
    h.sync()
    assert h.job().status.retry_count == 0
    assert h.phase() == "Pending"
    assert sorted(h.pods()) == ["j-worker-0", "j-worker-1"]


def test_failure_below_min_available_restarts_the_job_by_default():
    h = Harness(make_job(tasks=[task("worker", 3)]))
    h.start()
    h.set_phase("j-worker-1", "Failed", exit_code=2)
    h.sync()
    assert h.job().status.retry_count == 1
    restart = next(e.message for e in h.events("JobStatusUpdate") if "-> Restarting" in e.message)
    assert "PodFailed" in restart and "exit code 2" in restart


def test_default_restart_counts_retries_up_to_max_retry():
    h = Harness(make_job(maxRetry=2))
    h.start()
    h.set_phase("j-worker-0", "Failed", exit_code=1)
    h.sync()
    assert (h.phase(), h.job().status.retry_count) == ("Pending", 1)
    h.enqueue()
    h.sync()
    h.run_all()
    h.sync()
    h.evict("j-worker-1")
    h.sync()
    assert (h.phase(), h.job().status.retry_count) == ("Failed", 2)


def test_a_policy_overrides_the_default():
    h = Harness(make_job(policies=[{"event": "PodEvicted", "action": "AbortJob"}]))
    h.start()
    h.evict("j-worker-0")
    h.sync()
    assert h.phase() == "Aborted"
    assert h.job().status.retry_count == 0


def test_default_can_be_turned_off():
    h = Harness(make_job(annotations={GANG_RESTART_ANNOTATION: "false"}))
    h.start()
    h.evict("j-worker-0")
    h.sync()
    assert h.job().status.retry_count == 0
    assert h.pod("j-worker-1").status.phase == "Running"  # Volcano: half the gang keeps running


def test_controller_deletions_are_not_evictions():
    h = Harness(make_job(minAvailable=1, tasks=[task("worker", 3)],
                         policies=[{"event": "PodEvicted", "action": "AbortJob"}]))
    h.start()
    job = h.job()
    job.spec.tasks[0].replicas = 1  # scale down: the controller deletes two pods
    h.cluster.update(job)
    h.sync()
    h.sync()
    assert h.phase() == "Running"


def test_resume_job_policy_on_a_running_job_does_nothing():
    h = Harness(make_job(minAvailable=1, policies=[{"event": "PodFailed", "action": "ResumeJob"}]))
    h.start()
    h.set_phase("j-worker-0", "Failed", exit_code=1)
    h.sync()
    assert h.phase() == "Running"
    assert h.job().status.retry_count == 0


def test_restart_partition_kills_the_pods_of_that_partition():
    h = Harness(make_job(minAvailable=4, tasks=[task("w", 4, partitionPolicy={"partitionSize": 2},
                                                     policies=[{"event": "PodFailed",
                                                                "action": "RestartPartition"}])]))
    h.start()
    uids = {n: p.metadata.uid for n, p in h.pods().items()}
    h.set_phase("j-w-3", "Failed", exit_code=1)
    h.sync()
    pods = h.pods()
    assert pods["j-w-0"].metadata.uid == uids["j-w-0"] and pods["j-w-1"].metadata.uid == uids["j-w-1"]
    assert pods["j-w-2"].metadata.uid != uids["j-w-2"] and pods["j-w-3"].metadata.uid != uids["j-w-3"]
    assert h.job().status.retry_count == 1


def test_task_failed_fires_again_after_more_restarts():
    h = Harness(make_job(minAvailable=1, tasks=[task("worker", 1, maxRetry=2)],
                         policies=[{"event": "TaskFailed", "action": "RestartTask"}], maxRetry=5))
    h.start()
    h.set_phase("j-worker-0", "Running", restarts=2)
    h.sync()
    assert h.job().status.retry_count == 1
    h.run_all()
    h.sync()
    h.set_phase("j-worker-0", "Running", restarts=2)
    h.sync()
    assert h.job().status.retry_count == 2
