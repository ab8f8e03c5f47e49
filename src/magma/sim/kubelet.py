"""The virtual kubelet: runs bound pods at once, finishes work after its duration, fails pods of lost nodes.

Work durations (`sim.magma.io/duration`) follow DESIGN.md: for a Job or PodGroup, the clock starts when at
least minAvailable of its pods run at once (training starts only when the gang is complete) and then all its
pods succeed; for a bare Pod, from its own start. A gang that drops below minAvailable starts over.
`activeDeadlineSeconds` is enforced as a kubelet does: the pod fails with reason DeadlineExceeded.

With `fastpath.incremental_recorder` the kubelet follows the cluster's change log (`_Running`) instead of scanning
every pod at every step: which pods run, by unit of work; which have deadlines; which were written since the last
`start_bound`. A unit is looked at when its pods or its Job/PodGroup were written, or when its work may be done
(the earliest end among started units has come). The order of what it writes is that of the full scan. The
earliest end is kept in a heap, which also gives `next_completion` its answer without a look at every started unit.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

from magma.api.objects import JOB_NAME_ANNOTATION, Pod
from magma.cluster.memory import MemoryCluster
from magma.scheduler.framework import fastpath


@dataclass
class WorkClock:
    """When a unit of work (a gang, or a bare pod) started its current attempt."""

    started: dict[tuple[str, str], float] = field(default_factory=dict)


def _terminate(pod: Pod, phase: str, exit_code: int, reason: str, now: float) -> None:
    pod.status.phase = phase
    status = pod.status
    extra = status.model_extra if status.model_extra is not None else {}
    extra["containerStatuses"] = [
        {"name": c.name or "main", "state": {"terminated": {"exitCode": exit_code, "reason": reason}}}
        for c in (pod.spec.containers or [])
    ] or [{"name": "main", "state": {"terminated": {"exitCode": exit_code, "reason": reason}}}]
    extra["reason"] = reason
    extra["finishedAt"] = now
    if hasattr(status, "container_statuses"):
        try:
            setattr(status, "container_statuses", extra["containerStatuses"])
        except Exception:  # pragma: no cover - typed field of another shape
            pass


class VirtualKubelet:
    def __init__(self, cluster: MemoryCluster, durations: dict[tuple[str, str], float]):
        self.cluster = cluster
        self.durations = durations
        self.work = WorkClock()
        self.start_times: dict[str, float] = {}  # pod key -> when it started running
        self._running: _Running | None = None  # fastpath.incremental_recorder

    def _tracker(self) -> "_Running | None":
        if not fastpath.incremental_recorder:
            self._running = None
        elif self._running is None:
            self._running = _Running(self)
        else:
            self._running.refresh()
        return self._running

    def _work_key(self, pod: Pod) -> tuple[str, str] | None:
        """The unit whose duration governs this pod: its Job, its PodGroup, or the pod itself."""
        job = pod.annotations.get(JOB_NAME_ANNOTATION)
        if job and ("Job", f"{pod.namespace}/{job}") in self.durations:
            return ("Job", f"{pod.namespace}/{job}")
        group = pod.group_name
        if group and ("PodGroup", f"{pod.namespace}/{group}") in self.durations:
            return ("PodGroup", f"{pod.namespace}/{group}")
        if ("Pod", pod.key) in self.durations:
            return ("Pod", pod.key)
        return None

    def start_bound(self, now: float) -> int:
        """Bound pods start running at the session time they were bound. Returns how many started."""
        n = 0
        tracker = self._tracker()
        if tracker is not None:  # only a pod written since the last call can have become bound
            state = self.cluster.state()
            pods = [state.pods[k] for k in tracker.take_written()]
        else:
            pods = list(self.cluster.state().pods.values())
        for pod in pods:
            if pod.spec.node_name and (pod.status.phase in (None, "Pending")) and pod.metadata.deletion_timestamp is None:
                pod.status.phase = "Running"
                self.cluster.mark_changed("Pod", pod.key)  # changed in place: the scheduler's snapshot must see it
                self.start_times[pod.key] = now
                extra = pod.status.model_extra if pod.status.model_extra is not None else {}
                extra["startTime"] = now
                n += 1
        return n

    def fail_lost_nodes(self, node_names: list[str], now: float) -> None:
        for pod in self.cluster.state().pods.values():
            if pod.spec.node_name in node_names and pod.status.phase in (None, "Pending", "Running"):
                _terminate(pod, "Failed", 137, "NodeLost", now)
                self.cluster.mark_changed("Pod", pod.key)

    def step(self, now: float) -> bool:
        """Advance work to `now`: finish gangs and pods whose time is up, enforce deadlines. True if anything changed."""
        changed = bool(self.cluster.finish_deletions(now))
        tracker = self._tracker()
        if tracker is not None:
            return tracker.step(now) or changed
        state = self.cluster.state()
        running_by_unit: dict[tuple[str, str], list[Pod]] = {}
        for pod in state.pods.values():
            if pod.status.phase != "Running" or pod.metadata.deletion_timestamp is not None:
                continue
            deadline = pod.spec.active_deadline_seconds
            started = self.start_times.get(pod.key)
            if started is None:  # running from the start (a scenario's initial state): its clock starts now
                started = self.start_times[pod.key] = now
                extra = pod.status.model_extra if pod.status.model_extra is not None else {}
                extra["startTime"] = now
            if deadline is not None and now - started >= deadline:
                _terminate(pod, "Failed", 137, "DeadlineExceeded", now)
                self.cluster.mark_changed("Pod", pod.key)
                changed = True
                continue
            key = self._work_key(pod)
            if key is not None:
                running_by_unit.setdefault(key, []).append(pod)
        for key in list(self.work.started):
            if key not in running_by_unit:
                self.work.started.pop(key)
        for key, pods in running_by_unit.items():
            need = self._min_available(key)
            if len(pods) < need:
                self.work.started.pop(key, None)  # the gang is not complete: training cannot progress
                continue
            if key not in self.work.started:
                self.work.started[key] = max(self.start_times.get(p.key, now) for p in pods)
            if now - self.work.started[key] >= self.durations[key]:
                for p in pods:
                    _terminate(p, "Succeeded", 0, "Completed", now)
                    self.cluster.mark_changed("Pod", p.key)
                self.work.started.pop(key, None)
                changed = True
        return changed

    def _min_available(self, key: tuple[str, str]) -> int:
        kind, k = key
        state = self.cluster.state()
        if kind == "Job":
            job = state.jobs.get(k)
            return (job.spec.min_available or 1) if job else 1
        if kind == "PodGroup":
            pg = state.podgroups.get(k)
            return max(pg.spec.min_member, 1) if pg else 1
        return 1

    def next_completion(self, now: float) -> float | None:
        """The earliest time at which running work finishes or a deadline fires (for skipping idle time)."""
        tracker = self._tracker()
        end = tracker.earliest_end(now) if tracker is not None else None
        if end is None:
            times = [self.work.started[k] + self.durations[k] for k in self.work.started]
        else:
            times = [end] if end != math.inf else []
        state = self.cluster.state()
        pods = [state.pods[k] for k in tracker.deadline] if tracker is not None else state.pods.values()
        for pod in pods:
            if pod.status.phase == "Running" and pod.spec.active_deadline_seconds is not None:
                times.append(self.start_times.get(pod.key, now) + pod.spec.active_deadline_seconds)
        times += list(self.cluster._terminating.values())
        future = [t for t in times if t > now]
        return min(future) if future else None


class _Running:
    """The kubelet's view of the running pods, kept from the cluster's change log (see the module docstring)."""

    def __init__(self, kubelet: VirtualKubelet):
        self.kubelet = kubelet
        self.cluster = kubelet.cluster
        self.version = self.cluster.version
        self.running: set[str] = set()  # pods Running (terminating ones too)
        self.deadline: set[str] = set()  # running pods with activeDeadlineSeconds
        self.unit_of: dict[str, tuple[str, str]] = {}  # running, not terminating pod -> its unit of work
        self.units: dict[tuple[str, str], set[str]] = {}
        self.dirty: set[tuple[str, str]] = set()  # units to look at again
        self.unstarted: set[str] = set()  # running pods without a start time yet (given at the next step)
        self.next_end = -math.inf  # no started unit's work ends before this
        # (end, unit) of the started units, a heap; an entry whose unit has since stopped or started again is
        # dropped when it comes to the top
        self.ends: list[tuple[float, tuple[str, str]]] = [
            (s + kubelet.durations[u], u) for u, s in kubelet.work.started.items()]
        heapq.heapify(self.ends)
        state = self.cluster.state()
        self.written: set[str] | None = None  # pods written since the last start_bound (None: all)
        for key in state.pods:
            self._pod(state, key)

    def earliest_end(self, now: float) -> float | None:
        """The earliest end of the started units' work when it is after `now` (inf: no unit started), from the heap
        of ends (every started unit has its end there, `step` leaves a current one on top); None: not known so,
        the caller looks at every started unit."""
        end = self._current_end()
        if end is None:
            return None if self.kubelet.work.started else math.inf
        return end if end > now else None

    def _current_end(self) -> float | None:
        """The top of the heap of ends once the entries of units ended or started again since are dropped (None: no
        entry left)."""
        ends, started, durations = self.ends, self.kubelet.work.started, self.kubelet.durations
        while ends:
            end, unit = ends[0]
            s = started.get(unit)
            if s is not None and s + durations[unit] == end:
                return end
            heapq.heappop(ends)
        return None

    def refresh(self) -> None:
        if self.cluster.version == self.version:
            return  # nothing written since
        changes = self.cluster.changes_since(self.version)
        self.version = self.cluster.version
        state = self.cluster.state()
        if changes is None:
            for key in list(self.running) + list(state.pods):
                self._pod(state, key)
            self.written = None
            self.next_end = -math.inf
            return
        for kind, key in changes:
            if kind == "Pod":
                self._pod(state, key)
                if self.written is not None:
                    self.written.add(key)
            elif (kind, key) in self.units:  # its Job or PodGroup: minAvailable may have changed
                self.dirty.add((kind, key))

    def _pod(self, state, key: str) -> None:
        pod = state.pods.get(key)
        unit = self.unit_of.pop(key, None)
        if unit is not None:
            self.units[unit].discard(key)
            self.dirty.add(unit)
        if pod is None or pod.status.phase != "Running":
            self.running.discard(key)
            self.deadline.discard(key)
            self.unstarted.discard(key)
            return
        self.running.add(key)
        if pod.spec.active_deadline_seconds is not None:
            self.deadline.add(key)
        else:
            self.deadline.discard(key)
        if pod.metadata.deletion_timestamp is not None:
            self.unstarted.discard(key)
            return
        if key not in self.kubelet.start_times:
            self.unstarted.add(key)
        unit = self.kubelet._work_key(pod)
        if unit is not None:
            self.unit_of[key] = unit
            self.units.setdefault(unit, set()).add(key)
            self.dirty.add(unit)

    def take_written(self) -> list[str]:
        """Keys of the pods written since the last call (all pods the first time), in the cluster's order."""
        state = self.cluster.state()
        keys = list(state.pods) if self.written is None else [k for k in self.written if k in state.pods]
        if self.written is not None:
            keys.sort(key=lambda k: self.cluster.position("Pod", k))
        self.written = set()
        return keys

    def _sorted(self, keys) -> list[str]:
        return sorted(keys, key=lambda k: self.cluster.position("Pod", k))

    def step(self, now: float) -> bool:
        """`VirtualKubelet.step` after finish_deletions, from the kept view."""
        if now < self.next_end and not (self.unstarted or self.deadline or self.dirty):
            return False  # no pod to start, no deadline, no unit to look at, no work done yet: what the rest finds
        kubelet, cluster = self.kubelet, self.cluster
        state = cluster.state()
        pods_of = state.pods
        work, durations, start_times = kubelet.work, kubelet.durations, kubelet.start_times
        changed = False
        if self.unstarted:
            for key in self._sorted(self.unstarted):  # running from the start: the clock starts now
                start_times[key] = now
                pod = pods_of[key]
                extra = pod.status.model_extra if pod.status.model_extra is not None else {}
                extra["startTime"] = now
            self.unstarted.clear()
        # Only pods whose deadline has come are acted on: those, in the cluster's order (no other pod's deadline
        # depends on them).
        due = [key for key in self.deadline if pods_of[key].metadata.deletion_timestamp is None
               and now - start_times[key] >= pods_of[key].spec.active_deadline_seconds]
        for key in self._sorted(due) if len(due) > 1 else due:
            _terminate(pods_of[key], "Failed", 137, "DeadlineExceeded", now)
            cluster.mark_changed("Pod", key)
            changed = True
            self._pod(state, key)  # out of its unit at once, as the full scan leaves it out
        look = self.dirty
        self.dirty = set()
        if now >= self.next_end:  # some started unit may be done: those whose time is up (for any other started
            # unit, not written since, looking again changes nothing)
            look.update(u for u, s in work.started.items() if now - s >= durations[u])
        if not look:
            return changed
        pos = cluster.position
        order = []
        units = self.units
        for unit in look:
            keys = units.get(unit)
            if not keys:
                units.pop(unit, None)
                work.started.pop(unit, None)
                continue
            order.append((min(pos("Pod", k) for k in keys), unit))
        if len(order) > 1:
            order.sort()
        for _, unit in order:
            keys = units[unit]
            if len(keys) < kubelet._min_available(unit):
                work.started.pop(unit, None)  # the gang is not complete: training cannot progress
                continue
            started = work.started.get(unit)
            if started is None:
                started = work.started[unit] = max(start_times.get(k, now) for k in keys)
                heapq.heappush(self.ends, (started + durations[unit], unit))
            if now - started >= durations[unit]:
                for key in self._sorted(keys):
                    _terminate(pods_of[key], "Succeeded", 0, "Completed", now)
                    cluster.mark_changed("Pod", key)
                work.started.pop(unit, None)
                changed = True
        # the started units may have changed: their earliest end, a little early so that rounding never hides one
        # (the test above is the exact one)
        end = self._current_end()
        self.next_end = end - 1e-6 * max(1.0, abs(now)) if end is not None else math.inf
        return changed
