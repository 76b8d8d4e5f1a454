"""The docs' getting-started tour on the real control plane (getting-started, kubectl-get)."""

from __future__ import annotations

import yaml

from e2e.context import (
    BYO_RWX_CLASS,
    EXAMPLES,
    GATEWAY_API,
    INFRA,
    METALLB_FIRST,
    ML,
    MP,
    PKG,
    SYSTEM,
    XRD,
    Context,
    conds_summary,
    first,
    obj_name,
)
from e2e.kube import Obj, condition_true, dig

# -- getting started -------------------------------------------------------------------------


def installation(ctx: Context) -> None:
    conf = ctx.get(PKG, "Configuration", "modelplane")
    assert condition_true(conf, "Installed"), ctx.explain(conf)
    assert condition_true(conf, "Healthy"), ctx.explain(conf)
    pkgs = {k: ctx.kube.list(PKG, k) for k in ("Provider", "Function")}
    unhealthy = [
        f"{k} {p['metadata']['name']}: {conds_summary(p)}"
        for k, items in pkgs.items()
        for p in items
        if not (condition_true(p, "Installed") and condition_true(p, "Healthy"))
    ]
    assert not unhealthy, "packages not healthy:\n" + "\n".join(unhealthy)
    functions = sorted(p["metadata"]["name"] for p in pkgs["Function"])
    assert len(functions) == 14, f"14 Functions expected, found {functions}"
    providers = sorted(p["metadata"]["name"] for p in pkgs["Provider"])
    ctx.step(
        f"Configuration modelplane Healthy; Providers {providers}; "
        f"{len(functions)} Functions Healthy"
    )
    xrds = ctx.kube.list(XRD, "CompositeResourceDefinition")
    bad = [x["metadata"]["name"] for x in xrds if not condition_true(x, "Established")]
    assert len(xrds) == 14, f"14 XRDs expected, found {len(xrds)}"
    assert not bad, f"XRDs not Established: {bad}"
    ctx.step("14 XRDs Established (v2 XRs have no claims, so nothing is Offered)")
    ctx.get("v1", "Namespace", SYSTEM)
    ctx.get("rbac.authorization.k8s.io/v1", "ClusterRole", "crossplane-compose-modelplane")
    ctx.step("the docs' prerequisites are in place (modelplane-system, RBAC, DRC, ImageConfig)")


def getting_started(ctx: Context) -> None:
    installation(ctx)
    build_the_platform(ctx)
    deploy_a_model(ctx)


def build_the_platform(ctx: Context) -> None:
    """The gateway, the hardware classes, an EKS and an Existing cluster."""
    ctx.apply_file("getting-started/build-the-platform/inference-gateway.yaml")
    ig = ctx.wait_ready(MP, "InferenceGateway", "default", timeout=240)
    assert dig(ig, "status", "address") == METALLB_FIRST, (
        f"InferenceGateway status.address {dig(ig, 'status', 'address')!r}, "
        f"expected the MetalLB pool's first address {METALLB_FIRST}"
    )
    assert condition_true(ig, "ControllerReady"), ctx.explain(ig)
    ctx.step(f"InferenceGateway default serves {METALLB_FIRST}")

    # Hardware classes and clusters: the docs' EKS platform, plus an Existing cluster.
    ctx.secret(
        "crossplane-system",
        "aws-creds",
        {"credentials": "[default]\naws_access_key_id = AKIAE2E\n"},
    )
    ctx.apply_file("getting-started/build-the-platform/clusterproviderconfig-aws.yaml")
    ctx.apply_file("getting-started/build-the-platform/eks/platform.yaml", ("InferenceClass",))
    ctx.apply_file("platform/inference-class/inference-class-h100-byo.yaml")
    for name in ("l4-1x-g6", "h100-8x-byo"):
        icl = ctx.wait_ready(MP, "InferenceClass", name, timeout=60)
        assert condition_true(icl, "Accepted"), ctx.explain(icl)
    ctx.apply_file("getting-started/build-the-platform/eks/platform.yaml", ("InferenceCluster",))
    ctx.secret(SYSTEM, "byo-cluster-kubeconfig", {"kubeconfig": _kubeconfig("byo-us-east")})
    # The docs' Existing cluster, with the RWX StorageClass its admin names for caches
    # ("Existing: bring your own ... name it in cluster.existing.cache.storageClassName").
    byo = first(
        ctx.documents(EXAMPLES / "platform/inference-cluster/inference-cluster-existing.yaml"),
        "InferenceCluster",
    )
    byo["spec"]["cluster"]["existing"]["cache"] = {"storageClassName": BYO_RWX_CLASS}
    ctx.kube.apply(byo)
    ctx.step(
        "kubectl apply -f examples/platform/inference-cluster/inference-cluster-existing.yaml "
        f"(+ cluster.existing.cache.storageClassName: {BYO_RWX_CLASS}): InferenceCluster byo-us-east"
    )
    for name, pool in (("eks-us-east", "gpu-l4"), ("byo-us-east", "gpu-h100")):
        ic = ctx.wait_ready(MP, "InferenceCluster", name, timeout=300)
        for cond in ("ClusterReady", "BackendReady"):
            assert condition_true(ic, cond), f"{cond} not True:\n{ctx.explain(ic)}"
        pools = [p.get("name") for p in dig(ic, "status", "gpuPools") or []]
        assert pool in pools, f"InferenceCluster {name} status.gpuPools {pools}, expected {pool}"
        address = dig(ic, "status", "gateway", "address")
        assert address, f"InferenceCluster {name} has no status.gateway.address"
        ctx.step(f"InferenceCluster {name}: pools {pools}, gateway {address}")
    eks = ctx.wait_ready(INFRA, "EKSCluster", "eks-us-east", SYSTEM, timeout=60)
    ref = dig(eks, "status", "kubeconfigSecretRef") or {}
    assert ref.get("name"), f"EKSCluster has no status.kubeconfigSecretRef: {eks.get('status')}"
    secret = ctx.get("v1", "Secret", ref["name"], ref.get("namespace") or SYSTEM)
    assert (ref.get("key") or "kubeconfig") in (secret.get("data") or {}), (
        f"Secret {ref['name']} lacks {ref.get('key')}: {sorted(secret.get('data') or {})}"
    )
    ctx.step(f"EKSCluster eks-us-east Ready, kubeconfig in Secret {ref['name']}")


