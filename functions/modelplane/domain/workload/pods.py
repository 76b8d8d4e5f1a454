"""Shape a member's pod template into the pod Modelplane runs.

What the user wrote passes through verbatim (image, command, args, env with
``valueFrom``, imagePullSecrets, labels, annotations and every other pod field);
Modelplane only adds to it:

- ``nodeSelector`` ``modelplane.ai/pool`` and a toleration for ``nvidia.com/gpu``;
- for a member with device requests, the pod's DRA claim and the ``engine`` container's
  ``resources.claims`` entry for it;
- a memory-backed ``/dev/shm`` for the engine;
- on serving pods, the engine's port and a ``GET /health`` readiness probe timed for
  engines that load large weights (no liveness probe: a pod is never restarted for
  taking long to load);
- on gang pods, ``MODELPLANE_LEADER_ADDRESS`` and ``MODELPLANE_RANK`` ahead of the
  user's env in every container;
- with a ModelCache, its PVC at ``/mnt/models``, and ``--model=/mnt/models`` when the
  engine has no ``command`` and no ``--model`` argument;
- for a PrefillDecode engine, the NIXL side channel (``VLLM_NIXL_SIDE_CHANNEL_HOST`` and
  ``VLLM_NIXL_SIDE_CHANNEL_PORT``, and that port on the engine), and on decode pods
  llm-d's disaggregation sidecar, which takes the engine port (with its own ``/health``
  probe) and forwards to the engine on 8001.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelplane.domain import api
from modelplane.domain.workload import names

ENGINE_CONTAINER = "engine"
ENGINE_PORT = 8000
DECODE_ENGINE_PORT = 8001
"""A decode engine listens here; the routing sidecar owns ENGINE_PORT in front of it."""
HEALTH_PATH = "/health"
CACHE_MOUNT = "/mnt/models"
CLAIM = "devices"
"""The name of the pod's resource claim, which the engine container's claims entry names."""
SHM_PATH = "/dev/shm"
SHM_VOLUME = "modelplane-shm"
CACHE_VOLUME = "modelplane-model-cache"
GPU_TOLERATION: Mapping[str, str] = {
    "effect": "NoSchedule",
    "key": api.GPU_TAINT,
    "operator": "Exists",
}
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
LEADER_ADDRESS_ENV = "MODELPLANE_LEADER_ADDRESS"
RANK_ENV = "MODELPLANE_RANK"
NIXL_HOST_ENV = "VLLM_NIXL_SIDE_CHANNEL_HOST"
NIXL_PORT_ENV = "VLLM_NIXL_SIDE_CHANNEL_PORT"
NIXL_PORT = 5600
"""vLLM's NIXL side-channel port (its default), set explicitly and declared on the engine
so the peer engine's handshake has a named, stable port to reach."""
NIXL_PORT_NAME = "nixl"

READINESS_TIMING: Mapping[str, int] = {
    "failureThreshold": 3,
    "initialDelaySeconds": 30,
    "periodSeconds": 10,
    "timeoutSeconds": 5,
}
"""How the engine's readiness is probed. A readiness probe never restarts a pod, so an
engine may take as long as its weights need to load (minutes for the largest models);
the delay spares the first probes, and the timeout tolerates a busy engine's slow
``/health`` without marking it unready."""

ROUTING_SIDECAR = "routing-sidecar"
ROUTING_SIDECAR_IMAGE = "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.9.0"
"""llm-d's disaggregation sidecar (the llm-d router's, v0.9.0, matching the endpoint
picker); its flags below are the ones this release takes (it has no
``--model-server-port`` yet: the engine port is ``--vllm-port``)."""


class MissingEngineContainerError(ValueError):
    """A member's pod template has no container named ``engine``."""


@dataclass(frozen=True)
class PodShape:
    """What Modelplane adds to one member's pods.

    Attributes:
        labels: The managed labels of the pod (they win over the template's).
        pool: The node pool the pod is pinned to.
        claim_template: The member's ResourceClaimTemplate, None when it claims nothing.
        serving: The pod serves the API (a Standalone or Leader pod).
        engine_port: Where the engine container listens.
        gang: The pod is part of a LeaderWorkerSet.
        nixl: The engine is one half of a PrefillDecode pair.
        routing_sidecar: Put llm-d's routing sidecar in front of the engine.
        cache_claim: The ModelCache PVC to mount, if any.
    """

    labels: Mapping[str, str]
    pool: str
    claim_template: str | None = None
    serving: bool = True
    engine_port: int = ENGINE_PORT
    gang: bool = False
    nixl: bool = False
    routing_sidecar: bool = False
    cache_claim: str | None = None


def pod_template(template: Mapping[str, Any], shape: PodShape) -> dict[str, Any]:
    """Return the member's pod template with everything Modelplane adds.

    Args:
        template: The member's pod template (``metadata`` and ``spec``), left unchanged.
        shape: What to add.

    Raises:
        MissingEngineContainerError: The template has no container named ``engine``.
    """
    metadata = dict(copy.deepcopy(template.get("metadata") or {}))
    spec = dict(copy.deepcopy(template.get("spec") or {}))
    containers = [dict(c) for c in spec.get("containers") or []]
    if not any(c.get("name") == ENGINE_CONTAINER for c in containers):
        msg = f"the pod template has no container named {ENGINE_CONTAINER!r}"
        raise MissingEngineContainerError(msg)
    engine = next(c for c in containers if c.get("name") == ENGINE_CONTAINER)
    shm = not any(m.get("mountPath") == SHM_PATH for m in engine.get("volumeMounts") or [])
    labels = {**(metadata.get("labels") or {}), **shape.labels}
    metadata["labels"] = dict(sorted(labels.items()))
    spec["containers"] = _containers(containers, shape, shm=shm)
    spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), names.LABEL_POOL: shape.pool}
    spec["tolerations"] = _with(spec.get("tolerations"), dict(GPU_TOLERATION))
    spec["volumes"] = _volumes(spec.get("volumes"), shape, shm=shm)
    if shape.claim_template:
        claim = {"name": CLAIM, "resourceClaimTemplateName": shape.claim_template}
        spec["resourceClaims"] = _with(spec.get("resourceClaims"), claim)
    return {"metadata": metadata, "spec": spec}


