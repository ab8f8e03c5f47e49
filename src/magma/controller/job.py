"""The Job controller: Volcano Jobs (batch.volcano.sh/v1alpha1) to PodGroups and Pods, and back to a status.

`JobController(cluster).sync()` reconciles every Job once against the cluster. It is level-triggered: each sync
reads what is there, works out what happened since the last sync (pods that failed, succeeded, vanished;
PodGroups that went Unknown; Commands), applies the lifecycle policies, then drives the job's state machine to
a fixed point. Calling it again without anything changing in between changes nothing.

Event-driven (fastpath.event_driven_controller), on a cluster with a change log (`MemoryCluster.changes_since`):
a sync visits only the jobs that something happened to since the previous sync: their Job, PodGroup, pods or
owned objects were written, a command for them arrived, or a delayed action or ttl of theirs is due (Volcano's
informers and work queue of job keys). By the sentence above, the others would change nothing. `_JobIndex`
keeps the log's reading: touched jobs, pods per job, objects per owner. A job named only by writes of its
PodGroup's status skips its state pass (fastpath.light_podgroup_syncs), and so does a pass after one that left it
nothing to do (fastpath.settled_pass_skipped), and a finished job named by nothing but its due ttl since such a
pass (fastpath.ttl_syncs_light).

What it does, as Volcano's job controller does it (pkg/controllers/job: job_controller_actions.go, state/,
job_controller_util.go), restated:

- Initialise a new Job: status Pending, `status.minAvailable`, the job plugins' side objects, and the PodGroup
  `<job>-<uid>` (owner: the Job, controller true) with minMember = minAvailable, minTaskMember = each task's
  minAvailable, queue, priorityClassName, the Job's annotations and labels, and minResources = the requests of
  the first minAvailable pods, tasks taken by their template PriorityClass value (high first; equal values in
  spec order). When minAvailable >= the sum of the tasks' minAvailable: each task's minAvailable pods, then
  the remaining replicas, again by priority.
- Pods `<job>-<task>-<i>` are created only once the PodGroup has left Pending (the scheduler's enqueue). They
  carry the annotations `scheduling.k8s.io/group-name`, `volcano.sh/job-name`, `volcano.sh/job-version`,
  `volcano.sh/task-spec`, `volcano.sh/task-index`, `volcano.sh/queue-name`, `volcano.sh/template-uid`,
  `volcano.sh/job-retry-count` and the labels `volcano.sh/job-name`, `volcano.sh/job-namespace`,
  `volcano.sh/task-spec`, `volcano.sh/task-index`, `volcano.sh/queue-name`; schedulerName and
  priorityClassName fall back to the Job's. The Job's own annotations are not copied to pods, except
  Volcano's `volcano.sh/preemptable`, `volcano.sh/cooldown-time`, `volcano.sh/revocable-zone` and the JDB keys.
- States: Pending -> Running when minAvailable <= running + succeeded + failed. Running -> Completed when
  succeeded >= minSuccess, or when all pods finished with enough successes (each task's minAvailable
  succeeded when minAvailable covers the tasks' minima); -> Failed when all finished without; -> Pending when
  more pods are pending than replicas - minAvailable. RestartJob/RestartTask/RestartPod -> Restarting
  (retryCount + 1) -> Failed when retryCount >= maxRetry, else Pending once the killed pods are gone.
  AbortJob -> Aborting -> Aborted, CompleteJob -> Completing -> Completed, TerminateJob -> Terminating ->
  Terminated, each once no pod is pending, running or terminating; ResumeJob: Aborting/Aborted -> Restarting.
  A full kill (RestartJob, AbortJob, CompleteJob, TerminateJob, ResumeJob, and killing pods left running after
  a job finished) bumps status.version, deletes the PodGroup and the plugins' side objects; pods of an older
  version no longer trigger policies. Succeeded and Failed pods are
  kept by Abort/Complete/Terminate and by the last retry's kill, for inspection.
- Lifecycle policies: see policies.py. Events come from what the controller observes between syncs: a pod
  that turned Failed (PodFailed, with its first container's exit code), one that disappeared or started
  terminating without the controller deleting it (PodEvicted; the scheduler's eviction reason is in the
  message), a pod still Pending when a PodPending timeout runs out, the last pod of a task succeeding
  (TaskCompleted), restarts of a task's containers reaching its maxRetry (TaskFailed), the PodGroup turning
  Unknown (Unknown).
- Commands (`bus.volcano.sh/v1alpha1` Command, targetObject kind Job): AbortJob (vcctl suspend), ResumeJob
  (vcctl resume), RestartJob, TerminateJob, CompleteJob, ... are executed and deleted.
- ttlSecondsAfterFinished: a Completed, Failed or Terminated job is deleted, with its pods, PodGroup and side
  objects, that many seconds (of `cluster.state().now`) after it finished.
- Events on the Job (cluster.record_event): CommandIssued, ExecuteAction, PodGroupPending (Warning),
  PluginError, FailedCreate, FailedDelete, as Volcano names them; plus magma's JobStatusUpdate (Normal, on
  every phase change, with the reason in numbers) and TTLExpired.

Decisions where Volcano is silent or magma differs on purpose (also in the report and docs):

- Memory between syncs (what Volcano's informer cache and delay queue hold): the phase and restart count last
  seen per pod, the pods the controller deleted itself, delayed actions (policy timeouts). A pod seen for the
  first time (e.g. after a controller restart) is a baseline, as an informer's initial list: it raises no
  event except PodPending. Everything else is read from the cluster on every sync.

- magma default, gang restart: when a pod is evicted or fails, no policy matches the event, and the job
  (Pending or Running) is left below minAvailable (evicted: some pods still run but running + succeeded <
  minAvailable; failed: running + pending + succeeded < minAvailable, since Volcano never recreates a Failed
  pod), the job is restarted with RestartJob semantics (retryCount + 1, Failed at maxRetry). Volcano would
  leave the rest of the gang running, holding its resources while it cannot progress. Set the Job annotation
  `magma.io/gang-restart: "false"` to get Volcano's behaviour.
- Pod deletion uses `cluster.delete("Pod", key)` for every pod, running or not: in the in-memory cluster it is
  immediate; a Kubernetes implementation deletes gracefully (the pod's terminationGracePeriodSeconds), during
  which the pod counts as terminating. Controller deletions are never reported as PodEvicted.
- Pod priority: the Priority admission plugin's rule is applied at creation: spec.priority = the value of the
  pod's PriorityClass (built-in system classes included), and preemptionPolicy from it; without a class, the
  globalDefault class (name and value) or 0. A class that does not exist leaves priority unset (the API
  server would refuse the pod; admission already rejects such jobs) and records a Warning `FailedCreate` once.
- Counts are recomputed from the pods on every sync (Volcano skips the recount while the PodGroup is Pending,
  and zeroes the counts of retained pods after a kill); lastTransitionTime and the job's conditions change on
  phase changes only (Volcano also bumps them on count changes, which would move the ttl clock).
  runningDuration = time from the last entry into Running to the finish (Volcano writes time since creation).
- A Restarting job becomes Pending as soon as its old pods are gone (Volcano waits for the new PodGroup to be
  enqueued again, because it does not recount while the PodGroup is Pending).
- RestartTask/RestartPod keep the job's Service, ConfigMap and SSH Secret (Volcano deletes and regenerates
  them, giving the restarted pod an SSH key the surviving pods do not know).
- A delayed action tied to a pod (PodPending timeout) is dropped when that pod is deleted or stops being
  Pending (Volcano keys them by pod name and can fire a stale timer at a recreated, running pod).
- minResources use each pod's effective request (limits stand in for missing requests, init containers and
  overhead counted as kube-scheduler does) and plain resource names; Volcano's quota-style keys
  (`requests.cpu`, `limits.cpu`, `count/pods`, `pods`) are left out.
- A `task-topology` entry in spec.plugins (the seed article's `--task-affinity=ps,worker`,
  `--task-anti-affinity=...`, `--task-order=...`) is turned into the PodGroup annotations the task-topology
  scheduler plugin reads (`volcano.sh/task-topology-affinity` etc.), unless the Job sets them itself. Volcano
  has no such job plugin; the annotations are its interface.
- A Job without Volcano's mutating defaults (queue, maxRetry, task names, minAvailable) gets them written once
  (as the admission webhook would have on create); a Job without a uid gets one.
"""

from __future__ import annotations

import hashlib
import operator
import uuid
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Callable, Iterable

from magma.api.copying import deep_copy
from magma.api.defaults import (
    DEFAULT_MAX_RETRY,
    SYSTEM_PRIORITY_CLASSES,
    default_job,
    default_priority_class,
    job_defaults_missing,
)
from magma.api.objects import (
    GROUP_NAME_ANNOTATION,
    JOB_NAME_ANNOTATION,
    PREEMPTABLE_ANNOTATION,
    TASK_INDEX_ANNOTATION,
    TASK_SPEC_ANNOTATION,
    Command,
    Job,
    JobCondition,
    JobState,
    Object,
    Pod,
    PodGroup,
    TaskSpec,
    TaskState,
)
from magma.api.quantity import Quantity
from magma.api.resources import PODS, Resources
from magma.cluster.interface import Cluster, ClusterError, ClusterState
from magma.scheduler.framework import fastpath
from magma.scheduler.framework.kept import Memo

from . import jobplugins
from .jobplugins.base import DEFAULT_TASK_SPEC, JOB_NAMESPACE_LABEL, PluginContext, controller_ref, task_of
from .policies import (
    ABORT_JOB,
    COMMAND_ISSUED,
    COMPLETE_JOB,
    INTERNAL_ACTIONS,
    INTERNAL_EVENTS,
    JOB_UNKNOWN,
    POD_EVENTS,
    POD_EVICTED,
    POD_FAILED,
    POD_PENDING,
    POD_RUNNING,
    RESTART_JOB,
    RESTART_PARTITION,
    RESTART_POD,
    RESTART_TASK,
    RESUME_JOB,
    SYNC_JOB,
    TASK_COMPLETED,
    TASK_FAILED,
    TERMINATE_JOB,
    action_type,
    apply_policies,
)

# Job phases
PENDING = "Pending"
RUNNING = "Running"
RESTARTING = "Restarting"
ABORTING = "Aborting"
ABORTED = "Aborted"
COMPLETING = "Completing"
COMPLETED = "Completed"
TERMINATING = "Terminating"
TERMINATED = "Terminated"
FAILED = "Failed"
PHASES = (PENDING, ABORTING, ABORTED, RUNNING, RESTARTING, COMPLETING, COMPLETED, TERMINATING, TERMINATED, FAILED)
#: Phases after which ttlSecondsAfterFinished counts (Volcano's garbage collector: not Aborted).
FINISHED = frozenset({COMPLETED, FAILED, TERMINATED})
#: Phases that never change on their own.
FINAL = frozenset({COMPLETED, FAILED, TERMINATED, ABORTED})

