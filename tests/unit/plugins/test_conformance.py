"""conformance: critical pods, kube-system pods and volcano.sh/preemptable: "false" are never victims."""

from __future__ import annotations

from magma.scheduler.plugins.conformance import conformance_victims, evictable
from plugin_builders import node, open_session, pod, podgroup, task, tiers_config


def _ssn():
    objs = [node("n-0")]
    objs += [podgroup("pg", min_member=1), podgroup("sys", ns="kube-system", min_member=1)]
    objs += [pod("normal", "pg", node="n-0"),
             pod("critical", "pg", node="n-0", priority_class="system-cluster-critical"),
             pod("node-critical", "pg", node="n-0", priority_class="system-node-critical"),
             pod("dns", "sys", ns="kube-system", node="n-0"),
             pod("keep", "pg", node="n-0", annotations={"volcano.sh/preemptable": "false"}),
             podgroup("pg2", min_member=1, annotations={"volcano.sh/preemptable": "false"}),
             pod("keep-by-group", "pg2", node="n-0"),
             pod("preemptor", "pg")]
    return open_session(objs, tiers_config(["conformance"]))


def test_only_ordinary_pods_are_victims():
    ssn = _ssn()
    cands = [t for j in ssn.jobs.values() for t in j.tasks.values() if t.node]
    names = {t.name for t in conformance_victims(cands)}
    assert names == {"normal"}
    actor = task(ssn, "preemptor")
    assert [t.name for t in ssn.preemptable(actor, cands)] == ["normal"]
    assert [t.name for t in ssn.reclaimable(actor, cands)] == ["normal"]


def test_evictable_helper():
    ssn = _ssn()
    assert evictable(task(ssn, "normal"))
    for name in ("critical", "node-critical", "keep", "keep-by-group"):
        assert not evictable(task(ssn, name)), name
    assert not evictable(task(ssn, "dns", ns="kube-system"))
