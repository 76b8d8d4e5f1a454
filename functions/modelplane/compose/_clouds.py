"""Read a cloud cluster composite (EKS, GKE, AKS, Nebius, Vultr) into the clouds' plain Cluster.

Every cloud composite has the same spec shape: a location (``region``, AKS' ``location``,
none on Nebius), ``kubernetesVersion``, ``credentials`` and ``nodePools``, each pool a
``role`` (``GPU`` by default, or the one ``System`` pool), its node counts, its shape
fields, ``gpu`` and, per cloud, ``zones``, ``fabric`` and ``capacityBlock``. The XRD's
defaults are applied by the API server; they are applied here again, so a composite
read straight from its composer (in a test, or one call early) reads the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from crossplane.function import response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.domain import teardown
from modelplane.domain.clouds import common

CREDENTIALS = "credentials"
"""The requirement under which the cluster's provider config arrives."""
RELEASED = "what the spec no longer names: a removed pool"

SYSTEM_NODES = 1
SYSTEM_DISK_GB = 100


@dataclass(frozen=True)
class Shape:
    """How one cloud's composite names what it reads.

    Attributes:
        machine: The pools' node-shape field, e.g. ``instanceType``.
        system_machine: The system pool's node shape when the spec declares no System pool.
        system_name: The system pool's name where the cloud shows one, if undeclared.
        version: The Kubernetes version when the spec names none (None: the cloud's).
        location: The location field (``region``, ``location``), or None (Nebius).
        preset: The pools' preset field (Nebius' ``preset``), if any.
        system_preset: The system pool's preset when undeclared, if any.
    """

    machine: str
    system_machine: str
    system_name: str = "system"
    version: str | None = None
    location: str | None = "region"
    preset: str | None = None
    system_preset: str | None = None


class Composite(Protocol):
    """A cloud composite's generated model: validating it yields its spec."""

    spec: Any

    @classmethod
    def model_validate(cls, obj: Any) -> Composite: ...


def read(
    rsp: fnv1.RunFunctionResponse, xr: Mapping[str, Any], model: type[Composite], shape: Shape
) -> common.CloudCluster | None:
    """Return the cluster the composite asks for, or answer Fatal and return None.

    A malformed spec raises (the kit answers Fatal naming the field); a cluster the cloud
    cannot build is answered here. Fatal keeps every resource already composed: a bad
    edit never tears a cluster down.
    """
    name = kit.meta(xr).name
    try:
        return read_cluster(xr, model.model_validate(xr).spec, shape)
    except common.ClusterError as exc:
        cannot(rsp, model.__name__, name, exc)
        return None


def cannot(rsp: fnv1.RunFunctionResponse, kind: str, name: str, exc: Exception) -> None:
    """Answer Fatal: the cluster cannot be composed as its spec stands."""
    response.fatal(rsp, f"cannot compose {kind} {name}: {exc}")


def credentials_read(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    cluster: common.CloudCluster,
    api_version: str,
) -> bool:
    """Require the provider config the spec names; tell whether Crossplane answered."""
    config = cluster.provider_config
    namespace = cluster.namespace if config.kind == "ProviderConfig" else None
    kit.require(
        rsp, CREDENTIALS, api_version, config.kind, match_name=config.name, namespace=namespace
    )
    return kit.was_required(req, CREDENTIALS)


def compose_all(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    manifests: Mapping[str, Mapping[str, Any]],
    kept: Iterable[str],
) -> None:
    """Compose the manifests in key order, and hold those of ``kept`` not composed now:
    what waited for the cluster (its kubeconfig, an identity) once, stays while it flaps.
    Then the Usages that tear them down in order (:func:`teardown.cloud_edges`)."""
    for key, manifest in sorted(manifests.items()):
        kit.compose(rsp, key, manifest)
    kit.hold(req, rsp, kept)
    kit.order_teardown(req, rsp, teardown.cloud_edges)


