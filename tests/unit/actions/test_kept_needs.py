"""Work the actions skip or keep without changing an answer: an OrderedHeap's lone item is keyed only when another
joins it, and a job's gang need is kept with its task counts when no TaskOrder is asked for it."""

from __future__ import annotations

import heapq

from action_builders import World, conf, gang_yaml, nodes_yaml, queue_yaml
from magma.api.resources import Resources
from magma.scheduler.actions.allocate import OrderedHeap
from magma.scheduler.framework import TaskStatus
from magma.scheduler import reasons

S = TaskStatus


def test_heap_keys_a_lone_item_only_when_another_joins_it():
    asked: list[int] = []

    def key(x: int) -> int:
        asked.append(x)
        return x

    heap = OrderedHeap(lambda a, b: a - b, key=key)
    heap.push(5)
    assert asked == [] and heap.pop() == 5  # alone: popped without its key
    heap.push(7)
    heap.push(3)
    assert asked == [7, 3]  # the lone item is keyed when the second joins it
    heap.push(4)
    assert [heap.pop() for _ in range(3)] == [3, 4, 7]
    assert asked == [7, 3, 4] and not heap


def test_heap_pops_in_order_with_pushes_between_pops():
    items = [9, 2, 7, 2, 5, 1, 8]

    def cmp(a: int, b: int) -> int:
        return (a > b) - (a < b)

    # the reference: heapq over (item, insertion number)
    ref, expected = [], []
    for i, x in enumerate(items):
        heapq.heappush(ref, (x, i))
        if i % 3 == 2:
            expected.append(heapq.heappop(ref)[0])
    expected += [heapq.heappop(ref)[0] for _ in range(len(ref))]
    for key in (None, lambda x: x):
        heap = OrderedHeap(cmp, key=key)
        popped = []
        for i, x in enumerate(items):
            heap.push(x)
            if i % 3 == 2:
                popped.append(heap.pop())
        while heap:
            popped.append(heap.pop())
        assert popped == expected == [2, 1, 2, 5, 7, 8, 9]


def test_gang_need_is_kept_with_the_job_counts_but_not_for_part_of_a_gang():
    text = (nodes_yaml("n", 2, gpu=8) + queue_yaml("team")
            + gang_yaml("whole", "team", 3, gpu=2) + gang_yaml("part", "team", 4, gpu=1, min_member=2))
    ssn = World(text).session(conf("enqueue, allocate", ["priority", "gang"], ["predicates", "nodeorder"]))
    whole, part = ssn.jobs["default/whole"], ssn.jobs["default/part"]

    gpus = Resources.of(gpu=1)["nvidia.com/gpu"]  # (one GPU in stored units)
    need = reasons.gang_need(ssn, whole)
    assert need["nvidia.com/gpu"] == 6 * gpus and "pods" not in need
    assert reasons.gang_need(ssn, whole) is need  # kept: no task changed status
    first = next(iter(whole.tasks.values()))
    first.status = S.BINDING  # placed for good: the need is renewed with the counts
    assert reasons.gang_need(ssn, whole)["nvidia.com/gpu"] == 4 * gpus

    # Two of four tasks missing: the first two in TaskOrder are summed, and nothing is kept for it.
    assert reasons.gang_need(ssn, part)["nvidia.com/gpu"] == 2 * gpus
    assert ("reasons.gang_need", part.min_available) in part.stats().memo
    assert part.stats().memo[("reasons.gang_need", part.min_available)] is None