# Annotation and label keys (Volcano's spellings)
JOB_VERSION_ANNOTATION = "volcano.sh/job-version"
QUEUE_NAME_KEY = "volcano.sh/queue-name"
TEMPLATE_KEY = "volcano.sh/template-uid"
RETRY_COUNT_KEY = "volcano.sh/job-retry-count"
PARTITION_ID_LABEL = "volcano.sh/partition-id"
NUMA_POLICY_KEY = "volcano.sh/numa-topology-policy"
COOLDOWN_TIME_KEY = "volcano.sh/cooldown-time"
REVOCABLE_ZONE_KEY = "volcano.sh/revocable-zone"
JDB_MIN_AVAILABLE_KEY = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE_KEY = "volcano.sh/jdb-max-unavailable"
OUT_OF_SYNC_KEY = "volcano.sh/controller-out-of-sync"
TASK_TOPOLOGY_AFFINITY = "volcano.sh/task-topology-affinity"
TASK_TOPOLOGY_ANTI_AFFINITY = "volcano.sh/task-topology-anti-affinity"
TASK_TOPOLOGY_TASK_ORDER = "volcano.sh/task-topology-task-order"
#: magma: set to "false" on a Job to turn the default gang restart off (Volcano's behaviour).
GANG_RESTART_ANNOTATION = "magma.io/gang-restart"
SIM_PREFIX = "sim.magma.io/"

RETAIN_NONE: frozenset[str] = frozenset()
RETAIN_SOFT: frozenset[str] = frozenset({"Succeeded", "Failed"})
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
_UID_NAMESPACE = uuid.UUID("6f1c3a52-8d0e-4c1b-9a57-0c2f6d9e4b11")
_UID_NAMESPACE_BYTES = _UID_NAMESPACE.bytes
MAX_PASSES = 12
MAX_ROUNDS = 6


# ---------------------------------------------------------------- small helpers


def _time(ts: object) -> float | None:
    if isinstance(ts, bool):
        return None
    if isinstance(ts, (int, float)):
        return float(ts)
    if hasattr(ts, "timestamp"):
        return ts.timestamp()  # type: ignore[union-attr]
    if isinstance(ts, str):
        from datetime import datetime

        try:
            return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _uuid5(name: str) -> str:
    """`str(uuid.uuid5(_UID_NAMESPACE, name))`, without making the UUID object: SHA-1 of the namespace and the name,
    its first 16 bytes with the version (5) and variant (RFC 4122) bits set, as 8-4-4-4-12 hex digits."""
    b = bytearray(hashlib.sha1(_UID_NAMESPACE_BYTES + name.encode()).digest()[:16])
    b[6] = (b[6] & 0x0F) | 0x50
    b[8] = (b[8] & 0x3F) | 0x80
    x = b.hex()
    return f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"


_QUANTITIES = Memo(4096)  # quantity text -> the one Quantity read from it


def _quantities(texts: dict[str, str]) -> dict[str, str | Quantity]:
    """A PodGroup's minResources: the texts, or (fastpath.podgroup_quantities_shared) the quantities read from them,
    one per text for all PodGroups, which the model takes as they are."""
    if not fastpath.podgroup_quantities_shared:
        return dict(texts)
    out: dict[str, str | Quantity] = {}
    for name, text in texts.items():
        q = _QUANTITIES.get(text)
        if q is None:
            q = _QUANTITIES.keep(text, Quantity.parse(text))
        out[name] = q
    return out


def _ttl_due(job: Job) -> float | None:
    """When a finished job's ttlSecondsAfterFinished runs out (None: not finished, no ttl)."""
    ttl = job.spec.ttl_seconds_after_finished
    if ttl is None or job.status.state.phase not in FINISHED:
        return None
    finished = _time(job.status.state.last_transition_time)
    return finished + ttl if finished is not None else None


def go_duration(seconds: float) -> str:
    """A duration as Go's time.Duration prints it (`1h2m3.5s`, `0s`), as metav1.Duration serialises."""
    if seconds <= 0:
        return "0s"
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    out = ""
    if h >= 1:
        out += f"{int(h)}h"
    if h >= 1 or m >= 1:
        out += f"{int(m)}m"
    s_text = f"{s:.9f}".rstrip("0").rstrip(".")
    return out + f"{s_text or '0'}s"


def pod_uid(pod: Pod) -> str:
    return pod.metadata.uid or pod.key


def pod_version(pod: Pod) -> int:
    try:
        return int(pod.annotations.get(JOB_VERSION_ANNOTATION, "0"))
    except ValueError:
        return 0


def _restarts(pod: Pod) -> int:
    total = 0
    status = pod.status
    for statuses in (status.container_statuses, status.init_container_statuses):
        for cs in statuses:
            if isinstance(cs, dict):
                total += int(cs.get("restartCount") or 0)
            else:
                total += int(getattr(cs, "restart_count", 0) or 0)
    return total


def exit_code_of(pod: Pod) -> int:
    """The first container's termination exit code (Volcano reads only containerStatuses[0]), else 0."""
    statuses = list(pod.status.container_statuses)
    if not statuses:
        extra = pod.status.model_extra or {}
        raw = extra.get("containerStatuses")
        statuses = list(raw) if isinstance(raw, list) else []
    for cs in statuses[:1]:
        if isinstance(cs, dict):
            term = (cs.get("state") or {}).get("terminated")
            if isinstance(term, dict):
                try:
                    return int(term.get("exitCode") or 0)
                except (TypeError, ValueError):
                    return 0
        else:
            term = cs.state.terminated
            if term is not None:
                return term.exit_code
    return 0


def _controller_owner(obj: Object):
    for ref in obj.metadata.owner_references:
        if ref.controller:
            return ref
    return None


def podgroup_name(job: Job) -> str:
    return f"{job.name}-{job.metadata.uid}"


def _podgroup_key(job: Job) -> str:
    """The key (namespace/name) of the job's PodGroup."""
    return f"{job.namespace}/{podgroup_name(job)}"


def _in_name_order(pods: dict[str, Pod]) -> list[Pod]:
    """A job's pods (kept by name) in name order."""
    return [pods[name] for name in sorted(pods)]


def _is_terminating(pod: Pod) -> bool:
    return pod.metadata.deletion_timestamp is not None


def _turned_unknown(phase: str | None, before: str | None) -> bool:
    """Whether a PodGroup phase `phase`, last seen as `before`, is a turn to Unknown (the JobUnknown event)."""
    return phase == "Unknown" and before != "Unknown"


def _partition_size(task: TaskSpec) -> int | None:
    policy = (task.model_extra or {}).get("partitionPolicy")
    if isinstance(policy, dict):
        size = policy.get("partitionSize")
        if isinstance(size, int) and not isinstance(size, bool):
            return size
    return None


def _task_topology_annotations(job: Job) -> dict[str, str]:
    """PodGroup annotations for the task-topology scheduler plugin from a `task-topology` job plugin entry."""
    args = job.spec.plugins.get("task-topology")
    if not args:
        return {}
    flags = jobplugins.parse_flags(args, {"task-affinity": "", "task-anti-affinity": "", "task-order": ""})
    out = {}
    for flag, key in (("task-affinity", TASK_TOPOLOGY_AFFINITY), ("task-anti-affinity", TASK_TOPOLOGY_ANTI_AFFINITY),
                      ("task-order", TASK_TOPOLOGY_TASK_ORDER)):
        if flags[flag]:
            out[key] = flags[flag]
    return out


# ---------------------------------------------------------------- records


@dataclass
class Request:
    """Something that happened to a job, as Volcano's request queue carries it."""

    event: str
    task: str = ""
    pod: str = ""
    uid: str = ""
    exit_code: int = 0
    version: int | None = None  # job version of the pod; None: current
    action: str | None = None  # set: execute this action, no policy lookup (commands, delayed actions)
    time: float | None = None  # when it happened (PodPending: the pod's creation)
    partition: str = ""
    detail: str = ""  # for messages
    delayed: bool = False


@dataclass
class DelayedAction:
    action: str
    event: str
    task: str
    pod: str
    uid: str
    due: float
    partition: str = ""
    detail: str = ""


@dataclass
class _PodMemo:
    name: str
    task: str
    phase: str
    restarts: int
    version: int
    partition: str = ""
    evicted: bool = False


@dataclass
class _St:
    """The job status being computed (cheap to build and compare; written back only when it differs)."""

    phase: str
    reason: str | None
    message: str | None
    retry: int
    version: int
    min_available: int
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    tsc: dict[str, dict[str, int]] = field(default_factory=dict)
    controlled: dict[str, str] = field(default_factory=dict)

    @classmethod
    def recount(cls, job: Job) -> "_St":
        """The job's status with its pod counts at zero: every caller counts the job's pods again."""
        s = job.status
        state = s.state
        return cls(phase=state.phase or "", reason=state.reason, message=state.message, retry=s.retry_count,
                   version=s.version, min_available=s.min_available, controlled=dict(s.controlled_resources))

    def classify(self, pod: Pod, task: str) -> None:
        phase = pod.status.phase or "Pending"
        if phase == "Pending":
            self.pending += 1
        elif phase == "Running":
            self.running += 1
        elif phase == "Succeeded":
            self.succeeded += 1
        elif phase == "Failed":
            self.failed += 1
        else:
            self.unknown += 1
            phase = "Unknown"
        counts = self.tsc.setdefault(task, {})
        counts[phase] = counts.get(phase, 0) + 1

    def to(self, phase: str, reason: str | None, message: str | None) -> None:
        self.phase, self.reason, self.message = phase, reason, message


@dataclass
class _Ctx:
    job: Job
    key: str
    state: ClusterState
    now: float
    pods: dict[str, Pod]  # this job's pods by name, kept current across our own writes (read-only on light syncs)
    writes: int = 0
    new_requests: list[Request] = field(default_factory=list)
    cause: tuple[str, str] | None = None  # (reason, message) for the phase change an action makes
    deletes: int = 0  # pod deletions tried
    settled_at: int = -1  # `writes` after a state pass that the same pass would find at its fixed point

    @property
    def spec(self):
        return self.job.spec

    @property
    def max_retry(self) -> int:
        return self.job.spec.max_retry or DEFAULT_MAX_RETRY

    def task_pods(self, task: str) -> list[Pod]:
        return [p for p in self.pods.values() if task_of(p) == task]

    @property
    def pg_key(self) -> str:
        """The key of the job's PodGroup (its name holds the job's uid, which `_prepare` may give it)."""
        return _podgroup_key(self.job)


def _has_plugin_objects(st: _St) -> bool:
    """Whether the job's controlled resources name any a job plugin made (`plugin-...`)."""
    return any(k.startswith("plugin-") for k in st.controlled)


UpdateFn = Callable[[_St, _Ctx], None]
#: (_St field, JobStatus field) of the figures `_apply` writes back
_COUNT_FIELDS = (("retry", "retry_count"), ("version", "version"), ("min_available", "min_available"),
                 ("pending", "pending"), ("running", "running"), ("succeeded", "succeeded"), ("failed", "failed"),
                 ("terminating", "terminating"), ("unknown", "unknown"))
_ST_COUNTS = operator.attrgetter(*(name for name, _ in _COUNT_FIELDS))  # _St -> its figures, as a tuple
_STATUS_COUNTS = operator.attrgetter(*(attr for _, attr in _COUNT_FIELDS))  # JobStatus -> the same figures


# ---------------------------------------------------------------- the change log, read for the event-driven sync

#: Kinds of the side objects job plugins own (deleted with the Job, collected as orphans).
OWNED_KINDS = ("Service", "ConfigMap", "Secret", "NetworkPolicy")
#: Kinds the job controller does not read at all (other than commands, which it reads whole every sync).
_NOT_READ = frozenset({"Queue", "Node", "Command"})


