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


def _count(path: str, default: int = 0) -> str:
    """A CEL expression for an integer field of the object, ``default`` when unset.

    provider-kubernetes hands the object to CEL decoded from JSON, so its numbers are
    doubles while literals are ints; ``double()`` makes every comparison one of doubles,
    whatever the CEL version's rules for mixed numeric types.
    """
    return f"double(has(object.{path}) ? object.{path} : {default})"


_GENERATION_SEEN = (
    "(!has(object.metadata.generation) || "
    "(has(object.status.observedGeneration) && "
    "double(object.status.observedGeneration) >= double(object.metadata.generation)))"
)


def deployment_query() -> str:
    """Return the readiness query of a Deployment: every desired pod runs, updated.

    ``Available=True`` only means "minimum availability", which is ``replicas -
    maxUnavailable``: with one replica and ``maxUnavailable: 1`` it holds with no pod
    at all. So, as ``kubectl rollout status`` does, read the counts: the controller saw
    the current spec, every desired pod is updated and available, and no old pod is left.
    """
    desired = _count("spec.replicas", 1)
    updated = _count("status.updatedReplicas")
    return (
        f"has(object.status) && {_GENERATION_SEEN} && {updated} >= {desired} && "
        f"{_count('status.availableReplicas')} >= {desired} && "
        f"{_count('status.replicas')} <= {updated}"
    )


def leader_worker_set_query() -> str:
    """Return the readiness query of a LeaderWorkerSet: every desired group ready, updated.

    ``readyReplicas`` counts groups whose leader and workers are all ready;
    ``updatedReplicas`` those on the current template.
    """
    desired = _count("spec.replicas", 1)
    return (
        f"has(object.status) && {_count('status.readyReplicas')} >= {desired} && "
        f"{_count('status.updatedReplicas')} >= {desired}"
    )


def job_query() -> str:
    """Return the readiness query of a Job: its pods succeeded as many times as it asks."""
    return f"has(object.status) && {_count('status.succeeded')} >= {_count('spec.completions', 1)}"


def workload_query(kind: str) -> str:
    """Return the readiness query of a workload of ``kind``, judged by what runs.

    Raises:
        ValueError: a kind without a rule here (give it one rather than trust a condition).
    """
    match kind:
        case "Deployment":
            return deployment_query()
        case "LeaderWorkerSet":
            return leader_worker_set_query()
        case "Job":
            return job_query()
    msg = f"no readiness rule for workload kind {kind!r}"
    raise ValueError(msg)


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
        ready_when: A CEL query over the applied object that says it is ready (the
            Object then watches it); None makes the Object ready once the object exists.
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
    if ready_when is not None:
        # Readiness read off the applied object's status: watched, that status reaches the
        # Object when it changes, not at the provider's next poll (10 minutes by default),
        # so a replica turns Ready, and a rollout steps on, as soon as its pods run. The
        # provider honours it when run with --enable-watches, and ignores it otherwise.
        spec["watch"] = True
    if keep:
        spec["managementPolicies"] = list(KEEP)
    if references:
        spec["references"] = [dict(r) for r in references]
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(sorted(labels.items()))
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}


def covers(observed: Any, desired: Any) -> bool:
    """Tell whether ``observed`` holds everything of ``desired``: an applied manifest as the
    API server returns it covers what was applied (its defaults may add more)."""
    if isinstance(desired, Mapping):
        return isinstance(observed, Mapping) and all(
            k in observed and covers(observed[k], v) for k, v in desired.items()
        )
    if isinstance(desired, list):
        return (
            isinstance(observed, list)
            and len(observed) == len(desired)
            and all(covers(o, d) for o, d in zip(observed, desired, strict=True))
        )
    return bool(observed == desired)
