"""Close's queue status: allocations rolled up to the parents, kept by their inputs (fastpath.queue_status_memo)."""

from __future__ import annotations

import types

from magma.api.resources import Resources
from magma.scheduler.framework import fastpath
from magma.scheduler.scheduler import queue_status


def _session(allocated: dict[str, dict], tree: dict | None = None) -> types.SimpleNamespace:
    tree = tree or {"root": ["org"], "org": ["a", "b"], "a": [], "b": []}
    queues = {n: types.SimpleNamespace(children=list(kids)) for n, kids in tree.items()}
    alloc = {n: Resources(allocated.get(n, {})) for n in tree}
    return types.SimpleNamespace(job_index=None, queues=queues, queue_allocations=lambda: dict(alloc))


def test_rolls_up_and_follows_changed_allocations():
    first = queue_status(_session({"a": {"cpu": 2000}, "b": {"cpu": 1000}}))
    assert first["root"] == {"allocated": {"cpu": "3"}} and first["a"] == {"allocated": {"cpu": "2"}}
    second = queue_status(_session({"a": {"cpu": 2000}, "b": {"cpu": 5000}}))
    assert second["org"] == {"allocated": {"cpu": "7"}}
    with fastpath.disabled("queue_status_memo"):
        assert queue_status(_session({"a": {"cpu": 2000}, "b": {"cpu": 5000}})) == second


def test_each_session_gets_its_own_dicts():
    ssn = _session({"a": {"cpu": 2000}})
    first = queue_status(ssn)
    first["a"]["allocated"]["cpu"] = "99"  # as a cluster that keeps and later changes the dict it was given
    again = queue_status(ssn)
    assert again["a"] == {"allocated": {"cpu": "2"}}
    assert again["a"]["allocated"] is not first["a"]["allocated"]


def test_another_tree_rolls_up_along_its_own_branches():
    """The queues below each queue are kept by the tree's names and children: another shape has its own."""
    alloc = {"a": {"cpu": 2000}, "b": {"cpu": 1000}}
    assert queue_status(_session(alloc))["org"] == {"allocated": {"cpu": "3"}}
    moved = queue_status(_session(alloc, {"root": ["org", "b"], "org": ["a"], "a": [], "b": []}))
    assert moved["org"] == {"allocated": {"cpu": "2"}} and moved["root"] == {"allocated": {"cpu": "3"}}
