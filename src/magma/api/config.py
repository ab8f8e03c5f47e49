"""The scheduler configuration: Volcano's `volcano-scheduler.conf`, read as Volcano reads it, checked more strictly.

The text is the value of key `volcano-scheduler.conf` in ConfigMap `volcano-scheduler-configmap`:

    actions: "enqueue, allocate, backfill"       # comma-separated, run in this order every session
    tiers:                                       # plugins grouped in tiers; order matters for voting
    - plugins:
      - name: gang
        enableJobStarving: false                 # per-plugin flags (exact Volcano spellings, see FLAG_DEFAULTS)
        arguments: {...}                         # plugin arguments (see PLUGIN_ARGUMENTS)
    configurations:                              # per-action arguments (see ACTION_ARGUMENTS)
    - name: allocate
      arguments: {predicateErrorCacheEnable: true}
    metrics: {...}                               # kept as strings, as Volcano does

`parse_config` never raises on bad input: every problem becomes a `ConfigProblem` naming the field path
(`tiers[1].plugins[3].arguments.binpack.weight`) and the line inside the conf text.

Where magma differs from Volcano (deliberately, each stated in the problem's message):
- Typos are errors. Volcano's YAML decoding silently drops unknown keys, so `enablePreemptible: false` or a
  misspelt top-level key has no effect there; magma refuses them with a did-you-mean. Unknown *argument* keys
  are only warnings, since arguments are an open map that plugins read piecemeal.
- Plugins: the ones magma implements are MAGMA_PLUGINS. Volcano plugins magma does not implement
  (VOLCANO_ONLY_PLUGINS, e.g. tdm, deviceshare) are accepted with a warning and ignored; names neither knows are
  errors (Volcano would log and skip them).
- Actions: magma runs enqueue, allocate, backfill, preempt and reclaim. `shuffle` is accepted with a warning and
  skipped: it only evicts victims chosen by the rescheduling plugin, which magma does not implement, so it would
  do nothing. `gangpreempt` and `gangreclaim` are errors: skipping them would silently remove preemption or
  reclaim from the schedule. `SchedulerConfig.actions` keeps the names as written; `runnable_actions` is what
  magma runs; likewise `Tier.runnable_plugins`.
- Arguments: numbers may be quoted (`binpack.weight: "10"`) and booleans may be the strings Go's
  strconv.ParseBool takes ("true", "False", "1", ...). Volcano's GetBool reads such strings too, but its
  GetInt/GetFloat64 ignore a quoted number (and GetInt a fractional one) and keep the default; magma uses the
  value and warns about the difference. Out-of-range values (negative weights, overcommit-factor < 1) are
  errors, where Volcano silently resets some of them to defaults.
- `PluginOption.argument(key)` / `SchedulerConfig.action_argument(action, key)` give typed values with Volcano's
  defaults (PLUGIN_ARGUMENTS, ACTION_ARGUMENTS); `.arguments` keeps what was written.
- Durations (`sla-waiting-time`, `fairshare.half-life`) take Go's syntax plus magma's `2d` and bare seconds
  (see magma.api.duration); a form Go cannot parse gets a warning that Volcano would ignore it.
- drf with `enableHierarchy: true` in the same tier as proportion is an error in Volcano. magma accepts it with
  a warning stating its reading (DRF_HIERARCHY_WITH_PROPORTION): proportion shares along Queue spec.parent, drf
  orders jobs within a queue and its hierarchy flag is ignored. drf's enableHierarchy elsewhere is ignored with
  a warning too: magma has no annotation-based hierarchical DRF. capacity's enableHierarchy keeps its meaning.
- proportion and capacity together are an error (Volcano documents that they cannot be used together), as are a
  plugin listed twice, two configurations for one action, and empty `actions` or `tiers`.

The `fairshare` plugin is not in Volcano's tree (an unmerged Volcano PR, #5161, proposes one). magma's version
orders jobs within a queue by decayed historical usage per namespace. Its arguments:
  fairshare.half-life (duration > 0, default 4h): half-life of the exponential decay of past usage;
  fairshare.usage-weight (number >= 0, default 1): weight of decayed past usage against current allocation when
    ranking namespaces; 0 ranks by current allocation only;
and, for configs written for that PR, fairshare.halfLifeMinutes (alias of half-life in minutes; setting both is
an error), fairshare.targetQueues ("q1,q2"; default all queues), fairshare.resourceKey (default
"nvidia.com/gpu"), fairshare.resourceKey.<queue>, fairshare.enableEnqueueGate (default false),
fairshare.persistState, fairshare.stateNamespace, fairshare.stateConfigMap, fairshare.flushIntervalSeconds.

The `reservation` plugin is magma's too (reservations for big gangs and backfill around them,
docs/reservation-backfill.md); `default_config()` is Volcano's default plus this plugin, `volcano_default_config()`
Volcano's exactly. Its arguments:
  reservation.maxJobs (integer >= 0, default 4): most jobs reserved for per session (Slurm's bf_max_job_test);
  reservation.window (duration > 0, default 24h): how far ahead a planned start may lie (Slurm's bf_window);
  reservation.enqueue (bool, default true): enqueue admits the job first in line and jobs that fit now past the
    load gates (overcommit, proportion, capacity).
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field as dc_field
from typing import Any, Literal, Mapping

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from .duration import parse_duration

__all__ = [
    "CONFIGMAP_NAME",
    "CONFIGMAP_KEY",
    "DEFAULT_CONF",
    "VOLCANO_DEFAULT_CONF",
    "FLAG_DEFAULTS",
    "MAGMA_ACTIONS",
    "MAGMA_PLUGINS",
    "VOLCANO_ONLY_PLUGINS",
    "PLUGIN_ARGUMENTS",
    "ACTION_ARGUMENTS",
    "ArgSpec",
    "PluginOption",
    "Tier",
    "ActionConfiguration",
    "SchedulerConfig",
    "ConfigProblem",
    "ConfigResult",
    "ConfigError",
    "parse_config",
    "default_config",
    "volcano_default_config",
    "config_from_configmap",
]

CONFIGMAP_NAME = "volcano-scheduler-configmap"
CONFIGMAP_KEY = "volcano-scheduler.conf"

# Volcano's built-in config (pkg/scheduler/util.go).
VOLCANO_DEFAULT_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""
# magma's default, used when no config is given: Volcano's plus the reservation plugin (reservations for big gangs
# and backfill around them, docs/reservation-backfill.md). VOLCANO_DEFAULT_CONF gives Volcano's behaviour.
DEFAULT_CONF = VOLCANO_DEFAULT_CONF + "  - name: reservation\n"

# ---------------------------------------------------------------------------------------------------------------
# Vocabulary
# ---------------------------------------------------------------------------------------------------------------

# Plugin flags with Volcano's spellings (note the irregular "enabled..." ones) and their values when unset:
# Volcano defaults every flag to true except these two, which stay nil and read as false.
FLAG_DEFAULTS: dict[str, bool] = {
    "enableJobOrder": True,
    "enableHierarchy": False,
    "enableJobReady": True,
    "enableJobPipelined": True,
    "enableTaskOrder": True,
    "enablePreemptable": True,
    "enableReclaimable": True,
    "enablePreemptive": True,
    "enableQueueOrder": True,
    "enabledClusterOrder": False,
    "enablePredicate": True,
    "enableBestNode": True,
    "enableNodeOrder": True,
    "enableTargetJob": True,
    "enableReservedNodes": True,
    "enableJobEnqueued": True,
    "enabledVictim": True,
    "enableJobStarving": True,
    "enabledOverused": True,
    "enabledAllocatable": True,
    "enabledHyperNodeOrder": True,
    "enabledSubJobReady": True,
    "enabledSubJobPipelined": True,
    "enabledSubJobOrder": True,
    "enabledHyperNodeGradient": True,
}

MAGMA_ACTIONS = ("enqueue", "allocate", "backfill", "preempt", "reclaim")
# Volcano actions magma does not run: accepted and skipped (with a warning) ...
SKIPPED_ACTIONS = {
    "shuffle": "it only evicts victims chosen by the rescheduling plugin, which magma does not implement",
}
# ... or refused, because skipping them would change what the schedule does.
UNSUPPORTED_ACTIONS = {
    "gangpreempt": "use 'preempt' (magma's preempt keeps gangs whole)",
    "gangreclaim": "use 'reclaim' (magma's reclaim keeps gangs whole)",
}
VOLCANO_ACTIONS = (*MAGMA_ACTIONS, *SKIPPED_ACTIONS, *UNSUPPORTED_ACTIONS)

MAGMA_PLUGINS = (
    "gang",
    "priority",
    "conformance",
    "drf",
    "proportion",
    "capacity",
    "predicates",
    "nodeorder",
    "binpack",
    "task-topology",
    "overcommit",
    "sla",
    "fairshare",
    "network-topology-aware",
    "magma",
    "reservation",
)
# Registered in Volcano's pkg/scheduler/plugins/factory.go but not implemented by magma.
VOLCANO_ONLY_PLUGINS = (
    "cdp",
    "deviceshare",
    "extender",
    "nodegroup",
    "numa-aware",
    "pdb",
    "rescheduling",
    "resource-strategy-fit",
    "resourcequota",
    "tdm",
    "usage",
)

DRF_HIERARCHY_WITH_PROPORTION = (
    "drf has enableHierarchy: true in the same tier as proportion, a combination Volcano rejects "
    "(\"proportion and drf with hierarchy enabled conflicts\"). magma accepts it and reads it as follows: "
    "proportion computes each queue's deserved resources along the queue hierarchy given by Queue spec.parent; "
    "drf orders jobs (and preemption victims) by dominant resource share within their queue, and its "
    "enableHierarchy flag is ignored because the queue hierarchy comes from spec.parent, not from drf's "
    "volcano.sh/hierarchy annotations"
)
DRF_HIERARCHY_IGNORED = (
    "proportion is configured in another tier and computes queue shares along Queue spec.parent, so drf's "
    "annotation-based hierarchy (volcano.sh/hierarchy, volcano.sh/hierarchy-weights) is ignored: drf orders jobs "
    "by dominant resource share within their queue"
)

# ---------------------------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------------------------

Kind = Literal["number", "integer", "bool", "string", "csv", "duration", "list", "any"]
# What Volcano's reader of an argument takes as is; anything else it ignores (keeping its default).
VolcanoReader = Literal["int", "float", "bool", "string", "duration"] | None

_NUMERIC = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")
# The strings Go's strconv.ParseBool accepts (Volcano's GetBool reads string arguments with it).
_PARSE_BOOL = {s: True for s in ("1", "t", "T", "TRUE", "true", "True")} | {
    s: False for s in ("0", "f", "F", "FALSE", "false", "False")
}
_GO_DURATION = re.compile(r"[+-]?(?:0|(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h))+)")
_READER_TEXT = {
    "int": "an unquoted whole number",
    "float": "an unquoted number",
    "string": "a string",
    "duration": "a Go duration string such as '1h30m', without a 'd' unit or bare seconds",
}


@dataclass(frozen=True)
class ArgSpec:
    """How magma reads one argument, and how Volcano's reader of it differs."""

    kind: Kind
    default: Any = None
    minimum: float | None = None
    exclusive: bool = False  # minimum itself not allowed
    maximum: float | None = None
    volcano: VolcanoReader = None
    alias_of: str | None = None  # another spelling of that key, whose value is this one times `scale`
    scale: float = 1.0
    obsolete: str | None = None  # accepted, but this warning is given

    def convert(self, raw: Any) -> Any:
        """The typed value of `raw`, or ValueError with a message like "expected a number, got 'ten'"."""
        kind = self.kind
        if kind in ("number", "integer"):
            value = _number(raw)
            if kind == "integer":
                if isinstance(value, float):
                    if not value.is_integer():
                        raise ValueError(f"expected a whole number, got {_describe(raw)}")
                    value = int(value)
            self._check_range(value)
            return value
        if kind == "bool":
            if isinstance(raw, bool):
                return raw
            if isinstance(raw, str) and raw in _PARSE_BOOL:
                return _PARSE_BOOL[raw]
            raise ValueError(f"expected true or false, got {_describe(raw)}")
        if kind == "string":
            if isinstance(raw, str):
                return raw
            raise ValueError(f"expected a string, got {_describe(raw)}")
        if kind == "csv":
            if isinstance(raw, str):
                return tuple(part.strip() for part in raw.split(",") if part.strip())
            raise ValueError(f'expected a comma-separated string such as "a, b", got {_describe(raw)}')
        if kind == "duration":
            try:
                value = parse_duration(raw)
            except ValueError as e:
                raise ValueError(f"expected a duration: {e}") from None
            self._check_range(value)
            return value
        if kind == "list":
            if isinstance(raw, list):
                return raw
            raise ValueError(f"expected a list, got {_describe(raw)}")
        return raw

    def _check_range(self, value: float) -> None:
        if self.minimum is not None:
            if self.exclusive and value <= self.minimum:
                raise ValueError(f"must be greater than {self.minimum:g}, got {_describe(value)}")
            if value < self.minimum:
                raise ValueError(f"must be at least {self.minimum:g}, got {_describe(value)}")
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"must be at most {self.maximum:g}, got {_describe(value)}")

    def volcano_ignores(self, raw: Any) -> bool:
        """Whether Volcano's reader would drop `raw` (that magma accepted) and keep its default."""
        reader = self.volcano
        if reader == "int":
            return type(raw) is not int
        if reader == "float":
            return type(raw) not in (int, float)
        if reader == "string":
            return not isinstance(raw, str)
        if reader == "duration":
            return not (isinstance(raw, str) and _GO_DURATION.fullmatch(raw))
        return False


