"""Plugin and action registries: a plugin or action module registers itself under Volcano's name."""

from __future__ import annotations

from typing import Callable

PLUGINS: dict[str, Callable] = {}
ACTIONS: dict[str, Callable] = {}


def plugin(name: str):
    """Class decorator: `@plugin("gang")`. The class takes (arguments: dict) and has on_session_open(ssn)."""

    def register(cls):
        cls.NAME = name
        PLUGINS[name] = cls
        return cls

    return register


def action(name: str):
    """Function decorator: `@action("allocate")`. The function takes (session, arguments: dict)."""

    def register(fn):
        ACTIONS[name] = fn
        return fn

    return register
