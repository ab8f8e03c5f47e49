"""`magma simulate`: run manifests on the in-memory cluster with a virtual clock.

Exit 0 on success; exit 2 with one line per problem on bad input, before anything runs or is written.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from magma.api.duration import parse_duration
from magma.sim.scenario import ScenarioError, load_scenario


def _duration_option(name: str, raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        return parse_duration(raw)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint=name) from None


def run_simulation(paths: list[Path], config: Path | None, until: str | None, period: str | None,
                   quiet: bool = False) -> tuple["Simulation", dict]:
    """Load, run and summarise; raises ScenarioError on bad input. Shared by simulate and explain."""
    from magma.sim.result import build_result
    from magma.sim.runner import Simulation

    until_s = _duration_option("--until", until)
    scenario = load_scenario(paths, config)
    period_s = _duration_option("--period", period) or 1.0
    if period_s <= 0:
        raise typer.BadParameter("must be more than 0s", param_hint="--period")
    sim = Simulation(scenario, period=period_s, until=until_s)
    err = Console(stderr=True)
    show = not quiet and err.is_terminal
    with Progress(TextColumn("simulating"), BarColumn(), TextColumn("{task.fields[t]}"), TimeElapsedColumn(),
                  console=err, disable=not show, transient=True) as progress:
        task = progress.add_task("sim", total=1.0, t="")

        def tick(t: float, horizon: float) -> None:
            progress.update(task, completed=min(t / horizon, 1.0) if horizon else 1.0, t=f"t={t:.0f}s")

        sim.run(progress=tick)
    return sim, build_result(sim)


def print_summary(result: dict, scenario_warnings: list[str], console: Console) -> None:
    s = result["summary"]
    if scenario_warnings:
        console.print(f"[yellow]{len(scenario_warnings)} warning(s) in the input; `magma validate` lists them[/yellow]",
                      highlight=False)
    per_queue: dict[str, dict] = defaultdict(lambda: {"jobs": 0, "running": 0, "done": 0, "waiting": 0, "waits": []})
    for j in result["jobs"]:
        q = per_queue[j["queue"]]
        q["jobs"] += 1
        if j["endTime"] is not None:
            q["done"] += 1
        elif j["phase"] == "Running":
            q["running"] += 1
        else:
            q["waiting"] += 1
        if j["startTime"] is not None:
            q["waits"].append(j["startTime"] - j["submitTime"])
    t = Table(title=f"Jobs per queue (virtual time 0–{result['endTime']:g}s)")
    for col in ("queue", "jobs", "running", "finished", "waiting", "avg wait s", "max wait s", "preempted pods",
                "GPUs at end"):
        t.add_column(col, justify="left" if col == "queue" else "right")
    alloc = {q["name"]: q["allocated"].get("nvidia.com/gpu", 0) for q in result["queues"]}
    pre: dict[str, int] = defaultdict(int)
    for j in result["jobs"]:
        pre[j["queue"]] += j["preemptions"]
    for name in sorted(per_queue):
        q = per_queue[name]
        w = q["waits"]
        t.add_row(name, str(q["jobs"]), str(q["running"]), str(q["done"]), str(q["waiting"]),
                  f"{sum(w) / len(w):.0f}" if w else "–", f"{max(w):.0f}" if w else "–", str(pre[name]),
                  f"{alloc.get(name, 0):g}")
    console.print(t)
    console.print(
        f"GPU allocation {s['gpuAllocation'] * 100:.1f}% · avg wait {s['avgWaitSeconds']:.0f}s · "
        f"p99 wait {s['p99WaitSeconds']:.0f}s · preemptions {s['preemptions']} · sessions {s['sessions']} · "
        f"session latency mean {s['sessionLatencyMs']['mean']:.1f} ms, p99 {s['sessionLatencyMs']['p99']:.1f} ms · "
        f"stopped: {s['stopReason']}", highlight=False)
    waiting = [j for j in result["jobs"] if j["startTime"] is None]
    if waiting:
        wt = Table(title="Jobs that never started, and why")
        wt.add_column("job")
        wt.add_column("queue")
        wt.add_column("reason")
        for j in waiting[:20]:
            wt.add_row(f"{j['namespace']}/{j['name']}", j["queue"], j.get("reason") or "")
        console.print(wt)


def simulate(
    paths: Annotated[list[Path], typer.Argument(help="Scenario manifests: files or folders.")],
    config: Annotated[Optional[Path], typer.Option(help="volcano-scheduler.conf (overrides a ConfigMap in the manifests).")] = None,
    until: Annotated[Optional[str], typer.Option(help="Stop at this virtual time (90s, 15m, 1h30m, 2d). Default: when nothing can change.")] = None,
    period: Annotated[Optional[str], typer.Option(help="Session period (default 1s).")] = None,
    json_out: Annotated[Optional[str], typer.Option("--json", help="Write the result JSON to PATH, or - for stdout.")] = None,
    report: Annotated[Optional[Path], typer.Option(help="Write a self-contained HTML report with plots.")] = None,
) -> None:
    """Run the scheduler and controller on a virtual cluster and report what happened."""
    try:
        sim, result = run_simulation(paths, config, until, period)
    except ScenarioError as e:
        for line in e.lines:
            typer.echo(line, err=True)
        typer.echo(f"simulate: {len(e.lines)} problem(s) in the input; nothing was run", err=True)
        raise typer.Exit(2)
    console = Console(stderr=json_out == "-", width=None if sys.stdout.isatty() else 140)
    print_summary(result, sim.scenario.warnings, console)
    if json_out == "-":
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
    elif json_out:
        Path(json_out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        console.print(f"result: {json_out}")
    if report:
        from magma.sim.report import render_report

        title = ", ".join(str(p) for p in paths)
        report.write_text(render_report(sim, result, title), encoding="utf-8")
        console.print(f"report: {report}")
