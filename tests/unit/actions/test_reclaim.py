"""reclaim: a queue under its deserved share takes back from queues over theirs: only from reclaimable queues, never
below a guarantee, whole gangs or nothing, Never honoured, committed only when the reclaimer's gang is pipelined."""

from __future__ import annotations

from action_builders import World, conf, gang_yaml, nodes_yaml, queue_yaml
from magma.api.resources import GPU

TIERS = (["priority", "gang", "conformance"], ["overcommit", "drf", "predicates", "proportion", "nodeorder"])
RECLAIM = conf("enqueue, allocate, reclaim", *TIERS)


def held(w: World, prefix: str) -> int:
    return sum(1 for p in w.bound() if p.startswith(prefix))


def test_queue_under_deserved_reclaims_from_overused_queue():
    # a holds all 4 nodes; b's 2-pod job is pending: deserved becomes 2 nodes each, a gives back 2 nodes.
    text = (nodes_yaml("n", 4, gpu=8) + queue_yaml("a") + queue_yaml("b")
            + "".join(gang_yaml(f"a{i}", "a", 1, gpu=8, running_on=[f"n-{i}"], grace=30) for i in range(4))
            + gang_yaml("b-job", "b", 2, gpu=8, creation=10))
    w = World(text)
    r = w.run(RECLAIM)
    assert len(r.evictions) == 2 and all(reason == "reclaim" for _, reason in r.evictions)
    assert r.binds == []
    w.tick(60)
    w.run(RECLAIM)
    assert len(w.bound("b-job")) == 2
    assert held(w, "a") == 2


def test_reclaim_stops_at_the_guarantee():
    # Two 16-GPU nodes, both a's; b wants one. a's deserved is its guarantee (24): evicting a 16-GPU pod would
    # leave a with 16 < 24, so nothing is reclaimed, whatever the vote of the first tier says.
    text = (nodes_yaml("n", 2, gpu=16) + queue_yaml("a", guarantee={GPU: 24}) + queue_yaml("b")
            + gang_yaml("a0", "a", 1, gpu=16, running_on=["n-0"]) + gang_yaml("a1", "a", 1, gpu=16, running_on=["n-1"])
            + gang_yaml("b-job", "b", 1, gpu=16, creation=10))
    w = World(text)
    r = w.run(RECLAIM)
    assert r.evictions == []
    # Without the guarantee the same cluster gives b its node.
    w2 = World(text.replace('guarantee:\n    resource: {nvidia.com/gpu: "24"}', "capability: {}"))
    r2 = w2.run(RECLAIM)
    assert len(r2.evictions) == 1


def test_reclaim_evicts_a_gang_whole():
    # a's 2-pod gang spans both nodes; b needs one node: evicting one pod would break the gang, so both go.
    text = (nodes_yaml("n", 3, gpu=8) + queue_yaml("a") + queue_yaml("b")
            + gang_yaml("a-gang", "a", 2, gpu=8, running_on=["n-0", "n-1"])
            + gang_yaml("a-one", "a", 1, gpu=8, running_on=["n-2"])
            + gang_yaml("b-job", "b", 1, gpu=8, creation=10))
    w = World(text)
    r = w.run(RECLAIM)
    evicted = sorted(k for k, _ in r.evictions)
    # The single pod is the cheaper victim (1 job, 1 pod) than the gang (1 job, 2 pods).
    assert evicted == ["default/a-one-0"]


def test_reclaim_never_from_a_non_reclaimable_queue():
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("a", reclaimable=False) + queue_yaml("b")
            + gang_yaml("a0", "a", 1, gpu=8, running_on=["n-0"]) + gang_yaml("a1", "a", 1, gpu=8, running_on=["n-1"])
            + gang_yaml("b-job", "b", 1, gpu=8, creation=10))
    w = World(text)
    for _ in range(3):
        w.run(RECLAIM)
        w.tick(60)
    assert w.evicted() == []


def test_reclaim_honours_never():
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("a") + queue_yaml("b")
            + gang_yaml("a0", "a", 1, gpu=8, running_on=["n-0"]) + gang_yaml("a1", "a", 1, gpu=8, running_on=["n-1"])
            + gang_yaml("b-job", "b", 1, gpu=8, creation=10, pod_kw={"never": True}))
    w = World(text)
    assert w.run(RECLAIM).evictions == []


def test_reclaim_discards_when_the_gang_cannot_be_pipelined():
    # b needs 3 nodes but a may give back only 2 (its deserved share is 2 of 4): nothing is evicted.
    text = (nodes_yaml("n", 4, gpu=8) + queue_yaml("a") + queue_yaml("b")
            + "".join(gang_yaml(f"a{i}", "a", 1, gpu=8, running_on=[f"n-{i}"]) for i in range(4))
            + gang_yaml("b-job", "b", 3, gpu=8, creation=10))
    w = World(text)
    r = w.run(RECLAIM)
    assert r.evictions == []


def test_overused_queue_does_not_reclaim():
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("a") + queue_yaml("b")
            + gang_yaml("a0", "a", 1, gpu=8, running_on=["n-0"]) + gang_yaml("b0", "b", 1, gpu=8, running_on=["n-1"])
            + gang_yaml("b-more", "b", 1, gpu=8, creation=10))
    w = World(text)
    assert w.run(RECLAIM).evictions == []


def test_reclaim_takes_a_gang_whole_when_only_the_gang_can_give():
    # a's 2-pod gang spans both nodes; b needs one node: evicting one pod would leave the gang half-running, so
    # both pods go (the second is released, reason "reclaim").
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("a") + queue_yaml("b")
            + gang_yaml("a-gang", "a", 2, gpu=8, running_on=["n-0", "n-1"], grace=30)
            + gang_yaml("b-job", "b", 1, gpu=8, creation=10))
    w = World(text)
    r = w.run(RECLAIM)
    assert sorted(r.evictions) == [("default/a-gang-0", "reclaim"), ("default/a-gang-1", "reclaim")]
    w.tick(60)
    w.run(RECLAIM)
    assert len(w.bound("b-job")) == 1
