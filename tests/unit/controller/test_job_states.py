"""Job states and transitions (reference §7), status fields, idempotence."""

from __future__ import annotations

from magma.controller.job import GANG_RESTART_ANNOTATION

from controller_harness import Harness, make_job, task

NO_GANG_RESTART = {GANG_RESTART_ANNOTATION: "false"}


def test_new_job_is_pending_with_podgroup_and_no_pods_until_enqueued():
    h = Harness(make_job())
    assert h.sync() is True
    job = h.job()
    assert job.status.state.phase == "Pending"
    assert job.status.state.last_transition_time == 0.0
    assert job.status.min_available == 2
    assert [c.status for c in job.status.conditions] == ["Pending"]
    pg = h.pg()
    assert pg is not None and pg.name == "j-uid-j"
    assert pg.status.phase == "Pending"
    assert h.pods() == {}
    # still no pods while the PodGroup stays Pending
    assert h.sync() is False
    assert h.pods() == {}
    h.enqueue()
    assert h.sync() is True
    assert sorted(h.pods()) == ["j-worker-0", "j-worker-1"]
    assert all(p.status.phase == "Pending" for p in h.pods().values())
    assert h.job().status.pending == 2
    assert h.phase() == "Pending"


def test_sync_is_idempotent_at_every_step():
    h = Harness(make_job(plugins={"env": [], "svc": [], "ssh": []}))
    for step in (lambda: None, h.enqueue, h.run_all, lambda: h.set_phase("j-worker-0", "Succeeded"),
                 lambda: h.set_phase("j-worker-1", "Succeeded")):
        step()
        h.sync()
        before = h.snapshot()
        assert h.sync() is False
        assert h.snapshot() == before
    assert h.phase() == "Completed"


def test_pending_to_running_when_min_available_pods_run():
    h = Harness(make_job(minAvailable=2, tasks=[task("worker", 3)]))
    h.sync()
    h.enqueue()
    h.sync()
    h.set_phase("j-worker-0", "Running")
    h.sync()
    assert h.phase() == "Pending"
    h.t = 5
    h.set_phase("j-worker-1", "Running")
    h.sync()
    job = h.job()
    assert job.status.state.phase == "Running"
    assert job.status.state.reason == "MinAvailableReached"
    assert job.status.state.last_transition_time == 5
    assert (job.status.running, job.status.pending) == (2, 1)
    assert job.status.task_status_count["worker"].phase == {"Running": 2, "Pending": 1}
    assert [c.status for c in job.status.conditions] == ["Pending", "Running"]
    assert any("Pending -> Running" in e.message for e in h.events("JobStatusUpdate"))


def test_failed_pods_count_towards_running():
    h = Harness(make_job(minAvailable=2, annotations=NO_GANG_RESTART))
    h.sync()
    h.enqueue()
    h.sync()
    h.set_phase("j-worker-0", "Running")
    h.set_phase("j-worker-1", "Failed", exit_code=1)
    h.sync()
    assert h.phase() == "Running"  # Volcano: minAvailable <= running + succeeded + failed


def test_running_to_completed_when_all_succeed_and_running_duration():
    h = Harness(make_job())
    h.start()
    h.t = 100
    h.set_phase("j-worker-0", "Succeeded", exit_code=0)
    h.sync()
    assert h.phase() == "Running"
    h.set_phase("j-worker-1", "Succeeded", exit_code=0)
    h.sync()
    job = h.job()
    assert job.status.state.phase == "Completed"
    assert job.status.state.reason == "PodsSucceeded"
    assert job.status.succeeded == 2
    assert job.status.running_duration == "1m40s"
    # the PodGroup is deleted, finished pods are kept
    assert h.pg() is None
    assert sorted(h.pods()) == ["j-worker-0", "j-worker-1"]


