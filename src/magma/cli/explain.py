"""`magma explain`: why one job waits (or where it runs) at one virtual time, and what would let it start."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, Optional

import numpy as np
import typer

from magma.api.resources import Resources
from magma.sim.scenario import ScenarioError

from .simulate import run_simulation


def what_would_help(sim, pg_key: str) -> list[str]:
    """Numbers from a fresh session on the final state: which nodes could take the waiting pods, and the queue."""
    from magma.scheduler.framework import TaskStatus

    ssn = sim.scheduler.open_session()
    job = ssn.jobs.get(pg_key) or next((j for j in ssn.jobs.values() if j.key == pg_key), None)
    if job is None:
        return ["the scheduler does not see this job (its queue may not exist)"]
    lines: list[str] = []
    pending = [t for t in job.tasks.values() if t.status in (TaskStatus.PENDING, TaskStatus.PIPELINED)]
    if not pending:
        return lines
    ready = job.ready_count()
    need_more = max(job.min_available - ready, 0)
    rows = np.arange(len(ssn.node_list))
    groups: Counter = Counter()
    sample = {}
    for t in pending:
        key = (t.shape, t.resreq)
        groups[key] += 1
        sample[key] = t
    table = ssn.table
    for key, count in groups.items():
        t = sample[key]
        pred = ssn.predicate(t, rows)
        ok_rows = rows[pred.mask]
        idle_fit = int(table.fits(t.vec, table.idle, ok_rows).sum()) if len(ok_rows) else 0
        future_fit = int(table.fits(t.vec, table.future_idle(), ok_rows).sum()) if len(ok_rows) else 0
        lines.append(
            f"{count} pod(s) asking {t.resreq.format()}: {len(ok_rows)}/{len(rows)} nodes pass the predicates; "
            f"{idle_fit} have that much free now, {future_fit} once terminating pods are gone")
        if len(ok_rows):
            # Per-pod slots on the best nodes: how many such pods each eligible node could take when empty.
            alloc = table.alloc[ok_rows]
            per_node = np.min(np.where(t.vec > 0, alloc // np.maximum(t.vec, 1), np.iinfo(np.int64).max), axis=1)
            shape_nodes = int((per_node >= 1).sum())
            lines.append(f"  to start, the gang needs {need_more} more pod(s) placed at once; "
                         f"{shape_nodes} eligible node(s) are big enough for one such pod when empty")
    queue = ssn.queues.get(job.queue)
    shares = getattr(ssn, "queue_shares", {}).get(job.queue, {})
    if queue is not None:
        alloc_q = Resources(shares.get("allocated", ssn.queue_allocated(job.queue)))
        parts = [f"queue {job.queue}: allocated {alloc_q.format()}"]
        if "deserved" in shares:
            parts.append(f"deserved {Resources(shares['deserved']).format()}")
        if not queue.capability.is_empty():
            parts.append(f"capability {queue.capability.format()}")
        if not queue.guarantee.is_empty():
            parts.append(f"guarantee {queue.guarantee.format()}")
        need = Resources()
        for t in pending:
            need = need + t.resreq
        parts.append(f"the waiting pods need {need.format()} more")
        lines.append("; ".join(parts))
    return lines


def explain(
    paths: Annotated[list[Path], typer.Argument(help="Scenario manifests: files or folders.")],
    job: Annotated[str, typer.Option("--job", help="NAMESPACE/NAME of a Job or PodGroup.")],
    at: Annotated[Optional[str], typer.Option("--at", help="Virtual time to explain at (default: the end).")] = None,
    config: Annotated[Optional[Path], typer.Option(help="volcano-scheduler.conf to use.")] = None,
    period: Annotated[Optional[str], typer.Option(help="Session period (default 1s).")] = None,
) -> None:
    """Why JOB waits, or where it runs, at time AT, with the scheduler's numbers."""
    if "/" not in job:
        raise typer.BadParameter("expected NAMESPACE/NAME", param_hint="--job")
    try:
        sim, result = run_simulation(paths, config, at, period, quiet=True)
    except ScenarioError as e:
        for line in e.lines:
            typer.echo(line, err=True)
        raise typer.Exit(2)
    ns, name = job.split("/", 1)
    entry = next((j for j in result["jobs"] if j["namespace"] == ns and j["name"] == name), None)
    if entry is None:
        known = ", ".join(f"{j['namespace']}/{j['name']}" for j in result["jobs"][:10])
        typer.echo(f"--job {job}: no such Job or PodGroup at t={result['endTime']:g}s (known: {known})", err=True)
        raise typer.Exit(2)
    t = result["endTime"]
    typer.echo(f"{entry['kind']} {job} in queue {entry['queue']} at t={t:g}s: {entry['phase']}")
    typer.echo(f"  submitted at {entry['submitTime']:g}s" + (
        f", started at {entry['startTime']:g}s (waited {entry['startTime'] - entry['submitTime']:g}s)"
        if entry["startTime"] is not None else ", not started yet"))
    if entry["preemptions"] or entry["restarts"]:
        typer.echo(f"  {entry['preemptions']} pod(s) preempted, {entry['restarts']} restart(s)")
    running = [p for p in entry["pods"] if p["node"]]
    for p in running:
        typer.echo(f"  pod {p['name']} ({p['phase']}) on {p['node']}")
    if entry.get("reason"):
        typer.echo(f"  why it waits: {entry['reason']}")
    # The PodGroup the scheduler sees for this job.
    state = sim.cluster.state()
    pg_key = job
    if entry["kind"] == "Job":
        pg_key = next((k for k, pg in state.podgroups.items()
                       if any(o.kind == "Job" and o.name == name for o in pg.metadata.owner_references)
                       and pg.namespace == ns), job)
    help_lines = what_would_help(sim, pg_key)
    if help_lines:
        typer.echo("  what would let it start:")
        for line in help_lines:
            typer.echo(f"    {line}")
