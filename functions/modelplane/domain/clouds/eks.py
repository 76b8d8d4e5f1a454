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

import json
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from modelplane.domain import api, stack
from modelplane.domain.clouds.common import (
    EFA,
    GPU_TAINT,
    GPU_TAINT_VALUE,
    HELM,
    POOL_LABEL,
    SYSTEM_LABEL,
    CloudCluster,
    ClusterError,
    GpuPool,
    autoscales,
    managed,
    on_cluster,
    pool_zones,
    provider_configs,
    ref,
    resource_name,
    scaling,
    selector,
)

EC2 = "ec2.aws.m.upbound.io/v1beta1"
IAM = "iam.aws.m.upbound.io/v1beta1"
EKS = "eks.aws.m.upbound.io/v1beta1"
EFS = "efs.aws.m.upbound.io/v1beta1"
KUBERNETES = api.KUBERNETES_OBJECT

DEFAULT_VERSION = "1.35"
"""The default Kubernetes minor: DRA, which GPU claims need, is on by default from 1.34."""
STORAGE_CLASS = "modelplane-rwx-efs"
VPC_CIDR = "10.0.0.0/16"
MAX_ZONES = 8  # private /20s fill 10.0.0.0/17, public /24s sit in 10.0.128.0/17
ZONES = 3
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
POD_IDENTITY = "pods.eks.amazonaws.com"
NFS_PORT = 2049
AUTOSCALER_ACCOUNT = "cluster-autoscaler"
AUTOSCALER_NAMESPACE = "kube-system"
AUTOSCALER_CHART = stack.CHARTS[stack.CLUSTER_AUTOSCALER]
"""The cluster autoscaler's Helm chart, pinned in the one chart table."""
# Composed keys the adapter reads back from observed state.
CLUSTER_KEY = "cluster"
AUTH_KEY = "cluster-auth"
FILE_SYSTEM_KEY = "efs"
STORAGE_CLASS_KEY = "storage-class"
PROVIDER_CONFIG_KEY = "kubernetes-provider-config"
HELM_CONFIG_KEY = "helm-provider-config"
AUTOSCALER_KEY = "cluster-autoscaler"
# What :func:`workload_resources` composes: it waits for the kubeconfig (and EFS).
WORKLOAD_KEYS = (PROVIDER_CONFIG_KEY, HELM_CONFIG_KEY, STORAGE_CLASS_KEY, AUTOSCALER_KEY)

EFA_SECURITY_GROUP_KEY = "efa-security-group"
ALL_TRAFFIC = "-1"

Manifests = dict[str, dict[str, Any]]


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


def zones(cluster: CloudCluster) -> list[str]:
    """Return the cluster's zones: every pool's, padded to three from the region's a, b, c.

    Raises:
        ClusterError: The pools name more zones than the VPC has subnets for.
    """
    found = pool_zones(cluster)
    for letter in "abc":
        if len(found) >= ZONES:
            break
        candidate = f"{cluster.region}{letter}"
        if candidate not in found:
            found.append(candidate)
    if len(found) > MAX_ZONES:
        msg = f"the pools name {len(found)} zones; an EKSCluster spans at most {MAX_ZONES}"
        raise ClusterError(msg)
    return sorted(found)


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
    out.update(_network(cluster, zones(cluster)))
    out.update(_roles(cluster))
    out.update(_control_plane(cluster, zones(cluster)))
    out.update(_node_groups(cluster, zones(cluster), efa or EfaGroups()))
    out.update(_file_system(cluster, zones(cluster)))
    if efa_pools(cluster):
        out.update(_efa_security_group(cluster))
    if any(autoscales(pool) for pool in cluster.pools):
        out.update(_autoscaler_identity(cluster))
    return dict(sorted(out.items()))


def subnet_role(tier: str, zone: str) -> str:
    """Return the role (and key) of a zone's public or private subnet."""
    return f"subnet-{tier}-{zone}"


