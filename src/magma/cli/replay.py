"""`magma replay openb`: FGD's openb GPU-trace experiment with one or all placement policies.

    magma replay openb [--nodes CSV] [--pods CSV] [--policy NAME|all] [--seeds 42-51] [--tune 1.3]
                       [--mix KIND:SHARE[:SEED]] [--json OUT|-] [--report OUT.html] [--jobs N]

Defaults are the repository's `data/openb` files (1,213 GPU nodes, 8,152 tasks). The JSON for one policy is
`{"policy", "seeds", "allocationAt": {"100": mean percent, ...}, "curve": [[arrived %, mean allocated %], ...]}`
plus per-seed details; with several policies it is a list of such objects. Exit 0 on success, 2 on bad input
(the message names the file, line and column of a bad row).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

app = typer.Typer(help="Replay GPU traces under published protocols and compare placement policies.",
                  no_args_is_help=True, add_completion=False)


def _data_dir() -> Path:
    here = Path(__file__).resolve()
    for base in (here.parents[3], Path.cwd()):
        d = base / "data" / "openb"
        if d.is_dir():
            return d
    return Path("data") / "openb"


def parse_seeds(text: str) -> list[int]:
    """`42-51`, `42,43,50-52` or `7`."""
    seeds: list[int] = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        try:
            if "-" in part[1:]:
                cut = part.index("-", 1)
                lo, hi = int(part[:cut]), int(part[cut + 1:])
                if hi < lo:
                    raise ValueError
                seeds.extend(range(lo, hi + 1))
            else:
                seeds.append(int(part))
        except ValueError:
            raise typer.BadParameter(f"{part!r} is not a seed or a range like 42-51", param_hint="--seeds") from None
    if not seeds:
        raise typer.BadParameter("no seeds", param_hint="--seeds")
    return seeds


def _policies(text: str) -> list[str]:
    from magma.replay.policies import BASELINES, NAMES, canonical

    names: list[str] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if part.lower() == "all":
            names.extend(list(BASELINES) + [n for n in NAMES if n not in BASELINES])
        elif part.lower() == "baselines":
            names.extend(BASELINES)
        else:
            try:
                names.append(canonical(part))
            except KeyError as e:
                raise typer.BadParameter(str(e.args[0]), param_hint="--policy") from None
    return list(dict.fromkeys(names))


@app.command("openb")
def openb(
    nodes: Annotated[Optional[Path], typer.Option("--nodes", help="node list CSV (sn, cpu_milli, memory_mib, gpu, model)")] = None,
    pods: Annotated[Optional[Path], typer.Option("--pods", help="task list CSV (name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec)")] = None,
    policy: Annotated[str, typer.Option("--policy", help="random, dotprod, gpu-clustering, gpu-packing, bestfit, fgd, binpack, magma; a comma list; 'baselines' or 'all'")] = "fgd",
    seeds: Annotated[str, typer.Option("--seeds", help="seeds, e.g. 42-51 or 42,45")] = "42-51",
    tune: Annotated[float, typer.Option("--tune", help="arrived GPU demand as a multiple of the GPU capacity")] = 1.3,
    mix: Annotated[Optional[str], typer.Option("--mix", help="replay a workload mix drawn from the task list: KIND:SHARE[:SEED], KIND one of multigpu, gpushare, cpu, bigcpu (see magma.replay.mixes)")] = None,
    json_out: Annotated[Optional[str], typer.Option("--json", help="write the result as JSON to this file ('-': stdout)")] = None,
    report: Annotated[Optional[Path], typer.Option("--report", help="write a self-contained HTML report")] = None,
    jobs: Annotated[int, typer.Option("--jobs", help="worker processes (0: one per available core)")] = 0,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bar or table")] = False,
) -> None:
    """FGD's experiment on Alibaba's openb trace: per seed shuffle the tasks, tune the arrived GPU demand to
    TUNE x capacity, place tasks one at a time (none leaves, a misfit is dropped) and record the GPU allocated at
    each 1% of arrived demand."""
    from magma.replay.mixes import make_mix
    from magma.replay.openb import TraceError, load_nodes, load_pods
    from magma.replay.report import render_report
    from magma.replay.runner import default_jobs, run_many

    err = Console(stderr=True)
    seed_list = parse_seeds(seeds)
    names = _policies(policy)
    if not names:
        raise typer.BadParameter("no policy", param_hint="--policy")
    if not 0 < tune <= 10:
        raise typer.BadParameter("must be more than 0 and at most 10", param_hint="--tune")
    data = _data_dir()
    nodes_path = nodes or data / "openb_node_list_gpu_node.csv"
    pods_path = pods or data / "openb_pod_list_default.csv"
    try:
        node_list = load_nodes(nodes_path)
        pod_list = load_pods(pods_path)
    except TraceError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    if node_list.total_gpu_milli == 0:
        typer.echo(f"error: {nodes_path}: the nodes have no GPUs", err=True)
        raise typer.Exit(2)
    if pod_list.total_gpu_milli == 0:
        typer.echo(f"error: {pods_path}: the tasks ask for no GPUs", err=True)
        raise typer.Exit(2)
    pods_label = str(pods_path)
    if mix:
        parts = mix.split(":")
        try:
            kind, share = parts[0], float(parts[1])
            mix_seed = int(parts[2]) if len(parts) > 2 else 1
            pod_list = make_mix(pod_list, kind, share, mix_seed)
        except (IndexError, ValueError) as e:
            raise typer.BadParameter(f"{mix!r}: {e}" if str(e) else f"{mix!r} is not KIND:SHARE[:SEED]",
                                     param_hint="--mix") from None
        pods_label = f"{pods_path} as mix {pod_list.path}"
    workers = jobs if jobs > 0 else default_jobs()
    total = len(names) * len(seed_list)
    show = not quiet and err.is_terminal
    with Progress(TextColumn("replaying {task.fields[what]}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, disable=not show, transient=True) as progress:
        bar = progress.add_task("replay", total=total, what=", ".join(names))

        def done(p: str, tr) -> None:
            progress.advance(bar)

        results = run_many(node_list, pod_list, names, seed_list, tune, jobs=workers, track_frag=True, on_done=done)

    payload: object
    docs = []
    for r in results:
        d = r.to_json()
        d["nodes"] = str(nodes_path)
        d["pods"] = pods_label
        docs.append(d)
    payload = docs[0] if len(docs) == 1 else docs
    if json_out:
        text = _compact(json.dumps(payload, indent=1))
        if json_out == "-":
            sys.stdout.write(text + "\n")
        else:
            Path(json_out).write_text(text + "\n", encoding="utf-8")
    if report:
        title = f"{Path(pods_label).name if not mix else pod_list.path} on {Path(nodes_path).name}"
        report.write_text(render_report(results, title, str(nodes_path), pods_label), encoding="utf-8")
    if not quiet and json_out != "-":
        out = Console()
        t = Table(title=f"GPU allocated (% of capacity), mean of {len(seed_list)} seed(s), tune {tune:g}")
        for col in ("policy", "at 100% arrived", f"at {results[0].top}%", "failed tasks/seed", "s/seed"):
            t.add_column(col, justify="left" if col == "policy" else "right")
        for r in results:
            n = len(r.seeds)
            t.add_row(r.policy, _fmt(r.mean_at(100)), _fmt(r.mean_at(r.top)),
                      f"{sum(r.failed.values()) / n:.0f}", f"{sum(r.seconds.values()) / n:.2f}")
        out.print(t)


def _compact(text: str) -> str:
    """Lists of numbers on one line each (curves stay readable)."""
    number_list = re.compile(r"\[\s+((?:-?[0-9.eE+-]+,\s+)*-?[0-9.eE+-]+)\s+\]")
    return number_list.sub(lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"
