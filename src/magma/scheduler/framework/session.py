"""One scheduling session: the snapshot, the plugins' extension functions, and the voting between them.

Plugins register functions per extension point at open (`add_*`); actions ask the session, which combines
the plugins' answers tier by tier exactly as Volcano does (reference §3), honouring each plugin's enable
flags from the config. Placement changes (allocate, pipeline, evict) update the session at once and notify
the plugins' event handlers; a Statement records them so they can be committed or discarded.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from magma.api.resources import Resources

from .info import ALLOCATED, JobInfo, NodeInfo, QueueInfo, TaskInfo, TaskStatus
from .snapshot import Snapshot

S = TaskStatus

# Vote values for JobPipelined / JobEnqueueable, as Volcano's util.Permit / Abstain / Reject.
PERMIT, ABSTAIN, REJECT = 1, 0, -1

# Extension point -> the config flag that switches a plugin's function off for it.
FLAGS = {
    "job_order": "enableJobOrder",
    "queue_order": "enableQueueOrder",
    "task_order": "enableTaskOrder",
    "predicate": "enablePredicate",
    "node_order": "enableNodeOrder",
    "preemptable": "enablePreemptable",
    "reclaimable": "enableReclaimable",
    "preemptive": "enablePreemptive",
    "overused": "enabledOverused",
    "allocatable": "enabledAllocatable",
    "job_ready": "enableJobReady",
    "job_pipelined": "enableJobPipelined",
    "job_enqueueable": "enableJobEnqueued",
    "job_enqueued": "enableJobEnqueued",
    "job_starving": "enableJobStarving",
    "job_valid": None,  # Volcano consults every plugin
    "victim_tasks": "enabledVictim",
}


@dataclass
class ValidateResult:
    passed: bool
    reason: str = ""
    message: str = ""


@dataclass
class EventHandler:
    allocate: Callable[[TaskInfo], None] | None = None
    deallocate: Callable[[TaskInfo], None] | None = None


@dataclass
class PredicateResult:
    """Which candidate nodes pass, and for the others the first reason that failed them."""

    mask: np.ndarray  # over the candidate rows given
    reasons: list[tuple[str, np.ndarray]] = field(default_factory=list)  # (reason, failing mask) in order


class Session:
    def __init__(self, snapshot: Snapshot, config: Any, plugin_options: list[list[Any]], cluster: Any = None):
        self.snapshot = snapshot
        self.cluster = cluster  # the cluster interface; None when only decisions are wanted (tests)
        self.binds: list[tuple[str, str]] = []  # (pod key, node) committed this session
        self.evictions: list[tuple[str, str]] = []  # (pod key, reason) committed this session
        self.evicted_uids: dict[str, str] = {}  # pod uid -> reason, for traces that outlive pod names
        self.jobs: dict[str, JobInfo] = snapshot.jobs
        self.queues: dict[str, QueueInfo] = snapshot.queues
        self.nodes: dict[str, NodeInfo] = snapshot.nodes
        self.node_list: list[NodeInfo] = sorted(snapshot.nodes.values(), key=lambda n: n.index)
        self.table = snapshot.table
        self.total: Resources = snapshot.total
        self.now = snapshot.now
        self.config = config
        self.tiers = plugin_options  # list of tiers, each a list of plugin options (name, enabled(flag), arguments)
        self.plugins: dict[str, Any] = {}
        self._fns: dict[str, dict[str, Callable]] = {k: {} for k in FLAGS}
        self._fns["node_order_batch"] = {}
        self.event_handlers: list[EventHandler] = []
        self.events: list[tuple[str, str, str, str, str]] = []  # (type, reason, kind, key, message)
        self.tasks_by_uid: dict[str, TaskInfo] = {t.uid: t for j in self.jobs.values() for t in j.tasks.values()}

    # ---------------------------------------------------------------- registration
    def add_fn(self, point: str, plugin: str, fn: Callable) -> None:
        self._fns[point][plugin] = fn

    def add_event_handler(self, handler: EventHandler) -> None:
        self.event_handlers.append(handler)

    def _enabled(self, point: str):
        """(plugin name, function) per tier, for plugins enabled at this extension point."""
        flag = FLAGS.get(point)
        fns = self._fns[point]
        for tier in self.tiers:
            yield [(opt.name, fns[opt.name]) for opt in tier
                   if opt.name in fns and (flag is None or opt.enabled(flag))]

    # ---------------------------------------------------------------- ordering
    def _compare(self, point: str, left, right) -> int:
        for tier in self._enabled(point):
            for _, fn in tier:
                c = fn(left, right)
                if c:
                    return c
        return 0

    def job_order_cmp(self, a: JobInfo, b: JobInfo) -> int:
        c = self._compare("job_order", a, b)
        if c:
            return c
        return (a.creation > b.creation) - (a.creation < b.creation) or (a.uid > b.uid) - (a.uid < b.uid)

    def queue_order_cmp(self, a: QueueInfo, b: QueueInfo) -> int:
        c = self._compare("queue_order", a, b)
        if c:
            return c
        return (a.creation > b.creation) - (a.creation < b.creation) or (a.uid > b.uid) - (a.uid < b.uid)

    def task_order_cmp(self, a: TaskInfo, b: TaskInfo) -> int:
        c = self._compare("task_order", a, b)
        if c:
            return c
        return ((a.index > b.index) - (a.index < b.index) or (a.creation > b.creation) - (a.creation < b.creation)
                or (a.uid > b.uid) - (a.uid < b.uid))

    def sorted_jobs(self, jobs) -> list[JobInfo]:
        return sorted(jobs, key=functools.cmp_to_key(self.job_order_cmp))

    def sorted_queues(self, queues) -> list[QueueInfo]:
        return sorted(queues, key=functools.cmp_to_key(self.queue_order_cmp))

    def sorted_tasks(self, tasks) -> list[TaskInfo]:
        return sorted(tasks, key=functools.cmp_to_key(self.task_order_cmp))

    # ---------------------------------------------------------------- boolean votes
    def job_valid(self, job: JobInfo) -> ValidateResult:
        for tier in self._enabled("job_valid"):
            for _, fn in tier:
                r = fn(job)
                if r is not None and not r.passed:
                    return r
        return ValidateResult(True)

    def job_ready(self, job: JobInfo) -> bool:
        return all(fn(job) for tier in self._enabled("job_ready") for _, fn in tier)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(fn(queue, task) for tier in self._enabled("allocatable") for _, fn in tier)

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(fn(queue, task) for tier in self._enabled("preemptive") for _, fn in tier)

    def overused(self, queue: QueueInfo) -> bool:
        return any(fn(queue) for tier in self._enabled("overused") for _, fn in tier)

    def _permit_vote(self, point: str, job: JobInfo) -> bool:
        for tier in self._enabled(point):
            permitted = False
            for _, fn in tier:
                v = fn(job)
                if v < 0:
                    return False
                if v > 0:
                    permitted = True
            if permitted:
                return True
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._permit_vote("job_pipelined", job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self._permit_vote("job_enqueueable", job)

    def job_enqueued(self, job: JobInfo) -> None:
        for tier in self._enabled("job_enqueued"):
            for _, fn in tier:
                fn(job)

    def job_starving(self, job: JobInfo) -> bool:
        """AND over the first tier that has any starving function (Volcano's rule)."""
        for tier in self._enabled("job_starving"):
            if tier:
                return all(fn(job) for _, fn in tier)
        return False

    def job_starving_any(self, job: JobInfo) -> bool:
        """OR over the same tier: magma's preempt and reclaim use this (Volcano #3787, see preempt.py)."""
        for tier in self._enabled("job_starving"):
            if tier:
                return any(fn(job) for _, fn in tier)
        return False

    # ---------------------------------------------------------------- victims
    def _victims(self, point: str, actor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        for tier in self._enabled(point):
            victims: list[TaskInfo] | None = None
            for _, fn in tier:
                chosen, abstain = fn(actor, candidates)
                if abstain:
                    continue
                if not chosen:
                    victims = None
                    break
                if victims is None:
                    victims = list(chosen)
                else:
                    keep = {t.uid for t in chosen}
                    victims = [t for t in victims if t.uid in keep]
            if victims is not None:
                return victims
        return []

    def preemptable(self, preemptor: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims("preemptable", preemptor, candidates)

    def reclaimable(self, reclaimer: TaskInfo, candidates: list[TaskInfo]) -> list[TaskInfo]:
        return self._victims("reclaimable", reclaimer, candidates)

    # ---------------------------------------------------------------- nodes
    def predicate(self, task: TaskInfo, rows: np.ndarray) -> PredicateResult:
        """Run every enabled predicate over candidate rows; a node fails on the first predicate it fails."""
        ok = np.ones(len(rows), dtype=bool)
        reasons: list[tuple[str, np.ndarray]] = []
        for tier in self._enabled("predicate"):
            for _, fn in tier:
                r: PredicateResult = fn(task, rows)
                for reason, failing in r.reasons:
                    newly = failing & ok
                    if newly.any():
                        reasons.append((reason, newly))
                ok &= r.mask
        return PredicateResult(ok, reasons)

    def node_scores(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        """Sum of every enabled plugin's score for the candidate rows."""
        total = np.zeros(len(rows), dtype=np.float64)
        for point in ("node_order", "node_order_batch"):
            flagged = "node_order"
            for tier in self.tiers:
                for opt in tier:
                    fn = self._fns[point].get(opt.name)
                    if fn is not None and opt.enabled(FLAGS[flagged]):
                        total += fn(task, rows)
        return total

    # ---------------------------------------------------------------- placement (changes session state now)
    def _on_allocate(self, task: TaskInfo) -> None:
        for h in self.event_handlers:
            if h.allocate:
                h.allocate(task)

    def _on_deallocate(self, task: TaskInfo) -> None:
        for h in self.event_handlers:
            if h.deallocate:
                h.deallocate(task)

    def _place(self, task: TaskInfo, node: NodeInfo, status: TaskStatus) -> None:
        task.status = status
        task.node = node.name
        node.tasks[task.uid] = task
        self.table.add_task(node.index, task)
        self._on_allocate(task)

    def _unplace(self, task: TaskInfo) -> None:
        node = self.nodes[task.node]
        self.table.remove_task(node.index, task)
        node.tasks.pop(task.uid, None)

    def allocate(self, task: TaskInfo, node: NodeInfo) -> None:
        self._place(task, node, S.ALLOCATED)

    def pipeline(self, task: TaskInfo, node: NodeInfo) -> None:
        self._place(task, node, S.PIPELINED)
        task.nominated_node = node.name

    def evict(self, task: TaskInfo) -> None:
        """Mark a running task Releasing: it still holds the node until deleted, but its job loses it."""
        node = self.nodes[task.node]
        self.table.remove_task(node.index, task)
        task.status = S.RELEASING
        self.table.add_task(node.index, task)
        self._on_deallocate(task)

    # undo operations, used by Statement.discard
    def unallocate(self, task: TaskInfo) -> None:
        self._unplace(task)
        task.status = S.PENDING
        task.node = None
        task.nominated_node = None
        self._on_deallocate(task)

    def unevict(self, task: TaskInfo, previous: TaskStatus) -> None:
        node = self.nodes[task.node]
        self.table.remove_task(node.index, task)
        task.status = previous
        self.table.add_task(node.index, task)
        self._on_allocate(task)

    # ---------------------------------------------------------------- commit (called by Statement.commit)
    def commit_bind(self, task: TaskInfo) -> None:
        """Bind in the cluster. A refused bind puts the task back to Pending, so nothing is ever double-bound."""
        if self.cluster is not None:
            try:
                self.cluster.bind(task.key, task.node)
            except Exception as e:  # the cluster said no: resync next session
                node = task.node
                self.unallocate(task)
                self.record_event("Warning", "FailedScheduling", "Pod", task.key, f"bind to {node} failed: {e}")
                return
        self.table.remove_task(self.nodes[task.node].index, task)
        task.status = S.BINDING
        self.table.add_task(self.nodes[task.node].index, task)
        self.binds.append((task.key, task.node))

    def commit_evict(self, task: TaskInfo, reason: str) -> None:
        if self.cluster is not None:
            try:
                self.cluster.evict(task.key, reason)
            except Exception as e:
                self.record_event("Warning", "FailedEviction", "Pod", task.key, str(e))
                return
        self.evictions.append((task.key, reason))
        self.evicted_uids[task.uid] = reason
        job = self.job_of(task)
        if job is not None:
            self.record_event("Normal", "Evict", "PodGroup", job.key,
                              f"Pod {task.key} evicted by {reason}")

    # ---------------------------------------------------------------- helpers for actions and plugins
    def job_of(self, task: TaskInfo) -> JobInfo | None:
        return self.jobs.get(task.job)

    def queue_of(self, job: JobInfo) -> QueueInfo:
        return self.queues[job.queue]

    def record_event(self, type: str, reason: str, kind: str, key: str, message: str) -> None:
        self.events.append((type, reason, kind, key, message))

    def queue_allocated(self, queue: str) -> Resources:
        total = Resources()
        for j in self.jobs.values():
            if j.queue == queue:
                total = total + j.allocated()
        return total

    @staticmethod
    def allocated_statuses() -> frozenset[TaskStatus]:
        return ALLOCATED
