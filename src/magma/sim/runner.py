"""The simulation loop: the same controller and scheduler code as in a cluster, on a virtual clock.

At every session time t = 0, period, 2·period, …:
  arrivals and deletions due → kubelet (work finishes, deadlines, deletions complete) → controller →
  scheduler session → bound pods start running → controller (sees them running) → record.
Stretches where nothing can change are skipped: when the last session changed nothing and no timer is due
before the next event (arrival, deletion, completion), the clock jumps to that event's session time. The
decisions are the same as running every idle session; only faster.

Why a job costs about six sessions, and which of them are skipped (fastpath.skip_quiet_sessions). A job that
finds room goes: arrival (the controller makes its PodGroup; the session enqueues it, writing its status; the
controller then makes its pods) → the next session binds them (they start; the controller marks the job
Running) → the next writes the PodGroup's Running status → the next finds nothing to do, and the loop jumps.
At completion: the kubelet finishes the pods, the controller marks the job Completed, a session writes the
PodGroup's status (and gives the room to others), the next finds nothing. At ttl deletion: the controller
deletes the Job, PodGroup and pods, a session drops the job (its result's phases change, which counts as a
change), the next finds nothing. Each "finds nothing" session follows a change, so the loop must look again.

A session is a function of its inputs: the cluster objects the snapshot reads (pods, PodGroups, nodes, queues,
PriorityClasses), the clock for plugins that read it, and what plugins keep across sessions. With a config of
actions and plugins that read neither the clock nor anything kept (PURE_ACTIONS, PURE_PLUGINS: not sla,
fairshare, reservation), a session that bound and evicted nothing is not run again while what was written since it
opened leaves everything it read as it was: run again, it would see the same snapshot, decide the same, and find
what it wrote already written. Its result is reused and its events are recorded again (at the new time, as a run
would), but for those that report a change of a PodGroup condition it wrote (gang's Unschedulable, recorded
`once`): run again, it would find the condition written and not record them. The trace records the session time
as usual (samples, reservations); only `trace.sessions` (and so `summary.sessions`) lists the sessions that ran,
with `trace.skipped_sessions` counting the others. What may have been written (`_unseen`):
- Jobs and Commands, which the scheduler does not read, and the Queues' status (close writes their allocated
  resources) while each keeps its state (fastpath.skip_quiet_sessions). The "finds nothing" sessions above are
  the typical skips.
- Pods and PodGroups whose taking-in changed no record of the scheduler's kept snapshot
  (`Scheduler.records_version`, fastpath.skip_inert_writes): the finished pods of a job whose PodGroup is gone,
  deleted at its ttl (the ttl deletion's own session is skipped); the session's own PodGroup status writes that
  keep each job's phase (running counts, conditions): the session after the one that writes a gang's Running
  counts, or a waiting job's new Unschedulable message, is skipped. A status write that moves a phase (Inqueue,
  Running, Completed) changes a record: the next session reads it, and runs.
tests/property/test_sim_fast_paths.py compares runs with and without the simulator's fast paths.
"""

from __future__ import annotations

import bisect
import gc
import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

from magma.api.objects import Job, Node, PodGroup
from magma.api.resources import GPU
from magma.cluster.memory import MemoryCluster
from magma.controller import Controller
from magma.scheduler.framework import fastpath
from magma.scheduler.scheduler import Scheduler, SessionResult

from .clock import VirtualClock
from .kubelet import VirtualKubelet
from .scenario import Scenario

# During a run the loop collects cycles itself, when the objects the collector tracks have grown by this many since
# its last pass (allocations less deallocations, `gc.get_count()[0]`): a few passes a simulated week.
_GC_GROWTH = 1_000_000
DEFAULT_SAFETY_CAP = 30 * 86400.0  # a scenario that never settles stops after 30 virtual days, and says so


@dataclass(slots=True)  # one per session time, kept for the whole run
class Sample:
    """The cluster after one session, for the report's time series."""

    time: float
    gpu_allocated: dict[str, float]  # queue -> GPUs allocated (pods on nodes)
    gpu_total: float
    deserved: dict[str, float]  # queue -> deserved GPUs (from the share plugin)


@dataclass(slots=True)
class SessionRecord:
    """What the trace keeps of each session (the full SessionResult is kept only for the last one)."""

    time: float
    latency_ms: float
    binds: int
    evictions: int
    action_ms: dict[str, float] = field(default_factory=dict)  # per action, and "open+close" for the rest


