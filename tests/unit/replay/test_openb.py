"""openb CSV loaders: the repository's files, normalisation, and errors that name file, line and column."""

from __future__ import annotations

from pathlib import Path

import pytest

from magma.replay.openb import TraceError, load_nodes, load_pods, write_pods

DATA = Path(__file__).resolve().parents[3] / "data" / "openb"
NODES_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"
PODS_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_the_repository_trace():
    nodes = load_nodes(DATA / "openb_node_list_gpu_node.csv")
    pods = load_pods(DATA / "openb_pod_list_default.csv")
    assert len(nodes) == 1213
    assert int(nodes.gpus.sum()) == 6212
    assert nodes.total_gpu_milli == 6_212_000
    assert len(pods) == 8152
    assert pods.total_gpu_milli == 6_086_800
    assert list(nodes.names) == sorted(nodes.names)
    assert list(pods.names) == sorted(pods.names)
    assert not any(pods.gpu_spec)


def test_nodes_sorted_by_name_and_read(tmp_path):
    p = write(tmp_path, "n.csv", NODES_HEADER + "b,64000,262144,2,P100\na,8000,32768,0,\n")
    nodes = load_nodes(p)
    assert nodes.names == ("a", "b")
    assert nodes.cpu.tolist() == [8000, 64000]
    assert nodes.gpus.tolist() == [0, 2]
    assert nodes.model == ("", "P100")


def test_pods_normalised(tmp_path):
    p = write(tmp_path, "p.csv", PODS_HEADER
              + "t2,4000,100,1,1500,,LS,Running,0,1,0\n"  # clamped to one whole GPU
              + "t1,2000,100,0,300,,BE,Running,0,1,0\n"  # no GPU count: no GPU at all
              + "t3,1000,100,1,0,,BE,Running,0,1,0\n"  # no share: no GPU
              + "t4,1000,100,1,250,V100M16| V100M32,BE,Running,0,1,0\n"
              + "t5,1000,100,2,1000,nan,BE,Running,0,1,0\n")
    pods = load_pods(p)
    assert pods.names == ("t1", "t2", "t3", "t4", "t5")
    assert pods.num_gpu.tolist() == [0, 1, 0, 1, 2]
    assert pods.gpu_milli.tolist() == [0, 1000, 0, 250, 1000]
    assert pods.gpu_spec == ("", "", "", "V100M16|V100M32", "")
    assert pods.models(3) == frozenset({"V100M16", "V100M32"})
    assert pods.models(0) is None


def test_write_then_read_round_trip(tmp_path):
    pods = load_pods(write(tmp_path, "p.csv", PODS_HEADER + "a,1,2,1,500,X,,,,,\nb,3,4,0,0,,,,,,\n"))
    out = tmp_path / "out.csv"
    write_pods(out, pods)
    again = load_pods(out)
    assert again.names == pods.names and again.gpu_spec == pods.gpu_spec
    assert again.gpu_milli.tolist() == pods.gpu_milli.tolist()


@pytest.mark.parametrize("body, line, column, words", [
    ("a,64000,x,2,P100\n", 2, "memory_mib", "'x' is not a number"),
    ("a,64000,1.5,2,P100\n", 2, "memory_mib", "not a whole number"),
    ("a,-1,1,2,P100\n", 2, "cpu_milli", "below 0"),
    ("a,1,1,2,\n", 2, "model", "no model"),
    ("a,1,1,0,\na,1,1,0,\n", 3, "sn", "listed twice (first on line 2)"),
    ("a,1,1\n", 2, "gpu", "3 fields"),
    (",1,1,0,\n", 2, "sn", "empty node name"),
])
def test_node_errors_name_file_line_and_column(tmp_path, body, line, column, words):
    p = write(tmp_path, "nodes.csv", NODES_HEADER + body)
    with pytest.raises(TraceError) as e:
        load_nodes(p)
    assert e.value.line == line and e.value.column == column
    assert str(e.value).startswith(f"{p}:{line}: column {column!r}:")
    assert words in str(e.value)


def test_pod_errors(tmp_path):
    p = write(tmp_path, "pods.csv", PODS_HEADER + "a,1,1,1,500,,,,,,\nb,1,1,4,500,,,,,,\n")
    with pytest.raises(TraceError) as e:
        load_pods(p)
    assert (e.value.line, e.value.column) == (3, "gpu_milli")
    assert "must take whole GPUs" in str(e.value)


def test_missing_column_and_empty_and_missing_file(tmp_path):
    with pytest.raises(TraceError) as e:
        load_pods(write(tmp_path, "p.csv", "name,cpu_milli,memory_mib,num_gpu\n"))
    assert (e.value.line, e.value.column) == (1, "gpu_milli")
    with pytest.raises(TraceError, match="empty file"):
        load_nodes(write(tmp_path, "e.csv", ""))
    with pytest.raises(TraceError, match="no nodes"):
        load_nodes(write(tmp_path, "h.csv", NODES_HEADER))
    with pytest.raises(TraceError, match="cannot read"):
        load_nodes(tmp_path / "missing.csv")
