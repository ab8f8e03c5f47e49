"""Admission rules (magma.api.admission) on the seed worlds and on broken variants of them.

Each broken variant is the seed's YAML text with one small edit. The tests check the exact field of the problem
and that its line number points at that field in the edited text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from magma.api.admission import (
    World,
    admit,
    check_job_update,
    check_queue_delete,
    dotted,
)
from magma.api.load import load_text
from magma.api.objects import Job
from magma.api.problems import Problem

SEED = Path(__file__).resolve().parents[1] / "data" / "seed"
WORLDS = ("s04-06", "s06-2", "s11-12")

JOB = "s04-06/05-job.yaml"
PODGROUP = "s04-06/04-podgroup.yaml"
POD = "s04-06/04-pod.yaml"
QUEUE = "s04-06/06-queue.yaml"
PCS = "s04-06/00-referenced.yaml"
HIER = "s06-2/06-hierarchy.yaml"
EJOB = "s11-12/12-emergency-job.yaml"
EQUEUES = "s11-12/12-queues.yaml"


def seed(world: str) -> dict[str, str]:
    return {f"{world}/{p.name}": p.read_text(encoding="utf-8") for p in sorted((SEED / world).glob("*.yaml"))}


def edit(texts: dict[str, str], file: str, old: str, new: str) -> dict[str, str]:
    """The texts with one occurrence of `old` in `file` replaced by `new` (old must occur exactly once)."""
    assert texts[file].count(old) == 1, f"{old!r} occurs {texts[file].count(old)} times in {file}"
    return {**texts, file: texts[file].replace(old, new)}


def append(texts: dict[str, str], file: str, more: str) -> dict[str, str]:
    return {**texts, file: texts[file] + more}


@dataclass
class Outcome:
    texts: dict[str, str]
    load_problems: list[Problem]
    problems: list[Problem]  # admission
    world: World

    @property
    def all(self) -> list[Problem]:
        return self.load_problems + self.problems

    def errors(self) -> list[Problem]:
        return [p for p in self.all if p.severity == "error"]

    def warnings(self) -> list[Problem]:
        return [p for p in self.all if p.severity == "warning"]

    def error_fields(self) -> set[tuple[str, str]]:
        return {(p.key, p.field) for p in self.errors()}

    def line(self, p: Problem) -> str:
        return self.texts[p.file].splitlines()[p.line - 1]

    def expect(self, field: str, line_has: str, *, severity: str = "error", key: str | None = None,
               says: tuple[str, ...] = ()) -> Problem:
        """The problem on `field` (of object `key`): its line contains `line_has`, its message every `says`."""
        found = [p for p in self.all if p.field == field and p.severity == severity and (key is None or p.key == key)]
        assert found, f"no {severity} on {field} ({key}); got:\n" + "\n".join(p.format() for p in self.all)
        p = found[0]
        assert p.line >= 1
        assert line_has in self.line(p), f"line {p.line} of {p.file} is {self.line(p)!r}, expected {line_has!r}"
        for s in says:
            assert s in p.message, f"{s!r} not in {p.message!r}"
        return p


def run(texts: dict[str, str]) -> Outcome:
    objects, load_problems = [], []
    for name, text in texts.items():
        r = load_text(text, name)
        assert not r.unreadable, r.unreadable
        objects += r.objects
        load_problems += r.problems
    world = World.from_objects(objects)
    return Outcome(texts, load_problems, admit(world), world)


# ---------------------------------------------------------------- the seed worlds


@pytest.mark.parametrize("name", WORLDS)
def test_seed_world_has_no_errors(name):
    out = run(seed(name))
    assert out.errors() == [], "\n".join(p.format() for p in out.errors())
    for p in out.all:
        assert p.file in out.texts and p.line >= 1


def test_seed_warnings_are_the_expected_ones():
    out = run(seed("s04-06"))
    out.expect("spec.minMember", "minMember: 4", severity="warning", says=("only 1 pod",))
    out.expect("spec.guarantee.resource", "resource:", severity="warning", says=("Volcano v1.15+", "deserved"))
    out = run(seed("s06-2"))
    assert out.warnings() == []


def test_world_has_builtins():
    w = World()
    assert {"default", "root"} <= set(w.queues)
    assert w.priority_classes["system-cluster-critical"].value == 2000000000
    assert w.priority_classes["system-node-critical"].value == 2000001000


def test_problem_fields_are_dotted():
    assert dotted(("spec", "tasks", 0, "minAvailable")) == "spec.tasks[0].minAvailable"
    assert dotted(("spec", "capability", "nvidia.com/gpu")) == "spec.capability[nvidia.com/gpu]"
    assert dotted(("spec", "guarantee", "resource", "cpu")) == "spec.guarantee.resource.cpu"


# ---------------------------------------------------------------- Job


def test_job_without_tasks():
    texts = seed("s04-06")
    texts[JOB] = texts[JOB].split("  tasks:\n")[0] + "  tasks: []\n"
    out = run(texts)
    out.expect("spec.tasks", "tasks: []", says=("no tasks",))
    assert out.error_fields() == {("ai-train/pytorch-ddp-training", "spec.tasks")}


def test_task_min_available_above_replicas():
    out = run(edit(seed("s04-06"), JOB, "    - replicas: 4\n", "    - replicas: 4\n      minAvailable: 5\n"))
    out.expect("spec.tasks[0].minAvailable", "minAvailable: 5", says=("5", "replicas 4"))
    assert out.error_fields() == {("ai-train/pytorch-ddp-training", "spec.tasks[0].minAvailable")}


SECOND_TASK = """\
    - replicas: 1
      name: worker
      template:
        spec:
          containers:
            - name: torch
              image: x
