"""The scheduler's view of tasks, jobs, queues and nodes during one session.

These are plain mutable records built from API objects at session open (see snapshot.py). Resource
amounts per node live in the session's NodeTable arrays, not here, so that filtering and scoring run
over all nodes at once.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Hashable

from magma.api.resources import Resources

from . import fastpath

if TYPE_CHECKING:
    import numpy as np

    from magma.api.objects import Pod, PodGroup, Queue, Taint


class TaskStatus(enum.Enum):
    PENDING = "Pending"
    ALLOCATED = "Allocated"
    PIPELINED = "Pipelined"
    BINDING = "Binding"
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"

    def __str__(self) -> str:
        return self.value

    # Members are singletons: identity hashing (in C) instead of Enum's hash of the name (in Python). Status
    # sets are tested millions of times in a big session.
    __hash__ = object.__hash__


S = TaskStatus
# Statuses whose resources count as the job's allocation (Volcano's AllocatedStatus).
ALLOCATED = frozenset({S.ALLOCATED, S.BINDING, S.BOUND, S.RUNNING})
# Statuses that count towards a gang being ready.
READY = frozenset({S.ALLOCATED, S.BINDING, S.BOUND, S.RUNNING, S.SUCCEEDED})
# Volcano's PreemptableStatus: what preemption may take, and what evicting a job whole evicts.
PREEMPTABLE = frozenset({S.BOUND, S.RUNNING})
# Statuses that occupy a node.
ON_NODE = frozenset({S.ALLOCATED, S.PIPELINED, S.BINDING, S.BOUND, S.RUNNING, S.RELEASING})


@dataclass(eq=False)
class TaskInfo:
    uid: str
    name: str
    namespace: str
    job: str  # JobInfo.uid
    role: str  # task name within the job ("worker"), "" for a bare pod
    index: int  # the pod name's numeric suffix, for ordering
    resreq: Resources
    status: TaskStatus = S.PENDING
    node: str | None = None
    priority: int = 1
    preemptable: bool = True
    critical: bool = False  # system-critical or kube-system: never a victim (conformance)
    never_preempts: bool = False  # preemptionPolicy: Never
    creation: float = 0.0
    nominated_node: str | None = None
    pod: "Pod | None" = field(default=None, repr=False)
    vec: "np.ndarray | None" = field(default=None, repr=False)  # request as a NodeTable row
    shape: tuple = ()  # what predicates look at; identical shapes are interchangeable

    # Not fields: the job whose cached counts this task's status feeds (set by JobInfo), and best_effort's cache.
    _owner = None
    _be_cache: "tuple[Resources, bool] | None" = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def best_effort(self) -> bool:
        r = self.resreq
        c = self._be_cache
        if c is None or c[0] is not r:
            c = self._be_cache = (r, r.is_empty())
        return c[1]


def _get_status(self: TaskInfo) -> TaskStatus:
    return self._status


def _set_status(self: TaskInfo, value: TaskStatus) -> None:
    owner = self._owner
    if owner is not None:
        st = owner._stats
        if st is not None:
            # The job's counts move by one (fastpath.incremental_job_stats) instead of a recount of its tasks on
            # next use; figures derived from them are dropped either way. Only for a task the job still holds.
            if fastpath.incremental_job_stats and st.n == len(owner.tasks) and owner.tasks.get(self.uid) is self:
                st.move(self, self._status, value)
            else:
                owner.__dict__["_stats"] = None  # (not through KeptJob.__setattr__: not a session field)
    self._status = value


# A property over the dataclass field: every status change invalidates the owning job's cached counts.
TaskInfo.status = property(_get_status, _set_status)  # type: ignore[assignment]


_MISSING = object()


@dataclass(eq=False)
class JobInfo:
    uid: str
    name: str
    namespace: str
    queue: str
    priority: int = 0
    min_available: int = 1
    task_min_available: dict[str, int] = field(default_factory=dict)
    min_resources: Resources = field(default_factory=Resources)
    creation: float = 0.0
    phase: str = "Pending"  # PodGroup phase at session open
    podgroup: "PodGroup | None" = field(default=None, repr=False)
    owner_job: str | None = None  # "ns/name" of the Volcano Job that owns the PodGroup
    preemptable: bool = True
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    # Written during the session, read by reasons and at close.
    fit_errors: dict[str, str] = field(default_factory=dict)  # task uid -> why it did not fit
    reason: str | None = None  # the job-level reason in numbers
    reason_code: str | None = None  # NotEnoughResources, NotEnoughTasks, ...
    enqueued_this_session: bool = False
    conditions: list | None = None  # PodGroup conditions set this session (written at close)

    # Not a field: allocate's last turn of the job met a task no node held (it then tries its node bound first;
    # kept with the job's record across sessions, it changes only how fast allocate decides).
    homeless_turn = False
    # Not a field: counts of tasks per status and sums of requests, kept until a task's status changes (the task's
    # status setter clears it) or the task dict changes size. See `_job_stats`.
    _stats = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def stats(self) -> "_JobStats":
        st = self._stats
        if st is None or st.n != len(self.tasks):
            st = self._stats = _JobStats(self)
        return st

    def memo(self, key: Hashable, compute: "Callable[[JobInfo], Any]") -> Any:
        """A figure derived from the job's tasks' statuses (and its fixed fields), computed once until a task
        changes status. `key` must name everything else the figure depends on (the job's phase, say); the value
        must not be changed by callers."""
        st = self._stats  # (self.stats(), inline, kept in step with it: asked 500,000 times in a 1-day run)
        if st is None or st.n != len(self.tasks):
            st = self._stats = _JobStats(self)
        memo = st.memo
        value = memo.get(key, _MISSING)
        if value is _MISSING:  # (often, in allocate: every placement renews the memo)
            value = memo[key] = compute(self)
        return value

    def count(self, statuses: frozenset[TaskStatus] | set[TaskStatus]) -> int:
        st = self._stats  # (self.stats(), inline, kept in step with it)
        if st is None or st.n != len(self.tasks):
            st = self._stats = _JobStats(self)
        if isinstance(statuses, frozenset):
            n = st.sums.get(statuses)
            if n is None:
                # over the statuses the job's tasks have (a few), not over the set's
                n = st.sums[statuses] = sum([c for s, c in st.counts.items() if s in statuses])
            return n
        counts = st.counts
        return sum(counts.get(s, 0) for s in statuses)

    def pending_tasks(self) -> list[TaskInfo]:
        if not self.stats().counts.get(S.PENDING):
            return []
        return [t for t in self.tasks.values() if t.status is S.PENDING]

    def pending_best_effort(self) -> int:
        """Pending tasks that request nothing."""
        return self.stats().pending_best_effort

    def allocated(self) -> Resources:
        st = self.stats()
        if st.allocated is None:
            total = Resources()
            for t in self.tasks.values():
                if t.status in ALLOCATED:
                    total = total + t.resreq
            st.allocated = total
        return st.allocated

    def request(self) -> Resources:
        """Allocated plus pending: what the job would hold when fully placed."""
        total = Resources()
        for t in self.tasks.values():
            if t.status in ALLOCATED or t.status in (S.PENDING, S.PIPELINED):
                total = total + t.resreq
        return total

    def ready_count(self) -> int:
        return self.count(READY)

    def valid_count(self) -> int:
        """Tasks that could make the gang: placed, succeeded, pipelined or still pending."""
        return self.count(READY | {S.PIPELINED, S.PENDING})

    def is_pending(self) -> bool:
        return self.phase == "Pending"

    def is_ready(self) -> bool:
        return self.ready_count() >= self.min_available


class _JobStats:
    """A job's tasks counted per status (one pass), with lazily summed figures. Valid until a task of the job
    changes status: the pass makes the job every task's owner, and the status setter drops the job's stats."""

    __slots__ = ("n", "counts", "sums", "pending_best_effort", "allocated", "memo")

    def __init__(self, job: JobInfo):
        counts: dict[TaskStatus, int] = {}
        be = 0
        for t in job.tasks.values():
            t._owner = job
            st = t._status
            counts[st] = counts.get(st, 0) + 1
            if st is S.PENDING and t.best_effort:
                be += 1
        self.n = len(job.tasks)
        self.counts = counts
        self.sums: dict[frozenset, int] = {}  # count() per set of statuses asked
        self.pending_best_effort = be
        self.allocated: Resources | None = None
        self.memo: dict = {}

    def move(self, task: TaskInfo, old: TaskStatus, new: TaskStatus) -> None:
        """Count `task` (one of the job's tasks, counted here as `old`) as `new`, as a recount would (a status
        without tasks is not a key), with the sums per status set moved too; the figures derived from the counts
        are dropped (a new `memo` dict: its identity tells holders that the counts changed)."""
        counts = self.counts
        n = counts[old] - 1
        if n:
            counts[old] = n
        else:
            del counts[old]
        counts[new] = counts.get(new, 0) + 1
        sums = self.sums
        for k in sums:
            sums[k] += (new in k) - (old in k)
        if (old is S.PENDING) != (new is S.PENDING) and task.best_effort:
            self.pending_best_effort += 1 if new is S.PENDING else -1
        self.allocated = None
        self.memo = {}


@dataclass(eq=False)
class QueueInfo:
    name: str
    weight: int = 1
    capability: Resources = field(default_factory=Resources)  # empty = unlimited
    guarantee: Resources = field(default_factory=Resources)
    deserved_spec: Resources = field(default_factory=Resources)  # spec.deserved (capacity plugin)
    reclaimable: bool = True
    parent: str | None = None
    children: list[str] = field(default_factory=list)
    priority: int = 0
    state: str = "Open"
    creation: float = 0.0
    uid: str = ""
    queue: "Queue | None" = field(default=None, repr=False)

    @property
    def is_leaf(self) -> bool:
        return not self.children


@dataclass(eq=False)
class NodeInfo:
    name: str
    index: int  # row in the NodeTable
    labels: dict[str, str]
    taints: "list[Taint]"
    unschedulable: bool
    allocatable: Resources
    tasks: dict[str, TaskInfo] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)  # the Node's (e.g. GPU topology for devices.py)
