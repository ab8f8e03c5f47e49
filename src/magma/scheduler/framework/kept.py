"""Memos kept from one session to the next.

`Memo`: answers keyed by everything they read, dropped whole when the memo is full (each is cheap to make again;
the bound keeps a long run's memory flat). `PerConfig`: per scheduler configuration, which fixes the plugins and
their arguments, so what a fast path derives from them and from a key of its own (node scores by node state, say)
stays right for as long as the configuration lives; entries of configurations that are gone are dropped when a
new one first asks.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any, Callable

from . import fastpath


class Memo(dict):
    """A dict of kept answers holding at most `limit` keys: keeping one more when full drops all the others."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def keep(self, key: Any, value: Any) -> Any:
        if len(self) >= self.limit:
            self.clear()
        self[key] = value
        return value


class Tokens:
    """Small ints standing for keys (for memos keyed by them: an int hashes at once, a tuple of vectors again at
    every lookup); equal tokens, equal keys. A token is never given to another key (a counter); a key given a token
    again after the `limit` dropped the kept ones only misses in those memos."""

    def __init__(self, limit: int):
        self._kept = Memo(limit)
        self._next = itertools.count(1)

    def of(self, key: Any) -> int:
        got = self._kept.get(key)
        return got if got is not None else self._kept.keep(key, next(self._next))


def by_arguments(memo: Memo, arguments: dict, read: Callable[[dict], Any]) -> Any:
    """`read(arguments)`, kept in `memo` by the arguments (fastpath.plugin_setup_kept: a plugin is made every session
    with the same ones; every argument is in the key, as the same setting may come under another spelling). Read
    every time when an argument cannot be part of a key."""
    if not fastpath.plugin_setup_kept:
        return read(arguments)
    try:
        key = tuple(sorted(arguments.items()))
        got = memo.get(key)
    except TypeError:  # an unhashable or unsortable argument
        return read(arguments)
    if got is None:
        got = memo.keep(key, read(arguments))
    return got


class PerConfig:
    """Per configuration, a dict of memos (dicts) by key; all of a configuration's memos are dropped at once when
    they hold `max_entries` entries in all, or `max_keys` memos."""

    def __init__(self, max_entries: int, max_keys: int | None = None):
        self.max_entries = max_entries
        self.max_keys = max_keys
        self._by_config: dict[int, tuple[weakref.ref, dict[Any, dict]]] = {}

    def memo(self, config: Any, key: Any) -> dict | None:
        """The memo of `config` under `key` (a new empty one the first time); None for a configuration that cannot
        be weakly referenced, which keeps nothing."""
        entry = self._by_config.get(id(config))
        if entry is None or entry[0]() is not config:
            for k in [k for k, (ref, _) in self._by_config.items() if ref() is None]:
                del self._by_config[k]
            try:
                entry = self._by_config[id(config)] = (weakref.ref(config), {})
            except TypeError:
                return None
        memos = entry[1]
        got = memos.get(key)
        if got is None:
            if (self.max_keys is not None and len(memos) >= self.max_keys) or \
                    sum(len(v) for v in memos.values()) >= self.max_entries:
                memos.clear()
            got = memos[key] = {}
        return got
