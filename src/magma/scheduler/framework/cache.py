"""The scheduler's incremental snapshot: session records kept from one session to the next.

`snapshot.build` turns every object of the cluster into records at every session, which at 100,000 pods costs
seconds although nothing changed. The cache keeps the records (jobs, tasks, nodes and the NodeTable) and, at the
next session, applies only what the cluster's change log (`MemoryCluster.changes_since`) says was written:

- a changed, new or deleted pod: its task leaves its job, node and the table's sums, and the pod comes back
  through the same code `build` uses (`snapshot._task`, `bare_pod_job`, ...);
- a changed PodGroup: its job is made again with all its pods;
- queue records are kept, a written Queue's made again (fast path `queues_kept`);
- a queue appearing or disappearing, any node or PriorityClass change, or a pod bringing (or taking away the
  last of) a resource the table has no column for: everything is built again.

Records keep the order `build` gives them (jobs in PodGroup order then bare pods, tasks in pod order): the cluster
says where a key sits in its dict (`position`), so an insertion goes to its place without a scan.

A session changes the records it works on (task status and node, node task lists, job phase, reasons,
conditions). It notes what it changes (`Session._touch`; jobs note themselves, `KeptJob`), and the cache puts
those back before applying the next changes, so the records always mirror the cluster. Plugins that change
records in other ways (the `magma` plugin's device columns, for one) make the scheduler build every snapshot
afresh: only the plugins and actions listed in SAFE_PLUGINS / SAFE_ACTIONS, read for this, allow the cache.

The scheduler may give the cache a job index (jobindex.py: per-queue sums, the jobs a session must visit); the
cache updates it for the jobs of the changed pods and PodGroups and rebuilds it with every full build.

`verify = True` builds the full snapshot too and checks that both agree, record by record, and the kept job index
against a fresh one (tests).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from magma.api.objects import Pod, PodGroup
from magma.api.resources import PODS
from magma.cluster.interface import ClusterState

from . import snapshot as snap_mod
from . import fastpath
from .info import JobInfo, NodeInfo, QueueInfo, TaskInfo, TaskStatus, _JobStats
from .jobindex import JobIndex
from .snapshot import Snapshot, anti_carriers, requires_anti

SAFE_PLUGINS = frozenset({"priority", "gang", "conformance", "overcommit", "drf", "predicates", "proportion",
                          "nodeorder", "binpack", "capacity", "sla", "fairshare", "task-topology"})
SAFE_ACTIONS = frozenset({"enqueue", "allocate", "backfill", "preempt", "reclaim"})

_SESSION_FIELDS = frozenset({"phase", "reason", "reason_code", "enqueued_this_session", "conditions"})
# What a job takes from its PodGroup besides the phase (a change there makes the job and its tasks again).
_STATIC_JOB_FIELDS = ("uid", "name", "namespace", "queue", "priority", "min_available", "task_min_available",
                      "min_resources", "creation", "owner_job", "preemptable")
_DONE = (TaskStatus.SUCCEEDED, TaskStatus.FAILED)


class KeptJob(JobInfo):
    """A job of the incremental snapshot: it notes itself in the cache's `touched` set when a session sets one of
    its per-session fields (or reads its fit errors, which are filled in place), so that they can be reset."""

    _sink: "set[KeptJob] | None" = None
    _base_phase = "Pending"

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SESSION_FIELDS:
            sink = self._sink
            if sink is not None:
                sink.add(self)
        object.__setattr__(self, name, value)

    @property  # type: ignore[override]
    def fit_errors(self) -> dict[str, str]:
        sink = self._sink
        if sink is not None:
            sink.add(self)
        return self._fit_errors

    @fit_errors.setter
    def fit_errors(self, value: dict[str, str]) -> None:
        object.__setattr__(self, "_fit_errors", value)

    def _reset(self) -> None:
        set_ = object.__setattr__
        set_(self, "phase", self._base_phase)
        set_(self, "reason", None)
        set_(self, "reason_code", None)
        set_(self, "enqueued_this_session", False)
        set_(self, "conditions", None)
        set_(self, "_fit_errors", {})


def cache_supported(cluster: Any, config: Any) -> bool:
    """Can the scheduler keep its snapshot for this cluster and configuration?"""
    if not hasattr(cluster, "changes_since") or not hasattr(cluster, "position"):
        return False
    plugins = {opt.name for tier in config.tiers for opt in tier.plugins}
    return plugins <= SAFE_PLUGINS and set(config.runnable_actions) <= SAFE_ACTIONS


@dataclass(eq=False)
class _Pod:
    pos: int
    pod: Pod  # the object the record was made from
    req: Any  # Resources, the pod's request (pods included), for the table's columns
    job_key: str | None  # "ns/group" when the pod names a group
    job: JobInfo | None  # the job its task is in
    bare: JobInfo | None  # the job of its own (a pod of ours without a group)
    task: TaskInfo | None  # its task: in `job`, on `node`, or both
    node: NodeInfo | None  # the ready node whose task list (and the table's sums) hold the task
    # counted in `anti_carriers` (read when counted: a pod written in place is taken out by what was counted)
    anti: bool = False


@dataclass(eq=False)
class _Group:
    pos: int
    job: JobInfo | None  # None: skipped, its queue does not exist
    inputs: tuple | None = None  # what the job was made from, but the status (snapshot.podgroup_inputs)


class _Rebuild(Exception):
    """The change cannot be applied record by record: build everything again."""


class SnapshotCache:
    verify = False  # check every kept snapshot against a full build (tests set it)

    def __init__(self, scheduler_names: Iterable[str]):
        self.names = set(scheduler_names)
        self.snap: Snapshot | None = None
        self.version = -1
        self.full_builds = 0
        self.incremental_builds = 0
        self.touched: set[KeptJob] = set()
        self._last = None  # the session whose changes are still on the records
        self._cluster: Any = None
        self._queues: dict[str, QueueInfo] | None = None  # the last QueueInfo records (fast path queues_kept)
        self._stale_queues: set[str] = set()  # queues written since those records were made
        self.index: JobIndex | None = None  # kept with the records when the scheduler asks (jobindex.py)
        # Bumped whenever applying changes altered a job, task or node record or the skipped list (not when
        # every pod written is one no record reflects, a finished pod whose PodGroup is gone, say, nor when a
        # PodGroup's status was written and its job keeps its phase). Queue records are not counted: they are
        # made at the session's open from the Queues written.
        self.records_version = 0
        self.facts_kept = 0  # pods written in place whose request and shape were kept (fast path pod_facts_kept)

    # ------------------------------------------------------------------ the session's view
    def snapshot(self, cluster: Any, state: ClusterState) -> Snapshot:
        self.ingest(cluster, state)
        if self.index is not None and not self.index.built:
            self._update_index(None)
        view = self._view(state)
        if self.verify:
            touched = set(self.touched)
            full = snap_mod.build(state, self.names)
            check_same(view, full)
            assert view.anti_carriers == anti_carriers(full), f"anti carriers {view.anti_carriers} != {anti_carriers(full)}"
            self.touched.clear()  # check_same reads every job's fit errors: that touched nothing
            self.touched.update(touched)
            if self.index is not None:
                self.index.verify(view.jobs, view.total, self._job_order)
        return view

    def ingest(self, cluster: Any, state: ClusterState) -> None:
        """Bring the records up to date with the cluster: what Volcano's informer handlers do as objects arrive,
        outside any session. The scheduler calls it before a session (`Scheduler.ingest`, the simulator and the
        benchmarks may call it earlier, as objects arrive); the session then takes only what arrived since."""
        self.restore()
        self._cluster = cluster
        if self.snap is not None and self.version == cluster.version:
            return  # nothing written since
        changes = cluster.changes_since(self.version) if self.snap is not None else None
        done = False
        changed_jobs: set[str] = set()
        pod_jobs: set[str] = set()  # the jobs of the changed pods, before and after
        phase_kept: set[str] = set()  # the jobs kept whole with their phase (filled by _apply)
        if changes is None:
            self._queues = None
        elif self._queues is not None:
            # A written Queue's record is made again (fast path queues_kept; close writes queue statuses).
            self._stale_queues.update(key for kind, key in changes if kind == "Queue")
        if changes is not None:
            changed_jobs = self._job_uids(changes, pod_jobs)
            try:
                done = self._apply(state, changes, phase_kept)
            except _Rebuild:
                done = False
        if not done:
            self._full(state)
        else:
            changed_jobs |= self._job_uids(changes, pod_jobs)
        self.version = cluster.version
        self._update_index(changed_jobs if done else None, phase_kept - pod_jobs)

    def opened(self, session: Any) -> None:
        self._last = session

    def restore(self) -> None:
        """Put back what the last session changed on the records."""
        ssn, self._last = self._last, None
        if ssn is not None:
            for task, (status, node, nominated) in (ssn.touched_tasks or {}).items():
                task.status = status
                task.node = node
                task.nominated_node = nominated
            for nd, tasks in ssn.touched_nodes.items():
                nd.tasks.clear()
                nd.tasks.update(tasks)
        for job in self.touched:
            job._reset()
        self.touched.clear()

    # ------------------------------------------------------------------ the job index (jobindex.py)
    def _job_uids(self, changes: list[tuple[str, str]], pod_jobs: set[str]) -> set[str]:
        """The uids of the jobs the changed pods and PodGroups belong to (asked before and after applying); those
        of the pods' jobs are added to `pod_jobs` too."""
        out: set[str] = set()
        for kind, key in changes:
            if kind == "Pod":
                r = self.pods.get(key)
                if r is not None:
                    for job in (r.job, r.bare):
                        if job is not None:
                            out.add(job.uid)
                            pod_jobs.add(job.uid)
            elif kind == "PodGroup":
                g = self.groups.get(key)
                if g is not None and g.job is not None:
                    out.add(g.job.uid)
        return out

    def _job_order(self, job: JobInfo) -> tuple[int, int]:
        """The job's place in the snapshot's job order: PodGroup jobs, then bare pods' jobs, each by position."""
        return (1 if self.bare_jobs.get(job.uid) is job else 0, self.pos_of[id(job)])

    def _update_index(self, changed: set[str] | None, same_figures: set[str] = frozenset()) -> None:
        """Take the changed jobs (None: all of them) into the job index; `same_figures`: those that are the records
        they were, with the same tasks and phase (`JobIndex.update`)."""
        index = self.index
        if index is None or self.snap is None:
            return
        jobs = self.pg_jobs if not self.bare_jobs else {**self.pg_jobs, **self.bare_jobs}
        total = self.snap.total
        if changed is None or not index.built or index.total != total:
            index.rebuild(jobs, total, self._job_order)
        elif changed:
            index.update(changed, jobs, self._job_order, same_figures)

    def _view(self, state: ClusterState) -> Snapshot:
        base = self.snap
        jobs = self.pg_jobs if not self.bare_jobs else {**self.pg_jobs, **self.bare_jobs}
        skipped = [m for _, m in sorted(self.skipped_groups.values())]
        skipped += [m for _, m in sorted(self.skipped_pods.values())]
        return Snapshot(jobs=jobs, queues=self._queue_records(state), nodes=base.nodes, table=base.table.copy(),
                        total=base.total, now=state.now, skipped=skipped, persistent=True,
                        node_list=self.node_list, anti_carriers=self.anti_carriers)

    def _queue_records(self, state: ClusterState) -> dict[str, QueueInfo]:
        """The session's QueueInfo records: with `queues_kept`, the last ones, those of the queues written since made
        again (all of them when a queue's parent changed, or the set of queues did), in a dict of the session's."""
        kept, stale = self._queues, self._stale_queues
        self._stale_queues = set()
        if not fastpath.queues_kept:
            self._queues = None
            return snap_mod.queues(state)
        if kept is not None and list(kept) == list(state.queues):  # same queues, in the same order
            out = dict(kept)
            for name in stale:
                old = kept[name]
                q = state.queues[name]
                if fastpath.queue_status_writes_kept and old.queue is q and old.state == q.state:
                    continue  # the same Queue, its status written (close's allocations): the record it would make
                new = snap_mod.queue_info(q)
                if new.parent != old.parent:
                    out = None
                    break
                new.children = old.children
                out[name] = new
            if out is not None:
                self._queues = out
                return dict(out)
        out = snap_mod.queues(state)
        self._queues = out
        return dict(out)

    # ------------------------------------------------------------------ full build
    def _full(self, state: ClusterState) -> None:
        self.full_builds += 1
        self.records_version += 1
        self._queues = None
        self._stale_queues = set()
        self.pods: dict[str, _Pod] = {}
        self.groups: dict[str, _Group] = {}
        self.group_pods: dict[str, dict[str, None]] = {}
        self.skipped_groups: dict[str, tuple[int, str]] = {}
        self.skipped_pods: dict[str, tuple[int, str]] = {}
        self.pos_of: dict[int, int] = {}  # id(task or job) -> position of its pod or PodGroup
        self.dim_count: dict[str, int] = {}
        self.anti_carriers = 0  # tasks on nodes whose pod requires anti-affinity (Snapshot.anti_carriers)
        snap = snap_mod._build(state, self.names, KeptJob, index=self)
        self.snap = snap
        self.queue_names = set(snap.queues)
        self.prios = snap_mod.priorities(state)
        self.node_list = sorted(snap.nodes.values(), key=lambda n: n.index)
        self.alloc_dims = {d for nd in snap.nodes.values() for d in nd.allocatable} | {PODS}
        group_jobs = {id(g.job) for g in self.groups.values() if g.job is not None}
        self.pg_jobs = {uid: j for uid, j in snap.jobs.items() if id(j) in group_jobs}
        self.bare_jobs = {uid: j for uid, j in snap.jobs.items() if id(j) not in group_jobs}
        for job in snap.jobs.values():
            self._keep(job)
        self.supported = self._consistent(snap)
        if not self.supported:
            self.snap = None  # records that collide on a uid: build afresh every session

    # The index `snapshot._build` reports to.
    def podgroup(self, pg: PodGroup, job: JobInfo | None) -> None:
        pos = self._cluster.position("PodGroup", pg.key)
        self.groups[pg.key] = _Group(pos, job, snap_mod.podgroup_inputs(pg) if job is not None else None)
        if job is None:
            self.skipped_groups[pg.key] = (pos, snap_mod.podgroup_skipped(pg))
        else:
            self.pos_of[id(job)] = pos

    def pod(self, p: Pod, req: Any, job_key: str | None, job: JobInfo | None, bare: JobInfo | None,
            task: TaskInfo | None, node: NodeInfo | None) -> None:
        key = p.key
        pos = self._cluster.position("Pod", key)
        in_job = task if job is not None and task is not None and job.tasks.get(task.uid) is task else None
        anti = node is not None and requires_anti(p)
        self.pods[key] = _Pod(pos, p, req, job_key, job if in_job is not None else None, bare, task, node, anti)
        if task is not None:
            self.pos_of[id(task)] = pos
        if bare is not None:
            self.pos_of[id(bare)] = pos
        if job_key is not None:
            self.group_pods.setdefault(job_key, {})[key] = None
        if anti:
            self.anti_carriers += 1
        if job is None and job_key is None and p.spec.scheduler_name in self.names:
            self.skipped_pods[key] = (pos, snap_mod.bare_pod_skipped(p))
        counts = self.dim_count
        for name in req:
            if name != PODS:
                counts[name] = counts.get(name, 0) + 1

    def _keep(self, job: JobInfo) -> None:
        object.__setattr__(job, "_base_phase", job.phase)
        object.__setattr__(job, "_sink", self.touched)

    def _consistent(self, snap: Snapshot) -> bool:
        """No two records share a key (a uid used twice would make `build` overwrite one with the other)."""
        jobs = sum(1 for g in self.groups.values() if g.job is not None) + sum(
            1 for r in self.pods.values() if r.bare is not None)
        if jobs != len(snap.jobs) or len(self.pg_jobs) + len(self.bare_jobs) != len(snap.jobs):
            return False
        in_jobs = sum(1 for r in self.pods.values() if r.job is not None)
        if in_jobs != sum(len(j.tasks) for j in snap.jobs.values()):
            return False
        on_nodes = sum(1 for r in self.pods.values() if r.node is not None)
        return on_nodes == sum(len(nd.tasks) for nd in snap.nodes.values())

    # ------------------------------------------------------------------ applying changes
    def _apply(self, state: ClusterState, changes: list[tuple[str, str]], phase_kept: set[str]) -> bool:
        if not self.supported:
            return False
        groups: set[str] = set()
        pods: set[str] = set()
        for kind, key in changes:
            if kind == "Pod":
                pods.add(key)
            elif kind == "PodGroup":
                groups.add(key)
            elif kind in ("Node", "PriorityClass"):
                return False
        if set(state.queues) != self.queue_names:
            return False
        if not groups and not pods:
            self.incremental_builds += 1
            return True
        # a status-only write alters a record only when it moves the job's phase
        moved = {key: self._status_only(state, key) for key in groups}
        groups = {key for key, m in moved.items() if m is None}
        # jobs kept whole with their phase: the same figures unless a pod of theirs was written too
        phase_kept.update(self.groups[key].job.uid for key, m in moved.items() if m is False)
        altered = bool(groups) or any(moved.values())
        for key in groups:
            pods.update(self.group_pods.get(key, ()))
        # the records of the pods written, to take their request and shape from when the pod is the same object
        # (fast path pod_facts_kept)
        dropped = {key: self.pods.get(key) for key in pods} if fastpath.pod_facts_kept else {}
        for key in pods:
            altered |= self._drop_pod(key)
        for key in groups:
            self._drop_group(key)
        position = self._cluster.position
        podgroups, pods_now = state.podgroups, state.pods
        # (positions, one per key of a kind, order the keys)
        for pos, key in sorted([(position("PodGroup", k), k) for k in groups if k in podgroups]):
            self._add_group(podgroups[key], pos)
        for pos, key in sorted([(position("Pod", k), k) for k in pods if k in pods_now]):
            altered |= self._add_pod(pods_now[key], key, pos, dropped.get(key))
        if altered:
            self.records_version += 1
        self.incremental_builds += 1
        return True

    def _status_only(self, state: ClusterState, key: str) -> bool | None:
        """A PodGroup whose job differs only in its phase (its status was written, the scheduler's own close
        does so): the job takes the new phase and keeps its tasks; whether the phase moved. None: not such a
        PodGroup (its job is made again)."""
        g = self.groups.get(key)
        pg = state.podgroups.get(key)
        if g is None or g.job is None or pg is None or g.job.podgroup is not pg:
            return None
        old = g.job
        inputs = snap_mod.podgroup_inputs(pg)
        if inputs != g.inputs:  # (equal inputs make equal fields) the job as it would be made now, compared
            queue = pg.spec.queue or "default"
            if queue not in self.queue_names:
                return None
            pcs, default, _ = self.prios
            new = snap_mod._job_from_podgroup(pg, queue, pcs, default)
            if any(getattr(new, f) != getattr(old, f) for f in _STATIC_JOB_FIELDS):
                return None
            g.inputs = inputs
        phase = snap_mod.podgroup_phase(pg)
        moved = phase != old._base_phase
        object.__setattr__(old, "phase", phase)
        object.__setattr__(old, "_base_phase", phase)
        return moved

    def _drop_group(self, key: str) -> None:
        g = self.groups.pop(key, None)
        self.skipped_groups.pop(key, None)
        if g is not None and g.job is not None:
            del self.pg_jobs[g.job.uid]
            self.pos_of.pop(id(g.job), None)

    def _add_group(self, pg: PodGroup, pos: int) -> None:
        """A PodGroup stored under its key at `pos` (its position)."""
        key = pg.key
        queue = pg.spec.queue or "default"
        if queue not in self.queue_names:
            self.groups[key] = _Group(pos, None)
            self.skipped_groups[key] = (pos, snap_mod.podgroup_skipped(pg))
            return
        pcs, default, _ = self.prios
        job = snap_mod._job_from_podgroup(pg, queue, pcs, default, KeptJob)
        if job.uid in self.pg_jobs or job.uid in self.bare_jobs:
            raise _Rebuild
        self._keep(job)
        self.groups[key] = _Group(pos, job, snap_mod.podgroup_inputs(pg))
        self.pos_of[id(job)] = pos
        _insert(self.pg_jobs, job.uid, job, pos, self.pos_of)

    def _drop_pod(self, key: str) -> bool:
        """Take a pod out of the records; False when no record reflected it (`_reflects`)."""
        r = self.pods.pop(key, None)
        if r is None:
            return False
        reflected = self._reflects(key, r)
        t = r.task
        if r.node is not None:
            self.snap.table.remove_task(r.node.index, t)
            del r.node.tasks[t.uid]
            if r.anti:
                self.anti_carriers -= 1
        if r.job is not None:
            del r.job.tasks[t.uid]
            r.job._stats = None  # counts and sums are over the tasks
        if r.bare is not None:
            del self.bare_jobs[r.bare.uid]
            self.pos_of.pop(id(r.bare), None)
        if t is not None:
            self.pos_of.pop(id(t), None)
        self.skipped_pods.pop(key, None)
        if r.job_key is not None:
            members = self.group_pods.get(r.job_key)
            if members is not None:
                members.pop(key, None)
                if not members:
                    del self.group_pods[r.job_key]
        for name in r.req:
            if name != PODS:
                n = self.dim_count[name] - 1
                self.dim_count[name] = n
                if n == 0 and name not in self.alloc_dims:
                    raise _Rebuild  # the table would lose that column
        return reflected

    def _add_pod(self, p: Pod, key: str, pos: int, old: _Pod | None = None) -> bool:
        """One pod, stored under `key` at `pos` (its position), as `snapshot._build`'s loop places it; False when
        no record reflects it. `old`: the pod's record before it was written, whose request and task shape are kept
        when it is the same object."""
        table = self.snap.table
        if old is not None and old.pod is p:  # written in place: its status, node name, annotations
            req, kept = old.req, old.task
            self.facts_kept += 1
        else:
            req, kept = p.spec.request(), None
        counts, col = self.dim_count, table.col
        for name in req:
            if name != PODS:
                if name not in col:
                    raise _Rebuild  # a new column
                counts[name] = counts.get(name, 0) + 1
        pcs, default, never = self.prios
        status = snap_mod.task_status(p)
        spec = p.spec
        group = p.group_name
        job_key = f"{p.namespace}/{group}" if group else None
        g = self.groups.get(job_key) if job_key else None
        job = g.job if g is not None else None
        bare = None
        if job is None and not group and spec.scheduler_name in self.names:
            bare = snap_mod.bare_pod_job(p, self.queue_names, pcs, default, KeptJob)
            if bare is None:
                self.skipped_pods[key] = (pos, snap_mod.bare_pod_skipped(p))
            else:
                if bare.uid in self.pg_jobs or bare.uid in self.bare_jobs:
                    raise _Rebuild
                self._keep(bare)
                self.pos_of[id(bare)] = pos
                _insert(self.bare_jobs, bare.uid, bare, pos, self.pos_of)
                job = bare
        task = None
        if job is not None:
            task = snap_mod._task(p, job, status, req, pcs, never, kept)
            if task.uid in job.tasks:
                raise _Rebuild
            self.pos_of[id(task)] = pos
            _insert(job.tasks, task.uid, task, pos, self.pos_of)
            job._stats = None
        node = self.snap.nodes.get(spec.node_name or "")
        if node is not None and status not in _DONE:
            t = task or snap_mod._task(p, None, status, req, pcs, never, kept)
            if t.uid in node.tasks:
                raise _Rebuild
            t.node = node.name
            t.vec = table.vec(t.resreq)
            self.pos_of[id(t)] = pos
            _insert(node.tasks, t.uid, t, pos, self.pos_of)
            table.add_task(node.index, t)
            anti = requires_anti(p)
            if anti:
                self.anti_carriers += 1
        else:
            t = task
            node = None
            anti = False
        if task is not None and task.vec is None:
            task.vec = table.vec(task.resreq)
        if job_key is not None:
            self.group_pods.setdefault(job_key, {})[key] = None
        r = self.pods[key] = _Pod(pos, p, req, job_key, job if task is not None else None, bare, t, node, anti)
        return self._reflects(key, r)

    def _reflects(self, key: str, r: _Pod) -> bool:
        """Whether a record reflects the pod `key` whose record is `r`: a task, node or job of it, or it is skipped."""
        return (r.task is not None or r.node is not None or r.job is not None or r.bare is not None
                or key in self.skipped_pods)


