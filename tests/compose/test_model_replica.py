"""ModelReplica: its inputs, what it composes on its cluster, and its conditions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import kit, registry, runtime
from modelplane.compose import replica_pods

from tests.requests import conditions, request


def member(
    role: str = "Standalone", *, pool: str = "gpu-l4", devices: int = 1, **fields: Any
) -> dict[str, Any]:
    """Return a ModelReplica member with an engine container and ``devices`` GPU requests."""
    found: dict[str, Any] = {
        "nodePoolName": pool,
        "role": role,
        "template": {"spec": {"containers": [{"image": "vllm", "name": "engine"}]}},
        **fields,
    }
    if devices:
        found["deviceRequests"] = [
            {
                "count": devices,
                "deviceClassName": "gpu.nvidia.com",
                "name": "gpu",
                "selectors": [{"cel": 'device.driver == "gpu.nvidia.com"'}],
            }
        ]
    return found


def xr(
    *engines: Mapping[str, Any],
    cache: str | None = None,
    mode: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Return a ModelReplica on cluster ``eks`` (one Standalone engine by default)."""
    spec: dict[str, Any] = {
        "clusterName": "eks",
        "engines": list(engines or [{"members": [member()], "name": "llm"}]),
    }
    if cache:
        spec["modelCacheRef"] = {"name": cache}
    if mode:
        spec["serving"] = {"mode": mode}
    metadata: dict[str, Any] = {"name": "llm-abcde", "namespace": "ml-team"}
    if labels:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "metadata": metadata,
        "spec": spec,
    }


def cluster(**status: Any) -> dict[str, Any]:
    """Return InferenceCluster ``eks`` with ``status`` (a provider config by default)."""
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": "eks"},
        "status": status if status else {"providerConfigRef": {"name": "eks-kubernetes"}},
    }


def cache(phase: str | None = "Ready", on: str = "eks") -> dict[str, Any]:
    """Return ModelCache ``weights``, in ``phase`` on cluster ``on`` (None: not listed)."""
    clusters = [{"name": on, "phase": phase}] if phase else []
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelCache",
        "metadata": {"name": "weights", "namespace": "ml-team"},
        "spec": {"huggingFace": {"repo": "org/model", "sizeGiB": 10}, "source": "HuggingFace"},
        "status": {"clusters": clusters},
    }


def object_state(synced: str = "True", ready: str = "True", message: str = "") -> dict[str, Any]:
    """Return an observed Object with ``Synced`` and ``Ready`` conditions."""
    return {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "status": {
            "conditions": [
                {"message": message, "reason": "x", "status": synced, "type": "Synced"},
                {"reason": "x", "status": ready, "type": "Ready"},
            ]
        },
    }


def run(
    composite: Mapping[str, Any],
    *,
    required: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    observed: Mapping[str, Mapping[str, Any]] | None = None,
) -> fnv1.RunFunctionResponse:
    """Run the ModelReplica function, with the cluster (and cache) found by default."""
    found = {"cluster": [cluster()], "model-cache": [cache()]} if required is None else required
    return runtime.run(request(composite, required=found, observed=observed), registry.COMPOSERS)


def desired(rsp: fnv1.RunFunctionResponse) -> dict[str, dict[str, Any]]:
    """Return the desired composed resources, by key."""
    return {k: kit.struct_to_dict(v.resource) for k, v in rsp.desired.resources.items()}


def manifest(rsp: fnv1.RunFunctionResponse, key: str) -> dict[str, Any]:
    """Return the manifest a desired Object wraps."""
    return desired(rsp)[key]["spec"]["forProvider"]["manifest"]  # type: ignore[no-any-return]


def fatal(rsp: fnv1.RunFunctionResponse) -> list[str]:
    return [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]


# -- inputs -----------------------------------------------------------------------------


@dataclass
class Waiting:
    """A case where the replica waits for an input and composes nothing."""

    reason: str
    message: str
    composite: dict[str, Any] = field(default_factory=xr)
    required: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    observed: dict[str, dict[str, Any]] = field(default_factory=dict)


WAITING = [
    pytest.param(Waiting("ClusterNotFound", "waiting for InferenceCluster eks"), id="no-cluster"),
    pytest.param(
        Waiting(
            "ProviderConfigPending",
            "status.providerConfigRef.name",
            required={"cluster": [cluster(gateway={"address": "1.2.3.4"})]},
        ),
        id="no-provider-config",
    ),
]


@pytest.mark.parametrize("case", WAITING)
def test_waits_for_its_inputs_and_composes_nothing(case: Waiting) -> None:
    rsp = run(case.composite, required=case.required, observed=case.observed)
    status, reason, message = conditions(rsp)["ModelAccepted"]
    assert (status, reason) == ("False", case.reason)
    assert case.message in message
    assert conditions(rsp)["ModelReady"][:2] == ("False", case.reason)
    assert dict(rsp.desired.resources) == {}
    assert rsp.desired.composite.ready == fnv1.READY_FALSE
    assert fatal(rsp) == []