@dataclass(frozen=True)
class ArgTable:
    """The arguments one plugin or action reads: exact keys, and key prefixes such as `binpack.resources.`."""

    exact: Mapping[str, ArgSpec]
    prefixes: Mapping[str, ArgSpec] = dc_field(default_factory=dict)
    open: bool = False  # read by code outside this module: no warning for keys not listed
    # (key of a "a,b" resource list, prefix of per-resource weights): a weight for an unlisted resource is unused
    resource_list: tuple[str, str] | None = None

    def lookup(self, key: str) -> ArgSpec | None:
        if key in self.exact:
            return self.exact[key]
        for prefix, spec in self.prefixes.items():
            if key.startswith(prefix) and len(key) > len(prefix):
                return spec
        return None

    def names(self) -> list[str]:
        return [*self.exact, *(p + "<name>" for p in self.prefixes)]


def _weight(default: float = 1) -> ArgSpec:
    """A score weight: Volcano reads it as an int; magma takes any number >= 0."""
    return ArgSpec("number", default=default, minimum=0, volcano="int")


_NO_ARGUMENTS = ArgTable({})
_PREDICATE_FLAGS = (
    "NodeAffinity",
    "NodePorts",
    "TaintToleration",
    "PodAffinity",
    "NodeVolumeLimits",
    "VolumeZone",
    "PodTopologySpread",
    "VolumeBinding",
)

