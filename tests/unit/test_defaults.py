"""Volcano's mutating defaults (magma.api.defaults)."""

from pathlib import Path

from magma.api.defaults import (
    BUILTIN_FILE,
    builtin_priority_classes,
    builtin_queues,
    default_job,
    default_podgroup,
    default_priority_class,
    default_queue,
    priority_of,
)
from magma.api.load import load_paths, load_text
from magma.api.objects import Job, PodGroup, PriorityClass, Queue

SEED = Path(__file__).resolve().parents[1] / "data" / "seed"


def one(text: str, cls):
    r = load_text(text, "x.yaml")
    assert not [p for p in r.problems if p.severity == "error"], r.problems
    (obj,) = [o for o in r.objects if isinstance(o, cls)]
    return obj


BARE_JOB = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: bare
spec:
  tasks:
    - replicas: 2
      template:
        spec:
          containers: [{name: c, image: x}]
    - replicas: 3
      minAvailable: 1
      name: ps
      template:
        spec:
          hostNetwork: true
          containers: [{name: c, image: x}]
"""


def test_job_defaults_fill_what_volcano_fills():
    job = one(BARE_JOB, Job)
    d = default_job(job)
    assert d.spec.queue == "default"
    assert d.spec.scheduler_name == "volcano"
    assert d.spec.max_retry == 3
    assert [t.name for t in d.spec.tasks] == ["default0", "ps"]
    assert [t.min_available for t in d.spec.tasks] == [2, 1]
    assert [t.max_retry for t in d.spec.tasks] == [3, 3]
    assert d.spec.min_available == 3  # sum of the tasks' minAvailable
    assert d.spec.policies == []  # Volcano sets no default policies
    assert d.spec.tasks[1].template.spec.model_extra["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert "dnsPolicy" not in (d.spec.tasks[0].template.spec.model_extra or {})
    # Defaulted fields are part of the dump.
    dumped = d.dump()["spec"]
    assert dumped["queue"] == "default" and dumped["minAvailable"] == 3
    assert dumped["tasks"][0]["name"] == "default0"


def test_job_defaults_do_not_touch_the_input_and_keep_the_source():
    job = one(BARE_JOB, Job)
    before = job.dump()
    d = default_job(job)
    assert job.dump() == before
    assert job.spec.queue is None and job.spec.tasks[0].name is None
    assert d is not job and d.spec is not job.spec
    assert d.source.file == "x.yaml"
    assert d.source.line_of(("spec", "tasks", 1, "minAvailable")) == 12


def test_job_defaults_keep_what_the_user_set():
    job = one(BARE_JOB.replace("spec:\n  tasks:", "spec:\n  queue: q1\n  schedulerName: other\n  maxRetry: 7\n"
                                                 "  minAvailable: 2\n  tasks:", 1), Job)
    d = default_job(job)
    assert (d.spec.queue, d.spec.scheduler_name, d.spec.max_retry, d.spec.min_available) == ("q1", "other", 7, 2)


def test_job_zero_values_count_as_unset_like_go():
    job = one(BARE_JOB.replace("spec:\n  tasks:", "spec:\n  maxRetry: 0\n  minAvailable: 0\n  tasks:", 1), Job)
    d = default_job(job)
    assert d.spec.max_retry == 3
    assert d.spec.min_available == 3


def test_job_plugins_that_need_svc_and_ssh_get_them():
    job = one(BARE_JOB.replace("spec:\n  tasks:", "spec:\n  plugins:\n    mpi: ['--master=ps']\n  tasks:", 1), Job)
    d = default_job(job)
    assert d.spec.plugins == {"mpi": ["--master=ps"], "svc": [], "ssh": []}
    job = one(BARE_JOB.replace("spec:\n  tasks:", "spec:\n  plugins:\n    pytorch: []\n  tasks:", 1), Job)
    assert default_job(job).spec.plugins == {"pytorch": [], "svc": []}
    job = one(BARE_JOB.replace("spec:\n  tasks:", "spec:\n  plugins:\n    env: []\n  tasks:", 1), Job)
    assert default_job(job).spec.plugins == {"env": []}
    assert job.spec.plugins == {"env": []}


def test_partition_policy_sets_task_min_available():
    text = BARE_JOB.replace("    - replicas: 2\n", "    - replicas: 4\n      partitionPolicy: {totalPartitions: 2, "
                                                  "partitionSize: 2, minPartitions: 1}\n", 1)
    d = default_job(one(text, Job))
    assert d.spec.tasks[0].min_available == 2
    assert d.spec.min_available == 3


def test_seed_job_defaults():
    r = load_paths([SEED / "s04-06" / "05-job.yaml"])
    (job,) = r.of_kind(Job)
    d = default_job(job)
    assert d.spec.min_available == 4 and d.spec.tasks[0].min_available == 4
    assert d.spec.queue == "ai-team-1" and d.spec.max_retry == 3
    assert d.spec.plugins == {"env": [], "ssh": [], "svc": []}


QUEUE = """\
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: q
spec:
  weight: 0
