"""selectors: our CEL against Kubernetes', selector by selector, with probe pods whose
claims kube-scheduler allocates.
"""

from __future__ import annotations

import time
from typing import Any

from modelplane.domain import dra as cel
from modelplane.domain.dra import Device

from e2e.fleet import plan as fleet_plan
from e2e.fleet.context import RESOURCE, Fleet, pending, slice_device
from e2e.kube import Kube, wait_until

PROBE_NS = "fleet-probe"
PROBE_SELECTORS = (
    # the getting-started deployment's, then ones that split the fleet's classes
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0',
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
    "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('23034Mi'))",
    'device.attributes["gpu.nvidia.com"].architecture == "Ada Lovelace"',
    'device.attributes["gpu.nvidia.com"].architecture.startsWith("Hop")',
    '!("cudaComputeCapability" in device.attributes["gpu.nvidia.com"])',
    # the pools e2e/fleet/pools.yaml adds: T4 (15360Mi) below, V100 (16384Mi) at the bound
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("16Gi")) < 0',
)


def selectors(ctx: Fleet) -> None:
    """Our CEL against Kubernetes' own: for each selector and cluster, whether our
    evaluator finds a device in the cluster's ResourceSlices, and whether kube-scheduler
    allocates a claim with that selector (a probe pod), while every device is free."""
    disagree: list[str] = []
    checked = 0
    for name, kube in ctx.clusters.items():
        kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PROBE_NS}})
        devices = slice_devices(kube)
        for i, expr in enumerate(PROBE_SELECTORS):
            ours = any(cel.matches(expr, d).matched for d in devices)
            theirs = probe(kube, f"probe-{i}", expr)
            checked += 1
            verdict = "allocates" if theirs else "does not allocate"
            ctx.step(f"{name}: {expr!r}: ours {'matches' if ours else 'no match'}, "
                     f"kube-scheduler {verdict}")  # fmt: skip
            if ours != theirs:
                disagree.append(f"{name}: {expr!r}: ours {ours}, kube-scheduler {theirs}")
    ctx.stats["selector_probes"] = checked
    ctx.stats["selector_disagreements"] = len(disagree)
    print(f"  selectors: {checked} probes, {len(disagree)} disagreements with kube-scheduler")
    assert not disagree, "\n".join(disagree)


def slice_devices(kube: Kube) -> list[Device]:
    return [
        slice_device(rs["spec"]["driver"], dev)
        for rs in kube.list(RESOURCE, "ResourceSlice")
        for dev in rs["spec"].get("devices") or []
    ]


def probe(kube: Kube, name: str, expr: str) -> bool:
    """Whether kube-scheduler binds a pod claiming one device with the selector ``expr``."""
    try:
        return start_probe(kube, name, expr)
    finally:
        delete_probe(kube, name)


def start_probe(kube: Kube, name: str, expr: str, count: int = 1, pool: str = "") -> bool:
    """Create a pod claiming ``count`` devices with the selector ``expr`` (on ``pool``'s
    nodes if given); whether kube-scheduler binds it (False: it cannot allocate them)."""
    claim = {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": PROBE_NS},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.nvidia.com", "count": count,
            "selectors": [{"cel": {"expression": expr}}]}}]}},
    }  # fmt: skip
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": PROBE_NS},
        "spec": {
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
            "containers": [{"name": "probe", "image": "probe",
                            "resources": {"claims": [{"name": "gpu"}]}}],
        },
    }  # fmt: skip
    if pool:
        pod["spec"]["nodeSelector"] = {fleet_plan.POOL_LABEL: pool}
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PROBE_NS}})
    kube.create(claim)
    kube.create(pod)
    deadline = time.monotonic() + 30
    why: str | None = "not seen yet"
    while time.monotonic() < deadline:
        got = kube.get("v1", "Pod", name, PROBE_NS)
        why = pending(got) if got else "gone"
        if why is None:
            return True
        if "cannot allocate all claims" in why:
            return False
        time.sleep(0.5)
    msg = f"probe {name}: neither bound nor refused in 30s: {why}"
    raise AssertionError(msg)


def delete_probe(kube: Kube, name: str) -> None:
    kube.delete("v1", "Pod", name, PROBE_NS)
    wait_until(f"probe pod {name} gone", lambda: kube.get("v1", "Pod", name, PROBE_NS) is None, 60)
    kube.delete(RESOURCE, "ResourceClaim", name, PROBE_NS)
    wait_until(f"probe claim {name} gone",
               lambda: kube.get(RESOURCE, "ResourceClaim", name, PROBE_NS) is None, 60)  # fmt: skip
