"""A GKE cluster as namespaced managed resources of the GCP provider family.

A regional cluster on its own VPC network and subnetwork (nodes 10.0.0.0/20, pods and
services on secondary ranges), its default node pool removed, on the ``RAPID`` release
channel with the minimum master version set to the asked minor (default 1.35, whose
DRA GPU claims need), with the Filestore CSI driver add-on on and, once the project is
known (its provider config's ``projectID``, else the node service account's), Workload
Identity (``<project>.svc.id.goog``, every node pool on the GKE metadata server).

Node pools: the system pool in the cluster's first zone, and one per GPU pool in the
pool's zones (else the first zone) with its GPUs attached (GKE installs the latest
driver), labelled ``modelplane.ai/pool=<pool>``, tainted
``nvidia.com/gpu=present:NoSchedule``, and with GKE's own GPU device plugin off, since
the NVIDIA DRA driver hands out the GPUs. Autoscaling bounds are the pool's totals;
the initial count is the pool's node count spread over its zones, rounded up.

Identity: a node service account, granted ``roles/container.admin`` on the project
once GCP reports its email and project, and a key for it, written to a Secret, that
consumers pair with the kubeconfig (GoogleApplicationCredentials).

RWX storage: the Filestore API enabled on the project, and, once the kubeconfig and the
key exist, a provider-kubernetes ProviderConfig (the kubeconfig plus the key) and the
StorageClass ``modelplane-rwx-filestore`` on the cluster: Filestore Enterprise through the
CSI driver add-on, its instances on the cluster's own network.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from modelplane.domain.clouds.common import (
    CLUSTER_KEY,
    POOL_LABEL,
    PROVIDER_CONFIG_KEY,
    STORAGE_CLASS_KEY,
    CloudCluster,
    GpuPool,
    gpu_taint,
    kubeconfig_secret,
    managed,
    on_cluster,
    pool_zones,
    provider_configs,
    resource_name,
    scaling,
    selector,
    system_node_labels,
)

COMPUTE = "compute.gcp.m.upbound.io/v1beta1"
CONTAINER = "container.gcp.m.upbound.io/v1beta1"
CLOUDPLATFORM = "cloudplatform.gcp.m.upbound.io/v1beta1"

DEFAULT_VERSION = "1.35"
STORAGE_CLASS = "modelplane-rwx-filestore"
FILESTORE_TIER = "enterprise"
FILESTORE_API = "file.googleapis.com"
IDENTITY_TYPE = "GoogleApplicationCredentials"
RELEASE_CHANNEL = "RAPID"
CLUSTER_NAME_LIMIT = 40  # GKE cluster and node pool names
ACCOUNT_ID_LIMIT = 30  # GCP service account ids
NODE_CIDR = "10.0.0.0/20"
POD_RANGE = ("pods", "10.16.0.0/14")
SERVICE_RANGE = ("services", "10.20.0.0/20")
CONTAINER_ADMIN = "roles/container.admin"
IDENTITY_KEY = "private_key"
"""The key of the service account key's connection Secret that holds the JSON credential."""
# Composed keys the adapter reads back from observed state.
ACCOUNT_KEY = "service-account"
ACCOUNT_KEY_KEY = "service-account-key"
IAM_KEY = "iam-container-admin"
# What :func:`iam_member` composes: it waits for GCP to report the account.
IAM_KEYS = (IAM_KEY,)
# What :func:`workload_resources` composes: it waits for the kubeconfig and the key.
WORKLOAD_KEYS = (PROVIDER_CONFIG_KEY, STORAGE_CLASS_KEY)
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"

Manifests = dict[str, dict[str, Any]]


def zones(cluster: CloudCluster) -> list[str]:
    """Return the cluster's zones: every pool's, or the region's ``a`` zone if none name any."""
    return pool_zones(cluster) or [f"{cluster.region}-a"]


def cluster_name(cluster: CloudCluster) -> str:
    """Return the GKE cluster's name: the composite's, shortened if over GKE's 40 characters."""
    if len(cluster.name) <= CLUSTER_NAME_LIMIT:
        return cluster.name
    return resource_name(cluster.name, "gke", limit=CLUSTER_NAME_LIMIT)


def identity_secret(cluster: CloudCluster) -> str:
    """Return the name of the Secret the service account key is written to."""
    return resource_name(cluster.name, "identity")


