"""Deleting a composite as a real control plane does, with Crossplane's Usages: in waves.

``kubectl delete --cascade=foreground`` of a composite, played on the loop's store:

- the API server's foreground deletion: an object goes only once what it controls is gone
  (its composed resources carry ``blockOwnerDeletion``);
- Crossplane's Usage webhook: an object an ordering Usage (``spec.by`` set) names as
  ``of`` is refused (and the attempt replayed later) while the Usage's ``by`` exists;
- Crossplane's Usage controller: a composed Usage being deleted waits for its ``by``;
- a protection Usage (no ``by``, like the InferenceCluster's ClusterUsage) refuses the
  deletion outright, as :meth:`ControlPlane.delete` does.

:func:`delete_in_order` removes, wave after wave, every object of the tree nothing holds
any more, and returns the waves: the order a real teardown takes, one step per wave.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.dev.fakes import base
from modelplane.dev.fakes.base import Key, describe
from modelplane.dev.loop.harness import ControlPlane
from modelplane.dev.loop.records import DeletionBlockedError

USAGE_GROUP = "protection.crossplane.io"


def delete_in_order(plane: ControlPlane, key: Key) -> list[list[Key]]:
    """Delete composite ``key`` and its tree in the order Usages and foreground deletion
    allow; return the waves, each sorted.

    Raises:
        DeletionBlockedError: a protection Usage holds ``key``, or the Usages hold each
            other so that nothing more can go (a cycle: a real teardown would hang).
    """
    protecting = [u for u in plane.usages_of(key) if not _spec(plane.store[u]).get("by")]
    if protecting:
        names = ", ".join(describe(k) for k in protecting)
        msg = f"{describe(key)} is in use by {names}"
        raise DeletionBlockedError(msg)
    left = {key, *plane.tree(key)}
    waves: list[list[Key]] = []
    while left:
        holds = _holds(plane, left)
        wave = sorted(k for k in left if not holds.get(k))
        if not wave:
            stuck = ", ".join(
                f"{describe(k)} (held by {describe(sorted(h)[0])})"
                for k, h in sorted(holds.items())
                if h
            )
            msg = f"the teardown of {describe(key)} hangs: {stuck}"
            raise DeletionBlockedError(msg)
        for gone in wave:
            del plane.store[gone]
        left -= set(wave)
        waves.append(wave)
    return waves


def _holds(plane: ControlPlane, left: set[Key]) -> dict[Key, set[Key]]:
    """What keeps each object of ``left`` from going now."""
    holds: dict[Key, set[Key]] = {k: set() for k in left}
    uids = {base.uid_of(plane.store[k]): k for k in left}
    for k in left:
        owner = uids.get(base.controller_uid(plane.store[k]))
        if owner is not None:
            holds[owner].add(k)  # foreground: the owner waits for what it controls
    for usage in (k for k in plane.store if k[0] == USAGE_GROUP):
        spec = _spec(plane.store[usage])
        by, of = spec.get("by"), spec.get("of")
        if not isinstance(by, Mapping) or not isinstance(of, Mapping):
            continue
        user = _resolve(plane, by, usage[2], None)
        used = _resolve(plane, of, usage[2], _text(of.get("resourceRef"), "namespace"))
        if user is None:
            continue  # its user is gone: the Usage no longer holds anything
        if used in holds:
            holds[used].add(user)  # the webhook refuses: the user is still there
        if usage in holds:
            holds[usage].add(user)  # the Usage controller waits for the user
    return holds


def _resolve(
    plane: ControlPlane, ref: Mapping[str, Any], usage_ns: str, namespace: str | None
) -> Key | None:
    """The stored object a Usage's ``by`` or ``of`` names (in the Usage's namespace, or
    the one named, or cluster-scoped), or None once it is gone."""
    name = _text(ref.get("resourceRef"), "name")
    group, kind = base.group_of(ref), str(ref.get("kind", ""))
    for ns in (namespace or usage_ns, ""):
        if (group, kind, ns, name) in plane.store:
            return (group, kind, ns, name)
    return None


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _text(obj: Any, field: str) -> str:
    value = obj.get(field) if isinstance(obj, Mapping) else None
    return value if isinstance(value, str) else ""