def test_running_to_completed_by_min_success_kills_the_rest():
    h = Harness(make_job(minSuccess=1))
    h.start()
    h.set_phase("j-worker-0", "Succeeded")
    h.sync()
    assert h.phase() == "Completed"
    assert h.job().status.state.reason == "MinSuccessReached"
    assert sorted(h.pods()) == ["j-worker-0"]  # the running one was killed, the succeeded one kept


def test_running_to_failed_when_all_finish_with_too_few_successes():
    # minAvailable below the tasks' minima: the per-task check is skipped, only the total counts
    h = Harness(make_job(minAvailable=1, annotations=NO_GANG_RESTART))
    h.start()
    h.set_phase("j-worker-0", "Failed", exit_code=3)
    h.set_phase("j-worker-1", "Failed", exit_code=3)
    h.sync()
    assert h.phase() == "Failed"
    assert h.job().status.state.reason == "PodsFailed"
    assert h.job().status.failed == 2


def test_running_to_failed_when_a_task_misses_its_min_available():
    h = Harness(make_job(minAvailable=3, annotations=NO_GANG_RESTART,
                         tasks=[task("ps", 1), task("worker", 2)]))
    h.start()
    h.set_phase("j-ps-0", "Failed", exit_code=1)
    h.set_phase("j-worker-0", "Succeeded")
    h.set_phase("j-worker-1", "Succeeded")
    h.sync()
    assert h.phase() == "Failed"
    assert h.job().status.state.reason == "TaskMinAvailableNotSucceeded"


def test_running_back_to_pending_when_too_many_pods_pending():
    h = Harness(make_job(minAvailable=2, tasks=[task("worker", 3)], annotations=NO_GANG_RESTART))
    h.start()
    assert h.phase() == "Running"
    h.evict("j-worker-0")
    h.evict("j-worker-1")
    h.sync()
    # both recreated (Pending): 2 pending > 3 replicas - 2 minAvailable
    assert h.phase() == "Pending"
    assert h.job().status.state.reason == "PodsPending"
    assert h.job().status.pending == 2


def test_scale_down_deletes_extra_pods():
    h = Harness(make_job(minAvailable=1, tasks=[task("worker", 3)]))
    h.start()
    job = h.job()
    job.spec.tasks[0].replicas = 1
    h.cluster.update(job)
    h.sync()
    assert sorted(h.pods()) == ["j-worker-0"]


def test_restart_job_goes_restarting_then_pending_and_new_podgroup():
    h = Harness(make_job(policies=[{"event": "PodFailed", "action": "RestartJob"}]))
    h.start()
    old_pg_uid = h.pg().metadata.uid
    h.t = 10
    h.set_phase("j-worker-1", "Failed", exit_code=1)
    h.sync()
    job = h.job()
    assert job.status.retry_count == 1
    assert job.status.version == 1
    assert job.status.state.phase == "Pending"  # Restarting lasted until the old pods were gone
    statuses = [c.status for c in job.status.conditions]
    assert statuses[-2:] == ["Restarting", "Pending"]
    assert any("Running -> Restarting" in e.message for e in h.events("JobStatusUpdate"))
    pg = h.pg()
    assert pg is not None and pg.metadata.uid != old_pg_uid and pg.status.phase == "Pending"
    assert h.pods() == {}
    h.enqueue()
    h.sync()
    pods = h.pods()
    assert sorted(pods) == ["j-worker-0", "j-worker-1"]
    assert {p.annotations["volcano.sh/job-version"] for p in pods.values()} == {"1"}
    assert {p.annotations["volcano.sh/job-retry-count"] for p in pods.values()} == {"1"}


def test_restarting_stays_while_pods_terminate():
    h = Harness(make_job(policies=[{"event": "PodEvicted", "action": "RestartJob"}]), grace=30)
    h.start()
    for p in h.pods().values():
        p.spec.node_name = "n1"
    h.evict("j-worker-0")  # terminating for 30 s
    h.sync()
    # the controller deleted worker-1 at once (in-memory delete); worker-0 is still terminating
    assert h.phase() == "Restarting"
    assert h.job().status.terminating == 1
    h.t = 30
    h.cluster.finish_deletions()
    h.sync()
    assert h.phase() == "Pending"


