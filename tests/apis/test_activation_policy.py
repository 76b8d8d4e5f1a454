"""The Configuration's ManagedResourceActivationPolicy activates what we compose, exactly.

Crossplane v2 turns every CRD of a Provider package into a ManagedResourceDefinition
(MRD), except ProviderConfig, ClusterProviderConfig and their usages
(``internal/converter/custom_to_managed.go`` of v2.4.0); a provider with the
``SafeStart`` capability starts them inactive until a policy activates them. So the
policy must name every managed resource kind our Compositions can compose, as the MRD's
name (``<plural>.<group>``), and nothing else.

What we compose is collected three ways: the golden responses of every kind
(``tests/testdata/golden``), every cloud composite of the examples reconciled until it
settles (the cases of ``test_cloud_crds``), and a static scan of the functions' code for
an apiVersion constant next to a kind literal (``_mr(cluster, EC2, "VPC", ...)``,
``{"apiVersion": HELM, "kind": "Release"}``), which also finds what only some inputs
compose. A kind is a managed resource when a provider's CRD defines it; the CRD gives
its plural.
"""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import modelplane.compose
import modelplane.domain
import pytest
import yaml
from modelplane.dev import validate

from tests import inprocess as loop
from tests.apis import test_cloud_crds as clouds

REPO = Path(__file__).resolve().parents[2]
POLICY = REPO / "apis" / "activation" / "policy.yaml"
GOLDEN = REPO / "tests" / "testdata" / "golden"
# Where the providers' CRDs are: the clouds' and provider-helm's (../shared/crds), Vultr's
# and GCP's extra (tests/testdata/crds), provider-kubernetes' (make schemas).
PROVIDER_CRDS = [
    *(clouds.SHARED / d / "*.yaml" for d in ("aws", "gcp", "azure", "nebius", "helm")),
    clouds.TESTDATA / "vultr" / "*.yaml",
    clouds.TESTDATA / "gcp" / "*.yaml",
    clouds.OBJECTS.parent / "kubernetes.m.crossplane.io_*.yaml",
]
# Crossplane keeps these CRDs as CRDs: they are not managed resources.
NOT_MANAGED = {
    "ProviderConfig",
    "ClusterProviderConfig",
    "ProviderConfigUsage",
    "ClusterProviderConfigUsage",
}
# Groups served by providers' packages: anything composed in one must have a CRD here.
PROVIDER_GROUP = re.compile(r"\.(upbound\.io|m\.crossplane\.io)$")
API_VERSION = re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)+/v\w+$")

GroupKind = tuple[str, str]


def provider_crds() -> dict[GroupKind, str]:
    """(group, kind) -> plural of every provider CRD here."""
    found: dict[GroupKind, str] = {}
    for pattern in PROVIDER_CRDS:
        for path in sorted(pattern.parent.glob(pattern.name)):
            for doc in yaml.safe_load_all(path.read_text()):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    spec = doc["spec"]
                    found[spec["group"], spec["names"]["kind"]] = spec["names"]["plural"]
    return found


def _group_kind(api_version: str, kind: str) -> GroupKind:
    return (api_version.split("/")[0] if "/" in api_version else "", kind)


def golden_composed() -> set[GroupKind]:
    """What each kind's golden response composes."""
    found = set()
    for path in sorted(GOLDEN.glob("*.json")):
        for res in json.loads(path.read_text()).get("desired", {}).get("resources", {}).values():
            found.add(_group_kind(res["resource"]["apiVersion"], res["resource"]["kind"]))
    return found


def examples_composed() -> set[GroupKind]:
    """What every cloud composite of the examples composes once settled."""
    found = set()
    for case in clouds.CASES:
        for doc in clouds.everything_composed(case.xr, loop.Store(clouds.CONFIGS)).values():
            found.add(_group_kind(doc["apiVersion"], doc["kind"]))
    return found


def _modules() -> Iterator[ModuleType]:
    for package in (modelplane.domain, modelplane.compose):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            yield importlib.import_module(info.name)


def _api_version(node: ast.expr, module: ModuleType) -> str | None:
    """The apiVersion an expression names: a literal, a constant, ``api.HELM``."""
    value: object = None
    if isinstance(node, ast.Constant):
        value = node.value
    elif isinstance(node, ast.Name):
        value = getattr(module, node.id, None)
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        value = getattr(getattr(module, node.value.id, None), node.attr, None)
    return value if isinstance(value, str) and API_VERSION.match(value) else None


