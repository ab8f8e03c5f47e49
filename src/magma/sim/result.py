"""The simulation result: DESIGN.md's JSON contract (schemaVersion 1), built from the final cluster and the trace."""

from __future__ import annotations

import math

from magma.api.objects import Pod
from magma.api.resources import GPU, Resources
from magma.scheduler.framework.snapshot import task_status

from .runner import Simulation, _queue_of, latency_stats

SCHEMA_VERSION = 1


def _percentile(xs: list[float], q: float) -> float:
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))]


def _pod_phase(pod: Pod) -> str:
    """Volcano's task-status words (Pending, Bound, Running, Releasing, Succeeded, Failed, ...)."""
    return str(task_status(pod))


def build_result(sim: Simulation) -> dict:
    trace = sim.trace
    state = sim.cluster.state()
    end = trace.end_time
    last = trace.last
    evicted_by_job: dict[str, int] = {}
    for uid, runs in trace.pod_runs.items():
        if uid in trace.evicted_pods and runs:
            owner = trace.job_of_pod.get(runs[-1][4])
            if owner:
                evicted_by_job[owner] = evicted_by_job.get(owner, 0) + 1

    pods_of: dict[str, list[Pod]] = {}
    for pod in state.pods.values():
        owner = trace.job_of_pod.get(pod.key)
        if owner:
            pods_of.setdefault(owner, []).append(pod)

    def pod_json(pod: Pod) -> dict:
        runs = trace.pod_runs.get(pod.metadata.uid or pod.key) or []
        return {
            "name": pod.name,
            "task": pod.annotations.get("volcano.sh/task-spec", ""),
            "node": pod.spec.node_name,
            "nominatedNode": None,
            "phase": _pod_phase(pod),
            "startTime": runs[-1][0] if runs else None,
            "endTime": runs[-1][1] if runs and runs[-1][3] in ("succeeded", "failed") else None,
        }

    pg_key: dict[str, str] = {}  # "Job ns/name" -> key of the PodGroup the scheduler sees for it
    for k, pg in state.podgroups.items():
        for o in pg.metadata.owner_references:
            if o.kind == "Job":
                pg_key[f"Job {pg.namespace}/{o.name}"] = k
    jobs = []
    entries = [("Job", k, j) for k, j in state.jobs.items()] + [
        ("PodGroup", k, pg) for k, pg in state.podgroups.items()
        if not any(o.kind == "Job" for o in pg.metadata.owner_references)
    ]
    for kind, key, obj in entries:
        ident = f"{kind} {key}"
        if kind == "Job":
            phase = obj.status.state.phase or "Pending"
            queue = obj.spec.queue or "default"
            restarts = obj.status.retry_count
        else:
            phase = obj.status.phase or "Pending"
            queue = obj.spec.queue or "default"
            restarts = 0
        submit = float(obj.metadata.creation_timestamp or 0.0)
        job = {
            "namespace": obj.namespace, "name": obj.name, "kind": kind, "queue": queue, "phase": phase,
            "submitTime": submit,
            "startTime": trace.job_start.get(ident),
            "endTime": trace.job_end.get(ident),
            "preemptions": evicted_by_job.get(ident, 0),
            "restarts": restarts,
            "reason": (last.reasons.get(pg_key.get(ident, key)) if last else None),
            # reservation plugin: when the job first held a reservation, its planned start at the last session
            # that reserved for it (null: none, or unknown while nodes drain), whether it started as backfill
            "reservedAt": reserved[0][0] if (reserved := trace.reservations.get(ident)) else None,
            "plannedStart": reserved[-1][1] if reserved else None,
            "backfilled": ident in trace.backfilled,
            "pods": [pod_json(p) for p in sorted(pods_of.get(ident, []), key=lambda p: p.name)],
        }
        jobs.append(job)

    # Allocated per queue at the end, each parent holding what its subtree holds.
    allocated: dict[str, Resources] = {}
    for pod in state.pods.values():
        if pod.spec.node_name and pod.status.phase in (None, "Pending", "Running"):
            q = _queue_of(pod, state)
            while q is not None:
                allocated[q] = allocated.get(q, Resources()) + pod.spec.request()
                parent = state.queues[q].parent_name if q in state.queues else None
                q = parent
    shares = last.queue_shares if last else {}
    queues = []
    for name, q in sorted(state.queues.items()):
        deserved = shares.get(name, {}).get("deserved")
        queues.append({
            "name": name, "parent": q.parent_name, "weight": q.spec.weight or 1,
            "deserved": Resources(deserved).to_json() if deserved is not None else None,
            "allocated": allocated.get(name, Resources()).to_json(),
        })

    waits = [j["startTime"] - j["submitTime"] for j in jobs if j["startTime"] is not None]
    ends = [j["endTime"] for j in jobs if j["endTime"] is not None]
    submits = [j["submitTime"] for j in jobs]
    summary = {
        "gpuAllocation": round(gpu_allocation(sim), 4),
        "avgWaitSeconds": round(sum(waits) / len(waits), 3) if waits else 0.0,
        "p99WaitSeconds": round(_percentile(waits, 0.99), 3),
        "makespanSeconds": (max(ends) - min(submits)) if ends and len(ends) == len(jobs) else end - min(submits, default=0),
        "preemptions": len(trace.evicted_pods),
        "sessions": len(trace.sessions),
        "sessionLatencyMs": latency_stats(trace.sessions),
        "jobsPending": sum(1 for j in jobs if j["startTime"] is None),
        "reservedJobs": sum(1 for j in jobs if j["reservedAt"] is not None),
        "backfilledJobs": sum(1 for j in jobs if j["backfilled"]),
        "stopReason": trace.stop_reason,
    }
    events = [e.to_json() for e in sim.cluster.events]
    return {
        "schemaVersion": SCHEMA_VERSION,
        "endTime": end,
        "jobs": jobs,
        "queues": queues,
        "summary": summary,
        "events": events,
        "config": sim.scenario.config_source,
    }


def gpu_allocation(sim: Simulation) -> float:
    """Time-averaged share of GPUs allocated: each session's allocation holds until the next session."""
    samples = sim.trace.samples
    if not samples:
        return 0.0
    if len(samples) == 1 or samples[-1].time == samples[0].time:
        s = samples[-1]
        return sum(s.gpu_allocated.values()) / s.gpu_total if s.gpu_total else 0.0
    area = 0.0
    for a, b in zip(samples, samples[1:]):
        if a.gpu_total:
            area += sum(a.gpu_allocated.values()) / a.gpu_total * (b.time - a.time)
    return area / (samples[-1].time - samples[0].time)


__all__ = ["build_result", "gpu_allocation", "GPU"]
