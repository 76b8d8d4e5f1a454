"""What the XRDs accept and reject, checked by the real Crossplane CLI.

Every document of this file is validated in one crank run (the ``reported`` fixture);
each case then looks up the problems of its own document, named after the case.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from modelplane.dev import validate

Doc = dict[str, Any]
ROOT = Path(__file__).resolve().parents[2]
MD = "modelplane.ai/v1alpha1"
INFRA = "infrastructure.modelplane.ai/v1alpha1"


def _doc(api_version: str, kind: str, name: str, spec: Doc, *, namespaced: bool = True) -> Doc:
    metadata: Doc = {"name": name}
    if namespaced:
        metadata["namespace"] = "ml-team"
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec}


def _pod(*containers: Doc) -> Doc:
    return {"spec": {"containers": list(containers) or [{"name": "engine", "image": "vllm"}]}}


def _member(role: str, **extra: Any) -> Doc:
    return {"role": role, "template": _pod(), **extra}


def _engine(name: str = "main", *members: Doc, **extra: Any) -> Doc:
    return {"name": name, "members": list(members) or [_member("Standalone")], **extra}


def _deployment(name: str, *engines: Doc, **template_spec: Any) -> Doc:
    spec = {"engines": list(engines) or [_engine()], **template_spec}
    return _doc(MD, "ModelDeployment", name, {"replicas": 1, "template": {"spec": spec}})


def _gang(name: str = "main") -> Doc:
    return _engine(name, _member("Leader"), _member("Worker", worker={"nodes": 1}))


def _with(document: Doc, change: Callable[[Doc], object]) -> Doc:
    changed = copy.deepcopy(document)
    change(changed)
    return changed


def _class(name: str, device: Doc) -> Doc:
    base = {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com"}
    return _doc(
        MD, "InferenceClass", name, {"devices": [{**base, "count": 1, **device}]}, namespaced=False
    )


def _cluster(name: str, cluster: Doc, *pools: Doc, **spec: Any) -> Doc:
    pools = pools or ({"name": "gpu", "className": "l4", "nodeCount": 1},)
    body = {"cluster": cluster, "nodePools": list(pools), **spec}
    return _doc(MD, "InferenceCluster", name, body, namespaced=False)


def _replica(name: str, *engines: Doc) -> Doc:
    member = {"role": "Standalone", "nodePoolName": "gpu", "template": _pod()}
    spec = {"clusterName": "eks-us-east", "engines": list(engines) or [_engine("main", member)]}
    return _doc(MD, "ModelReplica", name, spec)


def _gateway(name: str, **spec: Any) -> Doc:
    return _doc(MD, "InferenceGateway", name, spec, namespaced=False)


def _service(name: str, weight: int = 1) -> Doc:
    selector = {"matchLabels": {"modelplane.ai/deployment": "qwen"}}
    return _doc(MD, "ModelService", name, {"endpoints": [{"selector": selector, "weight": weight}]})


def _cloud(kind: str, name: str, **spec: Any) -> Doc:
    return _doc(INFRA, kind, name, spec)


EKS = {"source": "EKS", "eks": {"region": "us-east-1"}}
PD = {"mode": "PrefillDecode"}
HF = {"repo": "Qwen/Qwen3-8B", "sizeGiB": 20}
KUBECONFIG = {"name": "byo-cluster-kubeconfig", "key": "kubeconfig"}
METALLB = {"addressPool": "172.18.255.200-172.18.255.250"}
EFA = {"type": "EFA"}

# Minimal valid manifests of every kind.
VALID: list[Doc] = [
    _deployment("ok-standalone"),
    _deployment("ok-gang", _gang()),
    _deployment(
        "ok-prefill-decode",
        _engine("p", phase="Prefill"),
        _gang("d") | {"phase": "Decode", "copies": 2},
        serving=PD,
    ),
    _deployment(
        "ok-everything",
        _engine(
            "main",
            _member(
                "Standalone",
                nodeSelector={
                    "devices": [
                        {"name": "gpu", "count": 8, "selectors": [{"cel": 'device.driver == "x"'}]},
                        {"name": "efa", "count": 16},
                    ]
                },
            ),
        ),
        clusterSelector={"matchLabels": {"modelplane.ai/region": "us"}},
        modelCacheRef={"name": "qwen"},
        tolerations=[
            {"key": "modelplane.ai/maintenance", "operator": "Exists"},
            {"operator": "Exists"},
            {"key": "k", "value": "v", "effect": "NoExecute"},
        ],
    ),
    _class("ok-class", {"attributes": {"arch": {"string": "Hopper"}, "cc": {"version": "9.0.0"}}}),
    _class("ok-synthetic", {"claim": "Synthetic", "deviceClassName": None}),
    _cluster("ok-eks", EKS, taints=[{"key": "modelplane.ai/maintenance", "effect": "NoSchedule"}]),
    _cluster("ok-existing", {"source": "Existing", "existing": {"secretRef": KUBECONFIG}}),
    _cluster("ok-nebius", {"source": "Nebius", "nebius": {}}),
    _replica("ok-replica"),
    _doc(MD, "ModelEndpoint", "ok-endpoint", {"url": "https://api.together.xyz/"}),
    _service("ok-service"),
    _doc(MD, "ModelCache", "ok-cache", {"source": "HuggingFace", "huggingFace": HF}),
    _gateway("ok-gateway"),
    _gateway("ok-metallb", traefik={"loadBalancer": "MetalLB", "metallb": METALLB}),
    _cloud("ServingStack", "ok-stack", providerConfigRef={"name": "eks-us-east"}, cloud="EKS"),
    _cloud("GKECluster", "ok-gke", region="us-central1", nodePools=[
        {"name": "gpu", "nodeCount": 1, "machineType": "g2-standard-8"}]),
    _cloud("EKSCluster", "ok-eks-cluster", region="us-east-1", nodePools=[
        {"name": "gpu", "nodeCount": 2, "instanceType": "p5en.48xlarge", "fabric": EFA}]),
    _cloud("AKSCluster", "ok-aks", location="westeurope", nodePools=[
        {"name": "gpua100", "nodeCount": 1, "vmSize": "Standard_NC24ads_A100_v4"}]),
    _cloud("NebiusCluster", "ok-nebius-cluster", credentials={"name": "eu-north"}, nodePools=[
        {"name": "gpu", "nodeCount": 0, "platform": "gpu-h100-sxm", "preset": "1gpu-8vcpu-32gb"}]),
    _cloud("VultrCluster", "ok-vultr", region="ewr", nodePools=[
        {"name": "gpu", "nodeCount": 1, "maxNodeCount": 2, "plan": "vcg-a16-6c-64g-16vram"}]),
    # What the API defaults may be left out: a member's role, a device request's count,
    # a pool's nodeCount, an Existing kubeconfig Secret's key.
    _deployment("ok-defaults", {"name": "main", "members": [
        {"template": _pod(), "nodeSelector": {"devices": [{"name": "gpu"}]}}]}),
    _replica("ok-replica-defaults", {"name": "main", "members": [
        {"nodePoolName": "gpu", "template": _pod(),
         "deviceRequests": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com"}]}]}),
    _cluster("ok-existing-defaults",
             {"source": "Existing", "existing": {"secretRef": {"name": "byo"}, "identitySecretRef": {
                 "name": "byo-token", "key": "token", "type": "AWSWebIdentityCredentials"}}},
             {"name": "gpu", "className": "h100"}),
    # A rolling update in numbers and in percentages, and a progress deadline.
    _with(_deployment("ok-rolling-update"), lambda d: d["spec"].update(
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "50%"}},
        progressDeadlineSeconds=120)),
    # What users set on a provisioned cluster: its version, its provider config, a fabric.
    _cluster("ok-eks-options", EKS | {"eks": {
        "region": "us-east-1", "kubernetesVersion": "1.36",
        "credentials": {"kind": "ProviderConfig", "name": "aws-team-a"}}},
             {"name": "gpu", "className": "p5", "fabric": {"type": "EFA"}},
             {"name": "gpu2", "className": "l4", "fabric": {"type": "None"}}),
    _cluster("ok-aks-infiniband",
             {"source": "AKS", "aks": {"location": "westeurope", "kubernetesVersion": "1.34.2"}},
             {"name": "gpuh100", "className": "h100", "fabric": {"type": "InfiniBand"}}),
    _cluster("ok-nebius-infiniband",
             {"source": "Nebius", "nebius": {"kubernetesVersion": "1.34", "credentials": {"name": "eu"}}},
             {"name": "gpu", "className": "h100", "nodeCount": 0, "maxNodeCount": 8,
              "fabric": {"type": "InfiniBand", "infiniband": {"fabric": "fabric-2"}}}),
    _cluster("ok-vultr-build",
             {"source": "Vultr", "vultr": {"region": "ewr", "kubernetesVersion": "v1.36.1+3"}}),
    # The internal kinds as their reference documents shape them.
    _cloud("ServingStack", "ok-stack-from-secrets",
           secrets=[{"type": "Kubeconfig", "name": "k", "key": "kubeconfig"},
                    {"type": "GoogleApplicationCredentials", "name": "sa", "key": "private_key"}],
           versions={"gatewayApi": "v1.5.1", "certManager": "v1.17.1"},
           gateway={"listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]}),
    _cloud("EKSCluster", "ok-eks-system-pool", region="us-west-2", kubernetesVersion="1.36",
           nodePools=[{"name": "system", "role": "System", "instanceType": "m6i.xlarge", "nodeCount": 2},
                      {"name": "gpu", "instanceType": "g6.12xlarge", "nodeCount": 0, "maxNodeCount": 8,
                       "gpu": {"acceleratorType": "nvidia-a10g"}}]),
    _cloud("AKSCluster", "ok-aks-fabric", location="westeurope", nodePools=[
        {"name": "gpuh100", "vmSize": "Standard_ND96isr_H100_v5", "fabric": "InfiniBand"}]),
    _cloud("NebiusCluster", "ok-nebius-fabric", cache={"sizeGiB": 4096}, nodePools=[
        {"name": "gpu", "platform": "gpu-h100-sxm", "preset": "8gpu-128vcpu-1600gb",
         "gpu": {"driversPreset": "cuda13.0"},
         "fabric": {"type": "InfiniBand", "infiniband": {"fabric": "fabric-2"}}}]),
]  # fmt: skip
# A None in a case means "leave the field out".
for _document in VALID:
    for _device in _document["spec"].get("devices", []):
        for _key in [k for k, v in _device.items() if v is None]:
            del _device[_key]

BASE = _deployment("base")


def _members(doc: Doc) -> list[Doc]:
    members: list[Doc] = doc["spec"]["template"]["spec"]["engines"][0]["members"]
    return members


# (case id, document named after it, what the rejection says).
INVALID: list[tuple[str, Callable[[str], Doc], str]] = [
    ("prefill-decode-with-one-engine",
     lambda n: _deployment(n, _engine("p", phase="Prefill"), serving=PD),
     "serving.mode PrefillDecode needs exactly two engines"),
    ("prefill-decode-with-two-prefills",
     lambda n: _deployment(n, _engine("a", phase="Prefill"), _engine("b", phase="Prefill"),
                           serving=PD),
     "serving.mode PrefillDecode needs exactly two engines"),
    ("phase-without-prefill-decode",
     lambda n: _deployment(n, _engine("a", phase="Prefill")),
     "phase is only for engines under serving.mode PrefillDecode"),
    ("worker-without-leader",
     lambda n: _deployment(n, _engine("a", _member("Worker", worker={"nodes": 1}))),
     "an engine is either exactly one Standalone member, or one Leader plus one or more Workers"),
    ("two-standalones",
     lambda n: _deployment(n, _engine("a", _member("Standalone"), _member("Standalone"))),
     "an engine is either exactly one Standalone member, or one Leader plus one or more Workers"),
    ("leader-without-worker",
     lambda n: _deployment(n, _engine("a", _member("Leader"))),
     "an engine is either exactly one Standalone member, or one Leader plus one or more Workers"),
    ("two-leaders",
     lambda n: _deployment(n, _engine("a", _member("Leader"), _member("Leader"),
                                      _member("Worker", worker={"nodes": 1}))),
     "an engine is either exactly one Standalone member, or one Leader plus one or more Workers"),
    ("worker-on-a-leader",
     lambda n: _deployment(n, _engine("a", _member("Leader", worker={"nodes": 1}),
                                      _member("Worker", worker={"nodes": 1}))),
     "worker is only for a Worker member"),
    ("worker-without-worker-block",
     lambda n: _deployment(n, _engine("a", _member("Leader"), _member("Worker"))),
     "a Worker member needs worker.nodes"),
    ("worker-with-zero-nodes",
     lambda n: _deployment(n, _engine("a", _member("Leader"),
                                      _member("Worker", worker={"nodes": 0}))),
     "should be greater than or equal to 1"),
    ("toleration-exists-with-value",
     lambda n: _deployment(n, tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
     "a toleration with operator Exists matches any value, so it takes no value"),
    ("toleration-without-key-and-equal",
     lambda n: _deployment(n, tolerations=[{"value": "v"}]),
     "a toleration without a key must use operator Exists"),
    ("container-not-named-engine",
     lambda n: _with(_rename(BASE, n), lambda d: _members(d)[0]["template"]["spec"].update(
         containers=[{"name": "vllm", "image": "vllm"}])),
     "a member's pod template needs exactly one container named engine"),
    ("duplicate-container-names",
     lambda n: _with(_rename(BASE, n), lambda d: _members(d)[0]["template"]["spec"].update(
         containers=[{"name": "engine", "image": "a"}, {"name": "proxy"}, {"name": "proxy"}])),
     "container names must be unique within a member"),
    ("engine-container-without-image",
     lambda n: _with(_rename(BASE, n), lambda d: _members(d)[0]["template"]["spec"].update(
         containers=[{"name": "engine"}])),
     "the engine container needs an image"),
    ("reserved-label-key",
     lambda n: _with(_rename(BASE, n), lambda d: d["spec"]["template"].update(
         metadata={"labels": {"modelplane.ai/cluster": "x"}})),
     "label keys under modelplane.ai/ are reserved"),
    ("duplicate-engine-names",
     lambda n: _deployment(n, _engine("a"), _engine("a")),
     "engine names must be unique"),
    ("duplicate-device-request-names",
     lambda n: _deployment(n, _engine("a", _member("Standalone", nodeSelector={
         "devices": [{"name": "gpu", "count": 1}, {"name": "gpu", "count": 2}]}))),
     "device request names must be unique within a member"),
    ("unknown-field",
     lambda n: _with(_rename(BASE, n), lambda d: d["spec"]["template"]["spec"].update(bogus=1)),
     'unknown field: "bogus"'),
    ("bad-serving-mode",
     lambda n: _deployment(n, serving={"mode": "Both"}),
     'Unsupported value: "Both"'),
    ("negative-replicas",
     lambda n: _with(_rename(BASE, n), lambda d: d["spec"].update(replicas=-1)),
     "should be greater than or equal to 0"),
    ("rolling-update-both-zero",
     lambda n: _with(_rename(BASE, n), lambda d: d["spec"].update(
         strategy={"rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}})),
     "maxSurge and maxUnavailable may not both be 0"),
    ("rolling-update-surge-not-a-percentage",
     lambda n: _with(_rename(BASE, n), lambda d: d["spec"].update(
         strategy={"rollingUpdate": {"maxSurge": "25"}})),
     "maxSurge is a non-negative number or a percentage like 25%"),
    ("rolling-update-negative-unavailable",
     lambda n: _with(_rename(BASE, n), lambda d: d["spec"].update(
         strategy={"rollingUpdate": {"maxUnavailable": -1}})),
     "maxUnavailable is a non-negative number or a percentage like 25%"),
    ("progress-deadline-zero",
     lambda n: _with(_rename(BASE, n), lambda d: d["spec"].update(progressDeadlineSeconds=0)),
     "should be greater than or equal to 1"),
    ("class-bad-quantity",
     lambda n: _class(n, {"capacity": {"memory": {"value": "lots"}}}),
     "must be a Kubernetes quantity such as 81559Mi"),
    ("class-version-not-semver",
     lambda n: _class(n, {"attributes": {"cc": {"version": "9.0"}}}),
     "must be a semantic version such as 9.0.0"),
    ("class-attribute-with-two-types",
     lambda n: _class(n, {"attributes": {"arch": {"string": "Hopper", "int": 9}}}),
     "an attribute sets exactly one of string, bool, int or version"),
    ("class-dra-device-without-device-class",
     lambda n: _with(_class(n, {}), lambda d: d["spec"]["devices"][0].pop("deviceClassName")),
     "a DRA device needs deviceClassName"),
    ("cluster-source-without-its-block",
     lambda n: _cluster(n, {"source": "GKE"}),
     "source GKE needs the gke block"),
    ("cluster-two-source-blocks",
     lambda n: _cluster(n, EKS | {"gke": {"region": "us-central1"}}),
     "set only the block of the chosen source"),
    ("cluster-aks-pool-name-too-long",
     lambda n: _cluster(n, {"source": "AKS", "aks": {"location": "eastus"}},
                        {"name": "gpu-a100", "className": "a100", "nodeCount": 1}),
     "AKS caps pool names at 12 lowercase letters and digits"),
    ("cluster-fabric-off-eks",
     lambda n: _cluster(n, {"source": "GKE", "gke": {"region": "us-central1"}},
                        {"name": "gpu", "className": "l4", "nodeCount": 1, "fabric": EFA}),
     "fabric EFA is for EKS pools only"),
    ("cluster-infiniband-on-eks",
     lambda n: _cluster(n, EKS, {"name": "gpu", "className": "l4", "fabric": {"type": "InfiniBand"}}),
     "fabric InfiniBand is for AKS and Nebius pools"),
    ("cluster-nebius-infiniband-without-its-fabric",
     lambda n: _cluster(n, {"source": "Nebius", "nebius": {}},
                        {"name": "gpu", "className": "h100", "fabric": {"type": "InfiniBand"}}),
     "a Nebius InfiniBand pool names its fabric in fabric.infiniband.fabric"),
    ("cluster-infiniband-block-without-infiniband",
     lambda n: _cluster(n, {"source": "Nebius", "nebius": {}}, {
         "name": "gpu", "className": "h100", "fabric": {"type": "None", "infiniband": {"fabric": "f"}}}),
     "infiniband is only for fabric InfiniBand"),
    ("cluster-capacity-block-off-eks",
     lambda n: _cluster(n, {"source": "GKE", "gke": {"region": "us-central1"}}, {
         "name": "gpu", "className": "l4", "capacityBlock": {"capacityReservationId": "cr-1"}}),
     "capacityBlock is for EKS pools only"),
    ("cluster-pool-named-system",
     lambda n: _cluster(n, EKS, {"name": "system", "className": "l4"}),
     "the pool name system is the provisioned system pool's"),
    ("cluster-version-not-a-minor",
     lambda n: _cluster(n, EKS | {"eks": {"region": "us-east-1", "kubernetesVersion": "latest"}}),
     "should match"),
    ("cluster-unknown-identity-type",
     lambda n: _cluster(n, {"source": "Existing", "existing": {"secretRef": KUBECONFIG,
                        "identitySecretRef": {"name": "x", "key": "token", "type": "Kerberos"}}}),
     'Unsupported value: "Kerberos"'),
    ("cloud-two-system-pools",
     lambda n: _cloud("GKECluster", n, region="us-central1", nodePools=[
         {"name": "a", "role": "System", "machineType": "e2-standard-4"},
         {"name": "b", "role": "System", "machineType": "e2-standard-4"}]),
     "at most one node pool has role System"),
    ("cloud-system-pool-with-gpus",
     lambda n: _cloud("EKSCluster", n, region="us-east-1", nodePools=[
         {"name": "sys", "role": "System", "instanceType": "g6.xlarge",
          "gpu": {"acceleratorType": "nvidia-l4"}}]),
     "a System pool takes no gpu"),
    ("cloud-gpu-pool-named-system",
     lambda n: _cloud("VultrCluster", n, region="ewr", nodePools=[
         {"name": "system", "plan": "vcg-l40s-16c-180g-48vram"}]),
     "a GPU pool cannot be named system"),
    ("cloud-nebius-infiniband-without-its-fabric",
     lambda n: _cloud("NebiusCluster", n, nodePools=[
         {"name": "gpu", "platform": "gpu-h100-sxm", "preset": "8gpu-128vcpu-1600gb",
          "fabric": {"type": "InfiniBand"}}]),
     "fabric InfiniBand needs infiniband.fabric"),
    ("cloud-aks-fabric-unknown",
     lambda n: _cloud("AKSCluster", n, location="westeurope", nodePools=[
         {"name": "gpu", "vmSize": "Standard_ND96isr_H100_v5", "fabric": "EFA"}]),
     'Unsupported value: "EFA"'),
    ("serving-stack-secrets-without-kubeconfig",
     lambda n: _cloud("ServingStack", n, secrets=[
         {"type": "GoogleApplicationCredentials", "name": "sa", "key": "private_key"}]),
     "secrets need the Kubeconfig Secret"),
    ("serving-stack-two-kubeconfigs",
     lambda n: _cloud("ServingStack", n, secrets=[
         {"type": "Kubeconfig", "name": "a", "key": "kubeconfig"},
         {"type": "Kubeconfig", "name": "b", "key": "kubeconfig"}]),
     "one secret of each type"),
    ("cluster-min-above-node-count",
     lambda n: _cluster(n, EKS,
                        {"name": "gpu", "className": "l4", "nodeCount": 1, "minNodeCount": 2}),
     "minNodeCount must not exceed nodeCount"),
    ("cluster-duplicate-pools",
     lambda n: _cluster(n, EKS, {"name": "gpu", "className": "l4", "nodeCount": 1},
                        {"name": "gpu", "className": "l40s", "nodeCount": 1}),
     "node pool names must be unique"),
    ("cluster-bad-taint-effect",
     lambda n: _cluster(n, EKS, taints=[{"key": "k", "effect": "PreferNoSchedule"}]),
     'Unsupported value: "PreferNoSchedule"'),
    ("gateway-metallb-without-pool",
     lambda n: _gateway(n, traefik={"loadBalancer": "MetalLB"}),
     "loadBalancer MetalLB needs metallb.addressPool"),
    ("gateway-metallb-without-load-balancer",
     lambda n: _gateway(n, traefik={"metallb": {"addressPool": "10.0.0.0/24"}}),
     "metallb is only for loadBalancer MetalLB"),
    ("cache-without-source-block",
     lambda n: _doc(MD, "ModelCache", n, {"source": "HuggingFace"}),
     "source HuggingFace needs the huggingFace block"),
    ("service-weight-too-large",
     lambda n: _service(n, weight=1_000_001),
     "weight in body should be less than or equal to"),
    ("endpoint-url-not-http",
     lambda n: _doc(MD, "ModelEndpoint", n, {"url": "ftp://x"}),
     "should match"),
    ("replica-member-without-pool",
     lambda n: _with(_replica(n),
                     lambda d: d["spec"]["engines"][0]["members"][0].pop("nodePoolName")),
     "nodePoolName: Required value"),
    ("aks-cluster-pool-name-too-long",
     lambda n: _cloud("AKSCluster", n, location="eastus", nodePools=[
         {"name": "gpu-a100-pool", "nodeCount": 1, "vmSize": "Standard_NC24ads_A100_v4"}]),
     "AKS caps pool names at 12 lowercase letters and digits"),
    ("serving-stack-unknown-cloud",
     lambda n: _cloud("ServingStack", n, providerConfigRef={"name": "x"}, cloud="OnPrem"),
     'Unsupported value: "OnPrem"'),
]  # fmt: skip


def _rename(document: Doc, name: str) -> Doc:
    return _with(document, lambda d: d["metadata"].update(name=name))


@pytest.fixture(scope="module")
def reported() -> dict[tuple[str, str], list[str]]:
    """Validate every document of this file in one crank run; problems by (kind, name)."""
    documents = VALID + [build(case) for case, build, _ in INVALID]
    by_document: dict[tuple[str, str], list[str]] = defaultdict(list)
    for problem in validate.validate(documents):
        by_document[problem.kind, problem.name].append(problem.message)
    return by_document


def test_case_names_are_unique() -> None:
    names = [d["metadata"]["name"] for d in VALID] + [case for case, *_ in INVALID]
    assert len(names) == len(set(names))


def test_every_kind_has_a_valid_manifest() -> None:
    assert len({d["kind"] for d in VALID}) == len(validate.xrd_paths()) == 14


@pytest.mark.crank
@pytest.mark.parametrize("document", VALID, ids=[d["metadata"]["name"] for d in VALID])
def test_valid_manifest_is_accepted(
    document: Doc, reported: dict[tuple[str, str], list[str]]
) -> None:
    assert reported.get((document["kind"], document["metadata"]["name"]), []) == []


@pytest.mark.crank
@pytest.mark.parametrize(
    ("build", "says"), [(b, s) for _, b, s in INVALID], ids=[c for c, *_ in INVALID]
)
def test_invalid_manifest_is_rejected_for_its_one_fault(
    build: Callable[[str], Doc],
    says: str,
    reported: dict[tuple[str, str], list[str]],
    request: pytest.FixtureRequest,
) -> None:
    case = request.node.callspec.id
    document = build(case)
    messages = reported.get((document["kind"], case), [])
    assert messages, "accepted, but should be rejected"
    assert all(says in m for m in messages), messages


@pytest.mark.crank
def test_docs_examples_are_accepted() -> None:
    """Every Modelplane manifest under examples/ (the docs' own, and rendered ones)."""
    documents = [d for d in validate.load([ROOT / "examples"]) if validate.is_modelplane(d)]
    if not documents:
        pytest.skip("examples/ holds no Modelplane manifests")
    assert validate.validate(documents) == []