def has_model_argument(args: Sequence[str]) -> bool:
    """Tell whether ``args`` name a model with ``--model`` (not ``--model-...`` flags)."""
    return any(arg == "--model" or arg.startswith("--model=") for arg in args)


def _containers(
    containers: list[dict[str, Any]], shape: PodShape, *, shm: bool
) -> list[dict[str, Any]]:
    shaped = []
    for container in containers:
        if shape.gang:
            container["env"] = [*_gang_env(), *(container.get("env") or [])]
        is_engine = container.get("name") == ENGINE_CONTAINER
        shaped.append(_engine(container, shape, shm=shm) if is_engine else container)
    if shape.routing_sidecar:
        shaped.append(_routing_sidecar(shape))
    return shaped


def _engine(container: dict[str, Any], shape: PodShape, *, shm: bool) -> dict[str, Any]:
    env = list(container.get("env") or [])
    if shape.nixl:
        at = len(_gang_env()) if shape.gang else 0  # after the gang's, ahead of the user's
        nixl = [
            _field_env(NIXL_HOST_ENV, "status.podIP"),
            {"name": NIXL_PORT_ENV, "value": str(NIXL_PORT)},
        ]
        given = {e.get("name") for e in env}
        env[at:at] = [e for e in nixl if e["name"] not in given]
    if env:
        container["env"] = env
    if shape.cache_claim:
        args = list(container.get("args") or [])
        if not container.get("command") and not has_model_argument(args):
            container["args"] = [f"--model={CACHE_MOUNT}", *args]
    mounts = list(container.get("volumeMounts") or [])
    if shm:
        mounts.append({"mountPath": SHM_PATH, "name": SHM_VOLUME})
    if shape.cache_claim:
        mounts.append({"mountPath": CACHE_MOUNT, "name": CACHE_VOLUME})
    container["volumeMounts"] = mounts
    if shape.serving:
        _serve(container, shape.engine_port)
    if shape.nixl:
        _declare_port(container, NIXL_PORT, NIXL_PORT_NAME)
    if shape.claim_template:
        resources = dict(container.get("resources") or {})
        resources["claims"] = _with(resources.get("claims"), {"name": CLAIM})
        container["resources"] = resources
    return container


def _serve(container: dict[str, Any], port: int) -> None:
    _declare_port(container, port)
    container.setdefault("readinessProbe", _health_probe(port))


def _health_probe(port: int) -> dict[str, Any]:
    return {"httpGet": {"path": HEALTH_PATH, "port": port}, **READINESS_TIMING}


def _declare_port(container: dict[str, Any], port: int, name: str | None = None) -> None:
    """Add ``port`` to the container's ports unless it (or its name) is there already."""
    ports = list(container.get("ports") or [])
    taken = any(p.get("containerPort") == port or (name and p.get("name") == name) for p in ports)
    if not taken:
        ports.append({"containerPort": port, **({"name": name} if name else {}), "protocol": "TCP"})
    container["ports"] = ports


def _gang_env() -> list[dict[str, Any]]:
    # LeaderWorkerSet puts its own LWS_* variables first in every container, so the
    # leader's address can be expanded from them; the rank is the pod's worker index.
    return [
        {"name": LEADER_ADDRESS_ENV, "value": "$(LWS_LEADER_ADDRESS)"},
        _field_env(RANK_ENV, f"metadata.labels['{LWS_WORKER_INDEX_LABEL}']"),
    ]


def _field_env(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def _routing_sidecar(shape: PodShape) -> dict[str, Any]:
    return {
        "args": [
            f"--port={ENGINE_PORT}",
            f"--vllm-port={shape.engine_port}",
            "--kv-connector=nixlv2",
            # The gateway and the endpoint picker reach it over plain HTTP.
            "--secure-proxy=false",
        ],
        "image": ROUTING_SIDECAR_IMAGE,
        "name": ROUTING_SIDECAR,
        "ports": [{"containerPort": ENGINE_PORT, "protocol": "TCP"}],
        # The sidecar answers /health itself; the engine behind it has its own probe.
        "readinessProbe": {
            "httpGet": {"path": HEALTH_PATH, "port": ENGINE_PORT},
            "periodSeconds": 10,
            "timeoutSeconds": 5,
        },
    }


def _volumes(
    volumes: Sequence[Mapping[str, Any]] | None, shape: PodShape, *, shm: bool
) -> list[Any]:
    shaped: list[Any] = list(volumes or [])
    if shm:  # engines share tensors between processes through /dev/shm
        shaped.append({"emptyDir": {"medium": "Memory"}, "name": SHM_VOLUME})
    if shape.cache_claim:
        claim = {"claimName": shape.cache_claim}
        shaped.append({"name": CACHE_VOLUME, "persistentVolumeClaim": claim})
    return shaped


def _with(items: Sequence[Any] | None, item: Any) -> list[Any]:
    """Return ``items`` with ``item`` appended unless an equal one is already there."""
    present = list(items or [])
    return present if item in present else [*present, item]