@dataclass
class Trace:
    sessions: list[SessionRecord] = field(default_factory=list)
    last: SessionResult | None = None
    samples: list[Sample] = field(default_factory=list)
    # pod key -> list of (start, end or None, node, outcome) intervals, for the Gantt chart
    pod_runs: dict[str, list[list]] = field(default_factory=dict)
    evicted_pods: dict[str, str] = field(default_factory=dict)  # pod uid -> reason (preempt | reclaim)
    job_of_pod: dict[str, str] = field(default_factory=dict)  # pod key -> "Kind ns/name"
    job_start: dict[str, float] = field(default_factory=dict)  # "Kind ns/name" -> first gang-complete time
    job_end: dict[str, float] = field(default_factory=dict)  # "Kind ns/name" -> when it reached a final phase
    # reservation plugin: "Kind ns/name" -> [(session time, planned start or None)] for every session that reserved
    # for the job; and the jobs that started as backfill (out of order while a reservation held against them)
    reservations: dict[str, list[tuple[float, float | None]]] = field(default_factory=dict)
    backfilled: set[str] = field(default_factory=set)
    skipped_sessions: int = 0  # sessions not run because they would have repeated the last one (see the loop)
    # wall seconds of the loop's parts, for the benchmark's breakdown: "inputs" (arrivals, deletions), "kubelet",
    # "controller", "ingest", "session", "record"
    loop_seconds: dict[str, float] = field(default_factory=dict)
    stop_reason: str = ""
    end_time: float = 0.0


