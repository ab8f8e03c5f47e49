"""task-topology: keep the roles of a job that talk to each other together (Volcano's task-topology plugin).

A job opts in through its PodGroup annotations (task names are the pods' `volcano.sh/task-spec`):
  volcano.sh/task-topology-affinity       "ps,worker;chief"   groups of roles to co-locate ("a" alone: its
                                                               pods together)
  volcano.sh/task-topology-anti-affinity  "ps;chief,evaluator" groups to keep apart ("a" alone: spread its pods)
  volcano.sh/task-topology-task-order     "ps,worker"          which roles go first, among those with topology
or, in the form of a Volcano Job's `spec.plugins: {task-topology: ["--task-affinity=ps,worker"]}` copied by the
job controller to the PodGroup annotation `volcano.sh/task-topology`: a JSON list (or a whitespace-separated
string) of `--task-affinity=...`, `--task-anti-affinity=...`, `--task-order=...` with the same value syntax.
The dedicated annotations win over the same setting inside `volcano.sh/task-topology`. A setting naming a role
the job does not have, or naming a role twice in one group, disables the plugin for that job (as in Volcano).

Per job with pending tasks, the roles with any (anti-)affinity are sorted into buckets: tasks already on a node
seed one bucket per node, then pending tasks (higher task-order first, then stronger topology kind: self
anti-affinity > inter affinity > self affinity > inter anti-affinity, then name) each join the bucket whose
members they have the most affinity minus anti-affinity with (ties: the bucket with the smaller pending request),
or a new bucket when that best value is negative.

- TaskOrder: tasks in a bucket before tasks without one; within a job, tasks of bigger buckets (by pending
  members) first, then older buckets; within a bucket, by task order and topology kind.
- NodeOrder (argument `task-topology.weight`, default 1): for a task in a bucket, on a node whose idle +
  releasing resources hold the task: bucket members already on the node, minus this job's pods on the node that
  the task has anti-affinity with, plus the bucket's pending members, minus one for each other pending member
  that must be left out for the bucket's pending request to fit the node (members taken out in bucket order);
  times the weight, scaled by 100 / (largest bucket size at session open). 0 otherwise.

Deliberate differences from Volcano, both fixes: the anti-affinity penalty also counts the job's pods that were
already on the node when the session opened (Volcano only counts those placed during the session), and
undoing a placement (a discarded statement, an eviction) undoes its effect on the buckets (Volcano has no
deallocate handler, so a discarded allocation keeps attracting the bucket). Role names in the settings may
carry spaces around commas. When Volcano must drop pending members to fit a bucket, it drops them in random
(map) order; magma drops them in bucket order, so scores are reproducible.
"""

from __future__ import annotations

import functools
import json
import shlex
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from magma.api.resources import CPU, MEMORY, PODS

from ..framework import EventHandler, JobInfo, Session, TaskInfo, plugin
from . import _selectors as sel

NAME = "task-topology"
AFFINITY = "volcano.sh/task-topology-affinity"
ANTI_AFFINITY = "volcano.sh/task-topology-anti-affinity"
TASK_ORDER = "volcano.sh/task-topology-task-order"
JOB_PLUGIN = "volcano.sh/task-topology"  # the Job's plugin arguments, copied to the PodGroup
_ARG_FLAGS = {"--task-affinity": AFFINITY, "--task-anti-affinity": ANTI_AFFINITY, "--task-order": TASK_ORDER}

# Topology kinds, stronger first (Volcano's affinityPriority).
SELF_ANTI, INTER_AFF, SELF_AFF, INTER_ANTI = 4, 3, 2, 1


@dataclass
class Topology:
    affinity: list[list[str]] = field(default_factory=list)
    anti_affinity: list[list[str]] = field(default_factory=list)
    task_order: list[str] = field(default_factory=list)


def _groups(text: str) -> list[list[str]]:
    return [[r.strip() for r in part.split(",") if r.strip()] for part in text.split(";") if part.strip()]