def _insert(d: dict, key: str, value: Any, pos: int, pos_of: dict[int, int]) -> None:
    """Insert into a dict kept in position order (the cluster's dict order)."""
    if d:
        last = next(reversed(d.values()))
        if pos_of.get(id(last), -1) > pos:
            items = list(d.items())
            items.append((key, value))
            items.sort(key=lambda kv: pos_of.get(id(kv[1]), -1))
            d.clear()
            d.update(items)
            return
    d[key] = value


# ---------------------------------------------------------------------- verification (tests)

_JOB_FIELDS = ("uid", "name", "namespace", "queue", "priority", "min_available", "task_min_available",
               "min_resources", "creation", "phase", "owner_job", "preemptable", "reason", "reason_code",
               "enqueued_this_session", "conditions", "fit_errors")
_TASK_FIELDS = ("uid", "name", "namespace", "job", "role", "index", "resreq", "status", "node", "priority",
                "preemptable", "critical", "never_preempts", "creation", "nominated_node", "shape")


def _same_task(a: TaskInfo, b: TaskInfo, where: str) -> None:
    for f in _TASK_FIELDS:
        assert getattr(a, f) == getattr(b, f), f"{where}: task {a.uid} field {f}: {getattr(a, f)!r} != {getattr(b, f)!r}"
    assert a.pod is b.pod, f"{where}: task {a.uid}: another pod object"
    assert (a.vec is None) == (b.vec is None) and (a.vec is None or np.array_equal(a.vec, b.vec)), \
        f"{where}: task {a.uid}: vec {a.vec} != {b.vec}"