class Simulation:
    def __init__(self, scenario: Scenario, period: float = 1.0, until: float | None = None,
                 safety_cap: float = DEFAULT_SAFETY_CAP):
        self.scenario = scenario
        self.period = period
        self.until = until
        self.safety_cap = safety_cap
        self.clock = VirtualClock()
        self.cluster = MemoryCluster(scenario.initial, clock=self.clock.now)
        # Pods given with spec.nodeName start bound and running (a snapshot of a live cluster).
        for pod in self.cluster.state().pods.values():
            if pod.spec.node_name and pod.status.phase in (None, "Pending"):
                pod.status.phase = "Running"
                self.cluster.mark_changed("Pod", pod.key)
        self.kubelet = VirtualKubelet(self.cluster, scenario.durations)
        self.controller = Controller(self.cluster)
        self.scheduler = Scheduler(self.cluster, scenario.config)
        self.trace = Trace()
        self._arrival_i = 0
        self._deletion_i = 0
        self._last_phases: dict[str, str] = {}
        self._open_runs: set[str] = set()  # pod uids whose last run has not ended
        self._gpus: dict[str, tuple] = {}  # pod uid -> (pod, GPUs it requests), for running pods
        self._recorder: _Recorder | None = None  # the incremental recorder (fastpath.incremental_recorder)
        self._freeze_due = False  # a full collection ran: set its survivors aside (see run)
        self._collect = False  # the loop runs the collector's passes itself (see run)
        # the last session run, when it bound and evicted nothing (fastpath.skip_quiet_sessions): (the cluster's
        # version as it opened, the Queues it read, the scheduler's records version it ran on, its result)
        self._last: tuple[int, dict[str, tuple], int | None, SessionResult] | None = None
        self._pure_config = (set(scenario.config.runnable_actions) <= PURE_ACTIONS
                             and {p.name for p in scenario.config.plugins()} <= PURE_PLUGINS)

    # ---------------------------------------------------------------- timed inputs
    def _apply_timed(self, now: float) -> bool:
        changed = False
        arrivals = self.scenario.arrivals
        while self._arrival_i < len(arrivals) and arrivals[self._arrival_i].time <= now:
            self.cluster.add(arrivals[self._arrival_i].obj)
            self._arrival_i += 1
            changed = True
        deletions = self.scenario.deletions
        while self._deletion_i < len(deletions) and deletions[self._deletion_i][0] <= now:
            _, kind, key = deletions[self._deletion_i]
            self._deletion_i += 1
            changed = True
            if kind == "Node":
                self.kubelet.fail_lost_nodes([key], now)
                self.cluster.delete_node(key)
            elif kind == "Job":
                job = self.cluster.get("Job", key)
                self.cluster.delete("Job", key)
                if job is not None:
                    self.controller.job_deleted(job)
            else:
                self.cluster.delete(kind, key)
        return changed

    def _next_timed(self) -> float:
        nxt = math.inf
        if self._arrival_i < len(self.scenario.arrivals):
            nxt = self.scenario.arrivals[self._arrival_i].time
        if self._deletion_i < len(self.scenario.deletions):
            nxt = min(nxt, self.scenario.deletions[self._deletion_i][0])
        return nxt

    # ---------------------------------------------------------------- the loop
    def run(self, progress: Callable[[float, float], None] | None = None) -> Trace:
        # The scenario (every Job to arrive, the cluster, the scheduler's records) lives through the whole run:
        # set aside from the cycle collector's passes, which otherwise walk all of it in each full pass. Sessions
        # are released as they end and leave no cycles (tests/sim/test_session_memory.py): the automatic passes,
        # every few hundred allocations, would walk each step's live objects again and again to find next to
        # nothing, and land inside sessions. So they are off during the run, and the loop runs a full pass between
        # steps when the tracked objects have grown by _GC_GROWTH since the last (cycles made elsewhere are still
        # freed). What survives a full pass (the trace, the records kept across sessions) is set aside too: a
        # later pass walks only what came since. Only the time spent collecting changes; the collector is turned
        # back on and the objects handed back to it when the run ends.
        collect = gc.isenabled()  # off: the caller turned collection off, and it stays off
        freeze = not gc.get_freeze_count()  # a caller that froze objects itself keeps them frozen
        if freeze:
            gc.freeze()
            gc.callbacks.append(self._after_collection)
        if collect:
            gc.disable()
        self._collect = collect
        try:
            return self._run(progress)
        finally:
            if freeze:
                gc.callbacks.remove(self._after_collection)
                # What the run made since its last pass is handed back with the rest, as survivors of a pass
                # (the oldest generation), rather than left young: the collector's first automatic pass would
                # otherwise walk all of it at once, every object the run keeps, to find next to nothing.
                gc.freeze()
                gc.unfreeze()
            if collect:
                gc.enable()

    def _after_collection(self, phase: str, info: dict) -> None:
        if phase == "stop" and info["generation"] == 2:
            self._freeze_due = True  # (frozen between steps, not inside the collector)

    def _run(self, progress: Callable[[float, float], None] | None) -> Trace:
        t = 0.0
        horizon = self.until if self.until is not None else self.safety_cap
        spent = self.trace.loop_seconds
        for part in ("inputs", "kubelet", "controller", "ingest", "session", "record"):
            spent.setdefault(part, 0.0)
        clock = time.perf_counter
        while True:
            self.clock.set(t)
            t0 = clock()
            changed = self._apply_timed(t)
            t1 = clock()
            changed |= self.kubelet.step(t)
            t2 = clock()
            changed |= self.controller.sync()
            t3 = clock()
            result = self._session(t)
            t4 = clock()
            self.trace.last = result
            started = self.kubelet.start_bound(t)
            self.kubelet.step(t)
            t5 = clock()
            changed |= self.controller.sync()
            t6 = clock()
            changed |= bool(result.binds or result.evictions or started) or result.phases != self._last_phases
            self._last_phases = result.phases
            self._record(t, result)
            t7 = clock()
            spent["inputs"] += t1 - t0
            spent["kubelet"] += (t2 - t1) + (t5 - t4)
            spent["controller"] += (t3 - t2) + (t6 - t5)
            spent["session"] += t4 - t3  # the ingest's share is moved to "ingest" by _session
            spent["record"] += t7 - t6
            if self._collect and gc.get_count()[0] > _GC_GROWTH:
                gc.collect()
            if self._freeze_due:
                self._freeze_due = False
                gc.freeze()
            if progress:
                progress(t, horizon)
            if self.until is not None and t >= self.until:
                self.trace.stop_reason = f"reached --until {self.until:g}s"
                break
            nxt = t + self.period
            if not changed:
                # Nothing moved: jump to the next thing that can move something.
                events = [self._next_timed(), self.kubelet.next_completion(t) or math.inf,
                          self.controller.next_timer(t) or math.inf]
                soonest = min(events)
                if soonest == math.inf:
                    if self.until is None:
                        self.trace.stop_reason = "nothing can change any more"
                        break
                    soonest = self.until
                # the first session time at or after the event
                steps = max(1, math.ceil((soonest - t) / self.period - 1e-9))
                nxt = t + steps * self.period
                if self.until is not None:
                    nxt = min(nxt, self.until)
            if self.until is None and nxt > self.safety_cap:
                self.trace.stop_reason = (f"stopped at the safety cap of {self.safety_cap:g}s: the scenario still "
                                          f"changes; pass --until to choose the end")
                break
            t = nxt
        self.trace.end_time = t
        return self.trace

    def _session(self, t: float) -> SessionResult:
        """Run a scheduler session, or skip one that would repeat the last (see the module docstring)."""
        cluster = self.cluster
        last = self._last
        if last is not None and fastpath.skip_quiet_sessions and self._unseen(last):
            result = last[3]
            for ev in result.repeat_events:
                cluster.record_event(*ev)
            self.trace.skipped_sessions += 1
            return result
        self._last = None
        version = cluster.version
        queues = _queues_read(cluster.state()) if self._pure_config else {}
        # What arrived since the last session is taken in outside the session, as a scheduler's informers do
        # in a cluster, so that sessionLatencyMs measures the session as the benchmarks do.
        self._ingest()
        records = self.scheduler.records_version()
        result = self.scheduler.run_once()
        parts = dict(result.action_ms)
        parts["open+close"] = max(result.latency_ms - sum(parts.values()), 0.0)
        self.trace.sessions.append(SessionRecord(t, result.latency_ms, len(result.binds), len(result.evictions),
                                                 parts))
        if self._pure_config and not result.binds and not result.evictions:
            self._last = (version, queues, records, result)
        return result

    def _ingest(self) -> bool:
        """The scheduler's ingest, timed as the loop's "ingest" (taken out of "session", which includes it)."""
        t0 = time.perf_counter()
        done = self.scheduler.ingest()
        took = time.perf_counter() - t0
        self.trace.loop_seconds["ingest"] = self.trace.loop_seconds.get("ingest", 0.0) + took
        self.trace.loop_seconds["session"] = self.trace.loop_seconds.get("session", 0.0) - took
        return done

    def _unseen(self, last: tuple[int, dict[str, tuple], int | None, SessionResult]) -> bool:
        """Whether what was written since the last session opened (its own writes included) leaves every input of
        the next session as that session read it.

        Jobs and Commands are not read by the scheduler, nor the Queues' status but their state (close writes their
        allocated resources). With fastpath.skip_inert_writes, pods and PodGroups are not either when taking them
        in changes no record of the scheduler's kept snapshot (`Scheduler.records_version`): pods that no job,
        task, node or skipped-pod record reflects (the finished pods of a job whose PodGroup is gone, deleted at
        the job's ttl), and PodGroup status writes that keep each job's phase (close's own). Any other write
        (Node, PriorityClass, a Queue made again or in another state) counts as a change."""
        version, queues, records, _ = last
        since = self.cluster.changes_since(version)
        if since is None:
            return False
        kinds = {kind for kind, _ in since}
        if not kinds <= SESSION_SKIPPABLE:
            return False
        if "Queue" in kinds:
            now = self.cluster.state().queues
            for kind, key in since:  # (a Queue made or deleted is written too)
                if kind == "Queue":
                    q, was = now.get(key), queues.get(key)
                    if q is None or was is None or was[0] is not q or was[1] != _status_of(q):
                        return False
        if not kinds & SCHEDULER_RECORDS:
            return True
        if not fastpath.skip_inert_writes or records is None:
            return False
        return self._ingest() and self.scheduler.records_version() == records

    # ---------------------------------------------------------------- recording
    def _track_jobs(self, t: float, state) -> None:
        running: dict[str, int] = {}
        for pod in state.pods.values():
            if pod.status.phase == "Running" and pod.spec.node_name:
                owner = self.trace.job_of_pod.get(pod.key)
                if owner:
                    running[owner] = running.get(owner, 0) + 1
        for key, job in state.jobs.items():
            _track(self.trace, f"Job {key}", t, running.get(f"Job {key}", 0), job.spec.min_available or 1,
                   job.status.state.phase or "Pending")
        for key, pg in state.podgroups.items():
            if any(o.kind == "Job" for o in pg.metadata.owner_references):
                continue
            _track(self.trace, f"PodGroup {key}", t, running.get(f"PodGroup {key}", 0), pg.spec.min_member,
                   pg.status.phase or "Pending")

    def _record(self, t: float, result: SessionResult) -> None:
        if fastpath.incremental_recorder:
            if self._recorder is None:
                self._recorder = _Recorder(self.cluster, self.trace)
            self._recorder.record(t, result)
        else:
            self._recorder = None
            self._record_full(t, result)

    def _record_full(self, t: float, result: SessionResult) -> None:
        """What the recorder keeps of the cluster after a session, from a scan of every pod, job and node."""
        state = self.cluster.state()
        self.trace.evicted_pods.update(result.evicted_uids)
        by_queue: dict[str, float] = {}
        for pod in state.pods.values():
            owner = _owner(pod, state)
            if owner:
                self.trace.job_of_pod[pod.key] = owner
            uid = pod.metadata.uid or pod.key
            runs = self.trace.pod_runs.setdefault(uid, [])
            phase = pod.status.phase
            if pod.spec.node_name and phase == "Running":
                if not runs or runs[-1][1] is not None:
                    runs.append([t, None, pod.spec.node_name, "running", pod.key])
                    self._open_runs.add(uid)
                got = self._gpus.get(uid)
                if got is None or got[0] is not pod:  # a pod's request never changes: read it once
                    got = self._gpus[uid] = (pod, pod.spec.request()[GPU] / 1000)
                gpus = got[1]
                q = _queue_of(pod, state)
                by_queue[q] = by_queue.get(q, 0.0) + gpus
            elif runs and runs[-1][1] is None:
                runs[-1][1] = t
                runs[-1][3] = phase.lower() if phase in ("Succeeded", "Failed") else "stopped"
                self._open_runs.discard(uid)
        # pods that disappeared while running (only runs still open can be: no scan of every pod ever seen)
        live = {p.metadata.uid or p.key for p in state.pods.values()}
        for uid in self._open_runs - live:
            runs = self.trace.pod_runs[uid]
            runs[-1][1] = t
            runs[-1][3] = self.trace.evicted_pods.get(uid, "deleted")
        self._open_runs &= live
        for uid in [u for u in self._gpus if u not in live]:
            del self._gpus[uid]
        self._track_jobs(t, state)
        if result.reservations or result.backfilled:
            ident = _ident_of_podgroup(state)
            for key, plan in result.reservations.items():
                self.trace.reservations.setdefault(ident(key), []).append((t, plan.get("start")))
            self.trace.backfilled.update(ident(key) for key in result.backfilled)
        total = sum(n.allocatable()[GPU] for n in state.nodes.values()) / 1000
        deserved = {q: v.get("deserved", {}).get(GPU, 0) / 1000 for q, v in result.queue_shares.items()}
        self.trace.samples.append(Sample(t, by_queue, total, deserved))


