"""The e2e scenarios: the docs' flows, asserted on objects read back from the API server.

Each scenario prints its steps as it goes and raises AssertionError, naming what was
expected and what the objects show, at the first check that does not hold.
"""

from __future__ import annotations

import copy
import functools
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from modelplane.domain import usage

from e2e.kube import Kube, KubeError, Obj, condition_true, conditions, dig

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
MP = "modelplane.ai/v1alpha1"
INFRA = "infrastructure.modelplane.ai/v1alpha1"
OBJECT = "kubernetes.m.crossplane.io/v1alpha1"
GATEWAY_API = "gateway.networking.k8s.io/v1"
PKG = "pkg.crossplane.io/v1"
XRD = "apiextensions.crossplane.io/v2"
ML = "ml-team"
SYSTEM = "modelplane-system"
METALLB_FIRST = "172.18.255.200"  # the first address of the docs' MetalLB pool
DEPLOYMENT_LABEL = "modelplane.ai/deployment"
FLAPS = "e2e-fake-providers"
BYO_RWX_CLASS = "byo-rwx"  # the RWX StorageClass the Existing cluster's admin made
# The docs' folders of examples/ (the others are hand-written fleets: examples/README.md).
DOCS_FOLDERS = ("getting-started", "platform", "models", "guides", "recipes", "overview")


