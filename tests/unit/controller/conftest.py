"""Fixtures for the controller tests (the harness itself is in controller_harness.py)."""

from __future__ import annotations

import pytest

from magma.controller.jobplugins.ssh import SshPlugin


@pytest.fixture(autouse=True)
def _fast_ssh_keys(monkeypatch):
    """Smaller RSA keys keep the tests quick; the ssh test that checks the real size sets it back."""
    monkeypatch.setattr(SshPlugin, "key_bits", 1024)
