"""provider-kubernetes Objects: how every workload-cluster manifest reaches its cluster.

An Object (a namespaced managed resource on the control plane) names the provider config
that reaches a workload cluster and carries one manifest to apply there. Its ``Ready``
condition follows the applied object's own status through a CEL query, so a composite
reads readiness off its composed Objects alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelplane.domain import api

API_VERSION = api.KUBERNETES_OBJECT
KIND = "Object"

KEEP = ("Observe", "Create", "Update", "LateInitialize")
"""Every management policy but Delete: for objects that others share, like a namespace."""


def condition_query(condition: str) -> str:
    """Return a readiness CEL query that is true once the object's ``condition`` is True."""
    return (
        "has(object.status) && has(object.status.conditions) && "
        f'object.status.conditions.exists(c, c.type == "{condition}" && c.status == "True")'
    )


def wrap(
    name: str,
    namespace: str,
    provider_config: Mapping[str, str],
    manifest: Mapping[str, Any],
    *,
    ready_when: str | None = None,
    keep: bool = False,
    references: Sequence[Mapping[str, Any]] = (),
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Return the Object that applies ``manifest`` on the cluster ``provider_config`` reaches.

    Args:
        name: The Object's name on the control plane.
        namespace: The Object's namespace on the control plane (its composite's).
        provider_config: ``spec.providerConfigRef``: the config's kind and name.
        manifest: The object to apply.
        ready_when: A CEL query over the applied object that says it is ready; None
            makes the Object ready once the object exists.
        keep: Never delete the applied object, even when the Object goes away (shared).
        references: ``spec.references``, e.g. a ``patchesFrom`` that copies a field of a
            control-plane object into the manifest.
        labels: The Object's own labels.
    """
    readiness = (
        {"policy": "SuccessfulCreate"}
        if ready_when is None
        else {"celQuery": ready_when, "policy": "DeriveFromCelQuery"}
    )
    spec: dict[str, Any] = {
        "forProvider": {"manifest": dict(manifest)},
        "providerConfigRef": dict(provider_config),
        "readiness": readiness,
    }
    if keep:
        spec["managementPolicies"] = list(KEEP)
    if references:
        spec["references"] = [dict(r) for r in references]
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(sorted(labels.items()))
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}