@dataclass
class Context:
    kube: Kube
    state: Path
    notes: dict[str, Any] = field(default_factory=dict)

    # -- output ---------------------------------------------------------------------

    @staticmethod
    def step(message: str) -> None:
        print(f"  - {message}", flush=True)

    # -- manifests ------------------------------------------------------------------

    @staticmethod
    def documents(path: Path) -> list[Obj]:
        return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]

    def apply_docs(self, docs: list[Obj]) -> list[Obj]:
        return [self.kube.apply(doc) for doc in docs]

    def apply_file(self, relative: str, kinds: tuple[str, ...] = ()) -> list[Obj]:
        docs = [d for d in self.documents(EXAMPLES / relative) if not kinds or d["kind"] in kinds]
        applied = self.apply_docs(docs)
        names = ", ".join(f"{d['kind']} {d['metadata']['name']}" for d in docs)
        self.step(f"kubectl apply -f examples/{relative}: {names}")
        return applied

    def ensure_namespace(self, name: str) -> None:
        self.kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def secret(self, namespace: str, name: str, data: Mapping[str, str]) -> None:
        self.ensure_namespace(namespace)
        self.kube.apply(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name, "namespace": namespace},
                "stringData": dict(data),
            }
        )
        self.step(f"Secret {namespace}/{name} ({', '.join(data)})")

    # -- reading --------------------------------------------------------------------

    def get(self, api: str, kind: str, name: str, ns: str | None = None) -> Obj:
        obj = self.kube.get(api, kind, name, ns)
        assert obj is not None, f"{kind} {ns + '/' if ns else ''}{name} does not exist"
        return obj

    def replicas(self, deployment: str = "qwen-demo") -> list[Obj]:
        return self.kube.list(MP, "ModelReplica", ML, {DEPLOYMENT_LABEL: deployment})

    def objects_of(self, replica: str) -> list[Obj]:
        """The provider-kubernetes Objects a ModelReplica controls."""
        return [
            o
            for o in self.kube.list(OBJECT, "Object", ML)
            if any(
                ref.get("controller")
                and ref.get("kind") == "ModelReplica"
                and ref.get("name") == replica
                for ref in o["metadata"].get("ownerReferences") or []
            )
        ]

    def endpoints(self, deployment: str = "qwen-demo") -> list[Obj]:
        return self.kube.list(MP, "ModelEndpoint", ML, {DEPLOYMENT_LABEL: deployment})

    def composed(self, xr: Mapping[str, Any]) -> Iterator[tuple[Mapping[str, Any], Obj | None]]:
        """Each resource an XR composed, with its current state (None when gone)."""
        ns = xr["metadata"].get("namespace")
        for ref in dig(xr, "spec", "crossplane", "resourceRefs") or []:
            got = self.kube.get(
                ref["apiVersion"], ref["kind"], ref["name"], ref.get("namespace") or ns
            )
            yield ref, got

    def explain(self, obj: Obj | None, depth: int = 2) -> str:
        """What an object and (for a composite) what it composed say about readiness."""
        if obj is None:
            return "(gone)"
        lines = [f"{obj.get('kind')} {_name(obj)}: {_conds(obj)}"]
        if depth and dig(obj, "spec", "crossplane"):
            for ref, got in self.composed(obj):
                if got is None:
                    lines.append(f"    {ref['kind']} {ref['name']}: (not found)")
                    continue
                got.setdefault("kind", ref["kind"])
                sub = self.explain(got, depth - 1).replace("\n", "\n    ")
                lines.append("    " + sub)
        return "\n".join(lines)

    def wait_for(
        self,
        what: str,
        probe: Callable[[], Any],
        timeout: float,
        show: Callable[[], str] | None = None,
        interval: float = 2,
    ) -> Any:
        deadline = time.monotonic() + timeout
        t0 = time.monotonic()
        while True:
            got = probe()
            if got:
                self.step(f"{what} ({time.monotonic() - t0:.0f}s)")
                return got
            if time.monotonic() > deadline:
                detail = show() if show else ""
                msg = f"timed out after {timeout:.0f}s waiting for: {what}"
                raise AssertionError(msg + (f"\n{detail}" if detail else ""))
            time.sleep(interval)

    def wait_ready(
        self, api: str, kind: str, name: str, ns: str | None = None, timeout: float = 180
    ) -> Obj:
        def probe() -> Obj | None:
            obj = self.kube.get(api, kind, name, ns)
            return obj if condition_true(obj, "Ready") else None

        ready: Obj = self.wait_for(
            f"{kind} {ns + '/' if ns else ''}{name} Ready",
            probe,
            timeout,
            lambda: self.explain(self.kube.get(api, kind, name, ns)),
        )
        return ready

    def wait_gone(
        self,
        what: str,
        probe: Callable[[], list[str]],
        timeout: float = 120,
        show: Callable[[], str] | None = None,
    ) -> None:
        def detail() -> str:
            return f"still there: {', '.join(probe())}" + (f"\n{show()}" if show else "")

        self.wait_for(what, lambda: not probe(), timeout, detail)

    @staticmethod
    def run_kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        binary = os.environ.get("E2E_KUBECTL") or str(ROOT / "bin" / "kubectl")
        return subprocess.run([binary, *args], check=False, capture_output=True, text=True)

    def kubectl(self, *args: str) -> str:
        done = self.run_kubectl(*args)
        if done.returncode != 0:
            msg = f"kubectl {' '.join(args)} failed: {done.stderr.strip()}"
            raise AssertionError(msg)
        return done.stdout

    def table(
        self, api: str, kind: str, ns: str | None = None
    ) -> tuple[list[str], list[dict[str, Any]]]:
        """What `kubectl get` shows: the server's Table's columns, and a dict per row."""
        r = self.kube.resource(api, kind)
        data = self.kube.request(
            "GET", r.path(ns), accept="application/json;as=Table;v=v1;g=meta.k8s.io"
        )
        names = [c["name"] for c in data["columnDefinitions"]]
        rows = [dict(zip(names, row["cells"], strict=False)) for row in data.get("rows", [])]
        return [n.upper() for n in names], rows


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata", {})
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta.get("name"))


def _conds(obj: Mapping[str, Any]) -> str:
    parts = []
    for kind, c in conditions(obj).items():
        text = f"{kind}={c.get('status')}"
        if c.get("status") != "True" or kind not in ("Ready", "Synced"):
            detail = c.get("reason", "")
            if c.get("message"):
                detail += f": {c['message']}"
            text += f" ({detail})" if detail else ""
        parts.append(text)
    return "; ".join(parts) or "no conditions"


def first(docs: list[Obj], kind: str) -> Obj:
    return next(d for d in docs if d["kind"] == kind)


# -- getting started -------------------------------------------------------------------------


