"""A Nebius mk8s cluster as namespaced managed resources of provider-upjet-nebius.

Everything is created in the project of the Nebius provider config the spec names (its
``projectID``; a project is bound to one region), so no resource sets a parent.

Network: a private IPv4 pool (10.0.0.0/16), a VPC network on it, and one subnet that
uses the network's pools, for the nodes and (VPC-Cilium) their pods.

The mk8s cluster: the control plane in that subnet, with a public endpoint and a
three-member etcd, at the Kubernetes minor the spec names (default 1.34, which has DRA).

Node groups: the system group (``cpu-d3`` ``4vcpu-16gb`` by default, labelled
``modelplane.ai/system=true``), and one per GPU pool on the pool's platform and preset,
with the pool's GPU driver preset, labelled ``modelplane.ai/pool=<pool>`` and tainted
``nvidia.com/gpu=present:NoSchedule``. A pool whose floor is below its ceiling gets mk8s'
autoscaling (which starts it at the floor); others a fixed node count. A pool with
fabric ``InfiniBand`` joins a GPU cluster on the physical fabric it names: one GPU cluster
per fabric the pools name.

RWX storage: one shared filesystem (``NETWORK_SSD``, ``spec.cache.sizeGiB``) attached to
every node group under the mount tag ``modelplane-cache``, which the nodes' cloud-init
(a Secret this composes) mounts at ``/mnt/modelplane-cache``; the StorageClass
``modelplane-rwx-fs`` of Nebius' ``csi-mounted-fs-path`` driver serves directories of it
(the driver is installed on the cluster with its data directory on that mount).

Access: mk8s' kubeconfig holds only the endpoint and CA: once the cluster reports them
this composes the kubeconfig Secret itself, and pairs it with the credentials Secret of
the Nebius provider config the spec names (``NebiusServiceAccountCredentials``): the
provider-kubernetes ProviderConfig that creates the StorageClass, and what the
NebiusCluster publishes as ``status.identitySecretRef`` for its consumers.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from modelplane.domain.clouds.common import (
    CLUSTER_KEY,
    INFINIBAND,
    KUBECONFIG_KEY,
    PROVIDER_CONFIG_KEY,
    STORAGE_CLASS_KEY,
    CloudCluster,
    GpuPool,
    at_provider,
    autoscales,
    gpu_node_labels,
    gpu_taint,
    kubeconfig_secret,
    managed,
    on_cluster,
    provider_configs,
    resource_name,
    scaling,
    selector,
    system_node_labels,
)

VPC = "vpc.nebius.m.upbound.io/v1beta1"
MK8S = "mk8s.nebius.m.upbound.io/v1beta1"
COMPUTE = "compute.nebius.m.upbound.io/v1beta1"
NEBIUS = "nebius.m.upbound.io/v1beta1"
"""The provider's own group: its ClusterProviderConfig and ProviderConfig."""

DEFAULT_VERSION = "1.34"
SYSTEM_PLATFORM = "cpu-d3"
SYSTEM_PRESET = "4vcpu-16gb"
NETWORK_CIDR = "10.0.0.0/16"
ETCD_MEMBERS = 3
DISK_TYPE = "NETWORK_SSD"
FILESYSTEM_TYPE = "NETWORK_SSD"
FILESYSTEM_BLOCK_BYTES = 4096
MOUNT_TAG = "modelplane-cache"
MOUNT_PATH = f"/mnt/{MOUNT_TAG}"
CSI_DATA_DIR = f"{MOUNT_PATH}/csi-mounted-fs-path-data/"
"""Where the csi-mounted-fs-path driver keeps its volumes (its ``dataDir``)."""
CSI_PROVISIONER = "mounted-fs-path.csi.nebius.ai"
STORAGE_CLASS = "modelplane-rwx-fs"
IDENTITY_TYPE = "NebiusServiceAccountCredentials"
USER_DATA_KEY = "userData"
# Composed keys the adapter reads back from observed state.
KUBECONFIG_SECRET_KEY = "kubeconfig"
# What waits for the cluster's endpoint and CA, and for the provider config's credentials.
ACCESS_KEYS = (KUBECONFIG_SECRET_KEY, PROVIDER_CONFIG_KEY, STORAGE_CLASS_KEY)

Manifests = dict[str, dict[str, Any]]


def _mr(
    cluster: CloudCluster, api: str, kind: str, role: str, fields: Mapping[str, Any]
) -> dict[str, Any]:
    # Every Nebius resource has a human-readable name: the managed resource's.
    name = resource_name(cluster.name, role)
    return managed(cluster, api, kind, role, {**fields, "name": name})


