"""Deleting a composite as a real control plane does, with Crossplane's Usages: in waves.

``kubectl delete --cascade=foreground`` of a composite, played on the loop's store:

- the API server's foreground deletion: an object goes only once what it controls is gone
  (its composed resources carry ``blockOwnerDeletion``);
- Crossplane's Usage webhook: an object an ordering Usage (``spec.by`` set) names as
  ``of`` is refused (and the attempt replayed later) while the Usage's ``by`` exists;
- Crossplane's Usage controller: a composed Usage being deleted waits for its ``by``;
- provider-kubernetes and provider-helm: a provider config stays (its in-use finalizer)
  while a resource that goes through it exists;
- a protection Usage (no ``by``, like the InferenceCluster's ClusterUsage) refuses the
  deletion outright, as :meth:`ControlPlane.delete` does.

Deletion reaches an object once its owner is being deleted and the webhook lets it (a
refused deletion is replayed once the Usage's user is gone); it goes once nothing it
waits for is left. :func:`delete_in_order` removes, wave after wave, whatever can go,
and returns the waves: the order a real teardown takes, one step per wave.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from modelplane.dev.fakes import base
from modelplane.dev.fakes.base import Key, describe
from modelplane.dev.loop.harness import ControlPlane
from modelplane.dev.loop.records import DeletionBlockedError
from modelplane.domain import teardown

USAGE_GROUP = "protection.crossplane.io"


def delete_in_order(plane: ControlPlane, key: Key) -> list[list[Key]]:
    """Delete composite ``key`` and its tree in the order Usages and foreground deletion
    allow; return the waves (what went at each step), each sorted.

    Raises:
        DeletionBlockedError: a protection Usage holds ``key``, or the tree cannot go any
            further (a real teardown would hang there).
    """
    protecting = [u for u in plane.usages_of(key) if not _spec(plane.store[u]).get("by")]
    if protecting:
        names = ", ".join(describe(k) for k in protecting)
        msg = f"{describe(key)} is in use by {names}"
        raise DeletionBlockedError(msg)
    left = _owned(plane, {key, *plane.tree(key)})
    deleting = {key}
    waves: list[list[Key]] = []
    while left:
        holds = _holds(plane, left)
        _propagate(plane, left, deleting, holds)
        wave = sorted(k for k in deleting if not holds[k].waits)
        if not wave:
            stuck = "; ".join(
                f"{describe(k)} waits for {', '.join(describe(w) for w in sorted(holds[k].waits))}"
                for k in sorted(deleting)
            )
            msg = f"the teardown of {describe(key)} hangs: {stuck}"
            raise DeletionBlockedError(msg)
        for gone in wave:
            del plane.store[gone]
        left -= set(wave)
        deleting -= set(wave)
        waves.append(wave)
    return waves


@dataclass
class _Hold:
    """Why an object of the tree has not gone yet."""

    refused_by: set[Key] = field(default_factory=set)  # users whose Usage refuses its deletion
    waits: set[Key] = field(default_factory=set)  # what it waits for once deleting


def _propagate(
    plane: ControlPlane, left: set[Key], deleting: set[Key], holds: dict[Key, _Hold]
) -> None:
    """Foreground deletion reaches what a deleting object controls, unless the webhook
    refuses it (a Usage's user is still there: the attempt is replayed later)."""
    uids = {base.uid_of(plane.store[k]): k for k in left}
    changed = True
    while changed:
        changed = False
        for k in sorted(left - deleting):
            owners = {uids.get(uid) for uid in _owner_uids(plane.store[k])}
            if owners & deleting and not holds[k].refused_by:
                deleting.add(k)
                changed = True


def _owned(plane: ControlPlane, keys: set[Key]) -> set[Key]:
    """``keys`` and, transitively, whatever they own (controller or not): what the
    garbage collector deletes with them (an ObservedObjectCollection's Objects too)."""
    found = set(keys)
    while True:
        uids = {base.uid_of(plane.store[k]) for k in found}
        more = {k for k, o in plane.store.items() if k not in found and _owner_uids(o) & uids}
        if not more:
            return found
        found |= more


def _owner_uids(obj: Mapping[str, Any]) -> set[str]:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return {str(r.get("uid")) for r in refs if isinstance(r, Mapping) and r.get("uid")}


def _holds(plane: ControlPlane, left: set[Key]) -> dict[Key, _Hold]:
    """What keeps each object of ``left`` from being deleted, or from going once deleting."""
    holds = {k: _Hold() for k in left}
    uids = {base.uid_of(plane.store[k]): k for k in left}
    for k in left:
        owner = uids.get(base.controller_uid(plane.store[k]))
        if owner is not None:
            holds[owner].waits.add(k)  # foreground: the owner waits for what it controls
    for k, obj in plane.store.items():
        config = _provider_config(plane, obj)
        if config in holds and config != k:
            holds[config].waits.add(k)  # the provider's in-use finalizer on its config
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
            holds[used].refused_by.add(user)  # the webhook refuses while the user is there
        if usage in holds:
            holds[usage].waits.add(user)  # the Usage controller waits for the user
    return holds


def _provider_config(plane: ControlPlane, obj: Mapping[str, Any]) -> Key | None:
    """The provider config a provider-kubernetes or provider-helm resource goes through."""
    group = base.group_of(obj)
    if group not in teardown.WORKLOAD_GROUPS or obj.get("kind") in teardown.PROVIDER_CONFIG_KINDS:
        return None
    ref = _spec(obj).get("providerConfigRef")
    if not isinstance(ref, Mapping):
        return None
    kind = _text(ref, "kind") or "ClusterProviderConfig"
    namespace = base.key_of(obj)[2] if kind == "ProviderConfig" else ""
    found = (group, kind, namespace, _text(ref, "name"))
    return found if found in plane.store else None


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
