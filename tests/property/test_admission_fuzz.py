"""Corrupted manifests never make loading or admission raise, and every problem names a file and a line.

The manifests are the seed worlds' documents with random damage: fields deleted, values replaced by values of
other types or by values that name other objects (to build cycles, dangling references and so on), keys added,
and now and then the YAML text itself mangled.
"""

from __future__ import annotations

import copy
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magma.api.admission import World, admit, check_job_update, check_queue_delete
from magma.api.load import load_text
from magma.api.objects import Job

SEED = Path(__file__).resolve().parents[1] / "data" / "seed"
WORLDS = ("s04-06", "s06-2", "s11-12")


def _docs(world: str) -> dict[str, list]:
    out = {}
    for p in sorted((SEED / world).glob("*.yaml")):
        out[f"{world}/{p.name}"] = [d for d in yaml.safe_load_all(p.read_text(encoding="utf-8")) if d is not None]
    return out


DOCS = {w: _docs(w) for w in WORLDS}

NAMES = ["root", "default", "ai-org", "ai-team-1", "ai-team-2", "team-nlp", "emergency", "worker", "master",
         "training-job-a", "ai-train", "high", "normal", "system-node-critical", "volcano", "default-scheduler"]
ODD = ["", "-1", "0", "0.5", "1e3", "256Gi", "Closed", "Closing", "Open", "*", "PodFailed", "RestartJob", "10m",
       "nvidia.com/gpu", "a" * 70, "Bad_Name", "--master=worker", "1/2", "root/a/b"]
KEYS = ["parent", "queue", "minAvailable", "minMember", "replicas", "name", "namespace", "priorityClassName",
        "policies", "plugins", "dependsOn", "event", "events", "exitCode", "action", "timeout", "capability",
        "deserved", "guarantee", "resource", "weight", "state", "status", "schedulerName", "maxRetry",
        "ttlSecondsAfterFinished", "minSuccess", "globalDefault", "value", "annotations", "tasks", "spec",
        "partitionPolicy", "hostNetwork", "nodeName", "minTaskMember", "minResources", "nvidia.com/gpu", "cpu",
        "scheduling.k8s.io/group-name", "volcano.sh/hierarchy", "volcano.sh/hierarchy-weights",
        "volcano.sh/jdb-min-available"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=12),
    st.sampled_from(NAMES + ODD),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(KEYS + NAMES), inner, max_size=3),
    ),
    max_leaves=6,
)


def _draw_path(data, node) -> list:
    path: list = []
    while True:
        if isinstance(node, dict) and node and data.draw(st.integers(0, 4)) > 0:
            key = data.draw(st.sampled_from(sorted(node, key=str)))
        elif isinstance(node, list) and node and data.draw(st.integers(0, 4)) > 0:
            key = data.draw(st.integers(0, len(node) - 1))
        else:
            return path
        path.append(key)
        node = node[key]


def _mutate(data, doc):
    """One random change to a document (returns the new document; the input is not changed)."""
    doc = copy.deepcopy(doc)
    path = _draw_path(data, doc)
    op = data.draw(st.sampled_from(["delete", "replace", "replace", "insert", "reference"]))
    if not path:
        return data.draw(values) if op == "replace" else doc
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    last = path[-1]
    target = parent[last]
    if op == "delete":
        del parent[last]
    elif op == "replace":
        parent[last] = data.draw(values)
    elif op == "reference":
        parent[last] = data.draw(st.sampled_from(NAMES + ODD))
    elif isinstance(target, dict):
        target[data.draw(st.sampled_from(KEYS))] = data.draw(values)
    elif isinstance(target, list):
        target.append(data.draw(values))
    else:
        parent[last] = data.draw(values)
    return doc


def _check(problems, min_line: int = 1) -> None:
    for p in problems:
        assert p.file, p
        assert p.line >= min_line, p
        assert p.severity in ("error", "warning"), p
        p.format()


def _run(files: dict[str, str]):
    objects, problems = [], []
    for name, text in files.items():
        r = load_text(text, name)
        objects += r.objects
        problems += r.problems
    world = World.from_objects(objects)
    problems += admit(world)
    _check(problems)
    return world, objects


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_seed_documents_never_break_admission(data):
    world_name = data.draw(st.sampled_from(WORLDS))
    docs = {f: list(d) for f, d in DOCS[world_name].items()}
    for _ in range(data.draw(st.integers(1, 6))):
        f = data.draw(st.sampled_from(sorted(docs)))
        if not docs[f]:
            continue
        i = data.draw(st.integers(0, len(docs[f]) - 1))
        docs[f][i] = _mutate(data, docs[f][i])
        if data.draw(st.integers(0, 9)) == 0:  # now and then a copy of a document (duplicates, extra objects)
            docs[f].append(copy.deepcopy(docs[f][i]))
    files = {f: yaml.safe_dump_all(d, sort_keys=False, allow_unicode=True) for f, d in docs.items()}
    world, objects = _run(files)

    # The other entry points take the same damaged objects. (Refusing to delete a built-in queue names
    # `<built-in>` with line 0: it has no manifest line.)
    for q in list(world.queues) + ["no-such-queue"]:
        _check(check_queue_delete(world, q), min_line=0)
    jobs = [o for o in objects if isinstance(o, Job)]
    for old in jobs:
        for new in jobs:
            _check(check_job_update(old, new))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_mangled_yaml_text_never_raises(data):
    world_name = data.draw(st.sampled_from(WORLDS))
    files = {f: (SEED / f).read_text(encoding="utf-8") for f in DOCS[world_name]}
    f = data.draw(st.sampled_from(sorted(files)))
    text = files[f]
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text)))
        cut = data.draw(st.integers(0, 8))
        insert = data.draw(st.sampled_from(["", " ", "  ", "\n", ":", "-", "- ", "{", "[", "'", "#", "x", "-1",
                                            "\n---\n", "\n  ", ": 0"]))
        text = text[:at] + insert + text[at + cut:]
    files[f] = text
    _run(files)
