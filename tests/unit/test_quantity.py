from fractions import Fraction

import pytest

from magma.api.quantity import Quantity, QuantityError, format_quantity, parse_quantity


@pytest.mark.parametrize(
    "text, value",
    [
        ("500m", Fraction(1, 2)),
        ("64", 64),
        ("128Gi", 128 * 2**30),
        ("1.5Ti", 3 * 2**39),
        ("1e3", 1000),
        ("1E-2", Fraction(1, 100)),
        ("10M", 10_000_000),
        ("100k", 100_000),
        ("0.5", Fraction(1, 2)),
        (".5", Fraction(1, 2)),
        ("-2", -2),
        ("+3Ki", 3072),
        ("250u", Fraction(1, 4000)),
        ("7n", Fraction(7, 10**9)),
    ],
)
def test_parse(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("bad", ["", "abc", "1Gb", "1.2.3", "Gi", "1 Gi x", "1e", "--1", "1e99"])
def test_parse_rejects_with_hint(bad):
    with pytest.raises(QuantityError) as e:
        parse_quantity(bad)
    assert "quantity" in str(e.value) or "exponent" in str(e.value)


def test_milli_and_units_round_up_like_apimachinery():
    assert Quantity.parse("1.5").milli() == 1500
    assert Quantity.parse("1n").milli() == 1  # rounds up
    assert Quantity.parse("1500m").units() == 2
    assert Quantity.parse(8).units() == 8


def test_yaml_scalars_keep_their_raw_form():
    assert Quantity.parse(64).raw == 64
    assert Quantity.parse("64").raw == "64"
    assert Quantity.parse(1.5).value == Fraction(3, 2)


@pytest.mark.parametrize("bad", [True, None, [1], {"a": 1}])
def test_non_quantity_types_are_rejected(bad):
    with pytest.raises(QuantityError):
        Quantity.parse(bad)


def test_format_picks_largest_exact_suffix():
    assert format_quantity(Fraction(1, 2)) == "500m"
    assert format_quantity(64) == "64"
    assert format_quantity(2000) == "2k"
    assert format_quantity(128 * 2**30, binary=True) == "128Gi"
    assert format_quantity(0) == "0"
    assert format_quantity(-1500) == "-1500"


def test_arithmetic_is_exact():
    total = Quantity.parse("0")
    for _ in range(10):
        total = total + Quantity.parse("100m")
    assert total == 1
    assert Quantity.parse("1Gi") - Quantity.parse("512Mi") == Quantity.parse("512Mi")
    assert Quantity.parse("1Gi") > Quantity.parse("1G")
