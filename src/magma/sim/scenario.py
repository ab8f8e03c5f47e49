"""A scenario: manifests turned into an initial cluster, timed arrivals and deletions, and a scheduler config.

Reading a scenario never half-applies: everything is loaded and checked first (the same admission rules as
`magma validate`), and any error stops the run before a single session.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from magma.api import admission
from magma.api.config import SchedulerConfig, config_from_configmap, default_config, parse_config
from magma.api.defaults import builtin_priority_classes, builtin_queues, default_job, default_queue
from magma.api.duration import parse_duration
from magma.api.load import LoadResult, load_paths
from magma.api.objects import (
    SIM_DELETE_AT,
    SIM_DURATION,
    SIM_SUBMIT_AT,
    ConfigMap,
    Job,
    Node,
    NodePool,
    Object,
    Pod,
    PodGroup,
    Queue,
)
from magma.api.problems import Problem

CONFIGMAP_NAME = "volcano-scheduler-configmap"


class ScenarioError(Exception):
    """Bad input: the message lists every problem, one per line, naming file, line, object and field."""

    def __init__(self, lines: list[str]):
        super().__init__("\n".join(lines))
        self.lines = lines


@dataclass
class Timed:
    time: float
    obj: Object


@dataclass
class Scenario:
    initial: list[Object] = field(default_factory=list)
    arrivals: list[Timed] = field(default_factory=list)  # created at a virtual time > 0
    deletions: list[tuple[float, str, str]] = field(default_factory=list)  # (time, kind, key)
    durations: dict[tuple[str, str], float] = field(default_factory=dict)  # (kind, key) -> seconds of work
    config: SchedulerConfig = field(default_factory=default_config)
    config_source: str = "magma's default config (Volcano's default plus the reservation plugin)"
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _annotation_time(obj: Object, key: str, problems: list[Problem]) -> float | None:
    raw = obj.annotations.get(key)
    if raw is None:
        return None
    try:
        return parse_duration(raw)
    except ValueError as e:
        problems.append(Problem(obj.source.file, obj.source.line_of(("metadata", "annotations", key)), obj.KIND,
                                obj.key, f"metadata.annotations.{key}", str(e)))
        return None


def load_scenario(paths: Iterable[str | Path], config_path: str | Path | None = None) -> Scenario:
    """Load and check a scenario; raise ScenarioError listing every problem (nothing is run then)."""
    loaded: LoadResult = load_paths(paths)
    lines = list(loaded.unreadable)
    problems = [p for p in loaded.problems]
    world = admission.World.from_objects(loaded.objects)
    problems += admission.admit(world)
    scenario = Scenario(skipped=[s.format() for s in loaded.skipped])

    # Scheduler config: --config wins over a ConfigMap in the manifests; otherwise magma's default (Volcano's default
    # plus the reservation plugin).
    if config_path is not None:
        try:
            text = Path(config_path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ScenarioError([f"{config_path}: cannot read: {e}"]) from None
        res = parse_config(text, source=str(config_path))
        for p in res.errors:
            lines.append(f"{config_path}:{p.line or 1}: config: {p.field}: {p.message}")
        for p in res.warnings:
            scenario.warnings.append(f"{config_path}:{p.line or 1}: config: {p.field}: warning: {p.message}")
        if res.config is not None:
            scenario.config, scenario.config_source = res.config, str(config_path)
    else:
        cms = [c for c in loaded.of_kind(ConfigMap) if c.name == CONFIGMAP_NAME]
        if cms:
            cm = cms[-1]
            res = config_from_configmap(cm.data, source=cm.source.file)
            base = cm.source.line_of(("data",))
            for p in res.errors:
                lines.append(f"{cm.source.file}:{base + (p.line or 0)}: ConfigMap {cm.key}: {p.field}: {p.message}")
            for p in res.warnings:
                scenario.warnings.append(
                    f"{cm.source.file}:{base + (p.line or 0)}: ConfigMap {cm.key}: {p.field}: warning: {p.message}")
            if res.config is not None:
                scenario.config, scenario.config_source = res.config, f"{cm.source.file} (ConfigMap {cm.key})"

    objects: list[Object] = []
    for o in loaded.objects:
        if isinstance(o, NodePool):
            objects += o.nodes()
        elif isinstance(o, ConfigMap):
            continue
        else:
            objects.append(o)
    names = {(o.KIND, o.key) for o in objects}
    for q in builtin_queues():
        if ("Queue", q.name) not in names:
            objects.append(q)
    for pc in builtin_priority_classes():
        if ("PriorityClass", pc.name) not in names:
            objects.append(pc)

    uid = 0
    for o in objects:
        submit = _annotation_time(o, SIM_SUBMIT_AT, problems) or 0.0
        delete = _annotation_time(o, SIM_DELETE_AT, problems)
        duration = _annotation_time(o, SIM_DURATION, problems)
        if isinstance(o, Job):
            o = default_job(o)
        elif isinstance(o, Queue):
            o = default_queue(o)
        if not o.metadata.uid:
            uid += 1
            o.metadata.uid = f"uid-{uid:06d}"
        if o.metadata.creation_timestamp is None:
            o.metadata.creation_timestamp = submit
        if duration is not None and isinstance(o, (Job, PodGroup, Pod)):
            scenario.durations[(o.KIND, o.key)] = duration
        if delete is not None:
            scenario.deletions.append((delete, o.KIND, o.key))
        if submit > 0:
            scenario.arrivals.append(Timed(submit, o))
        else:
            scenario.initial.append(o)
    scenario.arrivals.sort(key=lambda t: t.time)
    scenario.deletions.sort(key=lambda d: d[0])

    errors = [p for p in problems if p.severity == "error"]
    scenario.warnings += [p.format() for p in problems if p.severity == "warning"]
    lines += [p.format() for p in errors]
    if not any(isinstance(o, Node) for o in objects):
        lines.append("scenario: no nodes: add v1 Node objects or a sim.magma.io/v1alpha1 NodePool")
    if lines:
        raise ScenarioError(lines)
    return scenario
