"""The loop contract's edits: one a function cannot compose right now never lowers the
number of ModelReplicas or of their workload Objects, drops nothing the edited composite
runs, and the composite says why in a condition; one that moves a replica moves it
make-before-break (see :mod:`tests.loop.test_loop`)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pytest
from modelplane.dev.fakes.base import Key, Obj, describe, get_path
from modelplane.dev.loop.fakes import Flap
from modelplane.dev.loop.harness import ControlPlane
from modelplane.dev.loop.records import Reconciled, condition_line, history_text

from tests.loop.conftest import Converged, Fleets
from tests.loop.contract import (
    DEPLOYMENT,
    EDIT_PASSES,
    Locate,
    _admissible,
    _controller,
    _errors,
    _kind,
    _located,
    _own_replicas,
    _python_errors,
    _running,
)

pytestmark = pytest.mark.loop


# --- edits the functions cannot compose now ---------------------------------------------------


Edit = Callable[[Obj], None]


@dataclass(frozen=True)
class EditCase:
    """One edit a function cannot compose right now, or one dependency staying unready.

    Attributes:
        id: The test id.
        fleet: The converged fleet it starts from.
        target: The object edited (or flapped, with ``flap``).
        why: Words one of ``subject``'s False conditions must name (any, case-insensitive);
            empty when the function can go on composing (then ``subject`` stays Ready).
        edit: How the target is edited; None with ``flap``.
        flap: A dependency's status staying wrong for the whole run instead of an edit.
        subject: The composite that must say why (default: the target).
        pause_controller: Pause the composite that controls the target first, so the
            edit stands (a user editing a composed composite does that).
        delete: Delete the target instead (as a user would; Usages apply).
        keep_tree: Also require that nothing the subject runs is deleted (off where the
            docs say the edit removes it, e.g. a cache leaving a cluster).
        secret: Text of the edit that no condition or event may repeat (a credential).
        create: Create this object (a user's) instead of editing the target.
    """

    id: str
    fleet: str
    target: Locate
    why: tuple[str, ...]
    edit: Edit | None = None
    flap: Flap | None = None
    subject: Locate | None = None
    pause_controller: bool = False
    delete: bool = False
    keep_tree: bool = True
    secret: str = ""
    create: Callable[[ControlPlane], Obj] | None = None


def _member(obj: Obj) -> dict[str, Any]:
    member: dict[str, Any] = obj["spec"]["template"]["spec"]["engines"][0]["members"][0]
    return member


def _set_selector(cel: str) -> Edit:
    def edit(obj: Obj) -> None:
        _member(obj)["nodeSelector"]["devices"][0]["selectors"] = [{"cel": cel}]

    return edit


def _set(path: str, value: Any) -> Edit:
    """Set a dotted path (list items by index) to ``value``."""

    def edit(obj: Obj) -> None:
        *parents, last = path.split(".")
        current: Any = obj
        for step in parents:
            current = (
                current[int(step)] if isinstance(current, list) else current.setdefault(step, {})
            )
        if isinstance(current, list):
            current[int(last)] = copy.deepcopy(value)
        else:
            current[last] = copy.deepcopy(value)

    return edit


def _gang_on_two_pools(engine: dict[str, Any]) -> None:
    """Make a Standalone engine a Leader and a Worker pinned to different node pools.

    The XRD admits it; the function can't run it (an engine's members share one pool).
    """
    standalone = engine["members"][0]
    leader = {**copy.deepcopy(standalone), "role": "Leader"}
    worker = {**copy.deepcopy(standalone), "role": "Worker", "worker": {"nodes": 1}}
    worker["nodePoolName"] = f"{standalone['nodePoolName']}-other"
    engine["members"] = [leader, worker]


def _deep_replica(plane: ControlPlane, *, depth: int) -> Obj:
    """Another team's ModelReplica on the same cluster, its pod spec nested ``depth`` deep.

    The XRD admits it: a pod spec keeps unknown fields (here under ``affinity``).
    """
    mine = plane.get(_kind("ModelReplica")(plane))
    spec = copy.deepcopy(mine["spec"])
    nested: dict[str, Any] = {"leaf": "x"}
    for _ in range(depth):
        nested = {"nested": nested}
    spec["engines"][0]["members"][0]["template"].setdefault("spec", {})["affinity"] = nested
    return {
        "apiVersion": mine["apiVersion"],
        "kind": "ModelReplica",
        "metadata": {
            "name": "deep-replica",
            "namespace": "other-team",
            "labels": {"modelplane.ai/deployment": "deep", "modelplane.ai/replica-index": "0"},
        },
        "spec": spec,
    }


def _with_port(url: str, port: int) -> str:
    scheme, _, rest = url.partition("://")
    host, _, path = rest.partition("/")
    return f"{scheme}://{host.split(':')[0]}:{port}/{path}"


def _template(path: str, value: Any) -> Edit:
    return _set(f"spec.template.spec.{path}", value)


GPU_MEMORY = 'device.capacity["gpu.nvidia.com"].memory'
STAY_ALL = (DEPLOYMENT,)
FOREVER = Flap(ready=True, passes=EDIT_PASSES + 1)

EDIT_CASES = [
    # ModelDeployment: selectors that fail to compile or to evaluate, or that nothing fits.
    EditCase(
        "deployment-invalid-cel",
        "getting-started",
        DEPLOYMENT,
        ("cel", "selector", "syntax", "compile", "parse"),
        edit=_set_selector(f'{GPU_MEMORY}.compareTo(quantity("20Gi") >= 0'),
    ),
    EditCase(
        "deployment-quantity-fails-at-evaluation",
        "getting-started",
        DEPLOYMENT,
        ("1.5.5Gi", "quantity"),
        edit=_set_selector(f'{GPU_MEMORY}.compareTo(quantity("1.5.5Gi")) >= 0'),
    ),
    EditCase(
        "deployment-semver-fails-at-evaluation",
        "getting-started",
        DEPLOYMENT,
        ("semver", "1.2"),
        edit=_set_selector('semver("1.2").isGreaterThan(semver("1.0.0"))'),
    ),
    EditCase(
        "deployment-count-100-no-pool-fits",
        "getting-started",
        DEPLOYMENT,
        ("100", "fit", "capacity", "no pool", "insufficient"),
        edit=_template("engines.0.members.0.nodeSelector.devices.0.count", 100),
    ),
    EditCase(
        "deployment-cluster-selector-matches-nothing",
        "getting-started",
        DEPLOYMENT,
        ("nowhere", "clusterselector", "no cluster", "no inferencecluster"),
        edit=_template("clusterSelector", {"matchLabels": {"modelplane.ai/region": "nowhere"}}),
    ),
    EditCase(
        "deployment-missing-cache",
        "getting-started",
        DEPLOYMENT,
        ("no-such-cache",),
        edit=_template("modelCacheRef", {"name": "no-such-cache"}),
    ),
    EditCase(
        "class-shrinks-below-the-selector",
        "getting-started",
        _kind("InferenceClass"),
        ("fit", "20gi", "memory", "no pool", "capacity", "insufficient"),
        edit=_set("spec.devices.0.capacity.memory", {"value": "16Gi"}),
        subject=DEPLOYMENT,
    ),
    EditCase(
        "deployment-cache-deleted",
        "recipe-qwen3-coder",
        _kind("ModelCache"),
        ("qwen3-coder", "cache"),
        subject=_kind("ModelDeployment"),
        delete=True,
    ),
    EditCase(
        "deployment-copies-outgrow-the-pool",
        "getting-started",
        DEPLOYMENT,
        ("copies", "room", "fit", "no pool", "nodes", "over"),
        edit=_template("engines.0.copies", 2),
    ),
    EditCase(
        "foreign-replica-nested-too-deep",
        "getting-started",
        DEPLOYMENT,
        (),  # another team's unreadable replica is no reason for this one to wait
        create=lambda plane: _deep_replica(plane, depth=120),
    ),
    # InferenceCluster and its cloud cluster.
    EditCase(
        "inferencecluster-class-not-found",
        "getting-started",
        _kind("InferenceCluster"),
        ("no-such-class",),
        edit=_set("spec.nodePools.0.className", "no-such-class"),
    ),
    EditCase(
        "ekscluster-too-many-zones",
        "getting-started",
        _kind("EKSCluster"),
        ("zones",),
        edit=_set("spec.nodePools.0.zones", [f"us-east-1{z}" for z in "abcdefghi"]),
        pause_controller=True,
    ),
    # ModelReplica (its ModelDeployment paused, so the edit stands).
    EditCase(
        "replica-cluster-not-found",
        "getting-started",
        _kind("ModelReplica"),
        ("no-such-cluster",),
        edit=_set("spec.clusterName", "no-such-cluster"),
        pause_controller=True,
    ),
    EditCase(
        "replica-engine-on-two-pools",
        "getting-started",
        _kind("ModelReplica"),
        ("pool", "engine"),
        edit=lambda obj: _gang_on_two_pools(obj["spec"]["engines"][0]),
        pause_controller=True,
    ),
    EditCase(
        "replica-missing-cache",
        "getting-started",
        _kind("ModelReplica"),
        ("no-such-cache",),
        edit=_set("spec.modelCacheRef", {"name": "no-such-cache"}),
        pause_controller=True,
    ),
    EditCase(
        "replica-provider-config-pending",
        "getting-started",
        _kind("InferenceCluster"),
        ("providerconfig", "provider config"),
        flap=Flap(drop=("status.providerConfigRef",), passes=EDIT_PASSES + 1),
        subject=_kind("ModelReplica"),
    ),
    # ModelCache.
    EditCase(
        "cache-cluster-without-storage",
        "recipe-qwen3-coder",
        _kind("InferenceCluster"),
        ("storage", "rwx", "cache"),
        flap=Flap(drop=("status.cache",), passes=EDIT_PASSES + 1),
        subject=_kind("ModelCache"),
    ),
    EditCase(
        "cache-cluster-without-provider-config",
        "recipe-qwen3-coder",
        _kind("InferenceCluster"),
        (),  # the cache's Objects already name the cluster's provider config: it goes on
        flap=Flap(drop=("status.providerConfigRef",), passes=EDIT_PASSES + 1),
        subject=_kind("ModelCache"),
    ),
    EditCase(
        "cache-selector-matches-nothing",
        "recipe-qwen3-coder",
        _kind("ModelCache"),
        ("nowhere", "clusterselector", "no inferencecluster", "matches"),
        edit=_set("spec.clusterSelector", {"matchLabels": {"modelplane.ai/region": "nowhere"}}),
        keep_tree=False,  # the docs: a cluster leaving the selector loses its PVC and Job
    ),
    # Routing.
    EditCase(
        "endpoint-url-with-credentials",
        "routing-external-provider",
        _kind("ModelEndpoint", name="kimi-k2-together"),
        ("url", "credentials"),
        edit=_set("spec.url", "https://apikey:s3cr3t-t0ken@api.together.xyz/"),
        secret="s3cr3t-t0ken",
    ),
    EditCase(
        "replica-endpoint-port-out-of-range",
        "getting-started",
        _kind("ModelEndpoint"),
        ("port", "url"),
        edit=lambda obj: obj["spec"].update(url=_with_port(obj["spec"]["url"], 99999)),
        pause_controller=True,
    ),
    EditCase(
        "service-selector-matches-nothing",
        "getting-started",
        _kind("ModelService"),
        ("nowhere", "no modelendpoint", "matches"),
        edit=_set("spec.endpoints.0.selector.matchLabels", {"modelplane.ai/deployment": "nowhere"}),
    ),
]


@dataclass
class Watch:
    """What the loop runs, sampled after every reconcile."""

    replicas: int
    objects: int
    replica_keys: set[Key]
    object_keys: set[Key]
    drops: list[str] = field(default_factory=list)

    def __call__(self, plane: ControlPlane, result: Reconciled) -> None:
        replicas, objects = _running(plane)
        where = f"pass {len(plane.history) + 1}, reconciling {describe(result.key)}"
        if len(replicas) < self.replicas:
            gone = sorted(self.replica_keys - set(replicas))
            self.drops.append(
                f"{where}: {len(replicas)} ModelReplicas, fewer than the {self.replicas} "
                f"before (gone: {', '.join(describe(k) for k in gone)})"
            )
        if len(objects) < self.objects:
            gone = sorted(self.object_keys - set(objects))
            shown = ", ".join(describe(k) for k in gone[:8])
            self.drops.append(
                f"{where}: {len(objects)} workload Objects, fewer than the {self.objects} "
                f"before (gone: {shown}{' ...' if len(gone) > 8 else ''})"
            )


def _why(plane: ControlPlane, key: Key, words: Iterable[str]) -> bool:
    for cond in plane.conditions(key).values():
        if cond.get("status") == "True":
            continue
        text = f"{cond.get('type')} {cond.get('reason')} {cond.get('message')}".lower()
        if any(word.lower() in text for word in words):
            return True
    return False


@pytest.mark.parametrize("case", EDIT_CASES, ids=[c.id for c in EDIT_CASES])
def test_waiting_keeps_what_runs(case: EditCase, converged: Fleets) -> None:
    """An edit that can't be composed now drops nothing running and says why."""
    done = converged.get(case.fleet)
    plane = done.plane.clone()
    target = _located(plane, case.target, f"the target of {case.id}")
    subject = (
        _located(plane, case.subject, "the composite that must say why") if case.subject else target
    )
    if case.pause_controller:
        plane.pause(_controller(plane, target))
    replicas, objects = _running(plane)
    tree = plane.tree(subject) | ({subject} if not case.delete else set())
    watch = Watch(len(replicas), len(objects), set(replicas), set(objects))
    plane.watchers.append(watch)
    if case.edit is not None:
        _admissible(plane.edit(target, case.edit))
    if case.flap is not None:
        plane.flap(target, case.flap)
    if case.delete:
        plane.delete(target)
    created: list[Key] = []  # a user's bad object may fail its own reconciles, no other's
    if case.create is not None:
        new = case.create(plane)
        _admissible(new)
        created.append(plane.put(new))
    records = plane.converge(EDIT_PASSES)
    change = (
        case.flap.describe() if case.flap is not None else ("deleted" if case.delete else "edited")
    )
    context = (
        f"{case.fleet}: {describe(target)} {change} ({case.id}); "
        f"{len(replicas)} ModelReplicas and {len(objects)} workload Objects before"
    )
    assert not watch.drops, (
        f"{context}; what runs was dropped:\n  "
        + "\n  ".join(watch.drops[:10])
        + f"\nhistory:\n{history_text(records)}\nnow:\n{plane.report()}"
    )
    if case.keep_tree:
        dropped = [(r.number, k) for r in records for k in r.disappeared if k in tree]
        assert not dropped, (
            f"{context}; {describe(subject)} dropped what it runs:\n"
            + "\n".join(f"  pass {n}: {describe(k)}" for n, k in dropped[:40])
            + f"\nhistory:\n{history_text(records)}"
        )
    assert subject in plane.store, f"{context}; {describe(subject)} is gone"
    if case.secret:
        leaks = [
            text
            for record in records
            for texts in record.warnings.values()
            for text in texts
            if case.secret in text
        ]
        leaks += [
            condition_line(c)
            for c in plane.conditions(subject).values()
            if case.secret in condition_line(c)
        ]
        assert not leaks, f"{context}; the credential is repeated:\n  " + "\n  ".join(leaks)
    leaked = _python_errors(records, created) + _errors(records, created)
    assert not leaked, f"{context}; errors:\n  " + "\n  ".join(leaked[:10])
    if not case.why:
        assert plane.ready(subject), (
            f"{context}; {describe(subject)} has nothing to wait for but is not Ready:\n"
            f"  {plane.state(subject)}\nhistory:\n{history_text(records)}"
        )
        return
    assert _why(plane, subject, case.why), (
        f"{context}; after {len(records)} passes no False condition of {describe(subject)} "
        f"names any of {', '.join(case.why)}:\n  {plane.state(subject)}\n"
        f"warnings: {records[-1].warnings.get(subject) if records else None}"
    )


