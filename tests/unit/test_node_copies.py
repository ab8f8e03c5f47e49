"""How many copies of a task's request a node's room takes (framework/nodes.py)."""

import numpy as np

from magma.scheduler.framework.nodes import copies_fit, room_copies


def test_copies_count_the_columns_the_task_asks_for():
    room = np.array([[10, 4], [3, 9], [-2, 8]])
    vec = np.array([3, 2])
    assert copies_fit(room, vec).tolist() == [2, 1, 0]


def test_a_node_short_on_a_column_the_task_does_not_ask_for_takes_no_copy():
    # columns: cpu, nvidia.com/gpu; the task asks for GPUs only, the second node is 1 cpu short (overcommitted)
    room = np.array([[4, 8], [-1, 8], [0, 3]])
    vec = np.array([0, 2])
    assert copies_fit(room, vec).tolist() == [4, 4, 1]  # (blind to the cpu column)
    assert room_copies(room, vec).tolist() == [4, 0, 1]  # as NodeTable.fits judges: every column
