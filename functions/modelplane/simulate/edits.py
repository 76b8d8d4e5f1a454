"""What a timeline event does to a stored manifest: pure edits of plain documents.

:class:`modelplane.simulate.world.World` holds the documents and decides which one an
event touches (copying it first, so readings start afresh); these functions change it as
``kubectl edit`` would, and raise :class:`EventError` when the event does not apply.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from modelplane.domain import taints
from modelplane.simulate.events import DeviceSelectors, EditDeployment


class EventError(ValueError):
    """An event that does not apply to the fleet as it is then (an unknown cluster, say)."""


# --- clusters ---------------------------------------------------------------------------


def taint(spec: dict[str, Any], taint: taints.Taint) -> None:
    """Taint a cluster's spec, replacing a taint of the same key and effect."""
    key, effect, value = taint.key, taint.effect, taint.value
    kept = [t for t in spec.get("taints") or [] if (t.get("key"), t.get("effect")) != (key, effect)]
    spec["taints"] = [*kept, {"key": key, "effect": effect, **({"value": value} if value else {})}]


def untaint(spec: dict[str, Any], cluster: str, key: str, effect: str) -> None:
    """Remove a cluster's taints of ``key`` (of ``effect``, if given)."""
    taints = spec.get("taints") or []
    kept = [t for t in taints if not (t.get("key") == key and effect in ("", t.get("effect")))]
    if len(kept) == len(taints):
        msg = f"InferenceCluster {cluster} has no taint {key}{':' + effect if effect else ''}"
        raise EventError(msg)
    spec["taints"] = kept


def check_pool(cluster: str, spec: Mapping[str, Any], status: Mapping[str, Any], pool: str) -> None:
    """Raise :class:`EventError` unless the cluster declares or publishes ``pool``."""
    declared = {p.get("name") for p in spec.get("nodePools") or [] if isinstance(p, Mapping)}
    published = {p.get("name") for p in status.get("gpuPools") or [] if isinstance(p, Mapping)}
    names = {str(n) for n in declared | published if n}
    if pool not in names:
        msg = f"InferenceCluster {cluster} has no pool {pool} (it has: {', '.join(sorted(names)) or 'none'})"
        raise EventError(msg)


def remove_pool(spec: dict[str, Any], status: dict[str, Any], pool: str) -> None:
    """Remove a pool from what the cluster declares; publishing then keeps it draining
    while replicas are pinned there, as the InferenceCluster function does."""
    del status  # what is published follows the spec and the replicas (World._publish)
    spec["nodePools"] = [p for p in spec.get("nodePools") or [] if p.get("name") != pool]


def resize_pool(spec: dict[str, Any], status: dict[str, Any], pool: str, nodes: int) -> None:
    """Set a pool's nodes where it is declared and where it is published."""
    for declared in spec.get("nodePools") or []:
        if declared.get("name") == pool:
            # The scheduler counts maxNodeCount where a pool autoscales (decisions.md).
            declared["nodeCount"] = nodes
            if "maxNodeCount" in declared:
                declared["maxNodeCount"] = nodes
            if "minNodeCount" in declared:
                declared["minNodeCount"] = min(declared["minNodeCount"], nodes)
    for published in status.get("gpuPools") or []:
        if published.get("name") == pool:
            published["nodes"] = nodes


def set_ready(status: dict[str, Any], ready: bool) -> None:
    """Replace the cluster's Ready condition."""
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "Ready"]
    reason = "Available" if ready else "Unavailable"
    status["conditions"] = [
        *conditions,
        {"type": "Ready", "status": "True" if ready else "False", "reason": reason},
    ]


def counted(doc: dict[str, Any], capacity: str | None) -> dict[str, Any]:
    """A cluster with every published pool counted as ``capacity`` (None: as published)."""
    status = doc.get("status")
    if capacity is None or not isinstance(status, dict) or not status.get("gpuPools"):
        return doc
    pools = []
    for published in status["gpuPools"]:
        if not isinstance(published, Mapping):
            pools.append(published)
            continue
        pool = {k: v for k, v in published.items() if k != "capacity"}
        if capacity == "Devices":  # published as the InferenceCluster function does
            pool["capacity"] = capacity
        pools.append(pool)
    return {**doc, "status": {**status, "gpuPools": pools}}


# --- deployments ------------------------------------------------------------------------


def edit_deployment(doc: Mapping[str, Any], edit: EditDeployment) -> dict[str, Any]:
    """Return a copy of a ModelDeployment with the edit applied."""
    found = copy.deepcopy(dict(doc))
    spec = found.setdefault("spec", {})
    template = spec.setdefault("template", {}).setdefault("spec", {})
    if edit.replicas is not None:
        spec["replicas"] = edit.replicas
    if edit.sets_cluster_selector:
        if edit.cluster_selector:
            template["clusterSelector"] = {"matchLabels": dict(edit.cluster_selector)}
        else:
            template.pop("clusterSelector", None)
    if edit.tolerations is not None:
        template["tolerations"] = [dict(t) for t in edit.tolerations]
    engines = {e.get("name"): e for e in template.get("engines") or [] if isinstance(e, dict)}
    for engine, copies in edit.copies:
        _engine(engines, engine)["copies"] = copies
    for selectors in edit.device_selectors:
        _device(_engine(engines, selectors.engine), selectors)["selectors"] = [
            {"cel": c} for c in selectors.cel
        ]
    if edit.image is not None:
        _set_image(template, edit.image)
    return found


def _set_image(template: dict[str, Any], image: str) -> None:
    """Set the engine container's image of every member of every engine (a template edit)."""
    for engine in template.get("engines") or ():
        for member in engine.get("members") or ():
            pod = (member.get("template") or {}).get("spec") or {}
            for container in pod.get("containers") or ():
                if container.get("name") == "engine":
                    container["image"] = image


def images(manifest: Mapping[str, Any]) -> set[str]:
    """The images a replica's engine containers run."""
    return {
        str(c.get("image"))
        for e in (manifest.get("spec") or {}).get("engines") or ()
        for m in e.get("members") or ()
        for c in ((m.get("template") or {}).get("spec") or {}).get("containers") or ()
    }


def _engine(engines: Mapping[Any, dict[str, Any]], name: str) -> dict[str, Any]:
    if name not in engines:
        have = ", ".join(sorted(str(e) for e in engines)) or "none"
        msg = f"the deployment has no engine {name} (it has: {have})"
        raise EventError(msg)
    return engines[name]


def _device(engine: dict[str, Any], edit: DeviceSelectors) -> dict[str, Any]:
    for member in engine.get("members") or []:
        if member.get("role") != edit.role:
            continue
        for device in (member.get("nodeSelector") or {}).get("devices") or []:
            if device.get("name") == edit.device:
                found: dict[str, Any] = device
                return found
    msg = f"engine {edit.engine} has no {edit.role} member with a device request {edit.device}"
    raise EventError(msg)


def known(store: Mapping[Any, Any]) -> str:
    """Name what the fleet has of a kind, for a message about one it lacks."""
    names = sorted("/".join(k) if isinstance(k, tuple) else str(k) for k in store)
    shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    return f" (the fleet has: {shown or 'none'})"