def installation(ctx: Context) -> None:
    conf = ctx.get(PKG, "Configuration", "modelplane")
    assert condition_true(conf, "Installed"), ctx.explain(conf)
    assert condition_true(conf, "Healthy"), ctx.explain(conf)
    pkgs = {k: ctx.kube.list(PKG, k) for k in ("Provider", "Function")}
    unhealthy = [
        f"{k} {p['metadata']['name']}: {_conds(p)}"
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
    assert len(replicas) == 1, f"one ModelReplica expected, found {[_name(r) for r in replicas]}"
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
    assert accepted, f"no HTTPRoute in {ML} accepted by the gateway: {[_name(r) for r in routes]}"
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


# -- quiet ------------------------------------------------------------------------------------

COMPOSITE_KINDS = (
    (MP, "InferenceGateway"), (MP, "InferenceClass"), (MP, "InferenceCluster"),
    (MP, "ModelCache"), (MP, "ModelDeployment"), (MP, "ModelReplica"), (MP, "ModelEndpoint"),
    (MP, "ModelService"), (INFRA, "EKSCluster"), (INFRA, "ServingStack"),
)  # fmt: skip


def quiet(ctx: Context, seconds: float = 20) -> None:
    """Once everything is Ready, no composite's state changes: nothing loops."""
    stop = threading.Event()
    changed: dict[str, int] = {}
    lock = threading.Lock()

    def watch(api: str, kind: str) -> None:
        listed: set[str] = set()
        for event, obj in ctx.kube.watch(api, kind, stop, timeout=int(seconds) + 5):
            name = f"{kind} {_name(obj)}"
            if event == "ADDED" and name not in listed:
                listed.add(name)
                continue
            with lock:
                changed[name] = changed.get(name, 0) + 1

    threads = [threading.Thread(target=watch, args=kind, daemon=True) for kind in COMPOSITE_KINDS]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    assert not changed, f"composites still changing after {seconds:.0f}s: {changed}"
    ctx.step(f"no composite changed in {seconds:.0f}s: nothing loops")


# -- scale ------------------------------------------------------------------------------------


def wait_replicas(ctx: Context, total: int, timeout: float = 240) -> Obj:
    def probe() -> Obj | None:
        md = ctx.kube.get(MP, "ModelDeployment", "qwen-demo", ML)
        reps = dig(md, "status", "replicas") or {}
        ok = reps.get("total") == total and reps.get("ready") == total
        return md if ok and condition_true(md, "Ready") and len(ctx.replicas()) == total else None

    def show() -> str:
        md = ctx.kube.get(MP, "ModelDeployment", "qwen-demo", ML)
        reps = [
            f"{_name(r)} on {dig(r, 'spec', 'clusterName')}: {_conds(r)}" for r in ctx.replicas()
        ]
        return (
            f"status.replicas {dig(md, 'status', 'replicas')}\n{ctx.explain(md, 1)}\n"
            f"ModelReplicas: {reps}"
        )

    md: Obj = ctx.wait_for(f"qwen-demo: {total} replicas placed and Ready", probe, timeout, show)
    return md


def scale(ctx: Context) -> None:
    ctx.kubectl("scale", "modeldeployment", "qwen-demo", "-n", ML, "--replicas=2")
    r = ctx.kube.resource(MP, "ModelDeployment")
    got = ctx.kube.request("GET", r.path(ML, "qwen-demo", "scale"))
    assert dig(got, "spec", "replicas") == 2, f"scale subresource: {got}"
    ctx.step("kubectl scale --replicas=2 (the scale subresource reads spec.replicas 2)")
    wait_replicas(ctx, 2)
    clusters = sorted(str(dig(x, "spec", "clusterName")) for x in ctx.replicas())
    assert clusters == ["byo-us-east", "eks-us-east"], f"replicas spread over {clusters}"
    for replica in ctx.replicas():
        check_replica(ctx, replica)
    ms = ctx.wait_ready(MP, "ModelService", "qwen", ML, timeout=120)
    assert condition_true(ms, "EndpointsResolved"), ctx.explain(ms)
    got = ctx.kube.request("GET", r.path(ML, "qwen-demo", "scale"))
    assert dig(got, "status", "replicas") == 2, f"scale subresource status: {got}"
    ctx.step("scale subresource status.replicas 2; ModelService still Ready")

    dropped = [x for x in ctx.replicas() if dig(x, "spec", "clusterName") == "eks-us-east"]
    ctx.kubectl("scale", "modeldeployment", "qwen-demo", "-n", ML, "--replicas=1")
    ctx.step("kubectl scale --replicas=1")
    wait_replicas(ctx, 1)
    left = [str(dig(x, "spec", "clusterName")) for x in ctx.replicas()]
    # Scale-down drops from the most-loaded cluster first; ties: the greater cluster name.
    assert left == ["byo-us-east"], f"after scaling down, replicas on {left}"
    gone = dropped[0]["metadata"]["name"]
    ctx.wait_gone(
        f"the dropped replica {gone}'s Objects garbage-collected",
        lambda: [o["metadata"]["name"] for o in ctx.objects_of(gone)],
    )
    ctx.wait_gone(
        f"the dropped replica {gone}'s ModelEndpoint removed",
        lambda: [
            e["metadata"]["name"]
            for e in ctx.endpoints()
            if dig(e, "metadata", "labels", "modelplane.ai/cluster") == "eks-us-east"
        ],
    )


# -- flap -------------------------------------------------------------------------------------


def uids(ctx: Context, roots: list[tuple[str, str, str, str | None]]) -> dict[str, str]:
    """uid -> description of every object under the roots (two levels of composition)."""
    out: dict[str, str] = {}

    def walk(obj: Obj | None, depth: int) -> None:
        if obj is None:
            return
        out[obj["metadata"]["uid"]] = f"{obj.get('kind')} {_name(obj)}"
        if depth and dig(obj, "spec", "crossplane"):
            for ref, got in ctx.composed(obj):
                if got is not None:
                    got.setdefault("kind", ref["kind"])
                    walk(got, depth - 1)

    for api, kind, name, ns in roots:
        walk(ctx.kube.get(api, kind, name, ns), 3)
    for replica in ctx.replicas():
        walk(replica, 1)
    return out


def set_flaps(ctx: Context, patterns: list[str]) -> None:
    ctx.kube.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": FLAPS, "namespace": "crossplane-system"},
            "data": {"notReady": "\n".join(patterns)},
        }
    )