# Keys, defaults and readers follow each Volcano plugin's source; magma's own plugins are documented above.
PLUGIN_ARGUMENTS: dict[str, ArgTable] = {
    "gang": _NO_ARGUMENTS,
    "priority": _NO_ARGUMENTS,
    "conformance": _NO_ARGUMENTS,
    "drf": _NO_ARGUMENTS,
    "proportion": _NO_ARGUMENTS,
    "capacity": ArgTable(
        {
            "ancestorReclaimLevel": ArgSpec("integer", default=0, minimum=0, volcano="int"),
            "capacity.DynamicResourceAllocationEnable": ArgSpec("bool", default=False, volcano="bool"),
            "capacity.DRAConsumableCapacityEnable": ArgSpec("bool", default=False, volcano="bool"),
        }
    ),
    "predicates": ArgTable(
        {
            **{f"predicate.{n}Enable": ArgSpec("bool", default=True, volcano="bool") for n in _PREDICATE_FLAGS},
            "predicate.DynamicResourceAllocationEnable": ArgSpec("bool", default=None, volcano="bool"),
            "predicate.CacheEnable": ArgSpec("bool", default=False, volcano="bool"),
            "volumebinding.weight": _weight(),
            "volumebinding.bindTimeoutSeconds": ArgSpec("integer", default=600, minimum=0, volcano="int"),
            "volumebinding.shape": ArgSpec("list"),
            "dynamicresources.filterTimeoutSeconds": ArgSpec("integer", default=10, minimum=0, volcano="int"),
        }
    ),
    "nodeorder": ArgTable(
        {
            "leastrequested.weight": _weight(1),
            "mostrequested.weight": _weight(0),
            "balancedresource.weight": _weight(1),
            "nodeaffinity.weight": _weight(2),
            "podaffinity.weight": _weight(2),
            "tainttoleration.weight": _weight(3),
            "imagelocality.weight": _weight(1),
            "podtopologyspread.weight": _weight(2),
            "selectorspread.weight": ArgSpec(
                "number",
                default=0,
                minimum=0,
                obsolete="selectorspread.weight is no longer read by Volcano (the SelectorSpread score was removed "
                "with Kubernetes 1.29) and magma ignores it too; use podtopologyspread.weight",
            ),
        }
    ),
    "binpack": ArgTable(
        {
            "binpack.weight": _weight(1),
            "binpack.cpu": _weight(1),
            "binpack.memory": _weight(1),
            "binpack.resources": ArgSpec("csv", default=(), volcano="string"),
        },
        prefixes={"binpack.resources.": _weight(1)},
        resource_list=("binpack.resources", "binpack.resources."),
    ),
    "task-topology": ArgTable({"task-topology.weight": _weight(1)}),
    "overcommit": ArgTable(
        {"overcommit-factor": ArgSpec("number", default=1.2, minimum=1.0, volcano="float")},
    ),
    "sla": ArgTable({"sla-waiting-time": ArgSpec("duration", default=None, minimum=0, volcano="duration")}),
    "fairshare": ArgTable(
        {
            "fairshare.half-life": ArgSpec("duration", default=4 * 3600.0, minimum=0, exclusive=True),
            "fairshare.usage-weight": ArgSpec("number", default=1.0, minimum=0),
            "fairshare.halfLifeMinutes": ArgSpec(
                "number", minimum=0, exclusive=True, alias_of="fairshare.half-life", scale=60.0
            ),
            "fairshare.targetQueues": ArgSpec("csv", default=()),
            "fairshare.resourceKey": ArgSpec("string", default="nvidia.com/gpu"),
            "fairshare.enableEnqueueGate": ArgSpec("bool", default=False),
            "fairshare.persistState": ArgSpec("bool", default=False),
            "fairshare.stateNamespace": ArgSpec("string", default="volcano-system"),
            "fairshare.stateConfigMap": ArgSpec("string", default="fairshare-usage-state"),
            "fairshare.flushIntervalSeconds": ArgSpec("number", default=30, minimum=0, exclusive=True),
        },
        prefixes={"fairshare.resourceKey.": ArgSpec("string")},
    ),
    "network-topology-aware": ArgTable(
        {
            "weight": _weight(1),
            "hypernode.binpack.cpu": _weight(1),
            "hypernode.binpack.memory": _weight(1),
            "hypernode.binpack.resources": ArgSpec("csv", default=(), volcano="string"),
            "hypernode.binpack.normal-pod.enable": ArgSpec("bool", default=True, volcano="bool"),
            "hypernode.binpack.normal-pod.fading": ArgSpec("number", default=0.8, minimum=0, volcano="float"),
            "hypernode.gradient.evict.max-hypernodes": ArgSpec("integer", default=8, minimum=1, volcano="int"),
        },
        prefixes={"hypernode.binpack.resources.": _weight(1)},
        resource_list=("hypernode.binpack.resources", "hypernode.binpack.resources."),
    ),
    # magma's placement plugin validates its own arguments.
    "magma": ArgTable({}, open=True),
    # magma's reservation and backfill of big gangs (docs/reservation-backfill.md); not a Volcano plugin.
    "reservation": ArgTable(
        {
            "reservation.maxJobs": ArgSpec("integer", default=4, minimum=0),
            "reservation.window": ArgSpec("duration", default=24 * 3600.0, minimum=0, exclusive=True),
            "reservation.enqueue": ArgSpec("bool", default=True),
        }
    ),
}

