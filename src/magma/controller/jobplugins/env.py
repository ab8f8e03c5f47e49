"""The `env` job plugin: every container learns its pod's index within the task.

Adds `VK_TASK_INDEX` and `VC_TASK_INDEX` (the same value; VK_ is the older name) to every container and init
container. The index is the last `-`-separated part of the pod name `<job>-<task>-<i>`. No arguments.
"""

from __future__ import annotations

from magma.api.objects import Job, Pod

from .base import JobPlugin, add_env, all_containers, index_of, register

TASK_VK_INDEX = "VK_TASK_INDEX"
TASK_INDEX = "VC_TASK_INDEX"


@register
class EnvPlugin(JobPlugin):
    name = "env"

    def on_pod_create(self, pod: Pod, job: Job) -> None:
        index = index_of(pod)
        for c in all_containers(pod):
            add_env(c, TASK_VK_INDEX, index)
            add_env(c, TASK_INDEX, index)
