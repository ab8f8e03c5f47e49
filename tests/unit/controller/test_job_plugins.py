"""Job plugins: env, svc, ssh, pytorch; the registry and flag parsing."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from controller_harness import Harness, make_job, task
from magma.controller import jobplugins
from magma.controller.jobplugins.base import env_value, parse_flags
from magma.controller.jobplugins.ssh import SshPlugin, decode_secret_data


def envs(pod, container: int = 0) -> dict[str, object]:
    out = {}
    for item in pod.spec.containers[container].env:
        out[item["name"]] = item.get("value", item.get("valueFrom"))
    return out


def mounts(container) -> list[dict]:
    return (container.model_extra or {}).get("volumeMounts", [])


def volumes(pod) -> list[dict]:
    return (pod.spec.model_extra or {}).get("volumes", [])


def test_registry_knows_the_four_plugins():
    assert set(jobplugins.registered()) >= {"env", "svc", "ssh", "pytorch"}
    assert jobplugins.build("nope", []) is None
    assert isinstance(jobplugins.build("ssh", []), SshPlugin)


@pytest.mark.parametrize("args,want", [
    ([], {"port": 23456, "master": "master", "on": False}),
    (["--port=1234", "--master", "chief", "-on"], {"port": 1234, "master": "chief", "on": True}),
    (["-port", "99", "--on=false", "--unknown=1", "stray"], {"port": 99, "master": "master", "on": False}),
    (["--port=abc"], {"port": 23456, "master": "master", "on": False}),
])
def test_parse_flags(args, want):
    assert parse_flags(args, {"port": 23456, "master": "master", "on": False}) == want


def test_env_plugin_sets_task_index():
    h = Harness(make_job(plugins={"env": []}, minAvailable=3, tasks=[task("ps", 1), task("worker", 2, spec={
        "initContainers": [{"name": "init", "image": "busybox"}],
        "containers": [{"name": "main", "image": "x"}]})]))
    h.start()
    w1 = h.pod("j-worker-1")
    assert envs(w1) == {"VK_TASK_INDEX": "1", "VC_TASK_INDEX": "1"}
    assert env_value(w1.spec.init_containers[0], "VC_TASK_INDEX") == "1"
    assert envs(h.pod("j-ps-0"))["VC_TASK_INDEX"] == "0"
    # the env is part of the dumped manifest
    assert w1.dump()["spec"]["containers"][0]["env"][1] == {"name": "VC_TASK_INDEX", "value": "1"}


def test_svc_plugin_objects_and_pod_changes():
    h = Harness(make_job(plugins={"svc": []}, minAvailable=3,
                         tasks=[task("ps", 1), task("worker-gpu", 2)]))
    h.start()
    svc = h.cluster.get("Service", "ns/j")
    assert svc.spec["clusterIP"] == "None"
    assert svc.spec["selector"] == {"volcano.sh/job-name": "j", "volcano.sh/job-namespace": "ns"}
    assert "publishNotReadyAddresses" not in svc.spec
    assert svc.metadata.owner_references[0].uid == "uid-j"
    cm = h.cluster.get("ConfigMap", "ns/j-svc")
    assert cm.data == {
        "ps.host": "j-ps-0.j",
        "VC_PS_HOSTS": "j-ps-0.j",
        "VC_PS_NUM": "1",
        "worker_gpu.host": "j-worker-gpu-0.j\nj-worker-gpu-1.j",
        "VC_WORKER_GPU_HOSTS": "j-worker-gpu-0.j,j-worker-gpu-1.j",
        "VC_WORKER_GPU_NUM": "2",
    }
    np = h.cluster.get("NetworkPolicy", "ns/j")
    sel = {"volcano.sh/job-name": "j", "volcano.sh/job-namespace": "ns"}
    assert np.spec == {"podSelector": {"matchLabels": sel},
                       "ingress": [{"from": [{"podSelector": {"matchLabels": sel}}]}],
                       "policyTypes": ["Ingress"]}
    pod = h.pod("j-worker-gpu-1")
    assert (pod.spec.hostname, pod.spec.subdomain) == ("j-worker-gpu-1", "j")
    e = envs(pod)
    assert e["VC_PS_HOSTS"] == {"configMapKeyRef": {"name": "j-svc", "key": "VC_PS_HOSTS"}}
    assert set(e) == {"VC_PS_HOSTS", "VC_PS_NUM", "VC_WORKER_GPU_HOSTS", "VC_WORKER_GPU_NUM"}
    assert {"name": "j-svc", "configMap": {"name": "j-svc"}} in volumes(pod)
    assert {"mountPath": "/etc/volcano", "name": "j-svc"} in mounts(pod.spec.containers[0])
    assert h.job().status.controlled_resources["plugin-svc"] == "svc"


def test_svc_plugin_arguments():
    h = Harness(make_job(plugins={"svc": ["--publish-not-ready-addresses", "--disable-network-policy"]}))
    h.start()
    assert h.cluster.get("Service", "ns/j").spec["publishNotReadyAddresses"] is True
    assert h.cluster.get("NetworkPolicy", "ns/j") is None


def test_svc_plugin_hosts_follow_template_hostname():
    h = Harness(make_job(plugins={"svc": []}, minAvailable=2,
                         tasks=[task("w", 2, spec={"hostname": "fixed", "subdomain": "sub"})]))
    h.start()
    assert h.cluster.get("ConfigMap", "ns/j-svc").data["w.host"] == "fixed.sub"
    assert h.pod("j-w-1").spec.hostname == "fixed"


def test_svc_objects_removed_on_finish_and_recreated_on_restart():
    h = Harness(make_job(plugins={"svc": []}, policies=[{"event": "PodFailed", "action": "RestartJob"}]))
    h.start()
    h.set_phase("j-worker-0", "Failed", exit_code=1)
    h.sync()  # RestartJob: side objects deleted, then recreated as the job is Pending again
    assert h.cluster.get("Service", "ns/j") is not None
    assert h.cluster.get("ConfigMap", "ns/j-svc") is not None
    h.command("CompleteJob")
    h.sync()
    assert h.phase() == "Completed"
    assert h.cluster.get("Service", "ns/j") is None
    assert h.cluster.get("ConfigMap", "ns/j-svc") is None
    assert h.cluster.get("NetworkPolicy", "ns/j") is None
    assert "plugin-svc" not in h.job().status.controlled_resources


def test_ssh_plugin_secret_is_a_real_key_pair(monkeypatch):
    monkeypatch.setattr(SshPlugin, "key_bits", 2048)
    h = Harness(make_job(plugins={"ssh": []}, minAvailable=3, tasks=[task("mpimaster", 1), task("mpiworker", 2)]))
    h.start()
    secret = h.cluster.get("Secret", "ns/j-ssh")
    assert secret is not None and secret.type == "Opaque"
    assert secret.metadata.owner_references[0].uid == "uid-j"
    data = decode_secret_data(secret)
    assert set(data) == {"id_rsa", "id_rsa.pub", "authorized_keys", "config"}
    assert data["id_rsa"].startswith(b"-----BEGIN RSA PRIVATE KEY-----")
    key = serialization.load_pem_private_key(data["id_rsa"], password=None)
    assert isinstance(key, rsa.RSAPrivateKey) and key.key_size == 2048
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    assert data["authorized_keys"].strip() == public
    assert data["id_rsa.pub"] == data["authorized_keys"]
    loaded = serialization.load_ssh_public_key(data["authorized_keys"].strip())
    assert loaded.public_numbers() == key.public_key().public_numbers()
    config = data["config"].decode()
    assert config.startswith("StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n")
    for name in ("j-mpimaster-0", "j-mpiworker-0", "j-mpiworker-1"):
        assert f"Host {name}\n  HostName {name}.j\n  Port 22\n" in config
    pod = h.pod("j-mpiworker-1")
    vol = next(v for v in volumes(pod) if v["name"] == "j-ssh")
    assert vol["secret"]["secretName"] == "j-ssh"
    assert vol["secret"]["defaultMode"] == 0o600
    assert [i["key"] for i in vol["secret"]["items"]] == ["id_rsa", "id_rsa.pub", "authorized_keys", "config"]
    assert {"mountPath": "/root/.ssh", "subPath": ".ssh", "name": "j-ssh"} in mounts(pod.spec.containers[0])


def test_ssh_plugin_key_file_path_and_port_args():
    h = Harness(make_job(plugins={"ssh": ["--ssh-key-file-path=/home/user/.ssh", "--ssh-port=2222"]}))
    h.start()
    pod = h.pod("j-worker-0")
    vol = next(v for v in volumes(pod) if v["name"] == "j-ssh")
    assert vol["secret"]["defaultMode"] == 0o644
    assert mounts(pod.spec.containers[0])[0]["mountPath"] == "/home/user/.ssh"
    config = decode_secret_data(h.cluster.get("Secret", "ns/j-ssh"))["config"].decode()
    assert "  Port 2222\n" in config


def test_ssh_key_is_stable_across_syncs_and_renewed_on_restart():
    h = Harness(make_job(plugins={"ssh": []}, policies=[{"event": "PodFailed", "action": "RestartJob"}]))
    h.start()
    first = h.cluster.get("Secret", "ns/j-ssh").data["id_rsa"]
    h.sync()
    assert h.cluster.get("Secret", "ns/j-ssh").data["id_rsa"] == first
    h.set_phase("j-worker-0", "Failed", exit_code=1)
    h.sync()
    assert h.cluster.get("Secret", "ns/j-ssh").data["id_rsa"] != first


def test_pytorch_plugin_env():
    h = Harness(make_job(plugins={"pytorch": [], "svc": []}, minAvailable=3,
                         tasks=[task("master", 1), task("worker", 2), task("other", 1)]))
    h.start()
    m = envs(h.pod("j-master-0"))
    assert (m["MASTER_ADDR"], m["MASTER_PORT"], m["WORLD_SIZE"], m["RANK"]) == ("j-master-0.j", "23456", "3", "0")
    w = envs(h.pod("j-worker-1"))
    assert (w["MASTER_ADDR"], w["WORLD_SIZE"], w["RANK"]) == ("j-master-0.j", "3", "2")
    o = envs(h.pod("j-other-0"))
    assert "RANK" not in o and o["WORLD_SIZE"] == "3"
    ports = (h.pod("j-worker-0").spec.containers[0].model_extra or {})["ports"]
    assert ports == [{"name": "pytorchjob-port", "containerPort": 23456}]


def test_pytorch_plugin_args():
    h = Harness(make_job(plugins={"pytorch": ["--master=chief", "--worker=w", "--port=29500",
                                              "--wait-master-enabled"]},
                         minAvailable=3, tasks=[task("chief", 1), task("w", 2)]))
    h.start()
    w = h.pod("j-w-0")
    e = envs(w)
    assert (e["MASTER_ADDR"], e["MASTER_PORT"], e["RANK"]) == ("j-chief-0.j", "29500", "1")
    assert [c.name for c in w.spec.init_containers] == ["wait-for-master"]
    assert h.pod("j-chief-0").spec.init_containers == []


def test_pytorch_without_master_task_changes_nothing():
    h = Harness(make_job(plugins={"pytorch": []}))
    h.start()
    assert "MASTER_ADDR" not in envs(h.pod("j-worker-0"))


def test_pytorch_adds_svc_through_defaults():
    from magma.api.objects import Job

    job = Job.model_validate({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
                              "metadata": {"name": "j", "namespace": "ns", "uid": "uid-j"},
                              "spec": {"plugins": {"pytorch": []}, "tasks": [task("master", 1), task("worker", 1)]}})
    h = Harness(job)
    h.start()
    assert "svc" in h.job().spec.plugins
    assert h.pod("j-worker-0").spec.subdomain == "j"
