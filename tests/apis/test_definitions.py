"""The XRDs and Compositions under apis/: names, scopes, columns and wiring (no crank)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

APIS = Path(__file__).resolve().parents[2] / "apis"

# kind: (plural, group, scope, short name), per decisions.md "API shape".
KINDS = {
    "InferenceClass": ("inferenceclasses", "modelplane.ai", "Cluster", "icl"),
    "InferenceCluster": ("inferenceclusters", "modelplane.ai", "Cluster", "ic"),
    "InferenceGateway": ("inferencegateways", "modelplane.ai", "Cluster", "ig"),
    "ModelDeployment": ("modeldeployments", "modelplane.ai", "Namespaced", "md"),
    "ModelReplica": ("modelreplicas", "modelplane.ai", "Namespaced", "mr"),
    "ModelEndpoint": ("modelendpoints", "modelplane.ai", "Namespaced", "me"),
    "ModelService": ("modelservices", "modelplane.ai", "Namespaced", "ms"),
    "ModelCache": ("modelcaches", "modelplane.ai", "Namespaced", "mc"),
    "ServingStack": ("servingstacks", "infrastructure.modelplane.ai", "Namespaced", "ss"),
    "GKECluster": ("gkeclusters", "infrastructure.modelplane.ai", "Namespaced", "gke"),
    "EKSCluster": ("eksclusters", "infrastructure.modelplane.ai", "Namespaced", "eks"),
    "AKSCluster": ("aksclusters", "infrastructure.modelplane.ai", "Namespaced", "aks"),
    "NebiusCluster": ("nebiusclusters", "infrastructure.modelplane.ai", "Namespaced", "mk8s"),
    "VultrCluster": ("vultrclusters", "infrastructure.modelplane.ai", "Namespaced", "vke"),
}

# Printer columns decisions.md fixes: kind -> {column: jsonPath}.
COLUMNS = {
    "ModelDeployment": {
        "REPLICAS": ".status.replicas.ready",
        "UP-TO-DATE": ".status.replicas.updated",
    },
    "ModelReplica": {"CLUSTER": ".spec.clusterName"},
    "ModelService": {"ADDRESS": ".status.address"},
    "ModelEndpoint": {"URL": ".spec.url"},
    "ModelCache": {"SOURCE": ".spec.huggingFace.repo", "STAGED": ".status.summary.ready"},
    "InferenceCluster": {"SOURCE": ".spec.cluster.source", "GATEWAY": ".status.gateway.address"},
    "InferenceGateway": {"BACKEND": ".spec.backend", "ADDRESS": ".status.address"},
}


def _load(kind: str, file: str) -> dict[str, Any]:
    document = yaml.safe_load((APIS / KINDS[kind][0] / file).read_text())
    assert isinstance(document, dict)
    return document


def _version(xrd: dict[str, Any]) -> dict[str, Any]:
    (version,) = xrd["spec"]["versions"]
    assert isinstance(version, dict)
    return version


def _schema(xrd: dict[str, Any]) -> dict[str, Any]:
    schema = _version(xrd)["schema"]["openAPIV3Schema"]
    assert isinstance(schema, dict)
    return schema


def _field(schema: dict[str, Any], json_path: str) -> dict[str, Any] | None:
    """Return the schema of a simple ``.a.b.c`` path, or None when it does not exist."""
    node: dict[str, Any] | None = schema
    for part in json_path.strip(".").split("."):
        node = (node or {}).get("properties", {}).get(part)
    return node


def _arrays(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield every array schema under ``schema`` with its path."""
    if schema.get("type") == "array":
        yield path, schema
        yield from _arrays(schema.get("items", {}), path + "[]")
    for name, child in schema.get("properties", {}).items():
        yield from _arrays(child, f"{path}.{name}")
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        yield from _arrays(extra, path + ".*")


# apis/ folders that hold no kind: the Configuration's ManagedResourceActivationPolicy.
NOT_KINDS = {"activation"}


def test_every_api_directory_is_a_known_kind() -> None:
    found = {p.name for p in APIS.iterdir() if p.is_dir()} - NOT_KINDS
    assert found == {plural for plural, *_ in KINDS.values()}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_names_scope_and_group(kind: str) -> None:
    plural, group, scope, short = KINDS[kind]
    xrd = _load(kind, "definition.yaml")
    assert xrd["apiVersion"] == "apiextensions.crossplane.io/v2"
    assert xrd["kind"] == "CompositeResourceDefinition"
    assert xrd["metadata"]["name"] == f"{plural}.{group}"
    spec = xrd["spec"]
    assert (spec["group"], spec["scope"]) == (group, scope)
    assert spec["names"] == {
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "singular": kind.lower(),
        "shortNames": [short],
        "categories": ["crossplane", "modelplane"],
    }
    version = _version(xrd)
    assert (version["name"], version["served"], version["referenceable"]) == (
        "v1alpha1",
        True,
        True,
    )


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_printer_columns_point_at_fields(kind: str) -> None:
    xrd = _load(kind, "definition.yaml")
    schema = _schema(xrd)
    for column in _version(xrd).get("additionalPrinterColumns", []):
        field = _field(schema, column["jsonPath"])
        assert field is not None, f"{column['name']}: {column['jsonPath']} is not in the schema"
        assert field["type"] == column["type"], column["name"]


@pytest.mark.parametrize("kind", sorted(COLUMNS))
def test_printer_columns_are_the_decided_ones(kind: str) -> None:
    columns = _version(_load(kind, "definition.yaml")).get("additionalPrinterColumns", [])
    assert {c["name"]: c["jsonPath"] for c in columns} == COLUMNS[kind]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_spec_arrays_are_bounded(kind: str) -> None:
    """Unbounded lists make CEL cost estimates, and so the XRD, unacceptable to the API server."""
    spec = _schema(_load(kind, "definition.yaml"))["properties"]["spec"]
    unbounded = [path for path, array in _arrays(spec, ".spec") if "maxItems" not in array]
    assert unbounded == []


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_composition_runs_the_kinds_function(kind: str) -> None:
    plural, group, *_ = KINDS[kind]
    composition = _load(kind, "composition.yaml")
    assert composition["apiVersion"] == "apiextensions.crossplane.io/v1"
    assert composition["kind"] == "Composition"
    assert composition["metadata"]["name"] == f"{plural}.{group}"
    spec = composition["spec"]
    assert spec["compositeTypeRef"] == {"apiVersion": f"{group}/v1alpha1", "kind": kind}
    assert spec["mode"] == "Pipeline"
    assert spec["pipeline"] == [
        {"step": "compose", "functionRef": {"name": f"modelplane-function-{kind.lower()}"}}
    ]


def test_array_walker_reaches_nested_lists() -> None:
    spec = _schema(_load("ModelDeployment", "definition.yaml"))["properties"]["spec"]
    paths = {path for path, _ in _arrays(spec, ".spec")}
    assert ".spec.template.spec.engines[].members[].template.spec.containers" in paths
    assert ".spec.template.spec.engines[].members[].nodeSelector.devices[].selectors" in paths


def test_model_deployment_declares_the_scale_subresource() -> None:
    """`kubectl scale md` and KEDA need /scale (Crossplane v2.3 XRDs generate it)."""
    xrd = _load("ModelDeployment", "definition.yaml")
    scale = _version(xrd)["subresources"]["scale"]
    assert scale == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas.total",
    }
    schema = _schema(xrd)
    for path in scale.values():
        assert (_field(schema, path) or {}).get("type") == "integer", (
            f"{path} must be an integer field"
        )
