"""framework/kept.py: memos kept across sessions per scheduler configuration."""

import gc

from magma.scheduler.framework.kept import Memo, PerConfig


class Config:  # any object that can be weakly referenced stands for a configuration
    pass


def test_a_configuration_keeps_its_memos_and_another_has_its_own():
    kept = PerConfig(max_entries=100)
    a, b = Config(), Config()
    kept.memo(a, "k")["state"] = 1.0
    assert kept.memo(a, "k") == {"state": 1.0}
    assert kept.memo(a, "other") == {}
    assert kept.memo(b, "k") == {}


def test_memos_of_a_configuration_that_is_gone_are_dropped():
    kept = PerConfig(max_entries=100)
    a = Config()
    kept.memo(a, "k")["state"] = 1.0
    del a
    gc.collect()
    b = Config()  # may reuse a's id: it must not see a's memos
    assert kept.memo(b, "k") == {}
    assert len(kept._by_config) == 1


def test_full_memos_are_dropped_at_once():
    kept = PerConfig(max_entries=3, max_keys=10)
    c = Config()
    kept.memo(c, "a").update({1: 1, 2: 2})
    kept.memo(c, "b").update({3: 3})
    assert kept.memo(c, "a") == {1: 1, 2: 2}  # known keys are not dropped
    assert kept.memo(c, "new") == {}  # three entries in all: a new key starts afresh
    assert kept.memo(c, "a") == {}
    few = PerConfig(max_entries=100, max_keys=2)
    few.memo(c, 1)[0] = 0
    few.memo(c, 2)[0] = 0
    few.memo(c, 3)
    assert few.memo(c, 1) == {}


def test_a_configuration_without_weak_references_keeps_nothing():
    assert PerConfig(max_entries=10).memo({"plain": "dict"}, "k") is None


def test_a_full_memo_drops_every_answer_before_keeping_one_more():
    memo = Memo(2)
    assert memo.keep("a", 1) == 1
    memo.keep("b", 2)
    assert memo == {"a": 1, "b": 2}
    memo.keep("c", 3)
    assert memo == {"c": 3}
