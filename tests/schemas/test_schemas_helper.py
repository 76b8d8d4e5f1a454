"""Turning Kubernetes' OpenAPI into CRD schemas, and reading crank's verdicts."""

from __future__ import annotations

from typing import Any

import pytest
from modelplane.dev import schemas

REF = "#/components/schemas/"
COMPONENTS: dict[str, Any] = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"format": "int-or-string"},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"oneOf": [{"type": "string"}]},
    "Port": {
        "properties": {
            "port": {"default": 0, "type": "integer"},
            "target": {
                "allOf": [{"$ref": REF + "io.k8s.apimachinery.pkg.util.intstr.IntOrString"}]
            },
        },
        "required": ["port"],
        "type": "object",
        "x-kubernetes-patch-strategy": "merge",
    },
    "Spec": {
        "properties": {
            "limits": {
                "additionalProperties": {
                    "$ref": REF + "io.k8s.apimachinery.pkg.api.resource.Quantity"
                },
                "type": "object",
            },
            "ports": {
                "items": {"allOf": [{"$ref": REF + "Port"}], "default": {}},
                "type": "array",
                "x-kubernetes-list-map-keys": ["port"],
                "x-kubernetes-list-type": "map",
            },
            "self": {"allOf": [{"$ref": REF + "Spec"}], "description": "recursive"},
        },
        "type": "object",
        "x-kubernetes-group-version-kind": [{"group": "", "kind": "Spec", "version": "v1"}],
    },
}


def test_inline_resolves_references_into_a_structural_schema() -> None:
    got = schemas.inline("Spec", COMPONENTS)
    assert got == {
        "properties": {
            "limits": {
                "additionalProperties": {"x-kubernetes-int-or-string": True},
                "type": "object",
            },
            "ports": {
                "items": {
                    "properties": {
                        "port": {"type": "integer"},
                        "target": {"x-kubernetes-int-or-string": True},
                    },
                    "required": ["port"],
                    "type": "object",
                },
                "type": "array",
                "x-kubernetes-list-map-keys": ["port"],
                "x-kubernetes-list-type": "map",
            },
            "self": {
                "description": "recursive",
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
            },
        },
        "type": "object",
    }


@pytest.mark.parametrize(
    ("group", "kind", "name", "scope"),
    [
        pytest.param("", "Service", "services", "Namespaced", id="core"),
        pytest.param("apps", "Deployment", "deployments.apps", "Namespaced", id="apps"),
        pytest.param("", "Namespace", "namespaces", "Cluster", id="cluster-scoped"),
    ],
)
def test_crd_defines_the_kind(group: str, kind: str, name: str, scope: str) -> None:
    found = schemas.crd(group, "v1", kind, {"type": "object"})
    assert found["metadata"]["name"] == name
    assert found["spec"]["group"] == group
    assert found["spec"]["names"]["kind"] == kind
    assert found["spec"]["scope"] == scope
    assert found["spec"]["versions"][0]["schema"]["openAPIV3Schema"] == {"type": "object"}


def test_unwrap_adds_each_wrapped_manifest() -> None:
    inner = {"apiVersion": "v1", "kind": "Service"}
    wrapped = {"kind": "Object", "spec": {"forProvider": {"manifest": inner}}}
    assert schemas.unwrap([wrapped, inner]) == [wrapped, inner, inner]


def test_report_sorts_crank_lines() -> None:
    output = "\n".join(
        [
            "[✓] apps/v1, Kind=Deployment, a validated successfully",
            "[x] schema validation error /v1, Kind=Service, b : spec.x: unknown field",
            "[!] could not find CRD/XRD for: example.com/v1, Kind=Thing",
            "Total 3 resources: 1 missing schemas, 1 success cases, 1 failure cases",
        ]
    )
    report = schemas._report(output, 1)
    assert report.validated == 1
    assert report.total == 3
    assert report.returncode == 1
    assert report.failures == (
        "schema validation error /v1, Kind=Service, b : spec.x: unknown field",
    )
    assert report.missing == ("could not find CRD/XRD for: example.com/v1, Kind=Thing",)
    assert not report.ok


@pytest.mark.parametrize(
    ("output", "returncode", "ok"),
    [
        pytest.param(
            "[✓] apps/v1, Kind=Deployment, a validated successfully\n"
            "Total 1 resources: 0 missing schemas, 1 success cases, 0 failure cases",
            0,
            True,
            id="all-passed",
        ),
        pytest.param(
            "Total 0 resources: 0 missing schemas, 0 success cases, 0 failure cases",
            0,
            False,
            id="validated-nothing",
        ),
        pytest.param("", 0, False, id="said-nothing"),
        pytest.param(
            # crank prints a success line per schema of a kind: its Total line counts.
            "[✓] /v1, Kind=Service, a validated successfully\n"
            "[✓] /v1, Kind=Service, a validated successfully\n"
            "Total 1 resources: 0 missing schemas, 1 success cases, 0 failure cases",
            0,
            True,
            id="two-schemas-one-manifest",
        ),
        pytest.param(
            # A failure crank counted but printed no line for is still not a pass.
            "[✓] /v1, Kind=Service, a validated successfully\n"
            "Total 2 resources: 0 missing schemas, 1 success cases, 1 failure cases",
            0,
            False,
            id="uncounted-failure",
        ),
        pytest.param(
            "[✓] apps/v1, Kind=Deployment, a validated successfully\n"
            "Total 1 resources: 0 missing schemas, 1 success cases, 0 failure cases",
            1,
            False,
            id="non-zero-exit",
        ),
    ],
)
def test_ok_needs_a_verdict_on_every_manifest_and_a_clean_exit(
    output: str, returncode: int, ok: bool
) -> None:
    assert schemas._report(output, returncode).ok is ok


@pytest.mark.skipif(
    not schemas.available(), reason="schemas not fetched: run tools/schemas/fetch.sh"
)
def test_core_crds_cover_the_kinds_a_replica_composes() -> None:
    wanted = {
        ("v1", "Namespace"),
        ("v1", "Service"),
        ("v1", "ServiceAccount"),
        ("v1", "ConfigMap"),
        ("apps/v1", "Deployment"),
        ("rbac.authorization.k8s.io/v1", "Role"),
        ("rbac.authorization.k8s.io/v1", "RoleBinding"),
        ("resource.k8s.io/v1", "ResourceClaimTemplate"),
    }
    found = {
        ("/".join(p for p in (c["spec"]["group"], c["spec"]["versions"][0]["name"]) if p),
         c["spec"]["names"]["kind"])
        for c in schemas.core_crds(wanted)
    }  # fmt: skip
    assert found == wanted
