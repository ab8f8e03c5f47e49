"""parse_config never raises: random text, corrupted configs and random YAML structures only yield problems."""

from __future__ import annotations

import re

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from magma.api.config import (
    ACTION_ARGUMENTS,
    FLAG_DEFAULTS,
    MAGMA_ACTIONS,
    MAGMA_PLUGINS,
    PLUGIN_ARGUMENTS,
    VOLCANO_ONLY_PLUGINS,
    ActionConfiguration,
    ConfigResult,
    PluginOption,
    SchedulerConfig,
    Tier,
    parse_config,
)

SEED_CONF = """\
actions: "enqueue, allocate, preempt, backfill"
tiers:
  - plugins:
      - name: priority
      - name: gang
        enablePreemptable: true
      - name: conformance
  - plugins:
      - name: overcommit
      - name: drf
        enablePreemptable: true
        enableHierarchy: true
      - name: predicates
      - name: proportion
      - name: nodeorder
      - name: binpack
        arguments:
          binpack.weight: 10
          binpack.cpu: 1
          binpack.memory: 1
          binpack.resources: "nvidia.com/gpu"
          binpack.resources.nvidia.com/gpu: 5
configurations:
  - name: preempt
    arguments:
      minCandidateNodesPercentage: 10
metrics:
  interval: 30s
"""

YAML_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")  # what YAML counts as a new line
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_invariants(result: ConfigResult, text: str) -> None:
    assert isinstance(result, ConfigResult)
    assert (result.config is None) == bool(result.errors)
    n_lines = len(YAML_LINE_BREAK.split(text))
    for problem in result.errors + result.warnings:
        assert isinstance(problem.field, str) and problem.message
        assert problem.line is None or 1 <= problem.line <= n_lines, (problem, n_lines)
        assert not problem.message.startswith("internal error"), problem
    if result.config is not None:
        # Whatever loads can be dumped and loads back the same.
        again = parse_config(result.config.to_yaml())
        assert again.config == result.config, again.messages()


# -- random text -------------------------------------------------------------------------------------------------

YAML_ALPHABET = st.sampled_from(list(":-[]{},&*!|>'\"#%@` \n\t?<=~.0123456789abcdefghijklmnopqrstuvwxyz") + ["\u00b5"])


@SETTINGS
@given(st.text())
def test_random_text_never_raises(text):
    check_invariants(parse_config(text), text)


@SETTINGS
@given(st.text(YAML_ALPHABET, max_size=200))
def test_yaml_punctuation_never_raises(text):
    check_invariants(parse_config(text), text)


# -- corrupted configs -------------------------------------------------------------------------------------------

edit = st.tuples(
    st.sampled_from(["delete", "insert", "replace", "duplicate"]),
    st.integers(0, len(SEED_CONF)),
    st.integers(0, 40),
    st.text(YAML_ALPHABET, max_size=12),
)


def corrupt(text: str, edits) -> str:
    for op, at, length, insert in edits:
        at = min(at, len(text))
        if op == "delete":
            text = text[:at] + text[at + length:]
        elif op == "insert":
            text = text[:at] + insert + text[at:]
        elif op == "replace":
            text = text[:at] + insert + text[at + len(insert):]
        else:
            text = text[:at] + text[at:at + length] + text[at:]
    return text


@SETTINGS
@given(st.lists(edit, min_size=1, max_size=4))
def test_corrupted_seed_config_never_raises(edits):
    text = corrupt(SEED_CONF, edits)
    check_invariants(parse_config(text), text)


@SETTINGS
@given(st.lists(st.sampled_from(SEED_CONF.splitlines()), max_size=30))
def test_shuffled_lines_never_raise(lines):
    text = "\n".join(lines)
    check_invariants(parse_config(text), text)


# -- random structures -------------------------------------------------------------------------------------------

ARG_KEYS = sorted({k for t in [*PLUGIN_ARGUMENTS.values(), *ACTION_ARGUMENTS.values()] for k in t.exact})
WORDS = st.sampled_from(
    [
        "actions", "tiers", "plugins", "name", "arguments", "configurations", "metrics",
        *FLAG_DEFAULTS, *MAGMA_PLUGINS, *VOLCANO_ONLY_PLUGINS, *MAGMA_ACTIONS, "shuffle", "gangpreempt",
        *ARG_KEYS, "binpack.resources.nvidia.com/gpu", "enqueue, allocate", "true", "10", "1h", "2d", "-1",
    ]
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    WORDS,
    st.text(max_size=10),
)
keys = st.one_of(WORDS, st.text(max_size=8), st.integers(-5, 5), st.booleans(), st.none())
structures = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=5), st.dictionaries(keys, children, max_size=6)),
    max_leaves=40,
)


