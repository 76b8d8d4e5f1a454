"""Reconcile one composite in process, the way Crossplane drives a function.

Each call answers the function's requirements from a store of objects (repeating the
call until its requirements settle, as Crossplane does), and what it composes can be
turned into what the API server would show on the next reconcile, with the status
fields fake providers fill. The engine-backed harness (``modelplane.dev.loop``) does the same
through Crossplane itself; this one is quick enough for table tests of every kind.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import kit, registry, runtime
from modelplane.dev import requirements
from modelplane.domain import api, routing

from tests.requests import request

ROOT = Path(__file__).resolve().parents[1]
Doc = dict[str, Any]
Observed = dict[str, Doc]

# Status a provider or a controller writes, by kind: what our functions read.
_CONDITIONS = ("Ready", "Synced", "Available", "Programmed", "Accepted")


def load(*paths: str) -> list[Doc]:
    """Return every YAML document of the given files under the repository root."""
    docs: list[Doc] = []
    for path in paths:
        docs.extend(d for d in yaml.safe_load_all((ROOT / path).read_text()) if d)
    return docs


def find(docs: Iterable[Doc], kind: str, name: str | None = None) -> Doc:
    """Return a deep copy of the first document of ``kind`` (and ``name``)."""
    for doc in docs:
        if doc.get("kind") == kind and (name is None or doc["metadata"]["name"] == name):
            return copy.deepcopy(doc)
    msg = f"no {kind} {name or ''} in the documents"
    raise LookupError(msg)


@dataclass
class Store:
    """The objects requirements are answered from."""

    objects: list[Doc] = field(default_factory=list)

    def select(self, selector: fnv1.ResourceSelector) -> list[Doc]:
        """Return the objects a requirement's selector matches, by name order."""
        return requirements.selected(self.objects, selector)


def reconcile(xr: Doc, store: Store, observed: Observed | None = None) -> fnv1.RunFunctionResponse:
    """Run the kind's function until its requirements settle, as Crossplane does."""

    def call(answers: Mapping[str, list[Doc]]) -> fnv1.RunFunctionResponse:
        return runtime.run(
            request(xr, observed=observed or {}, required=answers), registry.COMPOSERS
        )

    return requirements.settle(call, store.objects)[0]


def desired(rsp: fnv1.RunFunctionResponse) -> Observed:
    """Return the response's desired composed resources as plain dicts."""
    return {k: kit.struct_to_dict(v.resource) for k, v in rsp.desired.resources.items()}


def provider_status(manifest: Doc) -> Doc:
    """Return the status a provider or controller reports for a healthy ``manifest``."""
    status: Doc = {
        "conditions": [{"type": t, "status": "True", "reason": "Fake"} for t in _CONDITIONS]
    }
    kind = manifest.get("kind")
    meta = manifest.get("metadata") or {}
    name, namespace = meta.get("name", ""), meta.get("namespace", "")
    if kind in ("EKSCluster", "GKECluster", "AKSCluster", "VultrCluster", "NebiusCluster"):
        status["kubeconfigSecretRef"] = {
            "name": f"{name}-kubeconfig",
            "namespace": namespace,
            "key": "kubeconfig",
        }
    elif kind == "ServingStack":
        status["gateway"] = {"address": "203.0.113.10"}
    elif kind == "ModelEndpoint":
        status["routing"] = {"backendName": routing.backend_name(name)}
    elif kind == "ModelReplica" and (
        template := (meta.get("labels") or {}).get(api.TEMPLATE_HASH_LABEL)
    ):
        status[api.READY_TEMPLATE_FIELD] = template  # its function's, with its Ready
    elif kind == "Object":
        wrapped = copy.deepcopy((manifest.get("spec") or {}).get("forProvider", {}).get("manifest"))
        status["atProvider"] = {"manifest": wrapped or {}}
    elif kind == "Gateway":
        status["addresses"] = [{"type": "IPAddress", "value": "172.18.255.200"}]
    else:
        status["atProvider"] = {"id": f"{name}-id", "email": f"{name}@p", "project": "p"}
        if kind == "Cluster" and str(manifest.get("apiVersion", "")).startswith("eks.aws"):
            # EKS makes the cluster security group itself.
            status["atProvider"]["vpcConfig"] = {"clusterSecurityGroupId": f"{name}-sg"}
    return status


def observe(rsp: fnv1.RunFunctionResponse, previous: Observed | None = None) -> Observed:
    """Return what the API server shows after Crossplane applied the response.

    Resources composed for the first time get a healthy provider status; ones that
    existed keep theirs.
    """
    shown: Observed = {}
    for key, manifest in desired(rsp).items():
        status = ((previous or {}).get(key) or {}).get("status") or provider_status(manifest)
        shown[key] = {**manifest, "status": copy.deepcopy(status)}
    return shown


def settle(xr: Doc, store: Store, passes: int = 6) -> tuple[Observed, fnv1.RunFunctionResponse]:
    """Reconcile until nothing new is composed; return what then runs, and the last answer."""
    observed: Observed = {}
    rsp = reconcile(xr, store)
    for _ in range(passes):
        now = observe(rsp, observed)
        if now == observed:
            break
        observed = now
        composite = kit.struct_to_dict(rsp.desired.composite.resource)
        xr = {**xr, "status": {**(xr.get("status") or {}), **(composite.get("status") or {})}}
        rsp = reconcile(xr, store, observed)
    return observed, rsp


Edit = Callable[[Doc, Store, Observed], None]


def unready(observed: Observed, key: str) -> None:
    """Make an observed resource report Ready=False, as a flapping provider would."""
    for condition in observed[key]["status"]["conditions"]:
        if condition["type"] == "Ready":
            condition["status"] = "False"


def drop_status(obj: Mapping[str, Any], *path: str) -> None:
    """Remove one status field (``path`` below ``status``) from an object, in place."""
    node: Any = obj["status"]
    for part in path[:-1]:
        node = node[part]
    node.pop(path[-1], None)
