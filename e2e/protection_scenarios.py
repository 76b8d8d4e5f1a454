"""protection: an InferenceCluster in use can't be deleted (Crossplane's ClusterUsage webhook)."""

from __future__ import annotations

import time

from modelplane.domain import usage

from e2e.context import ML, MP, Context, in_use, obj_name
from e2e.edit_scenarios import taint, wait_replicas
from e2e.kube import Obj, dig
from e2e.tour_scenarios import check_replica

# -- protection -------------------------------------------------------------------------------

USAGE_API = "protection.crossplane.io/v1beta1"
DELETION_ATTEMPT = "usage.crossplane.io/deletion-attempt-with-policy"  # Crossplane's webhook's
IN_USE_LABEL = "crossplane.io/in-use"  # Crossplane's Usage controller's


def held(ctx: Context, cluster: str) -> Obj:
    """Wait until Crossplane guards the cluster: its ClusterUsage Ready, the label set."""
    ctx.wait_ready(USAGE_API, "ClusterUsage", usage.cluster_usage_name(cluster), timeout=90)

    def labelled() -> Obj | None:
        ic = ctx.kube.get(MP, "InferenceCluster", cluster)
        return ic if dig(ic, "metadata", "labels", IN_USE_LABEL) == "true" else None

    ic: Obj = ctx.wait_for(
        f"InferenceCluster {cluster} labelled {IN_USE_LABEL}=true by Crossplane", labelled, 60
    )
    return ic


def refused_delete(ctx: Context, cluster: str) -> str:
    """``kubectl delete`` the cluster (foreground, as the docs say); return the refusal."""
    args = ["delete", "inferencecluster", cluster, "--cascade=foreground", "--wait=false"]
    done = ctx.run_kubectl(*args)
    assert done.returncode != 0, f"kubectl {' '.join(args)} was admitted: {done.stdout}"
    return done.stderr.strip()


def protection(ctx: Context) -> None:
    """The docs' rule, enforced by the API server: ML resources first, then the cluster."""
    ctx.apply_file("getting-started/deploying-a-model/eks/model-deployment.yaml")
    wait_replicas(ctx, 1)
    replica = ctx.replicas()[0]
    cluster = str(dig(replica, "spec", "clusterName"))
    other = next(c for c in ("byo-us-east", "eks-us-east") if c != cluster)
    name = replica["metadata"]["name"]
    held(ctx, cluster)
    assert name in in_use(ctx, cluster), in_use(ctx, cluster)
    ctx.step(f"InferenceCluster {cluster} {in_use(ctx, cluster)}")

    refusal = refused_delete(ctx, cluster)
    ctx.step(f"kubectl delete inferencecluster {cluster} --cascade=foreground: {refusal}")
    for says in (f'ClusterUsage "{usage.cluster_usage_name(cluster)}"', usage.REASON):
        assert says in refusal, f"the refusal does not say {says!r}: {refusal}"
    ic = ctx.get(MP, "InferenceCluster", cluster)
    assert not dig(ic, "metadata", "deletionTimestamp"), f"{cluster} is being deleted"
    attempt = dig(ic, "metadata", "annotations", DELETION_ATTEMPT)
    assert attempt == "Foreground", f"{DELETION_ATTEMPT}: {attempt!r}"
    time.sleep(10)
    check_replica(ctx, ctx.get(MP, "ModelReplica", name, ML))
    ctx.step(f"{cluster} stays; the deletion attempt is recorded ({attempt}) for replay")

    # Nothing uses it: the replica drained off (a NoExecute taint), the cache deleted.
    taint(ctx, cluster, [{"key": "modelplane.ai/maintenance", "effect": "NoExecute"}])
    ctx.step(f"InferenceCluster {cluster} tainted modelplane.ai/maintenance:NoExecute")
    ctx.wait_for(
        f"the replica rescheduled onto {other}",
        lambda: [str(dig(r, "spec", "clusterName")) for r in ctx.replicas()] == [other],
        180,
        lambda: str([(obj_name(r), dig(r, "spec", "clusterName")) for r in ctx.replicas()]),
    )
    ctx.kubectl("delete", "modelcache", "qwen3-coder", "-n", ML, "--wait=false")
    ctx.step("kubectl delete modelcache qwen3-coder")
    ctx.wait_gone(
        f"nothing uses {cluster}: its ClusterUsage gone, and Crossplane replays the refused "
        "deletion: the InferenceCluster deleted",
        lambda: [
            f"{kind} {n}"
            for api, kind, n in (
                (USAGE_API, "ClusterUsage", usage.cluster_usage_name(cluster)),
                (MP, "InferenceCluster", cluster),
                (MP, "ModelCache", "qwen3-coder"),
            )
            if ctx.kube.get(api, kind, n, ML if kind == "ModelCache" else None)
        ],
        240,
        lambda: in_use(ctx, cluster),
    )
    wait_replicas(ctx, 1)
    check_replica(ctx, ctx.replicas()[0])
    ctx.step(f"qwen-demo still serves, from {other}")
