"""Typed Kubernetes and Volcano objects, as magma reads them.

Every model keeps fields it does not know (`extra="allow"`), so a load-and-dump round trip gives back what
the user wrote. Field names are the API's camelCase names; Python attributes are snake_case. Quantities
keep their original text. Only the parts the scheduler, controller and admission rules use are typed.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PrivateAttr,
    WithJsonSchema,
)
from pydantic.alias_generators import to_camel

from .quantity import Quantity, QuantityError
from .resources import Resources


def _parse_quantity(raw: object) -> Quantity:
    try:
        return Quantity.parse(raw)
    except QuantityError as e:
        raise ValueError(str(e)) from None


def _dump_quantity(q: Quantity) -> object:
    return q.raw


QuantityField = Annotated[
    Quantity,
    BeforeValidator(_parse_quantity),
    PlainSerializer(_dump_quantity),
    WithJsonSchema({"type": "string"}),
]
ResourceList = dict[str, QuantityField]


def resources_of(rl: ResourceList | None) -> Resources:
    return Resources.parse(rl or {})


class KubeModel(BaseModel):
    """Base of every typed part: camelCase names, unknown fields kept."""

    model_config = ConfigDict(
        extra="allow",
        populate_by_name=True,
        alias_generator=to_camel,
        arbitrary_types_allowed=True,
        validate_assignment=False,
    )

    def dump(self) -> dict[str, Any]:
        """The object as a Kubernetes manifest dict: only fields that were set, API names."""
        return self.model_dump(by_alias=True, exclude_unset=True, mode="python")


class Source(BaseModel):
    """Where an object came from: file and the line of its document's first key."""

    file: str = "<memory>"
    line: int = 0
    document: int = 0
    lines: dict[tuple, int] = Field(default_factory=dict, repr=False)

    def line_of(self, path: tuple) -> int:
        """Line of the deepest known field on `path` (fields name -> line as recorded by the loader)."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.line


# ---------------------------------------------------------------- metadata


class OwnerReference(KubeModel):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None


class ObjectMeta(KubeModel):
    name: str = ""
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    creation_timestamp: Any = None
    deletion_timestamp: Any = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: list[OwnerReference] = Field(default_factory=list)


class Object(KubeModel):
    """A top-level object: apiVersion, kind, metadata."""

    API_VERSION: ClassVar[str] = "v1"
    KIND: ClassVar[str] = ""
    NAMESPACED: ClassVar[bool] = True

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    _source: Source = PrivateAttr(default_factory=Source)

    @property
    def source(self) -> Source:
        return self._source

    def with_source(self, source: Source) -> "Object":
        self._source = source
        return self

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        if not self.NAMESPACED:
            return ""
        return self.metadata.namespace or "default"

    @property
    def key(self) -> str:
        """`namespace/name` for namespaced kinds, `name` for cluster-scoped ones."""
        return f"{self.namespace}/{self.name}" if self.NAMESPACED else self.name

    @property
    def annotations(self) -> dict[str, str]:
        return self.metadata.annotations

    @property
    def labels(self) -> dict[str, str]:
        return self.metadata.labels


# ---------------------------------------------------------------- selectors and affinity


class LabelSelectorRequirement(KubeModel):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)


class LabelSelector(KubeModel):
    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list)


class NodeSelectorRequirement(KubeModel):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
    values: list[str] = Field(default_factory=list)


class NodeSelectorTerm(KubeModel):
    match_expressions: list[NodeSelectorRequirement] = Field(default_factory=list)
    match_fields: list[NodeSelectorRequirement] = Field(default_factory=list)


class NodeSelector(KubeModel):
    node_selector_terms: list[NodeSelectorTerm] = Field(default_factory=list)


class PreferredSchedulingTerm(KubeModel):
    weight: int
    preference: NodeSelectorTerm


class NodeAffinity(KubeModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = None
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] = Field(
        default_factory=list
    )


class PodAffinityTerm(KubeModel):
    label_selector: LabelSelector | None = None
    namespaces: list[str] = Field(default_factory=list)
    namespace_selector: LabelSelector | None = None
    topology_key: str


class WeightedPodAffinityTerm(KubeModel):
    weight: int
    pod_affinity_term: PodAffinityTerm


class PodAffinity(KubeModel):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] = Field(default_factory=list)
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] = Field(
        default_factory=list
    )


class Affinity(KubeModel):
    node_affinity: NodeAffinity | None = None
    pod_affinity: PodAffinity | None = None
    pod_anti_affinity: PodAffinity | None = None


class Toleration(KubeModel):
    key: str | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute", ""] | None = None
    toleration_seconds: int | None = None


class Taint(KubeModel):
    key: str
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class TopologySpreadConstraint(KubeModel):
    max_skew: int = Field(ge=1)
    topology_key: str
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    label_selector: LabelSelector | None = None
    min_domains: int | None = None


# ---------------------------------------------------------------- pods


class ResourceRequirements(KubeModel):
    requests: ResourceList = Field(default_factory=dict)
    limits: ResourceList = Field(default_factory=dict)

    def effective(self) -> Resources:
        """Requests, with limits standing in for requests that are missing (as the API server defaults them)."""
        merged = dict(self.limits)
        merged.update(self.requests)
        return resources_of(merged)


class Container(KubeModel):
    name: str = ""
    image: str | None = None
    resources: ResourceRequirements = Field(default_factory=ResourceRequirements)
    env: list[dict[str, Any]] = Field(default_factory=list)
    restart_policy: str | None = None  # "Always" marks a sidecar init container


class PodSpec(KubeModel):
    containers: list[Container] = Field(default_factory=list)
    init_containers: list[Container] = Field(default_factory=list)
    overhead: ResourceList = Field(default_factory=dict)
    node_selector: dict[str, str] = Field(default_factory=dict)
    affinity: Affinity | None = None
    tolerations: list[Toleration] = Field(default_factory=list)
    topology_spread_constraints: list[TopologySpreadConstraint] = Field(default_factory=list)
    priority: int | None = None
    priority_class_name: str | None = None
    preemption_policy: Literal["PreemptLowerPriority", "Never"] | None = None
    scheduler_name: str | None = None
    node_name: str | None = None
    restart_policy: Literal["Always", "OnFailure", "Never"] | None = None
    active_deadline_seconds: int | None = Field(default=None, ge=1)
    termination_grace_period_seconds: int | None = Field(default=None, ge=0)
    hostname: str | None = None
    subdomain: str | None = None

    def request(self) -> Resources:
        """The pod's effective request as kube-scheduler computes it.

        max(sum of app containers + sidecars, each init container + the sidecars started before it),
        plus overhead.
        """
        if not self.init_containers and not self.overhead:
            # The common pod: the sum of its containers, as the general formula below gives it.
            total = Resources()
            for c in self.containers:
                total = total + c.resources.effective()
            return total.clamp_min_zero()  # the max with nothing: the same entries, without the set of names
        sidecars = Resources()
        init_peak = Resources()
        for c in self.init_containers:
            req = c.resources.effective()
            if c.restart_policy == "Always":
                sidecars = sidecars + req
                init_peak = init_peak.max_with(sidecars)
            else:
                init_peak = init_peak.max_with(sidecars + req)
        total = sidecars
        for c in self.containers:
            total = total + c.resources.effective()
        return total.max_with(init_peak) + resources_of(self.overhead)


class PodCondition(KubeModel):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None


class ContainerStateTerminated(KubeModel):
    exit_code: int = 0
    reason: str | None = None
    message: str | None = None


class ContainerState(KubeModel):
    terminated: ContainerStateTerminated | None = None


class ContainerStatus(KubeModel):
    name: str = ""
    ready: bool = False
    restart_count: int = 0
    state: ContainerState = Field(default_factory=ContainerState)


# A container status as typed, or a plain dict that code wrote without building the model (kept as it is).
ContainerStatusEntry = Annotated[Union[ContainerStatus, dict[str, Any]], Field(union_mode="left_to_right")]


class PodStatus(KubeModel):
    phase: Literal["Pending", "Running", "Succeeded", "Failed", "Unknown"] | None = None
    conditions: list[PodCondition] = Field(default_factory=list)
    container_statuses: list[ContainerStatusEntry] = Field(default_factory=list)
    init_container_statuses: list[ContainerStatusEntry] = Field(default_factory=list)


class PodTemplateSpec(KubeModel):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodSpec = Field(default_factory=PodSpec)


class Pod(Object):
    KIND: ClassVar[str] = "Pod"
    spec: PodSpec = Field(default_factory=PodSpec)
    status: PodStatus = Field(default_factory=PodStatus)

    @property
    def group_name(self) -> str | None:
        """The PodGroup this pod belongs to (Volcano's annotation, or the newer label)."""
        a = self.metadata.annotations
        return (
            a.get("scheduling.k8s.io/group-name")
            or a.get("scheduling.volcano.sh/group-name")
            or self.metadata.labels.get("scheduling.x-k8s.io/pod-group")
        )


# ---------------------------------------------------------------- nodes


class NodeSpec(KubeModel):
    unschedulable: bool = False
    taints: list[Taint] = Field(default_factory=list)


class NodeCondition(KubeModel):
    type: str
    status: str


class NodeStatus(KubeModel):
    allocatable: ResourceList = Field(default_factory=dict)
    capacity: ResourceList = Field(default_factory=dict)
    conditions: list[NodeCondition] = Field(default_factory=list)


class Node(Object):
    KIND: ClassVar[str] = "Node"
    NAMESPACED: ClassVar[bool] = False
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)

    def allocatable(self) -> Resources:
        return resources_of(self.status.allocatable or self.status.capacity)

    def ready(self) -> bool:
        for c in self.status.conditions:
            if c.type == "Ready":
                return c.status == "True"
        return True  # a manifest that says nothing about readiness describes a usable node


