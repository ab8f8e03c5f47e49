"""The virtual kubelet enforces activeDeadlineSeconds as a kubelet does, and records when pods start."""

from __future__ import annotations

from magma.sim.result import build_result
from magma.sim.runner import Simulation
from magma.sim.scenario import load_scenario

CLUSTER = """
apiVersion: sim.magma.io/v1alpha1
kind: NodePool
metadata: {name: n}
spec:
  count: 2
  allocatable: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "1"}
"""


def pod(name: str, deadline: int | None, duration: str | None = None, node: str | None = None,
        submit: str = "0s") -> str:
    ann = f"sim.magma.io/submit-at: {submit}"
    if duration:
        ann += f", sim.magma.io/duration: {duration}"
    spec = "\n  schedulerName: volcano"
    if deadline is not None:
        spec += f"\n  activeDeadlineSeconds: {deadline}"
    if node:
        spec += f"\n  nodeName: {node}"
    return f"""---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  annotations: {{{ann}}}
spec:{spec}
  containers:
  - name: c
    resources: {{requests: {{cpu: "1", nvidia.com/gpu: "1"}}}}
"""


def simulate(tmp_path, text: str, until: float):
    (tmp_path / "s.yaml").write_text(CLUSTER + text)
    sim = Simulation(load_scenario([tmp_path]), until=until)
    sim.run()
    return sim, build_result(sim)


def pod_of(result, name):
    for j in result["jobs"]:
        for p in j["pods"]:
            if p["name"] == name:
                return p
    raise KeyError(name)


def test_a_pod_past_its_deadline_fails_with_deadline_exceeded(tmp_path):
    sim, r = simulate(tmp_path, pod("short", 120, "1h", submit="10s") + pod("free", None, "1h", submit="10s"), 600)
    state = sim.cluster.state()
    short, free = state.pods["default/short"], state.pods["default/free"]
    assert short.status.phase == "Failed"
    assert (short.status.model_extra or {}).get("reason") == "DeadlineExceeded"
    assert free.status.phase == "Running"
    # Started at its bind (t=10), failed at the first session time 120 s later; the idle stretch was skipped to it.
    assert (short.status.model_extra or {}).get("finishedAt") == 130.0
    assert any(s.time == 130.0 for s in sim.trace.sessions)


def test_a_pod_running_from_the_start_gets_its_deadline_too(tmp_path):
    sim, _ = simulate(tmp_path, pod("initial", 300, node="n-0"), 900)
    p = sim.cluster.state().pods["default/initial"]
    extra = p.status.model_extra or {}
    assert p.status.phase == "Failed" and extra.get("reason") == "DeadlineExceeded"
    assert extra.get("startTime") == 0.0 and extra.get("finishedAt") == 300.0


def test_the_kubelet_records_start_times_for_the_scheduler(tmp_path):
    sim, _ = simulate(tmp_path, pod("late", None, "1h", submit="42s"), 100)
    p = sim.cluster.state().pods["default/late"]
    assert p.status.phase == "Running"
    assert (p.status.model_extra or {}).get("startTime") == 42.0