"""


def test_duplicate_task_names():
    out = run(append(seed("s11-12"), EJOB, SECOND_TASK))
    p = out.expect("spec.tasks[1].name", "name: worker", says=("duplicate task name 'worker'",))
    assert p.line == len(out.texts[EJOB].splitlines()) - 5
    assert {f for _, f in out.error_fields()} == {"spec.tasks[1].name"}


def test_defaulted_task_names_can_collide():
    texts = append(seed("s11-12"), EJOB, SECOND_TASK.replace("name: worker", "name: default1"))
    texts = edit(texts, EJOB, "      name: worker\n", "")
    texts = edit(texts, EJOB, "    - replicas: 1\n", "    - replicas: 1\n    - replicas: 1\n"
                                                      "      template: {spec: {containers: [{name: c}]}}\n")
    out = run(texts)
    # tasks: [unnamed -> default0, unnamed -> default1, default1]
    out.expect("spec.tasks[2].name", "name: default1", says=("duplicate",))


def test_job_min_available_above_total_replicas():
    out = run(edit(seed("s04-06"), JOB, "  minAvailable: 4\n", "  minAvailable: 5\n"))
    out.expect("spec.minAvailable", "minAvailable: 5", says=("5", "4 replicas"))
    assert out.error_fields() == {("ai-train/pytorch-ddp-training", "spec.minAvailable")}


def test_job_name_not_dns1123():
    out = run(edit(seed("s04-06"), JOB, "  name: pytorch-ddp-training\n", "  name: PyTorch_DDP\n"))
    out.expect("metadata.name", "name: PyTorch_DDP", says=("rename",))
    assert {f for _, f in out.error_fields()} == {"metadata.name"}


def test_job_name_too_long():
    long = "a" * 64
    out = run(edit(seed("s04-06"), JOB, "  name: pytorch-ddp-training\n", f"  name: {long}\n"))
    out.expect("metadata.name", long, says=("64 characters",))


def test_task_name_not_dns1123():
    out = run(edit(seed("s04-06"), JOB, "      name: worker\n", "      name: Worker_1\n"))
    out.expect("spec.tasks[0].name", "name: Worker_1", says=("DNS-1123",))
    assert {f for _, f in out.error_fields()} == {"spec.tasks[0].name"}


def test_pod_name_too_long_is_rejected():
    name = "j" * 55  # 55 + len("-worker-0") = 64
    out = run(edit(seed("s04-06"), JOB, "  name: pytorch-ddp-training\n", f"  name: {name}\n"))
    out.expect("spec.tasks[0].name", "name: worker", says=("64 characters",))
    assert {f for _, f in out.error_fields()} == {"spec.tasks[0].name"}


def test_long_replica_pod_names_with_svc_are_rejected_without_are_warned():
    name = "j" * 54  # <job>-worker-0 is 63 characters, <job>-worker-99 is 64
    texts = edit(seed("s04-06"), JOB, "  name: pytorch-ddp-training\n", f"  name: {name}\n")
    texts = edit(texts, JOB, "  minAvailable: 4\n", "")
    out = run(edit(texts, JOB, "    - replicas: 4\n", "    - replicas: 100\n"))
    out.expect("spec.tasks[0].name", "name: worker", says=("svc plugin",))
    texts = edit(seed("s11-12"), EJOB, "  name: emergency-hotfix-training\n", f"  name: {name}\n")
    out = run(edit(texts, EJOB, "    - replicas: 2\n", "    - replicas: 100\n"))
    out.expect("spec.tasks[0].name", "name: worker", severity="warning", says=("64 characters",))
    assert out.errors() == []


def test_unknown_job_plugin():
    out = run(edit(seed("s04-06"), JOB, "    svc: []\n", "    svc: []\n    horovod: []\n"))
    out.expect("spec.plugins.horovod", "horovod: []", says=("unknown job plugin", "env, svc, ssh"))
    assert {f for _, f in out.error_fields()} == {"spec.plugins.horovod"}


def test_known_job_plugins_pass():
    out = run(edit(seed("s04-06"), JOB, "    svc: []\n", "    svc: []\n    pytorch: ['--port=23456']\n"))
    assert out.errors() == []


def test_mpi_plugin_needs_its_master_task():
    out = run(edit(seed("s04-06"), JOB, "    env: []\n", "    mpi: []\n"))
    out.expect("spec.plugins.mpi", "mpi: []", says=("'master'",))
    out = run(edit(seed("s04-06"), JOB, "    env: []\n", "    mpi: ['--master=worker']\n"))
    assert out.errors() == []


def policies(text: str) -> dict[str, str]:
    return edit(seed("s04-06"), JOB, "  priorityClassName: high\n", "  priorityClassName: high\n  policies:\n" + text)


def test_policy_with_event_and_exit_code():
    out = run(policies("    - event: PodFailed\n      exitCode: 3\n      action: RestartJob\n"))
    out.expect("spec.policies[0].exitCode", "exitCode: 3", says=("both",))
    assert {f for _, f in out.error_fields()} == {"spec.policies[0].exitCode"}


def test_policy_with_neither_event_nor_exit_code():
    out = run(policies("    - action: RestartJob\n"))
    out.expect("spec.policies[0]", "- action: RestartJob", says=("neither",))


def test_policy_duplicate_event():
    out = run(policies("    - event: PodEvicted\n      action: RestartJob\n"
                       "    - events: [PodFailed, PodEvicted]\n      action: AbortJob\n"))
    out.expect("spec.policies[1].events[1]", "events: [PodFailed, PodEvicted]", says=("PodEvicted",
                                                                                     "spec.policies[0].event"))
    assert {f for _, f in out.error_fields()} == {"spec.policies[1].events[1]"}


def test_policy_duplicate_exit_code():
    out = run(policies("    - exitCode: 137\n      action: RestartJob\n"
                       "    - exitCode: 137\n      action: AbortJob\n"))
    p = out.expect("spec.policies[1].exitCode", "exitCode: 137", says=("137",))
    lines = [i + 1 for i, ln in enumerate(out.texts[JOB].splitlines()) if "exitCode: 137" in ln]
    assert p.line == lines[1]  # the second one


def test_policy_exit_code_zero():
    out = run(policies("    - exitCode: 0\n      action: RestartJob\n"))
    out.expect("spec.policies[0].exitCode", "exitCode: 0", says=("0",))


def test_policy_any_event_with_others():
    out = run(policies("    - event: '*'\n      action: AbortJob\n    - event: PodFailed\n      action: RestartJob\n"))
    out.expect("spec.policies[0].event", "event: '*'", says=("PodFailed",))


def test_policy_unknown_event_and_action():
    out = run(policies("    - event: PodCrashed\n      action: Restart\n"))
    out.expect("spec.policies[0].event", "event: PodCrashed", says=("unknown event",))
    out.expect("spec.policies[0].action", "action: Restart", says=("unknown action", "RestartJob"))
    # Events Volcano keeps for itself are refused too.
    out = run(policies("    - event: OutOfSync\n      action: RestartJob\n"))
    out.expect("spec.policies[0].event", "event: OutOfSync")


def test_policy_missing_action():
    out = run(policies("    - event: PodFailed\n"))
    out.expect("spec.policies[0]", "- event: PodFailed", says=("no action",))


def test_policy_bad_timeout():
    out = run(policies("    - event: PodPending\n      action: RestartPod\n      timeout: 10 minutes\n"))
    out.expect("spec.policies[0].timeout", "timeout: 10 minutes")
    out = run(policies("    - event: PodPending\n      action: RestartPod\n      timeout: 1h30m\n"))
    assert out.errors() == []


def test_task_level_policies():
    out = run(edit(seed("s04-06"), JOB, "      name: worker\n",
                   "      name: worker\n      policies:\n        - events: [PodFailed, Bogus]\n"
                   "          action: RestartTask\n"))
    out.expect("spec.tasks[0].policies[0].events[1]", "events: [PodFailed, Bogus]", says=("Bogus",))


def test_job_queue_missing():
    out = run(edit(seed("s04-06"), JOB, "  queue: ai-team-1\n", "  queue: ai-team-9\n"))
    out.expect("spec.queue", "queue: ai-team-9", says=("does not exist", "did you mean 'ai-team-1'"))
    assert out.error_fields() == {("ai-train/pytorch-ddp-training", "spec.queue")}


def test_job_and_podgroup_queue_closed():
    out = run(append(seed("s04-06"), QUEUE, "status:\n  state: Closed\n"))
    out.expect("spec.queue", "queue: ai-team-1", key="ai-train/pytorch-ddp-training", says=("Closed",))
    out.expect("spec.queue", "queue: ai-team-1", key="ai-train/training-job-a", says=("Closed",))
    assert out.error_fields() == {("ai-train/pytorch-ddp-training", "spec.queue"),
                                  ("ai-train/training-job-a", "spec.queue")}


def test_job_in_root_queue():
    out = run(edit(seed("s04-06"), JOB, "  queue: ai-team-1\n", "  queue: root\n"))
    out.expect("spec.queue", "queue: root", says=("root queue",))


def test_job_in_queue_with_children():
    out = run(edit(seed("s11-12"), EJOB, "  queue: emergency\n", "  queue: ai-org\n"))
    out.expect("spec.queue", "queue: ai-org", says=("4 child queue", "team-nlp"))
    assert {f for _, f in out.error_fields()} == {"spec.queue"}


def test_job_default_queue_exists():
    out = run(edit(seed("s04-06"), JOB, "  queue: ai-team-1\n", ""))
    assert out.errors() == []


def test_job_priority_class_missing():
    out = run(edit(seed("s04-06"), JOB, "  priorityClassName: high\n", "  priorityClassName: highest\n"))
    out.expect("spec.priorityClassName", "priorityClassName: highest", says=("does not exist", "'high'"))
    assert out.error_fields() == {("ai-train/pytorch-ddp-training", "spec.priorityClassName")}


def test_job_system_priority_class_is_builtin():
    out = run(edit(seed("s04-06"), JOB, "  priorityClassName: high\n",
                   "  priorityClassName: system-cluster-critical\n"))
    assert out.errors() == []


def test_task_template_priority_class_missing():
    out = run(edit(seed("s11-12"), EJOB, "        spec:\n          containers:\n",
                   "        spec:\n          priorityClassName: nope\n          containers:\n"))
    out.expect("spec.tasks[0].template.spec.priorityClassName", "priorityClassName: nope")


def test_task_template_without_containers():
    texts = seed("s11-12")
    texts[EJOB] = texts[EJOB].split("          containers:\n")[0] + "          containers: []\n"
    out = run(texts)
    out.expect("spec.tasks[0].template.spec.containers", "containers: []")


@pytest.mark.parametrize("field,line", [
    ("minAvailable", "  minAvailable: -1\n"),
    ("maxRetry", "  maxRetry: -1\n"),
    ("ttlSecondsAfterFinished", "  ttlSecondsAfterFinished: -1\n"),
])
def test_negative_job_numbers_are_rejected_at_load(field, line):
    texts = edit(seed("s04-06"), JOB, "  minAvailable: 4\n", line)
    out = run(texts)
    out.expect(f"spec.{field}", line.strip())


def test_negative_job_numbers_are_rejected_by_admission():
    out = run(seed("s04-06"))
    job = next(iter(j for j in out.world.jobs.values()))
    job.spec.max_retry = -1
    job.spec.ttl_seconds_after_finished = -5
    job.spec.tasks[0].replicas = -2
    problems = admit(out.world)
    fields = {p.field for p in problems if p.severity == "error"}
    assert {"spec.maxRetry", "spec.ttlSecondsAfterFinished", "spec.tasks[0].replicas"} <= fields


def test_gang_off_warning_for_job():
    out = run(edit(seed("s04-06"), JOB, "  minAvailable: 4\n", "  minAvailable: 1\n"))
    out.expect("spec.minAvailable", "minAvailable: 1", severity="warning", says=("gang scheduling", "4"))
    assert out.errors() == []


def test_gang_off_warning_from_task_min_available():
    texts = edit(seed("s04-06"), JOB, "  minAvailable: 4\n", "")
    out = run(edit(texts, JOB, "    - replicas: 4\n", "    - replicas: 4\n      minAvailable: 1\n"))
    out.expect("spec.tasks[0].minAvailable", "minAvailable: 1", severity="warning", says=("gang",))


def test_job_scheduler_name_warning():
    out = run(edit(seed("s04-06"), JOB, "  schedulerName: volcano\n", "  schedulerName: default-scheduler\n"))
    out.expect("spec.schedulerName", "schedulerName: default-scheduler", severity="warning")
    assert out.errors() == []


def test_task_dependencies():
    texts = append(seed("s11-12"), EJOB, SECOND_TASK.replace("name: worker", "name: ps")
                   + "      dependsOn: {name: [worker]}\n")
    assert run(texts).errors() == []
    out = run(append(seed("s11-12"), EJOB, SECOND_TASK.replace("name: worker", "name: ps")
                     + "      dependsOn:\n        name: [wrker]\n"))
    out.expect("spec.tasks[1].dependsOn.name[0]", "name: [wrker]", says=("'worker'",))
    texts = edit(seed("s11-12"), EJOB, "      name: worker\n", "      name: worker\n      dependsOn: {name: [ps]}\n")
    out = run(append(texts, EJOB, SECOND_TASK.replace("name: worker", "name: ps")
                     + "      dependsOn: {name: [worker]}\n"))
    out.expect("spec.tasks[0].dependsOn", "dependsOn: {name: [ps]}", says=("cycle",))


def test_min_success_above_replicas_warns():
    out = run(edit(seed("s04-06"), JOB, "  minAvailable: 4\n", "  minAvailable: 4\n  minSuccess: 5\n"))
    out.expect("spec.minSuccess", "minSuccess: 5", severity="warning")


# ---------------------------------------------------------------- Queue


def test_queue_state_must_be_open_or_closed():
    out = run(append(seed("s04-06"), QUEUE, "status:\n  state: Closing\n"))
    out.expect("status.state", "state: Closing", key="ai-team-1", says=("Open or Closed",))


def test_queue_negative_quantity():
    out = run(edit(seed("s04-06"), QUEUE, '    cpu: "256"\n', '    cpu: "-1"\n'))
    out.expect("spec.capability.cpu", 'cpu: "-1"', says=("negative",))


def test_queue_fractional_gpu():
    out = run(edit(seed("s04-06"), QUEUE, '    nvidia.com/gpu: "64"\n', '    nvidia.com/gpu: "0.5"\n'))
    out.expect("spec.capability[nvidia.com/gpu]", 'nvidia.com/gpu: "0.5"', says=("whole number",))


def test_queue_unparsable_quantity_is_a_load_error():
    out = run(edit(seed("s04-06"), QUEUE, '    cpu: "256"\n', '    cpu: "lots"\n'))
    p = [p for p in out.load_problems if p.severity == "error"][0]
    assert p.field == "spec.capability.cpu" and 'cpu: "lots"' in out.line(p)


DESERVED = "  deserved:\n    cpu: \"32\"\n    memory: \"1024Gi\"\n    nvidia.com/gpu: \"64\"\n"


def test_queue_guarantee_above_deserved():
    out = run(edit(seed("s04-06"), QUEUE, "  guarantee:\n", DESERVED + "  guarantee:\n"))
    p = out.expect("spec.guarantee.resource.cpu", 'cpu: "64"', says=("cpu: 64", "deserved cpu: 32"))
    assert p.line > out.texts[QUEUE].splitlines().index("  guarantee:")
    assert {f for _, f in out.error_fields()} == {"spec.guarantee.resource.cpu"}
    assert not [w for w in out.warnings() if w.kind == "Queue"]  # deserved now covers the guarantee


def test_queue_deserved_above_capability():
    out = run(edit(seed("s04-06"), QUEUE, "  guarantee:\n",
                   DESERVED.replace('"32"', '"64"').replace('gpu: "64"', 'gpu: "128"') + "  guarantee:\n"))
    out.expect("spec.deserved[nvidia.com/gpu]", 'nvidia.com/gpu: "128"', says=("128", "capability nvidia.com/gpu: 64"))
    assert {f for _, f in out.error_fields()} == {"spec.deserved[nvidia.com/gpu]"}


def test_queue_guarantee_above_capability():
    out = run(edit(seed("s04-06"), QUEUE, '    nvidia.com/gpu: "64"\n', '    nvidia.com/gpu: "8"\n'))
    out.expect("spec.guarantee.resource[nvidia.com/gpu]", 'nvidia.com/gpu: "16"', says=("16", "capability"))
    assert {f for _, f in out.error_fields()} == {"spec.guarantee.resource[nvidia.com/gpu]"}


def test_queue_weight_range():
    out = run(edit(seed("s04-06"), QUEUE, "  weight: 2\n", "  weight: 70000\n"))
    out.expect("spec.weight", "weight: 70000")
    out = run(edit(seed("s04-06"), QUEUE, "  weight: 2\n", "  weight: 0\n"))  # defaulted to 1
    assert out.errors() == []


def test_queue_parent_is_itself():
    out = run(edit(seed("s06-2"), HIER, "  parent: ai-org\n---\napiVersion", "  parent: ai-team-1\n---\napiVersion"))
    out.expect("spec.parent", "parent: ai-team-1", key="ai-team-1", says=("itself",))


def test_queue_parent_missing():
    out = run(edit(seed("s06-2"), HIER, "  weight: 3\n  parent: ai-org\n", "  weight: 3\n  parent: ai-orgg\n"))
    out.expect("spec.parent", "parent: ai-orgg", key="ai-team-2", says=("does not exist", "'ai-org'"))
    assert out.error_fields() == {("ai-team-2", "spec.parent")}


def chain(names: list[str], parent: str) -> str:
    out = ""
    for n in names:
        out += f"---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n  name: {n}\nspec:\n" \
               f"  parent: {parent}\n"
        parent = n
    return out


def test_queue_depth_limit():
    # ai-org(1) -> ai-team-2(2) -> d3 -> d4 -> d5 is fine; d6 is too deep.
    out = run(append(seed("s06-2"), HIER, chain(["d3", "d4", "d5"], "ai-team-2")))
    assert out.errors() == []
    out = run(append(seed("s06-2"), HIER, chain(["d3", "d4", "d5", "d6"], "ai-team-2")))
    p = out.expect("spec.parent", "parent: d5", key="d6", says=("depth 6", "maximum of 5"))
    assert out.error_fields() == {("d6", "spec.parent")}
    assert p.line == len(out.texts[HIER].splitlines())


def test_queue_cycle():
    out = run(edit(seed("s06-2"), HIER, "  weight: 10\n  parent: root\n", "  weight: 10\n  parent: ai-team-1\n"))
    out.expect("spec.parent", "parent: ai-team-1", key="ai-org", says=("cycle",))
    out.expect("spec.parent", "parent: ai-org", key="ai-team-1", says=("cycle",))


def test_queue_capability_above_ancestor():
    out = run(edit(seed("s11-12"), EQUEUES, "  weight: 30\n  reclaimable: true\n  guarantee:\n    resource: "
                                            "{ nvidia.com/gpu: \"64\" }\n\n---\napiVersion: scheduling.volcano.sh/"
                                            "v1beta1\nkind: Queue\nmetadata: { name: team-cv }",
                   "  weight: 30\n  reclaimable: true\n  capability:\n    nvidia.com/gpu: \"300\"\n  guarantee:\n"
                   "    resource: { nvidia.com/gpu: \"64\" }\n\n---\napiVersion: scheduling.volcano.sh/v1beta1\n"
                   "kind: Queue\nmetadata: { name: team-cv }"))
    out.expect("spec.capability[nvidia.com/gpu]", 'nvidia.com/gpu: "300"', key="team-nlp",
               says=("300", "ai-org", "256"))
    assert out.error_fields() == {("team-nlp", "spec.capability[nvidia.com/gpu]")}


def test_children_guarantee_sum_above_parent_capability():
    texts = edit(seed("s11-12"), EQUEUES, "  weight: 30\n  reclaimable: true\n  guarantee:\n    resource: "
                                          "{ nvidia.com/gpu: \"64\" }\n\n---\napiVersion: scheduling.volcano.sh/"
                                          "v1beta1\nkind: Queue\nmetadata: { name: team-cv }",
                 "  weight: 30\n  reclaimable: true\n  guarantee:\n    resource: { nvidia.com/gpu: \"160\" }\n\n---\n"
                 "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: { name: team-cv }")
    out = run(texts)
    out.expect("spec.guarantee.resource[nvidia.com/gpu]", 'resource: { nvidia.com/gpu: "16" }', key="emergency",
               says=("sum to nvidia.com/gpu: 272", "capability nvidia.com/gpu: 256", "lower a child's guarantee"))
    assert out.error_fields() == {("emergency", "spec.guarantee.resource[nvidia.com/gpu]")}


def test_children_guarantee_sum_above_parent_guarantee():
    texts = edit(seed("s11-12"), EQUEUES, '    nvidia.com/gpu: "256"\n',
                 '    nvidia.com/gpu: "256"\n  deserved:\n    nvidia.com/gpu: "100"\n  guarantee:\n'
                 '    resource:\n      nvidia.com/gpu: "100"\n')
    out = run(texts)
    out.expect("spec.guarantee.resource[nvidia.com/gpu]", 'nvidia.com/gpu: "64"', key="team-cv",
               says=("sum to nvidia.com/gpu: 128", "guarantee nvidia.com/gpu: 100"))
    assert out.error_fields() == {("team-cv", "spec.guarantee.resource[nvidia.com/gpu]")}
    # The parent now has a guarantee: no compatibility warning about a parent without one.
    assert not [w for w in out.warnings() if w.key == "ai-org"]


def test_children_deserved_sum_above_parent():
    texts = edit(seed("s06-2"), HIER, "  weight: 10\n  parent: root\n",
                 "  weight: 10\n  parent: root\n  capability:\n    cpu: \"10\"\n")
    texts = edit(texts, HIER, "  weight: 2\n  parent: ai-org\n", "  weight: 2\n  parent: ai-org\n  deserved:\n"
                                                                 "    cpu: \"6\"\n")
    texts = edit(texts, HIER, "  weight: 3\n  parent: ai-org\n", "  weight: 3\n  parent: ai-org\n  deserved:\n"
                                                                 "    cpu: \"6\"\n")
    out = run(texts)
    out.expect("spec.deserved.cpu", 'cpu: "6"', key="ai-team-2", says=("sum to cpu: 12", "capability cpu: 10"))
    assert out.error_fields() == {("ai-team-2", "spec.deserved.cpu")}


NODEPOOL = """\
---
apiVersion: sim.magma.io/v1alpha1
kind: NodePool
metadata: {name: gpu}
spec:
  count: 1
  allocatable: {cpu: "128", memory: 1Ti, nvidia.com/gpu: "8"}
