"""The snapshot cache's count of placed pods carrying a required pod anti-affinity term (fastpath.anti_carriers_kept)
stays the true count when a pod is written in place."""

from __future__ import annotations

from action_builders import World, conf, gang_yaml, nodes_yaml, queue_yaml
from magma.api.objects import Affinity
from magma.scheduler.framework import fastpath
from magma.scheduler.framework.cache import SnapshotCache
from magma.scheduler.scheduler import Scheduler

_ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"x": "y"}}, "topologyKey": "kubernetes.io/hostname"}]}}


def test_the_count_follows_a_pod_written_in_place(monkeypatch):
    # pod_facts_kept is off: it assumes, as Kubernetes ensures, that a pod's affinity is never changed
    monkeypatch.setattr(SnapshotCache, "verify", True)  # every session checks the kept count against a full build
    with fastpath.disabled("pod_facts_kept"):
        w = World(nodes_yaml("n", 2, gpu=8) + queue_yaml("team")
                  + gang_yaml("a", "team", 2, gpu=4, running_on=["n-0", "n-0"]))
        w.tick(0)
        s = Scheduler(w.cluster, conf("enqueue, allocate", ["priority", "gang"], ["predicates", "nodeorder"]))
        s.run_once()
        pod = w.cluster.state().pods["default/a-0"]
        for affinity, want in ((_ANTI, 1), (None, 0), (_ANTI, 1)):
            # the record's pod is the same object: it is taken out by what was counted when it went in
            pod.spec.affinity = Affinity.model_validate(affinity) if affinity else None
            w.cluster.mark_changed("Pod", pod.key)
            s.run_once()
            assert s.cache.anti_carriers == want
