"""teardown: deleting an InferenceCluster (or the InferenceGateway) completes in order, with
nothing left behind.

Before the deletion, :class:`Teardown` walks the composite's tree (``spec.crossplane.
resourceRefs``, composites within composites) and reads the ordering Usages in it
(:mod:`modelplane.domain.teardown`); then it watches every object of the tree, by one
list per kind each second, noting when it began deleting and when it was gone. Checks:

- every object is gone in time: none is left stuck on a finalizer;
- each Usage held: its ``of`` was never seen deleting before a sighting of its ``by``
  (Crossplane's webhook refused the earlier attempt; the Usage controller replayed it);

and it prints the order: each object's ``metadata.deletionTimestamp`` and when it was
seen gone, in the order they went.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from e2e.context import INFRA, ML, MP, Context
from e2e.kube import KubeError, Obj, dig

USAGE_API = "protection.crossplane.io/v1beta1"
POLL_SECONDS = 1.0

Ident = tuple[str, str, str, str]  # apiVersion, kind, namespace ("" cluster-scoped), name


def ident(obj: Mapping[str, object]) -> Ident:
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    return (
        str(obj.get("apiVersion", "")),
        str(obj.get("kind", "")),
        str(meta.get("namespace") or ""),
        str(meta.get("name", "")),
    )


def show(key: Ident) -> str:
    _, kind, ns, name = key
    return f"{kind} {ns + '/' if ns else ''}{name}"


@dataclass
class Seen:
    """What the watch saw of one object: when it began deleting, when it was gone."""

    deletion_timestamp: str = ""
    there_at: float = 0.0  # last seen there, deleting or not (seconds since the start)
    deleting_at: float | None = None  # first seen deleting (or gone)
    gone_at: float | None = None
    finalizers: list[str] = field(default_factory=list)

    def note(self, found: Obj | None, at: float) -> None:
        """Note what one list showed of the object at ``at``."""
        if found is None:
            if self.gone_at is None:
                self.gone_at = at
                self.deleting_at = at if self.deleting_at is None else self.deleting_at
            return
        self.there_at = at
        stamp = dig(found, "metadata", "deletionTimestamp")
        if stamp and self.deleting_at is None:
            self.deleting_at, self.deletion_timestamp = at, str(stamp)
        self.finalizers = list(dig(found, "metadata", "finalizers") or [])


@dataclass(frozen=True)
class Order:
    """An ordering Usage found in the tree: ``by`` must be gone before ``of`` deletes."""

    usage: Ident
    by: Ident
    of: Ident


class Teardown:
    """Watch a composite's tree while it is deleted; then check and print the order."""

    def __init__(self, ctx: Context, api: str, kind: str, name: str, ns: str = "") -> None:
        self.ctx = ctx
        self.root: Ident = (api, kind, ns, name)
        self.objects: dict[Ident, Obj] = {}
        self._walk(self.root)
        self.orders = self._orders()
        self.seen: dict[Ident, Seen] = {key: Seen() for key in self.objects}
        self.start = time.monotonic()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True, name="teardown")

    # -- the tree ----------------------------------------------------------------

    def _walk(self, key: Ident) -> None:
        api, kind, ns, name = key
        obj = self.ctx.kube.get(api, kind, name, ns or None)
        if obj is None or key in self.objects:
            return
        obj.setdefault("apiVersion", api)
        obj.setdefault("kind", kind)
        self.objects[key] = obj
        for ref in dig(obj, "spec", "crossplane", "resourceRefs") or []:
            self._walk((ref["apiVersion"], ref["kind"], ref.get("namespace") or ns, ref["name"]))

    def _orders(self) -> list[Order]:
        """The ordering Usages of the tree, each resolved to the two objects it names."""
        found = []
        for key, obj in self.objects.items():
            if key[0] != USAGE_API or not key[3]:
                continue
            spec = obj.get("spec") or {}
            by, of = spec.get("by"), spec.get("of")
            if not by or not of:
                continue  # a protection Usage (no user), not an ordering one
            usage_ns = key[2]
            of_ns = dig(of, "resourceRef", "namespace") or usage_ns
            found.append(
                Order(
                    key,
                    self._resolve(
                        by["apiVersion"], by["kind"], by["resourceRef"]["name"], usage_ns
                    ),
                    self._resolve(of["apiVersion"], of["kind"], of["resourceRef"]["name"], of_ns),
                )
            )
        return found

    def _resolve(self, api: str, kind: str, name: str, ns: str) -> Ident:
        """The tree's object of that kind and name: in ``ns`` or, if none, cluster-scoped."""
        for candidate in ((api, kind, ns, name), (api, kind, "", name)):
            if candidate in self.objects:
                return candidate
        msg = f"{kind} {name}, named by an ordering Usage, is not in the tree of {show(self.root)}"
        raise AssertionError(msg)

    # -- watching ----------------------------------------------------------------

    def __enter__(self) -> Teardown:
        kinds = sorted({(k[0], k[1]) for k in self.objects})
        self.ctx.step(
            f"{show(self.root)}: {len(self.objects)} objects of {len(kinds)} kinds, "
            f"{len(self.orders)} ordering Usages; watching them"
        )
        self.start = time.monotonic()
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)

    def _watch(self) -> None:
        """List each kind in turn; note for each object, at the time of its kind's list,
        when it was last seen alive, first seen deleting, first seen gone."""
        kinds = sorted({(k[0], k[1]) for k in self.objects})
        while not self.stop.is_set():
            for api, kind in kinds:
                try:
                    listed = {ident(o): o for o in self.ctx.kube.list(api, kind)}
                except KubeError:  # the kind's CRD went with its Release: all gone
                    listed = {}
                at = time.monotonic() - self.start
                for key, seen in self.seen.items():
                    if key[:2] == (api, kind):
                        seen.note(listed.get(key), at)
            if all(s.gone_at is not None for s in self.seen.values()):
                return
            self.stop.wait(POLL_SECONDS)

    def left(self) -> list[str]:
        """What is still there, with the finalizers it waits on."""
        return [
            f"{show(k)} (finalizers {s.finalizers}, deleting since {s.deletion_timestamp or '-'})"
            for k, s in sorted(self.seen.items())
            if s.gone_at is None
        ]

    # -- checks ------------------------------------------------------------------

    def wait_all_gone(self, timeout: float) -> None:
        self.ctx.wait_gone(
            f"every object of {show(self.root)}'s tree gone (none stuck on a finalizer)",
            self.left,
            timeout,
        )

    def check_order(self) -> None:
        """Each ordering Usage held: ``of`` was never seen deleting before a sighting of
        ``by`` (each time is that of its kind's list)."""
        broken = []
        for order in self.orders:
            by, of = self.seen[order.by], self.seen[order.of]
            assert by.gone_at is not None, self.left()
            assert of.deleting_at is not None, self.left()
            # Seen deleting (or gone, if it went between two lists) before a later
            # sighting of its user: its deletion began while the user was there.
            if of.deleting_at < by.there_at:
                broken.append(
                    f"{show(order.of)} began deleting by +{of.deleting_at:.1f}s, yet "
                    f"{show(order.by)} was still there at +{by.there_at:.1f}s, despite "
                    f"{show(order.usage)}"
                )
        assert not broken, "\n".join(broken)

    def print_order(self) -> None:
        """Print each object's deletionTimestamp and when it went, in the order it went."""
        self.ctx.step(f"{show(self.root)}: the order (deletionTimestamp; seen gone)")
        by_time = sorted(
            self.seen.items(),
            key=lambda kv: (kv[1].gone_at or 0.0, kv[1].deleting_at or 0.0, kv[0]),
        )
        for key, seen in by_time:
            if key[0] == USAGE_API:
                continue  # the Usages go with what they order; their order is checked
            print(
                f"      {seen.deletion_timestamp or '(not seen deleting)':<22} "
                f"+{seen.deleting_at or 0.0:5.0f}s -> gone +{seen.gone_at or 0.0:5.0f}s  {show(key)}",
                flush=True,
            )
        self.ctx.step(
            f"{len(self.orders)} ordering Usages held: each used resource began deleting only "
            "once its user was gone"
        )

    def check(self, timeout: float) -> None:
        self.wait_all_gone(timeout)
        self.stop.set()
        self.thread.join(timeout=10)
        self.print_order()
        self.check_order()


