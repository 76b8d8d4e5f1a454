"""A mini control plane: Modelplane's composites reconciled pass after pass, as Crossplane does.

The store holds every object of the control plane: the example's documents, what the
user creates before applying them (Secrets, provider configs), and everything composed
since. Each composite is reconciled by Crossplane's own composite reconciler
(:func:`modelplane.dev.engine.render_composite`, ``crossplane internal render``) with its
kind's XRD and Composition from ``apis/``, calling the real functions over gRPC:

- **observed**: the composite's composed resources in the store (those it controls), as
  the fake providers (:mod:`modelplane.dev.loop.fakes`) last reported them;
- **required**: every other object of the store, so every requirement resolves as the
  API server would answer it;
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

import contextlib
import copy
import functools
import importlib
import json
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from google.protobuf.internal import api_implementation

from modelplane import server
from modelplane.dev import engine
from modelplane.dev.fakes.base import Key, Obj, describe, key_of
from modelplane.dev.loop import fakes
from modelplane.dev.loop.fakes import Flap

ROOT = Path(__file__).resolve().parents[4]
APIS = ROOT / "apis"
EXAMPLES = ROOT / "examples"
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
SETTLE_LIMIT = 16
"""Reconciles of one composite in one pass before the harness calls it churning."""
PAUSED = "crossplane.io/paused"
RESOURCE_NAME = "crossplane.io/composition-resource-name"
USAGE_GROUP = "protection.crossplane.io"
RENDER_TIMEOUT_SECONDS = 300.0
"""Generous: the machine is small and shared; no test asserts on time."""
UID_NAMESPACE = uuid.UUID("6f1e7d0c-3b52-4b8e-9a43-2d4c5a1e0b7f")
CREATED_AT = "2025-01-01T"
"""The day every object of a loop run is created; the clock ticks a second per object."""


@contextlib.contextmanager
def deep_messages() -> Iterator[None]:
    """Let this process's protobuf carry objects as deeply nested as the API server admits.

    The engine's request and response hold every object of the store; one user's deeply
    nested object must reach the functions, as it would in a cluster. The setting is
    process-wide: it is restored afterwards, so other tests see protobuf's default.
    """
    backend = api_implementation.Type()
    if backend not in ("upb", "cpp"):
        server.allow_deep_messages()
        yield
        return
    module = "google._upb._message" if backend == "upb" else "google.protobuf.pyext._message"
    setting = importlib.import_module(module)
    setting.SetAllowOversizeProtos(True)
    try:
        yield
    finally:
        setting.SetAllowOversizeProtos(False)


# --- the APIs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Api:
    """One composite kind: its XRD and its Composition."""

    kind: str
    xrd: Obj
    composition: Obj

    def function_names(self) -> list[str]:
        """Return the functions its Composition's pipeline calls."""
        steps = (self.composition.get("spec") or {}).get("pipeline") or []
        return [str(s["functionRef"]["name"]) for s in steps]


@functools.cache
def apis() -> dict[str, Api]:
    """Return every composite kind under ``apis/``, by kind."""
    found: dict[str, Api] = {}
    for definition in sorted(APIS.glob("*/definition.yaml")):
        xrd = yaml.safe_load(definition.read_text())
        composition = yaml.safe_load(definition.with_name("composition.yaml").read_text())
        kind = str(xrd["spec"]["names"]["kind"])
        found[kind] = Api(kind, xrd, composition)
    return found


def function_targets(address: str) -> dict[str, str]:
    """Return every function the Compositions call, each served at ``address``."""
    return {name: address for api in apis().values() for name in api.function_names()}


# --- records -------------------------------------------------------------------------------


def condition_line(cond: Mapping[str, Any]) -> str:
    """Render a condition as ``Type=Status (Reason: message)``."""
    text = f"{cond.get('type')}={cond.get('status')}"
    reason, message = cond.get("reason"), cond.get("message")
    if reason or message:
        detail = f"{reason}: {message}" if message else str(reason)
        text += f" ({detail})"
    return text


@dataclass
class Reconciled:
    """What one reconcile of one composite did."""

    key: Key
    applied: list[Key] = field(default_factory=list)
    deleted: list[Key] = field(default_factory=list)
    collected: list[Key] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    fatal: str = ""
    error: str = ""


