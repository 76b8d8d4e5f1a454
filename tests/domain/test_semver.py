"""Strict SemVer 2.0 parsing and precedence, as Kubernetes reads version attributes."""

from __future__ import annotations

import pytest
from modelplane.domain import semver


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("1.2.3", (1, 2, 3), id="plain"),
        pytest.param("0.0.0", (0, 0, 0), id="zeros"),
        pytest.param("1.2.3-rc.1+b.2", (1, 2, 3), id="pre-and-build"),
        pytest.param("18446744073709551615.0.0", (2**64 - 1, 0, 0), id="uint64-max"),
    ],
)
def test_parse(text: str, want: tuple[int, int, int]) -> None:
    version = semver.parse(text)
    assert (version.major, version.minor, version.patch) == want
    assert str(version) == text


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("1.2", id="two-parts"),
        pytest.param("v1.2.3", id="v-prefix"),
        pytest.param("01.2.3", id="leading-zero"),
        pytest.param("1.2.3-01", id="numeric-prerelease-leading-zero"),
        pytest.param("1.2.3-", id="empty-prerelease"),
        pytest.param("1.2.3+", id="empty-build"),
        pytest.param("1.2.3-a_b", id="bad-prerelease-char"),
        pytest.param("18446744073709551616.0.0", id="uint64-overflow"),
        pytest.param("１.2.3", id="non-ascii-digit"),  # noqa: RUF001 - a non-ASCII digit is invalid
    ],
)
def test_malformed(text: str) -> None:
    with pytest.raises(semver.SemverError):
        semver.parse(text)


@pytest.mark.parametrize(
    ("left", "right", "want"),
    [
        pytest.param("9.0.0", "8.9.0", 1, id="major"),
        pytest.param("1.10.0", "1.9.0", 1, id="numeric-not-lexical"),
        pytest.param("1.2.3-alpha", "1.2.3", -1, id="prerelease-first"),
        pytest.param("1.2.3-alpha.1", "1.2.3-alpha.beta", -1, id="number-before-text"),
        pytest.param("1.2.3-beta.2", "1.2.3-beta.11", -1, id="numeric-identifiers"),
        pytest.param("1.2.3+a", "1.2.3+b", 0, id="build-ignored"),
    ],
)
def test_compare(left: str, right: str, want: int) -> None:
    assert semver.parse(left).compare(semver.parse(right)) == want


def test_normalize() -> None:
    assert semver.normalize_and_parse("v1.2") == semver.parse("1.2.0")
    with pytest.raises(semver.SemverError):
        semver.normalize_and_parse("1.2-rc")
