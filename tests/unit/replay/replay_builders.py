"""Tiny node and task lists for replay tests, and a cluster state set to chosen free amounts."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from magma.replay.openb import NodeList, PodList
from magma.replay.protocol import ClusterState, Workload
from magma.scheduler.framework.devices import MILLI, fragmentation


def nodes(*specs: tuple) -> NodeList:
    """specs: (cpu_milli, gpus) or (cpu_milli, gpus, model) or (cpu_milli, gpus, model, memory_mib)."""
    cpu, gpus, model, mem = [], [], [], []
    for s in specs:
        cpu.append(s[0])
        gpus.append(s[1])
        model.append(s[2] if len(s) > 2 else ("G" if s[1] else ""))
        mem.append(s[3] if len(s) > 3 else 1 << 20)
    return NodeList(path="<test>", names=tuple(f"n{i:02d}" for i in range(len(specs))),
                    cpu=np.array(cpu, dtype=np.int64), memory=np.array(mem, dtype=np.int64),
                    gpus=np.array(gpus, dtype=np.int64), model=tuple(model))


def pods(*specs: tuple) -> PodList:
    """specs: (cpu_milli, num_gpu, gpu_milli) or with memory_mib and gpu_spec."""
    cpu, k, m, mem, spec = [], [], [], [], []
    for s in specs:
        cpu.append(s[0])
        k.append(s[1])
        m.append(s[2])
        mem.append(s[3] if len(s) > 3 else 0)
        spec.append(s[4] if len(s) > 4 else "")
    return PodList(path="<test>", names=tuple(f"t{i:03d}" for i in range(len(specs))),
                   cpu=np.array(cpu, dtype=np.int64), memory=np.array(mem, dtype=np.int64),
                   num_gpu=np.array(k, dtype=np.int64), gpu_milli=np.array(m, dtype=np.int64),
                   gpu_spec=tuple(spec))


def state(node_list: NodeList, pod_list: PodList, free: Sequence[tuple[int, Sequence[int]]] | None = None,
          popularity: int = 95) -> ClusterState:
    """A cluster state; `free` gives each node's (free cpu, free milli per GPU) when not all free."""
    wl = Workload(pod_list, node_list, popularity)
    st = ClusterState(node_list, wl, track_frag=True)
    if free is not None:
        for i, (cpu, gpus) in enumerate(free):
            st.cpu[i] = cpu
            st.gpu[i, :] = 0
            st.gpu[i, :len(gpus)] = gpus
        st.nfull = (st.gpu == MILLI).sum(axis=1)
        st.gmax = st.gpu.max(axis=1)
        st.gsum = st.gpu.sum(axis=1)
        st.frag = fragmentation(st.target, st.cpu, st.gpu, wl.target_access)
        st.frag_total = float(st.frag.sum())
    return st


def task_class(st: ClusterState, cpu: int, k: int, m: int):
    """The workload's class for (cpu, k, m) (it must be in the task list)."""
    for tc in st.workload.classes:
        if (tc.cpu, tc.k, tc.m) == (cpu, k, m):
            return tc
    raise KeyError((cpu, k, m))


# Four sharing tasks (4 cores, half a GPU), two whole-GPU tasks (8 cores), two CPU-only tasks (2 cores).
ABC = [(4000, 1, 500)] * 4 + [(8000, 1, 1000)] * 2 + [(2000, 0, 0)] * 2