# --- make-before-break ---------------------------------------------------------------------

MOVE_FLEET = "scale-eks"


def _pool_memory(plane: ControlPlane, cluster: str) -> list[str]:
    pools = get_path(plane.get(_kind("InferenceCluster", name=cluster)(plane)), "status.gpuPools")
    return [
        str(get_path(device, "capacity.memory.value"))
        for pool in pools or ()
        for device in pool.get("devices") or ()
    ]


def _cluster_of(plane: ControlPlane, replica: Key) -> str:
    return str(get_path(plane.get(replica), "spec.clusterName"))


def test_replica_moves_make_before_break(converged: Fleets) -> None:
    """A replica whose pool no longer fits an edited selector runs until its replacement is Ready."""
    done: Converged = converged.get(MOVE_FLEET)
    plane = done.plane.clone()
    deployment = _located(plane, DEPLOYMENT, "the ModelDeployment to move")
    wanted = int(get_path(plane.get(deployment), "spec.replicas") or 1)
    old = _own_replicas(plane, deployment)
    if len(old) != wanted or not all(plane.ready(k) for k in old):
        pytest.fail(
            f"precondition: {describe(deployment)} should run {wanted} Ready replica(s) after "
            f"convergence; it has {', '.join(describe(k) for k in old) or 'none'}:\n"
            f"{plane.report()}",
            pytrace=False,
        )
    old_clusters = {_cluster_of(plane, k) for k in old}
    # The L4 pools have 23034Mi, the L40S pools 46068Mi: 40Gi splits them.
    on_l4 = any(m.endswith("23034Mi") for c in old_clusters for m in _pool_memory(plane, c))
    selector = f'{GPU_MEMORY}.compareTo(quantity("40Gi")) {">=" if on_l4 else "<"} 0'
    drops: list[str] = []
    deletions: list[str] = []

    def watch(cp: ControlPlane, result: Reconciled) -> None:
        mine = _own_replicas(cp, deployment)
        running = [k for k in mine if cp.ready(k)]
        where = f"pass {len(cp.history) + 1}, reconciling {describe(result.key)}"
        if len(running) < wanted:
            listed = ", ".join(
                f"{describe(k)} ({'Ready' if cp.ready(k) else 'not Ready'})" for k in mine
            )
            drops.append(f"{where}: {len(running)} Ready of {listed or 'no replicas'}")
        for key in result.deleted:
            if key in old:
                ready_new = [k for k in running if k not in old]
                deletions.append(
                    f"{where}: deleted {describe(key)} with {len(ready_new)} Ready replacement(s)"
                )

    plane.watchers.append(watch)
    _admissible(plane.edit(deployment, _set_selector(selector)))
    records = plane.converge(EDIT_PASSES)
    context = (
        f"{MOVE_FLEET}: {describe(deployment)} selector edited to `{selector}` "
        f"(its replica ran on {', '.join(sorted(old_clusters))})"
    )
    assert not drops, (
        f"{context}; Ready replicas dropped below {wanted}:\n  "
        + "\n  ".join([*drops[:10], *deletions])
        + f"\nhistory:\n{history_text(records)}"
    )
    now = _own_replicas(plane, deployment)
    moved = [k for k in now if _cluster_of(plane, k) not in old_clusters]
    placed = ", ".join(
        f"{describe(k)} on {_cluster_of(plane, k)} ({'Ready' if plane.ready(k) else 'not Ready'})"
        for k in now
    )
    outcome = (
        f"{context}; after {len(records)} passes the deployment has {placed or 'no replicas'}\n"
        f"  {plane.state(deployment)}\nhistory:\n{history_text(records)}"
    )
    kept = sorted(set(old) & set(now))
    assert len(moved) == wanted, f"expected {wanted} replica(s) elsewhere: {outcome}"
    assert all(plane.ready(k) for k in moved), f"the replacement is not Ready: {outcome}"
    assert not kept, f"the old replica is still there once its replacement is Ready: {outcome}"