def resources(cluster: CloudCluster, project: str | None = None) -> Manifests:
    """Return every managed resource that needs nothing GCP reports, by composed key.

    Args:
        cluster: The cluster.
        project: The GCP project, once known: it turns on Workload Identity.
    """
    out: Manifests = {}
    out.update(_network(cluster))
    out.update(_identity(cluster))
    out[CLUSTER_KEY] = _cluster(cluster, project)
    out.update(_node_pools(cluster, workload_identity=bool(project)))
    out["filestore-api"] = _mr(cluster, CLOUDPLATFORM, "ProjectService", "filestore-api", {
        # Other clusters of the project need the API too: never turn it off.
        "disableOnDestroy": False,
        "service": FILESTORE_API,
    })  # fmt: skip
    return dict(sorted(out.items()))


def _mr(cluster: CloudCluster, api: str, kind: str, role: str, fields: Mapping[str, Any]) -> Any:
    return managed(cluster, api, kind, role, fields)


def _network(cluster: CloudCluster) -> Manifests:
    ranges = [{"ipCidrRange": cidr, "rangeName": name} for name, cidr in (POD_RANGE, SERVICE_RANGE)]
    return {
        "network": _mr(cluster, COMPUTE, "Network", "network", {"autoCreateSubnetworks": False}),
        "subnetwork": _mr(cluster, COMPUTE, "Subnetwork", "subnetwork", {
            "ipCidrRange": NODE_CIDR,
            "networkSelector": selector("network"),
            "privateIpGoogleAccess": True,
            "region": cluster.region,
            "secondaryIpRange": ranges,
        }),
    }  # fmt: skip


def _identity(cluster: CloudCluster) -> Manifests:
    account = _mr(
        cluster,
        CLOUDPLATFORM,
        "ServiceAccount",
        "service-account",
        {
            "displayName": f"Modelplane nodes of {cluster.name}"[:100],
        },
    )
    # The account id is the name: 6 to 30 characters.
    account["metadata"]["name"] = resource_name(cluster.name, "nodes", limit=ACCOUNT_ID_LIMIT)
    key = _mr(
        cluster,
        CLOUDPLATFORM,
        "ServiceAccountKey",
        "service-account-key",
        {
            "publicKeyType": "TYPE_X509_PEM_FILE",
            "serviceAccountIdSelector": selector("service-account"),
        },
    )
    key["spec"]["writeConnectionSecretToRef"] = {"name": identity_secret(cluster)}
    return {"service-account": account, "service-account-key": key}


def iam_member(cluster: CloudCluster, email: str, project: str) -> Manifests:
    """Return the grant of ``roles/container.admin`` to the node service account.

    Args:
        cluster: The cluster.
        email: The service account's email, once GCP reports it.
        project: The project the service account lives in.
    """
    return {
        IAM_KEY: _mr(cluster, CLOUDPLATFORM, "ProjectIAMMember", IAM_KEY, {
            "member": f"serviceAccount:{email}",
            "project": project,
            "role": CONTAINER_ADMIN,
        }),
    }  # fmt: skip


def network_name(cluster: CloudCluster) -> str:
    """Return the VPC network's name in GCP (the managed resource's name)."""
    return resource_name(cluster.name, "network")


def _cluster(cluster: CloudCluster, project: str | None) -> dict[str, Any]:
    gke = _mr(cluster, CONTAINER, "Cluster", CLUSTER_KEY, {
        "addonsConfig": {"gcpFilestoreCsiDriverConfig": {"enabled": True}},
        # The composite owns the cluster's life; GCP's guard would block its deletion.
        "deletionProtection": False,
        "initialNodeCount": 1,
        "ipAllocationPolicy": {
            "clusterSecondaryRangeName": POD_RANGE[0],
            "servicesSecondaryRangeName": SERVICE_RANGE[0],
        },
        "location": cluster.region,
        "minMasterVersion": cluster.version,
        "networkSelector": selector("network"),
        "releaseChannel": {"channel": RELEASE_CHANNEL},
        "removeDefaultNodePool": True,
        "subnetworkSelector": selector("subnetwork"),
    })  # fmt: skip
    if project:
        workload_pool = f"{project}.svc.id.goog"
        gke["spec"]["forProvider"]["workloadIdentityConfig"] = {"workloadPool": workload_pool}
    gke["metadata"]["name"] = cluster_name(cluster)
    gke["spec"]["writeConnectionSecretToRef"] = {"name": kubeconfig_secret(cluster.name)}
    return dict(gke)


