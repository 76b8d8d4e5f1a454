"""The EKS cluster autoscaler: its IAM identity (on the cluster) and its Helm Release.

Where a pool autoscales, the cluster gets an IAM policy and role for the autoscaler, an
EKS Pod Identity association for its service account, and, once the kubeconfig exists,
its Helm chart on the system nodes (auto-discovering the node groups, which EKS tags).
"""

from __future__ import annotations

import json
from typing import Any

from modelplane.domain import stack
from modelplane.domain.clouds import aws
from modelplane.domain.clouds.common import (
    HELM,
    CloudCluster,
    resource_name,
    selector,
    system_node_labels,
)

AUTOSCALER_ACCOUNT = "cluster-autoscaler"
AUTOSCALER_NAMESPACE = "kube-system"
AUTOSCALER_CHART = stack.CHARTS[stack.CLUSTER_AUTOSCALER]
"""The cluster autoscaler's Helm chart, pinned in the one chart table."""


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


def autoscaler_identity(cluster: CloudCluster) -> aws.Manifests:
    """Return the cluster autoscaler's IAM policy and role and its Pod Identity association."""
    return {
        "cluster-autoscaler-policy": aws.mr(
            cluster,
            aws.IAM,
            "Policy",
            "cluster-autoscaler-policy",
            {
                "description": f"The cluster autoscaler of EKS cluster {cluster.name}",
                "policy": autoscaler_policy(cluster),
            },
        ),
        "cluster-autoscaler-role": aws.mr(
            cluster,
            aws.IAM,
            "Role",
            "cluster-autoscaler-role",
            {"assumeRolePolicy": aws.assume_policy(aws.POD_IDENTITY)},
        ),
        "cluster-autoscaler-role-policy": aws.mr(
            cluster,
            aws.IAM,
            "RolePolicyAttachment",
            "cluster-autoscaler-role-policy",
            {
                "policyArnSelector": selector("cluster-autoscaler-policy"),
                "roleSelector": selector("cluster-autoscaler-role"),
            },
        ),
        "cluster-autoscaler-pod-identity": aws.pod_identity(
            cluster,
            "cluster-autoscaler-pod-identity",
            AUTOSCALER_NAMESPACE,
            AUTOSCALER_ACCOUNT,
            "cluster-autoscaler-role",
        ),
    }


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
        "nodeSelector": system_node_labels(),
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
