"""Random and corrupted manifests never crash the loader; every problem names a file and a line."""

from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magma.api.load import load_text

SEED = Path(__file__).parent.parent / "data" / "seed"
DOCS = [d for f in sorted(SEED.rglob("*.yaml")) for d in yaml.safe_load_all(f.read_text()) if d]

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12))
values = st.recursive(scalars, lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.text(max_size=8), c, max_size=3)), max_leaves=8)


def _paths(doc, prefix=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield prefix + (i,)
            yield from _paths(v, prefix + (i,))


def _set(doc, path, value):
    for p in path[:-1]:
        doc = doc[p]
    if value is _DELETE:
        del doc[path[-1]]
    else:
        doc[path[-1]] = value


_DELETE = object()


@st.composite
def corrupted(draw):
    import copy

    doc = copy.deepcopy(draw(st.sampled_from(DOCS)))
    for _ in range(draw(st.integers(1, 4))):
        paths = list(_paths(doc))
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        _set(doc, path, draw(st.one_of(values, st.just(_DELETE))))
    return doc


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(corrupted())
def test_corrupted_documents_never_crash(doc):
    text = yaml.safe_dump(doc)
    r = load_text(text, "fuzz.yaml")
    for p in r.problems:
        assert p.file == "fuzz.yaml" and p.line >= 1
        assert p.format().startswith("fuzz.yaml:")


@settings(max_examples=300)
@given(st.text(max_size=200))
def test_random_text_never_crashes(text):
    r = load_text(text, "t.yaml")
    for p in r.problems:
        assert p.line >= 1