def _node_pools(cluster: CloudCluster, *, workload_identity: bool) -> Manifests:
    first = zones(cluster)[:1]
    system = cluster.system
    config = _node_config(system.machine_type, system.disk_size_gb, system_node_labels())
    out: Manifests = {
        "nodepool-system": _node_pool(cluster, "nodepool-system", first, {
            "autoscaling": {
                "totalMaxNodeCount": system.node_count,
                "totalMinNodeCount": system.node_count,
            },
            "initialNodeCount": system.node_count,
            "nodeConfig": config,
        }),
    }  # fmt: skip
    for pool in cluster.pools:
        role = f"nodepool-{pool.name}"
        out[role] = _gpu_node_pool(cluster, pool, role, list(pool.zones) or first)
    if workload_identity:
        for manifest in out.values():
            node_config = manifest["spec"]["forProvider"]["nodeConfig"]
            node_config["workloadMetadataConfig"] = {"mode": "GKE_METADATA"}
    return out


def _gpu_node_pool(
    cluster: CloudCluster, pool: GpuPool, role: str, names: list[str]
) -> dict[str, Any]:
    low, desired, high = scaling(pool)
    config = _node_config(pool.machine_type, pool.disk_size_gb, {
        # The NVIDIA DRA driver hands out the GPUs, so GKE's device plugin must not.
        "gke-no-default-nvidia-gpu-device-plugin": "true",
        POOL_LABEL: pool.name,
    })  # fmt: skip
    config["taint"] = [gpu_taint("NO_SCHEDULE")]
    if pool.accelerator_type:
        config["guestAccelerator"] = [{
            "count": pool.accelerator_count or 1,
            "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
            "type": pool.accelerator_type,
        }]  # fmt: skip
    return _node_pool(cluster, role, names, {
        "autoscaling": {"locationPolicy": "ANY", "totalMaxNodeCount": high, "totalMinNodeCount": low},
        # GKE counts initial nodes per zone.
        "initialNodeCount": math.ceil(desired / len(names)),
        "nodeConfig": config,
    })  # fmt: skip


def _node_config(
    machine_type: str, disk_size_gb: int | None, labels: Mapping[str, str]
) -> dict[str, Any]:
    config: dict[str, Any] = {
        "labels": dict(labels),
        "machineType": machine_type,
        "oauthScopes": [CLOUD_PLATFORM_SCOPE],
        "serviceAccountSelector": selector("service-account"),
    }
    if disk_size_gb is not None:
        config["diskSizeGb"] = disk_size_gb
    return config


def _node_pool(
    cluster: CloudCluster, role: str, names: list[str], fields: Mapping[str, Any]
) -> dict[str, Any]:
    pool = _mr(cluster, CONTAINER, "NodePool", role, {
        **fields,
        "clusterSelector": selector(CLUSTER_KEY),
        "location": cluster.region,
        "management": {"autoRepair": True, "autoUpgrade": True},
        "nodeLocations": list(names),
    })  # fmt: skip
    pool["metadata"]["name"] = resource_name(cluster.name, role, limit=CLUSTER_NAME_LIMIT)
    return dict(pool)


def identity_ref(cluster: CloudCluster) -> dict[str, str]:
    """Return the service account key Secret as a consumer's identity: ``{type, name,
    namespace, key}``."""
    return {
        "type": IDENTITY_TYPE,
        "name": identity_secret(cluster),
        "namespace": cluster.namespace,
        "key": IDENTITY_KEY,
    }


def workload_resources(cluster: CloudCluster, kubeconfig: Mapping[str, str]) -> Manifests:
    """Return what goes on the cluster itself once its kubeconfig and key exist: a
    provider-kubernetes ProviderConfig (the kubeconfig paired with the service account
    key) and the Object holding the ``modelplane-rwx-filestore`` StorageClass."""
    out = provider_configs(cluster, kubeconfig, identity_ref(cluster))
    config = out[PROVIDER_CONFIG_KEY]["metadata"]["name"]
    out[STORAGE_CLASS_KEY] = on_cluster(cluster, "storage-class", storage_class(cluster), config)
    return out


def storage_class(cluster: CloudCluster) -> dict[str, Any]:
    """Return the RWX StorageClass: Filestore Enterprise instances on the cluster's network."""
    return {
        "allowVolumeExpansion": True,
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": STORAGE_CLASS},
        "parameters": {"network": network_name(cluster), "tier": FILESTORE_TIER},
        "provisioner": "filestore.csi.storage.gke.io",
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    }
