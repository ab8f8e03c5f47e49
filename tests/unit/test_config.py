"""The scheduler configuration (`volcano-scheduler.conf`) and durations."""

from __future__ import annotations

import textwrap

import pytest
import yaml

from magma.api.config import (
    DEFAULT_CONF,
    VOLCANO_DEFAULT_CONF,
    DRF_HIERARCHY_IGNORED,
    DRF_HIERARCHY_WITH_PROPORTION,
    FLAG_DEFAULTS,
    ConfigError,
    ConfigResult,
    PluginOption,
    SchedulerConfig,
    config_from_configmap,
    default_config,
    volcano_default_config,
    parse_config,
)
from magma.api.duration import parse_duration

# Section 十一 of the seed article, verbatim: the ConfigMap a Volcano user already has.
SEED_CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: volcano-scheduler-configmap
  namespace: volcano-system
data:
  volcano-scheduler.conf: |
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
"""

MINIMAL = 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n'


def conf(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def parse(text: str) -> ConfigResult:
    return parse_config(conf(text))


def with_plugin(entry: str, actions: str = "enqueue, allocate") -> ConfigResult:
    """A config whose only tier holds priority and then the given plugin entry (YAML, indented as a list item)."""
    body = textwrap.indent(textwrap.dedent(entry).strip("\n"), "  ")
    return parse_config(f'actions: "{actions}"\ntiers:\n- plugins:\n  - name: priority\n{body}\n')


def with_configuration(entry: str, actions: str = "enqueue, allocate, preempt, reclaim, backfill") -> ConfigResult:
    body = textwrap.indent(textwrap.dedent(entry).strip("\n"), "")
    return parse_config(f'actions: "{actions}"\ntiers:\n- plugins:\n  - name: gang\nconfigurations:\n{body}\n')


def only_error(result: ConfigResult):
    assert result.config is None
    assert len(result.errors) == 1, result.messages()
    return result.errors[0]


def only_warning(result: ConfigResult):
    assert result.ok, result.messages()
    assert len(result.warnings) == 1, result.messages()
    return result.warnings[0]


# ------------------------------------------------------------------------------------------------------------------
# Volcano's default config
# ------------------------------------------------------------------------------------------------------------------


def test_volcano_default_config_is_volcanos():
    config = volcano_default_config()
    assert config.actions == ["enqueue", "allocate", "backfill"]
    assert [[p.name for p in t.plugins] for t in config.tiers] == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder"],
    ]
    assert config.configurations == []
    assert config.action_arguments("allocate") == {}
    assert parse_config(VOLCANO_DEFAULT_CONF).warnings == []


def test_magma_default_config_is_volcanos_plus_reservation():
    config = default_config()
    volcano = volcano_default_config()
    assert config.actions == volcano.actions
    assert [[p.name for p in t.plugins] for t in config.tiers] == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder", "reservation"],
    ]
    assert parse_config(DEFAULT_CONF).warnings == []
    res = config.plugin("reservation")
    assert res.argument("reservation.maxJobs") == 4
    assert res.argument("reservation.window") == 86400.0
    assert res.argument("reservation.enqueue") is True


def test_reservation_arguments_are_checked():
    text = VOLCANO_DEFAULT_CONF + "  - name: reservation\n    arguments: {reservation.maxJobs: -1, reservation.window: 0s}\n"
    result = parse_config(text)
    assert not result.ok
    assert {p.field.rsplit(".", 1)[-1] for p in result.errors} >= {"maxJobs", "window"}
    ok = parse_config(VOLCANO_DEFAULT_CONF + "  - name: reservation\n    arguments: {reservation.window: 2h}\n")
    assert ok.ok and ok.config.plugin("reservation").argument("reservation.window") == 7200.0


def test_default_flags_are_true_except_hierarchy_and_cluster_order():
    gang = default_config().plugin("gang")
    assert gang is not None and gang.flags == {}
    for flag in FLAG_DEFAULTS:
        expected = flag not in ("enableHierarchy", "enabledClusterOrder")
        assert gang.enabled(flag) is expected, flag
    assert len(FLAG_DEFAULTS) == 25


def test_enabled_refuses_an_unknown_flag_name():
    with pytest.raises(ValueError, match="enablePreemptable"):
        PluginOption(name="gang").enabled("enablePreemptible")


def test_plugin_option_refuses_unknown_flags_when_built_directly():
    with pytest.raises(ValueError):
        PluginOption(name="gang", flags={"enableJobStarvin": False})


# ------------------------------------------------------------------------------------------------------------------
# The seed's section-11 config
# ------------------------------------------------------------------------------------------------------------------


def seed_result() -> ConfigResult:
    configmap = yaml.safe_load(SEED_CONFIGMAP)
    return config_from_configmap(configmap["data"])


def test_seed_config_loads_with_exactly_one_warning_about_drf_hierarchy():
    result = seed_result()
    assert result.errors == []
    warning = only_warning(result)
    assert warning.field == "tiers[1].plugins[1].enableHierarchy"
    assert warning.line == 12  # inside the conf text
    assert warning.message == DRF_HIERARCHY_WITH_PROPORTION
    # The warning states how magma reads the combination, not just that it is odd.
    assert "Volcano rejects" in warning.message
    assert "proportion computes each queue's deserved resources along the queue hierarchy" in warning.message
    assert "spec.parent" in warning.message
    assert "enableHierarchy flag is ignored" in warning.message


def test_seed_config_effective_flags_and_arguments():
    config = seed_result().unwrap()
    assert config.actions == ["enqueue", "allocate", "preempt", "backfill"]
    assert config.runnable_actions == ["enqueue", "allocate", "preempt", "backfill"]
    assert [p.name for p in config.plugins()] == [
        "priority", "gang", "conformance",
        "overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack",
    ]
    gang, drf, binpack = config.plugin("gang"), config.plugin("drf"), config.plugin("binpack")
    assert gang.enabled("enablePreemptable") and gang.enabled("enableJobStarving")
    assert drf.flags == {"enablePreemptable": True, "enableHierarchy": True}
    assert drf.enabled("enableHierarchy") is True  # as written; the warning says magma ignores it
    assert binpack.argument("binpack.weight") == 10
    assert binpack.argument("binpack.cpu") == 1
    assert binpack.argument("binpack.memory") == 1
    assert binpack.argument("binpack.resources") == ("nvidia.com/gpu",)
    assert binpack.argument("binpack.resources.nvidia.com/gpu") == 5
    assert binpack.arguments["binpack.resources.nvidia.com/gpu"] == 5
    assert config.plugin("overcommit").argument("overcommit-factor") == 1.2  # Volcano's default
    assert config.plugin("nodeorder").argument("tainttoleration.weight") == 3
    assert config.plugin("capacity") is None


# ------------------------------------------------------------------------------------------------------------------
# Actions
# ------------------------------------------------------------------------------------------------------------------


def test_actions_are_comma_separated_and_whitespace_tolerant():
    result = parse_config('actions: " enqueue ,allocate,   backfill "\ntiers:\n- plugins:\n  - name: gang\n')
    assert result.unwrap().actions == ["enqueue", "allocate", "backfill"]


def test_unknown_action_is_an_error_with_suggestion():
    error = only_error(parse_config('actions: "enqueue, alocate"\ntiers:\n- plugins:\n  - name: gang\n'))
    assert error.field == "actions[1]"
    assert error.line == 1
    assert "unknown action 'alocate'" in error.message and "did you mean 'allocate'?" in error.message


def test_actions_missing_a_comma():
    error = only_error(parse_config('actions: "enqueue allocate"\ntiers:\n- plugins:\n  - name: gang\n'))
    assert "separate actions with commas" in error.message


def test_stray_comma_is_an_error():
    error = only_error(parse_config('actions: "enqueue, allocate,"\ntiers:\n- plugins:\n  - name: gang\n'))
    assert error.field == "actions[2]" and "empty action name" in error.message


@pytest.mark.parametrize("actions", ['""', '"  ,  "', "null"])
def test_empty_actions_is_an_error(actions):
    error = only_error(parse_config(f"actions: {actions}\ntiers:\n- plugins:\n  - name: gang\n"))
    assert error.field == "actions"


def test_missing_actions_is_an_error():
    error = only_error(parse_config("tiers:\n- plugins:\n  - name: gang\n"))
    assert error.field == "actions" and "missing" in error.message


def test_actions_as_a_list_or_number_is_an_error():
    error = only_error(parse_config("actions: [enqueue, allocate]\ntiers:\n- plugins:\n  - name: gang\n"))
    assert error.field == "actions" and '"enqueue, allocate"' in error.message
    error = only_error(parse_config("actions: 5\ntiers:\n- plugins:\n  - name: gang\n"))
    assert "got 5" in error.message


def test_shuffle_is_accepted_and_skipped_with_a_warning():
    result = parse_config('actions: "enqueue, allocate, shuffle"\ntiers:\n- plugins:\n  - name: gang\n')
    warning = only_warning(result)
    assert warning.field == "actions[2]" and "shuffle" in warning.message
    assert result.config.actions == ["enqueue", "allocate", "shuffle"]
    assert result.config.runnable_actions == ["enqueue", "allocate"]


@pytest.mark.parametrize("action, instead", [("gangpreempt", "preempt"), ("gangreclaim", "reclaim")])
def test_gang_preempt_and_reclaim_are_refused(action, instead):
    error = only_error(parse_config(f'actions: "allocate, {action}"\ntiers:\n- plugins:\n  - name: gang\n'))
    assert error.field == "actions[1]"
    assert "not supported by magma" in error.message and f"use '{instead}'" in error.message


def test_action_listed_twice_is_a_warning():
    warning = only_warning(parse_config('actions: "allocate, allocate"\ntiers:\n- plugins:\n  - name: gang\n'))
    assert warning.field == "actions[1]" and "twice" in warning.message


# ------------------------------------------------------------------------------------------------------------------
# Tiers and plugin entries
# ------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tiers", ["tiers: []", "tiers: null", ""])
def test_empty_or_missing_tiers_is_an_error(tiers):
    error = only_error(parse_config(f'actions: "allocate"\n{tiers}\n'))
    assert error.field == "tiers"


def test_tier_without_plugins_is_an_error():
    result = parse(
        """
        actions: "allocate"
        tiers:
        - plugins:
          - name: gang
        - plugins: []
        """
    )
    error = only_error(result)
    assert error.field == "tiers[1].plugins" and error.line == 5


def test_unknown_plugin_names_tier_and_position_with_suggestion():
    result = parse(
        """
        actions: "allocate"
        tiers:
        - plugins:
          - name: gang
        - plugins:
          - name: drf
          - name: predicates
          - name: proportion
          - name: binpak
        """
    )
    error = only_error(result)
    assert error.field == "tiers[1].plugins[3].name"
    assert error.line == 9
    assert "unknown plugin 'binpak'" in error.message and "did you mean 'binpack'?" in error.message


@pytest.mark.parametrize("name", ["tdm", "deviceshare", "numa-aware", "rescheduling", "resource-strategy-fit",
                                  "extender", "pdb", "usage", "nodegroup", "cdp", "resourcequota"])
def test_volcano_plugins_magma_does_not_implement_are_warnings(name):
    result = with_plugin(f"- name: {name}\n  arguments: {{anything: [1, 2]}}")
    warning = only_warning(result)
    assert warning.field == "tiers[0].plugins[1].name"
    assert name in warning.message and "magma ignores it" in warning.message
    option = result.config.plugin(name)
    assert option is not None and not option.implemented
    assert [p.name for p in result.config.tiers[0].runnable_plugins] == ["priority"]


def test_numaaware_is_not_volcanos_spelling():
    error = only_error(with_plugin("- name: numaaware"))
    assert "did you mean 'numa-aware'?" in error.message


@pytest.mark.parametrize("name", ["fairshare", "network-topology-aware", "magma", "task-topology", "sla", "capacity"])
def test_magma_plugins_are_known(name):
    result = with_plugin(f"- name: {name}")
    assert result.ok and result.warnings == []
    assert result.config.plugin(name).implemented


def test_typo_in_a_flag_is_an_error_that_says_volcano_would_ignore_it():
    error = only_error(with_plugin("- name: gang\n  enablePreemptible: false"))
    assert error.field == "tiers[0].plugins[1].enablePreemptible"
    assert error.line == 6
    assert "did you mean 'enablePreemptable'?" in error.message
    assert "Volcano silently ignores" in error.message


def test_flag_spelling_is_exact_including_the_irregular_ones():
    result = with_plugin(
        "- name: gang\n  enabledVictim: false\n  enabledClusterOrder: true\n  enableJobStarving: false"
    )
    gang = result.unwrap().plugin("gang")
    assert not gang.enabled("enabledVictim") and gang.enabled("enabledClusterOrder")
    assert not gang.enabled("enableJobStarving") and gang.enabled("enableJobReady")
    error = only_error(with_plugin("- name: gang\n  enableVictim: false"))
    assert "did you mean 'enabledVictim'?" in error.message


@pytest.mark.parametrize("value, shown", [('"false"', "'false'"), ("0", "0"), ("[true]", "a list"), ("null", "null")])
def test_flag_must_be_a_boolean(value, shown):
    error = only_error(with_plugin(f"- name: gang\n  enableJobStarving: {value}"))
    assert error.field == "tiers[0].plugins[1].enableJobStarving"
    assert error.message.startswith(f"expected true or false, got {shown}")


def test_yaml_11_booleans_are_booleans_for_flags_as_in_volcano():
    gang = with_plugin("- name: gang\n  enableJobStarving: off").unwrap().plugin("gang")
    assert gang.enabled("enableJobStarving") is False


def test_plugin_entry_needs_a_string_name():
    error = only_error(with_plugin("- enableJobOrder: true"))
    assert error.field == "tiers[0].plugins[1]" and "missing 'name'" in error.message
    error = only_error(with_plugin("- name: 5"))
    assert error.field == "tiers[0].plugins[1].name" and "got 5" in error.message
    error = only_error(with_plugin("- gang"))
    assert error.field == "tiers[0].plugins[1]" and "got 'gang'" in error.message


def test_duplicate_plugin_is_an_error():
    result = parse(
        """
        actions: "allocate"
        tiers:
        - plugins:
          - name: gang
        - plugins:
          - name: drf
          - name: gang
        """
    )
    error = only_error(result)
    assert error.field == "tiers[1].plugins[1].name"
    assert "'gang' is listed twice" in error.message and "tiers[0].plugins[0]" in error.message


def test_proportion_and_capacity_together_is_an_error():
    result = parse(
        """
        actions: "allocate"
        tiers:
        - plugins:
          - name: proportion
        - plugins:
          - name: capacity
        """
    )
    error = only_error(result)
    assert error.field == "tiers[1].plugins[0].name"
    assert "proportion and capacity" in error.message


def test_drf_hierarchy_with_proportion_in_another_tier_is_a_different_warning():
    result = parse(
        """
        actions: "allocate"
        tiers:
        - plugins:
          - name: drf
            enableHierarchy: true
        - plugins:
          - name: proportion
        """
    )
    warning = only_warning(result)
    assert warning.field == "tiers[0].plugins[0].enableHierarchy"
    assert warning.message == DRF_HIERARCHY_IGNORED


def test_drf_hierarchy_false_with_proportion_is_silent():
    result = parse(
        """
        actions: "allocate"
        tiers:
        - plugins:
          - name: drf
            enableHierarchy: false
          - name: proportion
        """
    )
    assert result.ok and result.warnings == []


def test_capacity_hierarchy_is_plain():
    result = with_plugin("- name: capacity\n  enableHierarchy: true")
    assert result.ok and result.warnings == []
    assert result.config.plugin("capacity").enabled("enableHierarchy")


def test_unknown_key_in_a_tier_and_at_top_level_are_errors():
    result = parse(
        """
        actions: "allocate"
        tier:
        - plugins:
          - name: gang
        """
    )
    assert result.config is None
    fields = {e.field: e for e in result.errors}
    assert "did you mean 'tiers'?" in fields["tier"].message
    assert "missing" in fields["tiers"].message
    text = 'actions: "allocate"\ntiers:\n- plugin:\n  - name: gang\n  plugins:\n  - name: gang\n'
    error = only_error(parse_config(text))
    assert error.field == "tiers[0].plugin" and "did you mean 'plugins'?" in error.message


# ------------------------------------------------------------------------------------------------------------------
# Plugin arguments
# ------------------------------------------------------------------------------------------------------------------


def test_binpack_weight_must_be_a_number():
    result = parse(
        """
        actions: "allocate"
        tiers:
        - plugins:
          - name: gang
        - plugins:
          - name: drf
          - name: predicates
          - name: nodeorder
          - name: binpack
            arguments:
              binpack.weight: ten
        """
    )
    error = only_error(result)
    assert str(error) == "tiers[1].plugins[3].arguments.binpack.weight: expected a number, got 'ten'"
    assert error.line == 11


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("binpack.cpu", "[1]", "expected a number, got a list"),
        ("binpack.memory", "-1", "must be at least 0, got -1"),
        ("binpack.resources", "[nvidia.com/gpu]", "expected a comma-separated string"),
        ("binpack.resources.nvidia.com/gpu", "lots", "expected a number, got 'lots'"),
        ("binpack.weight", ".nan", "expected a finite number"),
        ("binpack.weight", "true", "expected a number, got true"),
    ],
)
def test_binpack_argument_types(key, value, message):
    extra = "\n    binpack.resources: nvidia.com/gpu" if key.startswith("binpack.resources.") else ""
    error = only_error(with_plugin(f"- name: binpack\n  arguments:\n    {key}: {value}{extra}"))
    assert error.field == f"tiers[0].plugins[1].arguments.{key}"
    assert message in error.message


def test_binpack_resources_list_and_weights():
    result = with_plugin(
        '- name: binpack\n  arguments:\n    binpack.resources: "nvidia.com/gpu, example.com/foo ,"\n'
        "    binpack.resources.nvidia.com/gpu: 2\n    binpack.resources.example.com/foo: 3"
    )
    binpack = result.unwrap().plugin("binpack")
    assert binpack.argument("binpack.resources") == ("nvidia.com/gpu", "example.com/foo")
    assert binpack.argument("binpack.resources.example.com/foo") == 3
    assert binpack.argument("binpack.resources.other.com/bar") == 1  # Volcano's default weight
    assert binpack.argument("binpack.weight") == 1


def test_binpack_weight_for_an_unlisted_resource_is_a_warning():
    warning = only_warning(with_plugin("- name: binpack\n  arguments:\n    binpack.resources.nvidia.com/gpu: 5"))
    assert warning.field == "tiers[0].plugins[1].arguments.binpack.resources.nvidia.com/gpu"
    assert "not listed in binpack.resources" in warning.message


def test_unknown_argument_is_a_warning_with_suggestion():
    warning = only_warning(with_plugin("- name: binpack\n  arguments:\n    binpack.wieght: 10"))
    assert warning.field == "tiers[0].plugins[1].arguments.binpack.wieght"
    assert "did you mean 'binpack.weight'?" in warning.message


def test_argument_for_a_plugin_that_reads_none_is_a_warning():
    warning = only_warning(with_plugin("- name: gang\n  arguments:\n    gang.minMember: 3"))
    assert "reads no arguments" in warning.message


def test_magma_placement_plugin_arguments_are_left_to_it():
    result = with_plugin("- name: magma\n  arguments:\n    anything: {nested: [1]}")
    assert result.ok and result.warnings == []
    assert result.config.plugin("magma").argument("anything") == {"nested": [1]}


def test_arguments_must_be_a_mapping():
    error = only_error(with_plugin("- name: binpack\n  arguments: [binpack.weight, 10]"))
    assert error.field == "tiers[0].plugins[1].arguments" and "got a list" in error.message


def test_null_arguments_are_empty():
    result = with_plugin("- name: binpack\n  arguments:")
    assert result.unwrap().plugin("binpack").arguments == {}


@pytest.mark.parametrize(
    "key",
    [
        "leastrequested.weight", "mostrequested.weight", "balancedresource.weight", "nodeaffinity.weight",
        "podaffinity.weight", "tainttoleration.weight", "imagelocality.weight", "podtopologyspread.weight",
    ],
)
def test_nodeorder_weights(key):
    error = only_error(with_plugin(f"- name: nodeorder\n  arguments:\n    {key}: heavy"))
    assert error.field == f"tiers[0].plugins[1].arguments.{key}"
    assert error.message == "expected a number, got 'heavy'"
    nodeorder = with_plugin(f"- name: nodeorder\n  arguments:\n    {key}: 7").unwrap().plugin("nodeorder")
    assert nodeorder.argument(key) == 7


def test_nodeorder_defaults_are_volcanos():
    nodeorder = default_config().plugin("nodeorder")
    assert {
        k: nodeorder.argument(k)
        for k in ("leastrequested.weight", "mostrequested.weight", "balancedresource.weight", "nodeaffinity.weight",
                  "podaffinity.weight", "tainttoleration.weight", "imagelocality.weight", "podtopologyspread.weight")
    } == {
        "leastrequested.weight": 1, "mostrequested.weight": 0, "balancedresource.weight": 1,
        "nodeaffinity.weight": 2, "podaffinity.weight": 2, "tainttoleration.weight": 3,
        "imagelocality.weight": 1, "podtopologyspread.weight": 2,
    }


def test_selectorspread_weight_is_accepted_with_a_warning():
    warning = only_warning(with_plugin("- name: nodeorder\n  arguments:\n    selectorspread.weight: 1"))
    assert "no longer read by Volcano" in warning.message


def test_overcommit_factor():
    error = only_error(with_plugin("- name: overcommit\n  arguments:\n    overcommit-factor: 0.9"))
    assert error.field == "tiers[0].plugins[1].arguments.overcommit-factor"
    assert "at least 1" in error.message
    result = with_plugin("- name: overcommit\n  arguments:\n    overcommit-factor: 1.5")
    overcommit = result.unwrap().plugin("overcommit")
    assert overcommit.argument("overcommit-factor") == 1.5
    assert with_plugin("- name: overcommit\n  arguments:\n    overcommit-factor: 1").ok


def test_sla_waiting_time():
    sla = with_plugin("- name: sla\n  arguments:\n    sla-waiting-time: 1h30m").unwrap().plugin("sla")
    assert sla.argument("sla-waiting-time") == 5400.0
    assert with_plugin("- name: sla").unwrap().plugin("sla").argument("sla-waiting-time") is None
    error = only_error(with_plugin("- name: sla\n  arguments:\n    sla-waiting-time: soon"))
    assert error.field == "tiers[0].plugins[1].arguments.sla-waiting-time"
    assert error.message.startswith("expected a duration:")


@pytest.mark.parametrize("value, seconds", [("2d", 172800.0), ("600", 600.0), ("90", 90.0)])
def test_sla_waiting_time_forms_volcano_cannot_read_warn(value, seconds):
    result = with_plugin(f"- name: sla\n  arguments:\n    sla-waiting-time: {value}")
    warning = only_warning(result)
    assert "Volcano would ignore" in warning.message
    assert result.config.plugin("sla").argument("sla-waiting-time") == seconds


@pytest.mark.parametrize(
    "key",
    [
        "predicate.NodeAffinityEnable", "predicate.NodePortsEnable", "predicate.TaintTolerationEnable",
        "predicate.PodAffinityEnable", "predicate.NodeVolumeLimitsEnable", "predicate.VolumeZoneEnable",
        "predicate.PodTopologySpreadEnable", "predicate.VolumeBindingEnable", "predicate.CacheEnable",
        "predicate.DynamicResourceAllocationEnable",
    ],
)
def test_predicates_enable_flags_are_booleans(key):
    error = only_error(with_plugin(f"- name: predicates\n  arguments:\n    {key}: maybe"))
    assert error.field == f"tiers[0].plugins[1].arguments.{key}"
    assert error.message == "expected true or false, got 'maybe'"
    predicates = with_plugin(f'- name: predicates\n  arguments:\n    {key}: "False"').unwrap().plugin("predicates")
    assert predicates.argument(key) is False


def test_predicates_defaults():
    predicates = default_config().plugin("predicates")
    assert predicates.argument("predicate.NodeAffinityEnable") is True
    assert predicates.argument("predicate.CacheEnable") is False


def test_fairshare_arguments_and_alias():
    fairshare = with_plugin("- name: fairshare").unwrap().plugin("fairshare")
    assert fairshare.argument("fairshare.half-life") == 4 * 3600.0
    assert fairshare.argument("fairshare.usage-weight") == 1.0
    fairshare = with_plugin('- name: fairshare\n  arguments:\n    fairshare.halfLifeMinutes: "90"').unwrap().plugin(
        "fairshare"
    )
    assert fairshare.argument("fairshare.half-life") == 5400.0
    error = only_error(
        with_plugin("- name: fairshare\n  arguments:\n    fairshare.half-life: 1h\n    fairshare.halfLifeMinutes: 60")
    )
    assert "set the same thing" in error.message
    error = only_error(with_plugin("- name: fairshare\n  arguments:\n    fairshare.half-life: 0s"))
    assert "greater than 0" in error.message
    error = only_error(with_plugin("- name: fairshare\n  arguments:\n    fairshare.usage-weight: -1"))
    assert error.field == "tiers[0].plugins[1].arguments.fairshare.usage-weight"


def test_network_topology_aware_arguments():
    nta = with_plugin(
        "- name: network-topology-aware\n  arguments:\n    weight: 10\n    hypernode.binpack.normal-pod.fading: 0.5"
    ).unwrap().plugin("network-topology-aware")
    assert nta.argument("weight") == 10 and nta.argument("hypernode.binpack.normal-pod.fading") == 0.5
    assert nta.argument("hypernode.gradient.evict.max-hypernodes") == 8
    entry = "- name: network-topology-aware\n  arguments:\n    hypernode.gradient.evict.max-hypernodes: 2.5"
    error = only_error(with_plugin(entry))
    assert "expected a whole number" in error.message


# ------------------------------------------------------------------------------------------------------------------
# Quoted numbers and booleans
# ------------------------------------------------------------------------------------------------------------------


def test_numeric_strings_are_numbers_with_a_warning_that_volcano_ignores_them():
    result = with_plugin('- name: binpack\n  arguments:\n    binpack.weight: "10"\n    binpack.cpu: " 2.5 "')
    binpack = result.unwrap().plugin("binpack")
    assert binpack.argument("binpack.weight") == 10 and isinstance(binpack.argument("binpack.weight"), int)
    assert binpack.argument("binpack.cpu") == 2.5
    assert binpack.arguments["binpack.weight"] == "10"  # kept as written
    messages = {w.field: w.message for w in result.warnings}
    assert "Volcano would ignore '10'" in messages["tiers[0].plugins[1].arguments.binpack.weight"]
    assert "magma reads it as 10" in messages["tiers[0].plugins[1].arguments.binpack.weight"]


def test_quoted_float_for_a_float_argument_warns_but_an_int_does_not():
    assert with_plugin("- name: overcommit\n  arguments:\n    overcommit-factor: 2").warnings == []
    result = with_plugin('- name: overcommit\n  arguments:\n    overcommit-factor: "2"')
    assert result.config.plugin("overcommit").argument("overcommit-factor") == 2
    assert len(result.warnings) == 1


@pytest.mark.parametrize(
    "text, value", [('"true"', True), ('"False"', False), ('"1"', True), ('"f"', False), ("yes", True)]
)
def test_string_booleans_are_accepted_as_volcanos_getbool_does(text, value):
    result = with_configuration(f"- name: allocate\n  arguments:\n    predicateErrorCacheEnable: {text}")
    assert result.ok and result.warnings == []
    assert result.config.action_argument("allocate", "predicateErrorCacheEnable") is value


def test_string_that_is_not_a_go_boolean_is_an_error():
    error = only_error(with_configuration('- name: allocate\n  arguments:\n    predicateErrorCacheEnable: "yes"'))
    assert error.field == "configurations[0].arguments.predicateErrorCacheEnable"


# ------------------------------------------------------------------------------------------------------------------
# Action configurations
# ------------------------------------------------------------------------------------------------------------------


def test_preempt_arguments():
    result = with_configuration(
        """
        - name: preempt
          arguments:
            enableTopologyAwarePreemption: true
            topologyAwarePreemptWorkerNum: 4
            minCandidateNodesPercentage: 20
            minCandidateNodesAbsolute: 2
            maxCandidateNodesAbsolute: 50
        """
    )
    config = result.unwrap()
    assert result.warnings == []
    assert config.action_arguments("preempt")["minCandidateNodesPercentage"] == 20
    assert config.action_argument("preempt", "enableTopologyAwarePreemption") is True
    assert config.action_argument("preempt", "maxCandidateNodesAbsolute") == 50
    assert config.action_argument("preempt", "predicateErrorCacheEnable") is True  # Volcano's default
    assert config.action_argument("reclaim", "predicateErrorCacheEnable") is True


def test_preempt_defaults_without_configuration():
    config = default_config()
    assert config.action_argument("preempt", "topologyAwarePreemptWorkerNum") == 16
    assert config.action_argument("preempt", "minCandidateNodesPercentage") == 10
    assert config.action_argument("preempt", "minCandidateNodesAbsolute") == 1
    assert config.action_argument("preempt", "maxCandidateNodesAbsolute") == 100
    assert config.action_argument("preempt", "enableTopologyAwarePreemption") is False


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("enableTopologyAwarePreemption", "2", "expected true or false, got 2"),
        ("topologyAwarePreemptWorkerNum", "many", "expected a number, got 'many'"),
        ("topologyAwarePreemptWorkerNum", "0", "must be at least 1"),
        ("minCandidateNodesPercentage", "150", "must be at most 100"),
        ("minCandidateNodesPercentage", "12.5", "expected a whole number"),
        ("maxCandidateNodesAbsolute", "{a: 1}", "expected a number, got a mapping"),
    ],
)
def test_preempt_argument_errors(key, value, message):
    error = only_error(with_configuration(f"- name: preempt\n  arguments:\n    {key}: {value}"))
    assert error.field == f"configurations[0].arguments.{key}"
    assert message in error.message


def test_preempt_min_above_max_candidates_is_an_error():
    error = only_error(
        with_configuration(
            "- name: preempt\n  arguments:\n    minCandidateNodesAbsolute: 10\n    maxCandidateNodesAbsolute: 5"
        )
    )
    assert "above maxCandidateNodesAbsolute" in error.message


def test_configuration_for_an_action_not_in_actions_is_a_warning():
    result = with_configuration("- name: preempt\n  arguments:\n    minCandidateNodesAbsolute: 2", actions="allocate")
    warning = only_warning(result)
    assert warning.field == "configurations[0].name" and warning.line == 6
    assert "not in 'actions'" in warning.message
    assert result.config.action_arguments("preempt") == {"minCandidateNodesAbsolute": 2}


def test_configuration_for_an_unknown_action_is_an_error():
    error = only_error(with_configuration("- name: alocate\n  arguments: {}"))
    assert error.field == "configurations[0].name" and "did you mean 'allocate'?" in error.message


def test_two_configurations_for_one_action_is_an_error():
    error = only_error(with_configuration("- name: allocate\n- name: allocate"))
    assert error.field == "configurations[1].name" and "second configuration" in error.message


def test_configurations_shape_errors():
    assert only_error(parse_config(MINIMAL + "configurations: {allocate: {}}\n")).field == "configurations"
    assert only_error(with_configuration("- arguments: {}")).field == "configurations[0]"
    error = only_error(with_configuration("- name: allocate\n  args: {}"))
    assert error.field == "configurations[0].args" and "did you mean 'arguments'?" in error.message


def test_unknown_action_argument_is_a_warning():
    warning = only_warning(with_configuration("- name: allocate\n  arguments:\n    predicateErrorCacheEnabled: true"))
    assert "did you mean 'predicateErrorCacheEnable'?" in warning.message


def test_metrics_are_kept_as_strings():
    result = parse_config(MINIMAL + "metrics:\n  address: http://prometheus:9090\n  interval: 30\n")
    assert result.unwrap().metrics == {"address": "http://prometheus:9090", "interval": "30"}
    assert only_error(parse_config(MINIMAL + "metrics: [a]\n")).field == "metrics"


# ------------------------------------------------------------------------------------------------------------------
# Malformed input never raises
# ------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, field, fragment",
    [
        ("", "", "empty"),
        ("# only a comment\n", "", "empty"),
        ("actions: [", "", "not valid YAML"),
        ("- actions: allocate\n", "", "expected a mapping"),
        ("42\n", "", "got 42"),
        ("actions: allocate\ntiers: {plugins: [name: gang]}\n", "tiers", "expected a list of tiers"),
        ("actions: allocate\ntiers:\n- plugins: gang\n", "tiers[0].plugins", "expected a list of plugins"),
        ("actions: allocate\ntiers:\n- [gang]\n", "tiers[0]", "expected a mapping"),
        ("--- {}\n--- {}\n", "", "single document"),
        ("&a [*a]\n", "[0]", "recursive"),
        ("actions: !!python/object:os.system x\n", "", "not valid YAML"),
        ("a: 1\na: 2\n", "a", "duplicate key"),
    ],
)
def test_malformed_input_becomes_problems(text, field, fragment):
    result = parse_config(text)
    assert result.config is None
    assert any(e.field == field and fragment in e.message for e in result.errors), result.messages()


def test_alias_bomb_is_refused_quickly():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]")
    result = parse_config("\n".join(lines))
    assert result.config is None and "too large" in result.errors[0].message


def test_yaml_error_reports_its_line():
    result = parse_config('actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    arguments: {a: [}\n')
    assert result.errors[0].line == 5


def test_non_string_input_is_a_problem():
    assert parse_config(None).errors  # type: ignore[arg-type]


def test_anchors_and_merge_keys_work():
    result = parse(
        """
        actions: "allocate"
        tiers:
        - plugins:
          - name: binpack
            arguments: &weights
              binpack.weight: 3
          - name: nodeorder
            arguments:
              <<: {leastrequested.weight: 4}
              balancedresource.weight: 5
        """
    )
    config = result.unwrap()
    assert config.plugin("binpack").argument("binpack.weight") == 3
    assert config.plugin("nodeorder").argument("leastrequested.weight") == 4
    assert config.plugin("nodeorder").argument("balancedresource.weight") == 5


# ------------------------------------------------------------------------------------------------------------------
# ConfigMap, results, dumping
# ------------------------------------------------------------------------------------------------------------------


def test_config_from_configmap_needs_the_key():
    result = config_from_configmap({"volcano-scheduler.yaml": MINIMAL})
    error = only_error(result)
    assert error.field == "data"
    assert "volcano-scheduler.conf" in error.message and "did you mean 'volcano-scheduler.yaml'?" in error.message
    assert only_error(config_from_configmap({"volcano-scheduler.conf": 5})).field == "data.volcano-scheduler.conf"
    assert only_error(config_from_configmap(["x"])).field == "data"
    assert config_from_configmap({"volcano-scheduler.conf": MINIMAL}).ok


def test_unwrap_raises_config_error_listing_every_error():
    result = parse_config('actions: "alocate"\ntiers: []\n', source="cm.yaml")
    with pytest.raises(ConfigError) as info:
        result.unwrap()
    assert "cm.yaml:1: actions[0]: unknown action 'alocate'" in str(info.value)
    assert "cm.yaml:2: tiers: empty" in str(info.value)
    assert info.value.result is result


def test_messages_mark_warnings():
    result = seed_result()
    (line,) = result.messages()
    assert line.startswith("ConfigMap volcano-scheduler-configmap:12: tiers[1].plugins[1].enableHierarchy: warning: ")


def test_to_yaml_round_trips():
    config = seed_result().unwrap()
    text = config.to_yaml()
    assert text.startswith('actions: "enqueue, allocate, preempt, backfill"\n')
    again = parse_config(text)
    assert again.config == config
    assert [w.field for w in again.warnings] == ["tiers[1].plugins[1].enableHierarchy"]
    with_confs = with_configuration("- name: allocate\n  arguments:\n    predicateErrorCacheEnable: false").unwrap()
    assert parse_config(with_confs.to_yaml()).config == with_confs


def test_scheduler_config_is_a_pydantic_model():
    config = default_config()
    assert isinstance(config, SchedulerConfig)
    dumped = config.model_dump()
    assert SchedulerConfig.model_validate(dumped) == config


# ------------------------------------------------------------------------------------------------------------------
# Durations
# ------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("90s", 90.0),
        ("15m", 900.0),
        ("1h30m", 5400.0),
        ("2d", 172800.0),
        ("1.5h", 5400.0),
        ("250ms", 0.25),
        ("1m30s", 90.0),
        ("90", 90.0),
        ("2.5", 2.5),
        (" 10s ", 10.0),
        ("0", 0.0),
        ("-0s", 0.0),
        ("+5s", 5.0),
        (".5m", 30.0),
        ("1h2m3s4ms5us6ns", 3723.004005006),
        ("7\u00b5s", 7e-6),
        (42, 42.0),
        (1.5, 1.5),
    ],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "empty"),
        ("  ", "empty"),
        ("-5s", "cannot be negative"),
        (-1, "finite number of seconds >= 0"),
        ("1h30", "missing unit after '30'"),
        ("10x", "unknown unit 'x'"),
        ("1w", "unknown unit 'w'"),
        ("h", "expected a number"),
        ("1h 30m", "expected a number"),
        ("1e3", "unknown unit 'e'"),
        ("soon", "expected a number"),
        (True, "expected a duration"),
        (None, "expected a duration"),
        (float("inf"), "finite"),
        ("9" * 400 + "s", "too large"),
    ],
)
def test_parse_duration_errors(text, fragment):
    with pytest.raises(ValueError) as info:
        parse_duration(text)
    assert fragment in str(info.value)
    if isinstance(text, str) and text.strip() not in ("", "-"):
        assert "'90s', '15m', '1h30m', '2d' or a number of seconds" in str(info.value) or "negative" in str(
            info.value
        ) or "too large" in str(info.value)


def test_drf_hierarchy_without_proportion_is_real_and_silent():
    result = parse(
        """
        actions: "allocate"
        tiers:
        - plugins:
          - name: drf
            enableHierarchy: true
          - name: predicates
        """
    )
    assert result.errors == [] and result.warnings == []
    assert result.config.plugin("drf").enabled("enableHierarchy")