@SETTINGS
@given(structures)
def test_random_structures_never_raise(doc):
    text = yaml.safe_dump(doc)
    check_invariants(parse_config(text), text)


def plugin_entry(name):
    flags = st.dictionaries(st.sampled_from(list(FLAG_DEFAULTS)), st.one_of(st.booleans(), scalars), max_size=3)
    args = st.dictionaries(st.one_of(st.sampled_from(ARG_KEYS), keys), scalars, max_size=4)
    return st.fixed_dictionaries({"name": st.just(name)}, optional={"arguments": args}).flatmap(
        lambda entry: flags.map(lambda f: {**entry, **f})
    )


PLUGIN_NAMES = st.sampled_from([*MAGMA_PLUGINS, *VOLCANO_ONLY_PLUGINS, "binpak"])
config_shaped = st.fixed_dictionaries(
    {
        "actions": st.one_of(
            st.lists(st.sampled_from([*MAGMA_ACTIONS, "shuffle", "gangreclaim", "bogus", ""]), max_size=5).map(
                ", ".join
            ),
            scalars,
        ),
        "tiers": st.lists(
            st.fixed_dictionaries(
                {"plugins": st.lists(PLUGIN_NAMES.flatmap(plugin_entry), max_size=5)}
            ),
            max_size=3,
        ),
    },
    optional={
        "configurations": st.lists(
            st.fixed_dictionaries(
                {"name": st.sampled_from([*MAGMA_ACTIONS, "shuffle", "alocate"])},
                optional={"arguments": st.dictionaries(st.sampled_from(ARG_KEYS), scalars, max_size=4)},
            ),
            max_size=3,
        ),
        "metrics": st.one_of(st.dictionaries(st.text(max_size=5), scalars, max_size=3), scalars),
    },
)


@SETTINGS
@given(config_shaped)
def test_config_shaped_structures_never_raise(doc):
    text = yaml.safe_dump(doc, sort_keys=False)
    check_invariants(parse_config(text), text)


# -- valid configs round-trip ------------------------------------------------------------------------------------

NUMERIC_ARGS = {
    "binpack": ["binpack.weight", "binpack.cpu", "binpack.memory"],
    "nodeorder": ["leastrequested.weight", "mostrequested.weight", "tainttoleration.weight"],
    "task-topology": ["task-topology.weight"],
}


@st.composite
def valid_configs(draw):
    actions = draw(st.lists(st.sampled_from(MAGMA_ACTIONS), min_size=1, max_size=5, unique=True))
    names = [n for n in MAGMA_PLUGINS if n != "capacity"]  # capacity excludes proportion
    chosen = draw(st.lists(st.sampled_from(names), min_size=1, max_size=8, unique=True))
    cuts = sorted(draw(st.sets(st.integers(1, max(1, len(chosen) - 1)), max_size=2)))
    groups = [chosen[a:b] for a, b in zip([0, *cuts], [*cuts, len(chosen)]) if chosen[a:b]]
    tiers = []
    for group in groups:
        plugins = []
        for name in group:
            flags = draw(st.dictionaries(st.sampled_from(list(FLAG_DEFAULTS)), st.booleans(), max_size=3))
            args = {
                key: draw(st.one_of(st.integers(0, 100), st.floats(0, 100, allow_nan=False)))
                for key in NUMERIC_ARGS.get(name, [])
                if draw(st.booleans())
            }
            plugins.append(PluginOption(name=name, flags=flags, arguments=args))
        tiers.append(Tier(plugins=plugins))
    configurations = [
        ActionConfiguration(name=a, arguments={"predicateErrorCacheEnable": draw(st.booleans())})
        for a in actions
        if a in ("allocate", "backfill", "reclaim") and draw(st.booleans())
    ]
    return SchedulerConfig(actions=actions, tiers=tiers, configurations=configurations)


@SETTINGS
@given(valid_configs())
def test_valid_configs_round_trip(config):
    result = parse_config(config.to_yaml())
    assert result.errors == [], result.messages()
    assert result.config == config