def _plugin_args(raw: str) -> dict[str, str]:
    """`volcano.sh/task-topology`: a JSON list of args, or a shell-like string of them."""
    try:
        items = json.loads(raw)
        if isinstance(items, str):
            items = shlex.split(items)
    except ValueError:
        items = shlex.split(raw)
    out: dict[str, str] = {}
    if not isinstance(items, list):
        return out
    for item in items:
        flag, _, value = str(item).partition("=")
        if flag.strip() in _ARG_FLAGS:
            out[_ARG_FLAGS[flag.strip()]] = value.strip()
    return out


def read_topology(job: JobInfo) -> Topology | None:
    """The job's topology settings, None when it has none or they name roles the job does not have."""
    ann = dict(job.podgroup.annotations) if job.podgroup is not None else {}
    settings = _plugin_args(ann[JOB_PLUGIN]) if JOB_PLUGIN in ann else {}
    settings.update({k: ann[k] for k in (AFFINITY, ANTI_AFFINITY, TASK_ORDER) if k in ann})
    if not settings:
        return None
    roles = {t.role for t in job.tasks.values()}

    def valid(groups: list[list[str]]) -> bool:
        return all(len(set(g)) == len(g) and set(g) <= roles for g in groups)

    topo = Topology()
    if AFFINITY in settings:
        topo.affinity = _groups(settings[AFFINITY])
    if ANTI_AFFINITY in settings:
        topo.anti_affinity = _groups(settings[ANTI_AFFINITY])
    if TASK_ORDER in settings:
        topo.task_order = [r.strip() for r in settings[TASK_ORDER].split(",") if r.strip()]
    if not (valid(topo.affinity) and valid(topo.anti_affinity) and valid([topo.task_order])):
        return None
    return topo


def _req_score(task: TaskInfo) -> float:
    """Volcano's bucket request score: 1 milli-cpu = 1 Mi memory = 1 milli-unit of anything else."""
    r = task.resreq
    return r[CPU] + r[MEMORY] / 1024 / 1024 + sum(v for k, v in r.items() if k not in (CPU, MEMORY, PODS))


class Bucket:
    def __init__(self, index: int):
        self.index = index
        self.tasks: dict[str, TaskInfo] = {}  # pending members
        self.role_count: dict[str, int] = {}
        self.req_score = 0.0
        self.request: np.ndarray | None = None  # sum of pending members' vecs
        self.bound = 0
        self.on_node: dict[int, int] = {}  # node row -> members placed there

    def add(self, role: str, task: TaskInfo, row: int | None) -> None:
        self.role_count[role] = self.role_count.get(role, 0) + 1
        if task.node is not None:  # on a node (row None: a node outside the session)
            if row is not None:
                self.on_node[row] = self.on_node.get(row, 0) + 1
            self.bound += 1
            return
        self.tasks[task.uid] = task
        self._request(task, 1)

    def _request(self, task: TaskInfo, d: int) -> None:
        self.req_score += d * _req_score(task)
        v = task.vec
        if self.request is None:
            self.request = np.zeros(len(v), dtype=np.int64)
        if len(v) > len(self.request):
            self.request = np.concatenate([self.request, np.zeros(len(v) - len(self.request), np.int64)])
        self.request[: len(v)] += d * v

    def bind(self, task: TaskInfo, row: int) -> None:
        self.on_node[row] = self.on_node.get(row, 0) + 1
        self.bound += 1
        if self.tasks.pop(task.uid, None) is not None:
            self._request(task, -1)

    def unbind(self, task: TaskInfo, row: int, pending: bool) -> None:
        self.on_node[row] = self.on_node.get(row, 0) - 1
        self.bound -= 1
        if pending:
            self.tasks[task.uid] = task
            self._request(task, 1)


