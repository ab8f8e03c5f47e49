from pathlib import Path

import yaml

from magma.api.load import dump_yaml, load_paths, load_text
from magma.api.objects import ConfigMap, Job, Node, NodePool, Pod, PodGroup, PriorityClass, Queue

SEED = Path(__file__).parent.parent / "data" / "seed"


def test_every_seed_yaml_loads_as_written():
    r = load_paths([SEED])
    assert r.unreadable == []
    assert [p for p in r.problems if p.severity == "error"] == []
    kinds = {type(o) for o in r.objects}
    assert {PodGroup, Pod, Job, Queue, PriorityClass, ConfigMap} <= kinds
    job = next(o for o in r.of_kind(Job) if o.name == "pytorch-ddp-training")
    assert job.spec.min_available == 4
    assert job.spec.tasks[0].template.spec.request().format() == "cpu: 64, memory: 512Gi, nvidia.com/gpu: 8"
    assert set(job.spec.plugins) == {"env", "ssh", "svc"}


def test_unhandled_kinds_are_skipped_not_errors():
    r = load_paths([SEED / "s04-06"])
    assert [(s.kind, s.name) for s in r.skipped] == [("PyTorchJob", "pytorch-demo")]
    assert "skipped" in r.skipped[0].format()


def test_objects_remember_file_and_line_of_fields():
    r = load_paths([SEED / "s11-12" / "12-queues.yaml"])
    q = next(o for o in r.of_kind(Queue) if o.name == "team-cv")
    assert q.source.file.endswith("12-queues.yaml")
    text = (SEED / "s11-12" / "12-queues.yaml").read_text().splitlines()
    line = q.source.line_of(("spec", "guarantee"))
    assert text[line - 1].strip().startswith("guarantee:")
    # the document of team-cv starts at its apiVersion line
    assert text[q.source.line - 1].startswith("apiVersion")


def test_round_trip_keeps_unknown_fields_and_raw_values():
    src = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: q
  labels: {team: a}
spec:
  weight: 3
  capability: {cpu: "8", nvidia.com/gpu: 4}
  extendClusters: [{name: c1, weight: 2}]
status:
  state: Open
  someFutureField: {x: 1}
x-vendor: keep-me
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
spec:
  containers: [{name: c, image: i, ports: [{containerPort: 80}], resources: {requests: {cpu: 500m}}}]
  volumes: [{name: v, emptyDir: {}}]
"""
    r = load_text(src)
    assert [p.field for p in r.problems] == ["spec.extendClusters"]  # a warning, not an error
    assert r.problems[0].severity == "warning"
    original = [d for d in yaml.safe_load_all(src)]
    dumped = list(yaml.safe_load_all(dump_yaml(r.objects)))
    assert dumped == original


def test_malformed_yaml_is_unreadable_with_line():
    r = load_text("apiVersion: v1\nkind: Pod\nmetadata: {name: [\n", "bad.yaml")
    assert r.objects == []
    assert r.unreadable and r.unreadable[0].startswith("bad.yaml:")
    assert "not valid YAML" in r.unreadable[0]


def test_wrong_types_name_field_and_line():
    src = """apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg, namespace: ns}
spec:
  minMember: four
  minResources:
    cpu: lots
"""
    r = load_text(src, "pg.yaml")
    fields = {p.field: p for p in r.problems}
    assert set(fields) == {"spec.minMember", "spec.minResources.cpu"}
    assert fields["spec.minMember"].line == 5
    assert fields["spec.minResources.cpu"].line == 7
    assert "'lots' is not a quantity" in fields["spec.minResources.cpu"].message
    assert fields["spec.minMember"].format().startswith("pg.yaml:5: PodGroup ns/pg: spec.minMember: ")


def test_missing_name_kind_and_api_version():
    r = load_text("apiVersion: v1\nkind: Pod\nmetadata: {}\n---\nkind: Queue\nmetadata: {name: q}\n---\n"
                  "apiVersion: v1\nmetadata: {name: x}\n---\n- a list\n")
    assert [p.field for p in r.problems] == ["metadata.name", "apiVersion", "kind", ""]


def test_wrong_api_version_for_known_kind():
    r = load_text("apiVersion: v1\nkind: Queue\nmetadata: {name: q}\n")
    assert r.problems[0].field == "apiVersion"
    assert "scheduling.volcano.sh/v1beta1" in r.problems[0].message


def test_typo_in_volcano_spec_is_a_warning_with_suggestion():
    r = load_text("apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg}\n"
                  "spec:\n  minMemeber: 4\n")
    assert len(r.problems) == 1
    p = r.problems[0]
    assert (p.severity, p.field, p.line) == ("warning", "spec.minMemeber", 5)
    assert "did you mean 'minMember'" in p.message


def test_nodepool_expands_and_is_strict():
    r = load_text("""apiVersion: sim.magma.io/v1alpha1
