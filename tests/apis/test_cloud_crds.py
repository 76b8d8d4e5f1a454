"""Every managed resource a cloud composite composes validates against its provider's CRD.

The providers' CRDs are data: ``../shared/crds/`` next to the checkout holds the
namespaced CRDs of provider-upjet-aws, -gcp, -azure, -nebius and provider-helm, copied
from each provider's repository; ``tests/testdata/crds/`` adds Vultr's VKE kinds, GCP's
ProjectService and Crossplane's ClusterUsage. provider-kubernetes' Object is validated
against the pinned CRD ``tools/schemas/fetch.sh`` puts in ``build/schemas/crds/``.

Each case is a cloud composite exactly as it reaches its function: the docs' and the
examples' InferenceClusters composed by the InferenceCluster function, and the reference
manifests of the internal kinds. It is reconciled in process until it settles, every
composed resource reported by its provider with the status the function reads (ids,
the GKE service account's email and project, the mk8s endpoint and CA, Ready), so every
resource it ever composes (the grant, what goes on the cluster, the autoscaler) is
there. Then one ``crank beta validate`` run checks them all: schema, unknown fields,
CEL rules.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from modelplane import kit
from modelplane.dev import render, validate

from tests import inprocess as loop

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "crds"
TESTDATA = REPO / "tests" / "testdata" / "crds"
OBJECTS = REPO / "build" / "schemas" / "crds" / "kubernetes.m.crossplane.io_objects.yaml"
CLOUD_KINDS = ("EKSCluster", "GKECluster", "AKSCluster", "NebiusCluster", "VultrCluster")
KUBERNETES = "kubernetes.m.crossplane.io/v1alpha1"
HELM = "helm.m.crossplane.io/v1beta1"

Doc = dict[str, Any]

pytestmark = pytest.mark.skipif(
    not SHARED.is_dir(), reason=f"{SHARED} is absent: the providers' CRDs are not here"
)


def crd_files() -> list[Path]:
    """Return every CRD the composed resources are validated against."""
    folders = [SHARED / d for d in ("aws", "gcp", "azure", "nebius", "helm")]
    folders += [TESTDATA / d for d in ("vultr", "gcp", "crossplane")]
    files = sorted(p for folder in folders for p in folder.glob("*.yaml"))
    return [*files, OBJECTS] if OBJECTS.exists() else files


# The provider configs the composites read (GCP's project, Nebius' credentials).
GCP_CONFIG = {
    "apiVersion": "gcp.m.upbound.io/v1beta1",
    "kind": "ClusterProviderConfig",
    "metadata": {"name": "default"},
    "spec": {"projectID": "my-project", "credentials": {"source": "Secret"}},
}


def _nebius_config(name: str) -> Doc:
    ref = {
        "name": "nebius-credentials",
        "namespace": "crossplane-system",
        "key": "credentials.json",
    }
    return {
        "apiVersion": "nebius.m.upbound.io/v1beta1",
        "kind": "ClusterProviderConfig",
        "metadata": {"name": name},
        "spec": {
            "credentials": {"source": "Secret", "secretRef": ref},
            "identity": {"type": "ServiceAccount"},
            "projectID": "project-e00abc",
        },
    }


CONFIGS = [GCP_CONFIG, _nebius_config("default"), _nebius_config("eu-north")]


def provider_status(manifest: Doc) -> Doc:
    """Return what a provider reports for a healthy managed resource, as the functions read it."""
    name = str(manifest["metadata"]["name"])
    at_provider: Doc = {
        "id": f"{name}-id",
        "email": f"{name}@my-project.iam",
        "project": "my-project",
    }
    if str(manifest.get("apiVersion", "")).startswith("mk8s.") and manifest["kind"] == "Cluster":
        at_provider["status"] = {
            "controlPlane": {
                "endpoints": {"publicEndpoint": f"https://{name}.mk8s.example"},
                "auth": {"clusterCaCertificate": "-----BEGIN CERTIFICATE-----\n"},
            }
        }
    if str(manifest.get("apiVersion", "")).startswith("eks.") and manifest["kind"] == "Cluster":
        at_provider["vpcConfig"] = {"clusterSecurityGroupId": f"{name}-cluster-sg"}
    ready = [{"type": t, "status": "True", "reason": "Fake"} for t in ("Ready", "Synced")]
    return {"conditions": ready, "atProvider": at_provider}


def everything_composed(xr: Doc, store: loop.Store) -> dict[str, Doc]:
    """Reconcile a composite until it settles; return every resource it composed, by key."""
    observed: dict[str, Doc] = {}
    seen: dict[str, Doc] = {}
    for _ in range(8):
        rsp = loop.reconcile(xr, store, observed)
        assert not kit.is_fatal(rsp), [r.message for r in rsp.results]
        desired = loop.desired(rsp)
        seen.update(desired)
        now = {
            key: {**m, "status": (observed.get(key) or {}).get("status") or provider_status(m)}
            for key, m in desired.items()
        }
        if now == observed:
            break
        observed = now
    return seen


@dataclass(frozen=True)
class Case:
    """A cloud composite and where it comes from."""

    id: str
    xr: Doc


def _composed_by_inference_cluster(path: str, classes: tuple[str, ...] = ()) -> Iterator[Case]:
    docs = loop.load(path, *classes)
    store = loop.Store([d for d in docs if d["kind"] == "InferenceClass"])
    for cluster in (d for d in loop.load(path) if d["kind"] == "InferenceCluster"):
        if cluster["spec"]["cluster"]["source"] == "Existing":
            continue
        rsp = loop.reconcile(cluster, store)
        xr = loop.desired(rsp)["cluster"]
        yield Case(f"{path}: {cluster['metadata']['name']}", xr)


CLASSES = tuple(
    f"examples/platform/inference-class/inference-class-{c}.yaml"
    for c in ("gke-l4", "eks-l4", "aks-h100", "nebius-h100", "vultr-l40s")
)


def cases() -> list[Case]:
    found: list[Case] = []
    for cloud in ("eks", "gke", "aks", "nebius", "vultr"):
        found += _composed_by_inference_cluster(
            f"examples/getting-started/build-the-platform/{cloud}/platform.yaml"
        )
        found += _composed_by_inference_cluster(
            f"examples/platform/inference-cluster/inference-cluster-{cloud}.yaml", CLASSES
        )
    for name in ("eks-pinned", "aks-infiniband", "nebius-infiniband"):
        found += _composed_by_inference_cluster(f"examples/options/{name}.yaml")
    # An EKS cluster with an EFA pool: its EFA security group and launch template.
    found += _composed_by_inference_cluster(
        "examples/recipes/qwen3-coder/inference-cluster.yaml",
        ("examples/recipes/qwen3-coder/inference-class.yaml",),
    )
    for plural in ("eksclusters", "gkeclusters", "aksclusters", "nebiusclusters", "vultrclusters"):
        (xr,) = loop.load(f"examples/reference/{plural}.yaml")
        found.append(Case(f"examples/reference/{plural}.yaml", xr))
    return found


CASES = cases()


def _checked(doc: Doc) -> Doc | None:
    """Return the document to validate, or None for what no CRD here defines.

    A Secret (the Nebius kubeconfig and cloud-init) is a core kind. provider-kubernetes'
    ProviderConfig CRD is not among the offline schemas; its spec schema is the same as
    provider-helm's ProviderConfig (credentials and identity, field for field), so it is
    validated as one.
    """
    if doc["apiVersion"] == "v1":
        return None
    if (doc["apiVersion"], doc["kind"]) == (KUBERNETES, "Object") and not OBJECTS.exists():
        return None
    if (doc["apiVersion"], doc["kind"]) == (KUBERNETES, "ProviderConfig"):
        return {**copy.deepcopy(doc), "apiVersion": HELM}
    return doc


@pytest.fixture(scope="module")
def composed() -> dict[str, list[Doc]]:
    """Every case's composed resources to validate, by case id."""
    return {
        case.id: [
            d
            for d in map(_checked, everything_composed(case.xr, loop.Store(CONFIGS)).values())
            if d
        ]
        for case in CASES
    }


