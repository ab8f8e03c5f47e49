"""The `pytorch` job plugin: torch.distributed's environment for a master/worker job.

For every pod of a job that has the master task (`--master`, default `master`):

- `MASTER_ADDR` = `<job>-<master>-0.<job>` (the master's first pod through the svc plugin's DNS; the template's
  hostname/subdomain win when set), `MASTER_PORT` = `--port` (23456);
- `WORLD_SIZE` = replicas of the master task + replicas of the worker task (`--worker`, default `worker`);
- `RANK` = 0 for the master pod, `<index> + 1` for worker pod `<index>` (other tasks get no RANK);
- the port is opened on every container as `pytorchjob-port`;
- with `--wait-master-enabled`, worker pods get an init container `wait-for-master` (image
  `--wait-master-image`, default busybox:1.36.1) polling the master port for `--wait-master-timeout` s (300).

Volcano's mutating webhook adds the svc plugin whenever pytorch is on (magma.api.defaults does the same).
"""

from __future__ import annotations

from magma.api.objects import Container, Job, Pod

from .base import JobPlugin, add_env, domain_name, extra_list, index_of, parse_flags, register, task_of

DEFAULT_PORT = 23456
DEFAULT_MASTER = "master"
DEFAULT_WORKER = "worker"
DEFAULT_TIMEOUT = 300
DEFAULT_WAIT_MASTER_IMAGE = "busybox:1.36.1"
PORT_NAME = "pytorchjob-port"

ENV_MASTER_ADDR = "MASTER_ADDR"
ENV_MASTER_PORT = "MASTER_PORT"
ENV_WORLD_SIZE = "WORLD_SIZE"
ENV_RANK = "RANK"


@register
class PytorchPlugin(JobPlugin):
    name = "pytorch"

    def __init__(self, args=None):
        super().__init__(args)
        flags = parse_flags(self.args, {
            "master": DEFAULT_MASTER,
            "worker": DEFAULT_WORKER,
            "port": DEFAULT_PORT,
            "wait-master-enabled": False,
            "wait-master-timeout": DEFAULT_TIMEOUT,
            "wait-master-image": DEFAULT_WAIT_MASTER_IMAGE,
        })
        self.master: str = flags["master"]
        self.worker: str = flags["worker"]
        self.port: int = flags["port"]
        self.wait_master_enabled: bool = flags["wait-master-enabled"]
        self.wait_master_timeout: int = flags["wait-master-timeout"]
        self.wait_master_image: str = flags["wait-master-image"]

    def world_size(self, job: Job) -> int:
        return sum(t.replicas for t in job.spec.tasks if t.name in (self.master, self.worker))

    def master_addr(self, job: Job) -> str | None:
        task = next((t for t in job.spec.tasks if t.name == self.master), None)
        return domain_name(job, task, 0) if task is not None else None

    def on_pod_create(self, pod: Pod, job: Job) -> None:
        addr = self.master_addr(job)
        if addr is None:
            return  # Volcano logs "job doesn't have task master" and leaves the pod alone
        role = task_of(pod)
        rank: int | None = None
        if role == self.worker:
            try:
                rank = int(index_of(pod)) + 1
            except ValueError:
                return
            self._add_wait_for_master(pod, addr)
        elif role == self.master:
            rank = 0
        world = str(self.world_size(job))
        for c in pod.spec.containers:
            self._open_port(c)
            add_env(c, ENV_MASTER_ADDR, addr)
            add_env(c, ENV_MASTER_PORT, str(self.port))
            add_env(c, ENV_WORLD_SIZE, world)
            if rank is not None:
                add_env(c, ENV_RANK, str(rank))

    def _open_port(self, c: Container) -> None:
        ports = extra_list(c, "ports")
        if not any(isinstance(p, dict) and p.get("containerPort") == self.port for p in ports):
            ports.append({"name": PORT_NAME, "containerPort": self.port})

    def _add_wait_for_master(self, pod: Pod, addr: str) -> None:
        if not self.wait_master_enabled:
            return
        if any(c.name == "wait-for-master" for c in pod.spec.init_containers):
            return
        script = (
            f'echo "Waiting for master node {addr}:{self.port} to be ready..."\n'
            f"TIMEOUT={self.wait_master_timeout}\nELAPSED=0\n"
            f"until {{ nc -z {addr} {self.port} || echo > /dev/tcp/{addr}/{self.port}; }} 2>/dev/null; do\n"
            '  if [ $ELAPSED -ge $TIMEOUT ]; then\n'
            '    echo "Timeout waiting for master after ${TIMEOUT} seconds"\n    exit 1\n  fi\n'
            "  sleep 2\n  ELAPSED=$((ELAPSED + 2))\ndone\n"
            'echo "Master node is ready!"'
        )
        init = Container.model_validate({
            "name": "wait-for-master", "image": self.wait_master_image, "command": ["sh", "-c", script],
        })
        pod.spec.init_containers = [*pod.spec.init_containers, init]  # assignment: dumped as set
