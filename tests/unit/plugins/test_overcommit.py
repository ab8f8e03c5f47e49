"""overcommit: enqueue while inqueue + minResources fits total x factor - used."""

from __future__ import annotations

from plugin_builders import gang, gpus, job, nodes, open_session, tiers_config

CONF = tiers_config(["overcommit"])


def world(new_pods=2):
    # 4 nodes = 32 GPUs; 2 pods of 8 GPUs run; an Inqueue job reserves 8 GPUs.
    objs = nodes("gpu", 4)
    objs += gang("run", 2, gpu=8, cpu=1, memory="1Gi", with_min_resources=True, running_on=["gpu-0", "gpu-1"])
    objs += gang("waiting", 1, gpu=8, cpu=1, memory="1Gi", with_min_resources=True, phase="Inqueue")
    objs += gang("new", new_pods, gpu=8, cpu=1, memory="1Gi", with_min_resources=True)
    objs += gang("free", 1, gpu=8, cpu=1, memory="1Gi")  # no minResources
    return objs


def test_idle_is_total_times_factor_minus_used():
    ssn = open_session(world(), CONF)
    oc = ssn.plugins["overcommit"]
    assert gpus(oc.idle) == 32 * 1.2 - 16  # 22.4
    assert gpus(oc.inqueue) == 8


def test_used_and_idle_kept_by_the_table_amounts():
    """fastpath.plugin_setup_kept: a second open over the same used amounts takes the kept vectors, equal to those
    made afresh; other used amounts make their own."""
    from magma.scheduler.framework import fastpath
    from magma.scheduler.plugins import overcommit

    overcommit._OPENED.clear()
    first = open_session(world(), CONF).plugins["overcommit"]
    second = open_session(world(), CONF).plugins["overcommit"]
    assert len(overcommit._OPENED) == 1 and second.used is first.used and second.idle is first.idle
    with fastpath.disabled("plugin_setup_kept"):
        fresh = open_session(world(), CONF).plugins["overcommit"]
    assert fresh.used is not first.used and (fresh.used, fresh.idle) == (first.used, first.idle)
    objs = nodes("gpu", 4) + gang("run", 1, gpu=8, cpu=1, memory="1Gi", running_on=["gpu-0"])
    other = open_session(objs, CONF).plugins["overcommit"]
    assert len(overcommit._OPENED) == 2 and gpus(other.used) == 8 and gpus(other.idle) == 32 * 1.2 - 8


def test_enqueue_decisions_and_reason():
    ssn = open_session(world(new_pods=2), CONF)
    new = job(ssn, "new")
    assert ssn.job_enqueueable(new) is False  # 8 + 16 > 22.4
    assert new.reason == ("cluster over-commit limit: nvidia.com/gpu idle 22.4 (total 32 x 1.2 - used 16), "
                          "inqueue 8, job needs 16")
    assert any(e[4].startswith("resource in cluster is overused: overused nvidia.com/gpu") for e in ssn.events)
    assert ssn.job_enqueueable(job(ssn, "free")) is True
    ssn = open_session(world(new_pods=1), CONF)
    one = job(ssn, "new")
    assert ssn.job_enqueueable(one) is True  # 8 + 8 <= 22.4
    ssn.job_enqueued(one)
    assert ssn.job_enqueueable(one) is False  # 16 + 8 > 22.4


def test_factor_argument():
    conf = tiers_config([{"name": "overcommit", "arguments": {"overcommit-factor": 2.0}}])
    ssn = open_session(world(new_pods=2), conf)
    assert gpus(ssn.plugins["overcommit"].idle) == 48
    assert ssn.job_enqueueable(job(ssn, "new")) is True


def test_running_job_reserves_the_rest_of_its_min_resources():
    # A Running job whose minResources (24 GPUs) exceed what its 2 running pods hold (16): 8 stay reserved.
    objs = nodes("gpu", 4) + gang("r", 3, gpu=8, cpu=1, memory="1Gi", min_member=2, running_on=["gpu-0", "gpu-1"],
                                  phase="Running", with_min_resources=False)
    from plugin_builders import podgroup
    objs[4] = podgroup("r", min_member=2, phase="Running", min_resources={"nvidia.com/gpu": 24})
    ssn = open_session(objs, CONF)
    assert gpus(ssn.plugins["overcommit"].inqueue) == 8
