"""The simulation loop: the same controller and scheduler code as in a cluster, on a virtual clock.

At every session time t = 0, period, 2·period, …:
  arrivals and deletions due → kubelet (work finishes, deadlines, deletions complete) → controller →
  scheduler session → bound pods start running → controller (sees them running) → record.
Stretches where nothing can change are skipped: when the last session changed nothing and no timer is due
before the next event (arrival, deletion, completion), the clock jumps to that event's session time. The
decisions are the same as running every idle session; only faster.
"""

from __future__ import annotations

import math
import statistics
import time as _time
from dataclasses import dataclass, field
from typing import Callable

from magma.api.objects import Job, Node, PodGroup
from magma.api.resources import GPU
from magma.cluster.memory import MemoryCluster
from magma.controller import Controller
from magma.scheduler.scheduler import Scheduler, SessionResult

from .clock import VirtualClock
from .kubelet import VirtualKubelet
from .scenario import Scenario

DEFAULT_SAFETY_CAP = 30 * 86400.0  # a scenario that never settles stops after 30 virtual days, and says so


@dataclass
class Sample:
    """The cluster after one session, for the report's time series."""

    time: float
    gpu_allocated: dict[str, float]  # queue -> GPUs allocated (pods on nodes)
    gpu_total: float
    deserved: dict[str, float]  # queue -> deserved GPUs (from the share plugin)


@dataclass
class SessionRecord:
    """What the trace keeps of each session (the full SessionResult is kept only for the last one)."""

    time: float
    latency_ms: float
    binds: int
    evictions: int


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
        t = 0.0
        horizon = self.until if self.until is not None else self.safety_cap
        while True:
            self.clock.set(t)
            changed = self._apply_timed(t)
            changed |= self.kubelet.step(t)
            changed |= self.controller.sync()
            result = self.scheduler.run_once()
            self.trace.sessions.append(SessionRecord(t, result.latency_ms, len(result.binds), len(result.evictions)))
            self.trace.last = result
            started = self.kubelet.start_bound(t)
            self.kubelet.step(t)
            changed |= self.controller.sync()
            changed |= bool(result.binds or result.evictions or started) or result.phases != self._last_phases
            self._last_phases = result.phases
            self._record(t, result)
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


def wall_clock() -> float:
    return _time.perf_counter()


__all__ = ["Simulation", "Trace", "Sample", "latency_stats", "Job", "Node", "PodGroup"]
