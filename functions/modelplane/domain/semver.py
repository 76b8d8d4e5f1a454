"""Semantic versions exactly as Kubernetes' DRA reads them (github.com/blang/semver/v4).

``parse`` is the strict SemVer 2.0 parser Kubernetes uses for ``version`` attributes and
CEL's ``semver()``: three numeric parts without leading zeroes, then optional
pre-release and build identifiers. ``normalize_and_parse`` is ``semver(s, true)``.
"""

from __future__ import annotations

from dataclasses import dataclass

_NUMBERS = frozenset("0123456789")
_ALPHANUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789")
_MAX_UINT64 = 2**64 - 1


class SemverError(ValueError):
    """A string that is not a valid semantic version."""


@dataclass(frozen=True)
class Prerelease:
    """One dot-separated pre-release identifier: numeric or alphanumeric."""

    number: int | None
    text: str

    def compare(self, other: Prerelease) -> int:
        """Order identifiers: numbers before text, numbers numerically, text bytewise."""
        if self.number is not None and other.number is not None:
            return _sign(self.number - other.number)
        if self.number is not None:
            return -1
        if other.number is not None:
            return 1
        return (self.text > other.text) - (self.text < other.text)


@dataclass(frozen=True)
class Version:
    """A parsed version. Equality of content, ordering by :meth:`compare`."""

    major: int
    minor: int
    patch: int
    pre: tuple[Prerelease, ...] = ()
    build: tuple[str, ...] = ()

    def compare(self, other: Version) -> int:
        """Return -1, 0 or 1 by SemVer precedence (build metadata is ignored)."""
        for mine, theirs in (
            (self.major, other.major),
            (self.minor, other.minor),
            (self.patch, other.patch),
        ):
            if mine != theirs:
                return _sign(mine - theirs)
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for mine_pre, their_pre in zip(self.pre, other.pre, strict=False):
            order = mine_pre.compare(their_pre)
            if order:
                return order
        return _sign(len(self.pre) - len(other.pre))

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(p.text for p in self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def parse(text: str) -> Version:
    """Parse a version strictly, as blang/semver's ``Parse`` does.

    Raises:
        SemverError: the text is not a SemVer 2.0 version.
    """
    if not text:
        msg = "Version string empty"
        raise SemverError(msg)
    parts = text.split(".", 2)
    if len(parts) != 3:
        msg = "No Major.Minor.Patch elements found"
        raise SemverError(msg)
    major = _number(parts[0], "major")
    minor = _number(parts[1], "minor")
    rest = parts[2]
    build: list[str] = []
    pre: list[str] = []
    if "+" in rest:
        rest, _, tail = rest.partition("+")
        build = tail.split(".")
    if "-" in rest:
        rest, _, tail = rest.partition("-")
        pre = tail.split(".")
    patch = _number(rest, "patch")
    prerelease = tuple(_prerelease(p) for p in pre)
    for item in build:
        if not item:
            msg = "Build meta data is empty"
            raise SemverError(msg)
        if not _only(item, _ALPHANUM):
            msg = f"Invalid character(s) found in build meta data {item!r}"
            raise SemverError(msg)
    return Version(major, minor, patch, prerelease, tuple(build))


def normalize_and_parse(text: str) -> Version:
    """Parse leniently, as CEL's ``semver(s, true)``: drop ``v``, leading zeroes, pad parts."""
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for index, part in enumerate(parts):
        if len(part) > 1:
            stripped = part.lstrip("0")
            if not stripped or stripped[0] not in _NUMBERS:
                stripped = "0" + stripped
            parts[index] = stripped
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            msg = "short version cannot contain PreRelease/Build meta data"
            raise SemverError(msg)
        parts += ["0"] * (3 - len(parts))
    return parse(".".join(parts))


def _number(part: str, name: str) -> int:
    if not _only(part, _NUMBERS):
        msg = f"Invalid character(s) found in {name} number {part!r}"
        raise SemverError(msg)
    if len(part) > 1 and part[0] == "0":
        msg = f"{name.capitalize()} number must not contain leading zeroes {part!r}"
        raise SemverError(msg)
    return _uint64(part)


def _prerelease(part: str) -> Prerelease:
    if not part:
        msg = "Prerelease is empty"
        raise SemverError(msg)
    if _only(part, _NUMBERS):
        if len(part) > 1 and part[0] == "0":
            msg = f"Numeric PreRelease version must not contain leading zeroes {part!r}"
            raise SemverError(msg)
        return Prerelease(_uint64(part), part)
    if not _only(part, _ALPHANUM):
        msg = f"Invalid character(s) found in prerelease {part!r}"
        raise SemverError(msg)
    return Prerelease(None, part)


def _uint64(digits: str) -> int:
    if not digits:
        msg = 'strconv.ParseUint: parsing "": invalid syntax'
        raise SemverError(msg)
    value = int(digits)
    if value > _MAX_UINT64:
        msg = f"strconv.ParseUint: parsing {digits!r}: value out of range"
        raise SemverError(msg)
    return value


def _only(text: str, allowed: frozenset[str]) -> bool:
    return all(c in allowed for c in text)


def _sign(number: int) -> int:
    return (number > 0) - (number < 0)