def deploy_a_model(ctx: Context) -> None:
    """The cache, the deployment, the service."""
    ctx.ensure_namespace(ML)
    ctx.secret(ML, "hf-token", {"HF_TOKEN": "hf_e2e"})
    ctx.apply_file("models/model-cache/model-cache.yaml")
    mc = ctx.wait_ready(MP, "ModelCache", "qwen3-coder", ML, timeout=240)
    assert condition_true(mc, "ClustersMatched"), ctx.explain(mc)
    summary = str(dig(mc, "status", "summary", "ready") or "")
    done, _, matched = summary.partition("/")
    assert matched, f"ModelCache summary.ready {summary!r}"
    assert done == matched, f"ModelCache summary.ready {summary!r}"
    assert int(matched) >= 1, f"ModelCache summary.ready {summary!r}"
    ctx.step(f"ModelCache qwen3-coder ready on {summary} clusters")

    ctx.apply_file("getting-started/deploying-a-model/eks/model-deployment.yaml")
    md = ctx.wait_ready(MP, "ModelDeployment", "qwen-demo", ML, timeout=300)
    for cond in ("ReplicasScheduled", "ReplicasReady"):
        assert condition_true(md, cond), f"{cond} not True:\n{ctx.explain(md)}"
    expected = {"total": 1, "ready": 1, "updated": 1, "updatedReady": 1}
    assert dig(md, "status", "replicas") == expected, md.get("status")
    replicas = ctx.replicas()
    assert len(replicas) == 1, f"one ModelReplica expected, found {[obj_name(r) for r in replicas]}"
    replica = replicas[0]
    # Fill: the eligible cluster with the fewest replicas, ties broken by name.
    assert dig(replica, "spec", "clusterName") == "byo-us-east", dig(replica, "spec")
    check_replica(ctx, replica)

    ctx.apply_file("getting-started/deploying-a-model/model-service.yaml")
    ms = ctx.wait_ready(MP, "ModelService", "qwen", ML, timeout=180)
    want = f"http://{METALLB_FIRST}/{ML}/qwen"
    assert dig(ms, "status", "address") == want, (
        f"ModelService status.address {dig(ms, 'status', 'address')!r}, expected {want}"
    )
    for cond in ("EndpointsResolved", "RoutingReady"):
        assert condition_true(ms, cond), f"{cond} not True:\n{ctx.explain(ms)}"
    routes = ctx.kube.list(GATEWAY_API, "HTTPRoute", ML)
    accepted = [
        r["metadata"]["name"]
        for r in routes
        if any(condition_true({"status": p}, "Accepted") for p in dig(r, "status", "parents") or [])
    ]
    assert accepted, (
        f"no HTTPRoute in {ML} accepted by the gateway: {[obj_name(r) for r in routes]}"
    )
    ctx.step(f"ModelService qwen at {want}; HTTPRoute {accepted} accepted by Traefik")


