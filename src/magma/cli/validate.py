"""`magma validate`: Volcano's admission rules (and magma's pitfall checks) on manifests, offline.

Exit 0 when every object is accepted (warnings allowed), 1 when any is rejected, 2 when input cannot be read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from magma.api import admission
from magma.api.config import parse_config
from magma.api.load import load_paths
from magma.api.objects import ConfigMap
from magma.api.problems import Problem

CONFIGMAP_NAME = "volcano-scheduler-configmap"
CONFIG_KEY = "volcano-scheduler.conf"


def config_problems(cm: ConfigMap) -> list[Problem]:
    """Problems of a scheduler ConfigMap, with lines counted in the manifest file."""
    text = cm.data.get(CONFIG_KEY)
    field = f"data[{CONFIG_KEY}]"
    if text is None:
        return [Problem(cm.source.file, cm.source.line, "ConfigMap", cm.key, field,
                        f"missing: the scheduler reads its config from key {CONFIG_KEY}")]
    result = parse_config(text, source=cm.source.file)
    # The block scalar starts on the line after its key.
    base = cm.source.line_of(("data", CONFIG_KEY))
    out = []
    for severity, items in (("error", result.errors), ("warning", result.warnings)):
        for p in items:
            line = base + p.line if p.line else base
            out.append(Problem(cm.source.file, line, "ConfigMap", cm.key, f"{field}.{p.field}" if p.field else field,
                               p.message, severity))
    return out


def validate(
    paths: Annotated[list[Path], typer.Argument(help="Manifest files or folders (YAML, multi-document).")],
    output: Annotated[str, typer.Option("--output", "-o", help="text or json")] = "text",
) -> None:
    """Check manifests against Volcano's admission rules and magma's pitfall checks."""
    if output not in ("text", "json"):
        typer.echo(f"--output: expected text or json, got {output!r}", err=True)
        raise typer.Exit(2)
    loaded = load_paths(paths)
    problems = list(loaded.problems)
    world = admission.World.from_objects(loaded.objects)
    problems += admission.admit(world)
    for cm in loaded.of_kind(ConfigMap):
        if cm.name == CONFIGMAP_NAME:
            problems += config_problems(cm)
    problems.sort(key=lambda p: (p.file, p.line))
    errors = [p for p in problems if p.severity == "error"]
    code = 2 if loaded.unreadable else (1 if errors else 0)
    if output == "json":
        typer.echo(json.dumps({
            "objects": len(loaded.objects),
            "skipped": [s.format() for s in loaded.skipped],
            "unreadable": loaded.unreadable,
            "problems": [p.to_json() for p in problems],
            "exitCode": code,
        }, indent=2))
    else:
        for msg in loaded.unreadable:
            typer.echo(msg, err=True)
        for p in problems:
            typer.echo(p.format())
        for s in loaded.skipped:
            typer.echo(s.format())
        n_warn = len(problems) - len(errors)
        summary = (f"{len(loaded.objects)} objects: {len(errors)} error(s), {n_warn} warning(s), "
                   f"{len(loaded.skipped)} skipped")
        if loaded.unreadable:
            summary += f", {len(loaded.unreadable)} path(s) unreadable"
        typer.echo(summary, err=True)
    raise typer.Exit(code)