def resources(cluster: CloudCluster, cache_gib: int) -> Manifests:
    """Return every managed resource that needs nothing Nebius reports, by composed key.

    Args:
        cluster: The cluster.
        cache_gib: The shared filesystem's size.
    """
    out: Manifests = {}
    out.update(_network(cluster))
    out[CLUSTER_KEY] = _cluster(cluster)
    out["filesystem"] = _mr(cluster, COMPUTE, "Filesystem", "filesystem", {
        "blockSizeBytes": FILESYSTEM_BLOCK_BYTES,
        "sizeGibibytes": cache_gib,
        "type": FILESYSTEM_TYPE,
    })  # fmt: skip
    out["node-init"] = node_init(cluster)
    for fabric in fabrics(cluster):
        key = gpu_cluster_role(fabric)
        out[key] = _mr(cluster, COMPUTE, "GpuCluster", key, {"infinibandFabric": fabric})
    out.update(_node_groups(cluster))
    return dict(sorted(out.items()))


def _network(cluster: CloudCluster) -> Manifests:
    return {
        "pool": _mr(cluster, VPC, "Pool", "pool", {
            "cidrs": [{"cidr": NETWORK_CIDR}],
            "version": "IPV4",
            "visibility": "PRIVATE",
        }),
        "network": _mr(cluster, VPC, "Network", "network", {
            "ipv4PrivatePools": {"pools": [{"idSelector": selector("pool")}]},
        }),
        "subnet": _mr(cluster, VPC, "Subnet", "subnet", {
            "ipv4PrivatePools": {"useNetworkPools": True},
            "networkIdSelector": selector("network"),
        }),
    }  # fmt: skip


def _cluster(cluster: CloudCluster) -> dict[str, Any]:
    mk8s = _mr(cluster, MK8S, "Cluster", CLUSTER_KEY, {
        "controlPlane": {
            "endpoints": {"publicEndpoint": {}},
            "etcdClusterSize": ETCD_MEMBERS,
            "subnetIdSelector": selector("subnet"),
            "version": cluster.version or DEFAULT_VERSION,
        },
    })  # fmt: skip
    mk8s["metadata"]["name"] = cluster.name
    mk8s["spec"]["forProvider"]["name"] = cluster.name
    return dict(mk8s)


def fabrics(cluster: CloudCluster) -> list[str]:
    """Return every InfiniBand fabric a pool joins, sorted and without repeats."""
    return sorted(
        {p.infiniband_fabric for p in cluster.pools if p.infiniband_fabric and _joins_fabric(p)}
    )


def _joins_fabric(pool: GpuPool) -> bool:
    return pool.fabric == INFINIBAND and bool(pool.infiniband_fabric)


def gpu_cluster_role(fabric: str) -> str:
    """Return the role (and key) of the GPU cluster on a fabric."""
    return f"gpu-cluster-{fabric}"


def node_init(cluster: CloudCluster) -> dict[str, Any]:
    """Return the Secret holding the nodes' cloud-init: mount the shared filesystem."""
    # JSON is YAML: cloud-init reads it after its header.
    user_data = "#cloud-config\n" + json.dumps(
        {
            # cloud-init writes the fstab entry, creates the mount point and mounts it.
            "mounts": [[MOUNT_TAG, MOUNT_PATH, "virtiofs", "defaults,nofail", "0", "2"]],
        },
        indent=2,
        sort_keys=True,
    )
    return _secret(cluster, "node-init", {USER_DATA_KEY: user_data})


def _secret(cluster: CloudCluster, role: str, data: Mapping[str, str]) -> dict[str, Any]:
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": resource_name(cluster.name, role), "namespace": cluster.namespace},
        "type": "Opaque",
        "data": encoded,
    }


def _template(
    cluster: CloudCluster,
    platform: str,
    preset: str | None,
    disk_gb: int | None,
    labels: Mapping[str, str],
) -> dict[str, Any]:
    template: dict[str, Any] = {
        "cloudInitUserDataSecretRef": {
            "key": USER_DATA_KEY,
            "name": resource_name(cluster.name, "node-init"),
        },
        "filesystems": [
            {
                "attachMode": "READ_WRITE",
                "existingFilesystem": {"idSelector": selector("filesystem")},
                "mountTag": MOUNT_TAG,
            }
        ],
        "metadata": {"labels": dict(labels)},
        "resources": {"platform": platform, "preset": preset or ""},
    }
    if disk_gb is not None:
        template["bootDisk"] = {"sizeGibibytes": disk_gb, "type": DISK_TYPE}
    return template


def _node_groups(cluster: CloudCluster) -> Manifests:
    system = cluster.system
    template = _template(
        cluster,
        system.machine_type,
        system.preset,
        system.disk_size_gb,
        system_node_labels(),
    )
    out: Manifests = {
        "nodegroup-system": _node_group(cluster, "nodegroup-system", template, {
            "fixedNodeCount": system.node_count,
        }),
    }  # fmt: skip
    for pool in cluster.pools:
        out[f"nodegroup-{pool.name}"] = _gpu_node_group(cluster, pool)
    return out