"""


def test_root_children_guarantees_above_cluster():
    out = run(append(seed("s04-06"), QUEUE, NODEPOOL))
    out.expect("spec.guarantee.resource[nvidia.com/gpu]", 'nvidia.com/gpu: "16"', key="ai-team-1",
               says=("nvidia.com/gpu: 16", "nvidia.com/gpu: 8 allocatable", "add nodes"))
    assert out.error_fields() == {("ai-team-1", "spec.guarantee.resource[nvidia.com/gpu]")}
    out = run(append(seed("s04-06"), QUEUE, NODEPOOL.replace("count: 1", "count: 2")))
    assert out.errors() == []


def test_root_resources_cannot_be_set():
    out = run(edit(seed("s11-12"), EQUEUES, "metadata: { name: root }\nspec:\n  weight: 1\n",
                   "metadata: { name: root }\nspec:\n  weight: 1\n  capability: { cpu: \"100\" }\n"))
    out.expect("spec.capability", 'capability: { cpu: "100" }', key="root", says=("root",))
    assert out.error_fields() == {("root", "spec.capability")}


def test_hierarchy_annotations():
    out = run(edit(seed("s06-2"), HIER, "  name: ai-team-2\n",
                   "  name: ai-team-2\n  annotations:\n    volcano.sh/hierarchy: root/sci/dev\n"
                   "    volcano.sh/hierarchy-weights: 1/2\n"))
    out.expect("metadata.annotations[volcano.sh/hierarchy-weights]", "volcano.sh/hierarchy-weights: 1/2")


def test_duplicate_objects():
    out = run(append(seed("s06-2"), HIER, chain(["ai-team-2"], "ai-org")))
    p = out.expect("metadata.name", "name: ai-team-2", key="ai-team-2", says=("duplicate Queue", f"{HIER}:21"))
    assert p.line == len(out.texts[HIER].splitlines()) - 2
    assert len(out.errors()) == 1


# ---------------------------------------------------------------- PodGroup


def test_podgroup_queue_missing():
    out = run(edit(seed("s04-06"), PODGROUP, "  queue: ai-team-1\n", "  queue: team-x\n"))
    out.expect("spec.queue", "queue: team-x", key="ai-train/training-job-a", says=("does not exist",))
    assert out.error_fields() == {("ai-train/training-job-a", "spec.queue")}


def test_podgroup_priority_class_missing():
    out = run(edit(seed("s04-06"), PODGROUP, "  priorityClassName: normal\n", "  priorityClassName: urgent\n"))
    out.expect("spec.priorityClassName", "priorityClassName: urgent", says=("does not exist",))


def test_podgroup_min_member_zero_warns_and_negative_is_rejected():
    out = run(edit(seed("s04-06"), PODGROUP, "  minMember: 4\n", "  minMember: 0\n"))
    out.expect("spec.minMember", "minMember: 0", severity="warning", says=("gang scheduling off",))
    out = run(edit(seed("s04-06"), PODGROUP, "  minMember: 4\n", "  minMember: -1\n"))
    out.expect("spec.minMember", "minMember: -1")


def test_podgroup_in_parent_queue_warns():
    out = run(edit(seed("s04-06"), PODGROUP, "  queue: ai-team-1\n", "  queue: root\n"))
    out.expect("spec.queue", "queue: root", severity="warning", says=("leaf",))


SECOND_POD = """\
---
apiVersion: v1
kind: Pod
metadata:
  name: worker-1
  namespace: ai-train
  annotations:
    scheduling.k8s.io/group-name: training-job-a
