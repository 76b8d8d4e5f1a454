"""The AWS provider family's managed resources, as an EKSCluster composes them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from modelplane.domain.clouds.common import CLUSTER_KEY, CloudCluster, managed, selector

EC2 = "ec2.aws.m.upbound.io/v1beta1"
IAM = "iam.aws.m.upbound.io/v1beta1"
EKS = "eks.aws.m.upbound.io/v1beta1"
EFS = "efs.aws.m.upbound.io/v1beta1"
POD_IDENTITY = "pods.eks.amazonaws.com"

Manifests = dict[str, dict[str, Any]]


def mr(cluster: CloudCluster, api: str, kind: str, role: str, fields: Mapping[str, Any]) -> Any:
    """Return a managed resource of the cluster, in its region (IAM is global)."""
    regional = {**fields, "region": cluster.region} if api != IAM else dict(fields)
    return managed(cluster, api, kind, role, regional)


def assume_policy(service: str) -> str:
    """Return the IAM trust policy letting ``service`` assume a role."""
    # EKS Pod Identity also tags the role session with the pod's identity.
    action: str | list[str] = (
        ["sts:AssumeRole", "sts:TagSession"] if service == POD_IDENTITY else "sts:AssumeRole"
    )
    statement = {"Effect": "Allow", "Principal": {"Service": service}, "Action": action}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]}, sort_keys=True)


def pod_identity(
    cluster: CloudCluster, role: str, namespace: str, account: str, iam_role: str
) -> dict[str, Any]:
    """Return the EKS Pod Identity association giving ``namespace/account`` the IAM role."""
    return dict(
        mr(
            cluster,
            EKS,
            "PodIdentityAssociation",
            role,
            {
                "clusterNameSelector": selector(CLUSTER_KEY),
                "namespace": namespace,
                "roleArnSelector": selector(iam_role),
                "serviceAccount": account,
            },
        )
    )
