"""The settled request of every kind the registry serves: reconciled in process until every
composed resource reports healthy (:mod:`tests.inprocess`), so it carries observed composed
resources and answered requirements. ``test_bad_input.py`` mutates these."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import kit

from tests import inprocess as loop
from tests import setups
from tests.compose.deployments import other_replica
from tests.inprocess import Doc, Observed, Store
from tests.requests import request

PLATFORMS = "examples/getting-started/build-the-platform"


@dataclass
class Settled:
    """A kind's request once everything it composed reports healthy."""

    xr: Doc
    observed: Observed
    required: dict[str, list[Doc]]

    def request(self) -> fnv1.RunFunctionRequest:
        req = request(self.xr, observed=self.observed, required=self.required)
        for name in self.required:
            req.required_resources[name].SetInParent()  # answered, even when empty
        return req


def _settle(xr: Doc, store: Store) -> Settled:
    observed, rsp = loop.settle(xr, store)
    composite = kit.struct_to_dict(rsp.desired.composite.resource)
    xr = {**xr, "status": {**(xr.get("status") or {}), **(composite.get("status") or {})}}
    required = {name: store.select(sel) for name, sel in rsp.requirements.resources.items()}
    return Settled(xr, observed, required)


def _platform(cloud: str) -> tuple[Doc, Store]:
    docs = loop.load(f"{PLATFORMS}/{cloud}/platform.yaml")
    return loop.find(docs, "InferenceCluster"), Store([loop.find(docs, "InferenceClass")])


def _composed(cloud: str, kind: str) -> Settled:
    """A composite exactly as a settled InferenceCluster composes it."""
    parent = _settle(*_platform(cloud))
    xr = next(o for o in parent.observed.values() if o["kind"] == kind)
    xr = {k: v for k, v in xr.items() if k != "status"}
    return _settle(xr, Store())


def _inference_class() -> Settled:
    docs = loop.load("examples/platform/inference-class/inference-class-eks-l4.yaml")
    return _settle(loop.find(docs, "InferenceClass"), Store())


def _inference_cluster() -> Settled:
    return _settle(*_platform("eks"))


def _from(setup: Callable[[], setups.Setup]) -> Callable[[], Settled]:
    """Settle one of the shared setups (``tests/setups.py``)."""

    def settle() -> Settled:
        built = setup()
        return _settle(built.xr, built.store)

    return settle


def _deployment() -> Settled:
    """The getting-started deployment, its replicas Ready and another team's beside them."""
    xr = loop.find(loop.load("examples/getting-started/model-deployment.yaml"), "ModelDeployment")
    cluster = loop.find(loop.load(setups.FLEET_CLUSTER), "InferenceCluster")
    cluster["status"]["gpuPools"][0]["nodes"] = 4  # room for theirs and ours
    pool = cluster["status"]["gpuPools"][0]["name"]
    store = Store([cluster, other_replica("theirs", cluster["metadata"]["name"], pool)])
    first = _settle(xr, store)
    store.objects += [o for o in first.observed.values() if o["kind"] == "ModelReplica"]
    return _settle(xr, store)


SETUPS: dict[str, Callable[[], Settled]] = {
    "AKSCluster": lambda: _composed("aks", "AKSCluster"),
    "EKSCluster": lambda: _composed("eks", "EKSCluster"),
    "GKECluster": lambda: _composed("gke", "GKECluster"),
    "InferenceClass": _inference_class,
    "InferenceCluster": _inference_cluster,
    "InferenceGateway": _from(setups.gateway),
    "ModelCache": _from(setups.cache),
    "ModelDeployment": _deployment,
    "ModelEndpoint": _from(setups.endpoint),
    "ModelReplica": _from(setups.replica),
    "ModelService": _from(setups.service),
    "NebiusCluster": lambda: _composed("nebius", "NebiusCluster"),
    "ServingStack": lambda: _composed("eks", "ServingStack"),
    "VultrCluster": lambda: _composed("vultr", "VultrCluster"),
}


@functools.cache
def settled(kind: str) -> Settled:
    return SETUPS[kind]()
