"""Placement policies for the replay, one module each, by name."""

from __future__ import annotations

from importlib import import_module

from .base import Policy

# name -> module (under this package) defining `POLICY`
NAMES = {
    "random": "random",
    "dotprod": "dotprod",
    "gpu-clustering": "gpu_clustering",
    "gpu-packing": "gpu_packing",
    "bestfit": "bestfit",
    "fgd": "fgd",
    "binpack": "binpack",
    "magma": "magma",
}
BASELINES = ("random", "dotprod", "gpu-clustering", "gpu-packing", "bestfit", "fgd")
ALIASES = {"gpu_clustering": "gpu-clustering", "gpuclustering": "gpu-clustering", "gpu_packing": "gpu-packing",
           "gpupacking": "gpu-packing", "best-fit": "bestfit", "dot-product": "dotprod", "dotproduct": "dotprod"}


def canonical(name: str) -> str:
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in NAMES:
        raise KeyError(f"unknown policy {name!r} (known: {', '.join(NAMES)})")
    return key


def make_policy(name: str, **options) -> Policy:
    module = import_module(f"{__name__}.{NAMES[canonical(name)]}")
    return module.POLICY(**options)


__all__ = ["BASELINES", "NAMES", "Policy", "canonical", "make_policy"]
