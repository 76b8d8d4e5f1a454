"""The EKS cluster's managed resources: network, roles, control plane, node groups, EFS."""

from __future__ import annotations

import ipaddress
import itertools
import json
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

import pytest
from modelplane.domain.clouds import common, eks

SYSTEM = common.SystemPool(machine_type="m6i.xlarge", node_count=1, disk_size_gb=100)
L4 = common.GpuPool(
    name="gpu-l4",
    machine_type="g6.xlarge",
    node_count=2,
    min_node_count=1,
    max_node_count=4,
    zones=("us-east-1b",),
    disk_size_gb=50,
    accelerator_type="nvidia-l4",
    accelerator_count=1,
)
H200 = common.GpuPool(
    name="gpu-h200",
    machine_type="p5en.48xlarge",
    node_count=2,
    min_node_count=2,
    max_node_count=2,
    zones=("us-east-1c",),
    disk_size_gb=500,
    capacity_reservation_id="cr-0123456789abcdef0",
)


def _cluster(*pools: common.GpuPool, name: str = "eks-us-east") -> common.CloudCluster:
    return common.CloudCluster(
        name=name,
        namespace="modelplane-system",
        region="us-east-1",
        version="1.35",
        provider_config=common.ProviderConfig("ProviderConfig", "aws"),
        system=SYSTEM,
        pools=pools or (L4,),
    )


def _for(manifest: dict[str, Any]) -> dict[str, Any]:
    return dict(manifest["spec"]["forProvider"])


def _subnet_names(refs: list[dict[str, str]]) -> list[str]:
    return [r["name"] for r in refs]


def test_every_kind_is_composed_once_per_zone_or_cluster() -> None:
    manifests = eks.resources(_cluster(L4, H200))
    kinds = Counter((m["apiVersion"].split("/")[0], m["kind"]) for m in manifests.values())
    zones = 3  # the pools name b and c: the region's a pads them to three
    assert kinds == {
        ("ec2.aws.m.upbound.io", "VPC"): 1,
        ("ec2.aws.m.upbound.io", "InternetGateway"): 1,
        ("ec2.aws.m.upbound.io", "EIP"): 1,
        ("ec2.aws.m.upbound.io", "NATGateway"): 1,
        ("ec2.aws.m.upbound.io", "RouteTable"): 2,
        ("ec2.aws.m.upbound.io", "Route"): 2,
        ("ec2.aws.m.upbound.io", "Subnet"): 2 * zones,
        ("ec2.aws.m.upbound.io", "RouteTableAssociation"): 2 * zones,
        ("ec2.aws.m.upbound.io", "SecurityGroup"): 1,
        ("ec2.aws.m.upbound.io", "SecurityGroupIngressRule"): 1,
        ("ec2.aws.m.upbound.io", "LaunchTemplate"): 1,
        # The cluster's, the nodes', the EFS CSI driver's, the cluster autoscaler's (L4
        # autoscales): four roles, their policies, and one Pod Identity association per
        # service account that assumes one.
        ("iam.aws.m.upbound.io", "Role"): 4,
        ("iam.aws.m.upbound.io", "RolePolicyAttachment"): 6,
        ("iam.aws.m.upbound.io", "Policy"): 1,
        ("eks.aws.m.upbound.io", "PodIdentityAssociation"): 3,
        ("eks.aws.m.upbound.io", "Cluster"): 1,
        ("eks.aws.m.upbound.io", "Addon"): 5,
        ("eks.aws.m.upbound.io", "NodeGroup"): 3,
        ("eks.aws.m.upbound.io", "ClusterAuth"): 1,
        ("efs.aws.m.upbound.io", "FileSystem"): 1,
        ("efs.aws.m.upbound.io", "MountTarget"): zones,
    }


def test_every_resource_uses_the_credentials_and_regional_ones_the_region() -> None:
    for key, manifest in eks.resources(_cluster()).items():
        assert manifest["spec"]["providerConfigRef"] == {"kind": "ProviderConfig", "name": "aws"}
        assert manifest["metadata"]["namespace"] == "modelplane-system", key
        regional = not manifest["apiVersion"].startswith("iam.")
        assert ("region" in _for(manifest)) is regional, key
        if regional:
            assert _for(manifest)["region"] == "us-east-1"


@dataclass(frozen=True)
class ZoneCase:
    reason: str
    zones: tuple[tuple[str, ...], ...]
    want: list[str]