@pytest.fixture(scope="module")
def problems(composed: dict[str, list[Doc]]) -> dict[tuple[str, str], list[str]]:
    """Validate every case's resources in one crank run; problems by (kind, name)."""
    documents = [d for docs in composed.values() for d in docs]
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for problem in validate.validate(documents, extensions=crd_files()):
        found[problem.kind, problem.name].append(problem.message)
    return found


def test_every_cloud_has_cases() -> None:
    assert {c.xr["kind"] for c in CASES} == set(CLOUD_KINDS)


@pytest.mark.crank
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_composed_resource_validates_against_its_crd(
    case: Case,
    composed: dict[str, list[Doc]],
    problems: dict[tuple[str, str], list[str]],
) -> None:
    docs = composed[case.id]
    assert docs, "composed nothing to validate"
    found = {
        f"{d['kind']} {d['metadata']['name']}": problems[d["kind"], d["metadata"]["name"]]
        for d in docs
        if problems.get((d["kind"], d["metadata"]["name"]))
    }
    unknown = problems.get(("", ""), [])  # a kind no CRD defines has no name in crank's report
    assert not found, found
    assert not unknown, unknown


# What each cloud composes once settled, across its cases: the test validates these.
KINDS = {
    "EKSCluster": {
        ("eks.aws.m.upbound.io/v1beta1", "PodIdentityAssociation"),
        ("iam.aws.m.upbound.io/v1beta1", "Policy"),
        ("ec2.aws.m.upbound.io/v1beta1", "SecurityGroupEgressRule"),
        ("ec2.aws.m.upbound.io/v1beta1", "LaunchTemplate"),
        (HELM, "Release"),
        (HELM, "ProviderConfig"),
        (KUBERNETES, "Object"),
    },
    "GKECluster": {
        ("cloudplatform.gcp.m.upbound.io/v1beta1", "ProjectService"),
        ("cloudplatform.gcp.m.upbound.io/v1beta1", "ProjectIAMMember"),
        (KUBERNETES, "Object"),
    },
    "AKSCluster": {("containerservice.azure.m.upbound.io/v1beta1", "KubernetesClusterNodePool")},
    "NebiusCluster": {
        ("compute.nebius.m.upbound.io/v1beta1", "GpuCluster"),
        ("compute.nebius.m.upbound.io/v1beta1", "Filesystem"),
        ("mk8s.nebius.m.upbound.io/v1beta1", "NodeGroup"),
        (KUBERNETES, "Object"),
    },
    "VultrCluster": {
        ("vke.vultr.m.upbound.io/v1beta1", "Kubernetes"),
        ("vke.vultr.m.upbound.io/v1beta1", "KubernetesNodePool"),
        (HELM, "ProviderConfig"),  # provider-kubernetes' one, validated as provider-helm's
        (KUBERNETES, "Object"),
    },
}