def flap(ctx: Context) -> None:
    roots = [
        (MP, "InferenceCluster", "eks-us-east", None),
        (MP, "ModelDeployment", "qwen-demo", ML),
    ]
    before = uids(ctx, roots)
    eks = ctx.get(INFRA, "EKSCluster", "eks-us-east", SYSTEM)
    target = next(
        (
            ref
            for ref in dig(eks, "spec", "crossplane", "resourceRefs") or []
            if ref["kind"] == "Cluster" and ref["apiVersion"].startswith("eks.aws.")
        ),
        None,
    )
    assert target, f"EKSCluster composed no eks Cluster: {dig(eks, 'spec', 'crossplane')}"
    api, name = target["apiVersion"], target["name"]
    pattern = f"Cluster.{api.split('/')[0]} {SYSTEM}/{name}"
    set_flaps(ctx, [pattern])
    ctx.step(f"the AWS provider reports the EKS Cluster {name} not Ready")
    try:
        ctx.wait_for(
            f"Cluster {name} Ready=False",
            lambda: not condition_true(ctx.kube.get(api, "Cluster", name, SYSTEM), "Ready"),
            60,
        )
        ctx.wait_for(
            "EKSCluster eks-us-east no longer Ready",
            lambda: not condition_true(
                ctx.kube.get(INFRA, "EKSCluster", "eks-us-east", SYSTEM), "Ready"
            ),
            90,
            lambda: ctx.explain(ctx.kube.get(INFRA, "EKSCluster", "eks-us-east", SYSTEM), 1),
        )
        time.sleep(20)
        during = uids(ctx, roots)
        deleted = {u: d for u, d in before.items() if u not in during}
        assert not deleted, f"deleted while the cluster flapped: {sorted(deleted.values())}"
        ctx.step(f"20s later nothing of the {len(before)} objects was deleted")
    finally:
        set_flaps(ctx, [])
    ctx.step("the provider reports it Ready again")
    ctx.wait_ready(INFRA, "EKSCluster", "eks-us-east", SYSTEM, timeout=120)
    ctx.wait_ready(MP, "InferenceCluster", "eks-us-east", timeout=120)
    ctx.wait_ready(MP, "ModelDeployment", "qwen-demo", ML, timeout=120)
    after = uids(ctx, roots)
    deleted = {u: d for u, d in before.items() if u not in after}
    assert not deleted, f"replaced after the flap: {sorted(deleted.values())}"
    ctx.step(f"everything Ready again; all {len(before)} objects kept (same uids)")