class _JobIndex:
    """What the job controller needs from the cluster's change log (`MemoryCluster.changes_since`) to sync only
    the jobs something happened to, as Volcano's informers feed a work queue of job keys:

    - `touched`: job keys named by writes since they were last taken: the Job itself, its pods (by the
      `volcano.sh/job-name` annotation, before and after the write), the PodGroup it reads, objects it controls;
    - `pods_of`: pod keys per job key (the annotation), so a job's pods are found without scanning all pods;
      `pods_found`: the pods found per job, kept until a write of one of them (or of a pod taken to or from it);
    - `owned`: objects whose controller owner is a Job, by owner uid and (for refs without uid) by name, for the
      garbage collection of a deleted Job's objects;
    - `other`: the touched job keys named by a write other than one of a PodGroup (fastpath.light_podgroup_syncs);
    - `uid_jobs`: how many Jobs hold each uid, and `left`: the uids a Job stopped holding (deleted, or given another
      uid) since they were last taken, so that the Jobs gone are found without looking at every Job;
    - `full`: a write it cannot attribute (PriorityClasses, unowned side objects, unknown kinds, a log that no
      longer reaches back): the next sync visits every job.
    """

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self.touched: set[str] = set()
        self.other: set[str] = set()
        self.job_uid: dict[str, str] = {}  # Job key -> its uid
        self.uid_jobs: dict[str, int] = {}  # uid -> Jobs holding it
        self.left: set[str] = set()  # uids some Job stopped holding since `take_left`
        self.rebuilt = True  # rebuilt since `take_left`: every uid may have left
        self.pod_job: dict[str, str] = {}  # pod key -> job key of its annotation
        self.pods_of: dict[str, set[str]] = {}
        self.owner: dict[tuple[str, str], tuple[str, str, str]] = {}  # (kind, key) -> (namespace, uid, name)
        self.by_uid: dict[str, set[tuple[str, str]]] = {}
        self.by_name: dict[tuple[str, str], set[tuple[str, str]]] = {}  # (namespace, name): refs without uid
        self.pg_reader: dict[str, str] = {}  # PodGroup key -> the job that reads it
        self.pods_found: dict[str, tuple[str | None, dict[str, Pod]]] = {}  # job key -> (its uid, `pods`' answer)
        self._rebuild()

    def _rebuild(self) -> None:
        state = self.cluster.state()
        self.version = self.cluster.version  # type: ignore[attr-defined]
        self.full = True
        self.rebuilt = True
        self.job_uid.clear()
        self.uid_jobs.clear()
        for key in state.jobs:
            self._job(state, key)
        self.pod_job.clear()
        self.pods_of.clear()
        self.pods_found.clear()
        self.owner.clear()
        self.by_uid.clear()
        self.by_name.clear()
        for key in state.pods:
            self._pod(state, key)
        for key, pg in state.podgroups.items():
            self._own("PodGroup", key, pg)
        for kind in OWNED_KINDS:
            for key, obj in state.others.get(kind, {}).items():
                self._own(kind, key, obj)
        self.touched.clear()
        self.other.clear()

    def refresh(self) -> None:
        """Take in the writes made since the last refresh."""
        if self.cluster.version == self.version:  # type: ignore[attr-defined]
            return  # nothing written since
        changes = self.cluster.changes_since(self.version)  # type: ignore[attr-defined]
        if changes is None:
            self._rebuild()
            return
        self.version = self.cluster.version  # type: ignore[attr-defined]
        if not changes:
            return
        state = self.cluster.state()
        touched = self.touched
        for kind, key in changes:
            if kind == "Job":
                self._touch(key)
                self._job(state, key)
            elif kind == "Pod":
                self._pod(state, key)
            elif kind == "PodGroup":
                reader = self.pg_reader.get(key)
                if reader is not None:
                    touched.add(reader)
                self._own(kind, key, state.podgroups.get(key))
            elif kind in _NOT_READ:
                continue
            elif kind in OWNED_KINDS:
                obj = state.others.get(kind, {}).get(key)
                if not self._own(kind, key, obj):
                    self.full = True  # not a Job's: a job plugin may read it
            else:  # PriorityClasses (PodGroup minResources, pod priorities) and anything unknown
                self.full = True

    def _job(self, state: ClusterState, key: str) -> None:
        job = state.jobs.get(key)
        uid = (job.metadata.uid or None) if job is not None else None  # as the full look: a Job without uid holds none
        old = self.job_uid.get(key)
        if uid == old:
            return
        if old is not None:
            del self.job_uid[key]
            n = self.uid_jobs[old] - 1
            if n:
                self.uid_jobs[old] = n
            else:
                del self.uid_jobs[old]
                self.left.add(old)
        if uid is not None:
            self.job_uid[key] = uid
            self.uid_jobs[uid] = self.uid_jobs.get(uid, 0) + 1

    def take_left(self) -> tuple[set[str], bool]:
        """The uids no Job holds any more since they were last taken, and whether the index was rebuilt since (then
        any uid may have left); both start afresh."""
        left, rebuilt = self.left, self.rebuilt
        self.left, self.rebuilt = set(), False
        return left, rebuilt

    def _pod(self, state: ClusterState, key: str) -> None:
        pod = state.pods.get(key)
        name = pod.metadata.annotations.get(JOB_NAME_ANNOTATION) if pod is not None else None
        job = f"{pod.namespace}/{name}" if name else None  # type: ignore[union-attr]
        old = self.pod_job.get(key)
        for named in (job, old):  # `pods` answers afresh for both: the pod, its place or its owner may have changed
            if named is not None:
                self.pods_found.pop(named, None)
        if job is not None and job == old:
            self._touch(job)  # a write of a pod of the same job (its status, mostly)
        else:
            if old is not None:
                del self.pod_job[key]
                self.pods_of[old].discard(key)
                self._touch(old)
            if job is not None:
                self.pod_job[key] = job
                self.pods_of.setdefault(job, set()).add(key)
                self._touch(job)
        self._own("Pod", key, pod)

    def _own(self, kind: str, key: str, obj: Object | None) -> bool:
        """Index the object's Job owner; True if it has one (now or before the write)."""
        touch = self.touched.add if kind == "PodGroup" else self._touch
        k = (kind, key)
        ref = _controller_owner(obj) if obj is not None else None
        old = self.owner.get(k)
        if old is not None and ref is not None and ref.kind == "Job" and \
                old == (obj.namespace, ref.uid or "", ref.name):  # type: ignore[union-attr]
            touch(f"{old[0]}/{old[2]}")  # the same owner: the index stays as it is
            return True
        if old is not None:
            del self.owner[k]
            ns, uid, name = old
            (self.by_uid[uid] if uid else self.by_name[(ns, name)]).discard(k)
            touch(f"{ns}/{name}")
        if ref is None or ref.kind != "Job":
            return old is not None
        ns = obj.namespace  # type: ignore[union-attr]
        self.owner[k] = (ns, ref.uid or "", ref.name)
        if ref.uid:
            self.by_uid.setdefault(ref.uid, set()).add(k)
        else:
            self.by_name.setdefault((ns, ref.name), set()).add(k)
        touch(f"{ns}/{ref.name}")
        return True

    def _touch(self, key: str) -> None:
        """A write other than one of its PodGroup names the job."""
        self.touched.add(key)
        self.other.add(key)

    def take(self) -> tuple[set[str], set[str], bool]:
        """The touched job keys, those of them named by other writes than of PodGroups, and whether every job must
        be synced; all start afresh."""
        touched, other, full = self.touched, self.other, self.full
        self.touched, self.other, self.full = set(), set(), False
        return touched, other, full

    def settled(self, key: str) -> None:
        """The job's sync ended at a fixed point: the writes it made call for no other sync of it."""
        self.touched.discard(key)
        self.other.discard(key)

    def pods(self, state: ClusterState, job: Job) -> dict[str, Pod]:
        """The job's pods by name, in the cluster's order, as `JobController._index_pods` finds them (not to be
        changed: the answer is kept until a write of a pod of the job, or a Job of another uid, asks again)."""
        uid = job.metadata.uid
        found = self.pods_found.get(job.key)
        if found is not None and found[0] == uid:
            return found[1]
        pods = state.pods
        keys = [k for k in self.pods_of.get(job.key, ()) if k in pods]
        if len(keys) > 1:
            position = self.cluster.position  # type: ignore[attr-defined]
            keys.sort(key=lambda k: position("Pod", k))
        out: dict[str, Pod] = {}
        for k in keys:
            pod = pods[k]
            ref = _controller_owner(pod)
            if ref is not None:
                if ref.kind != "Job":
                    continue
                if ref.uid and uid and ref.uid != uid:
                    continue
            out[pod.name] = pod
        self.pods_found[job.key] = (uid, out)
        return out

    def owned(self, state: ClusterState, uids: set[str], names: set[tuple[str, str]]) -> list[Object]:
        """Objects whose controller owner is a Job with one of `uids` (or, for refs without uid, one of
        `names`), in the order a scan of pods, PodGroups, then OWNED_KINDS finds them."""
        found: set[tuple[str, str]] = set()
        for uid in uids:
            found |= self.by_uid.get(uid, set())
        for name in names:
            found |= self.by_name.get(name, set())
        rank = {kind: i for i, kind in enumerate(("Pod", "PodGroup") + OWNED_KINDS)}
        position = self.cluster.position  # type: ignore[attr-defined]
        out = []
        for kind, key in sorted(found, key=lambda k: (rank[k[0]], position(k[0], k[1]))):
            if kind == "Pod":
                obj = state.pods.get(key)
            elif kind == "PodGroup":
                obj = state.podgroups.get(key)
            else:
                obj = state.others.get(kind, {}).get(key)
            if obj is not None:
                out.append(obj)
        return out


def _has_change_log(cluster: Cluster) -> bool:
    return all(hasattr(cluster, a) for a in ("version", "changes_since", "position"))


# ---------------------------------------------------------------- the controller