# ---------------------------------------------------------------- priority classes


class PriorityClass(Object):
    API_VERSION: ClassVar[str] = "scheduling.k8s.io/v1"
    KIND: ClassVar[str] = "PriorityClass"
    NAMESPACED: ClassVar[bool] = False
    value: int
    global_default: bool = False
    preemption_policy: Literal["PreemptLowerPriority", "Never"] | None = None
    description: str | None = None


# ---------------------------------------------------------------- Volcano scheduling objects


class Guarantee(KubeModel):
    resource: ResourceList = Field(default_factory=dict)


class QueueSpec(KubeModel):
    weight: int = Field(default=1)
    capability: ResourceList = Field(default_factory=dict)
    deserved: ResourceList = Field(default_factory=dict)
    guarantee: Guarantee = Field(default_factory=Guarantee)
    reclaimable: bool | None = None
    parent: str | None = None
    priority: int | None = None


class QueueStatus(KubeModel):
    state: Literal["Open", "Closed", "Closing", "Unknown"] | None = None


class Queue(Object):
    API_VERSION: ClassVar[str] = "scheduling.volcano.sh/v1beta1"
    KIND: ClassVar[str] = "Queue"
    NAMESPACED: ClassVar[bool] = False
    spec: QueueSpec = Field(default_factory=QueueSpec)
    status: QueueStatus = Field(default_factory=QueueStatus)

    @property
    def parent_name(self) -> str | None:
        """The parent queue; every queue but `root` hangs under `root` when none is named."""
        if self.name == "root":
            return None
        return self.spec.parent or "root"

    def capability(self) -> Resources:
        return resources_of(self.spec.capability)

    def guarantee(self) -> Resources:
        return resources_of(self.spec.guarantee.resource)

    def deserved(self) -> Resources:
        return resources_of(self.spec.deserved)

    @property
    def reclaimable(self) -> bool:
        return True if self.spec.reclaimable is None else self.spec.reclaimable

    @property
    def state(self) -> str:
        return self.status.state or "Open"


