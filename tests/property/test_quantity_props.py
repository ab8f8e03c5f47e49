from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from magma.api.quantity import Quantity, format_quantity, parse_quantity
from magma.api.resources import Resources

suffixes = st.sampled_from(["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti", "n", "u"])


@given(st.integers(min_value=-(10**12), max_value=10**12), suffixes)
def test_text_round_trip(n, suffix):
    text = f"{n}{suffix}"
    value = parse_quantity(text)
    assert parse_quantity(format_quantity(value)) == value
    assert parse_quantity(format_quantity(value, binary=True)) == value


@given(st.fractions(min_value=-(10**9), max_value=10**9, max_denominator=10**9))
def test_format_then_parse_is_exact_to_the_nano(f):
    # Values finer than a nano round away from zero, as apimachinery does; anything else is exact.
    back = parse_quantity(format_quantity(f))
    if (f * 10**9).denominator == 1:
        assert back == f
    else:
        assert abs(back) >= abs(f) and abs(back - f) < Fraction(1, 10**9)


names = st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "pods", "example.com/fpga"])
vectors = st.dictionaries(names, st.integers(min_value=0, max_value=10**15)).map(Resources)


@given(vectors, vectors)
def test_resource_arithmetic(a, b):
    assert (a + b) - b == a
    assert a.less_equal(a + b)
    assert (a + b).max_with(a) == a + b
    assert a.min_with(b).less_equal(a)
    assert a.min_with(b).less_equal(b)
    assert not (a - b - a).any_negative() or not b.is_empty()


@given(vectors)
def test_quantities_round_trip_through_text(a):
    assert Resources.parse(a.to_quantities()) == a


@given(st.integers(min_value=0, max_value=10**6))
def test_milli_value_matches_decimal(n):
    assert Quantity.parse(f"{n}m").milli() == n