def steps_of(orders: Iterable[Order]) -> set[tuple[str, str]]:
    return {(o.by[1], o.of[1]) for o in orders}


def delete_all(ctx: Context, roots: list[tuple[str, str]], timeout: float) -> list[Teardown]:
    """Delete cluster-scoped composites (kind, name) at once, as the docs do (foreground),
    each tree watched; then check each teardown (they run side by side: Crossplane's
    Usage controller looks again every 30 s, so each wave of a teardown takes up to that)."""
    watches = [Teardown(ctx, MP, kind, name) for kind, name in roots]
    for watch in watches:
        assert watch.orders, f"{show(watch.root)} composes no ordering Usage"
        watch.__enter__()
    try:
        for kind, name in roots:
            ctx.kubectl("delete", kind.lower(), name, "--cascade=foreground", "--wait=false")
            ctx.step(f"kubectl delete {kind.lower()} {name} --cascade=foreground")
        for watch in watches:
            watch.check(timeout)
    finally:
        for watch in watches:
            watch.__exit__()
    return watches


def clusters_unused(ctx: Context) -> list[str]:
    """Delete the ML resources (the docs' clean-up order); return the clusters left."""
    for kind in ("modeldeployment", "modelservice", "modelcache"):
        ctx.kubectl("delete", kind, "--all", "-n", ML, "--wait=false")
    ctx.step("kubectl delete modeldeployment,modelservice,modelcache --all -n ml-team")
    clusters = sorted(str(c["metadata"]["name"]) for c in ctx.kube.list(MP, "InferenceCluster"))
    ctx.wait_gone(
        "nothing uses the clusters: their ClusterUsages gone",
        lambda: [
            f"ClusterUsage {c}-in-use"
            for c in clusters
            if ctx.kube.get(USAGE_API, "ClusterUsage", f"{c}-in-use")
        ],
        180,
    )
    return clusters


def teardown_in_order(ctx: Context) -> None:
    """Delete every InferenceCluster left and the InferenceGateway: each in order, all gone."""
    roots = [("InferenceCluster", c) for c in clusters_unused(ctx)]
    watches = delete_all(ctx, [*roots, ("InferenceGateway", "default")], 480)
    for watch in watches[:-1]:
        clouds = {k[1] for k in watch.objects if k[0] == INFRA and k[1] != "ServingStack"}
        pairs = steps_of(watch.orders)
        for cloud in clouds:  # a provisioned cluster: what reaches it went first
            assert ("ClusterProviderConfig", cloud) in pairs, pairs
            assert ("ServingStack", cloud) in pairs, pairs
    assert ("Release", "Release") in steps_of(watches[-1].orders)  # Traefik before its CRDs