class JobManager:
    def __init__(self, job: JobInfo, topo: Topology, ssn: Session):
        self.job = job
        self.n = len(ssn.table)
        self.priority: dict[str, int] = {}
        self.order: dict[str, int] = {}
        self.inter_aff: dict[str, set[str]] = {}
        self.self_aff: set[str] = set()
        self.inter_anti: dict[str, set[str]] = {}
        self.self_anti: set[str] = set()
        self.buckets: list[Bucket] = []
        self.bucket_of: dict[str, int] = {}  # task uid -> bucket index (tasks with topology only)
        self.max_size = 0
        self.node_roles: dict[int, dict[str, int]] = {}  # node row -> role -> this job's pods there
        self._apply(topo)
        self._construct(ssn)

    def _mark(self, role: str, kind: int) -> None:
        if kind > self.priority.get(role, 0):
            self.priority[role] = kind

    def _apply(self, topo: Topology) -> None:
        for group, self_set, inter, self_kind, inter_kind in (
                *((g, self.self_aff, self.inter_aff, SELF_AFF, INTER_AFF) for g in topo.affinity),
                *((g, self.self_anti, self.inter_anti, SELF_ANTI, INTER_ANTI) for g in topo.anti_affinity)):
            if len(group) == 1:
                self_set.add(group[0])
                self._mark(group[0], self_kind)
                continue
            for i, src in enumerate(group):
                for dst in group[:i]:
                    inter.setdefault(src, set()).add(dst)
                    inter.setdefault(dst, set()).add(src)
                self._mark(src, inter_kind)
        for i, role in enumerate(topo.task_order):
            self.order[role] = len(topo.task_order) - i

    def affinity_order(self, a: TaskInfo, b: TaskInfo) -> int:
        """Negative when a has lower precedence than b (Volcano's taskAffinityOrder sign)."""
        if a.role == b.role:
            return 0
        oa, ob = self.order.get(a.role, 0), self.order.get(b.role, 0)
        if oa != ob:
            return 1 if oa > ob else -1
        pa, pb = self.priority.get(a.role, 0), self.priority.get(b.role, 0)
        if pa != pb:
            return 1 if pa > pb else -1
        return 0

    def set_affinity(self, role: str, counts: dict[str, int], only_anti: bool) -> int:
        score = 0
        for other, n in counts.items():
            same = other == role
            if not only_anti and (role in self.self_aff if same else other in self.inter_aff.get(role, ())):
                score += n
            if role in self.self_anti if same else other in self.inter_anti.get(role, ()):
                score -= n
        return score

    def _construct(self, ssn: Session) -> None:
        rows = ssn.table.row
        members = [t for t in self.job.tasks.values() if t.role and t.role in self.priority]
        for t in self.job.tasks.values():
            if t.node is not None and t.node in rows and t.role:
                r = self.node_roles.setdefault(rows[t.node], {})
                r[t.role] = r.get(t.role, 0) + 1

        def cmp(a: TaskInfo, b: TaskInfo) -> int:  # the order buckets are filled in
            if (a.node is None) != (b.node is None):
                return -1 if a.node is not None else 1
            if a.node is not None:
                return (a.node > b.node) - (a.node < b.node) or (a.name > b.name) - (a.name < b.name)
            o = self.affinity_order(a, b)
            if o:
                return -o
            return (a.name > b.name) - (a.name < b.name)

        by_node: dict[str, Bucket] = {}
        for t in sorted(members, key=functools.cmp_to_key(cmp)):
            chosen: Bucket | None = None
            best = None
            if t.node is not None:
                best = 0
                chosen = by_node.get(t.node)
            else:
                for b in self.buckets:
                    aff = self.set_affinity(t.role, b.role_count, only_anti=False)
                    if best is None or aff > best or (aff == best and b.req_score < chosen.req_score):
                        best, chosen = aff, b
            if chosen is None or best < 0:
                chosen = Bucket(len(self.buckets))
                self.buckets.append(chosen)
                if t.node is not None:
                    by_node[t.node] = chosen
            row = rows.get(t.node) if t.node is not None else None
            chosen.add(t.role, t, row)
            self.bucket_of[t.uid] = chosen.index
            self.max_size = max(self.max_size, len(chosen.tasks) + chosen.bound)

    def bucket(self, task: TaskInfo) -> Bucket | None:
        i = self.bucket_of.get(task.uid)
        return None if i is None else self.buckets[i]