def _kind(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value[:1].isupper():
        return node.value
    return None


def statically_composed() -> set[GroupKind]:
    """Every (apiVersion constant, kind literal) pair in the functions' code."""
    found = set()
    for module in _modules():
        tree = ast.parse(Path(str(module.__file__)).read_text())
        for node in ast.walk(tree):
            pairs: list[tuple[ast.expr, ast.expr]] = []
            if isinstance(node, ast.Call):
                pairs += zip(node.args, node.args[1:], strict=False)
            elif isinstance(node, ast.Dict):
                fields = {
                    k.value: v
                    for k, v in zip(node.keys, node.values, strict=True)
                    if isinstance(k, ast.Constant)
                }
                if "apiVersion" in fields and "kind" in fields:
                    pairs.append((fields["apiVersion"], fields["kind"]))
            for api_node, kind_node in pairs:
                api, kind = _api_version(api_node, module), _kind(kind_node)
                if api and kind:
                    found.add(_group_kind(api, kind))
    return found


def policy() -> dict[str, object]:
    (doc,) = [d for d in yaml.safe_load_all(POLICY.read_text()) if d]
    return dict(doc)


@pytest.fixture(scope="module")
def crds() -> dict[GroupKind, str]:
    found = provider_crds()
    assert found, f"no provider CRDs found under {[str(p) for p in PROVIDER_CRDS]}"
    return found


@pytest.fixture(scope="module")
def composed() -> set[GroupKind]:
    return golden_composed() | examples_composed() | statically_composed()


def managed(composed: set[GroupKind], crds: dict[GroupKind, str]) -> set[str]:
    """The MRD names of the managed resources among ``composed``."""
    return {f"{crds[gk]}.{gk[0]}" for gk in composed if gk in crds and gk[1] not in NOT_MANAGED}


def test_every_provider_kind_we_compose_has_a_crd(
    composed: set[GroupKind], crds: dict[GroupKind, str]
) -> None:
    """Otherwise it could not be classified (a CRD to add to ../shared/crds, or make schemas)."""
    missing = sorted(
        gk
        for gk in composed
        if PROVIDER_GROUP.search(gk[0]) and gk[1] not in NOT_MANAGED and gk not in crds
    )
    assert not missing, (
        f"composed, but no provider CRD here defines them (make schemas?): {missing}"
    )


def test_the_policy_activates_exactly_what_we_compose(
    composed: set[GroupKind], crds: dict[GroupKind, str]
) -> None:
    listed = policy()["spec"]["activate"]  # type: ignore[index]
    want = managed(composed, crds)
    assert sorted(listed) == listed, "keep the policy's list sorted"
    assert not want - set(listed), f"composed but not activated: {sorted(want - set(listed))}"
    assert not set(listed) - want, (
        f"activated but nothing composes them: {sorted(set(listed) - want)}"
    )


def test_the_static_scan_sees_what_the_examples_compose(crds: dict[GroupKind, str]) -> None:
    """The scan is what keeps rarely composed kinds in the policy; it must miss nothing."""
    dynamic = managed(golden_composed() | examples_composed(), crds)
    static = managed(statically_composed(), crds)
    assert dynamic, "the examples composed no managed resource"
    assert not dynamic - static, sorted(dynamic - static)


def crossplane_crd(name: str) -> Path:
    """A CRD of Crossplane core, from the module tools/crossplane/go.mod pins (v2.4.0)."""
    done = subprocess.run(
        ["go", "mod", "download", "-json", "github.com/crossplane/crossplane/v2"],
        cwd=REPO / "tools" / "crossplane",
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(json.loads(done.stdout)["Dir"]) / "cluster" / "crds" / name


@pytest.mark.crank
def test_the_policy_validates_against_crossplane_s_crd() -> None:
    """Crossplane v2.4.0's own CRD for it; an empty list (minItems) does not validate."""
    crd = crossplane_crd("apiextensions.crossplane.io_managedresourceactivationpolicies.yaml")
    doc = policy()
    assert doc["kind"] == "ManagedResourceActivationPolicy"
    assert validate.validate([doc], extensions=[crd]) == []
    empty = {**doc, "spec": {"activate": []}}
    assert validate.validate([empty], extensions=[crd]), "the CRD's schema was not applied"