"""


def test_queue_defaults():
    q = one(QUEUE, Queue)
    d = default_queue(q)
    assert d.spec.reclaimable is True
    assert d.spec.weight == 1
    assert d.status.state == "Open"
    assert q.spec.reclaimable is None and q.spec.weight == 0 and q.status.state is None
    assert d.source is q.source


def test_queue_defaults_keep_user_values():
    q = one(QUEUE.replace("weight: 0", "weight: 5\n  reclaimable: false") + "status:\n  state: Closed\n", Queue)
    d = default_queue(q)
    assert (d.spec.weight, d.spec.reclaimable, d.status.state) == (5, False, "Closed")


def test_root_queue_stays_unreclaimable():
    q = one(QUEUE.replace("name: q", "name: root"), Queue)
    assert default_queue(q).spec.reclaimable is False


def test_podgroup_defaults():
    pg = one("apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: g, namespace: n}\n"
             "spec: {minMember: 2}\n", PodGroup)
    assert default_podgroup(pg).spec.queue == "default"
    assert default_podgroup(pg, namespace_queue="team-a").spec.queue == "team-a"
    assert pg.spec.queue is None
    pg2 = one("apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: g}\n"
              "spec: {queue: mine}\n", PodGroup)
    assert default_podgroup(pg2, namespace_queue="team-a").spec.queue == "mine"


def test_builtins():
    root, default = builtin_queues()
    assert (root.name, root.spec.reclaimable, default.name, default.spec.reclaimable) == ("root", False,
                                                                                          "default", True)
    assert root.source.file == BUILTIN_FILE
    assert {pc.name: pc.value for pc in builtin_priority_classes()} == {
        "system-cluster-critical": 2000000000, "system-node-critical": 2000001000}


def test_priority_of():
    pcs = [
        PriorityClass.model_validate({"metadata": {"name": "high"}, "value": 100}),
        PriorityClass.model_validate({"metadata": {"name": "base"}, "value": 5, "globalDefault": True}),
    ]
    assert priority_of("high", pcs) == 100
    assert priority_of(None, pcs) == 5  # the global default
    assert priority_of("missing", pcs) == 5  # Volcano falls back to the default
    assert priority_of(None, []) == 0
    assert priority_of("system-node-critical", []) == 2000001000
    assert default_priority_class({pc.name: pc for pc in pcs}).name == "base"


def test_job_defaults_missing_is_false_only_when_default_job_changes_nothing():
    from magma.api.defaults import job_defaults_missing

    bare = one(BARE_JOB, Job)
    assert job_defaults_missing(bare)
    done = default_job(bare)
    assert not job_defaults_missing(done)
    assert default_job(done).spec.model_dump() == done.spec.model_dump()
    # each missing default alone is noticed
    for change in (lambda s: setattr(s, "queue", ""), lambda s: setattr(s, "scheduler_name", None),
                   lambda s: setattr(s, "max_retry", 0), lambda s: setattr(s, "min_available", None),
                   lambda s: setattr(s.tasks[1], "name", ""), lambda s: setattr(s.tasks[0], "min_available", None),
                   lambda s: setattr(s.tasks[0], "max_retry", None),
                   lambda s: setattr(s.tasks[0].template.spec, "hostNetwork", True),
                   lambda s: setattr(s, "plugins", {"mpi": [], "svc": []}),
                   lambda s: setattr(s, "plugins", {"pytorch": []})):
        job = default_job(done)
        change(job.spec)
        assert job_defaults_missing(job)
        assert default_job(job).spec.model_dump() != job.spec.model_dump()
    job = default_job(done)
    job.spec.plugins = {"mpi": [], "svc": [], "ssh": []}
    job.spec.tasks[0].template.spec.hostNetwork = True
    job.spec.tasks[0].template.spec.dnsPolicy = "Default"
    assert not job_defaults_missing(job)
    assert default_job(job).spec.model_dump() == job.spec.model_dump()


def test_job_defaults_missing_agrees_with_default_job_on_every_example():
    from magma.api.defaults import job_defaults_missing

    jobs = [o for o in load_paths([SEED.parents[2] / "examples", SEED.parent]).objects if isinstance(o, Job)]
    assert len(jobs) > 20
    for job in jobs + [default_job(j) for j in jobs]:
        if not job_defaults_missing(job):
            assert default_job(job).spec.model_dump() == job.spec.model_dump()