@plugin(NAME)
class TaskTopology:
    def __init__(self, arguments: dict[str, Any] | None = None):
        args = arguments or {}
        self.weight = sel.arg_int(args, "task-topology.weight", 1)
        self.arguments = args
        self.managers: dict[str, JobManager] = {}

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.managers = {}
        self._bound: dict[str, int] = {}  # task uid -> row, placed in this session through the handler
        for job in ssn.jobs.values():
            if not job.pending_tasks():
                continue
            topo = read_topology(job)
            if topo is None:
                continue
            self.managers[job.uid] = JobManager(job, topo, ssn)
        ssn.add_fn("task_order", NAME, self.task_order)
        ssn.add_fn("node_order", NAME, self.scores)
        ssn.add_event_handler(EventHandler(allocate=self._allocated, deallocate=self._deallocated))

    def on_session_close(self, ssn: Session) -> None:
        self.managers = {}

    # ------------------------------------------------------------ task order
    def task_order(self, a: TaskInfo, b: TaskInfo) -> int:
        ma, mb = self.managers.get(a.job), self.managers.get(b.job)
        if ma is None or mb is None:
            return 0
        ba, bb = ma.bucket(a), mb.bucket(b)
        if (ba is None) != (bb is None):
            return -1 if ba is not None else 1
        if a.job != b.job or ba is None:
            return 0
        if len(ba.tasks) != len(bb.tasks):
            return -1 if len(ba.tasks) > len(bb.tasks) else 1
        if ba.index == bb.index:
            return -ma.affinity_order(a, b)
        return -1 if ba.index < bb.index else 1

    # ------------------------------------------------------------ node score
    def scores(self, task: TaskInfo, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        out = np.zeros(len(rows), dtype=np.float64)
        m = self.managers.get(task.job)
        if m is None or not len(rows):
            return out
        b = m.bucket(task)
        if b is None:
            return out
        table = self.ssn.table
        res = np.array([i for i, d in enumerate(table.dims) if d != PODS], dtype=np.int64)
        room = (table.idle[rows] + table.releasing[rows])[:, res]  # what the node could ever give
        fits = (room >= task.vec[res]).all(axis=1)
        score = np.zeros(len(rows), dtype=np.int64)
        if b.on_node:
            base = np.zeros(m.n, dtype=np.int64)
            base[list(b.on_node)] = list(b.on_node.values())
            score += base[rows]
        if m.node_roles:
            penalty = np.zeros(m.n, dtype=np.int64)
            for r, counts in m.node_roles.items():
                a = m.set_affinity(task.role, counts, only_anti=True)
                if a < 0:
                    penalty[r] = a
            score += penalty[rows]
        score += len(b.tasks)
        if b.request is not None and len(b.tasks) > 1:
            need = np.zeros(len(table.dims), dtype=np.int64)
            need[: len(b.request)] = b.request
            need = need[res]
            others = [t for uid, t in b.tasks.items() if uid != task.uid]
            # remains after taking out the first k other members, k = 0..len(others)
            steps = [need]
            for t in others:
                v = np.zeros(len(table.dims), dtype=np.int64)
                v[: len(t.vec)] = t.vec
                steps.append(steps[-1] - v[res])
            remains = np.stack(steps)  # (k+1, R)
            ok = (remains[None, :, :] <= room[:, None, :]).all(axis=2)  # (rows, k+1)
            first = np.where(ok.any(axis=1), ok.argmax(axis=1), len(others))
            score -= first
        result = score.astype(np.float64) * self.weight
        if m.max_size:
            result = result * 100 / m.max_size
        return np.where(fits, result, 0.0)

    # ------------------------------------------------------------ events
    def _allocated(self, task: TaskInfo) -> None:
        m = self.managers.get(task.job)
        if m is None or task.node is None:
            return
        row = self.ssn.table.row[task.node]
        self._bound[task.uid] = row
        if task.role:
            r = m.node_roles.setdefault(row, {})
            r[task.role] = r.get(task.role, 0) + 1
        b = m.bucket(task)
        if b is not None:
            b.bind(task, row)

    def _deallocated(self, task: TaskInfo) -> None:
        m = self.managers.get(task.job)
        if m is None:
            return
        row = self._bound.pop(task.uid, None)
        if row is None:
            if task.node is None or task.node not in self.ssn.table.row:
                return
            row = self.ssn.table.row[task.node]  # a pod placed before the session, evicted now
        if task.role and m.node_roles.get(row, {}).get(task.role):
            m.node_roles[row][task.role] -= 1
        b = m.bucket(task)
        if b is not None:
            b.unbind(task, row, pending=task.node is None)