_PREDICATE_CACHE = {"predicateErrorCacheEnable": ArgSpec("bool", default=True, volcano="bool")}
ACTION_ARGUMENTS: dict[str, ArgTable] = {
    "enqueue": _NO_ARGUMENTS,
    "allocate": ArgTable(_PREDICATE_CACHE),
    "backfill": ArgTable(_PREDICATE_CACHE),
    "reclaim": ArgTable(_PREDICATE_CACHE),
    "preempt": ArgTable(
        {
            **_PREDICATE_CACHE,
            "enableTopologyAwarePreemption": ArgSpec("bool", default=False, volcano="bool"),
            "topologyAwarePreemptWorkerNum": ArgSpec("integer", default=16, minimum=1, volcano="int"),
            "minCandidateNodesPercentage": ArgSpec("integer", default=10, minimum=0, maximum=100, volcano="int"),
            "minCandidateNodesAbsolute": ArgSpec("integer", default=1, minimum=0, volcano="int"),
            "maxCandidateNodesAbsolute": ArgSpec("integer", default=100, minimum=1, volcano="int"),
        }
    ),
    "shuffle": _NO_ARGUMENTS,
}

_UNSET: Any = object()


def _typed_argument(table: ArgTable | None, arguments: Mapping[str, Any], key: str, default: Any) -> Any:
    spec = table.lookup(key) if table else None
    if key in arguments:
        return spec.convert(arguments[key]) if spec else arguments[key]
    if table:  # another spelling of the same setting
        for alias, alias_spec in table.exact.items():
            if alias_spec.alias_of == key and alias in arguments:
                return alias_spec.convert(arguments[alias]) * alias_spec.scale
    if default is not _UNSET:
        return default
    return spec.default if spec else None


# ---------------------------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------------------------


