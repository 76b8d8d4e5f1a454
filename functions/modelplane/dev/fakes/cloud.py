"""The cloud providers (provider-upjet-aws, -gcp, -azure, -nebius, -vultr): what they report
about a managed resource once the external resource exists.

``status.atProvider`` with the fields our functions read (an EFS file system's ``id``, a
GCP service account's ``email``, an EKS cluster's ``endpoint``, a VKE cluster's ``id``,
...) plus realistic others, shaped as each provider's CRD declares them, and the
connection details a ``writeConnectionSecretToRef`` receives (an EKS ClusterAuth's
``kubeconfig``, a GKE cluster's, a service account key's ``private_key``, ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.dev.fakes.base import Obj, b64, digest, group_of, octet


def family(group: str) -> str:
    """Return the provider family's group: ``ec2.aws.m.upbound.io`` -> ``aws.m.upbound.io``."""
    return ".".join(group.split(".")[-4:])


def connection_secret(owner: Mapping[str, Any], name: str, data: Mapping[str, str]) -> Obj:
    """The Secret a provider writes connection details to, controlled by the resource."""
    meta = owner.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": str(meta.get("namespace") or ""),
            "ownerReferences": [
                {
                    "apiVersion": owner.get("apiVersion"),
                    "kind": owner.get("kind"),
                    "name": meta.get("name"),
                    "uid": meta.get("uid"),
                    "controller": True,
                }
            ],
        },
        "type": "connection.crossplane.io/v1alpha1",
        "data": {k: b64(v) for k, v in sorted(data.items())},
    }


def kubeconfig(server: str, cluster: str) -> str:
    """A kubeconfig reaching ``server`` as the cloud's own kubeconfig would (a fake token)."""
    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: {cluster}\n  cluster:\n    server: {server}\n"
        f"contexts:\n- name: {cluster}\n  context: {{cluster: {cluster}, user: {cluster}}}\n"
        f"current-context: {cluster}\n"
        f"users:\n- name: {cluster}\n  user: {{token: fake-{digest(cluster, length=12)}}}\n"
    )


def gcp_project(obj: Mapping[str, Any], config: Mapping[str, Any] | None) -> str:
    """A GCP resource's project: its own, else its provider config's ``projectID``."""
    given = ((obj.get("spec") or {}).get("forProvider") or {}).get("project")
    if given:
        return str(given)
    return str(((config or {}).get("spec") or {}).get("projectID") or "example-project")


@dataclass(frozen=True)
class _Managed:
    """What every cloud's fake reads of a managed resource."""

    group: str
    kind: str
    name: str
    spec: Mapping[str, Any]
    region: str
    ident: str

    @property
    def service(self) -> str:
        return self.group.split(".")[0]


Observation = tuple[Obj, dict[str, str]]
"""``status.atProvider`` and the connection details a provider writes."""

_AWS_PREFIXES = {
    "VPC": "vpc",
    "Subnet": "subnet",
    "SecurityGroup": "sg",
    "InternetGateway": "igw",
    "NATGateway": "nat",
    "EIP": "eipalloc",
    "RouteTable": "rtb",
    "LaunchTemplate": "lt",
    "FileSystem": "fs",
    "MountTarget": "fsmt",
    "AccessPoint": "fsap",
    "Route": "r",
    "RouteTableAssociation": "rtbassoc",
    "SecurityGroupIngressRule": "sgr",
    "SecurityGroupEgressRule": "sgr",
}


