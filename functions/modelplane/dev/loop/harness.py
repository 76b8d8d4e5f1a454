"""A mini control plane: Modelplane's composites reconciled pass after pass, as Crossplane does.

The store holds every object of the control plane: the example's documents, what the
user creates before applying them (Secrets, provider configs), and everything composed
since. Each composite is reconciled by Crossplane's own composite reconciler
(:func:`modelplane.dev.engine.render_composite`, ``crossplane internal render``) with its
kind's XRD and Composition from ``apis/``, calling the real functions over gRPC:

- **observed**: the composite's composed resources in the store (those it controls), as
  the fake providers (:mod:`modelplane.dev.loop.fakes`) last reported them;
- **required**: every other object of the store of a kind the reconciler reads (the
  kinds its pipeline selects, and Secrets: :mod:`modelplane.dev.loop.required`), so every
  requirement resolves as the API server would answer it;
- then the composite is written back as the reconciler left it (status, conditions,
  ``spec.crossplane``), every composed resource it applied is upserted (its status stays
  the provider's, as server-side apply leaves it), and every resource it garbage
  collected is removed, with whatever that resource owned (Kubernetes' garbage
  collector).

**A pass** reconciles every composite once, in a stable order: by kind, from the
platform down to the models (:data:`KIND_ORDER`), then namespace and name. A composite
composed during the pass is reconciled later in the same pass when its turn comes.
Crossplane reconciles a composite again as soon as one of its composed resources
changes (a provider reporting Ready, say), so within its turn a composite is reconciled
until a reconcile (with the providers' reports that follow it) changes nothing,
at most :data:`SETTLE_LIMIT` times: a pass is one round of every composite settling
against the state of the others. A composite reads another composite's status as of
that composite's last turn, so a change travels one level of the composite tree per
pass. :meth:`ControlPlane.converge` runs passes until one changes nothing.

What changes is compared as canonical JSON of every object, without
``lastTransitionTime`` and ``resourceVersion``.

**Flaps** (:meth:`ControlPlane.flap`) make one resource misreport for a number of passes.
A resource the fake providers report on misreports in the store itself; a composite (or
any other object) misreports in what every *other* composite reads of it (its observed
or required copy), while its own reconcile sees its true state.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from modelplane.dev import engine
from modelplane.dev.fakes import base
from modelplane.dev.fakes.admission import admission_problems
from modelplane.dev.fakes.base import Key, Obj, describe, key_of
from modelplane.dev.loop import fakes, required
from modelplane.dev.loop.apis import apis, deep_messages
from modelplane.dev.loop.fakes import Flap
from modelplane.dev.loop.generations import next_generation, stamp_generation
from modelplane.dev.loop.records import (
    SETTLE_LIMIT,
    DeletionBlockedError,
    PassRecord,
    Reconciled,
    canonical,
    condition_line,
    top_level_diff,
)
from modelplane.domain import api

KIND_ORDER = (
    "InferenceClass",
    "InferenceGateway",
    "InferenceCluster",
    "EKSCluster",
    "GKECluster",
    "AKSCluster",
    "VultrCluster",
    "NebiusCluster",
    "ServingStack",
    "ModelCache",
    "ModelDeployment",
    "ModelReplica",
    "ModelEndpoint",
    "ModelService",
)
"""The order of a pass: the platform first, then what runs on it, then what routes to it."""
PAUSED = "crossplane.io/paused"
RESOURCE_NAME = "crossplane.io/composition-resource-name"
USAGE_GROUP = api.USAGE.partition("/")[0]
RENDER_TIMEOUT_SECONDS = 300.0
"""Generous: the machine is small and shared; no test asserts on time."""
UID_NAMESPACE = uuid.UUID("6f1e7d0c-3b52-4b8e-9a43-2d4c5a1e0b7f")
CREATED_AT = "2025-01-01T"
"""The day every object of a loop run is created; the clock ticks a second per object."""


# --- the control plane ---------------------------------------------------------------------


class ControlPlane:
    """The store, the fake providers and the reconcile loop.

    Args:
        docs: The documents to start from (without status: nothing has reconciled yet).
        functions: Function name -> ``host:port`` of the running function server.
    """

    def __init__(self, docs: Iterable[Mapping[str, Any]], functions: Mapping[str, str]) -> None:
        self.functions = dict(functions)
        self.store: dict[Key, Obj] = {}
        self.providers = fakes.Providers()
        self.history: list[PassRecord] = []
        self.watchers: list[Callable[[ControlPlane, Reconciled], None]] = []
        self._flaps: dict[Key, tuple[Flap, int]] = {}
        self._created = 0  # the API server's clock for creationTimestamp: one tick per object
        for doc in docs:
            self.put(doc)

    def _stamp(self, meta: dict[str, Any]) -> None:
        """Give a new object its creationTimestamp, as the API server does (admission reads it)."""
        self._created += 1
        meta["creationTimestamp"] = CREATED_AT + (
            f"{self._created // 3600:02d}:{self._created // 60 % 60:02d}:{self._created % 60:02d}Z"
        )

    def clone(self) -> ControlPlane:
        """Return an independent copy: same store, history and providers' memory; no watchers."""
        out = ControlPlane((), self.functions)
        out.store = copy.deepcopy(self.store)
        out.providers = self.providers.clone()
        out.history = list(self.history)
        out._flaps = dict(self._flaps)
        out._created = self._created
        return out

    # -- reading ----------------------------------------------------------------------------

    def put(self, doc: Mapping[str, Any]) -> Key:
        """Create or apply an object as a user would (``kubectl apply``).

        A new object gets a UID. Applying over an existing one replaces what the user
        owns and keeps what the control plane wrote: its UID, status, ``spec.crossplane``
        and the ``crossplane.io/`` labels.
        """
        obj = copy.deepcopy(dict(doc))
        key = key_of(obj)
        meta = obj.setdefault("metadata", {})
        previous = self.store.get(key)
        if previous is not None:
            old_meta = previous.get("metadata") or {}
            meta["uid"] = old_meta.get("uid")
            kept = {
                k: v
                for k, v in (old_meta.get("labels") or {}).items()
                if k.startswith("crossplane.io/")
            }
            if kept:
                meta["labels"] = {**(meta.get("labels") or {}), **kept}
            if "status" in previous:
                obj["status"] = previous["status"]
            crossplane = (previous.get("spec") or {}).get("crossplane")
            if crossplane is not None:
                obj.setdefault("spec", {})["crossplane"] = crossplane
        if not meta.get("uid"):
            meta["uid"] = str(uuid.uuid5(UID_NAMESPACE, "\x00".join(key)))
        if previous is None:
            self._stamp(meta)
        else:
            meta["creationTimestamp"] = (previous.get("metadata") or {}).get("creationTimestamp")
        self.store[key] = obj
        return key

    def get(self, key: Key) -> Obj:
        """Return the object ``key`` (KeyError names it when it does not exist)."""
        try:
            return self.store[key]
        except KeyError:
            msg = f"{describe(key)} does not exist"
            raise KeyError(msg) from None

    def find(self, kind: str, name: str | None = None, namespace: str | None = None) -> list[Key]:
        """Return the keys of the objects of ``kind`` (and ``name``, ``namespace``), sorted."""
        return sorted(
            k
            for k in self.store
            if k[1] == kind
            and (name is None or k[3] == name)
            and (namespace is None or k[2] == namespace)
        )

    def one(self, kind: str, name: str | None = None, namespace: str | None = None) -> Key:
        """Return the only object of ``kind`` (and name, namespace); fail clearly otherwise."""
        found = self.find(kind, name, namespace)
        if len(found) != 1:
            names = ", ".join(describe(k) for k in found) or "none"
            msg = f"expected one {kind} {namespace or ''}/{name or '*'}, found {names}"
            raise LookupError(msg)
        return found[0]

    def composites(self) -> list[Key]:
        """Return every composite of the store, in pass order."""
        order = {kind: i for i, kind in enumerate(KIND_ORDER)}
        known = apis()
        keys = [k for k, o in self.store.items() if base.is_composite(o) and k[1] in known]
        return sorted(keys, key=lambda k: (order.get(k[1], len(order)), k[2], k[3]))

    def composed_by(self, key: Key) -> list[Key]:
        """Return the resources composite ``key`` controls, sorted."""
        uid = base.uid_of(self.store.get(key) or {})
        if not uid:
            return []
        return sorted(k for k, o in self.store.items() if base.controller_uid(o) == uid)

    def tree(self, key: Key) -> set[Key]:
        """Return everything composite ``key`` composed, and what those composed, and so on."""
        out: set[Key] = set()
        todo = [key]
        while todo:
            for child in self.composed_by(todo.pop()):
                if child not in out:
                    out.add(child)
                    todo.append(child)
        return out

    def conditions(self, key: Key) -> dict[str, dict[str, Any]]:
        """Return an object's status conditions, by type."""
        return base.conditions_of(self.store.get(key))

    def ready(self, key: Key) -> bool:
        """Tell whether an object reports ``Ready=True``."""
        return base.condition_is(self.store.get(key), "Ready")

    def state(self, key: Key) -> str:
        """Describe where a composite stands: its conditions, and what is not Ready below it."""
        obj = self.store.get(key)
        if obj is None:
            return f"{describe(key)}: does not exist"
        conditions = base.conditions_of(obj)
        ordered = sorted(
            conditions.values(),
            key=lambda c: (c.get("type") != "Ready", c.get("type") != "Synced", str(c.get("type"))),
        )
        text = f"{describe(key)}: " + "; ".join(condition_line(c) for c in ordered)
        if not conditions:
            text += "no conditions"
        unready = [
            describe(k)
            for k in self.composed_by(key)
            if fakes.reports_ready(self.store[k]) and not self.ready(k)
        ]
        if unready:
            text += f" | composed but not Ready: {', '.join(unready)}"
        return text

    def snapshot(self) -> dict[Key, str]:
        """Return every object as canonical JSON, by key."""
        return {k: canonical(o) for k, o in self.store.items()}

    # -- acting like a user -----------------------------------------------------------------

    def flap(self, key: Key, flap: Flap) -> None:
        """Make ``key`` misreport for the next ``flap.passes`` passes."""
        self.get(key)
        self._flaps[key] = (flap, flap.passes)

    def edit(self, key: Key, change: Callable[[Obj], None]) -> Obj:
        """Edit an object in place as a user would (``change`` mutates a copy); return it."""
        obj = copy.deepcopy(self.get(key))
        change(obj)
        if key_of(obj) != key:
            msg = f"an edit may not rename {describe(key)}"
            raise ValueError(msg)
        self.store[key] = obj
        return obj

    def pause(self, key: Key, paused: bool = True) -> None:
        """Set or clear the ``crossplane.io/paused`` annotation, as a user would."""

        def change(obj: Obj) -> None:
            annotations = obj.setdefault("metadata", {}).setdefault("annotations", {})
            if paused:
                annotations[PAUSED] = "true"
            else:
                annotations.pop(PAUSED, None)

        self.edit(key, change)

    def usages_of(self, key: Key) -> list[Key]:
        """Return the Usages that protect ``key`` from deletion."""
        group, kind, namespace, name = key
        found = []
        for k, obj in self.store.items():
            if k[0] != USAGE_GROUP or k[1] not in ("Usage", "ClusterUsage"):
                continue
            of = (obj.get("spec") or {}).get("of") or {}
            ref = of.get("resourceRef") or {}
            same_namespace = not namespace or k[2] in ("", namespace)
            if (
                base.group_of(of) == group
                and of.get("kind") == kind
                and ref.get("name") == name
                and same_namespace
            ):
                found.append(k)
        return sorted(found)

    def delete(self, key: Key, *, force: bool = False) -> list[Key]:
        """Delete an object as a user would; return what went with it.

        Raises:
            DeletionBlockedError: a Usage protects it (unless ``force``), as the API
                server's Usage webhook refuses the request.
        """
        self.get(key)
        blocking = self.usages_of(key)
        if blocking and not force:
            names = ", ".join(describe(k) for k in blocking)
            msg = f"{describe(key)} is in use by {names}"
            raise DeletionBlockedError(msg)
        return self._remove(key)

    # -- reconciling ------------------------------------------------------------------------

    def _active_flaps(self) -> dict[Key, Flap]:
        return {k: f for k, (f, left) in self._flaps.items() if left > 0 and k in self.store}

    def _store_flaps(self) -> dict[Key, Flap]:
        """Flaps the fake providers apply in the store (resources they report on)."""
        return {
            k: f
            for k, f in self._active_flaps().items()
            if not base.is_composite(self.store[k]) and fakes.reporter_for(self.store[k])
        }

    def _views(self) -> Callable[[Key], Obj]:
        """Return how other composites read each object right now (with its flap, if any)."""
        in_store = self._store_flaps()
        flaps = {k: f for k, f in self._active_flaps().items() if k not in in_store}

        def view(key: Key) -> Obj:
            obj = self.store[key]
            flap = flaps.get(key)
            return obj if flap is None else flap.apply(obj)

        return view

    def observe(self) -> None:
        """Let the fake providers report on every composed resource."""
        self.providers.observe(self.store, self._store_flaps())

    def reconcile_together(self, keys: Iterable[Key]) -> list[Reconciled]:
        """Reconcile composites concurrently: each reads the others as they were before any.

        As Crossplane's workers do for composites applied together (a ``kubectl apply -f
        dir/``): every call's required resources are the store as it was when they began.
        """
        frozen = {k: copy.deepcopy(self._views()(k)) for k in self.store}
        return [self.reconcile(key, frozen=frozen) for key in keys]

    def reconcile(self, key: Key, *, frozen: Mapping[Key, Obj] | None = None) -> Reconciled:
        """Reconcile composite ``key`` once with Crossplane's reconciler and apply the result.

        ``frozen``: what it reads of the other objects (the store as an earlier moment
        saw it); None: the store now.
        """
        return self._apply(*self._render(key, frozen))

    def race(self, keys: Iterable[Key], during: Callable[[], object]) -> list[Reconciled]:
        """Reconcile ``keys`` from the store as it is now, but write what they did only
        after ``during`` ran (another composite's reconcile, say): a reconcile that was
        under way while another wrote its spec.

        Crossplane's reconciler then writes the status it computed from the old spec, and
        stamps its Ready with the generation its status write returns: the new one
        (:meth:`_write_composite` stamps the store's generation, as that write does).
        """
        rendered = [self._render(key, None) for key in keys]
        during()
        return [self._apply(*found) for found in rendered]

    def _render(
        self, key: Key, frozen: Mapping[Key, Obj] | None
    ) -> tuple[Reconciled, engine.RenderOutput | None]:
        """Run the reconciler over composite ``key``: what it would write, not written yet."""
        result = Reconciled(key)
        xr = self.get(key)
        api = apis()[key[1]]
        view = self._views()
        observed_keys = self.composed_by(key)
        observed = [view(k) for k in observed_keys]
        skip = {key, *observed_keys}
        read: Callable[[Key], Obj] = view if frozen is None else frozen.__getitem__
        others = [k for k in sorted(self.store if frozen is None else frozen) if k not in skip]

        def render(kinds: Callable[[tuple[str, str]], bool]) -> engine.RenderOutput:
            with deep_messages():
                return engine.render_composite(
                    xr,
                    api.composition,
                    self.functions,
                    observed=observed,
                    required=[read(k) for k in others if kinds((k[0], k[1]))],
                    xrd=api.xrd,
                    timeout=RENDER_TIMEOUT_SECONDS,
                )

        try:
            out = required.render_asked(key[1], {(k[0], k[1]) for k in others}, render)
        except engine.EngineError as err:
            result.error = " ".join(str(err).split())
            return result, None
        return result, out

    def _apply(self, result: Reconciled, out: engine.RenderOutput | None) -> Reconciled:
        """Write what a reconcile did: its composed resources, its status, its deletions."""
        key = result.key
        if out is None:
            self._notify(result)
            return result
        result.events = [f"{e.type} {e.reason}: {e.message}" for e in out.events]
        if out.fatal:
            result.fatal = " ".join(out.error.split()) or "Fatal result (no message)"
        refused: list[str] = []
        for applied in out.composed:
            problems = admission_problems(applied)
            if problems:  # the API server refuses the apply (422); Crossplane warns, goes on
                refused.append(f"{describe(key_of(applied))}: " + "; ".join(problems))
                continue
            result.applied.append(self._upsert(applied))
        if out.composite and key in self.store:
            self._write_composite(key, out.composite)
        if refused:
            message = "cannot apply composed resources: " + " | ".join(refused)
            result.error = message
            result.events.append(f"Warning ComposeResources: {message}")
            self._unsynced(key, message)
        for gone in out.deleted:
            gone_key = key_of(gone)
            result.deleted.append(gone_key)
            result.collected += [k for k in self._remove(gone_key) if k != gone_key]
        self._notify(result)
        return result

    def _notify(self, result: Reconciled) -> None:
        for watcher in self.watchers:
            watcher(self, result)

    def _write_composite(self, key: Key, rendered: Mapping[str, Any]) -> None:
        """Write back what the reconciler changed: status, ``spec.crossplane``, its labels.

        The engine's XR carries the pipeline's desired state, not the user's spec; the API
        server keeps the spec, so only the reconciler's own fields are taken.
        """
        obj = copy.deepcopy(self.store[key])
        if "status" in rendered:
            obj["status"] = copy.deepcopy(rendered["status"])
            stamp_generation(obj)
        crossplane = (rendered.get("spec") or {}).get("crossplane")
        if crossplane is not None:
            obj.setdefault("spec", {})["crossplane"] = copy.deepcopy(crossplane)
        rendered_meta = rendered.get("metadata") or {}
        meta = obj.setdefault("metadata", {})
        for name in ("labels", "annotations"):
            added = rendered_meta.get(name) or {}
            if added:  # the reconciler's own; one under way must not revert a newer write
                meta[name] = {**added, **(meta.get(name) or {})}
        self.store[key] = obj

    def _unsynced(self, key: Key, message: str) -> None:
        """Set a composite's Synced condition False, as Crossplane does when an apply fails."""
        obj = self.store[key]
        status = obj.setdefault("status", {})
        kept = [c for c in status.get("conditions") or [] if c.get("type") != "Synced"]
        synced = base.condition("Synced", False, "ReconcileError", message)
        status["conditions"] = [*kept, synced]

    def _upsert(self, applied: Mapping[str, Any]) -> Key:
        """Server-side apply of a composed resource: Crossplane's fields, the status kept."""
        obj = copy.deepcopy(dict(applied))
        key = key_of(obj)
        meta = obj.setdefault("metadata", {})
        meta.pop("resourceVersion", None)
        obj.pop("status", None)
        previous = self.store.get(key)
        if base.is_composite(obj):
            meta["generation"] = next_generation(previous, obj)
        if previous is None:
            self._stamp(meta)
        else:
            meta["creationTimestamp"] = (previous.get("metadata") or {}).get("creationTimestamp")
        if previous is not None:
            meta["uid"] = base.uid_of(previous)
            if "status" in previous:
                obj["status"] = previous["status"]
            crossplane = (previous.get("spec") or {}).get("crossplane")
            if crossplane is not None and "crossplane" not in (obj.get("spec") or {}):
                obj.setdefault("spec", {})["crossplane"] = crossplane
        elif not meta.get("uid"):
            meta["uid"] = str(uuid.uuid5(UID_NAMESPACE, "\x00".join(key)))
        self.store[key] = obj
        return key

    def _remove(self, key: Key) -> list[Key]:
        """Remove an object and, like Kubernetes' garbage collector, all it owned."""
        if key not in self.store:
            return []
        removed = [key]
        del self.store[key]
        while True:
            live = {base.uid_of(o) for o in self.store.values()}
            orphans = [
                k
                for k, o in self.store.items()
                if (refs := (o.get("metadata") or {}).get("ownerReferences"))
                and all(r.get("uid") not in live for r in refs)
            ]
            if not orphans:
                return removed
            for k in orphans:
                del self.store[k]
            removed += sorted(orphans)

    def run_pass(self) -> PassRecord:
        """Reconcile every composite once, each until it settles; record what changed."""
        record = PassRecord(number=len(self.history) + 1)
        record.flapping = [f"{describe(k)} {f.describe()}" for k, f in self._active_flaps().items()]
        before = self.snapshot()
        before_objects = copy.deepcopy(self.store)
        done: set[Key] = set()
        while True:
            pending = [k for k in self.composites() if k not in done]
            if not pending:
                break
            key = pending[0]
            done.add(key)
            self._settle(key, record)
        after = self.snapshot()
        record.appeared = sorted(set(after) - set(before))
        record.disappeared = sorted(set(before) - set(after))
        record.changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
        record.diffs = {k: top_level_diff(before_objects[k], self.store[k]) for k in record.changed}
        record.conditions = {k: self.conditions(k) for k in self.composites()}
        self._flaps = {k: (f, left - 1) for k, (f, left) in self._flaps.items() if left > 1}
        self.history.append(record)
        return record

    def _settle(self, key: Key, record: PassRecord) -> None:
        for _ in range(SETTLE_LIMIT):
            if key not in self.store:
                return
            self.observe()
            before = self.snapshot()
            result = self.reconcile(key)
            self.observe()
            record.reconciles[key] = record.reconciles.get(key, 0) + 1
            if result.fatal:
                record.fatal[key] = result.fatal
            if result.error:
                record.errors[key] = result.error
            for event in result.events:
                kinds = [record.events] + ([record.warnings] if event.startswith("Warning") else [])
                for found in kinds:
                    seen = found.setdefault(key, [])
                    if event not in seen:
                        seen.append(event)
            if self.snapshot() == before:
                return
        record.unsettled.append(key)

    def converge(self, max_passes: int) -> list[PassRecord]:
        """Run passes until one changes nothing, at most ``max_passes``; return their records."""
        records = []
        for _ in range(max_passes):
            record = self.run_pass()
            records.append(record)
            if record.quiet:
                break
        return records

    # -- summaries for failure messages -----------------------------------------------------

    def unready(self) -> list[Key]:
        """Return the composites that are not ``Ready=True``."""
        return [k for k in self.composites() if not self.ready(k)]

    def report(self, keys: Iterable[Key] | None = None) -> str:
        """Describe composites (all by default), one per line."""
        chosen = list(keys) if keys is not None else self.composites()
        return "\n".join("  " + self.state(k) for k in chosen)
