"""Durations as magma accepts them everywhere: `90s`, `15m`, `1h30m`, `2d`, `250ms` or a plain number of seconds.

The unit grammar is Go's `time.ParseDuration` (what Volcano uses, e.g. for `sla-waiting-time`): one or more
`<number><unit>` pairs with units ns, us (or µs), ms, s, m, h. magma adds two conveniences Go lacks: the unit `d`
(24 h) and a bare number meaning seconds. Negative durations are refused: no magma setting means "before now".
"""

from __future__ import annotations

import math
import re

__all__ = ["parse_duration", "format_duration", "UNITS"]

# Seconds per unit. Both spellings of the micro sign are Go's too (U+00B5 and U+03BC).
UNITS: dict[str, float] = {
    "ns": 1e-9,
    "us": 1e-6,
    "\u00b5s": 1e-6,
    "\u03bcs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}

_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
# Longest units first so that "ms" is not read as "m" followed by garbage.
_UNIT = "|".join(sorted(map(re.escape, UNITS), key=len, reverse=True))
_PLAIN = re.compile(rf"{_NUMBER}")
_PART = re.compile(rf"({_NUMBER})({_UNIT})")
_UNIT_TEXT = re.compile(rf"{_NUMBER}([^\d.]*)")
_HINT = "write e.g. '90s', '15m', '1h30m', '2d' or a number of seconds"


def parse_duration(text: str | int | float) -> float:
    """Seconds in `text`. Raises ValueError naming the problem and the accepted forms."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ValueError(f"expected a duration, got {type(text).__name__} {text!r}; {_HINT}")
    if not isinstance(text, str):
        try:
            seconds = float(text)
        except OverflowError:
            seconds = math.inf
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"invalid duration {text!r}: must be a finite number of seconds >= 0")
        return seconds

    s = text.strip()
    sign = ""
    if s[:1] in ("+", "-"):
        sign, s = s[0], s[1:]
    if not s:
        raise ValueError(f"empty duration {text!r}; {_HINT}")
    if _PLAIN.fullmatch(s):
        total = float(s)
    else:
        pos, total = 0, 0.0
        while pos < len(s):
            m = _PART.match(s, pos)
            if m is None:
                raise ValueError(f"invalid duration {text!r}: {_explain(s[pos:])}; {_HINT}")
            total += float(m.group(1)) * UNITS[m.group(2)]
            pos = m.end()
    if not math.isfinite(total):
        raise ValueError(f"invalid duration {text!r}: too large")
    if sign == "-" and total != 0:
        raise ValueError(f"invalid duration {text!r}: durations cannot be negative")
    return total


def _explain(rest: str) -> str:
    """Why the text from `rest` on is not a `<number><unit>` pair."""
    m = _UNIT_TEXT.match(rest)
    if m is None:
        return f"expected a number at {rest!r}"
    unit = m.group(1)
    if not unit:
        return f"missing unit after {rest!r} (units: ns, us, ms, s, m, h, d)"
    return f"unknown unit {unit!r} (units: ns, us, ms, s, m, h, d)"


def format_duration(seconds: float) -> str:
    """A duration as people write it: `9m40s`, `1h5m`, `2d3h`, `45s` (at most two units, rounded down to seconds)."""
    if not math.isfinite(seconds):
        return "unknown"
    total = max(int(seconds), 0)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if total >= size or (unit == "s" and not parts):
            parts.append(f"{total // size}{unit}")
            total %= size
        elif parts:
            parts.append("")  # a skipped unit still counts towards the two shown
        if len([p for p in parts if p]) == 2 or len(parts) == 2:
            break
    return "".join(parts)