# -- drain ------------------------------------------------------------------------------------


def taint(ctx: Context, cluster: str, taints: list[dict[str, str]] | None) -> None:
    ctx.kube.patch(MP, "InferenceCluster", cluster, {"spec": {"taints": taints}})


def drain(ctx: Context) -> None:
    before = ctx.replicas()
    on = {str(dig(r, "spec", "clusterName")): r["metadata"]["name"] for r in before}
    assert list(on) == ["byo-us-east"], f"expected one replica on byo-us-east, found {on}"
    old = on["byo-us-east"]
    taint(ctx, "byo-us-east", [{"key": "modelplane.ai/maintenance", "effect": "NoExecute"}])
    ctx.step("InferenceCluster byo-us-east tainted modelplane.ai/maintenance:NoExecute")

    def moved() -> bool:
        reps = ctx.replicas()
        return [str(dig(r, "spec", "clusterName")) for r in reps] == ["eks-us-east"]

    ctx.wait_for(
        "the replica rescheduled onto eks-us-east",
        moved,
        180,
        lambda: str(
            [(r["metadata"]["name"], dig(r, "spec", "clusterName")) for r in ctx.replicas()]
        ),
    )
    ctx.wait_gone(
        f"the old replica {old} and its Objects removed",
        lambda: [o["metadata"]["name"] for o in ctx.objects_of(old)]
        + ([old] if ctx.kube.get(MP, "ModelReplica", old, ML) else []),
    )
    wait_replicas(ctx, 1)
    check_replica(ctx, ctx.replicas()[0])
    taint(ctx, "byo-us-east", None)
    ctx.step("taint removed")
    time.sleep(20)
    left = [str(dig(r, "spec", "clusterName")) for r in ctx.replicas()]
    assert left == ["eks-us-east"], f"after the taint was removed, replicas on {left}"
    ctx.step("20s later the replica stays on eks-us-east (nothing moves back)")


# -- invalid edit ------------------------------------------------------------------------------


def invalid_edit(ctx: Context) -> None:
    md = ctx.get(MP, "ModelDeployment", "qwen-demo", ML)
    template = copy.deepcopy(md["spec"]["template"])
    kept = {r["metadata"]["uid"]: r["metadata"]["name"] for r in ctx.replicas()}
    selector = template["spec"]["engines"][0]["members"][0]["nodeSelector"]["devices"][0]
    good = selector["selectors"][0]["cel"]
    bad = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >='
    selector["selectors"][0]["cel"] = bad
    refused: KubeError | None = None
    try:
        ctx.kube.patch(MP, "ModelDeployment", "qwen-demo", {"spec": {"template": template}}, ML)
    except KubeError as exc:
        refused = exc
    if refused is not None:
        assert refused.status == 422, f"refused with {refused}"
        ctx.step(f"the API server refused the edit: {refused.message}")
    else:
        ctx.step(f"edited the selector to {bad!r}")

        def reported() -> Mapping[str, Any] | None:
            got = ctx.kube.get(MP, "ModelDeployment", "qwen-demo", ML)
            c = conditions(got).get("ReplicasScheduled", {})
            return (
                c
                if c.get("status") == "False" and c.get("reason") == "InvalidNodeSelector"
                else None
            )

        cond = ctx.wait_for(
            "ReplicasScheduled=False, reason InvalidNodeSelector",
            reported,
            90,
            lambda: ctx.explain(ctx.kube.get(MP, "ModelDeployment", "qwen-demo", ML), 0),
        )
        ctx.step(f"condition message: {cond.get('message')}")
        time.sleep(15)
        now = {r["metadata"]["uid"]: r["metadata"]["name"] for r in ctx.replicas()}
        assert now == kept, f"running replicas changed: before {kept}, after {now}"
        for replica in ctx.replicas():
            got = ctx.kube.get(MP, "ModelReplica", replica["metadata"]["name"], ML)
            assert condition_true(got, "Ready"), ctx.explain(got)
        ctx.step(f"15s later the running replicas stay, Ready: {sorted(kept.values())}")
    selector["selectors"][0]["cel"] = good
    ctx.kube.patch(MP, "ModelDeployment", "qwen-demo", {"spec": {"template": template}}, ML)
    ctx.step("selector restored")
    md = ctx.wait_for(
        "ReplicasScheduled True again",
        lambda: condition_true(
            ctx.kube.get(MP, "ModelDeployment", "qwen-demo", ML), "ReplicasScheduled"
        ),
        90,
        lambda: ctx.explain(ctx.kube.get(MP, "ModelDeployment", "qwen-demo", ML), 0),
    )
    wait_replicas(ctx, 1)