class PluginOption(BaseModel):
    """One plugin entry of a tier. `flags` holds only the flags written in the config."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    flags: dict[str, bool] = Field(default_factory=dict)
    arguments: dict[str, Any] = Field(default_factory=dict)

    @field_validator("flags")
    @classmethod
    def _known_flags(cls, flags: dict[str, bool]) -> dict[str, bool]:
        for flag in flags:
            if flag not in FLAG_DEFAULTS:
                raise ValueError(f"unknown plugin flag {flag!r}{_suggest(flag, FLAG_DEFAULTS)}")
        return flags

    def enabled(self, flag: str) -> bool:
        """The effective value of a flag (Volcano spelling): as written, else Volcano's default."""
        if flag not in FLAG_DEFAULTS:
            raise ValueError(f"unknown plugin flag {flag!r}{_suggest(flag, FLAG_DEFAULTS)}")
        return self.flags.get(flag, FLAG_DEFAULTS[flag])

    @property
    def implemented(self) -> bool:
        """False for Volcano plugins that magma accepts but ignores."""
        return self.name in MAGMA_PLUGINS

    def argument(self, key: str, default: Any = _UNSET) -> Any:
        """The typed value of an argument (numbers as int/float, durations in seconds, "a,b" lists as tuples);
        when absent, `default` if given, else the plugin's own default (None where it has none)."""
        return _typed_argument(PLUGIN_ARGUMENTS.get(self.name), self.arguments, key, default)

    def to_volcano(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        out.update((f, self.flags[f]) for f in FLAG_DEFAULTS if f in self.flags)
        if self.arguments:
            out["arguments"] = dict(self.arguments)
        return out


class Tier(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    plugins: list[PluginOption]

    @property
    def runnable_plugins(self) -> list[PluginOption]:
        """The plugins magma runs, in order (Volcano-only plugins left out)."""
        return [p for p in self.plugins if p.implemented]


class ActionConfiguration(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    def argument(self, key: str, default: Any = _UNSET) -> Any:
        return _typed_argument(ACTION_ARGUMENTS.get(self.name), self.arguments, key, default)


class SchedulerConfig(BaseModel):
    """A checked `volcano-scheduler.conf`. Build it with `parse_config` or `default_config`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    actions: list[str]
    tiers: list[Tier]
    configurations: list[ActionConfiguration] = Field(default_factory=list)
    metrics: dict[str, str] = Field(default_factory=dict)

    @property
    def runnable_actions(self) -> list[str]:
        """The actions magma runs each session, in order (`shuffle` left out)."""
        return [a for a in self.actions if a in MAGMA_ACTIONS]

    def plugins(self) -> list[PluginOption]:
        """All plugin entries, tier by tier, in order."""
        return [p for tier in self.tiers for p in tier.plugins]

    def plugin(self, name: str) -> PluginOption | None:
        return next((p for p in self.plugins() if p.name == name), None)

    def action_arguments(self, name: str) -> dict[str, Any]:
        """The raw arguments configured for an action ({} when none), as Volcano hands them to the action."""
        conf = next((c for c in self.configurations if c.name == name), None)
        return dict(conf.arguments) if conf else {}

    def action_argument(self, action: str, key: str, default: Any = _UNSET) -> Any:
        """Typed action argument, falling back to Volcano's default for that action."""
        args = self.action_arguments(action)
        return _typed_argument(ACTION_ARGUMENTS.get(action), args, key, default)

    def to_volcano(self) -> dict[str, Any]:
        """The plain structure Volcano reads (actions as one comma-separated string)."""
        out: dict[str, Any] = {
            "actions": ", ".join(self.actions),
            "tiers": [{"plugins": [p.to_volcano() for p in t.plugins]} for t in self.tiers],
        }
        if self.configurations:
            out["configurations"] = [{"name": c.name, "arguments": dict(c.arguments)} for c in self.configurations]
        if self.metrics:
            out["metrics"] = dict(self.metrics)
        return out

    def to_yaml(self) -> str:
        """`volcano-scheduler.conf` text that parses back to an equal config."""
        doc = self.to_volcano()
        doc["actions"] = _Quoted(doc["actions"])  # written as Volcano's docs write it: actions: "a, b"
        return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False)


class _Quoted(str):
    pass


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Quoted, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", str(s), style='"'))


class ConfigProblem(BaseModel):
    model_config = ConfigDict(frozen=True)

    field: str  # dotted path, e.g. tiers[1].plugins[2].enableHierarchy ("" for the whole document)
    message: str
    line: int | None = None  # 1-based, inside the conf text

    def __str__(self) -> str:
        return f"{self.field or '-'}: {self.message}"

    def format(self, source: str, severity: Literal["error", "warning"] = "error") -> str:
        """`SOURCE:LINE: FIELD: REASON`, with `warning:` before the reason of a warning."""
        reason = f"warning: {self.message}" if severity == "warning" else self.message
        return f"{source}:{self.line if self.line is not None else '-'}: {self.field or '-'}: {reason}"


class ConfigResult(BaseModel):
    source: str = "<config>"
    config: SchedulerConfig | None = None  # None whenever there are errors
    errors: list[ConfigProblem] = Field(default_factory=list)
    warnings: list[ConfigProblem] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.config is not None

    def messages(self) -> list[str]:
        """Every problem as one line, errors first."""
        return [p.format(self.source) for p in self.errors] + [p.format(self.source, "warning") for p in self.warnings]

    def unwrap(self) -> SchedulerConfig:
        """The config, or ConfigError listing the errors."""
        if self.config is None:
            raise ConfigError(self)
        return self.config


class ConfigError(ValueError):
    def __init__(self, result: ConfigResult):
        self.result = result
        lines = [p.format(result.source) for p in result.errors]
        super().__init__("invalid scheduler configuration:\n" + "\n".join(lines))


# ---------------------------------------------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------------------------------------------


def parse_config(text: str, source: str = "<config>") -> ConfigResult:
    """Read `volcano-scheduler.conf` text. Never raises on bad input; see ConfigResult."""
    parser = _Parser()
    config = None
    try:
        doc = parser.load(text)
        if doc is not _FAILED:
            config = parser.parse(doc)
    except Exception as e:  # a bug here must not take the scheduler down; say so plainly
        parser.error((), f"internal error while reading the configuration ({type(e).__name__}: {e})")
    if parser.errors:
        config = None
    return ConfigResult(source=source, config=config, errors=parser.errors, warnings=parser.warnings)


def default_config() -> SchedulerConfig:
    """magma's default config: Volcano's built-in one (actions enqueue, allocate, backfill; tiers [priority, gang,
    conformance], [overcommit, drf, predicates, proportion, nodeorder]) with the reservation plugin added at the end
    of the second tier."""
    return parse_config(DEFAULT_CONF, "<default>").unwrap()


def volcano_default_config() -> SchedulerConfig:
    """Volcano's built-in config, exactly (no reservations: big gangs can starve behind small jobs)."""
    return parse_config(VOLCANO_DEFAULT_CONF, "<volcano default>").unwrap()


def config_from_configmap(data: Any, source: str = f"ConfigMap {CONFIGMAP_NAME}") -> ConfigResult:
    """Parse the `volcano-scheduler.conf` key of a ConfigMap's `data`."""
    if not isinstance(data, Mapping):
        problem = ConfigProblem(field="data", message=f"expected a mapping of keys to strings, got {_describe(data)}")
        return ConfigResult(source=source, errors=[problem])
    if CONFIGMAP_KEY not in data:
        keys = [k for k in data if isinstance(k, str)]
        message = f"missing key {CONFIGMAP_KEY!r}{_suggest(CONFIGMAP_KEY, keys)}"
        if keys:
            message += f" (keys present: {', '.join(sorted(keys))})"
        return ConfigResult(source=source, errors=[ConfigProblem(field="data", message=message)])
    text = data[CONFIGMAP_KEY]
    if not isinstance(text, str):
        problem = ConfigProblem(
            field=f"data.{CONFIGMAP_KEY}", message=f"expected the config as a string, got {_describe(text)}"
        )
        return ConfigResult(source=source, errors=[problem])
    return parse_config(text, source)


# ---------------------------------------------------------------------------------------------------------------
# YAML with line numbers
# ---------------------------------------------------------------------------------------------------------------

Path = tuple[str | int, ...]  # mapping keys as str, list indices as int
_FAILED: Any = object()
_MAX_NODES = 100_000  # alias bombs expand exponentially; refuse rather than hang
_MAX_DEPTH = 100
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_MERGE = "tag:yaml.org,2002:merge"


class _BuildError(Exception):
    def __init__(self, path: Path, message: str, line: int | None):
        super().__init__(message)
        self.path, self.message, self.line = path, message, line


class _Builder:
    """Turns a composed YAML node tree into plain Python values, recording the line of every path."""

    def __init__(self, loader: yaml.SafeLoader):
        self.loader = loader
        self.lines: dict[Path, int] = {}
        self.count = 0
        self.active: set[int] = set()

    def build(self, node: yaml.Node, path: Path) -> Any:
        line = node.start_mark.line + 1
        self.lines.setdefault(path, line)
        self.count += 1
        if self.count > _MAX_NODES:
            raise _BuildError(path, f"the document is too large (more than {_MAX_NODES} values after aliases)", line)
        if len(path) > _MAX_DEPTH:
            raise _BuildError(path, f"nested more than {_MAX_DEPTH} levels deep", line)
        if isinstance(node, yaml.ScalarNode):
            try:
                return self.loader.construct_object(node)
            except yaml.YAMLError:
                raise
            except Exception as e:  # e.g. the timestamp 2024-13-45
                raise _BuildError(path, f"cannot read the value {_describe(node.value)}: {e}", line) from None
        if id(node) in self.active:
            raise _BuildError(path, "recursive YAML alias", line)
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                if node.tag != _SEQ:
                    raise _BuildError(path, f"unsupported YAML tag {node.tag!r}", line)
                return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
            if node.tag != _MAP:
                raise _BuildError(path, f"unsupported YAML tag {node.tag!r}", line)
            return self._mapping(node, path)
        finally:
            self.active.discard(id(node))

    def _mapping(self, node: yaml.MappingNode, path: Path) -> dict:
        explicit = {id(k) for k, _ in node.value if k.tag != _MERGE}
        self.loader.flatten_mapping(node)  # resolves `<<: *anchor` merges, explicit keys last
        out: dict = {}
        first_line: dict = {}
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1
            key = self.build(key_node, path)
            try:
                hash(key)
            except TypeError:
                raise _BuildError(path, "a mapping key must be a plain value, not a list or mapping", key_line)
            kpath = (*path, key if isinstance(key, str) else repr(key))
            if id(key_node) in explicit:
                if key in first_line:
                    raise _BuildError(
                        kpath, f"duplicate key {key!r} (first at line {first_line[key]})", key_line
                    )
                first_line[key] = key_line
            self.lines[kpath] = key_line
            out[key] = self.build(value_node, kpath)
        return out


# ---------------------------------------------------------------------------------------------------------------
# Checking
# ---------------------------------------------------------------------------------------------------------------

_TOP_KEYS = ("actions", "tiers", "configurations", "metrics")
_ENTRY_KEYS = ("name", "arguments", *FLAG_DEFAULTS)
_IGNORED_BY_VOLCANO = "Volcano silently ignores unknown keys, so it would have no effect there; magma refuses it"


class _Parser:
    def __init__(self) -> None:
        self.errors: list[ConfigProblem] = []
        self.warnings: list[ConfigProblem] = []
        self.lines: dict[Path, int] = {}

    # -- problems --------------------------------------------------------------------------------------------

    def _problem(self, path: Path, message: str, line: int | None) -> ConfigProblem:
        if line is None:
            p = path
            while p and p not in self.lines:
                p = p[:-1]
            line = self.lines.get(p)
        return ConfigProblem(field=_format_path(path), message=message, line=line)

    def error(self, path: Path, message: str, line: int | None = None) -> None:
        self.errors.append(self._problem(path, message, line))

    def warn(self, path: Path, message: str) -> None:
        self.warnings.append(self._problem(path, message, None))

    # -- YAML ------------------------------------------------------------------------------------------------

    def load(self, text: Any) -> Any:
        if not isinstance(text, str):
            self.error((), f"expected the configuration as text, got {_describe(text)}")
            return _FAILED
        try:
            loader = yaml.SafeLoader(text)
            try:
                node = loader.get_single_node()
                if node is None:
                    return None
                builder = _Builder(loader)
                doc = builder.build(node, ())
                self.lines = builder.lines
                return doc
            finally:
                loader.dispose()
        except _BuildError as e:
            self.error(e.path, e.message, e.line)
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            what = ": ".join(s for s in (e.context, e.problem) if s) or str(e)
            self.error((), f"not valid YAML: {' '.join(what.split())}", mark.line + 1 if mark else None)
        except yaml.YAMLError as e:  # e.g. a control character, reported without a mark
            self.error((), f"not valid YAML: {' '.join(str(e).split())}")
        except RecursionError:
            self.error((), "not valid YAML: nested too deeply")
        return _FAILED

    # -- document --------------------------------------------------------------------------------------------

    def parse(self, doc: Any) -> SchedulerConfig | None:
        if doc is None:
            self.error((), "the configuration is empty; it needs at least 'actions' and 'tiers'")
            return None
        if not isinstance(doc, dict):
            self.error((), f"expected a mapping with 'actions' and 'tiers', got {_describe(doc)}")
            return None
        for key in doc:
            if key not in _TOP_KEYS:
                self.error(_key_path((), key), f"unknown key {key!r}{_suggest(key, _TOP_KEYS)}; {_IGNORED_BY_VOLCANO}")
        actions = self._actions(doc)
        tiers = self._tiers(doc)
        configurations = self._configurations(doc, actions)
        metrics = self._metrics(doc)
        if self.errors:
            return None
        return SchedulerConfig(actions=actions, tiers=tiers, configurations=configurations, metrics=metrics)

    def _actions(self, doc: dict) -> list[str]:
        path: Path = ("actions",)
        example = 'e.g. actions: "enqueue, allocate, backfill"'
        if doc.get("actions") is None:
            self.error(path, f"missing: list the actions to run each session, {example}")
            return []
        raw = doc["actions"]
        if isinstance(raw, list):
            written = ", ".join(str(a) for a in raw)
            message = f'expected one comma-separated string such as "{written}", got a list (Volcano rejects it too)'
            self.error(path, message)
            return []
        if not isinstance(raw, str):
            self.error(path, f"expected a comma-separated string of action names, got {_describe(raw)}; {example}")
            return []
        names = [n.strip() for n in raw.split(",")]
        if not any(names):
            self.error(path, f"empty: at least one action is needed, {example}")
            return []
        seen: set[str] = set()
        for i, name in enumerate(names):
            apath = (*path, i)
            if not name:
                self.error(apath, "empty action name (a stray comma?)")
            elif name in SKIPPED_ACTIONS:
                self.warn(apath, f"magma skips Volcano's {name!r} action: {SKIPPED_ACTIONS[name]}")
            elif name in UNSUPPORTED_ACTIONS:
                self.error(apath, f"Volcano's {name!r} action is not supported by magma; {UNSUPPORTED_ACTIONS[name]}")
            elif name not in MAGMA_ACTIONS:
                words = name.split()
                if len(words) > 1 and all(w in VOLCANO_ACTIONS for w in words):
                    hint = f"; separate actions with commas: {', '.join(words)!r}"
                else:
                    hint = _suggest(name, VOLCANO_ACTIONS) + f"; magma's actions are {', '.join(MAGMA_ACTIONS)}"
                self.error(apath, f"unknown action {name!r}{hint}")
            elif name in seen:
                self.warn(apath, f"action {name!r} is listed twice; it runs twice in each session, as in Volcano")
            seen.add(name)
        return names

    def _tiers(self, doc: dict) -> list[Tier]:
        path: Path = ("tiers",)
        raw = doc.get("tiers")
        if raw is None:
            self.error(path, "missing: at least one tier of plugins is needed")
            return []
        if not isinstance(raw, list):
            self.error(path, f"expected a list of tiers (each '- plugins: [...]'), got {_describe(raw)}")
            return []
        if not raw:
            self.error(path, "empty: at least one tier of plugins is needed")
            return []
        tiers: list[Tier] = []
        placed: list[tuple[Path, PluginOption]] = []  # every plugin built, with its path
        for i, tier in enumerate(raw):
            tpath: Path = (*path, i)
            if not isinstance(tier, dict):
                self.error(tpath, f"expected a mapping with 'plugins', got {_describe(tier)}")
                continue
            for key in tier:
                if key != "plugins":
                    message = f"unknown key {key!r}{_suggest(key, ['plugins'])}; {_IGNORED_BY_VOLCANO}"
                    self.error(_key_path(tpath, key), message)
            plugins = tier.get("plugins")
            ppath: Path = (*tpath, "plugins")
            if plugins is None or plugins == []:
                self.error(ppath if "plugins" in tier else tpath, "a tier needs at least one plugin")
                continue
            if not isinstance(plugins, list):
                self.error(ppath, f"expected a list of plugins, got {_describe(plugins)}")
                continue
            options = []
            for j, entry in enumerate(plugins):
                option = self._plugin(entry, (*ppath, j))
                if option is not None:
                    options.append(option)
                    placed.append(((*ppath, j), option))
            tiers.append(Tier(plugins=options))
        self._cross_check(placed)
        return tiers

    def _plugin(self, entry: Any, path: Path) -> PluginOption | None:
        if not isinstance(entry, dict):
            self.error(path, f"expected a mapping with 'name', got {_describe(entry)}")
            return None
        name = entry.get("name")
        valid = isinstance(name, str) and name != ""
        if "name" not in entry:
            self.error(path, "missing 'name'")
        elif not valid:
            self.error((*path, "name"), f"expected a plugin name, got {_describe(name)}")
        elif name in VOLCANO_ONLY_PLUGINS:
            self.warn((*path, "name"), f"{name!r} is a Volcano plugin that magma does not implement; magma ignores it")
        elif name not in MAGMA_PLUGINS:
            self.error(
                (*path, "name"),
                f"unknown plugin {name!r}{_suggest(name, MAGMA_PLUGINS + VOLCANO_ONLY_PLUGINS)}; "
                f"magma's plugins are {', '.join(MAGMA_PLUGINS)}",
            )
            valid = False

        flags: dict[str, bool] = {}
        for key, value in entry.items():
            if key in ("name", "arguments"):
                continue
            kpath = _key_path(path, key)
            if key not in FLAG_DEFAULTS:
                self.error(kpath, f"unknown key {key!r}{_suggest(key, _ENTRY_KEYS)}; {_IGNORED_BY_VOLCANO}")
            elif isinstance(value, bool):
                flags[key] = value
            else:
                quoted = isinstance(value, str) and value in _PARSE_BOOL
                hint = " (write it unquoted: Volcano rejects a quoted boolean here)" if quoted else ""
                self.error(kpath, f"expected true or false, got {_describe(value)}{hint}")

        owner = f"plugin {name!r}" if valid else "this plugin"
        table = PLUGIN_ARGUMENTS.get(name) if valid else None
        arguments = self._arguments(entry, path, table, owner)
        if not valid:
            return None
        return PluginOption(name=name, flags=flags, arguments=arguments)

    def _arguments(self, entry: dict, path: Path, table: ArgTable | None, owner: str) -> dict[str, Any]:
        """The raw arguments of a plugin or action entry, checked against `table` when magma knows it."""
        raw = entry.get("arguments")
        apath: Path = (*path, "arguments")
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.error(apath, f"expected a mapping of argument names to values, got {_describe(raw)}")
            return {}
        arguments: dict[str, Any] = {}
        for key, value in raw.items():
            if not isinstance(key, str):
                self.error(_key_path(apath, key), f"argument names must be strings, got {_describe(key)}")
            else:
                arguments[key] = value
        if table is not None:
            self._check_arguments(table, arguments, apath, owner)
        return arguments

    def _check_arguments(self, table: ArgTable, arguments: dict[str, Any], path: Path, owner: str) -> None:
        typed: dict[str, Any] = {}
        for key, raw in arguments.items():
            kpath = (*path, key)
            spec = table.lookup(key)
            if spec is None:
                if table.open:
                    continue
                if not table.names():
                    self.warn(kpath, f"{owner} reads no arguments; {key!r} is ignored")
                else:
                    self.warn(
                        kpath,
                        f"unknown argument {key!r} for {owner}{_suggest(key, table.names())}; "
                        f"Volcano and magma ignore it (known: {', '.join(table.names())})",
                    )
                continue
            try:
                typed[key] = value = spec.convert(raw)
            except ValueError as e:
                self.error(kpath, str(e))
                continue
            if spec.obsolete:
                self.warn(kpath, spec.obsolete)
            elif spec.volcano_ignores(raw):
                shown = f"{value:g}s" if spec.kind == "duration" else repr(value)
                fallback = f" and keep its default {spec.default!r}" if spec.default not in (None, ()) else ""
                self.warn(
                    kpath,
                    f"Volcano would ignore {raw!r} here (it reads only {_READER_TEXT[spec.volcano]}){fallback}; "
                    f"magma reads it as {shown}",
                )
            if spec.alias_of and spec.alias_of in arguments:
                self.error(kpath, f"{key!r} and {spec.alias_of!r} set the same thing; keep one")

        if table.resource_list:
            list_key, prefix = table.resource_list
            listed = set(typed.get(list_key, ()))
            for key in typed:
                if key.startswith(prefix) and key[len(prefix):] not in listed:
                    self.warn(
                        (*path, key),
                        f"weight for {key[len(prefix):]!r}, which is not listed in {list_key}; "
                        f"Volcano and magma ignore it (add it to {list_key})",
                    )
        low, high = typed.get("minCandidateNodesAbsolute"), typed.get("maxCandidateNodesAbsolute")
        if low is not None and high is not None and low > high:
            self.error(
                (*path, "minCandidateNodesAbsolute"),
                f"minCandidateNodesAbsolute ({low}) is above maxCandidateNodesAbsolute ({high})",
            )

    def _cross_check(self, placed: list[tuple[Path, PluginOption]]) -> None:
        first: dict[str, Path] = {}
        for path, option in placed:
            if option.name in first:
                self.error(
                    (*path, "name"),
                    f"plugin {option.name!r} is listed twice (first at {_format_path(first[option.name])}); "
                    "list each plugin once",
                )
            else:
                first[option.name] = path
        if "proportion" in first and "capacity" in first:
            later = max(first["proportion"], first["capacity"], key=lambda p: (p[1], p[3]))
            self.error(
                (*later, "name"),
                "proportion and capacity are both configured; they are alternative ways of computing queue "
                "shares (weights vs. spec.deserved) and Volcano does not support enabling both; keep one",
            )
        for path, option in placed:
            if option.name != "drf" or not option.enabled("enableHierarchy"):
                continue
            tier = path[:2]
            proportion_here = any(p[:2] == tier and o.name == "proportion" for p, o in placed)
            if proportion_here:
                self.warn((*path, "enableHierarchy"), DRF_HIERARCHY_WITH_PROPORTION)
            elif "proportion" in first:
                self.warn((*path, "enableHierarchy"), DRF_HIERARCHY_IGNORED)
            # Without proportion, drf's hierarchy is real: queues' volcano.sh/hierarchy annotations apply.

    def _configurations(self, doc: dict, actions: list[str]) -> list[ActionConfiguration]:
        path: Path = ("configurations",)
        raw = doc.get("configurations")
        if raw is None:
            return []
        if not isinstance(raw, list):
            self.error(path, f"expected a list of '- name: ACTION' entries with 'arguments', got {_describe(raw)}")
            return []
        out: list[ActionConfiguration] = []
        seen: dict[str, int] = {}
        for i, entry in enumerate(raw):
            cpath: Path = (*path, i)
            if not isinstance(entry, dict):
                self.error(cpath, f"expected a mapping with 'name' and 'arguments', got {_describe(entry)}")
                continue
            for key in entry:
                if key not in ("name", "arguments"):
                    self.error(
                        _key_path(cpath, key),
                        f"unknown key {key!r}{_suggest(key, ['name', 'arguments'])}; {_IGNORED_BY_VOLCANO}",
                    )
            name = entry.get("name")
            npath: Path = (*cpath, "name")
            valid = False
            if "name" not in entry:
                self.error(cpath, "missing 'name' (the action these arguments are for)")
            elif not isinstance(name, str):
                self.error(npath, f"expected an action name, got {_describe(name)}")
            elif name not in VOLCANO_ACTIONS:
                self.error(npath, f"unknown action {name!r}{_suggest(name, VOLCANO_ACTIONS)}")
            elif name in seen:
                self.error(
                    npath,
                    f"second configuration for action {name!r} (the first is configurations[{seen[name]}]; "
                    "Volcano would read only the first); merge them",
                )
            else:
                valid = True
                seen[name] = i
                if name not in actions:
                    self.warn(
                        npath,
                        f"configuration for action {name!r}, which is not in 'actions' "
                        f"({', '.join(a for a in actions if a) or 'none'}); it has no effect",
                    )
            table = ACTION_ARGUMENTS.get(name) if valid else None
            arguments = self._arguments(entry, cpath, table, f"action {name!r}")
            if valid:
                out.append(ActionConfiguration(name=name, arguments=arguments))
        return out

    def _metrics(self, doc: dict) -> dict[str, str]:
        path: Path = ("metrics",)
        raw = doc.get("metrics")
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.error(path, f"expected a mapping of names to strings, got {_describe(raw)}")
            return {}
        out: dict[str, str] = {}
        for key, value in raw.items():
            kpath = _key_path(path, key)
            if not isinstance(key, str):
                self.error(kpath, f"metrics keys must be strings, got {_describe(key)}")
            elif isinstance(value, (dict, list)) or value is None:
                self.error(kpath, f"expected a string, got {_describe(value)}")
            else:
                # Volcano decodes into map[string]string, which takes any scalar as its text.
                out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        return out


# ---------------------------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------------------------


def _number(raw: Any) -> int | float:
    if isinstance(raw, bool):
        raise ValueError(f"expected a number, got {_describe(raw)}")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float):
        if not math.isfinite(raw):
            raise ValueError(f"expected a finite number, got {raw}")
        return raw
    if isinstance(raw, str):
        text = raw.strip()
        if _INTEGER.fullmatch(text):
            try:
                return int(text)
            except ValueError:  # more digits than Python converts
                raise ValueError(f"number too large: {_describe(raw)}") from None
        if _NUMERIC.fullmatch(text):
            value = float(text)
            if math.isfinite(value):
                return value
            raise ValueError(f"expected a finite number, got {_describe(raw)}")
    raise ValueError(f"expected a number, got {_describe(raw)}")


def _describe(value: Any) -> str:
    """A value as a message shows it: 'ten' for a string, 5 for a number, 'a list', 'null'."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value) if len(value) <= 60 else repr(value[:57] + "...")
    if isinstance(value, (int, float)):
        text = str(value)
        return text if len(text) <= 60 else text[:57] + "..."
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def _suggest(word: Any, choices: Any) -> str:
    """" (did you mean 'x'?)" for the closest choice (case-insensitive), or ''."""
    by_lower = {str(c).lower(): str(c) for c in choices}
    match = difflib.get_close_matches(str(word).lower(), list(by_lower), n=1, cutoff=0.6)
    return f" (did you mean {by_lower[match[0]]!r}?)" if match else ""


def _key_path(path: Path, key: Any) -> Path:
    return (*path, key if isinstance(key, str) else repr(key))


def _format_path(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
