"""What the loop tests share: how long a fleet may take, how to find a resource in a
converged fleet, which reconciles failed, and the deployment the edits change."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import pytest
from modelplane.dev import validate
from modelplane.dev.fakes.base import Key, Obj, describe, get_path
from modelplane.dev.loop.apis import apis
from modelplane.dev.loop.harness import ControlPlane
from modelplane.dev.loop.records import PassRecord, condition_line

READY_WITHIN = 5
RECOVER_WITHIN = 5
EDIT_PASSES = 5

Locate = Callable[[ControlPlane], Key]


# --- locating resources in a converged fleet -------------------------------------------------


def _kind(kind: str, *, group: str | None = None, name: str | None = None) -> Locate:
    """The one object of ``kind`` (of ``group`` or a group ending in ``.group``; named
    ``name`` or ending in ``-name``)."""

    def locate(plane: ControlPlane) -> Key:
        found = [
            k
            for k in plane.find(kind)
            if (group is None or k[0] == group or k[0].endswith(f".{group}"))
            and (name is None or k[3] == name or k[3].endswith(f"-{name}"))
        ]
        if len(found) != 1:
            listed = ", ".join(describe(k) for k in found) or "none"
            msg = f"expected exactly one {kind} {group or ''} {name or ''} in the fleet, found {listed}"
            raise LookupError(msg)
        return found[0]

    return locate


def _object_of(owner_kind: str, *manifest_kinds: str) -> Locate:
    """The first provider-kubernetes Object a ``owner_kind`` composite controls, by manifest kind."""

    def locate(plane: ControlPlane) -> Key:
        for owner in plane.find(owner_kind):
            for key in plane.composed_by(owner):
                manifest = get_path(plane.store[key], "spec.forProvider.manifest") or {}
                if key[1] == "Object" and manifest.get("kind") in manifest_kinds:
                    return key
        owners = ", ".join(describe(k) for k in plane.find(owner_kind)) or f"no {owner_kind}"
        msg = f"no Object of {'/'.join(manifest_kinds)} composed by {owners}"
        raise LookupError(msg)

    return locate


def _controller(plane: ControlPlane, key: Key) -> Key:
    """The composite that controls ``key``."""
    uid = next(
        (
            r["uid"]
            for r in plane.get(key)["metadata"].get("ownerReferences") or ()
            if r.get("controller")
        ),
        None,
    )
    for candidate in plane.composites():
        if plane.store[candidate]["metadata"].get("uid") == uid:
            return candidate
    msg = f"{describe(key)} has no controlling composite"
    raise LookupError(msg)


def _located(plane: ControlPlane, locate: Locate, what: str) -> Key:
    try:
        return locate(plane)
    except LookupError as err:
        pytest.fail(
            f"precondition: {what}: {err}\nwhere the fleet stands:\n{plane.report()}",
            pytrace=False,
        )


def _running(plane: ControlPlane) -> tuple[list[Key], list[Key]]:
    """Every ModelReplica, and every Object a ModelReplica controls (its workload)."""
    replicas = plane.find("ModelReplica")
    uids = {plane.store[k]["metadata"].get("uid") for k in replicas}
    objects = sorted(
        k
        for k, o in plane.store.items()
        if k[1] == "Object"
        and any(
            r.get("controller") and r.get("uid") in uids
            for r in o["metadata"].get("ownerReferences") or ()
        )
    )
    return replicas, objects


PYTHON_ERRORS = re.compile(
    r"Traceback|internal error|\b(Key|Type|Attribute|Index|Value|Recursion|Decode|Assertion)Error\b"
)
"""What a message that leaks a Python exception looks like (issue 9: name the object and field)."""


def _python_errors(records: Iterable[PassRecord], exclude: Iterable[Key] = ()) -> list[str]:
    """Fatal results, Warning events and conditions that carry a raw Python exception."""
    found = []
    skip = set(exclude)
    for record in records:
        texts = [(k, m) for k, m in record.fatal.items()]
        texts += [(k, w) for k, ws in record.warnings.items() for w in ws]
        texts += [
            (k, condition_line(c)) for k, conds in record.conditions.items() for c in conds.values()
        ]
        found += [
            f"pass {record.number}, {describe(k)}: {t}"
            for k, t in texts
            if k not in skip and PYTHON_ERRORS.search(t)
        ]
    return list(dict.fromkeys(found))


def _errors(records: Iterable[PassRecord], exclude: Iterable[Key] = ()) -> list[str]:
    """Reconciles that failed: the engine's errors and applies the API server refused."""
    skip = set(exclude)
    found = [
        f"pass {r.number}, {describe(k)}: {m}"
        for r in records
        for k, m in r.errors.items()
        if k not in skip
    ]
    return list(dict.fromkeys(found))


def _not_ready_text(plane: ControlPlane, keys: Iterable[Key]) -> str:
    return "\n".join("  " + plane.state(k) for k in keys)


# --- the deployment the edits change ------------------------------------------------------

DEPLOYMENT = _kind("ModelDeployment", name="qwen-demo")


def _admissible(obj: Obj) -> None:
    """Fail when the API server would refuse the edited composite (the XRD's schema)."""
    if obj.get("kind") not in apis():
        return
    meta = obj.get("metadata") or {}
    plain = {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "metadata": {k: meta[k] for k in ("name", "namespace", "labels") if k in meta},
        "spec": {k: v for k, v in (obj.get("spec") or {}).items() if k != "crossplane"},
    }
    try:
        problems = validate.validate([plain])
    except FileNotFoundError:
        return  # bin/crank is not built: the schema can't be checked here
    assert not problems, "the edit itself is invalid: " + "; ".join(map(str, problems))


def _own_replicas(plane: ControlPlane, deployment: Key) -> list[Key]:
    return [k for k in plane.composed_by(deployment) if k[1] == "ModelReplica"]