def check_same(kept: Snapshot, full: Snapshot) -> None:
    """Assert that the kept snapshot has the records a full build gives, in the same order."""
    assert list(kept.jobs) == list(full.jobs), f"jobs differ: {list(kept.jobs)} != {list(full.jobs)}"
    for uid, a in kept.jobs.items():
        b = full.jobs[uid]
        for f in _JOB_FIELDS:
            assert getattr(a, f) == getattr(b, f), f"job {uid} field {f}: {getattr(a, f)!r} != {getattr(b, f)!r}"
        assert a.podgroup is b.podgroup, f"job {uid}: another PodGroup object"
        if a._stats is not None:  # cached counts must be those of its tasks now
            assert a._stats.n == len(a.tasks) and a._stats.counts == _JobStats(a).counts, f"job {uid}: stale counts"
        assert list(a.tasks) == list(b.tasks), f"job {uid} tasks: {list(a.tasks)} != {list(b.tasks)}"
        for t in a.tasks:
            _same_task(a.tasks[t], b.tasks[t], f"job {uid}")
    assert list(kept.nodes) == list(full.nodes), "nodes differ"
    for name, a in kept.nodes.items():
        b = full.nodes[name]
        assert a.index == b.index and a.labels == b.labels and a.allocatable == b.allocatable, f"node {name}"
        assert list(a.tasks) == list(b.tasks), f"node {name} tasks: {list(a.tasks)} != {list(b.tasks)}"
        for t in a.tasks:
            _same_task(a.tasks[t], b.tasks[t], f"node {name}")
    assert kept.table.dims == full.table.dims, f"table columns {kept.table.dims} != {full.table.dims}"
    for attr in ("alloc", "used", "releasing", "pipelined", "idle"):
        assert np.array_equal(getattr(kept.table, attr), getattr(full.table, attr)), f"table {attr} differs"
    assert kept.skipped == full.skipped, f"skipped {kept.skipped} != {full.skipped}"
    assert kept.total == full.total and kept.now == full.now
    assert list(kept.queues) == list(full.queues)
