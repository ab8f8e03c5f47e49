"""Problems found in manifests: one line each, naming file, line, object and field."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    kind: str
    key: str  # "namespace/name" for namespaced objects, "name" for cluster-scoped ones
    field: str
    message: str
    severity: Severity = "error"

    def format(self) -> str:
        """`FILE:LINE: KIND NAMESPACE/NAME: FIELD: REASON`, with `warning:` before the reason of a warning."""
        what = f"{self.kind} {self.key}".strip() or "document"
        reason = f"warning: {self.message}" if self.severity == "warning" else self.message
        return f"{self.file}:{self.line}: {what}: {self.field or '-'}: {reason}"

    def to_json(self) -> dict:
        return {
            "file": self.file,
            "line": self.line,
            "kind": self.kind,
            "object": self.key,
            "field": self.field,
            "severity": self.severity,
            "message": self.message,
        }


@dataclass
class Problems:
    """An ordered collection with helpers for the error/warning split."""

    items: list[Problem] = field(default_factory=list)

    def add(self, p: Problem) -> None:
        self.items.append(p)

    def extend(self, ps) -> None:
        self.items.extend(ps)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.items if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.items if p.severity == "warning"]

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)