class NetworkTopology(KubeModel):
    mode: Literal["hard", "soft"] = "hard"
    highest_tier_allowed: int | None = Field(default=None, ge=1)


class PodGroupCondition(KubeModel):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    transition_id: str | None = Field(default=None, alias="transitionID")
    last_transition_time: Any = None


class PodGroupSpec(KubeModel):
    min_member: int = Field(default=1, ge=0)
    min_task_member: dict[str, int] = Field(default_factory=dict)
    min_resources: ResourceList = Field(default_factory=dict)
    queue: str | None = None
    priority_class_name: str | None = None
    network_topology: NetworkTopology | None = None


class PodGroupStatus(KubeModel):
    phase: Literal["Pending", "Inqueue", "Running", "Unknown", "Completed"] | None = None
    conditions: list[PodGroupCondition] = Field(default_factory=list)
    running: int = 0
    succeeded: int = 0
    failed: int = 0


class PodGroup(Object):
    API_VERSION: ClassVar[str] = "scheduling.volcano.sh/v1beta1"
    KIND: ClassVar[str] = "PodGroup"
    spec: PodGroupSpec = Field(default_factory=PodGroupSpec)
    status: PodGroupStatus = Field(default_factory=PodGroupStatus)

    def min_resources(self) -> Resources:
        return resources_of(self.spec.min_resources)


