"""An EKS cluster as namespaced managed resources of the AWS provider family.

The network is one VPC (10.0.0.0/16) with, in each zone, a public /24 (internet gateway,
load balancers, the NAT gateway) and a private /20 (nodes, EFS mount targets). Nodes
reach the internet through one NAT gateway in the first zone's public subnet.

Zones are every zone a pool names, padded to three from the region's ``a``, ``b`` and
``c`` zones (EKS needs two; three keep the control plane's and the system nodes' spread).
A pool with zones runs in those zones' private subnets; a pool without, and the system
pool, in every zone's.

The cluster runs the Kubernetes version the spec names (default 1.35), with the
``coredns``, ``kube-proxy``, ``vpc-cni``, ``eks-pod-identity-agent`` and
``aws-efs-csi-driver`` add-ons.

Node groups: the system group (``AL2023_x86_64_STANDARD``, labelled
``modelplane.ai/system=true``), and one per GPU pool (``AL2023_x86_64_NVIDIA``) labelled
``modelplane.ai/pool=<pool>`` and tainted ``nvidia.com/gpu=present:NoSchedule``. A pool
with a Capacity Block gets a launch template that targets the reservation (market type
``capacity-block``) and capacity type ``CAPACITY_BLOCK``; its disk size moves into the
launch template, since EKS refuses a node group's disk size alongside a launch template.

Autoscaling: a pool whose ``minNodeCount`` is below its ``maxNodeCount`` sets its desired
size only at creation (``initProvider``), so the cluster autoscaler owns it afterwards;
the cluster then also gets the cluster autoscaler: an IAM policy and role, an EKS Pod
Identity association for its service account, and, once the kubeconfig exists, its Helm
chart on the system nodes (auto-discovering the node groups, which EKS tags for it).

EFA: where a pool's fabric is ``EFA``, the cluster gets a security group for EFA traffic
with an ingress and an egress rule allowing all traffic to and from the group itself (what
AWS requires of EFA: its SRD traffic is not IP, so no narrower rule lets it through). Each
EFA pool's node group joins it through its launch template, beside the cluster security
group EKS would otherwise attach on its own (a launch template naming security groups
replaces EKS' default), so the template waits until EKS reports the cluster security
group and AWS the EFA group's id: until then that pool's node group is not composed and
the cluster is not Ready. A node group that already ran without the group is left as it
is (EKS cannot give an existing node group a launch template; it would be replaced).

RWX storage: an encrypted Elastic-throughput EFS file system with a mount target per
zone, an NFS security group open to the VPC, the EFS CSI driver add-on whose controller
and node service accounts get an IAM role through EKS Pod Identity, and, once the
kubeconfig and the file system's id are known, the StorageClass ``modelplane-rwx-efs`` on
the cluster through a provider-kubernetes Object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from modelplane.domain import api
from modelplane.domain.clouds.aws import (
    EC2,
    EFS,
    EKS,
    IAM,
    POD_IDENTITY,
    Manifests,
    assume_policy,
    mr,
    pod_identity,
)
from modelplane.domain.clouds.common import (
    CLUSTER_KEY,
    EFA,
    HELM,
    HELM_CONFIG_KEY,
    PROVIDER_CONFIG_KEY,
    STORAGE_CLASS_KEY,
    CloudCluster,
    GpuPool,
    autoscales,
    gpu_node_labels,
    gpu_taint,
    kubeconfig_secret,
    on_cluster,
    provider_configs,
    ref,
    resource_name,
    scaling,
    selector,
    system_node_labels,
)
from modelplane.domain.clouds.eks_autoscaler import (
    AUTOSCALER_CHART,
    autoscaler_identity,
    autoscaler_release,
)
from modelplane.domain.clouds.eks_network import VPC_CIDR, network, subnet_role, zones

# Read through this module by the EKSCluster adapter and its tests.
__all__ = ["AUTOSCALER_CHART", "VPC_CIDR", "zones"]

KUBERNETES = api.KUBERNETES_OBJECT

DEFAULT_VERSION = "1.35"
"""The default Kubernetes minor: DRA, which GPU claims need, is on by default from 1.34."""
STORAGE_CLASS = "modelplane-rwx-efs"
ADDONS = ("coredns", "kube-proxy", "vpc-cni", "eks-pod-identity-agent", "aws-efs-csi-driver")
SYSTEM_AMI = "AL2023_x86_64_STANDARD"
GPU_AMI = "AL2023_x86_64_NVIDIA"
POLICY = "arn:aws:iam::aws:policy/"
CLUSTER_POLICIES = {"eks-cluster": POLICY + "AmazonEKSClusterPolicy"}
NODE_POLICIES = {
    "eks-worker": POLICY + "AmazonEKSWorkerNodePolicy",
    "eks-cni": POLICY + "AmazonEKS_CNI_Policy",
    "ecr-read": POLICY + "AmazonEC2ContainerRegistryReadOnly",
}
EFS_CSI_POLICY = POLICY + "service-role/AmazonEFSCSIDriverPolicy"
EFS_CSI_ACCOUNTS = {"controller": "efs-csi-controller-sa", "node": "efs-csi-node-sa"}
"""The EFS CSI driver add-on's service accounts (kube-system), each given its role."""
NFS_PORT = 2049
# Composed keys the adapter reads back from observed state.
AUTH_KEY = "cluster-auth"
FILE_SYSTEM_KEY = "efs"
AUTOSCALER_KEY = "cluster-autoscaler"
# What :func:`workload_resources` composes: it waits for the kubeconfig (and EFS).
WORKLOAD_KEYS = (PROVIDER_CONFIG_KEY, HELM_CONFIG_KEY, STORAGE_CLASS_KEY, AUTOSCALER_KEY)