def kubeconfig_condition(rsp: fnv1.RunFunctionResponse, ready: bool, what: str) -> None:
    """Say whether the kubeconfig Secret is written (``what``: the cloud's cluster)."""
    if ready:
        kit.set_condition(rsp, "KubeconfigReady", True, "Available", "kubeconfig Secret written")
    else:
        kit.set_condition(rsp, "KubeconfigReady", False, "WaitingForCluster", f"waiting for {what}")


def read_cluster(xr: Mapping[str, Any], spec: Any, shape: Shape) -> common.CloudCluster:
    """Return the cluster an already validated composite asks for.

    Args:
        xr: The composite, as a dict.
        spec: Its validated model's spec (None raises :class:`common.ClusterError`).
        shape: How the cloud's composite names things.
    """
    if spec is None:
        msg = "spec is missing"
        raise common.ClusterError(msg)
    identity = kit.meta(xr)
    raw = kit.mapping(xr, "spec")
    credentials = kit.mapping(raw, "credentials")
    pools = kit.maps(raw, "nodePools")
    systems = [p for p in pools if p.get("role") == "System"]
    return common.CloudCluster(
        name=identity.name,
        namespace=identity.namespace,
        region=kit.text(raw, shape.location) if shape.location else "",
        version=kit.text(raw, "kubernetesVersion") or shape.version,
        provider_config=common.ProviderConfig(
            kind=kit.text(credentials, "kind") or common.ProviderConfig.kind,
            name=kit.text(credentials, "name") or common.ProviderConfig.name,
        ),
        system=_system(systems[0] if systems else None, shape),
        pools=tuple(read_pool(p, shape) for p in pools if p.get("role", "GPU") != "System"),
    )


def _system(raw: Mapping[str, Any] | None, shape: Shape) -> common.SystemPool:
    if raw is None:
        return common.SystemPool(
            name=shape.system_name,
            machine_type=shape.system_machine,
            node_count=SYSTEM_NODES,
            disk_size_gb=SYSTEM_DISK_GB,
            preset=shape.system_preset,
        )
    return common.SystemPool(
        name=kit.text(raw, "name") or shape.system_name,
        machine_type=kit.text(raw, shape.machine) or shape.system_machine,
        node_count=_count(raw.get("nodeCount"), SYSTEM_NODES),
        disk_size_gb=_count(raw.get("diskSizeGb"), SYSTEM_DISK_GB),
        preset=(kit.text(raw, shape.preset) or shape.system_preset) if shape.preset else None,
    )


def read_pool(raw: Mapping[str, Any], shape: Shape) -> common.GpuPool:
    """Return one GPU pool of the composite's spec."""
    nodes = _count(raw.get("nodeCount"), 1)
    gpu = kit.mapping(raw, "gpu")
    fabric = raw.get("fabric")
    # AKS spells the fabric as a string; EKS and Nebius as {type, infiniband: {fabric}}.
    fabric_type = fabric if isinstance(fabric, str) else kit.text(fabric, "type")
    disk = raw.get("diskSizeGb")
    return common.GpuPool(
        name=kit.text(raw, "name"),
        machine_type=kit.text(raw, shape.machine),
        node_count=nodes,
        min_node_count=_count(raw.get("minNodeCount"), nodes),
        max_node_count=_count(raw.get("maxNodeCount"), nodes),
        zones=tuple(z for z in raw.get("zones") or () if isinstance(z, str)),
        disk_size_gb=int(disk) if isinstance(disk, int | float) else None,
        accelerator_type=kit.text(gpu, "acceleratorType") or None,
        accelerator_count=_count(gpu.get("acceleratorCount"), 0),
        capacity_reservation_id=kit.text(raw, "capacityBlock", "capacityReservationId") or None,
        preset=(kit.text(raw, shape.preset) or None) if shape.preset else None,
        drivers_preset=kit.text(gpu, "driversPreset") or None,
        fabric=fabric_type or common.NO_FABRIC,
        infiniband_fabric=kit.text(fabric, "infiniband", "fabric") or None,
    )


def _count(value: Any, default: int) -> int:
    """A count that may be unset (absent or null) falls back to ``default``."""
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else default