# ---------------------------------------------------------------- Volcano Job


class LifecyclePolicy(KubeModel):
    event: str | None = None
    events: list[str] = Field(default_factory=list)
    action: str | None = None
    exit_code: int | None = None
    timeout: str | None = None


class TaskSpec(KubeModel):
    name: str | None = None
    replicas: int = Field(default=0, ge=0)
    min_available: int | None = Field(default=None, ge=0)
    template: PodTemplateSpec = Field(default_factory=PodTemplateSpec)
    policies: list[LifecyclePolicy] = Field(default_factory=list)
    max_retry: int | None = Field(default=None, ge=0)
    depends_on: dict[str, Any] | None = None


class JobSpec(KubeModel):
    scheduler_name: str | None = None
    min_available: int | None = Field(default=None, ge=0)
    min_success: int | None = Field(default=None, ge=1)
    queue: str | None = None
    priority_class_name: str | None = None
    tasks: list[TaskSpec] = Field(default_factory=list)
    policies: list[LifecyclePolicy] = Field(default_factory=list)
    plugins: dict[str, list[str] | None] = Field(default_factory=dict)
    max_retry: int | None = Field(default=None, ge=0)
    ttl_seconds_after_finished: int | None = Field(default=None, ge=0)
    network_topology: NetworkTopology | None = None


class JobState(KubeModel):
    phase: str | None = None
    reason: str | None = None
    message: str | None = None
    last_transition_time: Any = None


class JobCondition(KubeModel):
    status: str = ""
    last_transition_time: Any = None


class TaskState(KubeModel):
    phase: dict[str, int] = Field(default_factory=dict)


class JobStatus(KubeModel):
    state: JobState = Field(default_factory=JobState)
    retry_count: int = 0
    min_available: int = 0
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    unknown: int = 0
    version: int = 0
    running_duration: Any = None
    task_status_count: dict[str, TaskState] = Field(default_factory=dict)
    controlled_resources: dict[str, str] = Field(default_factory=dict)
    conditions: list[JobCondition] = Field(default_factory=list)


class Job(Object):
    API_VERSION: ClassVar[str] = "batch.volcano.sh/v1alpha1"
    KIND: ClassVar[str] = "Job"
    spec: JobSpec = Field(default_factory=JobSpec)
    status: JobStatus = Field(default_factory=JobStatus)

    def total_replicas(self) -> int:
        return sum(t.replicas for t in self.spec.tasks)


