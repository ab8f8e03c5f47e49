"""magma.replay.gorand against numbers printed by Go itself.

The reference values come from a throwaway Go program (go1.26, `math/rand`) using `rand.New(rand.NewSource(seed))`,
whose stream is the one the FGD simulator's `rand.Seed(seed)` global generator produces:

    r := rand.New(rand.NewSource(42)); fmt.Println(r.Int63(), r.Int63(), ...)
    r.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] }); r.Perm(15)
"""

from __future__ import annotations

import pytest

from magma.replay.gorand import GoRand

INT63 = {
    1: [5577006791947779410, 8674665223082153551, 6129484611666145821, 4037200794235010051, 3916589616287113937],
    42: [3440579354231278675, 608747136543856411, 5571782338101878760, 1926012586526624009, 404153945743547657],
    0: [8717895732742165505, 2259404117704393152, 6050128673802995827, 501233450539197794, 3390393562759376202],
    -7: [747107023976529931, 7084732931963018726, 6995717851144434728, 814608651260322299, 2783162703872624372],
    # seed % (2^31 - 1) == 0 falls back to Go's fixed seed 89482311, as seed 0 does
    2147483647: [8717895732742165505, 2259404117704393152, 6050128673802995827, 501233450539197794,
                 3390393562759376202],
    1 << 40: [5470237361722394362, 6322525149314491254, 1177463506020107830, 1565541666764780662,
              7675952003761928004],
}


@pytest.mark.parametrize("seed", sorted(INT63))
def test_int63_streams(seed):
    r = GoRand(seed)
    assert [r.int63() for _ in range(5)] == INT63[seed]


def test_intn_sequence_including_power_of_two_and_int63_paths():
    r = GoRand(42)
    ns = [1, 2, 3, 7, 10, 100, 1000, 8152, 1 << 20, (1 << 31) - 1, 1 << 33, 5000000000]
    assert [r.intn(n) for n in ns] == [0, 1, 2, 1, 3, 45, 357, 5528, 498544, 1388082643, 8390554626, 4608899041]


def test_other_methods():
    r = GoRand(42)
    assert r.uint32() == 1602144611
    assert r.int31() == 141734987
    assert r.int63n(1000000007) == 99402667
    assert r.int31n(12345) == 2625
    assert r.float64() == 0.043818458599374305


def test_shuffle_then_perm():
    r = GoRand(7)
    xs = list(range(20))
    r.shuffle_list(xs)
    assert xs == [9, 10, 8, 14, 6, 16, 5, 1, 3, 12, 7, 0, 13, 17, 2, 11, 15, 19, 4, 18]
    assert r.perm(15) == [11, 10, 13, 9, 14, 8, 5, 7, 6, 3, 4, 2, 12, 1, 0]


def test_the_replays_draw_order_for_seed_42():
    """Int() discarded, Shuffle(8152), Intn(8152) draws, then Perm(1213): Go's numbers at each step."""
    r = GoRand(42)
    r.int()
    ys = list(range(8152))
    r.shuffle_list(ys)
    assert ys[:10] == [255, 1685, 6784, 4463, 602, 1564, 3882, 7257, 6545, 1541]
    assert ys[-1] == 538
    assert [r.intn(8152) for _ in range(5)] == [3888, 5689, 2936, 788, 5416]
    p = r.perm(1213)
    assert p[:10] == [583, 44, 1101, 311, 331, 774, 267, 685, 874, 273]
    assert p[-1] == 1189
    assert sorted(p) == list(range(1213))


def test_bad_arguments():
    r = GoRand(1)
    for fn in (r.intn, r.int31n, r.int63n):
        with pytest.raises(ValueError):
            fn(0)