def _mr(cluster: CloudCluster, api: str, kind: str, role: str, fields: Mapping[str, Any]) -> Any:
    regional = {**fields, "region": cluster.region} if api != IAM else dict(fields)
    return managed(cluster, api, kind, role, regional)


def _network(cluster: CloudCluster, names: list[str]) -> Manifests:
    vpc = selector("vpc")
    out: Manifests = {
        "vpc": _mr(
            cluster,
            EC2,
            "VPC",
            "vpc",
            {
                "cidrBlock": VPC_CIDR,
                "enableDnsHostnames": True,
                "enableDnsSupport": True,
                "tags": {"Name": cluster.name},
            },
        ),
        "internet-gateway": _mr(
            cluster,
            EC2,
            "InternetGateway",
            "internet-gateway",
            {
                "vpcIdSelector": vpc,
            },
        ),
        "nat-ip": _mr(cluster, EC2, "EIP", "nat-ip", {"domain": "vpc"}),
        "nat-gateway": _mr(
            cluster,
            EC2,
            "NATGateway",
            "nat-gateway",
            {
                "allocationIdSelector": selector("nat-ip"),
                "subnetIdRef": ref(resource_name(cluster.name, subnet_role("public", names[0]))),
            },
        ),
    }
    targets = {
        "public": ("gatewayIdSelector", "internet-gateway"),
        "private": ("natGatewayIdSelector", "nat-gateway"),
    }
    for tier, (field, target) in targets.items():
        table = f"route-table-{tier}"
        out[table] = _mr(cluster, EC2, "RouteTable", table, {"vpcIdSelector": vpc})
        out[f"route-{tier}-default"] = _mr(
            cluster,
            EC2,
            "Route",
            f"route-{tier}-default",
            {
                "routeTableIdSelector": selector(table),
                "destinationCidrBlock": "0.0.0.0/0",
                field: selector(target),
            },
        )
    for index, zone in enumerate(names):
        out.update(_zone_subnets(cluster, index, zone))
    return out


def _zone_subnets(cluster: CloudCluster, index: int, zone: str) -> Manifests:
    cidrs = {"public": f"10.0.{128 + index}.0/24", "private": f"10.0.{16 * index}.0/20"}
    # The tags tell the AWS load balancer integrations which subnets to use.
    elb_tags = {"public": "kubernetes.io/role/elb", "private": "kubernetes.io/role/internal-elb"}
    out: Manifests = {}
    for tier, cidr in cidrs.items():
        role = subnet_role(tier, zone)
        out[role] = _mr(
            cluster,
            EC2,
            "Subnet",
            role,
            {
                "availabilityZone": zone,
                "cidrBlock": cidr,
                "mapPublicIpOnLaunch": tier == "public",
                "tags": {elb_tags[tier]: "1", "Name": resource_name(cluster.name, role)},
                "vpcIdSelector": selector("vpc"),
            },
        )
        association = f"route-table-association-{tier}-{zone}"
        out[association] = _mr(
            cluster,
            EC2,
            "RouteTableAssociation",
            association,
            {
                "routeTableIdSelector": selector(f"route-table-{tier}"),
                "subnetIdRef": ref(resource_name(cluster.name, role)),
            },
        )
    return out


def _assume_policy(service: str) -> str:
    # EKS Pod Identity also tags the role session with the pod's identity.
    action: str | list[str] = (
        ["sts:AssumeRole", "sts:TagSession"] if service == POD_IDENTITY else "sts:AssumeRole"
    )
    statement = {"Effect": "Allow", "Principal": {"Service": service}, "Action": action}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]}, sort_keys=True)