A_B_C = ["us-east-1a", "us-east-1b", "us-east-1c"]
ZONE_CASES = [
    ZoneCase("one zone is padded with the region's a and c", (("us-east-1b",),), A_B_C),
    ZoneCase("no zones take the region's a, b and c", ((),), A_B_C),
    ZoneCase("a named a is not repeated", (("us-east-1a",),), A_B_C),
    ZoneCase(
        "pools' zones are merged and sorted, then padded",
        (("us-east-1d", "us-east-1c"), ("us-east-1c",)),
        ["us-east-1a", "us-east-1c", "us-east-1d"],
    ),
    ZoneCase(
        "three named zones need no padding",
        (("us-east-1d", "us-east-1e", "us-east-1f"),),
        ["us-east-1d", "us-east-1e", "us-east-1f"],
    ),
]


@pytest.mark.parametrize("case", ZONE_CASES, ids=[c.reason for c in ZONE_CASES])
def test_zones(case: ZoneCase) -> None:
    pools = [replace(L4, name=f"p{i}", zones=z) for i, z in enumerate(case.zones)]
    assert eks.zones(_cluster(*pools)) == case.want


def test_too_many_zones_is_a_clear_error() -> None:
    pool = replace(L4, zones=tuple(f"us-east-1{c}" for c in "abcdefghi"))
    with pytest.raises(common.ClusterError, match="9 zones"):
        eks.resources(_cluster(pool))


def test_each_zone_has_a_public_and_private_subnet_in_disjoint_ranges() -> None:
    manifests = eks.resources(_cluster(L4, H200))
    subnets = {k: _for(m) for k, m in manifests.items() if m["kind"] == "Subnet"}
    want = {
        f"subnet-{tier}-us-east-1{z}": f"us-east-1{z}"
        for tier in ("private", "public")
        for z in "abc"
    }
    assert {k: s["availabilityZone"] for k, s in subnets.items()} == want
    networks = [ipaddress.IPv4Network(s["cidrBlock"]) for s in subnets.values()]
    vpc = ipaddress.IPv4Network(eks.VPC_CIDR)
    assert all(n.subnet_of(vpc) for n in networks)
    assert not any(a.overlaps(b) for a, b in itertools.combinations(networks, 2))
    for key, subnet in subnets.items():
        assert subnet["mapPublicIpOnLaunch"] is ("public" in key)
        assert subnet["vpcIdSelector"] == common.selector("vpc")


def test_routes_send_public_subnets_to_the_gateway_and_private_ones_to_the_nat() -> None:
    manifests = eks.resources(_cluster())
    public, private = (
        _for(manifests["route-public-default"]),
        _for(manifests["route-private-default"]),
    )
    assert public["gatewayIdSelector"] == common.selector("internet-gateway")
    assert private["natGatewayIdSelector"] == common.selector("nat-gateway")
    association = _for(manifests["route-table-association-private-us-east-1b"])
    assert association["routeTableIdSelector"] == common.selector("route-table-private")
    assert association["subnetIdRef"] == {"name": "eks-us-east-subnet-private-us-east-1b"}


def test_selectors_find_a_sibling_carrying_that_role() -> None:
    manifests = eks.resources(_cluster(L4, H200))
    roles = {m["metadata"]["labels"][common.ROLE_LABEL] for m in manifests.values()}
    names = {m["metadata"]["name"] for m in manifests.values()}
    for key, manifest in manifests.items():
        for field, value in _for(manifest).items():
            if field.endswith("Selector"):
                assert value["matchControllerRef"] is True
                assert value["matchLabels"][common.ROLE_LABEL] in roles, (key, field)
            elif field.endswith("Ref"):
                assert value["name"] in names, (key, field)
            elif field.endswith("Refs"):
                assert set(_subnet_names(value)) <= names, (key, field)


def test_the_control_plane_spans_every_subnet_and_authorizes_its_creator() -> None:
    cluster = _for(eks.resources(_cluster())["cluster"])
    assert cluster["version"] == "1.35"
    assert cluster["roleArnSelector"] == common.selector("cluster-role")
    assert len(cluster["vpcConfig"]["subnetIdRefs"]) == 6  # three zones, two tiers
    assert cluster["accessConfig"]["bootstrapClusterCreatorAdminPermissions"] is True
    assert eks.resources(_cluster())["cluster"]["metadata"]["name"] == "eks-us-east"


def test_the_kubernetes_version_is_the_spec_s() -> None:
    cluster = replace(_cluster(), version="1.36")
    assert _for(eks.resources(cluster)["cluster"])["version"] == "1.36"