@dataclass
class PassRecord:
    """What one pass changed, and where every composite stood at its end.

    Attributes:
        number: 1 for the first pass of this control plane.
        appeared: Objects created during the pass.
        disappeared: Objects deleted during the pass (garbage collected or cascaded).
        changed: Objects that exist before and after but differ.
        diffs: For each changed object, the top-level fields that differ.
        conditions: Each composite's conditions at the end of the pass, by type.
        fatal: Composites whose pipeline returned a Fatal result, with the message.
        errors: Composites whose reconcile failed, with the engine's error.
        events: Every event per composite (``Type Reason: message``), each once.
        warnings: The Warning events among them.
        reconciles: How many times each composite was reconciled.
        unsettled: Composites still changing after :data:`SETTLE_LIMIT` reconciles.
        flapping: What misreported during the pass.
    """

    number: int
    appeared: list[Key] = field(default_factory=list)
    disappeared: list[Key] = field(default_factory=list)
    changed: list[Key] = field(default_factory=list)
    diffs: dict[Key, list[str]] = field(default_factory=dict)
    conditions: dict[Key, dict[str, dict[str, Any]]] = field(default_factory=dict)
    fatal: dict[Key, str] = field(default_factory=dict)
    errors: dict[Key, str] = field(default_factory=dict)
    events: dict[Key, list[str]] = field(default_factory=dict)
    warnings: dict[Key, list[str]] = field(default_factory=dict)
    reconciles: dict[Key, int] = field(default_factory=dict)
    unsettled: list[Key] = field(default_factory=list)
    flapping: list[str] = field(default_factory=list)

    @property
    def quiet(self) -> bool:
        """Tell whether the pass changed nothing at all."""
        return not (self.appeared or self.disappeared or self.changed)

    def ready(self, key: Key) -> bool:
        """Tell whether composite ``key`` was Ready at the end of the pass."""
        return self.conditions.get(key, {}).get("Ready", {}).get("status") == "True"

    def summary(self, limit: int = 12) -> str:
        """Say what the pass changed, for failure messages."""

        def names(keys: list[Key]) -> str:
            shown = ", ".join(describe(k) for k in keys[:limit])
            return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")

        lines = [f"pass {self.number}:"]
        if self.flapping:
            lines.append(f"  flapping: {'; '.join(self.flapping)}")
        if self.appeared:
            lines.append(f"  appeared ({len(self.appeared)}): {names(self.appeared)}")
        if self.disappeared:
            lines.append(f"  DISAPPEARED ({len(self.disappeared)}): {names(self.disappeared)}")
        if self.changed:
            changed = [f"{describe(k)} [{', '.join(self.diffs.get(k, []))}]" for k in self.changed]
            shown = "; ".join(changed[:limit])
            more = f" and {len(changed) - limit} more" if len(changed) > limit else ""
            lines.append(f"  changed ({len(self.changed)}): {shown}{more}")
        for key, message in self.fatal.items():
            lines.append(f"  FATAL {describe(key)}: {message}")
        for key, message in self.errors.items():
            lines.append(f"  ERROR {describe(key)}: {message}")
        if self.unsettled:
            lines.append(f"  unsettled after {SETTLE_LIMIT} reconciles: {names(self.unsettled)}")
        if self.quiet:
            lines.append("  (nothing changed)")
        return "\n".join(lines)


class DeletionBlockedError(RuntimeError):
    """A Usage protects the object from deletion (the API server refuses the request)."""


# --- canonical state -----------------------------------------------------------------------

_VOLATILE = ("lastTransitionTime", "resourceVersion")


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def canonical(obj: Mapping[str, Any]) -> str:
    """Return an object as canonical JSON, without fields that change on their own."""
    return json.dumps(_strip(obj), sort_keys=True, separators=(",", ":"))