def test_max_retry_exhaustion_fails_the_job_and_keeps_failed_pods():
    h = Harness(make_job(maxRetry=2, policies=[{"event": "PodFailed", "action": "RestartJob"}]))
    h.start()
    h.set_phase("j-worker-0", "Failed", exit_code=1)
    h.sync()
    assert (h.phase(), h.job().status.retry_count) == ("Pending", 1)
    h.enqueue()
    h.sync()
    h.run_all()
    h.sync()
    assert h.phase() == "Running"
    h.set_phase("j-worker-1", "Failed", exit_code=1)
    h.sync()
    job = h.job()
    assert job.status.state.phase == "Failed"
    assert job.status.retry_count == 2
    assert job.status.state.reason == "MaxRetryExceeded"
    # last retry: the failed pod is retained, the running one killed
    assert sorted(h.pods()) == ["j-worker-1"]
    assert job.status.failed == 1


def test_retry_counting_across_restarts():
    h = Harness(make_job(maxRetry=5, policies=[{"event": "PodFailed", "action": "RestartJob"}]))
    h.start()
    for n in range(1, 4):
        h.set_phase("j-worker-0", "Failed", exit_code=1)
        h.sync()
        assert h.job().status.retry_count == n
        assert h.job().status.version == n
        h.enqueue()
        h.sync()
        h.run_all()
        h.sync()
        assert h.phase() == "Running"


def test_abort_job_goes_aborting_then_aborted_keeping_finished_pods():
    h = Harness(make_job(tasks=[task("worker", 3)], minAvailable=2), grace=10)
    h.start()
    h.set_phase("j-worker-0", "Succeeded")
    h.sync()
    h.evict("j-worker-1", "preempt")  # terminating for 10 s, not yet gone
    h.command("AbortJob")
    h.sync()
    assert h.phase() == "Aborting"
    assert h.state.commands == {}
    assert h.events("CommandIssued")
    h.t = 10
    h.cluster.finish_deletions()
    h.sync()
    job = h.job()
    assert job.status.state.phase == "Aborted"
    assert sorted(h.pods()) == ["j-worker-0"]
    assert h.pg() is None


def test_complete_job_and_terminate_job_actions():
    for action, final in (("CompleteJob", "Completed"), ("TerminateJob", "Terminated")):
        h = Harness(make_job())
        h.start()
        h.command(action)
        h.sync()
        job = h.job()
        assert job.status.state.phase == final
        statuses = [c.status for c in job.status.conditions]
        assert statuses[-2:] == [{"Completed": "Completing", "Terminated": "Terminating"}[final], final]
        assert h.pods() == {}


def test_suspend_and_resume_commands():
    h = Harness(make_job())
    h.start()
    h.command("AbortJob")  # vcctl job suspend
    h.sync()
    assert h.phase() == "Aborted"
    assert h.pods() == {} and h.pg() is None
    assert h.sync() is False
    h.command("ResumeJob")  # vcctl job resume
    h.sync()
    job = h.job()
    assert job.status.state.phase == "Pending"
    assert job.status.retry_count == 1
    assert [c.status for c in job.status.conditions][-3:] == ["Aborted", "Restarting", "Pending"]
    assert h.pg() is not None
    h.enqueue()
    h.sync()
    h.run_all()
    h.sync()
    assert h.phase() == "Running"


def test_resume_of_a_running_job_is_a_plain_sync():
    h = Harness(make_job())
    h.start()
    h.command("ResumeJob")
    h.sync()
    assert h.phase() == "Running"
    assert h.job().status.retry_count == 0


def test_finished_job_ignores_actions():
    h = Harness(make_job())
    h.start()
    h.run_all()
    for name in h.pods():
        h.set_phase(name, "Succeeded")
    h.sync()
    assert h.phase() == "Completed"
    h.command("RestartJob")
    h.sync()
    assert h.phase() == "Completed"
    assert h.state.commands == {}


