"""Resource vectors: cpu, memory, pods and any extended resource, as exact integers.

Each resource is kept in one integer unit: bytes for memory-like resources (memory, ephemeral-storage,
hugepages-*), thousandths for everything else (cpu in millicores, `nvidia.com/gpu` in milli-GPUs), as
Volcano does. Integer arithmetic makes Volcano's 0.1 comparison tolerance (reference §4) exact
equality, so the comparisons here need no epsilon.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Iterable, Iterator, Literal, Mapping

from .quantity import Quantity, format_quantity

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
GPU = "nvidia.com/gpu"

Missing = Literal["zero", "infinity"]


def is_bytes(name: str) -> bool:
    return name in (MEMORY, "ephemeral-storage", "storage") or name.startswith("hugepages-")


def scale(name: str) -> int:
    """How many stored units make one unit of the resource."""
    return 1 if is_bytes(name) else 1000


def to_units(name: str, quantity: Quantity) -> int:
    return quantity.units() if is_bytes(name) else quantity.milli()


class Resources(Mapping[str, int]):
    """An immutable resource vector. Absent names are zero unless a comparison says otherwise."""

    __slots__ = ("_v", "_h")

    def __init__(self, values: Mapping[str, int] | None = None):
        self._v = {k: int(v) for k, v in (values or {}).items() if v}

    @classmethod
    def _of(cls, values: dict[str, int]) -> "Resources":
        """From a dict of non-zero ints that nobody else holds (arithmetic results): no copy, no conversion."""
        r = object.__new__(cls)
        r._v = values
        return r

    @classmethod
    def parse(cls, raw: Mapping[str, object] | None) -> "Resources":
        """From a Kubernetes resource list such as {"cpu": "500m", "memory": "1Gi"}."""
        return cls({name: to_units(name, Quantity.parse(q)) for name, q in (raw or {}).items()})

    @classmethod
    def of(cls, **natural: float | int | str) -> "Resources":
        """Convenience for code and tests: Resources.of(cpu=2, memory="4Gi", gpu=1)."""
        renamed = {(GPU if k == "gpu" else k): v for k, v in natural.items()}
        return cls.parse(renamed)

    # Mapping protocol
    def __getitem__(self, name: str) -> int:
        return self._v.get(name, 0)

    def __iter__(self) -> Iterator[str]:
        return iter(self._v)

    def __len__(self) -> int:
        return len(self._v)

    def __contains__(self, name: object) -> bool:
        return name in self._v

    # The dict's own read-only views (the Mapping mixins would call __getitem__ once per name, in Python).
    def keys(self):  # type: ignore[override]
        return self._v.keys()

    def items(self):  # type: ignore[override]
        return self._v.items()

    def values(self):  # type: ignore[override]
        return self._v.values()

    def get(self, name: str, default=None):  # type: ignore[override]
        return self._v.get(name, 0)  # as Mapping.get over __getitem__ gave it: absent names are 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Resources):
            return self._v == other._v
        return NotImplemented

    def __hash__(self) -> int:
        try:
            return self._h
        except AttributeError:  # computed once: the vector never changes
            self._h = hash(frozenset(self._v.items()))
            return self._h

    @classmethod
    def sum(cls, items: Iterable["Resources"]) -> "Resources":
        """The sum of resource vectors (as adding them one by one gives it, without the intermediate vectors)."""
        acc: dict[str, int] = {}
        get = acc.get
        for r in items:
            for k, v in r._v.items():
                acc[k] = get(k, 0) + v
        return cls._of({k: v for k, v in acc.items() if v})

    def __repr__(self) -> str:
        return f"Resources({self.format()})"

    # Arithmetic
    def __add__(self, other: Mapping[str, int]) -> "Resources":
        if not isinstance(other, Resources):
            out = dict(self._v)
            for k, v in other.items():
                out[k] = out.get(k, 0) + v
            return Resources(out)
        if not other._v:
            return self
        if not self._v:
            return other
        out = dict(self._v)
        for k, v in other._v.items():
            out[k] = out.get(k, 0) + v
        return Resources._of({k: v for k, v in out.items() if v})

    def __sub__(self, other: Mapping[str, int]) -> "Resources":
        if not isinstance(other, Resources):
            out = dict(self._v)
            for k, v in other.items():
                out[k] = out.get(k, 0) - v
            return Resources(out)
        if not other._v:
            return self
        out = dict(self._v)
        for k, v in other._v.items():
            out[k] = out.get(k, 0) - v
        return Resources._of({k: v for k, v in out.items() if v})

    def __mul__(self, factor: int) -> "Resources":
        return Resources({k: v * factor for k, v in self._v.items()})

    __rmul__ = __mul__

    def scaled(self, factor: float | Fraction) -> "Resources":
        """Multiply by a non-integer factor, rounding down (used for overcommit and shares)."""
        f = Fraction(factor)
        return Resources({k: (v * f.numerator) // f.denominator for k, v in self._v.items()})

    def clamp_min_zero(self) -> "Resources":
        return Resources({k: v for k, v in self._v.items() if v > 0})

    def max_with(self, other: Mapping[str, int]) -> "Resources":
        names = set(self._v) | set(other)
        return Resources({k: max(self[k], other.get(k, 0)) for k in names})

    def min_with(self, other: Mapping[str, int], missing: Missing = "zero") -> "Resources":
        """Per-resource minimum; a name absent from `other` counts as `missing` (zero or unlimited)."""
        out = {}
        for k, v in self._v.items():
            if k in other:
                out[k] = min(v, other[k])
            elif missing == "infinity":
                out[k] = v
        for k, v in other.items():
            if k not in self._v:
                out[k] = min(0, v)
        return Resources(out)

    def without(self, name: str) -> "Resources":
        """This vector less one resource: the vector itself when it has none of it (vectors never change)."""
        if name not in self._v:
            return self
        return Resources._of({k: v for k, v in self._v.items() if k != name})

    def only(self, names: Iterable[str]) -> "Resources":
        keep = set(names)
        return Resources({k: v for k, v in self._v.items() if k in keep})

    # Comparisons (Volcano's LessEqual family)
    def less_equal(self, other: Mapping[str, int], missing: Missing = "zero") -> bool:
        """Every resource of self fits in other; names absent from other count as `missing`."""
        if isinstance(other, Resources):
            other = other._v  # same answers, without the Mapping protocol's Python-level calls
        for k, v in self._v.items():
            if k in other:
                if v > other[k]:
                    return False
            elif missing == "zero" and v > 0:
                return False
        return True

    def is_empty(self) -> bool:
        for v in self._v.values():
            if v > 0:
                return False
        return True

    def any_negative(self) -> bool:
        return any(v < 0 for v in self._v.values())

    def exceeding(self, other: Mapping[str, int], missing: Missing = "zero") -> list[str]:
        """Names of resources where self is above other."""
        out = []
        for k, v in self._v.items():
            if k in other:
                if v > other[k]:
                    out.append(k)
            elif missing == "zero" and v > 0:
                out.append(k)
        return sorted(out)

    # Presentation
    def natural(self, name: str) -> float | int:
        """The value in its own unit: cores, bytes, GPUs."""
        v = self[name]
        s = scale(name)
        return v // s if v % s == 0 else v / s

    def to_json(self) -> dict[str, float | int]:
        """Numbers as DESIGN.md's result contract wants them: cpu in cores, memory in bytes, the rest in own units."""
        out: dict[str, float | int] = {}
        for k in sorted(self._v):
            n = self.natural(k)
            out[k] = float(n) if k == CPU else n
        return out

    def quantity_text(self, name: str) -> str:
        return _quantity_text(name, self[name])

    def format(self) -> str:
        return ", ".join(f"{k}: {self.quantity_text(k)}" for k in sorted(self._v)) or "none"

    def to_quantities(self) -> dict[str, str]:
        return {k: self.quantity_text(k) for k in sorted(self._v)}


@functools.lru_cache(maxsize=4096)
def _quantity_text(name: str, v: int) -> str:
    """An amount as quantity text (a pure function of name and value, asked again and again for the same ones)."""
    if is_bytes(name):
        return format_quantity(v, binary=True)
    return format_quantity(Fraction(v, 1000))


EMPTY = Resources()