def _roles(cluster: CloudCluster) -> Manifests:
    out: Manifests = {}
    for role, service, policies in (
        ("cluster-role", "eks.amazonaws.com", CLUSTER_POLICIES),
        ("node-role", "ec2.amazonaws.com", NODE_POLICIES),
        ("efs-csi-role", POD_IDENTITY, {"efs-csi": EFS_CSI_POLICY}),
    ):
        out[role] = _mr(cluster, IAM, "Role", role, {"assumeRolePolicy": _assume_policy(service)})
        for short, arn in policies.items():
            key = f"{role}-{short}"
            out[key] = _mr(
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
    eks_cluster = _mr(
        cluster,
        EKS,
        "Cluster",
        "cluster",
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
    out: Manifests = {"cluster": eks_cluster}
    for addon in ADDONS:
        key = f"addon-{addon}"
        out[key] = _mr(
            cluster,
            EKS,
            "Addon",
            key,
            {
                "addonName": addon,
                "clusterNameSelector": selector("cluster"),
            },
        )
    out["cluster-auth"] = cluster_auth(cluster)
    return out


def kubeconfig_secret(cluster: CloudCluster) -> str:
    """Return the name of the Secret ClusterAuth writes the kubeconfig to."""
    return resource_name(cluster.name, "kubeconfig")


def cluster_auth(cluster: CloudCluster) -> dict[str, Any]:
    """Return the ClusterAuth that writes (and refreshes) the cluster's kubeconfig Secret."""
    auth: dict[str, Any] = _mr(
        cluster,
        EKS,
        "ClusterAuth",
        "cluster-auth",
        {
            "clusterNameSelector": selector("cluster"),
        },
    )
    auth["spec"]["writeConnectionSecretToRef"] = {"name": kubeconfig_secret(cluster)}
    return auth


def _efa_security_group(cluster: CloudCluster) -> Manifests:
    """Return the EFA security group and its two rules: all traffic within the group."""
    group = selector(EFA_SECURITY_GROUP_KEY)
    out: Manifests = {
        EFA_SECURITY_GROUP_KEY: _mr(cluster, EC2, "SecurityGroup", EFA_SECURITY_GROUP_KEY, {
            "description": "EFA: all traffic among the cluster's EFA nodes",
            "name": resource_name(cluster.name, "efa"),
            "vpcIdSelector": selector("vpc"),
        }),
    }  # fmt: skip
    # Each kind spelled out: the activation policy's static scan reads the literal pairs.
    rules = {
        "ingress": _mr(cluster, EC2, "SecurityGroupIngressRule", "efa-ingress-self", {}),
        "egress": _mr(cluster, EC2, "SecurityGroupEgressRule", "efa-egress-self", {}),
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
                "labels": {SYSTEM_LABEL: "true"},
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
    group = _mr(
        cluster,
        EKS,
        "NodeGroup",
        role,
        {
            **fields,
            "clusterNameSelector": selector("cluster"),
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
        "labels": {POOL_LABEL: pool.name},
        "scalingConfig": dict(sorted(sizes.items())),
        "taint": [{"effect": "NO_SCHEDULE", "key": GPU_TAINT, "value": GPU_TAINT_VALUE}],
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
    return dict(_mr(cluster, EC2, "LaunchTemplate", role, fields))


def _file_system(cluster: CloudCluster, names: list[str]) -> Manifests:
    out: Manifests = {
        "efs": _mr(
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
        "efs-security-group": _mr(
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
        "efs-nfs-ingress": _mr(
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
        out[key] = _pod_identity(cluster, key, "kube-system", account, "efs-csi-role")
    for zone in names:
        key = f"efs-mount-target-{zone}"
        out[key] = _mr(
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


def _pod_identity(
    cluster: CloudCluster, role: str, namespace: str, account: str, iam_role: str
) -> dict[str, Any]:
    """Return the EKS Pod Identity association giving ``namespace/account`` the IAM role."""
    return dict(
        _mr(
            cluster,
            EKS,
            "PodIdentityAssociation",
            role,
            {
                "clusterNameSelector": selector("cluster"),
                "namespace": namespace,
                "roleArnSelector": selector(iam_role),
                "serviceAccount": account,
            },
        )
    )


def autoscaler_policy(cluster: CloudCluster) -> str:
    """Return the cluster autoscaler's IAM policy: read every group, resize only this
    cluster's (EKS tags its node groups' Auto Scaling groups as owned by the cluster)."""
    read = {
        "Action": [
            "autoscaling:DescribeAutoScalingGroups",
            "autoscaling:DescribeAutoScalingInstances",
            "autoscaling:DescribeLaunchConfigurations",
            "autoscaling:DescribeScalingActivities",
            "autoscaling:DescribeTags",
            "ec2:DescribeImages",
            "ec2:DescribeInstanceTypes",
            "ec2:DescribeLaunchTemplateVersions",
            "ec2:GetInstanceTypesFromInstanceRequirements",
            "eks:DescribeNodegroup",
        ],
        "Effect": "Allow",
        "Resource": ["*"],
    }
    resize = {
        "Action": [
            "autoscaling:SetDesiredCapacity",
            "autoscaling:TerminateInstanceInAutoScalingGroup",
        ],
        "Condition": {
            "StringEquals": {f"aws:ResourceTag/k8s.io/cluster-autoscaler/{cluster.name}": "owned"}
        },
        "Effect": "Allow",
        "Resource": ["*"],
    }
    return json.dumps({"Statement": [read, resize], "Version": "2012-10-17"}, sort_keys=True)


def _autoscaler_identity(cluster: CloudCluster) -> Manifests:
    """Return the cluster autoscaler's IAM policy and role and its Pod Identity association."""
    return {
        "cluster-autoscaler-policy": _mr(
            cluster,
            IAM,
            "Policy",
            "cluster-autoscaler-policy",
            {
                "description": f"The cluster autoscaler of EKS cluster {cluster.name}",
                "policy": autoscaler_policy(cluster),
            },
        ),
        "cluster-autoscaler-role": _mr(
            cluster,
            IAM,
            "Role",
            "cluster-autoscaler-role",
            {"assumeRolePolicy": _assume_policy(POD_IDENTITY)},
        ),
        "cluster-autoscaler-role-policy": _mr(
            cluster,
            IAM,
            "RolePolicyAttachment",
            "cluster-autoscaler-role-policy",
            {
                "policyArnSelector": selector("cluster-autoscaler-policy"),
                "roleSelector": selector("cluster-autoscaler-role"),
            },
        ),
        "cluster-autoscaler-pod-identity": _pod_identity(
            cluster,
            "cluster-autoscaler-pod-identity",
            AUTOSCALER_NAMESPACE,
            AUTOSCALER_ACCOUNT,
            "cluster-autoscaler-role",
        ),
    }


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


def autoscaler_release(cluster: CloudCluster, helm_config: str) -> dict[str, Any]:
    """Return the cluster autoscaler's Helm Release: it discovers the cluster's node groups,
    runs on the system nodes as the service account Pod Identity maps to its role."""
    values = {
        "autoDiscovery": {"clusterName": cluster.name},
        "awsRegion": cluster.region,
        "cloudProvider": "aws",
        "extraArgs": {
            "balance-similar-node-groups": True,
            "expander": "least-waste",
            "skip-nodes-with-system-pods": False,
        },
        "fullnameOverride": AUTOSCALER_ACCOUNT,
        "nodeSelector": {SYSTEM_LABEL: "true"},
        "rbac": {"serviceAccount": {"create": True, "name": AUTOSCALER_ACCOUNT}},
    }
    return {
        "apiVersion": HELM,
        "kind": "Release",
        "metadata": {
            "annotations": {"crossplane.io/external-name": AUTOSCALER_ACCOUNT},
            "name": resource_name(cluster.name, "cluster-autoscaler"),
            "namespace": cluster.namespace,
        },
        "spec": {
            "forProvider": {
                "chart": {
                    "name": AUTOSCALER_CHART.name,
                    "repository": AUTOSCALER_CHART.repository,
                    "version": AUTOSCALER_CHART.version,
                },
                "namespace": AUTOSCALER_CHART.namespace,
                "values": values,
            },
            "providerConfigRef": {"kind": "ProviderConfig", "name": helm_config},
        },
    }


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