spec:
  schedulerName: volcano
  containers:
    - name: pytorch
      image: pytorch:2.3.0-cuda12.1
"""


def test_gang_off_warning_for_podgroup():
    texts = append(seed("s04-06"), POD, SECOND_POD)
    out = run(edit(texts, PODGROUP, "  minMember: 4\n", "  minMember: 1\n"))
    out.expect("spec.minMember", "minMember: 1", severity="warning", says=("2 pods", "gang scheduling"))
    assert out.errors() == []


# ---------------------------------------------------------------- Pod


def test_pod_group_in_another_namespace_warns():
    out = run(edit(seed("s04-06"), POD, "  namespace: ai-train\n", "  namespace: ai-eval\n"))
    out.expect("metadata.annotations[scheduling.k8s.io/group-name]", "scheduling.k8s.io/group-name:",
               severity="warning", says=("only in namespace ai-train", "ignores"))
    assert out.errors() == []


def test_pod_group_missing_warns():
    out = run(edit(seed("s04-06"), POD, "group-name: training-job-a\n", "group-name: training-job-b\n"))
    out.expect("metadata.annotations[scheduling.k8s.io/group-name]", "training-job-b", severity="warning",
               says=("no PodGroup named training-job-b",))


def test_pod_with_group_but_default_scheduler_warns():
    out = run(edit(seed("s04-06"), POD, "  schedulerName: volcano\n", "  schedulerName: default-scheduler\n"))
    out.expect("spec.schedulerName", "schedulerName: default-scheduler", severity="warning",
               says=("default scheduler",))
    out = run(edit(seed("s04-06"), POD, "  schedulerName: volcano\n", ""))
    out.expect("spec.schedulerName", "spec:", severity="warning")


def test_pod_priority_class_missing():
    out = run(edit(seed("s04-06"), POD, "  schedulerName: volcano\n",
                   "  schedulerName: volcano\n  priorityClassName: gold\n"))
    out.expect("spec.priorityClassName", "priorityClassName: gold")


def test_pod_jdb_annotation():
    out = run(edit(seed("s04-06"), POD, "    scheduling.k8s.io/group-name: training-job-a\n",
                   "    scheduling.k8s.io/group-name: training-job-a\n    volcano.sh/jdb-min-available: \"150%\"\n"))
    out.expect("metadata.annotations[volcano.sh/jdb-min-available]", "volcano.sh/jdb-min-available")


# ---------------------------------------------------------------- PriorityClass


def test_priority_class_value_too_high():
    out = run(edit(seed("s04-06"), PCS, "value: 10000\n", "value: 2000000000\n"))
    out.expect("value", "value: 2000000000", says=("1000000000",))


def test_priority_class_system_prefix_reserved():
    out = run(edit(seed("s04-06"), PCS, "  name: high\n", "  name: system-high\n"))
    out.expect("metadata.name", "name: system-high", says=("reserved",))


def test_two_global_defaults():
    texts = edit(seed("s04-06"), PCS, "value: 1000\n", "value: 1000\nglobalDefault: true\n")
    out = run(edit(texts, PCS, "value: 10000\n", "value: 10000\nglobalDefault: true\n"))
    out.expect("globalDefault", "globalDefault: true", key="high", says=("normal",))


# ---------------------------------------------------------------- queue deletion


def test_queue_delete_rules():
    w = run(seed("s04-06")).world
    (p,) = check_queue_delete(w, "default")
    assert "cannot be deleted" in p.message
    (p,) = check_queue_delete(w, "root")
    assert "cannot be deleted" in p.message
    (p,) = check_queue_delete(w, "ai-team-1")
    assert "PodGroup ai-train/training-job-a" in p.message and "Job ai-train/pytorch-ddp-training" in p.message
    assert p.file == QUEUE and "name: ai-team-1" in seed("s04-06")[QUEUE].splitlines()[p.line - 1]
    (p,) = check_queue_delete(w, "nope")
    assert "no queue named" in p.message

    w = run(seed("s06-2")).world
    (p,) = check_queue_delete(w, "ai-org")
    assert "2 child queue" in p.message and "ai-team-1, ai-team-2" in p.message
    assert check_queue_delete(w, "ai-team-2") == []


# ---------------------------------------------------------------- job update


def job_of(texts: dict[str, str], file: str = JOB) -> Job:
    (job,) = [o for o in load_text(texts[file], file).objects if isinstance(o, Job)]
    return job


def test_job_update_allowed_fields():
    old = job_of(seed("s04-06"))
    texts = edit(seed("s04-06"), JOB, "  minAvailable: 4\n", "  minAvailable: 6\n")
    texts = edit(texts, JOB, "    - replicas: 4\n", "    - replicas: 8\n")
    texts = edit(texts, JOB, "  priorityClassName: high\n", "  priorityClassName: normal\n")
    assert check_job_update(old, job_of(texts)) == []


def test_job_update_other_fields_refused():
    old = job_of(seed("s04-06"))
    texts = edit(seed("s04-06"), JOB, "  queue: ai-team-1\n", "  queue: ai-team-2\n")
    (p,) = check_job_update(old, job_of(texts))
    assert p.field == "spec.queue" and "queue: ai-team-2" in texts[JOB].splitlines()[p.line - 1]
    texts = edit(seed("s04-06"), JOB, "image: your-registry/pytorch:2.3-cu121", "image: other:1")
    (p,) = check_job_update(old, job_of(texts))
    assert p.field == "spec.tasks[0].template.spec.containers[0].image"
    assert "image: other:1" in texts[JOB].splitlines()[p.line - 1]


def test_job_update_counts_and_tasks():
    old = job_of(seed("s11-12"), EJOB)
    texts = edit(seed("s11-12"), EJOB, "  minAvailable: 2\n", "  minAvailable: 3\n")
    (p,) = check_job_update(old, job_of(texts, EJOB))
    assert p.field == "spec.minAvailable"
    texts = append(seed("s11-12"), EJOB, SECOND_TASK.replace("name: worker", "name: ps"))
    (p,) = check_job_update(old, job_of(texts, EJOB))
    assert p.field == "spec.tasks" and "add or remove tasks" in p.message
    # Quantities compare by value: 8 and "8" are the same.
    texts = edit(seed("s11-12"), EJOB, "limits: { nvidia.com/gpu: 8 }", 'limits: { nvidia.com/gpu: "8" }')
    assert check_job_update(old, job_of(texts, EJOB)) == []
