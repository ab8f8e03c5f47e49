"""The virtual clock: seconds since the scenario's start. Everything time-based reads it, nothing sleeps."""

from __future__ import annotations


class VirtualClock:
    def __init__(self, start: float = 0.0):
        self._now = start

    def now(self) -> float:
        return self._now

    def set(self, t: float) -> None:
        if t < self._now:
            raise ValueError(f"virtual time cannot go back: {t} < {self._now}")
        self._now = t
