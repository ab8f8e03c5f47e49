"""`magma replay openb` on small files: the JSON contract, the report, and errors naming file, line, column."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from magma.cli.main import app
from magma.cli.replay import parse_seeds

NODES = "sn,cpu_milli,memory_mib,gpu,model\n" + "".join(f"n{i},32000,262144,2,T4\n" for i in range(4))
PODS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n" + "".join(
    f"t{i:02d},{2000 + 1000 * (i % 3)},1024,{1 if i % 4 else 0},{(300, 1000, 500)[i % 3] if i % 4 else 0},\n"
    for i in range(24))


def files(tmp_path: Path) -> tuple[Path, Path]:
    n, p = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    n.write_text(NODES)
    p.write_text(PODS)
    return n, p


def test_parse_seeds():
    assert parse_seeds("42-45") == [42, 43, 44, 45]
    assert parse_seeds("1,3-4, 9") == [1, 3, 4, 9]


def test_json_contract_and_report(tmp_path):
    n, p = files(tmp_path)
    out, html = tmp_path / "r.json", tmp_path / "r.html"
    res = CliRunner().invoke(app, ["replay", "openb", "--nodes", str(n), "--pods", str(p), "--policy", "fgd",
                                   "--seeds", "1-3", "--json", str(out), "--report", str(html), "--jobs", "1"])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["policy"] == "fgd" and doc["seeds"] == [1, 2, 3]
    assert "100" in doc["allocationAt"] and "130" in doc["allocationAt"]
    assert doc["curve"][0][0] == 0 and all(len(pt) == 2 for pt in doc["curve"])
    assert doc["allocationAt"]["100"] == dict(map(tuple, doc["curve"]))[100]
    page = html.read_text()
    assert page.startswith("<!doctype html>") and "Plotly" in page and "Fragmentation over arrived load" in page


def test_several_policies_give_a_list(tmp_path):
    n, p = files(tmp_path)
    res = CliRunner().invoke(app, ["replay", "openb", "--nodes", str(n), "--pods", str(p), "--policy",
                                   "bestfit,magma", "--seeds", "1", "--json", "-", "--jobs", "1"])
    assert res.exit_code == 0, res.output
    docs = json.loads(res.stdout)
    assert [d["policy"] for d in docs] == ["bestfit", "magma"]


def test_bad_row_exits_2_with_file_line_column(tmp_path):
    n, p = files(tmp_path)
    p.write_text(PODS + "bad,12x,1,0,0,\n")
    res = CliRunner().invoke(app, ["replay", "openb", "--nodes", str(n), "--pods", str(p), "--seeds", "1"])
    assert res.exit_code == 2
    assert f"{p}:26: column 'cpu_milli': '12x' is not a number" in res.output


def test_unknown_policy(tmp_path):
    n, p = files(tmp_path)
    res = CliRunner().invoke(app, ["replay", "openb", "--nodes", str(n), "--pods", str(p), "--policy", "tetris"])
    assert res.exit_code == 2
    assert "unknown policy" in res.output