def test_requires_its_cluster_and_its_cache() -> None:
    rsp = run(xr(cache="weights"), required={})
    wanted = rsp.requirements.resources
    assert (wanted["cluster"].kind, wanted["cluster"].match_name) == ("InferenceCluster", "eks")
    assert wanted["cluster"].namespace == "", "InferenceClusters are cluster-scoped"
    assert (wanted["model-cache"].kind, wanted["model-cache"].match_name) == (
        "ModelCache",
        "weights",
    )
    assert wanted["model-cache"].namespace == "ml-team"


def test_without_a_cache_it_requires_none() -> None:
    rsp = run(xr())
    assert set(rsp.requirements.resources) == {"cluster", replica_pods.KEY}


@pytest.mark.parametrize(
    ("found", "reason", "message"),
    [
        pytest.param([], "ModelCacheNotFound", "ModelCache weights does not exist", id="missing"),
        pytest.param(
            [cache("Hydrating")], "ModelCacheNotReady", "ModelCache weights is Hydrating on eks",
            id="hydrating",
        ),
        pytest.param(
            [cache("Ready", on="gke")], "ModelCacheNotReady", "weights is Pending on eks",
            id="staged-elsewhere",
        ),
        pytest.param([cache("Ready")], "ModelStarting", "waiting for Deployment", id="ready"),
    ],
)  # fmt: skip
def test_engines_mount_the_cache_pvc_and_say_when_it_is_not_ready(
    found: list[dict[str, Any]], reason: str, message: str
) -> None:
    rsp = run(xr(cache="weights"), required={"cluster": [cluster()], "model-cache": found})
    volumes = manifest(rsp, "engine-llm-workload")["spec"]["template"]["spec"]["volumes"]
    assert {
        "name": "modelplane-model-cache",
        "persistentVolumeClaim": {"claimName": "weights-model-cache"},
    } in volumes, "Kubernetes holds the pods until the cache's PVC exists"
    status, got_reason, got = conditions(rsp)["ModelReady"]
    assert (status, got_reason) == ("False", reason)
    assert message in got


def test_a_serving_replica_is_ready_while_its_cache_restages() -> None:
    required = {"cluster": [cluster()], "model-cache": [cache("Hydrating")]}
    observed = {k: object_state() for k in KEYS}
    rsp = run(xr(cache="weights"), required=required, observed=observed)
    assert conditions(rsp)["ModelReady"][:2] == ("True", "Available")
    assert rsp.desired.composite.ready == fnv1.READY_UNSPECIFIED  # Crossplane derives Ready


# -- what it composes -------------------------------------------------------------------


def test_composes_every_object_through_the_clusters_provider_config() -> None:
    status = {
        "gateway": {"address": "1.2.3.4", "name": "edge", "namespace": "gw"},
        "providerConfigRef": {"name": "eks-kubernetes"},
    }
    rsp = run(xr(), required={"cluster": [cluster(**status)]})
    found = desired(rsp)
    # The InferenceCluster holds itself (a ClusterUsage) while replicas use it: no Usage here.
    assert set(found) == {*KEYS, replica_pods.KEY}
    for key, item in found.items():
        assert item["kind"] == ("Object" if key in KEYS else "ObservedObjectCollection"), key
        assert item["spec"]["providerConfigRef"] == {
            "kind": "ClusterProviderConfig",
            "name": "eks-kubernetes",
        }, key
    parent = manifest(rsp, "route")["spec"]["parentRefs"][0]
    assert (parent["name"], parent["namespace"]) == ("edge", "gw")


def test_gateway_defaults_to_the_serving_stacks() -> None:
    parent = manifest(run(xr()), "route")["spec"]["parentRefs"][0]
    assert (parent["name"], parent["namespace"]) == ("modelplane", "modelplane-system")


def test_spec_reaches_the_workload() -> None:
    gang = {
        "copies": 2,
        "members": [
            member("Leader", devices=0),
            member("Worker", devices=8, worker={"nodes": 3}),
        ],
        "name": "coder",
    }
    rsp = run(xr(gang, labels={"modelplane.ai/deployment": "coder", "team": "ml"}))
    lws = manifest(rsp, "engine-coder-workload")
    assert lws["kind"] == "LeaderWorkerSet"
    assert lws["spec"]["replicas"] == 2
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 4
    worker = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    assert worker["metadata"]["labels"]["modelplane.ai/deployment"] == "coder"
    assert worker["spec"]["nodeSelector"] == {"modelplane.ai/pool": "gpu-l4"}
    claims = manifest(rsp, "engine-coder-worker-claims")["spec"]["spec"]["devices"]["requests"]
    assert claims[0]["exactly"]["count"] == 8
    assert "engine-coder-leader-claims" not in desired(rsp), "the leader claims nothing"


