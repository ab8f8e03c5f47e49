"""Kubernetes resource quantities with exact arithmetic.

A quantity is held as a `Fraction`, so `1.5Ti`, `500m` and `1e3` are exact and sums never drift.
Parsing follows apimachinery's grammar: a signed decimal number, then an optional binary suffix
(Ki Mi Gi Ti Pi Ei), decimal SI suffix (n u m k M G T P E) or decimal exponent (e3, E-2).
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import total_ordering

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_GRAMMAR = re.compile(
    r"^(?P<sign>[+-]?)(?P<num>\d+(?:\.\d*)?|\.\d+)"
    r"(?:(?P<bin>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?\d+)|(?P<dec>[numkMGTPE]?))$"
)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


@total_ordering
class Quantity:
    """An exact quantity that remembers the text it was written as (for lossless round trips)."""

    __slots__ = ("value", "text", "raw", "_milli", "_units")

    def __init__(self, value: Fraction | int, text: str | None = None, raw: object = None):
        self.value = Fraction(value)
        self.text = text if text is not None else format_quantity(self.value)
        # What the manifest held (a YAML int stays an int when dumped again).
        self.raw = raw if raw is not None else self.text
        self._milli: int | None = None  # MilliValue and Value, computed once (a quantity is never changed)
        self._units: int | None = None

    @classmethod
    def parse(cls, raw: object) -> "Quantity":
        if isinstance(raw, Quantity):
            return raw
        if isinstance(raw, bool) or raw is None:
            raise QuantityError(f"expected a quantity such as 500m, 8 or 128Gi, got {raw!r}")
        if isinstance(raw, int):
            return cls(raw, str(raw), raw)
        if isinstance(raw, float):
            # YAML turns `1.5` into a float; its shortest repr is what the user wrote.
            return cls(parse_quantity(repr(raw)), repr(raw), raw)
        if isinstance(raw, str):
            return cls(parse_quantity(raw), raw, raw)
        raise QuantityError(f"expected a quantity such as 500m, 8 or 128Gi, got {type(raw).__name__}")

    def milli(self) -> int:
        """Value in thousandths, rounded up as apimachinery's MilliValue does."""
        m = self._milli
        if m is None:
            # Equal texts are equal values: many pods written from one template share the arithmetic.
            m = _MILLI.get(self.text)
            if m is None:
                m = _ceil(self.value * 1000)
                if len(_MILLI) < 65536:
                    _MILLI[self.text] = m
            self._milli = m
        return m

    def units(self) -> int:
        """Value in whole units, rounded up as apimachinery's Value does."""
        u = self._units
        if u is None:
            u = self._units = _ceil(self.value)
        return u

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.value == other.value
        if isinstance(other, (int, Fraction)):
            return self.value == other
        return NotImplemented

    def __lt__(self, other: "Quantity") -> bool:
        return self.value < Quantity.parse(other).value

    def __hash__(self) -> int:
        return hash(self.value)

    def __add__(self, other: "Quantity") -> "Quantity":
        return Quantity(self.value + Quantity.parse(other).value)

    def __sub__(self, other: "Quantity") -> "Quantity":
        return Quantity(self.value - Quantity.parse(other).value)

    def __repr__(self) -> str:
        return f"Quantity({self.text!r})"

    def __str__(self) -> str:
        return self.text


_MILLI: dict[str, int] = {}  # quantity text -> MilliValue


def _ceil(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


def parse_quantity(text: str) -> Fraction:
    """Parse Kubernetes quantity text into an exact Fraction; raise QuantityError with a hint."""
    s = text.strip()
    m = _GRAMMAR.match(s)
    if not m:
        raise QuantityError(
            f"{text!r} is not a quantity: write a number with an optional suffix, e.g. 500m, 8, 128Gi, 1e3"
        )
    number = Fraction(m["num"])
    if m["bin"]:
        number *= _BINARY[m["bin"]]
    elif m["exp"]:
        exponent = int(m["exp"][1:])
        if abs(exponent) > 30:
            raise QuantityError(f"{text!r}: exponent {exponent} is out of range")
        number *= Fraction(10) ** exponent
    else:
        number *= _DECIMAL[m["dec"] or ""]
    return -number if m["sign"] == "-" else number


def format_quantity(value: Fraction | int, binary: bool = False) -> str:
    """Canonical text: the largest suffix that keeps the value an integer (binary suffixes on request)."""
    value = Fraction(value)
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    value = abs(value)
    if binary and value.denominator == 1:
        for suffix, factor in reversed(list(_BINARY.items())):
            if value.numerator % factor == 0:
                return f"{sign}{value.numerator // factor}{suffix}"
        return f"{sign}{value.numerator}"
    for suffix, factor in sorted(_DECIMAL.items(), key=lambda kv: kv[1], reverse=True):
        scaled = value / factor
        if scaled.denominator == 1:
            return f"{sign}{scaled.numerator}{suffix}"
    # Below a nano: apimachinery rounds up to the nearest nano.
    return f"{sign}{_ceil(value / _DECIMAL['n'])}n"