kind: NodePool
metadata: {name: h100}
spec:
  count: 3
  labels: {gpu-type: h100}
  taints: [{key: dedicated, value: a100, effect: NoSchedule}]
  allocatable: {cpu: "96", memory: 1Ti, nvidia.com/gpu: 8}
""")
    pool = r.of_kind(NodePool)[0]
    nodes = pool.nodes()
    assert [n.name for n in nodes] == ["h100-0", "h100-1", "h100-2"]
    assert isinstance(nodes[0], Node) and nodes[0].allocatable().format() == "cpu: 96, memory: 1Ti, nvidia.com/gpu: 8"
    assert nodes[2].labels["gpu-type"] == "h100" and nodes[2].spec.taints[0].key == "dedicated"
    bad = load_text("apiVersion: sim.magma.io/v1alpha1\nkind: NodePool\nmetadata: {name: p}\n"
                    "spec:\n  count: 2\n  allocatable: {cpu: 1}\n  lables: {a: b}\n")
    assert [(p.field, p.severity, p.line) for p in bad.problems] == [("spec.lables", "error", 7)]


def test_kubectl_list_output_loads():
    r = load_text("""apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
  status: {allocatable: {cpu: "4"}}
- apiVersion: v1
  kind: Node
  metadata: {name: n2}
  status: {capacity: {cpu: "8"}}
""")
    assert [n.name for n in r.of_kind(Node)] == ["n1", "n2"]
    assert r.of_kind(Node)[1].allocatable().format() == "cpu: 8"
    assert r.of_kind(Node)[1].source.line == 8


def test_folder_without_yaml_and_missing_path(tmp_path):
    r = load_paths([tmp_path, tmp_path / "nope.yaml"])
    assert len(r.unreadable) == 2


# ---------------------------------------------------------------- libyaml and the pure-Python parser agree

ROOT = Path(__file__).resolve().parents[2]


def _both(text: str):
    """load_text's result with libyaml and with the pure-Python parser, as comparable values."""
    import magma.api.load as load

    out = []
    before = load.use_libyaml
    try:
        for flag in (True, False):
            load.use_libyaml = flag
            r = load.load_text(text, "t.yaml")
            out.append(([(type(o).__name__, o.model_dump(), o.dump(), o.source.model_dump()) for o in r.objects],
                        r.skipped, r.problems, r.unreadable))
    finally:
        load.use_libyaml = before
    return out


def test_libyaml_is_used_when_pyyaml_has_it():
    import magma.api.load as load

    assert load.use_libyaml == bool(getattr(yaml, "__with_libyaml__", False))


def test_libyaml_loads_every_manifest_of_the_repository_as_the_pure_parser_does():
    files = sorted(p for p in ROOT.rglob("*.y*ml") if ".venv" not in p.parts and p.suffix in (".yaml", ".yml"))
    assert len(files) > 10
    for f in files:
        fast, slow = _both(f.read_text())
        assert fast == slow, f


def test_libyaml_and_the_pure_parser_agree_on_damaged_text():
    """Manifests with a few random edits (YAML's indicators, breaks, odd characters) load the same with both
    parsers: the same objects, problems, and reports of text that is not YAML."""
    import random

    texts = [f.read_text() for f in sorted(SEED.rglob("*.yaml"))]
    rng = random.Random(5)
    pieces = [":", " ", "  ", "\t", "-", "\n", "'", '"', "#", "{", "}", "[", "]", ",", "&a", "*a", "|", ">", "? ",
              "!!str ", "%", "\x00", "\x85", "\u2028", "\ufeff", "é", "---\n", "...\n", "\r\n", "<<: ", "\r", "\\",
              "@", "`", "!", "&", "*", "?", "- ", ": ", "\x7f", "|-", ">+", "|2", "!tag ", "%YAML 1.1\n", "\\x41",
              '"\\', "'' ", "~", "null", "0x1F", "1e3", "yes", "=", "<<", "    ", "\n  ", "\n- ", ": |\n  x\n", "\n\n"]
    for _ in range(600):
        text = rng.choice(texts)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(text) + 1)
            j = min(len(text), i + rng.choice([0, 0, 1, 3, 10]))
            text = text[:i] + rng.choice(pieces) + text[j:]
        fast, slow = _both(text)
        assert fast == slow, text
