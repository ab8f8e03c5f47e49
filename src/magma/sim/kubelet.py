"""The virtual kubelet: runs bound pods at once, finishes work after its duration, fails pods of lost nodes.

Work durations (`sim.magma.io/duration`) follow DESIGN.md: for a Job or PodGroup, the clock starts when at
least minAvailable of its pods run at once (training starts only when the gang is complete) and then all its
pods succeed; for a bare Pod, from its own start. A gang that drops below minAvailable starts over.
`activeDeadlineSeconds` is enforced as a kubelet does: the pod fails with reason DeadlineExceeded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from magma.api.objects import JOB_NAME_ANNOTATION, Pod
from magma.cluster.memory import MemoryCluster


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
        for pod in self.cluster.state().pods.values():
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
        times = [self.work.started[k] + self.durations[k] for k in self.work.started]
        for pod in self.cluster.state().pods.values():
            if pod.status.phase == "Running" and pod.spec.active_deadline_seconds is not None:
                times.append(self.start_times.get(pod.key, now) + pod.spec.active_deadline_seconds)
        times += list(self.cluster._terminating.values())
        future = [t for t in times if t > now]
        return min(future) if future else None