def test_addons_are_the_networking_dns_pod_identity_and_efs_ones() -> None:
    manifests = eks.resources(_cluster())
    addons = sorted(_for(m)["addonName"] for m in manifests.values() if m["kind"] == "Addon")
    assert addons == [
        "aws-efs-csi-driver",
        "coredns",
        "eks-pod-identity-agent",
        "kube-proxy",
        "vpc-cni",
    ]


@dataclass(frozen=True)
class GroupCase:
    reason: str
    pool: common.GpuPool
    want_scaling: dict[str, int]
    want_zones: list[str]
    want_init: dict[str, Any] | None = None


GROUP_CASES = [
    GroupCase(
        "an autoscaled pool sets its desired size only at creation",
        L4,
        {"minSize": 1, "maxSize": 4},
        ["us-east-1b"],
        {"scalingConfig": {"desiredSize": 2}},
    ),
    GroupCase(
        "a fixed pool",
        replace(L4, node_count=3, min_node_count=3, max_node_count=3),
        {"minSize": 3, "desiredSize": 3, "maxSize": 3},
        ["us-east-1b"],
    ),
    GroupCase(
        "a pool scaled to zero keeps a ceiling of one",
        replace(L4, node_count=0, min_node_count=0, max_node_count=0, zones=()),
        {"minSize": 0, "desiredSize": 0, "maxSize": 1},
        A_B_C,
    ),
]


@pytest.mark.parametrize("case", GROUP_CASES, ids=[c.reason for c in GROUP_CASES])
def test_gpu_node_groups_are_labelled_tainted_and_scaled_from_the_pool(case: GroupCase) -> None:
    manifest = eks.resources(_cluster(case.pool))[f"nodegroup-{case.pool.name}"]
    group = _for(manifest)
    assert group["scalingConfig"] == case.want_scaling
    assert manifest["spec"].get("initProvider") == case.want_init
    assert group["labels"] == {"modelplane.ai/pool": case.pool.name}
    assert group["taint"] == [
        {"effect": "NO_SCHEDULE", "key": "nvidia.com/gpu", "value": "present"}
    ]
    assert group["instanceTypes"] == [case.pool.machine_type]
    assert group["diskSize"] == case.pool.disk_size_gb
    assert group["amiType"] == eks.GPU_AMI
    want = [f"eks-us-east-subnet-private-{z}" for z in case.want_zones]
    assert _subnet_names(group["subnetIdRefs"]) == want
    assert "capacityType" not in group


def test_the_system_group_is_untainted_and_unlabelled_by_pool() -> None:
    group = _for(eks.resources(_cluster())["nodegroup-system"])
    assert "taint" not in group
    assert "modelplane.ai/pool" not in group["labels"]
    assert group["instanceTypes"] == ["m6i.xlarge"]
    assert group["scalingConfig"] == {"desiredSize": 1, "maxSize": 1, "minSize": 1}


def test_a_capacity_block_pool_launches_into_its_reservation() -> None:
    manifests = eks.resources(_cluster(H200))
    group = _for(manifests["nodegroup-gpu-h200"])
    template = manifests["launch-template-gpu-h200"]
    assert group["capacityType"] == "CAPACITY_BLOCK"
    assert group["launchTemplate"]["name"] == template["metadata"]["name"]
    assert "diskSize" not in group  # EKS refuses it next to a launch template
    lt = _for(template)
    assert lt["capacityReservationSpecification"]["capacityReservationTarget"] == {
        "capacityReservationId": "cr-0123456789abcdef0"
    }
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert lt["blockDeviceMappings"][0]["ebs"]["volumeSize"] == 500