EFA_SECURITY_GROUP_KEY = "efa-security-group"
ALL_TRAFFIC = "-1"


@dataclass(frozen=True)
class EfaGroups:
    """What EFA pools' launch templates need from AWS, once it reports them.

    Attributes:
        cluster_security_group: The cluster security group EKS made (``vpcConfig``'s
            ``clusterSecurityGroupId``), or "" until reported.
        efa_security_group: The EFA security group's id, or "" until reported.
        running_without: EFA pools whose node group already runs without the group (made
            before it existed): left as they are rather than replaced.
    """

    cluster_security_group: str = ""
    efa_security_group: str = ""
    running_without: frozenset[str] = dataclass_field(default_factory=frozenset)

    @property
    def known(self) -> bool:
        """Tell whether both groups' ids are known."""
        return bool(self.cluster_security_group and self.efa_security_group)


def efa_pools(cluster: CloudCluster) -> list[GpuPool]:
    """Return the pools whose fabric is EFA."""
    return [pool for pool in cluster.pools if pool.fabric == EFA]


def waiting_efa_pools(cluster: CloudCluster, groups: EfaGroups) -> list[str]:
    """Return the EFA pools whose node group waits for the security groups' ids."""
    if groups.known:
        return []
    return [p.name for p in efa_pools(cluster) if p.name not in groups.running_without]


def resources(cluster: CloudCluster, efa: EfaGroups | None = None) -> Manifests:
    """Return every managed resource the cluster needs, by composed key.

    Args:
        cluster: The cluster.
        efa: The security groups EFA pools join, as far as AWS has reported them (None:
            nothing reported yet). An EFA pool's node group waits for both.

    Raises:
        ClusterError: The cluster cannot be laid out (see :func:`zones`).
    """
    out: Manifests = {}
    out.update(network(cluster, zones(cluster)))
    out.update(_roles(cluster))
    out.update(_control_plane(cluster, zones(cluster)))
    out.update(_node_groups(cluster, zones(cluster), efa or EfaGroups()))
    out.update(_file_system(cluster, zones(cluster)))
    if efa_pools(cluster):
        out.update(_efa_security_group(cluster))
    if any(autoscales(pool) for pool in cluster.pools):
        out.update(autoscaler_identity(cluster))
    return dict(sorted(out.items()))


