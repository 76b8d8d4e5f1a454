"""Read the referenced ModelCache into the scheduler's footprint of it."""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf import struct_pb2 as structpb

from modelplane.domain.cache import CacheStatus
from modelplane.domain.scheduling.fleet import (
    CacheFootprint,
    labels,
)
from modelplane.planning.fields import (
    Fields,
    UnreadableError,
    _at,
    _describe,
    _objects,
    _string_map,
    _text,
)


@dataclass(frozen=True)
class CacheState:
    """The referenced ModelCache: none referenced, unknown, missing, or found.

    Attributes:
        problem: Why the cache that was found could not be read (it then reads as
            ``unknown``: nothing new is placed, nothing placed moves).
    """

    name: str = ""
    status: CacheStatus = CacheStatus.NONE
    footprint: CacheFootprint | None = None
    problem: str = ""


def read_cache(name: str | None, answered: bool, found: list[structpb.Struct]) -> CacheState:
    """Read the referenced ModelCache into its footprint.

    The footprint is the cache's ``clusterSelector`` and, once its status lists where it
    stages, those clusters (except where staging failed). A cache that cannot be read
    reads as not read yet, with the problem said.

    Args:
        name: The referenced cache's name; None when the deployment references none.
        answered: Whether Crossplane has answered the cache requirement yet.
        found: What it answered: the cache, or nothing when it does not exist.
    """
    if name is None:
        return CacheState()
    if not answered:
        return CacheState(name, CacheStatus.UNKNOWN, CacheFootprint(name, resolved=False))
    if not found:
        return CacheState(name, CacheStatus.MISSING, CacheFootprint(name, resolved=False))
    fields = found[0].fields
    try:
        match = _at(fields, "spec", lambda s: _at(s, "clusterSelector", _match_labels))
        staged = _at(fields, "status", _staged)
    except UnreadableError as exc:
        problem = f"{_describe('ModelCache', fields)}: {exc} (read as not resolved)"
        return CacheState(name, CacheStatus.UNKNOWN, CacheFootprint(name, resolved=False), problem)
    return CacheState(
        name, CacheStatus.FOUND, CacheFootprint(name, True, labels(match) or None, staged)
    )


def _match_labels(selector: Fields) -> dict[str, str]:
    return _string_map(selector, "matchLabels")


def _staged(status: Fields) -> frozenset[str] | None:
    """The clusters the cache stages to (those not Failed); None until it lists any."""
    staged = []
    for i, entry in enumerate(_objects(status, "clusters")):
        try:
            staged.append((_text(entry, "name"), _text(entry, "phase")))
        except UnreadableError as exc:
            error = exc.within(f"clusters[{i}]")
            raise error from None
    if not staged:
        return None
    return frozenset(name for name, phase in staged if phase != "Failed")