FINAL_PHASES = {"Completed", "Failed", "Aborted", "Terminated"}

#: Actions and plugins whose session is a function of the snapshot alone: they read neither the clock nor anything
#: kept from earlier sessions (sla, fairshare and reservation read the clock; fairshare and reservation keep
#: state across sessions). Sessions are skipped only when the config has nothing else.
PURE_ACTIONS = frozenset({"enqueue", "allocate", "backfill", "preempt", "reclaim"})
PURE_PLUGINS = frozenset({"priority", "gang", "conformance", "overcommit", "drf", "predicates", "proportion",
                          "nodeorder", "binpack", "capacity", "task-topology", "magma"})
#: Kinds the scheduler's snapshot does not read (it reads pods, PodGroups, nodes, queues and PriorityClasses).
NOT_SCHEDULER_INPUTS = frozenset({"Job", "Command"})
#: Kinds the scheduler's kept records are made of (`Scheduler.records_version` says whether writes changed them).
SCHEDULER_RECORDS = frozenset({"Pod", "PodGroup"})
#: What may have been written since the last session for the next to be skipped (`Simulation._unseen` checks
#: the rest).
SESSION_SKIPPABLE = NOT_SCHEDULER_INPUTS | SCHEDULER_RECORDS | {"Queue"}


class _Recorder:
    """`Simulation._record_full`, following the cluster's change log instead of scanning every pod, job and node.

    Only pods written since the last record can open or close a run, start counting as running or stop; a pod's
    owner ("Job ns/name" or "PodGroup ns/name") changes only when it is written or when a Job or PodGroup it
    names appears or disappears; a job's start and end depend on its running pods, its Job or PodGroup; the GPU
    total on the nodes. Pods are visited in the cluster's order (`MemoryCluster.position`), so the trace's
    dicts fill in the order a full scan fills them. A log that no longer reaches back makes a record look at
    every object, as the full scan does.
    """

    def __init__(self, cluster: MemoryCluster, trace: Trace):
        self.cluster = cluster
        self.trace = trace
        self.version: int | None = None
        self.uid_of: dict[str, str] = {}  # present pod key -> uid
        self._names_of: dict[str, list[str]] = {}  # present pod key -> the owners it names (see refs)
        self.refs: dict[str, set[str]] = {}  # "Job ns/name" / "PodGroup ns/name" a pod names -> pod keys
        self.jobs: set[str] = set()  # Job keys present at the last record
        self.podgroups: set[str] = set()
        self.running: dict[str, tuple] = {}  # pod key -> (pod, GPUs) of pods running on a node
        self.placed: dict[str, tuple[int, str]] = {}  # pod key in running -> (its position, its queue)
        self.order: list[tuple[int, str]] = []  # (position, pod key) of placed, sorted (the order the sum adds in)
        self.groups: dict[str, set[str]] = {}  # PodGroup key -> running pods naming it (their queue comes from it)
        self.group_queue: dict[str, str | None] = {}  # PodGroup key in groups -> its queue when last summed
        self.counted: dict[str, str] = {}  # running pod key -> the owner it counts for
        self.count: dict[str, int] = {}  # owner -> running pods
        self.by_queue: dict[str, float] = {}
        self.total = 0.0
        self.deserved: tuple = (None, {})  # (queue_shares it was made from, deserved GPUs per queue)

    def _names(self, pod) -> list[str]:
        out = []
        job = pod.annotations.get("volcano.sh/job-name")
        if job:
            out.append(f"Job {pod.namespace}/{job}")
        if pod.group_name:
            out.append(f"PodGroup {pod.namespace}/{pod.group_name}")
        return out

    def record(self, t: float, result: SessionResult) -> None:
        cluster, trace = self.cluster, self.trace
        state = cluster.state()
        changes = cluster.changes_since(self.version) if self.version is not None else None
        self.version = cluster.version
        if changes is None:  # everything, as a full scan sees it
            changes = [("Pod", k) for k in list(self.uid_of) + list(state.pods)]
            changes += [("Job", k) for k in list(self.jobs) + list(state.jobs)]
            changes += [("PodGroup", k) for k in list(self.podgroups) + list(state.podgroups)]
            changes.append(("Node", ""))
        trace.evicted_pods.update(result.evicted_uids)
        if changes:  # (nothing written since the last record: the runs, counts and sums are as they were)
            self._take(t, state, changes)
        if result.reservations or result.backfilled:
            ident = _ident_of_podgroup(state)
            for key, plan in result.reservations.items():
                trace.reservations.setdefault(ident(key), []).append((t, plan.get("start")))
            trace.backfilled.update(ident(key) for key in result.backfilled)
        if self.deserved[0] is not result.queue_shares:
            self.deserved = (result.queue_shares, {q: v.get("deserved", {}).get(GPU, 0) / 1000
                                                   for q, v in result.queue_shares.items()})
        trace.samples.append(Sample(t, self.by_queue, self.total, self.deserved[1]))

    def _take(self, t: float, state, changes: list[tuple[str, str]]) -> None:
        """What the objects written since the last record change of the runs, owners, counts and sums."""
        trace = self.trace
        pods: set[str] = set()
        owners: set[str] = set()  # "Job key" / "PodGroup key" whose start or end may have come
        nodes = False
        requeued: list[str] = []  # PodGroups of running pods whose queue changed, appeared or went
        written_groups: set[str] = set()
        for kind, key in changes:
            if kind == "Pod":
                pods.add(key)
            elif kind == "Job" or kind == "PodGroup":
                ident = f"{kind} {key}"
                owners.add(ident)
                known, now_in = (self.jobs, state.jobs) if kind == "Job" else (self.podgroups, state.podgroups)
                if (key in known) != (key in now_in):  # appeared or disappeared: owners of its pods may change
                    pods |= self.refs.get(ident, set())
                    (known.add if key in now_in else known.discard)(key)
                if kind == "PodGroup" and key in self.groups:
                    written_groups.add(key)
                    if self.group_queue.get(key, "") != _podgroup_queue(state, key):
                        requeued.append(key)  # a running pod's queue changed
            elif kind == "Node":
                nodes = True
        position = self.cluster.position
        present = sorted([(position("Pod", k), k) for k in pods if k in state.pods])  # (one position per key)
        # pods gone, or replaced by another pod under the same key: their open runs end
        for key in pods:
            uid = self.uid_of.get(key)
            pod = state.pods.get(key)
            if uid is not None and (pod is None or (pod.metadata.uid or pod.key) != uid):
                del self.uid_of[key]
                for ident in self._names_of.pop(key, ()):
                    self.refs[ident].discard(key)
                runs = trace.pod_runs.get(uid)
                if runs and runs[-1][1] is None:
                    runs[-1][1] = t
                    runs[-1][3] = trace.evicted_pods.get(uid, "deleted")
        running_changed = False
        joined: set[str] = set()  # PodGroups that gained running pods
        for pos, key in present:
            pod = state.pods[key]  # (stored under its own key: `key` is `pod.key`)
            uid = pod.metadata.uid or key
            if key not in self.uid_of:
                self.uid_of[key] = uid
                names = self._names_of[key] = self._names(pod)
                for ident in names:
                    self.refs.setdefault(ident, set()).add(key)
            owner = _owner(pod, state)
            if owner:
                trace.job_of_pod[key] = owner
            runs = trace.pod_runs.setdefault(uid, [])
            phase = pod.status.phase
            is_running = bool(pod.spec.node_name and phase == "Running")
            if is_running:
                if not runs or runs[-1][1] is not None:
                    runs.append([t, None, pod.spec.node_name, "running", key])
                old = self.running.get(key)
                if old is None or old[0] is not pod:
                    self._stop(key)
                    self.running[key] = (pod, pod.spec.request()[GPU] / 1000)
                    group = _group_key(pod)
                    if group is not None:
                        self.groups.setdefault(group, set()).add(key)
                        joined.add(group)
                    running_changed = True
                # its queue, as the sum below reads it (again: a written pod may name another group or queue)
                self._place(key, pos, _queue_of(pod, state))
            else:
                if runs and runs[-1][1] is None:
                    runs[-1][1] = t
                    runs[-1][3] = phase.lower() if phase in ("Succeeded", "Failed") else "stopped"
                if key in self.running:
                    self._stop(key)
                    running_changed = True
            # the owner this pod counts for while running
            counts_for = trace.job_of_pod.get(key) if is_running else None
            before = self.counted.get(key)
            if counts_for != before:
                if before is not None:
                    self.count[before] -= 1
                    owners.add(before)
                    del self.counted[key]
                if counts_for is not None:
                    self.count[counts_for] = self.count.get(counts_for, 0) + 1
                    owners.add(counts_for)
                    self.counted[key] = counts_for
        for key in pods:
            if key not in state.pods:
                if key in self.running:
                    self._stop(key)
                    running_changed = True
                before = self.counted.pop(key, None)
                if before is not None:
                    self.count[before] -= 1
                    owners.add(before)
        # Every queue again only when such a PodGroup still has running pods after the pods above: a job that
        # ends has its PodGroup deleted as its pods stop, and the pods written here have their queue read afresh.
        requeue = any(key in self.groups for key in requeued)
        self._track(t, state, owners)
        if requeue:  # a PodGroup of running pods changed its queue, appeared or went: its pods' queue again (the
            # other running pods' PodGroups kept their queue since the last sum: see group_queue)
            placed, running = self.placed, self.running
            for group in requeued:
                for key in self.groups.get(group, ()):
                    placed[key] = (placed[key][0], _queue_of(running[key][0], state))
        if running_changed or requeue:
            # In the cluster's order, as the full scan sums. A running pod's queue is read again when it is
            # written or its PodGroup changes queue (above); nothing else changes it.
            by_queue: dict[str, float] = {}
            placed, running = self.placed, self.running
            for _, key in self.order:
                q = placed[key][1]
                by_queue[q] = by_queue.get(q, 0.0) + running[key][1]
            self.by_queue = by_queue
            # Each PodGroup of running pods with its queue now: those that gained running pods or were written
            # (the others' were read at an earlier sum and not written since; those without running pods left).
            group_queue, groups = self.group_queue, self.groups
            for key in joined | written_groups:
                if key in groups:
                    group_queue[key] = _podgroup_queue(state, key)
        if nodes:
            self.total = sum(n.allocatable()[GPU] for n in state.nodes.values()) / 1000

    def _stop(self, key: str) -> None:
        old = self.running.pop(key, None)
        was = self.placed.pop(key, None)
        if was is not None:
            self._unorder(was[0], key)
        if old is None:
            return
        group = _group_key(old[0])
        if group is not None:
            members = self.groups[group]
            members.discard(key)
            if not members:
                del self.groups[group]
                self.group_queue.pop(group, None)

    def _place(self, key: str, pos: int, queue: str) -> None:
        was = self.placed.get(key)
        if was is None or was[0] != pos:
            if was is not None:
                self._unorder(was[0], key)
            bisect.insort(self.order, (pos, key))
        self.placed[key] = (pos, queue)

    def _unorder(self, pos: int, key: str) -> None:
        del self.order[bisect.bisect_left(self.order, (pos, key))]

    def _track(self, t: float, state, owners: set[str]) -> None:
        """`Simulation._track_jobs` for the jobs whose running pods, Job or PodGroup changed."""
        position = self.cluster.position
        started, ended = self.trace.job_start, self.trace.job_end
        keyed = []
        for ident in owners:
            if ident in ended and ident in started:
                continue  # both times recorded: `_track` would do nothing more
            kind, key = ident.split(" ", 1)
            if kind == "Job" and key in state.jobs:
                keyed.append((0, position("Job", key), ident, key))
            elif kind == "PodGroup" and key in state.podgroups:
                keyed.append((1, position("PodGroup", key), ident, key))
        for _, _, ident, key in sorted(keyed):
            if ident[0] == "J":
                job = state.jobs[key]
                _track(self.trace, ident, t, self.count.get(ident, 0), job.spec.min_available or 1,
                       job.status.state.phase or "Pending")
            else:
                pg = state.podgroups[key]
                if any(o.kind == "Job" for o in pg.metadata.owner_references):
                    continue
                _track(self.trace, ident, t, self.count.get(ident, 0), pg.spec.min_member, pg.status.phase or "Pending")


