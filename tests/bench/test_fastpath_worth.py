"""bench/fastpath_worth.py: a tiny real run, and a clear error for a switch that does not exist."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import fastpath_worth  # noqa: E402


def test_each_switch_off_is_measured_against_all_on(capsys):
    assert fastpath_worth.main(["--switches", "job_index", "--rounds", "1", "--jobs", "20", "--days", "0.02"]) == 0
    out = capsys.readouterr().out
    assert "all on:" in out
    line = next(x for x in out.splitlines() if x.startswith("job_index"))
    assert " off: " in line and "%" in line


def test_an_unknown_switch_is_named_with_where_the_switches_are_listed(capsys):
    with pytest.raises(SystemExit) as err:
        fastpath_worth.main(["--group", "job_index,no_such_path"])
    assert err.value.code == 2
    msg = capsys.readouterr().err
    assert "unknown switch(es) no_such_path" in msg and "fastpath.py" in msg
