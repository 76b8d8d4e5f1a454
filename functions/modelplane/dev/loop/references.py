"""The reference fields of a cloud managed resource, resolved as its provider resolves them.

A ``*Selector`` with ``matchLabels`` (and ``matchControllerRef``), a ``*Ref`` or a
``*Refs`` entry by name, and a ``*SecretRef`` (a Secret key selector) anywhere under
``spec.forProvider``. What a spec asks for is read once per spec and kept as checks; each
observation runs them against the store as it is then.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from modelplane.dev.fakes import cloud
from modelplane.dev.fakes.base import controller_uid, group_of
from modelplane.dev.loop.world import Family, World

Check = Callable[[Family, World, str, "str | None"], "str | None"]
"""One reference field, checked against the family's resources in the namespace, the
world, the namespace and the resource's controller: why it resolves to nothing, or None."""


def unresolved(world: World, obj: Mapping[str, Any]) -> list[str]:
    """Say which reference fields of ``spec.forProvider`` match nothing."""
    asked = _CHECKS.of(((obj.get("spec") or {}).get("forProvider")) or {})
    if not asked:
        return []
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    siblings = world.family(namespace, cloud.family(group_of(obj)))
    owner = controller_uid(obj)
    found = (check(siblings, world, namespace, owner) for check in asked)
    return [message for message in found if message is not None]


def checks(value: Any, path: str = "spec.forProvider") -> list[Check]:
    """The checks of every reference field under ``value``, in document order."""
    if isinstance(value, list):
        return [c for i, item in enumerate(value) for c in checks(item, f"{path}[{i}]")]
    if not isinstance(value, Mapping):
        return []
    found: list[Check] = []
    for name, item in value.items():
        where = f"{path}.{name}"
        if name.endswith("Selector") and isinstance(item, Mapping) and "matchLabels" in item:
            labels = dict(item.get("matchLabels") or {})
            found.append(_selector(where, labels, bool(item.get("matchControllerRef"))))
        elif name.endswith("SecretRef") and isinstance(item, Mapping):
            found.append(_secret(where, str(item.get("namespace") or ""), item.get("name")))
        elif name.endswith("Ref") and isinstance(item, Mapping) and "name" in item:
            found.append(_named(where, item["name"]))
        elif name.endswith("Refs") and isinstance(item, list):
            found += [_named(where, ref.get("name")) for ref in item if isinstance(ref, Mapping)]
        else:
            found += checks(item, where)
    return found


def _selector(where: str, labels: dict[str, Any], by_controller: bool) -> Check:
    def check(siblings: Family, _: World, __: str, owner: str | None) -> str | None:
        matched = siblings.selects(labels, owner if by_controller else None)
        return None if matched else f"{where} matches no resource"

    return check


def _secret(where: str, secret_namespace: str, name: Any) -> Check:
    """A Secret key selector, not a reference to another managed resource."""

    def check(_: Family, world: World, namespace: str, __: str | None) -> str | None:
        found = world.get("", "Secret", secret_namespace or namespace, str(name or ""))
        return None if found is not None else f"{where} names Secret {name}, which does not exist"

    return check


def _named(where: str, name: Any) -> Check:
    def check(siblings: Family, _: World, __: str, ___: str | None) -> str | None:
        return None if siblings.named(name) else f"{where} names {name}, which does not exist"

    return check


class _ChecksByIdentity:
    """The checks of each ``spec.forProvider`` seen, by the mapping's identity.

    Every pass observes every managed resource again, and most specs are the very objects
    the pass before saw: a status write copies the object, not its spec, and only a render
    writes a new spec. Nothing edits a spec in place, so its identity stands for its
    content while the entry holds it (which also keeps the id from being reused). Bounded:
    emptied when full.
    """

    LIMIT = 20_000

    def __init__(self) -> None:
        self._seen: dict[int, tuple[Mapping[str, Any], list[Check]]] = {}

    def of(self, for_provider: Mapping[str, Any]) -> list[Check]:
        entry = self._seen.get(id(for_provider))
        if entry is not None and entry[0] is for_provider:
            return entry[1]
        if len(self._seen) >= self.LIMIT:
            self._seen.clear()
        found = checks(for_provider)
        self._seen[id(for_provider)] = (for_provider, found)
        return found


_CHECKS = _ChecksByIdentity()