def test_the_efs_csi_driver_gets_its_role_through_pod_identity() -> None:
    manifests = eks.resources(_cluster())
    node = {_for(m)["policyArn"] for k, m in manifests.items() if k.startswith("node-role-")}
    assert eks.EFS_CSI_POLICY not in node  # not every pod on a node
    assert _for(manifests["efs-csi-role-efs-csi"])["policyArn"] == eks.EFS_CSI_POLICY
    trust = json.loads(_for(manifests["efs-csi-role"])["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert trust["Statement"][0]["Action"] == ["sts:AssumeRole", "sts:TagSession"]
    accounts = {
        (_for(m)["namespace"], _for(m)["serviceAccount"]): _for(m)["roleArnSelector"]
        for k, m in manifests.items()
        if k.startswith("efs-csi-") and m["kind"] == "PodIdentityAssociation"
    }
    assert accounts == {
        ("kube-system", "efs-csi-controller-sa"): common.selector("efs-csi-role"),
        ("kube-system", "efs-csi-node-sa"): common.selector("efs-csi-role"),
    }


def test_the_cluster_auth_writes_the_kubeconfig() -> None:
    manifests = eks.resources(_cluster())
    auth = manifests["cluster-auth"]
    assert auth["spec"]["writeConnectionSecretToRef"] == {"name": "eks-us-east-kubeconfig"}
    assert _for(auth)["clusterNameSelector"] == common.selector("cluster")


def test_efs_mounts_in_every_private_subnet_behind_an_nfs_group() -> None:
    manifests = eks.resources(_cluster())
    targets = [_for(m) for m in manifests.values() if m["kind"] == "MountTarget"]
    assert [t["subnetIdRef"]["name"] for t in targets] == [
        f"eks-us-east-subnet-private-{zone}" for zone in A_B_C
    ]
    ingress = _for(manifests["efs-nfs-ingress"])
    assert (ingress["fromPort"], ingress["toPort"], ingress["cidrIpv4"]) == (
        2049,
        2049,
        eks.VPC_CIDR,
    )
    assert _for(manifests["efs"])["throughputMode"] == "elastic"


def test_names_are_valid_and_stable_for_long_names() -> None:
    name = "x" * 60
    pool = replace(H200, name="p" * 40, zones=("z" * 64,))
    first = eks.resources(_cluster(L4, pool, name=name))
    assert first == eks.resources(_cluster(L4, pool, name=name))
    names = [m["metadata"]["name"] for m in first.values()]
    assert max(map(len, names)) <= 63
    labels = [m["metadata"]["labels"][common.ROLE_LABEL] for m in first.values()]
    assert max(map(len, labels)) <= 63
    assert len(set(names)) == len(names)


FIXED = replace(L4, min_node_count=2, max_node_count=2)


def test_workload_resources_wait_for_the_file_system_id() -> None:
    kubeconfig = common.kubeconfig_ref("eks-us-east-kubeconfig", "modelplane-system")
    without = eks.workload_resources(_cluster(FIXED), kubeconfig, None)
    assert sorted(without) == ["kubernetes-provider-config"]
    assert without["kubernetes-provider-config"]["spec"]["credentials"]["secretRef"] == kubeconfig
    with_fs = eks.workload_resources(_cluster(FIXED), kubeconfig, "fs-123")
    manifest = with_fs["storage-class"]["spec"]["forProvider"]["manifest"]
    assert manifest["metadata"]["name"] == "modelplane-rwx-efs"
    assert manifest["parameters"]["fileSystemId"] == "fs-123"
    assert with_fs["storage-class"]["spec"]["providerConfigRef"] == {
        "kind": "ProviderConfig",
        "name": without["kubernetes-provider-config"]["metadata"]["name"],
    }


def test_no_pool_autoscales_no_cluster_autoscaler() -> None:
    manifests = eks.resources(_cluster(FIXED, H200))
    assert not [k for k in manifests if k.startswith("cluster-autoscaler")]
    kubeconfig = common.kubeconfig_ref("eks-us-east-kubeconfig", "modelplane-system")
    assert "cluster-autoscaler" not in eks.workload_resources(_cluster(FIXED), kubeconfig, "fs")


def test_an_autoscaled_pool_brings_the_cluster_autoscaler_with_its_own_role() -> None:
    manifests = eks.resources(_cluster(L4))
    policy = json.loads(_for(manifests["cluster-autoscaler-policy"])["policy"])
    read, resize = policy["Statement"]
    assert "eks:DescribeNodegroup" in read["Action"]  # scale from zero learns labels, taints
    assert resize["Action"] == [
        "autoscaling:SetDesiredCapacity",
        "autoscaling:TerminateInstanceInAutoScalingGroup",
    ]
    owned = {"aws:ResourceTag/k8s.io/cluster-autoscaler/eks-us-east": "owned"}
    assert resize["Condition"] == {"StringEquals": owned}  # only this cluster's groups
    attachment = _for(manifests["cluster-autoscaler-role-policy"])
    assert attachment["policyArnSelector"] == common.selector("cluster-autoscaler-policy")
    association = _for(manifests["cluster-autoscaler-pod-identity"])
    assert (association["namespace"], association["serviceAccount"]) == (
        "kube-system",
        "cluster-autoscaler",
    )
    kubeconfig = common.kubeconfig_ref("eks-us-east-kubeconfig", "modelplane-system")
    workload = eks.workload_resources(_cluster(L4), kubeconfig, None)
    assert sorted(workload) == [
        "cluster-autoscaler",
        "helm-provider-config",
        "kubernetes-provider-config",
    ]
    release = workload["cluster-autoscaler"]["spec"]
    assert release["providerConfigRef"] == {"kind": "ProviderConfig", "name": "eks-us-east-helm"}
    values = release["forProvider"]["values"]
    assert values["autoDiscovery"] == {"clusterName": "eks-us-east"}
    assert values["awsRegion"] == "us-east-1"
    assert values["rbac"]["serviceAccount"]["name"] == association["serviceAccount"]
    assert values["nodeSelector"] == {"modelplane.ai/system": "true"}
    assert release["forProvider"]["chart"]["version"] == eks.AUTOSCALER_CHART.version == "9.57.0"


EFA_POOL = replace(H200, name="gpu-efa", capacity_reservation_id=None, fabric=common.EFA)
GROUPS = eks.EfaGroups("sg-cluster", "sg-efa")


def test_an_efa_pool_brings_a_group_open_to_itself_in_both_directions() -> None:
    manifests = eks.resources(_cluster(L4, EFA_POOL), GROUPS)
    group = manifests["efa-security-group"]
    assert (group["kind"], _for(group)["vpcIdSelector"]) == (
        "SecurityGroup",
        common.selector("vpc"),
    )
    rules = {k: manifests[k] for k in ("efa-ingress-self", "efa-egress-self")}
    kinds = {m["kind"] for m in rules.values()}
    assert kinds == {"SecurityGroupIngressRule", "SecurityGroupEgressRule"}
    for rule in rules.values():
        fields = _for(rule)
        # All traffic (EFA's SRD is not TCP/UDP), only from and to the group itself.
        assert fields["ipProtocol"] == "-1"
        assert "cidrIpv4" not in fields
        assert "fromPort" not in fields
        own = common.selector("efa-security-group")
        assert (
            fields["securityGroupIdSelector"] == fields["referencedSecurityGroupIdSelector"] == own
        )


def test_no_efa_pool_no_efa_group() -> None:
    assert not {k for k in eks.resources(_cluster(L4, H200)) if k.startswith("efa-")}


def test_an_efa_pool_joins_the_group_and_keeps_the_cluster_s_own() -> None:
    manifests = eks.resources(_cluster(L4, EFA_POOL), GROUPS)
    group = _for(manifests["nodegroup-gpu-efa"])
    template = manifests["launch-template-gpu-efa"]
    assert group["launchTemplate"]["name"] == template["metadata"]["name"]
    assert "capacityType" not in group
    assert "diskSize" not in group
    lt = _for(template)
    # A launch template naming groups replaces EKS' default: the cluster's group stays.
    assert lt["vpcSecurityGroupIds"] == ["sg-cluster", "sg-efa"]
    assert "instanceMarketOptions" not in lt
    assert lt["blockDeviceMappings"][0]["ebs"]["volumeSize"] == 500
    assert "launch-template-gpu-l4" not in manifests, "a pool without EFA keeps EKS' default"


def test_an_efa_capacity_block_pool_has_one_template_for_both() -> None:
    pool = replace(H200, fabric=common.EFA)
    lt = _for(eks.resources(_cluster(pool), GROUPS)["launch-template-gpu-h200"])
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert lt["vpcSecurityGroupIds"] == ["sg-cluster", "sg-efa"]


@pytest.mark.parametrize(
    "groups",
    [
        pytest.param(None, id="nothing-reported"),
        pytest.param(eks.EfaGroups("sg-cluster", ""), id="no-efa-group-id"),
        pytest.param(eks.EfaGroups("", "sg-efa"), id="no-cluster-group"),
    ],
)
def test_an_efa_pool_waits_for_both_groups(groups: eks.EfaGroups | None) -> None:
    manifests = eks.resources(_cluster(L4, EFA_POOL), groups)
    assert "efa-security-group" in manifests, "the group itself does not wait"
    assert "nodegroup-gpu-efa" not in manifests
    assert "launch-template-gpu-efa" not in manifests
    assert "nodegroup-gpu-l4" in manifests, "other pools do not wait"
    assert eks.waiting_efa_pools(_cluster(L4, EFA_POOL), groups or eks.EfaGroups()) == ["gpu-efa"]


def test_a_node_group_that_ran_without_the_group_is_left_as_it_is() -> None:
    groups = eks.EfaGroups("", "", running_without=frozenset({"gpu-efa"}))
    manifests = eks.resources(_cluster(EFA_POOL), groups)
    assert "launchTemplate" not in _for(manifests["nodegroup-gpu-efa"])
    assert _for(manifests["nodegroup-gpu-efa"])["diskSize"] == 500
    assert "launch-template-gpu-efa" not in manifests