def _gpu_node_group(cluster: CloudCluster, pool: GpuPool) -> dict[str, Any]:
    template = _template(
        cluster, pool.machine_type, pool.preset, pool.disk_size_gb, gpu_node_labels(pool)
    )
    template["taints"] = [gpu_taint("NO_SCHEDULE")]
    if pool.drivers_preset:
        template["gpuSettings"] = {"driversPreset": pool.drivers_preset}
    if _joins_fabric(pool):
        role = gpu_cluster_role(str(pool.infiniband_fabric))
        template["gpuCluster"] = {"idSelector": selector(role)}
    low, desired, high = scaling(pool)
    if autoscales(pool):
        size: dict[str, Any] = {"autoscaling": {"maxNodeCount": high, "minNodeCount": low}}
    else:
        size = {"fixedNodeCount": desired}
    return _node_group(cluster, f"nodegroup-{pool.name}", template, size)


def _node_group(
    cluster: CloudCluster, role: str, template: Mapping[str, Any], size: Mapping[str, Any]
) -> dict[str, Any]:
    return _mr(cluster, MK8S, "NodeGroup", role, {
        **size,
        "parentIdSelector": selector(CLUSTER_KEY),
        "template": dict(template),
    })  # fmt: skip


def endpoint(observed: Mapping[str, Any] | None) -> tuple[str, str]:
    """Return the mk8s cluster's public endpoint and CA certificate (PEM), once reported.

    Both are read from ``status.atProvider.status.controlPlane`` (``endpoints.publicEndpoint``
    and ``auth.clusterCaCertificate``); ``("", "")`` until they are there.
    """
    node: Any = at_provider(observed)
    for part in ("status", "controlPlane"):
        node = node.get(part) if isinstance(node, Mapping) else None
    plane = node if isinstance(node, Mapping) else {}
    endpoints = plane.get("endpoints")
    auth = plane.get("auth")
    server = endpoints.get("publicEndpoint") if isinstance(endpoints, Mapping) else None
    ca = auth.get("clusterCaCertificate") if isinstance(auth, Mapping) else None
    if not isinstance(server, str) or not isinstance(ca, str) or not server or not ca:
        return "", ""
    return server, ca


def kubeconfig(cluster: CloudCluster, server: str, ca: str) -> str:
    """Return the cluster's kubeconfig: its endpoint and CA, no credentials (consumers pair it
    with the Nebius identity)."""
    url = server if server.startswith("https://") else f"https://{server}"
    name = cluster.name
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {
                    "server": url,
                    "certificate-authority-data": base64.b64encode(ca.encode()).decode(),
                },
            }
        ],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "users": [{"name": name, "user": {}}],
    }
    return json.dumps(config, indent=2)  # kubeconfigs are YAML, and JSON is YAML


def access_resources(
    cluster: CloudCluster, server: str, ca: str, identity: Mapping[str, str] | None
) -> Manifests:
    """Return the kubeconfig Secret and, once the identity is known, the provider-kubernetes
    ProviderConfig pairing them and the Object holding the ``modelplane-rwx-fs`` StorageClass.

    Args:
        cluster: The cluster.
        server: Its public endpoint.
        ca: Its CA certificate (PEM).
        identity: The Nebius credentials ``{type, name, namespace, key}``, or None.
    """
    out: Manifests = {
        KUBECONFIG_SECRET_KEY: _secret(
            cluster, "kubeconfig", {KUBECONFIG_KEY: kubeconfig(cluster, server, ca)}
        )
    }
    if identity:
        ref = {"name": kubeconfig_secret(cluster.name), "namespace": cluster.namespace}
        out.update(provider_configs(cluster, {**ref, "key": KUBECONFIG_KEY}, identity))
        config = out[PROVIDER_CONFIG_KEY]["metadata"]["name"]
        out[STORAGE_CLASS_KEY] = on_cluster(cluster, "storage-class", storage_class(), config)
    return out


def storage_class() -> dict[str, Any]:
    """Return the RWX StorageClass: a directory of the shared filesystem per volume."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": STORAGE_CLASS},
        "provisioner": CSI_PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def identity(config: Mapping[str, Any] | None, namespace: str) -> dict[str, str] | None:
    """Return the credentials Secret of a Nebius provider config, as a consumer's identity.

    Args:
        config: The ClusterProviderConfig or ProviderConfig, as read (None: not found).
        namespace: Where a namespaced ProviderConfig's Secret lives (the composite's).

    Returns:
        ``{type, name, namespace, key}``, or None when the config reads no Secret.
    """
    spec = (config or {}).get("spec")
    credentials = spec.get("credentials") if isinstance(spec, Mapping) else None
    if not isinstance(credentials, Mapping) or credentials.get("source") != "Secret":
        return None
    ref = credentials.get("secretRef")
    if not isinstance(ref, Mapping) or not ref.get("name") or not ref.get("key"):
        return None
    return {
        "type": IDENTITY_TYPE,
        "name": str(ref["name"]),
        "namespace": str(ref.get("namespace") or namespace),
        "key": str(ref["key"]),
    }