def _queues_read(state) -> dict[str, tuple]:
    """The Queues as a session reads them: each object (written in place only for its status) and its state."""
    return {name: (q, _status_of(q)) for name, q in state.queues.items()}


def _status_of(queue) -> str | None:
    """What the scheduler reads of a queue's status: its state. (A session writes the queue's allocated resources,
    an extra status field nothing in the loop reads: the scheduler builds queues from spec, metadata and state,
    the queue controller reads state and PodGroup counts. Run again on the same inputs, a session would write the
    same allocated resources again.)"""
    return queue.status.state


def _podgroup_queue(state, key: str) -> str | None:
    """The queue a PodGroup gives its pods (None: no such PodGroup, the pod's own annotation counts)."""
    pg = state.podgroups.get(key)
    return (pg.spec.queue or "default") if pg is not None else None


def _group_key(pod) -> str | None:
    return f"{pod.namespace}/{pod.group_name}" if pod.group_name else None


def _track(trace: Trace, key: str, t: float, running: int, min_available: int, phase: str) -> None:
    if key not in trace.job_start and running >= max(min_available, 1):
        trace.job_start[key] = t
    if key not in trace.job_end and phase in FINAL_PHASES:
        trace.job_end[key] = t


def _ident_of_podgroup(state) -> Callable[[str], str]:
    """PodGroup key -> the job's identity in the trace ("Job ns/name" for a Volcano Job's PodGroup)."""

    def ident(key: str) -> str:
        pg = state.podgroups.get(key)
        owner = next((o for o in pg.metadata.owner_references if o.kind == "Job"), None) if pg else None
        return f"Job {pg.namespace}/{owner.name}" if owner else f"PodGroup {key}"

    return ident


def _queue_of(pod, state) -> str:
    group = pod.group_name
    if group:
        pg = state.podgroups.get(f"{pod.namespace}/{group}")
        if pg is not None:
            return pg.spec.queue or "default"
    return pod.annotations.get("scheduling.volcano.sh/queue-name", "default")


def _owner(pod, state) -> str | None:
    job = pod.annotations.get("volcano.sh/job-name")
    if job and f"{pod.namespace}/{job}" in state.jobs:
        return f"Job {pod.namespace}/{job}"
    group = pod.group_name
    if group and f"{pod.namespace}/{group}" in state.podgroups:
        return f"PodGroup {pod.namespace}/{group}"
    return None


def latency_stats(sessions: list[SessionRecord]) -> dict[str, float]:
    xs = sorted(s.latency_ms for s in sessions)
    if not xs:
        return {"mean": 0.0, "p99": 0.0, "max": 0.0}
    p99 = xs[min(len(xs) - 1, math.ceil(0.99 * len(xs)) - 1)]
    return {"mean": round(statistics.fmean(xs), 3), "p99": round(p99, 3), "max": round(xs[-1], 3)}


__all__ = ["Simulation", "Trace", "Sample", "latency_stats", "Job", "Node", "PodGroup"]