def test_prefill_decode_composes_llm_d_routing() -> None:
    engines = [
        {"members": [member()], "name": "p", "phase": "Prefill"},
        {"members": [member()], "name": "d", "phase": "Decode"},
    ]
    rsp = run(xr(*engines, mode="PrefillDecode"))
    found = desired(rsp)
    assert {"inference-pool", "epp-deployment", "epp-config"} <= set(found)
    backend = manifest(rsp, "route")["spec"]["rules"][0]["backendRefs"][0]
    assert backend["kind"] == "InferencePool"


def test_same_request_same_response() -> None:
    first = run(xr(cache="weights")).SerializeToString(deterministic=True)
    assert run(xr(cache="weights")).SerializeToString(deterministic=True) == first


# -- conditions -------------------------------------------------------------------------

KEYS = (
    "engine-llm-service",
    "engine-llm-standalone-claims",
    "engine-llm-workload",
    "epp-config",
    "epp-deployment",
    "epp-role",
    "epp-role-binding",
    "epp-service",
    "epp-service-account",
    "inference-pool",
    "namespace",
    "route",
)
"""Every Object a one-engine Unified replica composes: its engine, and the endpoint
picker and InferencePool its route goes through."""


@dataclass
class Reported:
    """What the composed Objects report, and the conditions and readiness that follow."""

    observed: dict[str, dict[str, Any]]
    accepted: tuple[str, str]
    ready: tuple[str, str]
    composite_ready: int
    message: str = ""


REPORTED = [
    pytest.param(
        Reported({}, ("False", "Applying"), ("False", "ModelStarting"), fnv1.READY_FALSE),
        id="first-pass",
    ),
    pytest.param(
        Reported(
            {
                k: object_state(ready="False" if k == "engine-llm-workload" else "True")
                for k in KEYS
            },
            ("True", "Applied"),
            ("False", "ModelStarting"),
            fnv1.READY_FALSE,
            "Deployment llm-abcde-llm to become available",
        ),
        id="starting",
    ),
    pytest.param(
        Reported(
            {
                **{k: object_state() for k in KEYS},
                "engine-llm-workload": object_state("False", "False", "no space left"),
            },
            ("False", "Applying"),
            ("False", "ModelStarting"),
            fnv1.READY_FALSE,
            "Deployment llm-abcde-llm (no space left)",
        ),
        id="refused",
    ),
    pytest.param(
        Reported(
            {k: object_state(ready="False" if k == "route" else "True") for k in KEYS},
            ("True", "Applied"),
            ("True", "Available"),
            fnv1.READY_FALSE,
        ),
        id="serving-route-pending",
    ),
    pytest.param(
        Reported(
            {k: object_state() for k in KEYS},
            ("True", "Applied"),
            ("True", "Available"),
            fnv1.READY_UNSPECIFIED,
        ),
        id="ready",
    ),
    pytest.param(
        Reported(
            {k: object_state("False", "True", "connect: connection refused") for k in KEYS},
            ("False", "Applying"),
            ("False", "ClusterUnreachable"),
            fnv1.READY_FALSE,
            "no Object on eks syncs, so whether it serves is unknown: connect: connection refused",
        ),
        id="cluster-unreachable",
    ),
]


@pytest.mark.parametrize("case", REPORTED)
def test_conditions_follow_the_objects(case: Reported) -> None:
    rsp = run(xr(), observed=case.observed)
    got = conditions(rsp)
    assert got["ModelAccepted"][:2] == case.accepted
    assert got["ModelReady"][:2] == case.ready
    assert rsp.desired.composite.ready == case.composite_ready
    assert case.message in got["ModelAccepted"][2] + got["ModelReady"][2]


@pytest.mark.parametrize(
    ("composite", "message"),
    [
        pytest.param(
            xr(
                {
                    "members": [
                        member("Leader"),
                        member("Worker", worker={"nodes": 1}),
                        member("Worker", worker={"nodes": 1}),
                    ],
                    "name": "llm",
                }
            ),
            "engine 'llm': an engine is one Standalone member, or one Leader and one Worker",
            id="two-worker-members",
        ),
        pytest.param(
            {**xr(), "spec": {"engines": []}},
            "the ModelReplica is invalid",
            id="no-cluster-name",
        ),
        pytest.param(
            xr(
                {
                    "members": [member(template={"spec": {"containers": [{"name": "x"}]}})],
                    "name": "a",
                }
            ),
            "no container named 'engine'",
            id="no-engine-container",
        ),
    ],
)
def test_a_replica_that_cannot_run_says_why(composite: dict[str, Any], message: str) -> None:
    rsp = run(composite)
    status, reason, got = conditions(rsp)["ModelAccepted"]
    assert (status, reason) == ("False", "InvalidSpec")
    assert message in got
    assert dict(rsp.desired.resources) == {}
    assert [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING] == [got]
    assert fatal(rsp) == []