class Command(Object):
    """`bus.volcano.sh/v1alpha1` Command: an action (AbortJob, ResumeJob, ...) aimed at a Job."""

    API_VERSION: ClassVar[str] = "bus.volcano.sh/v1alpha1"
    KIND: ClassVar[str] = "Command"
    action: str = ""
    target_object: OwnerReference | None = None
    reason: str | None = None
    message: str | None = None


class ConfigMap(Object):
    KIND: ClassVar[str] = "ConfigMap"
    data: dict[str, str] = Field(default_factory=dict)


class Service(Object):
    """A Service as the svc job plugin makes it (headless: clusterIP None). Spec kept as written."""

    KIND: ClassVar[str] = "Service"
    spec: dict[str, Any] = Field(default_factory=dict)


class Secret(Object):
    KIND: ClassVar[str] = "Secret"
    type: str | None = None
    data: dict[str, str] = Field(default_factory=dict)
    string_data: dict[str, str] = Field(default_factory=dict)


class NetworkPolicy(Object):
    API_VERSION: ClassVar[str] = "networking.k8s.io/v1"
    KIND: ClassVar[str] = "NetworkPolicy"
    spec: dict[str, Any] = Field(default_factory=dict)


# ---------------------------------------------------------------- simulation


class StrictModel(KubeModel):
    """magma's own kinds are strict: an unknown field is a typo, not a newer API version."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, alias_generator=to_camel,
                              arbitrary_types_allowed=True)


class NodePoolSpec(StrictModel):
    count: int = Field(ge=0)
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    allocatable: ResourceList


class NodePool(Object):
    API_VERSION: ClassVar[str] = "sim.magma.io/v1alpha1"
    KIND: ClassVar[str] = "NodePool"
    NAMESPACED: ClassVar[bool] = False
    spec: NodePoolSpec

    def nodes(self) -> list[Node]:
        """The pool's nodes, `<name>-0` … `<name>-<count-1>`, each remembering the pool's source."""
        out = []
        for i in range(self.spec.count):
            node = Node.model_validate(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": f"{self.name}-{i}",
                        "labels": {**self.spec.labels, "kubernetes.io/hostname": f"{self.name}-{i}"},
                        "annotations": {**self.metadata.annotations, **self.spec.annotations},
                    },
                    "spec": {"taints": [t.dump() for t in self.spec.taints]},
                    "status": {"allocatable": {k: v.raw for k, v in self.spec.allocatable.items()}},
                }
            )
            node.with_source(self.source)
            out.append(node)
        return out


# ---------------------------------------------------------------- registry

KINDS: dict[tuple[str, str], type[Object]] = {
    (cls.API_VERSION.split("/")[0] if "/" in cls.API_VERSION else "", cls.KIND): cls
    for cls in (Pod, Node, PriorityClass, Queue, PodGroup, Job, Command, ConfigMap, NodePool, Service, Secret,
                NetworkPolicy)
}


def kind_for(api_version: str, kind: str) -> type[Object] | None:
    """The model for an apiVersion/kind, matching on the API group (any version of a known group)."""
    group = api_version.split("/")[0] if "/" in api_version else ""
    return KINDS.get((group, kind))


# Annotation and label keys with Volcano's exact spellings.
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
PREEMPTABLE_ANNOTATION = "volcano.sh/preemptable"
TASK_PRIORITY_ANNOTATION = "volcano.sh/task-priority"
JOB_NAME_ANNOTATION = "volcano.sh/job-name"
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
TASK_INDEX_ANNOTATION = "volcano.sh/task-index"
SIM_SUBMIT_AT = "sim.magma.io/submit-at"
SIM_DURATION = "sim.magma.io/duration"
SIM_DELETE_AT = "sim.magma.io/delete-at"
EXPECTED_RUNTIME = "magma.io/expected-runtime"