def test_ttl_deletes_finished_job_and_what_it_owns():
    h = Harness(make_job(ttlSecondsAfterFinished=60, plugins={"svc": []}))
    h.start()
    h.t = 10
    for name in h.pods():
        h.set_phase(name, "Succeeded")
    h.sync()
    assert h.phase() == "Completed"
    assert h.ctl.next_timer(10) == 70
    h.t = 69
    h.sync()
    assert "ns/j" in h.state.jobs
    h.t = 70
    assert h.sync() is True
    assert "ns/j" not in h.state.jobs
    assert h.pods() == {}
    assert not h.state.others.get("Service") and not h.state.others.get("ConfigMap")
    assert h.events("TTLExpired")


def test_ttl_does_not_apply_to_aborted_jobs():
    h = Harness(make_job(ttlSecondsAfterFinished=0))
    h.start()
    h.command("AbortJob")
    h.sync()
    h.t = 1000
    h.sync()
    assert h.phase() == "Aborted"


def test_defaults_are_applied_once_and_uid_given():
    from magma.api.objects import Job

    job = Job.model_validate({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                              "metadata": {"name": "bare", "namespace": "ns"},
                              "spec": {"tasks": [task("", 2)]}})
    h = Harness(job)
    h.sync()
    j = h.job("ns/bare")
    assert j.metadata.uid
    assert j.spec.queue == "default" and j.spec.max_retry == 3 and j.spec.min_available == 2
    assert j.spec.tasks[0].name == "default0"
    assert h.sync() is False


def test_deleting_a_job_collects_its_objects():
    h = Harness(make_job(plugins={"svc": [], "ssh": []}))
    h.start()
    job = h.job()
    h.cluster.delete("Job", job.key)
    h.sync()
    assert h.pods() == {}
    assert h.state.podgroups == {}
    assert all(not objs for objs in h.state.others.values())


def test_job_deleted_hook():
    h = Harness(make_job())
    h.start()
    job = h.job()
    h.cluster.delete("Job", job.key)
    h.ctl.job_deleted(job)
    assert h.pods() == {} and h.state.podgroups == {}


def test_depends_on_creates_dependent_task_pods_later():
    h = Harness(make_job(minAvailable=1, tasks=[task("master", 1), task("worker", 2, dependsOn={"name": ["master"]})]))
    h.sync()
    h.enqueue()
    h.sync()
    assert sorted(h.pods()) == ["j-master-0"]
    h.set_phase("j-master-0", "Running")
    h.sync()
    assert sorted(h.pods()) == ["j-master-0", "j-worker-0", "j-worker-1"]


def test_resume_while_aborting_goes_restarting():
    h = Harness(make_job(), grace=10)
    h.start()
    h.evict("j-worker-0")  # terminating for 10 s: the abort cannot finish yet
    h.command("AbortJob", name="abort")
    h.sync()
    assert h.phase() == "Aborting"
    h.command("ResumeJob", name="resume")
    h.sync()
    assert h.phase() == "Restarting"
    assert h.job().status.retry_count == 1
    h.t = 10
    h.cluster.finish_deletions()
    h.sync()
    assert h.phase() == "Pending"


def test_commands_run_in_creation_order():
    h = Harness(make_job())
    h.start()
    h.t = 1
    h.command("AbortJob", name="b-first")
    h.t = 2
    h.command("ResumeJob", name="a-second")
    h.sync()
    assert h.phase() == "Pending"
    assert h.job().status.retry_count == 1


def test_controller_contract_for_the_simulator():
    from magma.controller import Controller

    h = Harness(make_job(ttlSecondsAfterFinished=5))
    ctl = h.ctl
    assert isinstance(ctl, Controller)
    assert ctl.sync() is True and ctl.sync() is False
    assert ctl.next_timer(0) is None