def _roles(cluster: CloudCluster) -> Manifests:
    out: Manifests = {}
    for role, service, policies in (
        ("cluster-role", "eks.amazonaws.com", CLUSTER_POLICIES),
        ("node-role", "ec2.amazonaws.com", NODE_POLICIES),
        ("efs-csi-role", POD_IDENTITY, {"efs-csi": EFS_CSI_POLICY}),
    ):
        out[role] = mr(cluster, IAM, "Role", role, {"assumeRolePolicy": assume_policy(service)})
        for short, arn in policies.items():
            key = f"{role}-{short}"
            out[key] = mr(
                cluster,
                IAM,
                "RolePolicyAttachment",
                key,
                {
                    "policyArn": arn,
                    "roleSelector": selector(role),
                },
            )
    return out


def _control_plane(cluster: CloudCluster, names: list[str]) -> Manifests:
    subnets = [
        ref(resource_name(cluster.name, subnet_role(tier, zone)))
        for zone in names
        for tier in ("private", "public")
    ]
    eks_cluster = mr(
        cluster,
        EKS,
        "Cluster",
        CLUSTER_KEY,
        {
            # The creator (the provider's identity) administers the cluster: ClusterAuth's
            # kubeconfig authenticates as it.
            "accessConfig": {
                "authenticationMode": "API_AND_CONFIG_MAP",
                "bootstrapClusterCreatorAdminPermissions": True,
            },
            "roleArnSelector": selector("cluster-role"),
            "version": cluster.version,
            "vpcConfig": {
                "endpointPrivateAccess": True,
                "endpointPublicAccess": True,
                "subnetIdRefs": subnets,
            },
        },
    )
    eks_cluster["metadata"]["name"] = cluster.name  # the EKS cluster's name in AWS
    out: Manifests = {CLUSTER_KEY: eks_cluster}
    for addon in ADDONS:
        key = f"addon-{addon}"
        out[key] = mr(
            cluster,
            EKS,
            "Addon",
            key,
            {
                "addonName": addon,
                "clusterNameSelector": selector(CLUSTER_KEY),
            },
        )
    out["cluster-auth"] = cluster_auth(cluster)
    return out


def cluster_auth(cluster: CloudCluster) -> dict[str, Any]:
    """Return the ClusterAuth that writes (and refreshes) the cluster's kubeconfig Secret."""
    auth: dict[str, Any] = mr(
        cluster,
        EKS,
        "ClusterAuth",
        "cluster-auth",
        {
            "clusterNameSelector": selector(CLUSTER_KEY),
        },
    )
    auth["spec"]["writeConnectionSecretToRef"] = {"name": kubeconfig_secret(cluster.name)}
    return auth


def _efa_security_group(cluster: CloudCluster) -> Manifests:
    """Return the EFA security group and its two rules: all traffic within the group."""
    group = selector(EFA_SECURITY_GROUP_KEY)
    out: Manifests = {
        EFA_SECURITY_GROUP_KEY: mr(cluster, EC2, "SecurityGroup", EFA_SECURITY_GROUP_KEY, {
            "description": "EFA: all traffic among the cluster's EFA nodes",
            "name": resource_name(cluster.name, "efa"),
            "vpcIdSelector": selector("vpc"),
        }),
    }  # fmt: skip
    # Each kind spelled out: the activation policy's static scan reads the literal pairs.
    rules = {
        "ingress": mr(cluster, EC2, "SecurityGroupIngressRule", "efa-ingress-self", {}),
        "egress": mr(cluster, EC2, "SecurityGroupEgressRule", "efa-egress-self", {}),
    }
    for direction, rule in rules.items():
        rule["spec"]["forProvider"].update({
            "description": f"EFA: all {direction} traffic within the group",
            "ipProtocol": ALL_TRAFFIC,
            "referencedSecurityGroupIdSelector": group,
            "securityGroupIdSelector": group,
        })  # fmt: skip
        out[f"efa-{direction}-self"] = rule
    return out


