"""An EKS cluster's network: one VPC, a public and a private subnet per zone, one NAT gateway.

Zones are every zone a pool names, padded to three from the region's ``a``, ``b`` and
``c`` zones; public /24s sit in 10.0.128.0/17, private /20s fill 10.0.0.0/17.
"""

from __future__ import annotations

from modelplane.domain.clouds.aws import EC2, Manifests, mr
from modelplane.domain.clouds.common import (
    CloudCluster,
    ClusterError,
    pool_zones,
    ref,
    resource_name,
    selector,
)

VPC_CIDR = "10.0.0.0/16"
MAX_ZONES = 8  # private /20s fill 10.0.0.0/17, public /24s sit in 10.0.128.0/17
ZONES = 3


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


def subnet_role(tier: str, zone: str) -> str:
    """Return the role (and key) of a zone's public or private subnet."""
    return f"subnet-{tier}-{zone}"


def network(cluster: CloudCluster, names: list[str]) -> Manifests:
    """Return the VPC, its gateways and route tables, and every zone's subnets."""
    vpc = selector("vpc")
    out: Manifests = {
        "vpc": mr(
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
        "internet-gateway": mr(
            cluster,
            EC2,
            "InternetGateway",
            "internet-gateway",
            {
                "vpcIdSelector": vpc,
            },
        ),
        "nat-ip": mr(cluster, EC2, "EIP", "nat-ip", {"domain": "vpc"}),
        "nat-gateway": mr(
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
        out[table] = mr(cluster, EC2, "RouteTable", table, {"vpcIdSelector": vpc})
        out[f"route-{tier}-default"] = mr(
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
        out[role] = mr(
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
        out[association] = mr(
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
