"""The `ssh` job plugin: password-less SSH between the pods of a job (what MPI launchers need).

On job add it makes a Secret `<job>-ssh` with a fresh 2048-bit RSA key pair:

- `id_rsa`: the private key, PEM "RSA PRIVATE KEY" (PKCS#1), as Volcano writes it;
- `id_rsa.pub` and `authorized_keys`: the public key in OpenSSH `ssh-rsa AAAA...` form;
- `config`: `StrictHostKeyChecking no`, `UserKnownHostsFile /dev/null`, then a `Host` entry for every pod
  (`Host <job>-<task>-<i>` / `HostName <job>-<task>-<i>.<job>` / `Port 22`).

Every container mounts it at /root/.ssh (subPath `.ssh`, mode 0600; mode 0644 when `--ssh-key-file-path`
moves it elsewhere, because a non-root user then reads it). Arguments: `--ssh-key-file-path`,
`--ssh-private-key` / `--ssh-public-key` (use a given pair instead of generating one), `--ssh-port` (22).

Secret data is stored base64-encoded, as the API server stores it.
"""

from __future__ import annotations

import base64

from magma.api.objects import Job, Pod, Secret

from .base import (
    JobPlugin,
    PluginContext,
    add_volume,
    add_volume_mount,
    all_containers,
    controller_ref,
    parse_flags,
    pod_name,
    register,
)

SSH_PRIVATE_KEY = "id_rsa"
SSH_PUBLIC_KEY = "id_rsa.pub"
SSH_AUTHORIZED_KEYS = "authorized_keys"
SSH_CONFIG = "config"
SSH_ABSOLUTE_PATH = "/root/.ssh"
SSH_RELATIVE_PATH = ".ssh"
KEY_BITS = 2048


def generate_rsa_key_pair(bits: int = KEY_BITS) -> tuple[bytes, bytes]:
    """(private key PEM in PKCS#1 form, public key as an OpenSSH authorized_keys line)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    private = key.private_bytes(
        encoding=serialization.Encoding.PEM,
        format=serialization.PrivateFormat.TraditionalOpenSSL,
        encryption_algorithm=serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        encoding=serialization.Encoding.OpenSSH, format=serialization.PublicFormat.OpenSSH
    ) + b"\n"
    return private, public


def generate_ssh_config(job: Job, port: int) -> str:
    lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
    for task in job.spec.tasks:
        spec = task.template.spec
        for i in range(task.replicas):
            host = spec.hostname or pod_name(job.name, task.name or "", i)
            sub = spec.subdomain or job.name
            lines += [f"Host {host}", f"  HostName {host}.{sub}", f"  Port {port}"]
            if spec.hostname:
                break
    return "\n".join(lines) + "\n"


def _b64(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode("ascii")


def decode_secret_data(secret: Secret) -> dict[str, bytes]:
    """The Secret's data as bytes (stringData wins, as the API server merges it)."""
    out = {k: base64.b64decode(v) for k, v in secret.data.items()}
    out.update({k: v.encode() for k, v in secret.string_data.items()})
    return out


@register
class SshPlugin(JobPlugin):
    name = "ssh"
    #: Key size; tests may lower it for speed, nothing else should.
    key_bits: int = KEY_BITS

    def __init__(self, args=None):
        super().__init__(args)
        flags = parse_flags(self.args, {
            "ssh-key-file-path": SSH_ABSOLUTE_PATH,
            "ssh-private-key": "",
            "ssh-public-key": "",
            "ssh-port": 22,
        })
        self.key_file_path: str = flags["ssh-key-file-path"]
        self.private_key: str = flags["ssh-private-key"]
        self.public_key: str = flags["ssh-public-key"]
        port = flags["ssh-port"]
        self.port: int = port if 0 < port <= 65535 else 22  # Volcano falls back to 22 on a bad port

    @staticmethod
    def secret_name(job: Job) -> str:
        return f"{job.name}-ssh"

    def on_pod_create(self, pod: Pod, job: Job) -> None:
        name = self.secret_name(job)
        mode = 0o600 if self.key_file_path == SSH_ABSOLUTE_PATH else 0o644
        items = [{"key": k, "path": f"{SSH_RELATIVE_PATH}/{k}"}
                 for k in (SSH_PRIVATE_KEY, SSH_PUBLIC_KEY, SSH_AUTHORIZED_KEYS, SSH_CONFIG)]
        add_volume(pod, {"name": name, "secret": {"secretName": name, "items": items, "defaultMode": mode}})
        for c in all_containers(pod):
            add_volume_mount(c, {"mountPath": self.key_file_path, "subPath": SSH_RELATIVE_PATH, "name": name})

    def _data(self, job: Job) -> dict[str, str]:
        if self.private_key:
            private, public = self.private_key.encode(), self.public_key.encode()
        else:
            private, public = generate_rsa_key_pair(self.key_bits)
        return {
            SSH_PRIVATE_KEY: _b64(private),
            SSH_PUBLIC_KEY: _b64(public),
            SSH_AUTHORIZED_KEYS: _b64(public),
            SSH_CONFIG: _b64(generate_ssh_config(job, self.port)),
        }

    def on_job_add(self, job: Job, ctx: PluginContext) -> None:
        if self.added(ctx):
            return
        key = f"{job.namespace}/{self.secret_name(job)}"
        config = _b64(generate_ssh_config(job, self.port))
        existing = ctx.cluster.get("Secret", key)
        # Volcano keeps an existing Secret whose config is unchanged (it never rotates a live key pair).
        if existing is None or getattr(existing, "data", {}).get(SSH_CONFIG) != config:
            secret = Secret.model_validate({
                "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": self.secret_name(job), "namespace": job.namespace,
                             "ownerReferences": [controller_ref(job)]},
                "data": self._data(job),
            })
            ctx.create_or_update(secret)
        super().on_job_add(job, ctx)

    def on_job_delete(self, job: Job, ctx: PluginContext) -> None:
        if not self.added(ctx):
            return
        ctx.delete("Secret", f"{job.namespace}/{self.secret_name(job)}")
        super().on_job_delete(job, ctx)
