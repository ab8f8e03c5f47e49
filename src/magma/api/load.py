"""Loading manifests: multi-document YAML files and folders into typed objects that remember file and line.

Nothing here raises on bad input. A document that does not parse or validate becomes a Problem that names
its file, line, object and field; a kind magma does not handle is listed as skipped. Only a path that cannot
be read at all (missing, unreadable, not UTF-8, not YAML) is `unreadable`, which the CLI turns into exit 2.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml
from pydantic import BaseModel, ValidationError

from .objects import KINDS, Object, Source, kind_for
from .problems import Problem

YAML_SUFFIXES = (".yaml", ".yml")


@dataclass
class Skipped:
    file: str
    line: int
    api_version: str
    kind: str
    name: str

    def format(self) -> str:
        return f"{self.file}:{self.line}: {self.kind} {self.name}: skipped: magma does not handle {self.api_version} {self.kind}"


@dataclass
class LoadResult:
    objects: list[Object] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # messages for paths that could not be read

    def of_kind(self, cls: type[Object]) -> list:
        return [o for o in self.objects if isinstance(o, cls)]

    def merge(self, other: "LoadResult") -> None:
        self.objects += other.objects
        self.skipped += other.skipped
        self.problems += other.problems
        self.unreadable += other.unreadable


def expand_paths(paths: Iterable[str | Path]) -> tuple[list[Path], list[str]]:
    """Files to read (folders walked recursively for *.yaml / *.yml, in sorted order) and messages for bad paths."""
    files: list[Path] = []
    bad: list[str] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.rglob("*") if f.suffix in YAML_SUFFIXES and f.is_file())
            if not found:
                bad.append(f"{p}: folder holds no .yaml or .yml files")
            files += found
        elif p.is_file():
            files.append(p)
        else:
            bad.append(f"{p}: no such file or folder")
    return files, bad


def load_paths(paths: Iterable[str | Path]) -> LoadResult:
    files, bad = expand_paths(paths)
    result = LoadResult(unreadable=bad)
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            result.unreadable.append(f"{f}: cannot read: {e}")
            continue
        result.merge(load_text(text, str(f)))
    return result


#: Parse with libyaml (PyYAML's C parser, `yaml.CSafeLoader`) when PyYAML was built with it: the same events,
#: nodes and line marks as the pure-Python parser, several times faster, and the values are built by the same
#: Python constructor and resolver. Text that libyaml refuses, or that holds characters the pure-Python reader
#: refuses, is read by the pure-Python parser from the start, so that bad YAML is reported as before.
#: tests/unit/test_load.py compares the two on every manifest of the repository and on random text.
use_libyaml = bool(getattr(yaml, "__with_libyaml__", False))
#: Where libyaml reads text otherwise than the pure-Python parser (found by comparing them on damaged manifests):
#: tabs (before a token), `?` (a complex key in a flow mapping), a byte order mark after the start and a comment
#: right after a block scalar's `|` or `>` are refused by the pure-Python parser only; an empty value tagged `!`
#: is null there, "" in libyaml. Texts holding any of these characters are read by the pure-Python parser.
_LIBYAML_DIFFERS = re.compile(r"[\t?!\ufeff]|[|>][-+0-9]*#")


def load_text(text: str, file: str = "<text>") -> LoadResult:
    """Load every document of one YAML text."""
    if use_libyaml and not _LIBYAML_DIFFERS.search(text) and not yaml.reader.Reader.NON_PRINTABLE.search(text):
        try:
            return _load_text(text, file, yaml.CSafeLoader, strict=True)
        except yaml.YAMLError:
            pass  # reported by the pure-Python parser, as always
    return _load_text(text, file, yaml.SafeLoader, strict=False)


def _load_text(text: str, file: str, loader_class: type, strict: bool) -> LoadResult:
    """Load with this loader; `strict`: let a YAML error out instead of reporting it."""
    result = LoadResult()
    index = 0
    loader = None
    try:
        loader = loader_class(text)
        while loader.check_node():
            node = loader.get_node()
            index += 1
            if node is None:
                continue
            data = loader.construct_document(node)
            if data is None:
                continue
            lines: dict[tuple, int] = {}
            _record_lines(node, (), lines)
            line = node.start_mark.line + 1
            _load_document(data, Source(file=file, line=line, document=index, lines=lines), result)
    except yaml.YAMLError as e:
        if strict:
            raise
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        where = f"{file}:{mark.line + 1}" if mark else file
        problem = getattr(e, "problem", None) or str(e)
        result.unreadable.append(f"{where}: not valid YAML (document {index or 1}): {problem}")
    finally:
        if loader is not None:
            loader.dispose()
    return result


def _record_lines(node: yaml.Node, path: tuple, lines: dict[tuple, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = k.value if isinstance(k, yaml.ScalarNode) else str(k.start_mark.line)
            lines[path + (key,)] = k.start_mark.line + 1
            _record_lines(v, path + (key,), lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            lines[path + (i,)] = v.start_mark.line + 1
            _record_lines(v, path + (i,), lines)


def _load_document(data: Any, source: Source, result: LoadResult) -> None:
    def problem(field_: str, message: str, kind: str = "", key: str = "", line: int | None = None) -> None:
        result.problems.append(Problem(source.file, line or source.line, kind, key, field_, message))

    if not isinstance(data, dict):
        problem("", f"document {source.document} is a {type(data).__name__}, expected a mapping with apiVersion and kind")
        return
    if data.get("kind") == "List" and isinstance(data.get("items"), list):
        # `kubectl get -o yaml` output: a List of objects.
        for i, item in enumerate(data["items"]):
            sub = {p[2:]: ln for p, ln in source.lines.items() if p[:2] == ("items", i)}
            _load_document(item, Source(file=source.file, line=source.lines.get(("items", i), source.line),
                                        document=source.document, lines=sub), result)
        return
    api_version, kind = data.get("apiVersion"), data.get("kind")
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else ""
    namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else None
    if not isinstance(api_version, str) or not api_version:
        problem("apiVersion", "missing: every object needs apiVersion (e.g. scheduling.volcano.sh/v1beta1)",
                str(kind or ""), name)
        return
    if not isinstance(kind, str) or not kind:
        problem("kind", "missing: every object needs kind (e.g. Queue, Job, Pod)", "", name)
        return
    cls = kind_for(api_version, kind)
    if cls is None:
        if any(k == kind for (_, k) in KINDS):
            expected = next(c.API_VERSION for (g, k), c in KINDS.items() if k == kind)
            problem("apiVersion", f"{api_version!r} is not an API version of {kind}; use {expected}", kind, name,
                    source.line_of(("apiVersion",)))
            return
        result.skipped.append(Skipped(source.file, source.line, api_version, kind, name))
        return
    key = f"{namespace or 'default'}/{name}" if cls.NAMESPACED else name
    if not name:
        problem("metadata.name", "missing: give the object a name", kind, key, source.line_of(("metadata",)))
        return
    try:
        obj = cls.model_validate(data)
    except ValidationError as e:
        for err in e.errors():
            loc = tuple(err["loc"])
            problem(_dotted(loc), _message(err), kind, key, source.line_of(loc))
        return
    obj.with_source(source)
    result.objects.append(obj)
    for path, unknown, hint in unknown_fields(obj):
        result.problems.append(
            Problem(source.file, source.line_of(path + (unknown,)), kind, key, _dotted(path + (unknown,)),
                    f"unknown field, ignored by magma (kept as written){hint}", "warning")
        )


def _dotted(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _message(err: dict) -> str:
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    if err["type"] == "missing":
        return "missing: this field is required"
    if err["type"] in ("literal_error", "enum"):
        return f"{msg}, got {err.get('input')!r}"
    if "input" in err and err["type"].endswith(("_type", "_parsing")):
        return f"{msg}, got {err['input']!r}"
    return msg


# Parts of Volcano's own kinds in which an unknown field is most likely a typo (e.g. `minMemeber`).
_CHECKED_SPECS = ("QueueSpec", "Guarantee", "PodGroupSpec", "JobSpec", "TaskSpec", "LifecyclePolicy", "NetworkTopology")


def unknown_fields(obj: BaseModel, path: tuple = ()) -> Iterable[tuple[tuple, str, str]]:
    """(path, field, did-you-mean hint) for unknown fields inside Volcano specs."""
    if type(obj).__name__ in _CHECKED_SPECS and obj.model_extra:
        known = [f.alias or n for n, f in type(obj).model_fields.items()]
        for extra in obj.model_extra:
            close = difflib.get_close_matches(extra, known, n=1)
            yield path, extra, (f"; did you mean {close[0]!r}?" if close else "")
    for name, f in type(obj).model_fields.items():
        value = getattr(obj, name, None)
        alias = f.alias or name
        if isinstance(value, BaseModel):
            yield from unknown_fields(value, path + (alias,))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from unknown_fields(item, path + (alias, i))


def dump_yaml(objects: Iterable[Object]) -> str:
    """Objects back to multi-document YAML, unknown fields included."""
    return yaml.safe_dump_all([o.dump() for o in objects], sort_keys=False)