def _node_groups(cluster: CloudCluster, names: list[str], efa: EfaGroups) -> Manifests:
    system = cluster.system
    out: Manifests = {
        "nodegroup-system": _node_group(
            cluster,
            "nodegroup-system",
            names,
            {
                "amiType": SYSTEM_AMI,
                "diskSize": system.disk_size_gb,
                "instanceTypes": [system.machine_type],
                "labels": system_node_labels(),
                "scalingConfig": {
                    "desiredSize": system.node_count,
                    "maxSize": system.node_count,
                    "minSize": system.node_count,
                },
            },
        ),
    }
    for pool in cluster.pools:
        if pool.name in waiting_efa_pools(cluster, efa):
            continue  # its launch template needs the security groups' ids first
        out.update(_gpu_node_group(cluster, pool, list(pool.zones) or names, efa))
    return out


def _node_group(
    cluster: CloudCluster,
    role: str,
    names: list[str],
    fields: Mapping[str, Any],
    init: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    subnets = [ref(resource_name(cluster.name, subnet_role("private", zone))) for zone in names]
    group = mr(
        cluster,
        EKS,
        "NodeGroup",
        role,
        {
            **fields,
            "clusterNameSelector": selector(CLUSTER_KEY),
            "nodeRoleArnSelector": selector("node-role"),
            "subnetIdRefs": subnets,
        },
    )
    if init:
        group["spec"]["initProvider"] = dict(init)
    return dict(group)


def _gpu_node_group(
    cluster: CloudCluster, pool: GpuPool, names: list[str], efa: EfaGroups
) -> Manifests:
    low, desired, high = scaling(pool)
    role = f"nodegroup-{pool.name}"
    # EKS needs a ceiling of at least one, even for a pool scaled to zero.
    sizes: dict[str, Any] = {"maxSize": max(high, 1), "minSize": low}
    init: dict[str, Any] = {}
    if autoscales(pool):
        # The autoscaler owns the size once the group exists: set it only at creation.
        init["scalingConfig"] = {"desiredSize": desired}
    else:
        sizes["desiredSize"] = desired
    fields: dict[str, Any] = {
        "amiType": GPU_AMI,
        "instanceTypes": [pool.machine_type],
        "labels": gpu_node_labels(pool),
        "scalingConfig": dict(sorted(sizes.items())),
        "taint": [gpu_taint("NO_SCHEDULE")],
    }
    out: Manifests = {}
    joins_efa = pool.fabric == EFA and pool.name not in efa.running_without
    groups = (efa.cluster_security_group, efa.efa_security_group) if joins_efa else ()
    if pool.capacity_reservation_id or groups:
        template = f"launch-template-{pool.name}"
        out[template] = launch_template(cluster, pool, template, groups)
        if pool.capacity_reservation_id:
            fields["capacityType"] = "CAPACITY_BLOCK"
        fields["launchTemplate"] = {
            "name": out[template]["spec"]["forProvider"]["name"],
            "version": "1",  # the template is written once and never versioned up
        }
    elif pool.disk_size_gb is not None:
        fields["diskSize"] = pool.disk_size_gb
    out[role] = _node_group(cluster, role, names, fields, init)
    return out


def launch_template(
    cluster: CloudCluster, pool: GpuPool, role: str, security_groups: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Return a pool's launch template: its Capacity Block, if any, and the security
    groups its nodes join (the cluster's and the EFA group, for an EFA pool)."""
    fields: dict[str, Any] = {"name": resource_name(cluster.name, role)}
    if pool.capacity_reservation_id:
        fields["capacityReservationSpecification"] = {
            "capacityReservationTarget": {"capacityReservationId": pool.capacity_reservation_id},
        }
        fields["instanceMarketOptions"] = {"marketType": "capacity-block"}
    if security_groups:
        fields["vpcSecurityGroupIds"] = list(security_groups)
    if pool.disk_size_gb is not None:
        fields["blockDeviceMappings"] = [
            {
                "deviceName": "/dev/xvda",
                "ebs": {"volumeSize": pool.disk_size_gb, "volumeType": "gp3"},
            }
        ]
    return dict(mr(cluster, EC2, "LaunchTemplate", role, fields))


def _file_system(cluster: CloudCluster, names: list[str]) -> Manifests:
    out: Manifests = {
        "efs": mr(
            cluster,
            EFS,
            "FileSystem",
            "efs",
            {
                "encrypted": True,
                "tags": {"Name": resource_name(cluster.name, "efs")},
                "throughputMode": "elastic",
            },
        ),
        "efs-security-group": mr(
            cluster,
            EC2,
            "SecurityGroup",
            "efs-security-group",
            {
                "description": "NFS from the cluster's VPC to its EFS mount targets",
                "name": resource_name(cluster.name, "efs"),
                "vpcIdSelector": selector("vpc"),
            },
        ),
        "efs-nfs-ingress": mr(
            cluster,
            EC2,
            "SecurityGroupIngressRule",
            "efs-nfs-ingress",
            {
                "cidrIpv4": VPC_CIDR,
                "fromPort": NFS_PORT,
                "ipProtocol": "tcp",
                "securityGroupIdSelector": selector("efs-security-group"),
                "toPort": NFS_PORT,
            },
        ),
    }
    for short, account in EFS_CSI_ACCOUNTS.items():
        key = f"efs-csi-{short}-pod-identity"
        out[key] = pod_identity(cluster, key, "kube-system", account, "efs-csi-role")
    for zone in names:
        key = f"efs-mount-target-{zone}"
        out[key] = mr(
            cluster,
            EFS,
            "MountTarget",
            key,
            {
                "fileSystemIdSelector": selector("efs"),
                "securityGroupsSelector": selector("efs-security-group"),
                "subnetIdRef": ref(resource_name(cluster.name, subnet_role("private", zone))),
            },
        )
    return out


def workload_resources(
    cluster: CloudCluster, kubeconfig: Mapping[str, str], file_system_id: str | None
) -> Manifests:
    """Return what goes on the cluster itself once its kubeconfig exists.

    Args:
        cluster: The cluster.
        kubeconfig: The kubeconfig Secret's ``{name, namespace, key}``.
        file_system_id: The EFS file system's id once AWS has created it, else None.

    Returns:
        A provider-kubernetes ProviderConfig for the cluster; once the file system
        exists, the Object holding the ``modelplane-rwx-efs`` StorageClass; and where a
        pool autoscales, a provider-helm ProviderConfig and the cluster autoscaler's
        Release.
    """
    scaled = any(autoscales(pool) for pool in cluster.pools)
    families = (KUBERNETES, HELM) if scaled else (KUBERNETES,)
    out: Manifests = provider_configs(cluster, kubeconfig, families=families)
    config = out[PROVIDER_CONFIG_KEY]["metadata"]["name"]
    if file_system_id:
        manifest = storage_class(file_system_id)
        out[STORAGE_CLASS_KEY] = on_cluster(cluster, "storage-class", manifest, config)
    if scaled:
        out[AUTOSCALER_KEY] = autoscaler_release(cluster, out[HELM_CONFIG_KEY]["metadata"]["name"])
    return out


def storage_class(file_system_id: str) -> dict[str, Any]:
    """Return the RWX StorageClass pinned to the EFS file system (one access point per PVC)."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": STORAGE_CLASS},
        "parameters": {
            "directoryPerms": "700",
            "fileSystemId": file_system_id,
            "provisioningMode": "efs-ap",
        },
        "provisioner": "efs.csi.aws.com",
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    }
