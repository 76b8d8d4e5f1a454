"""The deployment's own ModelReplicas whose index label cannot be read: kept, not dropped.

The scheduler names a replica by its cluster and its ``modelplane.ai/replica-index``
label; a replica whose label someone rewrote to something that is not a number cannot
be claimed (its pools stay charged, as another's would be). Left out of the desired
state, Crossplane would delete it: a running replica lost to a typo. So each such
replica the composite composed is composed again exactly as observed (held), and a
Warning names it and the label, until the label is fixed or the replica deleted.
"""

from __future__ import annotations

from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.domain.api import INDEX_LABEL
from modelplane.domain.text import cut

_KEPT_METADATA = ("name", "namespace", "labels", "annotations")


def keep_unindexed(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> list[str]:
    """Hold every observed ModelReplica with an unreadable index; return the warnings."""
    said: list[str] = []
    for key in sorted(req.observed.resources):
        obj = kit.struct_to_dict(req.observed.resources[key].resource)
        if obj.get("kind") != "ModelReplica":
            continue
        meta = _mapping(obj.get("metadata"))
        labels = _mapping(meta.get("labels"))
        if INDEX_LABEL not in labels or _is_index(labels[INDEX_LABEL]):
            continue
        name = str(meta.get("name") or key)
        shown = cut(repr(labels[INDEX_LABEL]), 80)
        if key in rsp.desired.resources:
            said.append(
                f"ModelReplica {name}: label {INDEX_LABEL} is {shown}, not a number; "
                "composed again with its index"
            )
            continue
        kit.compose(rsp, key, _as_observed(obj))
        said.append(
            f"ModelReplica {name}: label {INDEX_LABEL} is {shown}, not a number; kept as it "
            "is and not counted as a replica until the label is a number again"
        )
    return said


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _is_index(value: Any) -> bool:
    return isinstance(value, str) and value.isascii() and value.isdigit()


def _as_observed(obj: dict[str, Any]) -> dict[str, Any]:
    """The replica as the composite last wanted it: identity, labels and spec, no status."""
    meta = _mapping(obj.get("metadata"))
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": "ModelReplica",
        "metadata": {k: meta[k] for k in _KEPT_METADATA if k in meta},
        "spec": obj.get("spec") if isinstance(obj.get("spec"), dict) else {},
    }