# -- deletion ---------------------------------------------------------------------------------


def deletion(ctx: Context) -> None:
    replicas = [r["metadata"]["name"] for r in ctx.replicas()]
    endpoints = [e["metadata"]["name"] for e in ctx.endpoints()]
    objects = [o["metadata"]["name"] for r in replicas for o in ctx.objects_of(r)]
    ctx.step(f"qwen-demo has replicas {replicas}, endpoints {endpoints}, {len(objects)} Objects")
    ctx.kubectl("delete", "modeldeployment", "qwen-demo", "-n", ML, "--wait=false")
    ctx.step("kubectl delete modeldeployment qwen-demo")

    def left() -> list[str]:
        out = [f"ModelReplica {n}" for n in replicas if ctx.kube.get(MP, "ModelReplica", n, ML)]
        out += [f"ModelEndpoint {n}" for n in endpoints if ctx.kube.get(MP, "ModelEndpoint", n, ML)]
        out += [f"Object {n}" for n in objects if ctx.kube.get(OBJECT, "Object", n, ML)]
        if ctx.kube.get(MP, "ModelDeployment", "qwen-demo", ML):
            out.append("ModelDeployment qwen-demo")
        return out

    ctx.wait_gone("the deployment, its replicas, endpoints and Objects deleted", left, 180)

    # The clusters are still held, by the ModelCache alone now.
    for cluster in ("eks-us-east", "byo-us-east"):

        def cache_only(c: str = cluster) -> bool:
            users = in_use(ctx, c)
            return "ModelCache" in users and "ModelReplica" not in users

        ctx.wait_for(
            f"InferenceCluster {cluster} InUse names the ModelCache and no ModelReplica",
            cache_only,
            90,
            functools.partial(in_use, ctx, cluster),
        )


# -- protection -------------------------------------------------------------------------------

USAGE_API = "protection.crossplane.io/v1beta1"
DELETION_ATTEMPT = "usage.crossplane.io/deletion-attempt-with-policy"  # Crossplane's webhook's
IN_USE_LABEL = "crossplane.io/in-use"  # Crossplane's Usage controller's


def in_use(ctx: Context, cluster: str) -> str:
    """The InferenceCluster's InUse condition: who holds it, as its function says."""
    c = conditions(ctx.kube.get(MP, "InferenceCluster", cluster)).get("InUse", {})
    return f"InUse={c.get('status')}: {c.get('message')}"


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
        lambda: str([(_name(r), dig(r, "spec", "clusterName")) for r in ctx.replicas()]),
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


# -- examples ----------------------------------------------------------------------------------


def docs_documents() -> list[tuple[Path, Obj]]:
    out: list[tuple[Path, Obj]] = []
    for folder in DOCS_FOLDERS:
        for path in sorted((EXAMPLES / folder).rglob("*.yaml")):
            if "fleet" in path.relative_to(EXAMPLES).parts:
                continue
            out.extend((path, doc) for doc in Context.documents(path) if doc.get("kind"))
    return out


