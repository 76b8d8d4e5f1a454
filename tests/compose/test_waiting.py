"""Already composed, then waiting: for every kind, nothing that runs is ever dropped.

Each case reconciles a composite until it settles (every composed resource reported
healthy), then makes the function unable to compose anew: a bad edit, a dependency
deleted, a dependency that flaps (Ready=False, or a status field gone for a moment).
The next answer must compose again everything that runs, and say why it waits; or be
Fatal, which makes Crossplane apply nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import kit

from tests import inprocess as loop
from tests import setups
from tests.inprocess import Doc, Observed, Store
from tests.requests import conditions
from tests.setups import Setup

Edit = Callable[[Doc, Store, Observed], None]


def _set(path: str, value: object) -> Edit:
    """Set a field of the composite (dotted path; list indexes as numbers)."""

    def edit(xr: Doc, _: Store, __: Observed) -> None:
        *parents, last = path.split(".")
        node: object = xr
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]  # type: ignore[index]
        if value is None:
            node.pop(last)  # type: ignore[attr-defined]
        else:
            node[last] = value  # type: ignore[index]

    return edit


def _selector(cel: str) -> Edit:
    path = "spec.template.spec.engines.0.members.0.nodeSelector.devices.0.selectors"
    return _set(path, [{"cel": cel}])


def _empty_store(_: Doc, store: Store, __: Observed) -> None:
    store.objects.clear()


def _remove(kind: str) -> Edit:
    def edit(_: Doc, store: Store, __: Observed) -> None:
        store.objects = [o for o in store.objects if o["kind"] != kind]

    return edit


def _store_status(kind: str, *path: str) -> Edit:
    def edit(_: Doc, store: Store, __: Observed) -> None:
        for obj in store.objects:
            if obj["kind"] == kind:
                loop.drop_status(obj, *path)

    return edit


def _observed_status(key: str, *path: str) -> Edit:
    def edit(_: Doc, __: Store, observed: Observed) -> None:
        loop.drop_status(observed[key], *path)

    return edit


def _unready(*keys: str) -> Edit:
    def edit(_: Doc, __: Store, observed: Observed) -> None:
        for key in keys or tuple(observed):
            loop.unready(observed, key)

    return edit


CASES = [
    # ModelReplica: its cluster, its provider config, its spec.
    ("ModelReplica", setups.replica, "cluster deleted", _empty_store),
    ("ModelReplica", setups.replica, "provider config withdrawn", _store_status("InferenceCluster", "providerConfigRef")),
    ("ModelReplica", setups.replica, "invalid spec", _set("spec.engines.0.members.0.role", "Boss")),
    ("ModelReplica", setups.replica, "every Object flaps", _unready()),
    # ModelCache: its spec, its cluster's provider config and storage class.
    ("ModelCache", setups.cache, "invalid spec", _set("spec.huggingFace", None)),
    ("ModelCache", setups.cache, "cluster status flaps", _store_status("InferenceCluster", "providerConfigRef")),
    ("ModelCache", setups.cache, "storage class flaps", _store_status("InferenceCluster", "cache")),
    # ServingStack: its spec, its components.
    ("ServingStack", setups.stack, "invalid spec", _set("spec.cloud", "Mars")),
    ("ServingStack", setups.stack, "every component flaps", _unready()),
    # ModelEndpoint: its URL.
    ("ModelEndpoint", setups.endpoint, "invalid URL", _set("spec.url", "ftp://api.example.com/")),
    # InferenceCluster: its cloud cluster flaps, its class disappears.
    ("InferenceCluster", setups.inference_cluster, "cloud cluster's kubeconfig gone", _observed_status("cluster", "kubeconfigSecretRef")),
    ("InferenceCluster", setups.inference_cluster, "cloud cluster not Ready", _unready("cluster")),
    ("InferenceCluster", setups.inference_cluster, "serving stack flaps", _observed_status("serving-stack", "gateway")),
    ("InferenceCluster", setups.inference_cluster, "class deleted", _empty_store),
    # The clouds: what they gate on flaps.
    ("EKSCluster", lambda: setups.cloud_cluster(setups.GETTING_STARTED[0]), "ClusterAuth not Ready", _unready("cluster-auth")),
    ("EKSCluster", lambda: setups.cloud_cluster(setups.GETTING_STARTED[0]), "file system id gone", _observed_status("efs", "atProvider", "id")),
    ("GKECluster", lambda: setups.cloud_cluster("examples/getting-started/build-the-platform/gke/platform.yaml"), "account email gone", _observed_status("service-account", "atProvider", "email")),
    ("GKECluster", lambda: setups.cloud_cluster("examples/getting-started/build-the-platform/gke/platform.yaml"), "cluster not Ready", _unready("cluster")),
    ("VultrCluster", lambda: setups.cloud_cluster("examples/getting-started/build-the-platform/vultr/platform.yaml"), "cluster id gone", _observed_status("cluster", "atProvider", "id")),
    ("AKSCluster", lambda: setups.cloud_cluster("examples/getting-started/build-the-platform/aks/platform.yaml"), "cluster not Ready", _unready("cluster")),
    ("NebiusCluster", setups.nebius_cluster, "cluster not Ready", _unready("cluster")),
    ("NebiusCluster", setups.nebius_cluster, "provider config deleted", _empty_store),
    # ModelDeployment: edits that cannot be satisfied, and a fleet that flaps.
    ("ModelDeployment", setups.deployment, "selector does not compile", _selector("device.capacity[")),
    ("ModelDeployment", setups.deployment, "selector fails at evaluation", _selector('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("1.5.5Gi")) >= 0')),
    ("ModelDeployment", setups.deployment, "semver fails at evaluation", _selector('semver("1.2") == semver("1.2.0")')),
    ("ModelDeployment", setups.deployment, "count no pool has", _set("spec.template.spec.engines.0.members.0.nodeSelector.devices.0.count", 100)),
    ("ModelDeployment", setups.deployment, "clusterSelector matches nothing", _set("spec.template.spec.clusterSelector", {"matchLabels": {"tier": "none"}})),
    ("ModelDeployment", setups.deployment, "cluster pools gone", _store_status("InferenceCluster", "gpuPools")),
    ("ModelDeployment", setups.deployment, "cluster gateway flaps", _store_status("InferenceCluster", "gateway")),
    ("ModelDeployment", setups.deployment, "every replica flaps", _unready()),
    # ModelService: its gateway and endpoints flap.
    ("ModelService", setups.service, "gateway address flaps", _store_status("InferenceGateway", "address")),
    # InferenceGateway: its releases flap.
    ("InferenceGateway", setups.gateway, "every step flaps", _unready()),
]  # fmt: skip


def _settled(setup: Setup) -> tuple[Doc, Store, Observed]:
    """Reconcile until it settles, with composed composites visible in the store."""
    xr, store = copy.deepcopy(setup.xr), copy.deepcopy(setup.store)
    observed: Observed = {}
    for _ in range(6):
        rsp = loop.reconcile(xr, store, observed)
        composite = kit.struct_to_dict(rsp.desired.composite.resource)
        xr["status"] = {**(xr.get("status") or {}), **(composite.get("status") or {})}
        now = loop.observe(rsp, observed)
        # What a composite composes is in the fleet others read (a deployment's replicas).
        known = {(o["kind"], o["metadata"]["name"]) for o in now.values()}
        store.objects = [
            o for o in store.objects if (o["kind"], o["metadata"]["name"]) not in known
        ]
        store.objects.extend(copy.deepcopy(list(now.values())))
        if now == observed:
            break
        observed = now
    return xr, store, observed


@pytest.mark.parametrize(
    ("kind", "setup", "edit"),
    [pytest.param(kind, setup, edit, id=f"{kind}: {what}") for kind, setup, what, edit in CASES],
)
def test_nothing_that_runs_is_dropped(kind: str, setup: Callable[[], Setup], edit: Edit) -> None:
    xr, store, observed = _settled(setup())
    assert xr["kind"] == kind
    assert observed, f"{kind} composed nothing to keep: the case tests nothing"
    edit(xr, store, observed)
    rsp = loop.reconcile(xr, store, observed)
    if kit.is_fatal(rsp):
        return  # Crossplane applies nothing, so nothing is dropped
    kept = loop.desired(rsp)
    dropped = sorted(set(observed) - set(kept))
    assert not dropped, f"{kind} dropped {dropped}"
    for key, manifest in kept.items():
        if key in observed and manifest != kit.unchanged(observed[key]):
            # Composed anew: only what it composes normally may change.
            assert manifest["kind"] == observed[key]["kind"], key
    unset = [k for k, r in rsp.desired.resources.items() if r.ready == fnv1.READY_UNSPECIFIED]
    assert not unset, f"readiness left unset for {unset}"


@pytest.mark.parametrize(
    ("kind", "setup", "edit"),
    [
        pytest.param(kind, setup, edit, id=f"{kind}: {what}")
        for kind, setup, what, edit in CASES
        if "flaps" not in what and "not Ready" not in what and "gone" not in what
    ],
)
def test_a_composite_that_waits_says_why(kind: str, setup: Callable[[], Setup], edit: Edit) -> None:
    xr, store, observed = _settled(setup())
    edit(xr, store, observed)
    rsp = loop.reconcile(xr, store, observed)
    said = [c for c in conditions(rsp).values() if c[0] == "False"]
    warned = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING]
    assert said or kit.is_fatal(rsp), f"{kind}: no condition says why it waits"
    assert warned or kit.is_fatal(rsp), f"{kind}: no Warning event"


def test_a_deployment_edit_no_pool_fits_keeps_every_running_replica() -> None:
    xr, store, observed = _settled(setups.deployment())
    running = sorted(k for k, o in observed.items() if o["kind"] == "ModelReplica")
    assert running
    _set("spec.template.spec.engines.0.members.0.nodeSelector.devices.0.count", 100)(
        xr, store, observed
    )
    rsp = loop.reconcile(xr, store, observed)
    kept = loop.desired(rsp)
    assert [k for k in running if kept.get(k) == kit.unchanged(observed[k])] == running
    scheduled = conditions(rsp)["ReplicasScheduled"]
    assert scheduled[0] == "False"
    assert "keeping" in scheduled[2]
    assert "running until replacements are Ready" in scheduled[2]


def test_a_deleted_cluster_takes_its_replicas_with_it() -> None:
    # The docs' rule, not a wait: replicas on a deleted cluster stop being emitted.
    xr, store, observed = _settled(setups.deployment())
    _remove("InferenceCluster")(xr, store, observed)
    rsp = loop.reconcile(xr, store, observed)
    assert loop.desired(rsp) == {}
    assert conditions(rsp)["ReplicasScheduled"][:2] == ("False", "NoClusters")
    warned = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING]
    assert any("its cluster no longer exists" in m for m in warned)