def check_replica(ctx: Context, replica: Obj) -> None:
    """A replica Ready, its endpoint routed, its workload Objects Ready and Available."""
    name = replica["metadata"]["name"]
    cluster = dig(replica, "spec", "clusterName")
    got = ctx.wait_ready(MP, "ModelReplica", name, ML, timeout=120)
    for cond in ("ModelAccepted", "ModelReady"):
        assert condition_true(got, cond), f"{cond} not True:\n{ctx.explain(got)}"
    objects = ctx.objects_of(name)
    assert objects, f"ModelReplica {name} composed no Object"
    unready = [o["metadata"]["name"] for o in objects if not condition_true(o, "Ready")]
    assert not unready, f"Objects of {name} not Ready: {unready}"
    kinds = sorted({str(dig(o, "spec", "forProvider", "manifest", "kind")) for o in objects})
    workload = [
        o
        for o in objects
        if dig(o, "spec", "forProvider", "manifest", "kind") in ("Deployment", "LeaderWorkerSet")
    ]
    assert workload, f"no Deployment or LeaderWorkerSet among {kinds}"
    for o in workload:
        seen = dig(o, "status", "atProvider", "manifest", "status") or {}
        assert condition_true({"status": seen}, "Available"), f"{o['metadata']['name']}: {seen}"
    ic = ctx.get(MP, "InferenceCluster", str(cluster))
    gateway = dig(ic, "status", "gateway", "address")
    ep = [
        e
        for e in ctx.endpoints()
        if e["metadata"]["name"] == name
        or dig(e, "metadata", "labels", "modelplane.ai/cluster") == cluster
    ]
    assert ep, f"no ModelEndpoint for replica {name} on {cluster}"
    url = dig(ep[0], "spec", "url")
    assert url == f"http://{gateway}/{ML}/{name}/v1", f"ModelEndpoint url {url!r}"
    ctx.wait_ready(MP, "ModelEndpoint", ep[0]["metadata"]["name"], ML, timeout=60)
    ctx.step(f"ModelReplica {name} on {cluster}: Objects {kinds} Ready; endpoint {url}")


COLUMNS = (
    # (apiVersion, kind, namespace, columns that must be filled)
    (MP, "InferenceGateway", None, ("BACKEND", "ADDRESS")),
    (MP, "InferenceClass", None, ("DESCRIPTION",)),
    (MP, "InferenceCluster", None, ("SOURCE", "GATEWAY")),
    (INFRA, "EKSCluster", SYSTEM, ("REGION", "KUBECONFIG")),
    (INFRA, "ServingStack", SYSTEM, ("PROVIDERCONFIG", "GATEWAY")),
    (MP, "ModelCache", ML, ("SOURCE", "STAGED")),
    (MP, "ModelDeployment", ML, ("REPLICAS",)),
    (MP, "ModelReplica", ML, ("CLUSTER",)),
    (MP, "ModelEndpoint", ML, ("URL",)),
    (MP, "ModelService", ML, ("ADDRESS",)),
)


def check_columns(ctx: Context) -> None:
    """`kubectl get` of every kind in the flow: its columns filled, SYNCED and READY True."""
    for api, kind, ns, required in COLUMNS:
        args = ["get", kind.lower() + "." + api.split("/")[0]]
        args += ["-n", ns] if ns else []
        print("\n".join("      " + line for line in ctx.kubectl(*args).splitlines()))
        columns, rows = ctx.table(api, kind, ns)
        assert rows, f"kubectl get {kind}: no rows"
        twice = sorted({c for c in columns if columns.count(c) > 1})
        assert not twice, f"kubectl get {kind} shows columns {columns}: {twice} twice"
        for row in rows:
            empty = [
                c for c in (*required, "SYNCED", "READY") if row.get(c) in (None, "", "<none>")
            ]
            assert not empty, f"kubectl get {kind} {row.get('Name')}: empty columns {empty}: {row}"
            not_true = [c for c in ("SYNCED", "READY") if row.get(c) != "True"]
            assert not not_true, f"kubectl get {kind} {row.get('Name')}: {not_true} not True: {row}"
    ctx.step("kubectl get: every column filled, SYNCED and READY True")


def _kubeconfig(cluster: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": cluster, "cluster": {"server": f"https://{cluster}.e2e.invalid"}}
            ],
            "users": [{"name": "admin", "user": {"token": "e2e"}}],
            "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": "admin"}}],
            "current-context": cluster,
        }
    )
