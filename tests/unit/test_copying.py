"""api.copying.deep_copy: the copy copy.deepcopy gives (pydantic's model_copy(deep=True)), quantities shared."""

import copy
from pathlib import Path

from magma.api.copying import deep_copy
from magma.api.load import load_paths
from magma.api.objects import Job, Pod, PodSpec
from magma.api.quantity import Quantity

ROOT = Path(__file__).resolve().parents[2]


def _same(a, b) -> None:
    assert type(a) is type(b)
    assert a.model_dump() == b.model_dump()
    assert a.dump() == b.dump()
    assert a.__pydantic_fields_set__ == b.__pydantic_fields_set__
    assert a.model_extra == b.model_extra


def test_every_example_object_copies_as_deepcopy_does():
    objects = load_paths([ROOT / "examples", ROOT / "tests" / "data"]).objects
    assert len(objects) > 100
    for obj in objects:
        _same(deep_copy(obj), copy.deepcopy(obj))
        _same(deep_copy(obj), obj)
        assert deep_copy(obj).source.model_dump() == obj.source.model_dump()


def pod_spec() -> PodSpec:
    return PodSpec.model_validate({
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}, "limits": {"nvidia.com/gpu": 2}},
                        "env": [{"name": "X", "value": "1"}]}],
        "nodeSelector": {"zone": "a"}, "hostNetwork": True, "volumes": [{"name": "v", "emptyDir": {}}],
    })


def test_the_copy_is_independent_of_the_original():
    spec = pod_spec()
    new = deep_copy(spec)
    new.containers[0].env.append({"name": "Y"})
    new.node_selector["zone"] = "b"
    new.model_extra["volumes"][0]["name"] = "w"
    new.containers[0].resources.requests["memory"] = Quantity.parse("1Gi")
    assert spec.containers[0].env == [{"name": "X", "value": "1"}]
    assert spec.node_selector == {"zone": "a"}
    assert spec.model_extra["volumes"][0]["name"] == "v"
    assert "memory" not in spec.containers[0].resources.requests
    assert new.containers[0] is not spec.containers[0]


def test_quantities_are_shared_and_values_reached_twice_stay_shared():
    spec = pod_spec()
    shared = [{"name": "S"}]
    spec.model_extra["a"] = shared
    spec.model_extra["b"] = shared
    new = deep_copy(spec)
    ref = copy.deepcopy(spec)
    assert new.model_extra["a"] is new.model_extra["b"] and ref.model_extra["a"] is ref.model_extra["b"]
    assert new.model_extra["a"] is not shared
    q = spec.containers[0].resources.requests["cpu"]
    assert new.containers[0].resources.requests["cpu"] is q


def test_private_attributes_and_other_types_are_copied():
    job = Job.model_validate({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"},
                              "spec": {"tasks": [{"replicas": 1, "template": {"spec": {"containers": []}}}]}})
    job.model_extra["odd"] = ({"t": [1]}, {1, 2})
    new = deep_copy(job)
    assert new.model_extra["odd"] == job.model_extra["odd"] and new.model_extra["odd"][0] is not job.model_extra["odd"][0]
    assert new.source is not job.source and new.source == job.source
    pod = Pod.model_validate({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}})
    _same(deep_copy(pod), pod)


def test_empty_containers_are_new_and_stay_shared_when_reached_twice():
    spec = pod_spec()
    empty: list = []
    spec.model_extra["a"] = empty
    spec.model_extra["b"] = empty
    object.__setattr__(spec, "tolerations", empty)  # one empty list as a field and in the extras
    new = deep_copy(spec)
    ref = copy.deepcopy(spec)
    assert new.model_extra["a"] is new.model_extra["b"] is new.tolerations
    assert ref.model_extra["a"] is ref.model_extra["b"] is ref.tolerations
    assert new.tolerations is not empty and new.tolerations == []
    assert new.overhead == {} and new.overhead is not spec.overhead  # a field's own empty dict: a new one
    assert new.containers[0].model_extra == {} and new.containers[0].model_extra is not spec.containers[0].model_extra
    new.tolerations.append({"key": "k"})
    assert empty == []
