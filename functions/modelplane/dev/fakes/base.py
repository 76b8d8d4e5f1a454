"""What every fake provider shares: object keys, conditions, field paths, stable digests.

Everything here is a pure function of its arguments, so two runs report the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping
from typing import Any

from modelplane.domain import api

Obj = dict[str, Any]
Key = tuple[str, str, str, str]
"""(group, kind, namespace, name): how the store names an object (the version aside)."""

TIME = "2025-01-01T00:00:00Z"
"""Every condition's lastTransitionTime: the fakes are deterministic."""
MODELPLANE_GROUP = api.MODELPLANE.partition("/")[0]
MODELPLANE_GROUPS = tuple(
    version.partition("/")[0] for version in (api.MODELPLANE, api.INFRASTRUCTURE)
)
HELM_GROUP = api.HELM.partition("/")[0]
KUBERNETES_GROUP = api.KUBERNETES_OBJECT.partition("/")[0]
GATEWAY_GROUP = api.GATEWAY_GROUP


# --- keys and plain helpers ------------------------------------------------------------------


def group_of(obj: Mapping[str, Any]) -> str:
    """Return an object's API group ("" for the core group)."""
    return str(obj.get("apiVersion", "")).rpartition("/")[0]


def key_of(obj: Mapping[str, Any]) -> Key:
    """Return the store key of an object."""
    meta = obj.get("metadata") or {}
    return (
        group_of(obj),
        str(obj.get("kind", "")),
        str(meta.get("namespace") or ""),
        str(meta.get("name") or ""),
    )


AMBIGUOUS_KINDS = frozenset({"ProviderConfig", "ClusterProviderConfig", "Cluster", "NodePool"})
"""Kinds several API groups define: messages name their group too."""


def describe(key: Key) -> str:
    """Name an object for a message: ``Kind namespace/name`` (or ``Kind name``)."""
    group, kind, namespace, name = key
    if kind in AMBIGUOUS_KINDS and group:
        kind = f"{kind}.{group}"
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def is_composite(obj: Mapping[str, Any]) -> bool:
    """Tell whether an object is one of Modelplane's composites (by API group)."""
    return group_of(obj) in MODELPLANE_GROUPS


def controller_uid(obj: Mapping[str, Any]) -> str:
    """Return the UID of an object's controller ("" when nothing controls it)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref.get("uid", ""))
    return ""


def uid_of(obj: Mapping[str, Any]) -> str:
    """Return an object's UID ("" when it has none)."""
    return str((obj.get("metadata") or {}).get("uid") or "")


def conditions_of(obj: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Return an object's status conditions by type."""
    raw = ((obj or {}).get("status") or {}).get("conditions") or []
    return {str(c.get("type")): c for c in raw if isinstance(c, dict)}


def condition_is(obj: Mapping[str, Any] | None, typ: str, status: str = "True") -> bool:
    """Tell whether an object reports condition ``typ`` with ``status``."""
    return conditions_of(obj).get(typ, {}).get("status") == status


def condition(typ: str, status: bool, reason: str, message: str = "") -> dict[str, Any]:
    """Return one status condition as Kubernetes and crossplane-runtime write it."""
    out: dict[str, Any] = {
        "type": typ,
        "status": "True" if status else "False",
        "reason": reason,
        "lastTransitionTime": TIME,
    }
    if message:
        out["message"] = message
    return out


def digest(*parts: str, length: int = 17) -> str:
    """A stable hex digest of ``parts``: the fakes' ids, tokens and addresses."""
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:length]


def b64(text: str) -> str:
    """Base64 of ``text``, as a Secret's ``data`` holds it."""
    return base64.b64encode(text.encode()).decode()


def octet(*parts: str) -> int:
    """A stable last octet (10-209) for a documentation-range address."""
    return 10 + int(digest(*parts, length=8), 16) % 200


def path_steps(path: str) -> list[str]:
    """Split ``a.b[c.d].e`` into ``["a", "b", "c.d", "e"]`` (brackets hold keys with dots)."""
    steps: list[str] = []
    for dotted, bracketed in re.findall(r"([^.\[\]]+)|\[['\"]?([^\]'\"]+)['\"]?\]", path):
        steps.append(dotted or bracketed)
    return steps


def get_path(obj: Mapping[str, Any], path: str) -> Any:
    """Return the value at a field path (None when any step is missing)."""
    current: Any = obj
    for step in path_steps(path):
        if not isinstance(current, Mapping) or step not in current:
            return None
        current = current[step]
    return current


def drop_path(obj: dict[str, Any], path: str) -> bool:
    """Remove the value at a field path; tell whether there was one."""
    *parents, last = path_steps(path)
    current: Any = obj
    for step in parents:
        if not isinstance(current, dict) or step not in current:
            return False
        current = current[step]
    if isinstance(current, dict) and last in current:
        del current[last]
        return True
    return False


def set_path(obj: dict[str, Any], path: str, value: Any) -> None:
    """Set the value at a field path, creating the objects on the way."""
    *parents, last = path_steps(path)
    current = obj
    for step in parents:
        found = current.get(step)
        if not isinstance(found, dict):
            found = current[step] = {}
        current = found
    current[last] = value


_SCALARS = (str, int, float, type(None))


def copy_tree(value: Any) -> Any:
    """Copy an object as JSON holds it: every mapping and list anew, the scalars shared.

    What ``copy.deepcopy`` gives for such a tree, at a fraction of its cost (it keeps a memo
    of everything it copied): the loop copies every workload's manifest on every report.
    """
    if isinstance(value, dict):
        return {k: v if isinstance(v, _SCALARS) else copy_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if isinstance(v, _SCALARS) else copy_tree(v) for v in value]
    if isinstance(value, Mapping):
        return {k: copy_tree(v) for k, v in value.items()}
    return value


def labels_match(obj: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Tell whether an object carries every label of ``wanted``."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in wanted.items())


def name_of(obj: Mapping[str, Any]) -> str:
    """Return an object's name ("" when it has none)."""
    return str((obj.get("metadata") or {}).get("name", ""))
