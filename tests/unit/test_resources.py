from magma.api.objects import Pod
from magma.api.resources import GPU, Resources


def test_units_per_resource():
    r = Resources.parse({"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 2, "pods": 110})
    assert r["cpu"] == 500
    assert r["memory"] == 2**30
    assert r[GPU] == 2000
    assert r.to_json() == {"cpu": 0.5, "memory": 2**30, GPU: 2, "pods": 110}


def test_missing_dimension_semantics():
    req = Resources.of(cpu=1, gpu=1)
    cap_without_gpu = Resources.of(cpu=4)
    assert not req.less_equal(cap_without_gpu)  # missing counts as zero
    assert req.less_equal(cap_without_gpu, missing="infinity")  # missing capability = unlimited
    assert req.exceeding(Resources.of(cpu="500m", gpu=1)) == ["cpu"]


def test_min_with_unlimited_missing():
    a = Resources.of(cpu=8, gpu=8)
    assert a.min_with(Resources.of(gpu=4), missing="infinity") == Resources.of(cpu=8, gpu=4)
    assert a.min_with(Resources.of(gpu=4)) == Resources.of(gpu=4)


def test_format_is_readable():
    assert Resources.of(cpu="1500m", memory="2Gi", gpu=8).format() == "cpu: 1500m, memory: 2Gi, nvidia.com/gpu: 8"


def _pod(spec):
    return Pod.model_validate({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})


def test_effective_request_init_containers_and_overhead():
    pod = _pod({
        "containers": [
            {"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "2"}}},
        ],
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "4", "memory": "512Mi"}}}],
        "overhead": {"cpu": "100m"},
    })
    # max(sum of containers = 3 cpu / 1Gi, init = 4 cpu / 512Mi) + overhead
    assert pod.spec.request() == Resources.of(cpu="4100m", memory="1Gi")


def test_limits_stand_in_for_missing_requests():
    pod = _pod({"containers": [{"name": "a", "resources": {"limits": {"nvidia.com/gpu": 8, "cpu": "64"},
                                                            "requests": {"cpu": "32"}}}]})
    assert pod.spec.request() == Resources.of(cpu=32, gpu=8)


def test_sidecar_init_containers_add_to_the_pod():
    pod = _pod({
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
        "initContainers": [
            {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
            {"name": "setup", "resources": {"requests": {"cpu": "2"}}},
        ],
    })
    # setup runs beside the sidecar: 2.5; afterwards app + sidecar: 1.5
    assert pod.spec.request() == Resources.of(cpu="2500m")


def test_without_drops_one_resource_and_keeps_a_vector_without_it():
    r = Resources.parse({"cpu": "2", "pods": 3, "nvidia.com/gpu": 1})
    less = r.without("pods")
    assert dict(less.items()) == {"cpu": 2000, GPU: 1000}
    assert "pods" in r  # (vectors never change)
    assert less.without("pods") is less  # nothing to drop: the vector itself