def _top_level_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    out = []
    for name in sorted(set(before) | set(after)):
        if canonical({"v": before.get(name)}) == canonical({"v": after.get(name)}):
            continue
        old, new = before.get(name), after.get(name)
        if isinstance(old, dict) and isinstance(new, dict):
            out += [f"{name}.{sub}" for sub in _top_level_diff(old, new)] or [name]
        else:
            out.append(name)
    return out


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
        keys = [k for k, o in self.store.items() if fakes.is_composite(o) and k[1] in known]
        return sorted(keys, key=lambda k: (order.get(k[1], len(order)), k[2], k[3]))

    def composed_by(self, key: Key) -> list[Key]:
        """Return the resources composite ``key`` controls, sorted."""
        uid = fakes.uid_of(self.store.get(key) or {})
        if not uid:
            return []
        return sorted(k for k, o in self.store.items() if fakes.controller_uid(o) == uid)

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
        return fakes.conditions_of(self.store.get(key))

    def ready(self, key: Key) -> bool:
        """Tell whether an object reports ``Ready=True``."""
        return fakes.condition_is(self.store.get(key), "Ready")

    def state(self, key: Key) -> str:
        """Describe where a composite stands: its conditions, and what is not Ready below it."""
        obj = self.store.get(key)
        if obj is None:
            return f"{describe(key)}: does not exist"
        conditions = fakes.conditions_of(obj)
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
                fakes.group_of(of) == group
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
            if not fakes.is_composite(self.store[k]) and fakes.reporter_for(self.store[k])
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
        result = Reconciled(key)
        xr = self.get(key)
        api = apis()[key[1]]
        view = self._views()
        observed_keys = self.composed_by(key)
        observed = [view(k) for k in observed_keys]
        skip = {key, *observed_keys}
        if frozen is None:
            required = [view(k) for k in sorted(self.store) if k not in skip]
        else:
            required = [frozen[k] for k in sorted(frozen) if k not in skip]
        try:
            with deep_messages():
                out = engine.render_composite(
                    xr,
                    api.composition,
                    self.functions,
                    observed=observed,
                    required=required,
                    xrd=api.xrd,
                    timeout=RENDER_TIMEOUT_SECONDS,
                )
        except engine.EngineError as err:
            result.error = " ".join(str(err).split())
            self._notify(result)
            return result
        result.events = [f"{e.type} {e.reason}: {e.message}" for e in out.events]
        if out.fatal:
            result.fatal = " ".join(out.error.split()) or "Fatal result (no message)"
        refused: list[str] = []
        for applied in out.composed:
            problems = fakes.admission_problems(applied)
            if problems:  # the API server refuses the apply (422); Crossplane warns, goes on
                refused.append(f"{describe(key_of(applied))}: " + "; ".join(problems))
                continue
            result.applied.append(self._upsert(applied))
        if out.composite:
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
            _stamp_generation(obj)
        crossplane = (rendered.get("spec") or {}).get("crossplane")
        if crossplane is not None:
            obj.setdefault("spec", {})["crossplane"] = copy.deepcopy(crossplane)
        rendered_meta = rendered.get("metadata") or {}
        meta = obj.setdefault("metadata", {})
        for name in ("labels", "annotations"):
            added = rendered_meta.get(name) or {}
            if added:
                meta[name] = {**(meta.get(name) or {}), **added}
        self.store[key] = obj

    def _unsynced(self, key: Key, message: str) -> None:
        """Set a composite's Synced condition False, as Crossplane does when an apply fails."""
        obj = self.store[key]
        status = obj.setdefault("status", {})
        kept = [c for c in status.get("conditions") or [] if c.get("type") != "Synced"]
        synced = fakes.condition("Synced", False, "ReconcileError", message)
        status["conditions"] = [*kept, synced]

    def _upsert(self, applied: Mapping[str, Any]) -> Key:
        """Server-side apply of a composed resource: Crossplane's fields, the status kept."""
        obj = copy.deepcopy(dict(applied))
        key = key_of(obj)
        meta = obj.setdefault("metadata", {})
        meta.pop("resourceVersion", None)
        obj.pop("status", None)
        previous = self.store.get(key)
        if fakes.is_composite(obj):
            meta["generation"] = _generation(previous, obj)
        if previous is None:
            self._stamp(meta)
        else:
            meta["creationTimestamp"] = (previous.get("metadata") or {}).get("creationTimestamp")
        if previous is not None:
            meta["uid"] = fakes.uid_of(previous)
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
            live = {fakes.uid_of(o) for o in self.store.values()}
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
        record.diffs = {
            k: _top_level_diff(before_objects[k], self.store[k]) for k in record.changed
        }
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


SYSTEM_CONDITIONS = ("Ready", "Synced")


def _stamp_generation(obj: dict[str, Any]) -> None:
    """Stamp the reconciler's own conditions with the generation it reconciled.

    Crossplane's composite reconciler marks Ready and Synced through its
    ObservedGenerationPropagationManager (``observedGeneration: metadata.generation``);
    the render engine's in-memory reconcile leaves the field out, so it is put here as
    the real controller writes it.
    """
    generation = (obj.get("metadata") or {}).get("generation")
    if generation is None:
        return
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") in SYSTEM_CONDITIONS:
            cond["observedGeneration"] = generation


def _generation(previous: Mapping[str, Any] | None, obj: Mapping[str, Any]) -> int:
    """A composite's ``metadata.generation`` as the API server keeps it: +1 per spec change.

    Crossplane stamps each condition with the generation it observed, so a composite's
    Ready tells whether it speaks of the current spec (a rolling update relies on it).
    """

    def spec(o: Mapping[str, Any]) -> Any:
        return {k: v for k, v in (o.get("spec") or {}).items() if k != "crossplane"}

    if previous is None:
        return 1
    generation = int((previous.get("metadata") or {}).get("generation") or 1)
    return generation + 1 if spec(previous) != spec(obj) else generation


def history_text(records: Iterable[PassRecord]) -> str:
    """Join pass summaries for a failure message."""
    return "\n".join(r.summary() for r in records)