class JobController:
    """Reconciles Volcano Jobs against a Cluster. See the module docstring for the behaviour."""

    def __init__(self, cluster: Cluster):
        self.cluster = cluster
        self._memo: dict[str, dict[str, _PodMemo]] = {}  # job key -> pod uid -> what we last saw
        self._deleted: dict[str, set[str]] = {}  # job key -> uids of pods the controller deleted
        self._delayed: dict[str, dict[str, DelayedAction]] = {}  # job key -> pod name -> delayed action
        self._pg_phase: dict[str, str | None] = {}  # job key -> PodGroup phase seen last
        self._pg_warned: dict[str, str] = {}  # job key -> last PodGroupPending message
        self._warned: set[tuple[str, str]] = set()  # (job key, what) warnings given once
        self._job_uid: dict[str, str] = {}  # job key -> uid the memory above belongs to
        self._known_uids: set[str] = set()  # uids of every Job seen (owners whose orphans we collect)
        self._known_since: set[str] = set()  # uids added to `_known_uids` since the orphans were last looked for
        self._defaulted: dict[str, int] = {}  # job key -> id(spec) already checked for defaults
        self._pg_cache: dict[str, tuple] = {}  # job key -> (fingerprint, desired PodGroup spec)
        self._evictions_seen = 0
        self._evict_reason: dict[str, str] = {}  # pod key -> scheduler eviction reason
        self._seq = 0
        self._changed = False
        # event-driven sync (fastpath.event_driven_controller), on a cluster with a change log
        self._index: _JobIndex | None = None
        self._ttl_due: dict[str, float] = {}  # finished job key -> when its ttl runs out
        self._pg_read: dict[str, str] = {}  # job key -> key of the PodGroup it reads
        self._logged = _has_change_log(cluster)  # the cluster keeps a change log (its methods never go away)
        self._settled: set[str] = set()  # job keys whose last sync ended at a fixed point
        self._still: set[str] = set()  # of those, the jobs whose next state pass would be skipped as settled

    # ================================================================ public
    def sync(self) -> bool:
        """Reconcile every Job once (event-driven: every job something happened to; see `_jobs_to_sync`).
        Returns True if anything was written."""
        if self._idle():
            return False
        self._changed = False
        state = self.cluster.state()
        now = state.now
        self._read_evictions()
        commands = self._job_commands(state)
        keys, by_job, noted, podgroup_only, ttl_only = self._jobs_to_sync(state, now, commands)
        index = self._index
        for key in keys:
            job = state.jobs.get(key)
            if job is None:
                continue
            light = timer = False
            if index is not None:
                index.refresh()
                touched_before = key in index.touched
                # nothing but its PodGroup was written since its last sync ended at a fixed point
                # (a refresh that rebuilt the index lost what was written: then neither)
                light = key in podgroup_only and key not in index.other and key in self._settled and not index.full
                # nothing was written since its last sync left its state pass settled; its ttl alone is due
                timer = key in ttl_only and not touched_before and key in self._still and not index.full
            settled = self._sync_one(job, state, now, by_job.get(key, {}), commands.pop(key, []), light, timer)
            if settled:
                self._settled.add(key)
            else:
                self._settled.discard(key)
            if index is not None and settled:
                # Its own writes do not call for another sync of it: the sync ended at a fixed point (its last
                # pass wrote nothing, no request was left), and what it wrote it has taken in (pods it made or
                # deleted are in its memory; its PodGroup phase is the one it saw or made).
                index.refresh()
                if not touched_before:
                    index.settled(key)
        if self._index is not None:
            self._note(state, noted)
        for key, cmds in commands.items():  # commands aimed at jobs that do not exist
            for cmd in cmds:
                self._consume_command(cmd)
                self.cluster.record_event("Warning", "CommandIssued", "Command", cmd.key,
                                          f"Job {key} not found; command {cmd.action} dropped")
        self._collect_orphans(state)
        self._evict_reason.clear()  # reasons not matched to a job's pod by now belong to bare pods
        return self._changed

    def _idle(self) -> bool:
        """Event-driven, whether a sync would do nothing: no job is touched (by the writes since the last sync, or
        left to sync again by it), no uid left, no eviction waits to be read, no command waits and no timer is
        due."""
        index = self._index
        if index is None or not fastpath.event_driven_controller:
            return False
        index.refresh()
        if index.full or index.touched or index.left or index.rebuilt or self._known_since or self._evict_reason:
            return False
        state = self.cluster.state()
        if state.commands:
            return False
        evictions = getattr(self.cluster, "evictions", None)
        if isinstance(evictions, list) and len(evictions) != self._evictions_seen:
            return False
        now = state.now
        return not any(t <= now for t in self._ttl_due.values()) and \
            not any(d.due <= now for per in self._delayed.values() for d in per.values())

    def next_timer(self, now: float) -> float | None:
        """The earliest future time at which a sync would act on its own (delayed actions, ttl)."""
        times: list[float] = []
        for per_job in self._delayed.values():
            times += [d.due for d in per_job.values()]
        state = self.cluster.state()
        index = self._job_index()
        if index is not None:
            index.refresh()
        if index is None or index.full:
            for job in state.jobs.values():
                due = _ttl_due(job)
                if due is not None:
                    times.append(due)
        else:
            # the ttl times noted at the last sync, brought up to date for the jobs written since
            ttl = dict(self._ttl_due)
            for key in index.touched:
                ttl.pop(key, None)
                job = state.jobs.get(key)
                due = _ttl_due(job) if job is not None else None
                if due is not None:
                    ttl[key] = due
            times += ttl.values()
        future = [t for t in times if t > now]
        return min(future) if future else None

    def job_deleted(self, job: Job) -> None:
        """The Job was deleted: delete what it owns (Kubernetes' garbage collector's work) and forget it."""
        self._delete_owned(job)
        self._forget(job.key)

    # ================================================================ which jobs to sync
    def _job_index(self) -> "_JobIndex | None":
        if not (fastpath.event_driven_controller and self._logged):
            self._index = None
            return None
        if self._index is None:
            self._index = _JobIndex(self.cluster)
        return self._index

    def _jobs_to_sync(self, state: ClusterState, now: float, commands: dict[str, list[Command]]
                      ) -> tuple[list[str], dict[str, dict[str, Pod]], Iterable[str], set[str], set[str]]:
        """(job keys to sync in order, their pods by job, job keys whose timers to note afterwards, job keys named
        by writes of their PodGroup alone, without a command or a due timer, job keys named by nothing but their due
        ttl: no write, command or due delayed action).

        Every job, unless the cluster keeps a change log (and the fast path is on): then only the jobs whose Job,
        PodGroup, pods or owned objects were written since the previous sync began (the controller's own writes
        of that sync included, so a job is synced once more after it wrote), that have commands, or whose
        delayed action or ttl is due. Any other job would find nothing new: its pods and PodGroup are as its last
        sync left them (that sync wrote nothing, else it would be touched) and no timer of it is due; a sync
        reads nothing else but PriorityClasses and side objects without a Job owner, whose writes make the
        next sync visit every job.
        """
        index = self._job_index()
        full = True
        if index is not None:
            index.refresh()
            touched, other, full = index.take()
        if full:
            keys = sorted(state.jobs)
            noted = list(state.jobs) + list(self._ttl_due) + list(self._pg_read)
            return keys, self._index_pods(state), noted, set(), set()
        assert index is not None
        ttl = {k for k, t in self._ttl_due.items() if t <= now}
        delayed = {k for k, per in self._delayed.items() if any(d.due <= now for d in per.values())}
        due = ttl | delayed
        noted = touched | due | set(commands)
        keys = sorted(k for k in noted if k in state.jobs)
        podgroup_only = touched - other - due - commands.keys() if fastpath.light_podgroup_syncs else set()
        ttl_only = ttl - touched - delayed - commands.keys() if fastpath.ttl_syncs_light else set()
        return keys, {k: index.pods(state, state.jobs[k]) for k in keys}, noted, podgroup_only, ttl_only

    def _note(self, state: ClusterState, keys: Iterable[str]) -> None:
        """After a sync: the ttl time and the PodGroup read of each of these jobs, as the sync left them."""
        index = self._index
        assert index is not None
        for key in set(keys):
            self._ttl_due.pop(key, None)
            pg = self._pg_read.pop(key, None)
            if pg is not None and index.pg_reader.get(pg) == key:
                del index.pg_reader[pg]
            job = state.jobs.get(key)
            if job is None:
                continue
            due = _ttl_due(job)
            if due is not None:
                self._ttl_due[key] = due
            pg = _podgroup_key(job)
            self._pg_read[key] = pg
            index.pg_reader[pg] = key

    # ================================================================ per job
    def _sync_one(self, job: Job, state: ClusterState, now: float, pods: dict[str, Pod],
                  commands: list[Command], light: bool = False, timer: bool = False) -> bool:
        """Sync one job; True when it ended at a fixed point (its last pass wrote nothing, no request left).
        `light`: nothing but its PodGroup was written since its last sync ended at a fixed point. `timer`: nothing
        was written since its last sync ended with a state pass that left it settled, and only its ttl is due
        (fastpath.ttl_syncs_light): nothing to observe, no request, and the pass would be skipped."""
        key = job.key
        if job.metadata.deletion_timestamp is not None:
            self._still.discard(key)
            return True
        # (the light syncs read no pods; read-only, as the job index hands the same dict out again)
        ctx = _Ctx(job=job, key=key, state=state, now=now, pods=MappingProxyType(pods))
        if timer:
            self._podgroup_pending_event(ctx)
            self._ttl(ctx)
            return True
        self._still.discard(key)
        if light and self._light_sync(ctx):
            return True
        ctx.pods = dict(pods)  # its own, kept current across its writes
        self._prepare(job, now)
        self._known_uids.add(job.metadata.uid or "")
        self._known_since.add(job.metadata.uid or "")

        requests: list[Request] = []
        for cmd in commands:
            self._consume_command(cmd)
            self._event(ctx, "Normal", "CommandIssued",
                        f"Start to execute command {cmd.action}, and clean it up to make sure executed not "
                        f"more than once.")
            requests.append(Request(COMMAND_ISSUED, action=cmd.action, detail=f"command {cmd.name}"))
        requests += self._observe(ctx)
        requests += self._observe_podgroup(ctx)
        requests += self._due_delayed(ctx)

        settled = False
        for _ in range(MAX_ROUNDS):
            for req in requests:
                self._handle(ctx, req)
            quiet = False
            for _ in range(MAX_PASSES):
                before = ctx.writes
                if ctx.settled_at == before and fastpath.settled_pass_skipped:
                    quiet = True  # the pass would write nothing, and so make no request
                    break
                self._default_pass(ctx)
                if ctx.new_requests or ctx.writes == before:
                    quiet = not ctx.new_requests and ctx.writes == before
                    break
            requests, ctx.new_requests = ctx.new_requests, []
            if not requests:
                settled = quiet
                break
        if settled and ctx.settled_at == ctx.writes:
            self._still.add(key)  # the next pass would be skipped as settled

        self._podgroup_pending_event(ctx)
        self._ttl(ctx)  # what it may write (the finish time) is read back as a timer (`_note`)
        return settled

    def _prepare(self, job: Job, now: float) -> None:
        """A uid, a creation time and Volcano's mutating defaults, written once when missing."""
        dirty = False
        if not job.metadata.uid:
            job.metadata.uid = _uuid5(f"Job/{job.key}/{job.metadata.creation_timestamp}")
            dirty = True
        if self._job_uid.get(job.key) != job.metadata.uid:  # a new Job, or a new one under an old name
            self._forget(job.key)
            self._job_uid[job.key] = job.metadata.uid
        if job.metadata.creation_timestamp is None:
            job.metadata.creation_timestamp = now
            dirty = True
        if self._defaulted.get(job.key) != id(job.spec):
            if not (fastpath.job_defaults_check and not job_defaults_missing(job)):
                new = default_job(job)
                if new.spec.model_dump() != job.spec.model_dump():
                    job.spec = new.spec
                    dirty = True
            self._defaulted[job.key] = id(job.spec)
        if dirty:
            self._write(job)

    # ================================================================ observation
    def _read_evictions(self) -> None:
        evictions = getattr(self.cluster, "evictions", None)
        if not isinstance(evictions, list):
            return
        for pod_key, reason in evictions[self._evictions_seen:]:
            self._evict_reason[pod_key] = reason
        self._evictions_seen = len(evictions)

    def _eviction_text(self, ns: str, name: str) -> str:
        reason = self._evict_reason.pop(f"{ns}/{name}", None)
        return f"evicted by the scheduler ({reason})" if reason else "deleted by someone other than the controller"

    def _index_pods(self, state: ClusterState) -> dict[str, dict[str, Pod]]:
        out: dict[str, dict[str, Pod]] = {}
        jobs = state.jobs
        for pod in state.pods.values():
            job_name = pod.metadata.annotations.get(JOB_NAME_ANNOTATION)
            if not job_name:
                continue
            key = f"{pod.namespace}/{job_name}"
            ref = _controller_owner(pod)
            if ref is not None:
                if ref.kind != "Job":
                    continue
                job = jobs.get(key)
                if ref.uid and job is not None and job.metadata.uid and ref.uid != job.metadata.uid:
                    continue  # a pod of an earlier Job with the same name (collected as an orphan)
            out.setdefault(key, {})[pod.name] = pod
        return out

    def _observe(self, ctx: _Ctx) -> list[Request]:
        """Pod events since the last sync, as Volcano's pod informer handlers would have queued them."""
        memo = self._memo.setdefault(ctx.key, {})
        deleted = self._deleted.setdefault(ctx.key, set())
        out: list[Request] = []
        present: set[str] = set()
        # per task, what the task checks answered: the pods do not change while they are observed
        completed: dict[str, bool] = {}
        failed: dict[str, bool] = {}
        for pod in _in_name_order(ctx.pods):
            uid = pod_uid(pod)
            present.add(uid)
            phase = pod.status.phase or "Pending"
            restarts = _restarts(pod)
            m = memo.get(uid)
            if m is not None and phase == m.phase and restarts == m.restarts and not _is_terminating(pod):
                continue  # nothing new (most pods, most syncs)
            task = task_of(pod)
            version = pod_version(pod)
            if m is None:  # first sight (e.g. a restarted controller): a baseline, as an informer's add
                memo[uid] = _PodMemo(pod.name, task, phase, restarts, version, pod.labels.get(PARTITION_ID_LABEL, ""))
                if phase == "Pending" and not _is_terminating(pod):
                    out.append(Request(POD_PENDING, task, pod.name, uid, version=version,
                                       time=_time(pod.metadata.creation_timestamp)))
                continue
            if _is_terminating(pod):
                if not m.evicted and uid not in deleted:
                    m.evicted = True
                    out.append(Request(POD_EVICTED, task, pod.name, uid, version=version, partition=m.partition,
                                       detail=f"pod {pod.name} {self._eviction_text(pod.namespace, pod.name)}"))
                m.phase, m.restarts = phase, restarts
                continue
            event = None
            if phase == "Failed":
                if m.phase != "Failed":
                    event = POD_FAILED
            elif phase == "Succeeded":
                if m.phase != "Succeeded":
                    done = completed.get(task)
                    if done is None:
                        done = completed[task] = self._task_completed(ctx, task)
                    if done:
                        event = TASK_COMPLETED
            elif phase in ("Running", "Pending"):
                over = failed.get(task)
                if over is None:
                    over = failed[task] = self._task_failed(ctx, task)
                if over:
                    event = TASK_FAILED
                if m.phase != phase:
                    event = POD_RUNNING if phase == "Running" else POD_PENDING
            m.phase, m.restarts = phase, restarts
            if event is None:
                continue
            code = exit_code_of(pod) if event == POD_FAILED else 0
            if event == POD_FAILED:
                detail = f"pod {pod.name} failed with exit code {code}"
            elif event == TASK_COMPLETED:
                detail = f"all pods of task {task} succeeded"
            elif event == TASK_FAILED:
                detail = f"containers of task {task} restarted {self._task_restarts(ctx, task)} times"
            else:
                detail = f"pod {pod.name} {phase.lower()}"
            out.append(Request(event, task, pod.name, uid, exit_code=code, version=version, partition=m.partition,
                               time=_time(pod.metadata.creation_timestamp) if event == POD_PENDING else None,
                               detail=detail))
        for uid, m in list(memo.items()):
            if uid in present:
                continue
            del memo[uid]
            if uid in deleted:
                continue
            if not m.evicted:
                ns = ctx.job.namespace
                out.append(Request(POD_EVICTED, m.task, m.name, uid, version=m.version, partition=m.partition,
                                   detail=f"pod {m.name} {self._eviction_text(ns, m.name)}"))
        deleted.intersection_update(present)
        return out

    def _observe_podgroup(self, ctx: _Ctx) -> list[Request]:
        pg = self.cluster.get("PodGroup", ctx.pg_key)
        phase = pg.status.phase if isinstance(pg, PodGroup) else None
        before = self._pg_phase.get(ctx.key)
        self._pg_phase[ctx.key] = phase
        if _turned_unknown(phase, before):
            return [Request(JOB_UNKNOWN, detail=f"PodGroup {pg.key} is Unknown: some pods run, others cannot be "
                                                f"scheduled")]
        return []

    def _task_spec(self, ctx: _Ctx, task: str) -> TaskSpec | None:
        return next((t for t in ctx.spec.tasks if t.name == task), None)

    def _task_completed(self, ctx: _Ctx, task: str) -> bool:
        ts = self._task_spec(ctx, task)
        if ts is None or ts.replicas <= 0:
            return False
        done = sum(1 for p in ctx.task_pods(task) if p.status.phase == "Succeeded")
        return done >= ts.replicas

    def _task_restarts(self, ctx: _Ctx, task: str) -> int:
        return sum(_restarts(p) for p in ctx.task_pods(task) if (p.status.phase or "Pending") in ("Running", "Pending"))

    def _task_failed(self, ctx: _Ctx, task: str) -> bool:
        ts = self._task_spec(ctx, task)
        if ts is None or ts.replicas == 0:
            return False
        max_retry = ts.max_retry if ts.max_retry else DEFAULT_MAX_RETRY
        if (ts.model_extra or {}).get("maxRetry") == -1:
            return False
        return self._task_restarts(ctx, task) >= max_retry

    # ================================================================ requests
    def _handle(self, ctx: _Ctx, req: Request) -> None:
        self._cancel_delays_for(ctx, req)
        if req.action:
            action, delay, source = req.action, None, ("command" if req.event == COMMAND_ISSUED else "")
        else:
            action, delay, source = self._decide(ctx, req)
        if delay:
            self._add_delayed(ctx, req, action, delay)
            return
        if action in INTERNAL_ACTIONS:
            return
        if req.delayed:
            self._event(ctx, "Normal", "ExecuteAction",
                        f"Start to execute delayed action {action} ({req.event}: {req.detail})")
        else:
            why = f" ({req.event}: {req.detail}{'; ' + source if source else ''})" if req.detail else ""
            self._event(ctx, "Normal", "ExecuteAction", f"Start to execute action {action}{why}")
        reason = req.event if req.event != COMMAND_ISSUED else action
        message = req.detail or f"{action} requested"
        if source and source != "command":
            message += f"; {source}: {req.event} -> {action}"
        ctx.cause = (reason, message)
        self._execute(ctx, action, req)
        ctx.cause = None
        self._cleanup_delays(ctx, action, req)

    def _decide(self, ctx: _Ctx, req: Request) -> tuple[str, float | None, str]:
        if req.event in INTERNAL_EVENTS:
            return SYNC_JOB, None, ""
        if req.version is not None and req.version < ctx.job.status.version:
            return SYNC_JOB, None, ""  # an event of a discarded incarnation of the job
        d = apply_policies(ctx.spec, req.event, req.task, req.exit_code)
        if d.action == SYNC_JOB and req.event in (POD_EVICTED, POD_FAILED) and self._gang_broken(ctx, req):
            return RESTART_JOB, None, "magma default gang restart"
        return d.action, d.delay, d.source

    def _gang_broken(self, ctx: _Ctx, req: Request) -> bool:
        """magma's default: this eviction or failure leaves the job unable to hold minAvailable pods."""
        if ctx.job.annotations.get(GANG_RESTART_ANNOTATION, "").strip().lower() == "false":
            return False
        if (ctx.job.status.state.phase or PENDING) not in (PENDING, RUNNING):
            return False
        running = succeeded = pending = 0
        for pod in ctx.pods.values():
            if pod.name == req.pod or _is_terminating(pod):
                continue
            phase = pod.status.phase or "Pending"
            if phase == "Running":
                running += 1
            elif phase == "Succeeded":
                succeeded += 1
            elif phase == "Pending":
                pending += 1
        need = ctx.spec.min_available or 0
        if req.event == POD_EVICTED:
            broken = running > 0 and running + succeeded < need
            alive = running + succeeded
        else:
            broken = running + succeeded + pending < need
            alive = running + succeeded + pending
        if broken:
            req.detail += f"; {alive} pods left of minAvailable {need}"
        return broken

    # -------------------------------------------------------------- delayed actions
    def _add_delayed(self, ctx: _Ctx, req: Request, action: str, delay: float) -> None:
        per_job = self._delayed.setdefault(ctx.key, {})
        old = per_job.get(req.pod)
        if old is not None and old.action == action:
            return
        start = req.time if req.time is not None else ctx.now
        per_job[req.pod] = DelayedAction(action, req.event, req.task, req.pod, req.uid, start + delay,
                                         req.partition, req.detail)
        self._event(ctx, "Normal", "ExecuteAction", f"Execute action {action} after {go_duration(delay)}")
        self._changed = True

    def _due_delayed(self, ctx: _Ctx) -> list[Request]:
        per_job = self._delayed.get(ctx.key)
        if not per_job:
            return []
        out = []
        for name, d in sorted(per_job.items(), key=lambda kv: (kv[1].due, kv[0])):
            if d.due > ctx.now:
                continue
            del per_job[name]
            if d.event == POD_PENDING:
                pod = ctx.pods.get(d.pod)
                if pod is None or pod_uid(pod) != d.uid or (pod.status.phase or "Pending") != "Pending" \
                        or _is_terminating(pod):
                    continue  # the pod is no longer pending: nothing to do
            out.append(Request(d.event, d.task, d.pod, d.uid, action=d.action, partition=d.partition,
                               detail=d.detail or f"pod {d.pod} {d.event}", delayed=True))
        return out

    def _cancel_delays_for(self, ctx: _Ctx, req: Request) -> None:
        if req.event not in POD_EVENTS or req.event == POD_PENDING:
            return
        per_job = self._delayed.get(ctx.key)
        d = per_job.get(req.pod) if per_job else None
        if d is None:
            return
        if (d.event == POD_PENDING and req.uid == d.uid) or \
                (d.event in (POD_FAILED, POD_EVICTED) and req.event == POD_RUNNING):
            del per_job[req.pod]

    def _cleanup_delays(self, ctx: _Ctx, action: str, req: Request) -> None:
        per_job = self._delayed.get(ctx.key)
        if not per_job:
            return
        kind = action_type(action)
        for name, d in list(per_job.items()):
            if action_type(d.action) != kind:
                continue
            if kind == "task" and d.task != req.task:
                continue
            if kind == "pod" and d.pod != req.pod:
                continue
            if kind == "partition" and (d.task, d.partition) != (req.task, req.partition):
                continue
            del per_job[name]

    # ================================================================ the state machine
    def _execute(self, ctx: _Ctx, action: str, req: Request) -> None:
        """An explicit action in the job's current state (Volcano's state.*.Execute)."""
        phase = ctx.job.status.state.phase or PENDING
        restart_target = action in (RESTART_TASK, RESTART_POD, RESTART_PARTITION)
        if phase in (PENDING, RUNNING) or phase not in PHASES:
            if action == RESTART_JOB:
                self._kill_job(ctx, RETAIN_NONE, self._restart_fn, explicit=True)
            elif restart_target:
                self._kill_target(ctx, action, req, self._restart_fn)
            elif action == ABORT_JOB:
                self._kill_job(ctx, RETAIN_SOFT, self._goto(ABORTING), explicit=True)
            elif action == COMPLETE_JOB:
                self._kill_job(ctx, RETAIN_SOFT, self._goto(COMPLETING), explicit=True)
            elif action == TERMINATE_JOB:
                self._kill_job(ctx, RETAIN_SOFT, self._goto(TERMINATING), explicit=True)
            else:
                self._default_pass(ctx)
        elif phase == RESTARTING:
            if restart_target:
                self._kill_target(ctx, action, req, self._restarting_fn)
            else:
                self._kill_job(ctx, RETAIN_NONE, self._restarting_fn, explicit=True)
        elif phase in (ABORTING, ABORTED):
            if action == RESUME_JOB:
                self._kill_job(ctx, RETAIN_SOFT, self._resume_fn, explicit=True)
            else:
                self._default_pass(ctx)
        else:  # Completing, Terminating and the finished phases ignore actions
            self._default_pass(ctx)

    def _default_pass(self, ctx: _Ctx) -> None:
        """What the job's state does on a plain sync."""
        phase = ctx.job.status.state.phase or PENDING
        fn = self._state_fn(phase)
        if fn is not None:
            self._sync_job(ctx, fn)
        elif phase == ABORTING:
            self._kill_job(ctx, RETAIN_SOFT, self._drained_fn(ABORTED, "Aborted"), explicit=False)
        elif phase == COMPLETING:
            self._kill_job(ctx, RETAIN_SOFT, self._drained_fn(COMPLETED, "Completed"), explicit=False)
        elif phase == TERMINATING:
            self._kill_job(ctx, RETAIN_SOFT, self._drained_fn(TERMINATED, "Terminated"), explicit=False)
        else:  # Aborted, Completed, Failed, Terminated
            self._kill_job(ctx, RETAIN_SOFT, None, explicit=False)

    def _state_fn(self, phase: str) -> UpdateFn | None:
        """The status update of a plain sync in `phase` when the job's state syncs it (None: the phase kills)."""
        if phase == PENDING or phase not in PHASES:
            return self._pending_fn
        if phase == RUNNING:
            return self._running_fn
        if phase == RESTARTING:
            return self._restarting_fn
        return None

    # -------------------------------------------------------------- status update functions
    def _cause(self, ctx: _Ctx, default_reason: str, default_message: str) -> tuple[str, str]:
        return ctx.cause if ctx.cause is not None else (default_reason, default_message)

    def _goto(self, phase: str) -> UpdateFn:
        def fn(st: _St, ctx: _Ctx) -> None:
            st.to(phase, *self._cause(ctx, phase, f"{phase} requested"))
        return fn

    def _restart_fn(self, st: _St, ctx: _Ctx) -> None:
        st.retry += 1
        reason, message = self._cause(ctx, RESTART_JOB, "restart requested")
        st.to(RESTARTING, reason, f"{message}; retry {st.retry} of maxRetry {ctx.max_retry}")

    def _resume_fn(self, st: _St, ctx: _Ctx) -> None:
        st.retry += 1
        reason, message = self._cause(ctx, RESUME_JOB, "resume requested")
        st.to(RESTARTING, reason, f"{message}; retry {st.retry} of maxRetry {ctx.max_retry}")

    def _pending_fn(self, st: _St, ctx: _Ctx) -> None:
        need = ctx.spec.min_available or 0
        if need <= st.running + st.succeeded + st.failed:
            st.to(RUNNING, "MinAvailableReached",
                  f"{st.running} running, {st.succeeded} succeeded and {st.failed} failed pods reach "
                  f"minAvailable {need}")

    def _running_fn(self, st: _St, ctx: _Ctx) -> None:
        spec = ctx.spec
        replicas = sum(t.replicas for t in spec.tasks)
        if replicas == 0:
            return
        need = spec.min_available or 0
        min_success = spec.min_success
        if min_success is not None and st.succeeded >= min_success:
            st.to(COMPLETED, "MinSuccessReached", f"{st.succeeded} pods succeeded, minSuccess {min_success}")
            return
        total_task_min = sum(t.min_available if t.min_available is not None else t.replicas for t in spec.tasks)
        if st.succeeded + st.failed == replicas:
            if need >= total_task_min:
                for t in spec.tasks:
                    if t.min_available is None or t.name not in st.tsc:
                        continue
                    done = st.tsc[t.name].get("Succeeded", 0)
                    if done < t.min_available:
                        st.to(FAILED, "TaskMinAvailableNotSucceeded",
                              f"all pods finished; task {t.name}: {done} succeeded, minAvailable {t.min_available}")
                        return
            if min_success is not None and st.succeeded < min_success:
                st.to(FAILED, "MinSuccessNotReached",
                      f"all {replicas} pods finished; {st.succeeded} succeeded, minSuccess {min_success}")
            elif st.succeeded >= need:
                st.to(COMPLETED, "PodsSucceeded",
                      f"all {replicas} pods finished; {st.succeeded} succeeded, minAvailable {need}")
            else:
                st.to(FAILED, "PodsFailed",
                      f"all {replicas} pods finished; {st.succeeded} succeeded and {st.failed} failed, "
                      f"minAvailable {need}")
            return
        if st.pending > replicas - need:
            st.to(PENDING, "PodsPending",
                  f"{st.pending} pods pending; the job runs with at most {replicas - need} missing")

    def _restarting_fn(self, st: _St, ctx: _Ctx) -> None:
        max_retry = ctx.max_retry
        if st.retry >= max_retry:
            st.to(FAILED, "MaxRetryExceeded", f"restarted {st.retry} times, maxRetry {max_retry}")
            return
        total = sum(t.replicas for t in ctx.spec.tasks)
        if total - st.terminating >= st.min_available:
            st.to(PENDING, "Restarted", f"old pods are gone; retry {st.retry} of maxRetry {max_retry}")

    @staticmethod
    def _drained_fn(phase: str, reason: str) -> UpdateFn:
        def fn(st: _St, ctx: _Ctx) -> None:
            if st.terminating or st.pending or st.running:
                return
            st.to(phase, reason, "no pod is pending, running or terminating")
        return fn

    # -------------------------------------------------------------- kill and sync
    def _kill_job(self, ctx: _Ctx, retain: frozenset[str], fn: UpdateFn | None, explicit: bool) -> None:
        job = ctx.job
        deletes = ctx.deletes
        st = _St.recount(job)
        if st.retry >= ctx.max_retry - 1:
            retain = RETAIN_SOFT  # the last retry keeps finished pods for inspection
        killed = 0
        for pod in _in_name_order(ctx.pods):
            task = task_of(pod)
            if _is_terminating(pod):
                st.terminating += 1
                continue
            if (pod.status.phase or "Pending") in retain:
                st.classify(pod, task)
                continue
            if self._delete_pod(ctx, pod):
                killed += 1
                st.terminating += 1
            else:
                st.classify(pod, task)
        if explicit or killed:
            st.version += 1
        if fn is not None:
            fn(st, ctx)
        self._plugins_delete(ctx, st)
        self._apply(ctx, st)
        pg_key = ctx.pg_key
        if self.cluster.get("PodGroup", pg_key) is not None:
            self.cluster.delete("PodGroup", pg_key)
            self._pg_phase.pop(ctx.key, None)
            self._pg_warned.pop(ctx.key, None)
            self._wrote(ctx)
        if fn is None and not explicit and ctx.deletes == deletes and not _has_plugin_objects(st):
            # a finished job's pass that tried no deletion and ran no plugin: run again, it would find the same
            # pods, the status it wrote and no PodGroup (fastpath.settled_pass_skipped)
            ctx.settled_at = ctx.writes

    def _kill_target(self, ctx: _Ctx, action: str, req: Request, fn: UpdateFn) -> None:
        if action == RESTART_TASK:
            victims = ctx.task_pods(req.task)
        elif action == RESTART_POD:
            pod = ctx.pods.get(req.pod)
            victims = [pod] if pod is not None and task_of(pod) == req.task else []
        else:  # RestartPartition: the pods of the task in the same partition
            victims = [p for p in ctx.task_pods(req.task)
                       if req.partition and p.labels.get(PARTITION_ID_LABEL) == req.partition]
        victim_names = {p.name for p in victims}
        st = _St.recount(ctx.job)
        for pod in _in_name_order(ctx.pods):
            if _is_terminating(pod):
                st.terminating += 1
            elif pod.name in victim_names:
                if self._delete_pod(ctx, pod):
                    st.terminating += 1
                else:
                    st.classify(pod, task_of(pod))
            else:
                st.classify(pod, task_of(pod))
        fn(st, ctx)
        self._apply(ctx, st)

    def _sync_job(self, ctx: _Ctx, fn: UpdateFn) -> None:
        job = ctx.job
        deletes = ctx.deletes
        st = _St.recount(job)
        initiated = st.phase not in ("", PENDING)
        if not st.phase:
            st.to(PENDING, "Created", "job accepted; waiting for its PodGroup to be enqueued")
        if not initiated:
            self._plugins_add(ctx, st)
        else:
            self._plugins_update(ctx, st)
        pg = self._ensure_podgroup(ctx)
        sync_tasks = pg is not None and (pg.status.phase or PENDING) != PENDING
        spec = job.spec
        expected: set[str] = set()
        for ts in spec.tasks:
            tname = ts.name or DEFAULT_TASK_SPEC
            ready = None
            for i in range(ts.replicas):
                name = f"{job.name}-{tname}-{i}"
                expected.add(name)
                pod = ctx.pods.get(name)
                if pod is None:
                    if not sync_tasks:
                        continue
                    if ready is None:
                        ready = self._depends_ready(ctx, ts)
                    if not ready:
                        continue
                    created = self._create_pod(ctx, ts, i, st)
                    if created is not None:
                        st.classify(created, tname)
                    continue
                if _is_terminating(pod):
                    st.terminating += 1
                    continue
                if OUT_OF_SYNC_KEY in pod.annotations:
                    if self._delete_pod(ctx, pod):
                        st.terminating += 1
                    continue
                st.classify(pod, tname)
        # the pods no replica of the spec names (pods are kept by name), in name order: scaled down
        unexpected = [pod for name, pod in ctx.pods.items() if name not in expected]
        task_names = {t.name or DEFAULT_TASK_SPEC for t in spec.tasks} if unexpected else set()
        for pod in sorted(unexpected, key=lambda p: p.name):
            if task_of(pod) not in task_names:
                continue
            if _is_terminating(pod):
                st.terminating += 1
            elif self._delete_pod(ctx, pod):  # scaled down
                st.terminating += 1
        st.min_available = spec.min_available or 0
        fn(st, ctx)
        self._apply(ctx, st)
        if ctx.deletes == deletes and not spec.plugins and pg is not None and self._fixed(ctx, st, fn):
            ctx.settled_at = ctx.writes

    def _fixed(self, ctx: _Ctx, st: _St, fn: UpdateFn) -> bool:
        """After a state pass that tried no pod deletion, for a job without plugins whose PodGroup exists (made or
        set to what the job asks for), with `st` written: whether the next pass would write nothing
        (fastpath.settled_pass_skipped). It would read the status, PodGroup and pods this pass left (the pods it
        made included), count the same figures and take the same decisions; only its update function may differ,
        when the phase changed. The same function changed nothing the first time (a new job's Pending aside, which
        keeps the function); another is tried on a copy."""
        nxt = self._state_fn(st.phase or PENDING)
        if nxt is None:
            return False
        if nxt == fn:
            return True
        probe = replace(st)
        nxt(probe, ctx)
        return probe.phase == st.phase

    def _depends_ready(self, ctx: _Ctx, ts: TaskSpec) -> bool:
        dep = ts.depends_on
        if not isinstance(dep, dict):
            return True
        names = dep.get("name") or []
        if isinstance(names, str):
            names = [names]
        if not names:
            return True

        def ready(task: str) -> bool:
            spec = self._task_spec(ctx, task)
            if spec is None:
                return True
            up = sum(1 for p in ctx.task_pods(task) if p.status.phase in ("Running", "Succeeded"))
            need = spec.min_available if spec.min_available is not None else spec.replicas
            return up >= need

        if len(names) > 1 and str(dep.get("iteration", "")).lower() == "any":
            return any(ready(n) for n in names)
        return all(ready(n) for n in names)

    # -------------------------------------------------------------- status write
    def _apply(self, ctx: _Ctx, st: _St) -> None:
        job = ctx.job
        s = job.status
        changed = False
        old_phase = s.state.phase or ""
        if st.phase != old_phase:
            self._transition(ctx, old_phase, st)
            changed = True
        if _STATUS_COUNTS(s) != _ST_COUNTS(st):
            # set only the fields that differ (pydantic notes which fields were set)
            for name, attr in _COUNT_FIELDS:
                value = getattr(st, name)
                if getattr(s, attr) != value:
                    setattr(s, attr, value)
            changed = True
        tsc = s.task_status_count
        if len(tsc) != len(st.tsc) or any(st.tsc.get(k) != v.phase for k, v in tsc.items()):
            s.task_status_count = {k: TaskState(phase=dict(v)) for k, v in sorted(st.tsc.items())}
            changed = True
        if s.controlled_resources != st.controlled:
            s.controlled_resources = dict(st.controlled)
            changed = True
        if changed:
            self._write(job)
            self._wrote(ctx)

    def _transition(self, ctx: _Ctx, old: str, st: _St) -> None:
        s = ctx.job.status
        now = ctx.now
        s.state = JobState(phase=st.phase, reason=st.reason, message=st.message, last_transition_time=now)
        s.conditions = [c for c in s.conditions if c.status != st.phase]
        s.conditions.append(JobCondition(status=st.phase, last_transition_time=now))
        if st.phase in FINAL:
            started = next((_time(c.last_transition_time) for c in reversed(s.conditions) if c.status == RUNNING),
                           None)
            s.running_duration = go_duration(now - started) if started is not None else "0s"
        text = f"{old or 'New'} -> {st.phase}"
        if st.reason:
            text += f": {st.reason}"
        if st.message:
            text += f" ({st.message})"
        kind = "Warning" if st.phase in (FAILED, ABORTED, TERMINATED) or st.phase == RESTARTING else "Normal"
        self._event(ctx, kind, "JobStatusUpdate", text)

    # -------------------------------------------------------------- plugins
    def _plugins(self, ctx: _Ctx) -> list[jobplugins.JobPlugin]:
        out = []
        for name, args in ctx.spec.plugins.items():
            if name == "task-topology":
                continue  # turned into PodGroup annotations, see _podgroup_meta
            plugin = jobplugins.build(name, args or [])
            if plugin is None:
                self._warn_once(ctx, f"plugin:{name}", "PluginError",
                                f"job plugin {name!r} is not supported by magma's controller; it is skipped "
                                f"(supported: {', '.join(jobplugins.registered())})")
                continue
            out.append(plugin)
        return out

    def _plugin_ctx(self, ctx: _Ctx, st: _St) -> PluginContext:
        return PluginContext(cluster=self.cluster, now=ctx.now, controlled=st.controlled, new_uid=self._new_uid)

    def _plugins_add(self, ctx: _Ctx, st: _St) -> None:
        self._run_plugins(ctx, st, "on_job_add")

    def _plugins_update(self, ctx: _Ctx, st: _St) -> None:
        self._run_plugins(ctx, st, "on_job_update")

    def _plugins_delete(self, ctx: _Ctx, st: _St) -> None:
        if not _has_plugin_objects(st):
            return
        self._run_plugins(ctx, st, "on_job_delete")

    def _run_plugins(self, ctx: _Ctx, st: _St, hook: str) -> None:
        if not ctx.spec.plugins:
            return
        pctx = self._plugin_ctx(ctx, st)
        for plugin in self._plugins(ctx):
            try:
                getattr(plugin, hook)(ctx.job, pctx)
            except ClusterError as e:
                self._event(ctx, "Warning", "PluginError", f"plugin {plugin.name} {hook} failed: {e}")
        if pctx.created:
            self._wrote(ctx)

    # -------------------------------------------------------------- PodGroup
    def _podgroup_meta(self, job: Job) -> tuple[dict[str, str], dict[str, str]]:
        annotations = dict(job.annotations)
        for k, v in _task_topology_annotations(job).items():
            annotations.setdefault(k, v)
        return annotations, dict(job.labels)

    def _desired_pg(self, ctx: _Ctx) -> tuple[int, dict[str, int], Resources, str | None, dict[str, str]]:
        spec = ctx.spec
        fp = (ctx.job.metadata.uid, spec.min_available, spec.priority_class_name,
              tuple((t.name, t.replicas, t.min_available, id(t.template)) for t in spec.tasks),
              len(ctx.state.priority_classes))
        cached = self._pg_cache.get(ctx.key)
        if cached is not None and cached[0] == fp:
            return cached[1]
        min_task = {t.name or "": (t.min_available if t.min_available is not None else t.replicas) for t in spec.tasks}
        min_res = self.min_resources(ctx.job, ctx.state)
        desired = (spec.min_available or 0, min_task, min_res, spec.priority_class_name, min_res.to_quantities())
        self._pg_cache[ctx.key] = (fp, desired)
        return desired

    @staticmethod
    def min_resources(job: Job, state: ClusterState | None = None) -> Resources:
        """Requests of the first minAvailable pods, tasks ordered by template PriorityClass value (Volcano's
        calcPGMinResources)."""
        pcs = state.priority_classes if state is not None else {}

        def prio(t: TaskSpec) -> int:
            name = t.template.spec.priority_class_name
            if not name:
                return 0
            if name in pcs:
                return pcs[name].value
            return SYSTEM_PRIORITY_CLASSES.get(name, 0)

        tasks = sorted(job.spec.tasks, key=lambda t: -prio(t))  # stable: equal priorities keep spec order
        need = job.spec.min_available or 0
        total_task_min = sum(t.min_available if t.min_available is not None else t.replicas for t in tasks)
        out = Resources()

        def req(t: TaskSpec) -> Resources:
            return t.template.spec.request().without(PODS)

        if need < total_task_min:
            count = need
            for t in tasks:
                if count <= t.replicas:
                    out = out + req(t) * count
                    break
                out = out + req(t) * t.replicas
                count -= t.replicas
            return out
        pods = 0
        for t in tasks:
            if t.min_available is None:
                continue
            take = min(t.min_available, need - pods)
            out = out + req(t) * take
            pods += take
            if pods >= need:
                return out
        left = need - pods
        for t in tasks:
            spare = t.replicas
            if t.min_available is not None:
                if t.min_available == t.replicas:
                    continue
                spare = t.replicas - t.min_available
            take = min(spare, left)
            out = out + req(t) * take
            left -= take
            if left <= 0:
                break
        return out

    def _ensure_podgroup(self, ctx: _Ctx) -> PodGroup | None:
        job = ctx.job
        key = ctx.pg_key
        pg = self.cluster.get("PodGroup", key)
        desired = self._desired_pg(ctx)
        min_member, min_task, min_res, pcn, quantities = desired
        if pg is None:
            annotations, labels = self._podgroup_meta(job)
            spec: dict = {"minMember": min_member, "minTaskMember": min_task, "queue": job.spec.queue,
                          "minResources": _quantities(quantities)}
            if pcn:
                spec["priorityClassName"] = pcn
            if job.spec.network_topology is not None:
                spec["networkTopology"] = job.spec.network_topology.dump()
            pg = PodGroup.model_validate({
                "apiVersion": PodGroup.API_VERSION, "kind": "PodGroup",
                "metadata": {"name": podgroup_name(job), "namespace": job.namespace,
                             "uid": self._new_uid(f"PodGroup/{key}"), "creationTimestamp": ctx.now,
                             "annotations": annotations, "labels": labels,
                             "ownerReferences": [controller_ref(job)]},
                "spec": spec,
                "status": {"phase": "Pending"},
            })
            try:
                self.cluster.create(pg)
            except ClusterError as e:
                self._event(ctx, "Warning", "PodGroupError", f"Failed to create PodGroup, err: {e}")
                return self.cluster.get("PodGroup", key)  # type: ignore[return-value]
            self._pg_phase[ctx.key] = "Pending"
            self._wrote(ctx)
            return pg
        assert isinstance(pg, PodGroup)
        updates = self._podgroup_spec_updates(pg, desired)
        if updates:
            for name, value in updates.items():
                setattr(pg.spec, name, value)
            self.cluster.update(pg)
            self._wrote(ctx)
        return pg

    @staticmethod
    def _podgroup_spec_updates(pg: PodGroup, desired: tuple) -> dict:
        """The PodGroup spec fields that differ from what the job asks for (`_desired_pg`), with their values."""
        min_member, min_task, min_res, pcn, quantities = desired
        s = pg.spec
        out: dict = {}
        if s.min_member != min_member:
            out["min_member"] = min_member
        if dict(s.min_task_member) != min_task:
            out["min_task_member"] = dict(min_task)
        if {k: q.raw for k, q in s.min_resources.items()} != quantities and pg.min_resources() != min_res:
            out["min_resources"] = {k: Quantity.parse(v) for k, v in _quantities(quantities).items()}
        if (s.priority_class_name or None) != (pcn or None):
            out["priority_class_name"] = pcn
        return out

    def _light_sync(self, ctx: _Ctx) -> bool:
        """The sync of a job named by nothing but writes of its PodGroup since its last sync ended at a fixed point
        (fastpath.light_podgroup_syncs); True if done. Its Job and pods are as that sync left them: nothing to
        prepare, and its memory of the pods matches them (no pod event; forgetting the pods that sync deleted
        waits for the next full sync); no command or timer waits. When its PodGroup turned Unknown (an event) or
        the state pass would read the PodGroup differently, the full sync runs instead."""
        seen = self._pg_phase.get(ctx.key)
        pg = self.cluster.get("PodGroup", ctx.pg_key)
        if not isinstance(pg, PodGroup) or _turned_unknown(pg.status.phase, seen) or \
                not self._podgroup_changes_nothing(ctx, seen, pg):
            return False
        self._pg_phase[ctx.key] = pg.status.phase  # what `_observe_podgroup` notes
        self._podgroup_pending_event(ctx, pg)
        self._ttl(ctx)
        return True

    def _podgroup_changes_nothing(self, ctx: _Ctx, seen: str | None, pg: PodGroup) -> bool:
        """After a sync that ended at a fixed point and writes of the job's PodGroup alone: whether the state pass
        reads the PodGroup as then. A Pending or Running job's pass reads of it only whether it exists, whether it
        is Pending and its spec (`_ensure_podgroup`); `seen` is the phase its last sync saw."""
        if seen is None or (ctx.job.status.state.phase or "") not in (PENDING, RUNNING):
            return False
        if ((pg.status.phase or PENDING) == PENDING) != (seen == PENDING):
            return False
        return not self._podgroup_spec_updates(pg, self._desired_pg(ctx))

    def _podgroup_pending_event(self, ctx: _Ctx, pg: Object | None = None) -> None:
        """`pg`: the job's PodGroup when the caller has just read it (None: read it here)."""
        if pg is None:
            pg = self.cluster.get("PodGroup", ctx.pg_key)
        if not isinstance(pg, PodGroup):
            return
        latest = None
        latest_t = None
        for c in pg.status.conditions:
            if c.status != "True":
                continue
            t = _time(c.last_transition_time)
            if latest is None or (t is not None and (latest_t is None or t >= latest_t)):
                latest, latest_t = c, t
        if latest is None or latest.type == "Scheduled":
            self._pg_warned.pop(ctx.key, None)
            return
        msg = (f"PodGroup {ctx.job.namespace}:{ctx.job.name} {latest.type.lower()}, "
               f"reason: {latest.message or latest.reason or ''}")
        if self._pg_warned.get(ctx.key) == msg:
            return
        self._pg_warned[ctx.key] = msg
        self._event(ctx, "Warning", "PodGroupPending", msg)

    # -------------------------------------------------------------- pods
    def _create_pod(self, ctx: _Ctx, ts: TaskSpec, index: int, st: _St) -> Pod | None:
        job = ctx.job
        tname = ts.name or DEFAULT_TASK_SPEC
        name = f"{job.name}-{tname}-{index}"
        tmpl = ts.template
        spec = deep_copy(tmpl.spec) if fastpath.fast_template_copy else tmpl.spec.model_copy(deep=True)
        labels = dict(tmpl.metadata.labels)
        annotations = dict(tmpl.metadata.annotations)
        if not spec.scheduler_name:
            spec.scheduler_name = job.spec.scheduler_name
        if not spec.priority_class_name and job.spec.priority_class_name:
            spec.priority_class_name = job.spec.priority_class_name
        idx = str(index)
        annotations.update({
            TASK_INDEX_ANNOTATION: idx,
            TASK_SPEC_ANNOTATION: tname,
            GROUP_NAME_ANNOTATION: podgroup_name(job),
            JOB_NAME_ANNOTATION: job.name,
            QUEUE_NAME_KEY: job.spec.queue or "default",
            JOB_VERSION_ANNOTATION: str(st.version),
            TEMPLATE_KEY: f"{job.name}-{tname}",
            RETRY_COUNT_KEY: str(st.retry),
        })
        topology_policy = (ts.model_extra or {}).get("topologyPolicy")
        if topology_policy:
            annotations[NUMA_POLICY_KEY] = str(topology_policy)
        ja = job.annotations
        for k in (PREEMPTABLE_ANNOTATION, COOLDOWN_TIME_KEY, REVOCABLE_ZONE_KEY):
            if k in ja:
                annotations[k] = ja[k]
        if JDB_MIN_AVAILABLE_KEY in ja:
            annotations[JDB_MIN_AVAILABLE_KEY] = ja[JDB_MIN_AVAILABLE_KEY]
        elif JDB_MAX_UNAVAILABLE_KEY in ja:
            annotations[JDB_MAX_UNAVAILABLE_KEY] = ja[JDB_MAX_UNAVAILABLE_KEY]
        labels.update({
            TASK_INDEX_ANNOTATION: idx,
            JOB_NAME_ANNOTATION: job.name,
            TASK_SPEC_ANNOTATION: tname,
            JOB_NAMESPACE_LABEL: job.namespace,
            QUEUE_NAME_KEY: job.spec.queue or "default",
        })
        for k in (PREEMPTABLE_ANNOTATION, COOLDOWN_TIME_KEY):
            if k in job.labels:
                labels[k] = job.labels[k]
        size = _partition_size(ts)
        if size is not None:
            labels[PARTITION_ID_LABEL] = str(index // size if size > 0 else 0)
        self._resolve_priority(ctx, spec)
        pod = Pod(  # metadata and status validated from dicts in the same pass
            api_version="v1", kind="Pod",
            metadata={
                "name": name, "namespace": job.namespace, "uid": self._new_uid(f"Pod/{job.namespace}/{name}"),
                "creationTimestamp": ctx.now, "labels": labels, "annotations": annotations,
                "ownerReferences": [controller_ref(job)],
            },
            spec=spec,
            status={"phase": "Pending"},
        )
        for plugin in self._plugins(ctx):
            plugin.on_pod_create(pod, job)
        try:
            self.cluster.create(pod)
        except ClusterError as e:
            self._warn_once(ctx, f"create:{name}", "FailedCreate", f"Error creating pods: {e}")
            return None
        ctx.pods[name] = pod
        uid = pod_uid(pod)
        self._memo.setdefault(ctx.key, {})[uid] = _PodMemo(name, tname, "Pending", 0, st.version,
                                                            labels.get(PARTITION_ID_LABEL, ""))
        ctx.new_requests.append(Request(POD_PENDING, tname, name, uid, version=st.version, time=ctx.now))
        self._wrote(ctx)
        return pod

    def _resolve_priority(self, ctx: _Ctx, spec) -> None:
        """What the API server's Priority admission plugin sets on a new pod."""
        pcs = ctx.state.priority_classes
        name = spec.priority_class_name
        if name:
            pc = pcs.get(name)
            if pc is not None:
                spec.priority = pc.value
                if spec.preemption_policy is None:
                    spec.preemption_policy = pc.preemption_policy or "PreemptLowerPriority"
            elif name in SYSTEM_PRIORITY_CLASSES:
                spec.priority = SYSTEM_PRIORITY_CLASSES[name]
            else:
                self._warn_once(ctx, f"pc:{name}", "FailedCreate",
                                f"PriorityClass {name!r} not found; pods get no priority value (the API server "
                                f"would refuse them)")
            return
        default = default_priority_class(pcs)
        if default is not None:
            spec.priority_class_name = default.name
            spec.priority = default.value
            if spec.preemption_policy is None:
                spec.preemption_policy = default.preemption_policy or "PreemptLowerPriority"
        else:
            spec.priority = 0

    def _delete_pod(self, ctx: _Ctx, pod: Pod) -> bool:
        ctx.deletes += 1
        uid = pod_uid(pod)
        try:
            self.cluster.delete("Pod", pod.key)
        except ClusterError as e:
            self._event(ctx, "Warning", "FailedDelete", f"Error deleting pods: {e}")
            return False
        self._deleted.setdefault(ctx.key, set()).add(uid)
        ctx.pods.pop(pod.name, None)
        per_job = self._delayed.get(ctx.key)
        if per_job:
            for name, d in list(per_job.items()):
                if d.uid == uid:
                    del per_job[name]
        self._wrote(ctx)
        return True

    # -------------------------------------------------------------- ttl and deletion
    def _ttl(self, ctx: _Ctx) -> None:
        job = ctx.job
        ttl = job.spec.ttl_seconds_after_finished
        if ttl is None or job.status.state.phase not in FINISHED:
            return
        finished = _time(job.status.state.last_transition_time)
        if finished is None:
            job.status.state = job.status.state.model_copy(update={"last_transition_time": ctx.now})
            self._write(job)
            return
        if ctx.now < finished + ttl:
            return
        self._event(ctx, "Normal", "TTLExpired",
                    f"deleted {ctx.now - finished:g}s after it finished (ttlSecondsAfterFinished {ttl})")
        self._delete_owned(job)
        self.cluster.delete("Job", job.key)
        self._forget(job.key)
        self._changed = True

    def _delete_owned(self, job: Job) -> None:
        """Delete the pods, PodGroup and side objects a Job owns."""
        state = self.cluster.state()
        uid = job.metadata.uid
        index = self._job_index()
        if index is not None:  # the same objects, in the same order, from the owner index
            index.refresh()
            for obj in index.owned(state, {uid} if uid else set(), {(job.namespace, job.name)}):
                ref = _controller_owner(obj)
                if ref is not None and ref.kind == "Job" and obj.namespace == job.namespace and \
                        ((uid and ref.uid == uid) or (not ref.uid and ref.name == job.name)):
                    self.cluster.delete(obj.KIND or obj.kind, obj.key)
                    self._changed = True
            return
        for pod in list(state.pods.values()):
            ref = _controller_owner(pod)
            if ref is not None and ref.kind == "Job" and ((uid and ref.uid == uid) or
                                                         (not ref.uid and ref.name == job.name)) \
                    and pod.namespace == job.namespace:
                self.cluster.delete("Pod", pod.key)
                self._changed = True
        buckets: list[Iterable[Object]] = [list(state.podgroups.values())]
        for kind in ("Service", "ConfigMap", "Secret", "NetworkPolicy"):
            buckets.append(list(state.others.get(kind, {}).values()))
        for objs in buckets:
            for obj in objs:
                ref = _controller_owner(obj)
                if ref is not None and ref.kind == "Job" and obj.namespace == job.namespace and \
                        ((uid and ref.uid == uid) or (not ref.uid and ref.name == job.name)):
                    self.cluster.delete(obj.KIND or obj.kind, obj.key)
                    self._changed = True

    def _collect_orphans(self, state: ClusterState) -> None:
        """Objects owned by a Job this controller knew and that is gone (Kubernetes' garbage collector)."""
        index = self._job_index()
        known_since, self._known_since = self._known_since, set()
        left: set[str] = set()
        rebuilt = True
        if index is not None:
            # After a look, every known uid is live; a known uid is gone now if it was added since, or if a Job
            # held it then and none does now (it left).
            index.refresh()
            left, rebuilt = index.take_left()
        if index is None or rebuilt:
            live = {j.metadata.uid for j in state.jobs.values() if j.metadata.uid}
            gone = self._known_uids - live
        else:
            gone = {u for u in left | known_since if u in self._known_uids and u not in index.uid_jobs}
        if not gone:
            return
        buckets: list[list[Object]]
        if index is not None:
            buckets = [index.owned(state, gone, set())]
        else:
            buckets = [list(state.pods.values()), list(state.podgroups.values())]
            for kind in OWNED_KINDS:
                buckets.append(list(state.others.get(kind, {}).values()))
        for objs in buckets:
            for obj in objs:
                ref = _controller_owner(obj)
                if ref is not None and ref.kind == "Job" and ref.uid in gone:
                    self.cluster.delete(obj.KIND or obj.kind, obj.key)
                    self._changed = True
        for key, uid in list(self._job_uid.items()):
            if uid in gone:
                self._forget(key)
        self._known_uids -= gone

    def _forget(self, key: str) -> None:
        for d in (self._memo, self._deleted, self._delayed, self._pg_phase, self._pg_warned, self._job_uid,
                  self._defaulted, self._pg_cache, self._ttl_due):
            d.pop(key, None)
        self._settled.discard(key)
        self._still.discard(key)
        if self._index is not None:
            self._index.pods_found.pop(key, None)
        self._warned = {w for w in self._warned if w[0] != key}

    # -------------------------------------------------------------- commands
    @staticmethod
    def _job_commands(state: ClusterState) -> dict[str, list[Command]]:
        out: dict[str, list[Command]] = {}
        cmds = sorted(state.commands.values(),
                      key=lambda c: (_time(c.metadata.creation_timestamp) or 0.0, c.name))
        for cmd in cmds:
            target = cmd.target_object
            if target is None or target.kind != "Job" or not target.name:
                continue
            out.setdefault(f"{cmd.namespace}/{target.name}", []).append(cmd)
        return out

    def _consume_command(self, cmd: Command) -> None:
        self.cluster.delete("Command", cmd.key)
        self._changed = True

    # -------------------------------------------------------------- writes and events
    def _write(self, job: Job) -> None:
        self.cluster.update(job)
        self._changed = True

    def _wrote(self, ctx: _Ctx) -> None:
        ctx.writes += 1
        self._changed = True

    def _event(self, ctx: _Ctx, type_: str, reason: str, message: str) -> None:
        self.cluster.record_event(type_, reason, "Job", ctx.key, message)

    def _warn_once(self, ctx: _Ctx, what: str, reason: str, message: str) -> None:
        if (ctx.key, what) in self._warned:
            return
        self._warned.add((ctx.key, what))
        self._event(ctx, "Warning", reason, message)

    def _new_uid(self, seed: str) -> str:
        self._seq += 1
        return _uuid5(f"{seed}/{self._seq}")


__all__ = ["JobController", "Request", "DelayedAction", "apply_policies", "go_duration", "podgroup_name",
           "PHASES", "FINISHED", "GANG_RESTART_ANNOTATION"]