@pytest.mark.parametrize("kind", CLOUD_KINDS)
def test_the_cases_reach_every_stage(kind: str, composed: dict[str, list[Doc]]) -> None:
    got = {
        (d["apiVersion"], d["kind"])
        for case in CASES
        if case.xr["kind"] == kind
        for d in composed[case.id]
    }
    want = KINDS[kind] if OBJECTS.exists() else {k for k in KINDS[kind] if k[0] != KUBERNETES}
    assert want <= got, sorted(want - got)


def _inference_cluster_resources() -> list[Doc]:
    """What the InferenceCluster composes itself, held by a replica: its provider configs
    (with a cloud identity, and with AWS web identity on an Existing cluster) and the
    ClusterUsage that blocks its deletion."""
    docs = loop.load("examples/options/existing-aws-web-identity.yaml")
    cluster = loop.find(docs, "InferenceCluster")
    labels = {"modelplane.ai/cluster": cluster["metadata"]["name"]}
    replica = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "metadata": {"name": "r", "namespace": "ml-team", "labels": labels},
    }
    store = loop.Store([loop.find(docs, "InferenceClass"), replica])
    out: list[Doc] = list(loop.desired(loop.reconcile(cluster, store)).values())
    docs = loop.load("examples/getting-started/build-the-platform/gke/platform.yaml")
    cluster = loop.find(docs, "InferenceCluster")
    identity = {
        "name": "starter-identity",
        "namespace": "modelplane-system",
        "key": "private_key",
        "type": "GoogleApplicationCredentials",
    }
    kubeconfig = {
        "name": "starter-kubeconfig",
        "namespace": "modelplane-system",
        "key": "kubeconfig",
    }
    gke = {
        "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
        "kind": "GKECluster",
        "metadata": {"name": "starter", "namespace": "modelplane-system"},
        "status": {"kubeconfigSecretRef": kubeconfig, "identitySecretRef": identity},
    }
    store = loop.Store([loop.find(docs, "InferenceClass")])
    out += loop.desired(loop.reconcile(cluster, store, {"cluster": gke})).values()
    return out


@pytest.mark.crank
def test_the_inference_cluster_s_provider_configs_and_cluster_usage_validate() -> None:
    composed = _inference_cluster_resources()
    kinds = sorted({d["kind"] for d in composed})
    assert kinds == [
        "ClusterProviderConfig",
        "ClusterUsage",
        "GKECluster",
        "ObservedObjectCollection",  # validated in tests/compose/test_cluster_capacity.py
        "ServingStack",
    ]
    # provider-kubernetes' ClusterProviderConfig has provider-helm's spec schema, field for
    # field; its CRD is not among the offline schemas.
    checked = [
        {**d, "apiVersion": HELM} if d["apiVersion"] == KUBERNETES else d
        for d in composed
        if d["kind"] in ("ClusterProviderConfig", "ClusterUsage")
    ]
    identities = {d["spec"]["identity"]["type"] for d in checked if "identity" in d["spec"]}
    assert identities == {"AWSWebIdentityCredentials", "GoogleApplicationCredentials"}
    assert validate.validate(checked, extensions=crd_files()) == []


REFERENCES = sorted((REPO / "examples" / "reference").glob("*.yaml"))


@pytest.mark.crank
@pytest.mark.parametrize("path", REFERENCES, ids=[p.name for p in REFERENCES])
def test_every_reference_document_renders(path: Path, functions: render.Functions) -> None:
    """Through Crossplane's own reconciler (a Fatal result raises): it composes."""
    (xr,) = loop.load(str(path.relative_to(REPO)))
    out = render.render(xr, functions)
    assert out[0]["kind"] == xr["kind"]
    composed = [d for d in out[1:] if d.get("kind") != "Event"]
    assert composed, f"{xr['kind']} composed nothing"
