"""The e2e scenarios' context: the API client, manifests, waits and reads they share.

Each scenario prints its steps as it goes (``Context.step``) and raises AssertionError,
naming what was expected and what the objects show, at the first check that does not hold.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from e2e.kube import Kube, Obj, condition_true, conditions, dig

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
        lines = [f"{obj.get('kind')} {obj_name(obj)}: {conds_summary(obj)}"]
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


def obj_name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata", {})
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta.get("name"))


def conds_summary(obj: Mapping[str, Any]) -> str:
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


def in_use(ctx: Context, cluster: str) -> str:
    """The InferenceCluster's InUse condition: who holds it, as its function says."""
    c = conditions(ctx.kube.get(MP, "InferenceCluster", cluster)).get("InUse", {})
    return f"InUse={c.get('status')}: {c.get('message')}"