def observe(obj: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> Observation:
    """Return ``status.atProvider`` and the connection details of a cloud managed resource.

    Args:
        obj: The managed resource.
        config: Its ClusterProviderConfig (GCP's names the default project), if any.
    """
    group, kind = group_of(obj), str(obj.get("kind", ""))
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    spec = (obj.get("spec") or {}).get("forProvider") or {}
    region = str(spec.get("region") or spec.get("location") or "us-east-1")
    ident = digest(group, kind, str(meta.get("namespace")), name)
    managed = _Managed(group, kind, name, spec, region, ident)
    if group.endswith("aws.m.upbound.io"):
        return _aws(managed)
    if group.endswith("gcp.m.upbound.io"):
        return _gcp(managed, gcp_project(obj, config))
    if group.endswith("azure.m.upbound.io"):
        return _azure(managed)
    if group.endswith("vultr.m.upbound.io"):
        return _vultr(managed)
    if group.endswith("nebius.m.upbound.io"):
        return _nebius(managed)
    return {"id": f"{kind.lower()}-{ident}"}, {}


def _nebius(mr: _Managed) -> Observation:
    """An mk8s cluster reports its control plane's endpoint and CA under ``status``."""
    at: Obj = {"id": f"{mr.kind.lower()}-{mr.ident}"}
    if mr.kind == "Cluster" and mr.service == "mk8s":
        at["status"] = {
            "controlPlane": {
                "endpoints": {"publicEndpoint": f"https://pub.{mr.ident}.mk8s.nebius.example"},
                "auth": {"clusterCaCertificate": "fake CA for " + mr.name},
            }
        }
    return at, {}


def _aws(mr: _Managed) -> Observation:
    kind, name, region = mr.kind, mr.name, mr.region
    ident = f"{_AWS_PREFIXES[kind]}-{mr.ident}" if kind in _AWS_PREFIXES else name
    at: Obj = {
        "id": ident,
        "arn": f"arn:aws:{mr.service}:{region}:123456789012:{kind.lower()}/{ident}",
    }
    at.update({k: mr.spec[k] for k in ("cidrBlock", "availabilityZone") if k in mr.spec})
    server = f"https://{digest(name, length=32).upper()}.gr7.{region}.eks.amazonaws.com"
    match kind:
        case "EIP":
            at["publicIp"] = f"198.51.100.{octet(name)}"
        case "FileSystem":
            at["dnsName"] = f"{ident}.efs.{region}.amazonaws.com"
        case "Role":
            at["arn"] = f"arn:aws:iam::123456789012:role/{name}"
        case "Cluster" if mr.service == "eks":
            at.update(
                {
                    "endpoint": server,
                    "status": "ACTIVE",
                    "version": str(mr.spec.get("version") or "1.34"),
                    "certificateAuthority": [{"data": b64("fake CA for " + name)}],
                    "identity": [{"oidc": [{"issuer": server.replace("eks", "oidc.eks")}]}],
                    # EKS makes the cluster security group itself.
                    "vpcConfig": {"clusterSecurityGroupId": f"sg-{digest(name, 'eks')}"},
                }
            )
        case "NodeGroup":
            at["status"] = "ACTIVE"
        case "ClusterAuth":
            return {}, {
                "kubeconfig": kubeconfig(server, name),
                "server": server,
                "clusterCA": "fake CA for " + name,
                "token": "k8s-aws-v1." + digest(name, length=40),
            }
    return at, {}


def _gcp(mr: _Managed, project: str) -> Observation:
    kind, name, region = mr.kind, mr.name, mr.region
    at: Obj = {"id": f"projects/{project}/{kind.lower()}s/{name}", "project": project}
    secret: dict[str, str] = {}
    match kind:
        case "ServiceAccount":
            email = f"{name}@{project}.iam.gserviceaccount.com"
            at.update(
                {
                    "email": email,
                    "id": f"projects/{project}/serviceAccounts/{email}",
                    "member": f"serviceAccount:{email}",
                    "name": f"projects/{project}/serviceAccounts/{email}",
                    "uniqueId": str(int(mr.ident, 16) % 10**21),
                }
            )
        case "ServiceAccountKey":
            at["publicKey"] = b64("fake public key of " + name)
            key_id = digest(name, length=40)
            secret = {
                "private_key": f'{{"type": "service_account", "private_key_id": "{key_id}"}}',
                "attribute.private_key": b64("fake private key of " + name),
            }
        case "Cluster":
            endpoint = f"203.0.113.{octet(name, 'gke')}"
            at.update(
                {
                    "id": f"projects/{project}/locations/{region}/clusters/{name}",
                    "endpoint": endpoint,
                    "masterVersion": "1.34.1-gke.1000",
                    "selfLink": f"gcp/projects/{project}/locations/{region}/clusters/{name}",
                }
            )
            secret = {"kubeconfig": kubeconfig(f"https://{endpoint}", name)}
        case "NodePool":
            at["instanceGroupUrls"] = [f"gcp/projects/{project}/instanceGroups/{name}-grp"]
    return at, secret


def _azure(mr: _Managed) -> Observation:
    group_name = str(mr.spec.get("resourceGroupName") or mr.name)
    at: Obj = {
        "id": f"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/{group_name}"
        f"/providers/{mr.service}/{mr.kind}/{mr.name}"
    }
    if mr.kind != "KubernetesCluster":
        return at, {}
    fqdn = f"{mr.name}-{digest(mr.name, length=8)}.hcp.{mr.region}.azmk8s.io"
    at.update({"fqdn": fqdn, "kubeletIdentity": {"objectId": digest(mr.name, "kubelet")}})
    config = kubeconfig(f"https://{fqdn}:443", mr.name)
    return at, {"kubeconfig": config, "attribute.kube_config_raw": config}


def _vultr(mr: _Managed) -> Observation:
    ident = mr.ident
    uuid = (
        f"{ident[:8]}-{ident[8:12]}-4{ident[12:15]}-8{ident[15:17]}0-{digest(mr.name, length=12)}"
    )
    at: Obj = {"id": uuid}
    if mr.kind in ("NodePools", "KubernetesNodePool"):
        at["status"] = "active"
    if mr.kind != "Kubernetes":
        return at, {}
    endpoint = f"{uuid}.vultr-k8s.com"
    at.update({"endpoint": endpoint, "status": "active", "ip": f"203.0.113.{octet(mr.name)}"})
    config = kubeconfig(f"https://{endpoint}:6443", mr.name)
    # VKE returns kube_config base64-encoded: upjet publishes the attribute as is, and the
    # provider adds it decoded under ``kubeconfig``, as the other clouds' providers do.
    return at, {"kubeconfig": config, "attribute.kube_config": b64(config)}


# --- provider-helm -------------------------------------------------------------------------
