"""Scheduler invariants on random clusters and workloads, over several sessions of the real scheduler (all five
actions, Volcano's default tiers with the real plugins) on the in-memory cluster:

- a gang is bound only whole: after a session that bound pods of a job, at least minAvailable of its pods run;
- no gang is left half-running: a job has 0 or at least minAvailable live pods (whole-gang eviction);
- no node holds more than it has (terminating pods included);
- no pod is bound twice;
- a queue (and each ancestor) never holds more than its capability;
- pods marked `volcano.sh/preemptable: "false"`, system-critical pods and pods of `reclaimable: false` queues
  are never evicted;
- the same input gives the same decisions.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "actions"))

from action_builders import (  # noqa: E402
    World,
    conf,
    gang_yaml,
    nodes_yaml,
    priority_class_yaml,
    queue_yaml,
)
from magma.api.resources import GPU  # noqa: E402

CONFIG = conf("enqueue, allocate, preempt, reclaim, backfill",
              ["priority", "gang", "conformance"], ["overcommit", "drf", "predicates", "proportion", "nodeorder"])
PRIORITIES = {"low": 10, "mid": 100, "high": 1000}


@st.composite
def scenarios(draw):
    n_nodes = draw(st.integers(1, 5))
    node_gpus = draw(st.sampled_from([4, 8]))
    queues = []
    for i in range(draw(st.integers(1, 3))):
        queues.append({
            "name": f"q{i}",
            "weight": draw(st.integers(1, 3)),
            "guarantee": draw(st.sampled_from([0, 0, 4, 8])),
            "capability": draw(st.sampled_from([None, None, 8, 16, 24])),
            "reclaimable": draw(st.booleans()) if i else True,
            "parent": draw(st.sampled_from([None, "org"])),
        })
    org_cap = draw(st.sampled_from([None, 16, 32]))
    jobs = []
    for j in range(draw(st.integers(1, 6))):
        replicas = draw(st.integers(1, 4))
        jobs.append({
            "name": f"j{j}",
            "queue": draw(st.sampled_from([q["name"] for q in queues])),
            "replicas": replicas,
            "min": draw(st.integers(1, replicas)),
            "gpu": draw(st.sampled_from([1, 2, 4, node_gpus])),
            "pc": draw(st.sampled_from(sorted(PRIORITIES))),
            "running": draw(st.booleans()),
            "preemptable": draw(st.sampled_from([True, True, False])),
            "system": draw(st.sampled_from([False, False, False, True])),
            "grace": draw(st.sampled_from([0, 30])),
        })
    return {"n_nodes": n_nodes, "node_gpus": node_gpus, "queues": queues, "org_cap": org_cap, "jobs": jobs}


def build(spec) -> tuple[str, dict]:
    """YAML for the scenario, with the running jobs placed validly (fits nodes, queue capabilities)."""
    text = nodes_yaml("n", spec["n_nodes"], gpu=spec["node_gpus"], cpu=256, memory="2048Gi")
    cap = {"org": spec["org_cap"]}
    parent = {}
    text += queue_yaml("org", capability={GPU: spec["org_cap"]} if spec["org_cap"] else None)
    for q in spec["queues"]:
        text += queue_yaml(q["name"], weight=q["weight"], parent=q["parent"],
                           guarantee={GPU: q["guarantee"]} if q["guarantee"] else None,
                           capability={GPU: q["capability"]} if q["capability"] else None,
                           reclaimable=q["reclaimable"])
        cap[q["name"]] = q["capability"]
        parent[q["name"]] = q["parent"]
    text += "".join(priority_class_yaml(n, v) for n, v in PRIORITIES.items())
    free = [spec["node_gpus"]] * spec["n_nodes"]
    used = {name: 0 for name in cap}
    non_reclaimable_taken: set[str] = set()
    meta = {"jobs": {}, "queue_of": {}, "parent": parent, "cap": cap}
    for job in spec["jobs"]:
        q = next(q for q in spec["queues"] if q["name"] == job["queue"])
        if not q["reclaimable"]:
            if q["name"] in non_reclaimable_taken:
                continue  # one job per non-reclaimable queue: nothing in it may ever be evicted
            non_reclaimable_taken.add(q["name"])
        running_on: list[str] = []
        if job["running"]:
            chain = [q["name"]] + ([q["parent"]] if q["parent"] else [])
            count = job["replicas"]
            total = count * job["gpu"]
            if all(cap[c] is None or used[c] + total <= cap[c] for c in chain):
                trial = list(free)
                for _ in range(count):
                    i = next((i for i, f in enumerate(trial) if f >= job["gpu"]), None)
                    if i is None:
                        break
                    trial[i] -= job["gpu"]
                    running_on.append(f"n-{i}")
                if len(running_on) == count:
                    free = trial
                    for c in chain:
                        used[c] += total
                else:
                    running_on = []
        ns = "kube-system" if job["system"] else "default"
        pod_kw = {} if job["preemptable"] else {"annotations": {"volcano.sh/preemptable": "false"}}
        text += gang_yaml(job["name"], job["queue"], job["replicas"], gpu=job["gpu"], cpu="1", memory="1Gi",
                          min_member=job["min"], running_on=running_on, ns=ns, priority_class=job["pc"],
                          grace=job["grace"], pod_kw=pod_kw, phase="Running" if running_on else "Pending",
                          min_resources=True, creation=len(meta["jobs"]))
        meta["jobs"][f"{ns}/{job['name']}"] = job
    return text, meta


def live_pods(w: World):
    return [p for p in w.pods() if p.spec.node_name and p.metadata.deletion_timestamp is None]


def check_invariants(w: World, meta: dict, session_binds: list) -> None:
    state = w.cluster.state()
    # Nodes never over-allocated (terminating pods still hold their resources).
    for node in state.nodes.values():
        alloc = node.allocatable()
        held = {}
        for p in state.pods.values():
            if p.spec.node_name == node.name:
                for k, v in p.spec.request().items():
                    held[k] = held.get(k, 0) + v
        for k, v in held.items():
            assert v <= alloc[k], f"node {node.name} over-allocated on {k}: {v} > {alloc[k]}"
    # Nothing double-bound.
    keys = [k for k, _ in w.cluster.bindings]
    assert len(keys) == len(set(keys)), "a pod was bound twice"
    # Gangs: bound whole, never left half-running.
    live: dict[str, int] = {}
    for p in live_pods(w):
        key = f"{p.namespace}/{p.group_name}"
        live[key] = live.get(key, 0) + 1
    bound_jobs = {k.rsplit("-", 1)[0] for k, _ in session_binds}
    for key, job in meta["jobs"].items():
        n = live.get(key, 0)
        if key in bound_jobs:
            assert n >= job["min"], f"{key} bound with {n} < minAvailable {job['min']}"
        assert n == 0 or n >= job["min"], f"{key} left half-running: {n} < {job['min']}"
    # Queues within capability (and their parent's).
    held_q: dict[str, int] = {}
    for p in live_pods(w):
        key = f"{p.namespace}/{p.group_name}"
        q = meta["jobs"][key]["queue"]
        for name in (q, meta["parent"].get(q)):
            if name:
                held_q[name] = held_q.get(name, 0) + p.spec.request()[GPU]
    for name, cap in meta["cap"].items():
        if cap is not None:
            assert held_q.get(name, 0) <= cap * 1000, f"queue {name} over its capability"
    # Protected pods never evicted.
    for key, _ in w.cluster.evictions:
        ns, name = key.split("/")
        job = meta["jobs"][f"{ns}/{name.rsplit('-', 1)[0]}"]
        assert job["preemptable"], f"non-preemptable pod {key} evicted"
        assert ns != "kube-system", f"system-critical pod {key} evicted"
        queue = job["queue"]
        assert queue_reclaimable(meta, queue), f"pod {key} of a non-reclaimable queue evicted"


def queue_reclaimable(meta: dict, queue: str) -> bool:
    return meta["queues_reclaimable"].get(queue, True)


def run(spec, sessions: int = 3):
    text, meta = build(spec)
    meta["queues_reclaimable"] = {q["name"]: q["reclaimable"] for q in spec["queues"]}
    w = World(text)
    trace = []
    for _ in range(sessions):
        r = w.run(CONFIG)
        check_invariants(w, meta, r.binds)
        trace.append((sorted(r.binds), sorted(r.evictions), sorted(r.phases.items())))
        w.tick(60)
    return trace


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_invariants_hold_and_decisions_are_deterministic(spec):
    first = run(spec)
    second = run(spec)
    assert first == second
