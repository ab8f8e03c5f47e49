import json
from pathlib import Path

from typer.testing import CliRunner

from magma.cli.main import app

SEED = Path(__file__).parent.parent / "data" / "seed"
runner = CliRunner()


def run(*args):
    return runner.invoke(app, ["validate", *map(str, args)])


def test_seed_worlds_validate_clean():
    for world in ("s04-06", "s06-2", "s11-12"):
        r = run(SEED / world)
        assert r.exit_code == 0, r.output
        assert " error" not in "".join(l for l in r.output.splitlines() if "warning:" not in l and "skipped" not in l
                                        and "objects:" not in l)


def test_rejected_object_exits_1_with_file_line_kind_field(tmp_path):
    bad = tmp_path / "job.yaml"
    text = (SEED / "s11-12" / "12-emergency-job.yaml").read_text().replace("minAvailable: 2", "minAvailable: 3")
    bad.write_text(text)
    (tmp_path / "queues.yaml").write_text((SEED / "s11-12" / "12-queues.yaml").read_text())
    r = run(tmp_path)
    assert r.exit_code == 1
    line_no = next(i for i, l in enumerate(text.splitlines(), 1) if "minAvailable: 3" in l)
    expected = f"{bad}:{line_no}: Job default/emergency-hotfix-training: spec.minAvailable: "
    assert any(l.startswith(expected) for l in r.output.splitlines()), r.output


def test_missing_priority_class_is_rejected(tmp_path):
    (tmp_path / "job.yaml").write_text((SEED / "s11-12" / "12-emergency-job.yaml").read_text())
    r = run(tmp_path)  # queue `emergency` and PriorityClass `emergency` are not in this world
    assert r.exit_code == 1
    assert "spec.priorityClassName" in r.output and "spec.queue" in r.output


def test_unreadable_input_exits_2(tmp_path):
    r = run(tmp_path / "missing.yaml")
    assert r.exit_code == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Queue\nmetadata: {name: [\n")
    r = run(bad)
    assert r.exit_code == 2 and "not valid YAML" in r.output


def test_json_output(tmp_path):
    r = runner.invoke(app, ["validate", str(SEED / "s11-12"), "--output", "json"])
    assert r.exit_code == 0
    data = json.loads(r.stdout)
    assert data["exitCode"] == 0 and data["objects"] == 9
    cfg = [p for p in data["problems"] if p["kind"] == "ConfigMap"]
    assert len(cfg) == 1 and cfg[0]["severity"] == "warning" and cfg[0]["line"] == 20
    assert cfg[0]["field"] == "data[volcano-scheduler.conf].tiers[1].plugins[1].enableHierarchy"


def test_broken_config_in_configmap_is_an_error(tmp_path):
    text = (SEED / "s11-12" / "11-configmap.yaml").read_text().replace("enablePreemptable: true\n          - name: conformance",
                                                                      "enablePreemptible: true\n          - name: conformance")
    (tmp_path / "cm.yaml").write_text(text)
    r = run(tmp_path)
    assert r.exit_code == 1
    assert "enablePreemptible" in r.output and "enablePreemptable" in r.output