def examples(ctx: Context) -> None:
    docs = docs_documents()
    for _, doc in docs:
        ns = doc.get("metadata", {}).get("namespace")
        if ns:
            ctx.ensure_namespace(ns)
    admitted = 0
    unserved: set[str] = set()
    refused: list[str] = []
    for path, doc in docs:
        api, kind = doc["apiVersion"], doc["kind"]
        if not ctx.kube.served(api, kind):
            unserved.add(f"{kind}.{api}")
            continue
        try:
            ctx.kube.apply(doc, dry_run=True)
        except KubeError as exc:
            refused.append(
                f"{path.relative_to(ROOT)} {kind} {doc['metadata'].get('name')}: {exc.message}"
            )
        else:
            admitted += 1
    ctx.step(f"{admitted} docs manifests admitted by the API server (server-side dry run)")
    if unserved:
        ctx.step(f"not served here (no CRDs for these providers): {sorted(unserved)}")
    assert not refused, "refused:\n" + "\n".join(refused)

    # The XRDs' negative cases (tests/apis/test_validation.py), now on the real API server.
    from tests.apis import test_validation as cases  # noqa: PLC0415 - the dev extras' pytest

    valid_refused = []
    for doc in cases.VALID:
        try:
            ctx.kube.create(doc, dry_run=True)
        except KubeError as exc:
            valid_refused.append(f"{doc['kind']} {doc['metadata']['name']}: {exc.message}")
    assert not valid_refused, "valid manifests refused:\n" + "\n".join(valid_refused)
    ctx.step(f"{len(cases.VALID)} minimal valid manifests of every kind admitted")
    wrong = []
    for case, make, says in cases.INVALID:
        doc = make(case)
        try:
            ctx.kube.create(doc, dry_run=True)
        except KubeError as exc:
            if exc.status not in (400, 422) or not same_refusal(says, exc.message):
                wrong.append(
                    f"{case}: refused with {exc.status} {exc.message!r}, expected {says!r}"
                )
        else:
            wrong.append(f"{case}: admitted, expected refusal {says!r}")
    assert not wrong, "negative cases:\n" + "\n".join(wrong)
    ctx.step(f"{len(cases.INVALID)} invalid manifests refused with the XRD's message")


def same_refusal(says: str, message: str) -> bool:
    """Whether the API server refused for the reason the case names.

    The cases' messages are the XRD's own (CEL rules' messages, OpenAPI limits), as
    crank words them; only an unknown field is worded differently by the API server
    (``strict decoding error: unknown field "spec....bogus"``).
    """
    if says in message:
        return True
    if says.startswith("unknown field"):
        field_name = says.split('"')[1]
        return "unknown field" in message and f".{field_name}" in message
    return False


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    run: Callable[[Context], None]
    needs: tuple[str, ...] = ()
    # Run only when named: it needs more than the default fleet has (the reason says what).
    optional: str = ""


SCENARIOS = (
    Scenario(
        "getting-started",
        "the docs' tour: Installation, InferenceGateway, InferenceClasses, an EKS and an "
        "Existing InferenceCluster, ModelCache, ModelDeployment, ModelService",
        getting_started,
    ),
    Scenario(
        "kubectl-get",
        "kubectl get of every kind in the tour: columns filled and named once, "
        "SYNCED and READY True",
        check_columns,
        ("getting-started",),
    ),
    Scenario(
        "quiet",
        "once Ready, the fleet goes quiet: no composite changes for 20 s",
        quiet,
        ("getting-started",),
    ),
    Scenario(
        "scale", "kubectl scale modeldeployment up to 2 and down to 1", scale, ("getting-started",)
    ),
    Scenario(
        "flap",
        "the EKS cluster's managed resource not Ready for a while, then Ready: nothing deleted",
        flap,
        ("getting-started",),
    ),
    Scenario(
        "drain",
        "a NoExecute taint moves the replica to another cluster",
        drain,
        ("getting-started",),
    ),
    Scenario(
        "invalid-edit",
        "a selector that does not compile is reported; running replicas stay",
        invalid_edit,
        ("getting-started",),
    ),
    Scenario(
        "deletion",
        "deleting the ModelDeployment garbage-collects what it composed; the clusters stay "
        "held by the ModelCache",
        deletion,
        ("getting-started",),
    ),
    Scenario(
        "protection",
        "an InferenceCluster in use can't be deleted (Crossplane's ClusterUsage webhook); "
        "once nothing uses it, the refused deletion is replayed",
        protection,
        ("getting-started",),
    ),
    Scenario(
        "examples",
        "every docs manifest admitted (server-side dry run); the XRDs' negative cases refused",
        examples,
    ),
)
