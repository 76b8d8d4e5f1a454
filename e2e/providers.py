"""Fake providers: what provider-kubernetes, provider-helm, the cloud providers and the
control plane's Traefik would report, with nothing real behind them, against a real
kube-apiserver. What each kind reports is the fake-provider library's
(:mod:`modelplane.dev.fakes`, which the loop tests run too); this module is the
plumbing: watches, a work queue, pacing, status writes.

For every managed resource (a CRD in ``*.m.upbound.io``, ``helm.m.crossplane.io`` or
``kubernetes[.m].crossplane.io`` with a ``spec.forProvider``) it writes what the real
provider writes once the external resource exists:

- ``Synced`` and ``Ready`` conditions (``ReconcileSuccess``, ``Available``); an Object's
  ``Ready`` follows its ``spec.readiness`` (:func:`modelplane.dev.fakes.kubernetes.readiness`);
- ``status.atProvider``: a cloud resource's (:func:`modelplane.dev.fakes.cloud.observe`);
  a Release's ``state: deployed``, revision and chart version; an Object's ``manifest``,
  the wrapped object as the workload cluster would return it (:mod:`e2e.workloads`);
- the connection Secret named by ``spec.writeConnectionSecretToRef``, with the
  connection details the cloud's provider publishes.

A Release installed on the control plane itself (through a ClusterProviderConfig with
``InjectedIdentity``) has the effect there that the chart would: ``gateway-crds-helm``
installs the Gateway API CRDs, ``metallb`` MetalLB's CRDs, and ``traefik`` starts the
gateway controller below.

The control plane's Traefik: GatewayClasses of ``traefik.io/gateway-controller`` are
Accepted, their Gateways Programmed with an address (the first of the MetalLB pool),
HTTPRoutes attached to them Accepted (``ResolvedRefs`` only when the backend Services
exist).

Like a real provider, it reconciles from what its watches showed (an informer's cache),
with several workers (``--workers``), each object with one worker at a time
(:mod:`e2e.workqueue`), and every object again every 30 s. A stats line every 30 s says
what it did; ``kill -USR1`` writes every thread's stack to its log.

Writes are paced (``--writes-per-second`` in all, and per root composite: see
``PER_COMPOSITE_RATE``) with Crossplane's per-composite watch circuit breaker (burst
100, refill 1/s) in mind, and a status is written only when it changes (a status the API
server pruned counts as unchanged), so no write ever loops.

A resource can be made to flap: the ConfigMap ``crossplane-system/e2e-fake-providers``
lists under ``notReady`` patterns (fnmatch) of ``<kind>.<group> <namespace>/<name>``;
matching resources report ``Ready=False`` (``Unavailable``) until removed from it.

    python -m e2e.providers
"""

from __future__ import annotations

import argparse
import copy
import faulthandler
import fnmatch
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from modelplane.dev.fakes import base, cloud, gateway, helm, kubernetes

from e2e import modules
from e2e.kube import Kube, KubeError, Obj, dig
from e2e.workloads import observed_manifest
from e2e.workqueue import WorkQueue
from e2e.writes import Deferred, Pacer, merge_conditions, same_but_times, strip_times, with_times

log = logging.getLogger("e2e.providers")
Key = tuple[str, str, str, str]  # apiVersion, kind, namespace, name

CRD_API = "apiextensions.k8s.io/v1"
GATEWAY_GROUP = base.GATEWAY_GROUP
GATEWAY_KINDS = gateway.KINDS
TRAEFIK_CONTROLLER = gateway.TRAEFIK_CONTROLLER_NAME
WORKLOAD_GATEWAY_CONTROLLER = gateway.ENVOY_CONTROLLER_NAME
CONTROL_NAMESPACE = "crossplane-system"
FLAPS = "e2e-fake-providers"
PROVISION_SECONDS = 1.5
# Crossplane opens a composite's watch circuit breaker when the events that map to it
# exceed a bucket of 100 that refills by 1 a second; then it drops them for 5 minutes
# but for a probe every 30 s (and the --poll-interval, 10 s here). Measured here, most of
# a composite's budget is Crossplane's own: the creates, and two updates of the
# composite's status per reconcile (conditions, then managed fields), each of which
# wakes the composite above it: ~110 events for a ServingStack of 15 resources, ~7 per
# composed resource. A trickle of writes costs more than a burst (each write is its own
# reconcile), so the writes are paced to what a fast provider would do, not below the
# breaker: 10 a second in all, and under one root composite (label
# crossplane.io/composite) 40 at once, then 2 a second. A composite of more than ~14
# resources made Ready within a minute trips the breaker whatever the pace; the 10 s
# poll bounds what that costs.
COMPOSITE_LABEL = "crossplane.io/composite"
PER_COMPOSITE_BURST = 40
PER_COMPOSITE_RATE = 2.0


def _version(obj: Mapping[str, Any]) -> int:
    """An object's resourceVersion as a number (etcd's revision; 0 if it is not one)."""
    version = str(dig(obj, "metadata", "resourceVersion") or "")
    return int(version) if version.isdigit() else 0


def managed_group(group: str) -> bool:
    return group.endswith(".m.upbound.io") or group in {
        base.HELM_GROUP,
        base.KUBERNETES_GROUP,
        "kubernetes.crossplane.io",
    }


# -- the providers -------------------------------------------------------------------------


class Providers:
    # API groups left to a real provider (--real-kubernetes: provider-kubernetes' Objects).
    real_groups: frozenset[str] = frozenset()

    def __init__(self, kube: Kube, rate: float, state: Path | None, workers: int = 1) -> None:
        self.kube = kube
        self.workers = workers
        self.pacer = Pacer(rate, burst=int(rate * 2))
        self.state = state
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.queue: WorkQueue[Key] = WorkQueue()
        self.watched: set[tuple[str, str]] = set()
        self.flaps: list[str] = []
        self.traefik = False
        self.installed: set[str] = set()
        self.seen: dict[Key, float] = {}  # when the watch first showed each object
        # The latest of every object the watches showed (an informer's cache): a reconcile
        # reads it, not the API server, as a real provider reads its cache. A status PUT
        # from a stale copy fails on its resourceVersion (409) and is retried once the
        # watch brings the newer one.
        self.cache: dict[Key, Obj] = {}
        self.namespaces: set[str] = set()  # created for Releases on the control plane
        self.secrets: set[tuple[str, str]] = set()  # connection Secrets written
        self.written: dict[Key, tuple[str, str]] = {}
        self.composites: dict[str, Pacer] = {}
        # What the loop did since the last stats line (log_stats): a quiet provider shows
        # here whether it had nothing to do, waited on a pacer, or lost its conflicts.
        self.counts: dict[str, int] = {}
        self.events: dict[str, int] = {}

    def count(self, what: str, counts: dict[str, int] | None = None) -> None:
        with self.lock:
            counts = self.counts if counts is None else counts
            counts[what] = counts.get(what, 0) + 1

    def log_stats(self) -> None:
        queued, due = self.queue.counts()
        with self.lock:
            counts, self.counts = self.counts, {}
            events, self.events = self.events, {}
        log.info("stats: %d seen, %d queued (%d due); %s; watch events %s", len(self.seen),
                 queued, due, json.dumps(counts, sort_keys=True),
                 json.dumps(events, sort_keys=True))  # fmt: skip

    # -- queue ----------------------------------------------------------------------

    def enqueue(self, api_version: str, kind: str, ns: str, name: str, delay: float = 0) -> None:
        self.queue.add((api_version, kind, ns, name), delay)

    def requeue_all(self, kinds: tuple[str, ...] | None = None) -> None:
        for api_version, kind, ns, name in list(self.cache):
            if kinds is None or kind in kinds:
                self.enqueue(api_version, kind, ns, name)

    # -- watches --------------------------------------------------------------------

    def watch_kind(self, api_version: str, kind: str) -> None:
        with self.lock:
            if (api_version, kind) in self.watched:
                return
            self.watched.add((api_version, kind))

        def run() -> None:
            while not self.stop.is_set():
                try:
                    for event, obj in self.kube.watch(api_version, kind, self.stop):
                        meta = obj.get("metadata", {})
                        key = (api_version, kind, meta.get("namespace", ""), meta.get("name", ""))
                        self.count(kind, self.events)
                        if event == "DELETED":
                            self.forget(key)
                            if kind in ("HTTPRoute", "Service"):
                                self.requeue_all(("Gateway", "HTTPRoute"))
                            continue
                        self.seen.setdefault(key, time.monotonic())
                        self.remember(key, obj)
                        self.enqueue(*key)
                        if kind == "HTTPRoute":
                            self.requeue_all(("Gateway",))
                except KubeError as exc:
                    log.warning("watch %s %s: %s", kind, api_version, exc)
                    time.sleep(2)

        threading.Thread(target=run, daemon=True, name=f"watch-{kind}").start()
        log.info("watching %s.%s", kind, api_version)

    def watch_crds(self) -> None:
        for _, crd in self.kube.watch(CRD_API, "CustomResourceDefinition", self.stop):
            spec = crd.get("spec", {})
            group = spec.get("group", "")
            kind = dig(spec, "names", "kind")
            versions = [v for v in spec.get("versions", []) if v.get("served")]
            storage = [v for v in versions if v.get("storage")] or versions
            if not storage or not kind:
                continue
            api_version = f"{group}/{storage[0]['name']}"
            if managed_group(group) and group not in self.real_groups:
                schema = (
                    dig(storage[0], "schema", "openAPIV3Schema", "properties", "spec", "properties")
                    or {}
                )
                if "forProvider" in schema:
                    self.watch_kind(api_version, kind)
            elif group == GATEWAY_GROUP and kind in GATEWAY_KINDS:
                self.watch_kind(f"{GATEWAY_GROUP}/v1", kind)

    def watch_flaps(self) -> None:
        while not self.stop.is_set():
            try:
                for event, cm in self.kube.watch("v1", "ConfigMap", self.stop):
                    meta = cm.get("metadata", {})
                    if meta.get("name") != FLAPS or meta.get("namespace") != CONTROL_NAMESPACE:
                        continue
                    text = "" if event == "DELETED" else (cm.get("data") or {}).get("notReady", "")
                    flaps = [line.strip() for line in text.splitlines() if line.strip()]
                    if flaps != self.flaps:
                        self.flaps = flaps
                        log.info("not ready on purpose: %s", flaps or "nothing")
                        self.requeue_all()
            except KubeError as exc:
                log.warning("watch flaps: %s", exc)
                time.sleep(2)

    # -- reconcile ------------------------------------------------------------------

    def flapping(self, obj: Mapping[str, Any]) -> bool:
        api_version = str(obj.get("apiVersion", ""))
        group = api_version.split("/")[0]
        meta = obj["metadata"]
        ident = f"{obj['kind']}.{group} {meta.get('namespace', '')}/{meta['name']}"
        return any(fnmatch.fnmatchcase(ident, pattern) for pattern in self.flaps)

    def remember(self, key: Key, obj: Obj) -> None:
        """Keep ``obj`` as the latest of ``key`` unless the cache has a newer one (a
        status this provider wrote, ahead of the watch event that reports it)."""
        with self.lock:
            held = self.cache.get(key)
            if held is None or _version(held) <= _version(obj):
                self.cache[key] = obj

    def reconcile(self, api_version: str, kind: str, ns: str, name: str) -> None:
        key = (api_version, kind, ns, name)
        with self.lock:
            cached = self.cache.get(key)
        if cached is None or cached["metadata"].get("deletionTimestamp"):
            return
        obj = copy.deepcopy(cached)
        obj.setdefault("apiVersion", api_version)
        obj.setdefault("kind", kind)
        group = api_version.split("/")[0]
        if group == GATEWAY_GROUP:
            self.reconcile_gateway_api(obj)
            return
        first = self.seen.get((api_version, kind, ns, name), time.monotonic())
        age = time.monotonic() - first
        if not dig(obj, "status", "atProvider") and age < PROVISION_SECONDS:
            # Creating takes a moment; come back then.
            self.enqueue(api_version, kind, ns, name, PROVISION_SECONDS - age)
            return
        at_provider, ready = self.observe(obj)
        ready = ready and not self.flapping(obj)
        wanted = [
            base.condition("Synced", True, "ReconcileSuccess"),
            base.condition("Ready", True, "Available")
            if ready
            else base.condition("Ready", False, "Unavailable", "e2e: made unavailable on purpose"),
        ]
        status = obj.get("status") or {}
        key = (api_version, kind, ns, name)
        wanted_json = json.dumps(at_provider, sort_keys=True)
        seen_json = json.dumps(status.get("atProvider"), sort_keys=True)
        # The API server prunes fields a CRD's schema lacks (an arn, say): what we wrote
        # last and what it kept are as good as equal.
        same = seen_json == wanted_json or self.written.get(key) == (wanted_json, seen_json)
        if same and strip_times(status.get("conditions")) == strip_times(wanted):
            return
        new = copy.deepcopy(obj)
        new["status"] = {
            **status,
            "atProvider": at_provider,
            "conditions": merge_conditions(status.get("conditions") or [], wanted),
        }
        stored = self.write_status(new)
        self.written[key] = (
            wanted_json,
            json.dumps(dig(stored, "status", "atProvider"), sort_keys=True),
        )
        log.info("%s %s/%s: %s", kind, ns, name, "Ready" if ready else "NOT Ready (flap)")

    def observe(self, obj: Obj) -> tuple[dict[str, Any], bool]:
        """What the resource's provider reports (the library's), and whether it is Ready;
        a connection Secret written on the way."""
        group = str(obj["apiVersion"]).split("/")[0]
        if obj["kind"] == "Release":
            return self.release(obj), True
        if group.startswith("kubernetes."):
            cluster = str(dig(obj, "spec", "providerConfigRef", "name") or "default")
            applied = observed_manifest(obj, cluster)
            return {"manifest": applied}, self.object_ready(obj, applied)
        config = None
        if group.endswith("gcp.m.upbound.io"):  # GCP's provider config names the project
            config_name = str(dig(obj, "spec", "providerConfigRef", "name") or "default")
            config = self.kube.get(
                cloud.family(group) + "/v1beta1", "ClusterProviderConfig", config_name
            )
        at_provider, details = cloud.observe(obj, config)
        target = str(dig(obj, "spec", "writeConnectionSecretToRef", "name") or "")
        if target:
            self.connection_secret(cloud.connection_secret(obj, target, details))
        return at_provider, True

    @staticmethod
    def object_ready(obj: Mapping[str, Any], applied: Mapping[str, Any]) -> bool:
        """``Ready`` as provider-kubernetes derives it from ``spec.readiness``."""
        try:
            return kubernetes.readiness(obj, applied)[0]
        except ValueError as exc:  # a query the library cannot read: Ready, as e2e always was
            log.warning("%s: %s", obj["metadata"]["name"], exc)
            return True

    def write_status(self, obj: Obj) -> Obj:
        """PUT the status, paced globally and per composite; return what was stored."""
        meta = obj["metadata"]
        # The root composite, whose breaker counts every write under it.
        composite = (meta.get("labels") or {}).get(COMPOSITE_LABEL) or next(
            (o.get("uid") for o in meta.get("ownerReferences") or [] if o.get("controller")),
            None,
        )
        if composite:
            with self.lock:
                pacer = self.composites.setdefault(
                    composite, Pacer(PER_COMPOSITE_RATE, PER_COMPOSITE_BURST)
                )
            wait = pacer.try_take()
            if wait:
                raise Deferred(wait)
        self.pacer.take()
        r = self.kube.resource(obj["apiVersion"], obj["kind"])
        stored: Obj = self.kube.request(
            "PUT", r.path(meta.get("namespace"), meta["name"], "status"), body=obj
        )
        self.count("written")
        key = (obj["apiVersion"], obj["kind"], meta.get("namespace") or "", meta["name"])
        self.remember(key, stored)
        return stored

    def release(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """A Release on the control plane has its chart's effects here (below)."""
        config = str(dig(obj, "spec", "providerConfigRef", "name") or "default")
        if self.on_control_plane(obj, config):
            namespace = dig(obj, "spec", "forProvider", "namespace")
            skip = dig(obj, "spec", "forProvider", "skipCreateNamespace")
            if namespace and not skip and namespace not in self.namespaces:
                # helm install --create-namespace
                self.namespaces.add(namespace)
                self.kube.apply(
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
                    manager="helm",
                )
            self.chart_effects(str(helm.chart_of(obj).get("name", "")))
        return helm.observe(obj)

    def on_control_plane(self, obj: Mapping[str, Any], config: str) -> bool:
        kind = str(dig(obj, "spec", "providerConfigRef", "kind") or "ClusterProviderConfig")
        group = str(obj["apiVersion"]).split("/")[0]
        version = "v1beta1" if group.startswith("helm.") else "v1alpha1"
        ns = obj["metadata"].get("namespace") if kind == "ProviderConfig" else None
        pc = self.kube.get(f"{group}/{version}", kind, config, ns)
        return bool(dig(pc, "spec", "credentials", "source") == "InjectedIdentity")

    def chart_effects(self, chart: str) -> None:
        if chart in self.installed:
            return
        dirs = modules.load(self.state)
        files: list[Path] = []
        if chart == "gateway-crds-helm":
            files = sorted((dirs["sigs.k8s.io/gateway-api"] / "config/crd/standard").glob("*.yaml"))
        elif chart == "metallb":
            files = sorted((dirs["go.universe.tf/metallb"] / "config/crd/bases").glob("*.yaml"))
        elif chart == "traefik":
            self.traefik = True
            self.requeue_all(GATEWAY_KINDS)
        for path in files:
            for crd in yaml.safe_load_all(path.read_text()):
                if not isinstance(crd, dict) or crd.get("kind") != "CustomResourceDefinition":
                    continue
                crd["spec"]["conversion"] = {"strategy": "None"}
                crd.pop("status", None)
                self.kube.apply(crd, manager="helm")
        if files:
            log.info("chart %s: installed %d CRDs on the control plane", chart, len(files))
        self.installed.add(chart)

    def connection_secret(self, secret: Obj) -> None:
        """Write the connection Secret the library says, once."""
        meta = secret["metadata"]
        written = (meta["namespace"], meta["name"])
        if written in self.secrets:
            return
        if self.kube.get("v1", "Secret", meta["name"], meta["namespace"]) is not None:
            self.secrets.add(written)
            return
        self.pacer.take()
        self.kube.apply(secret, manager="fake-provider")
        self.secrets.add(written)
        owner = meta["ownerReferences"][0]
        log.info("%s %s/%s: wrote connection Secret %s", owner["kind"], meta["namespace"],
                 owner["name"], meta["name"])  # fmt: skip

    # -- the control plane's Traefik --------------------------------------------------

    def ours(self, class_name: str) -> bool:
        gc = self.kube.get(f"{GATEWAY_GROUP}/v1", "GatewayClass", class_name)
        return bool(dig(gc, "spec", "controllerName") == TRAEFIK_CONTROLLER)

    def lb_address(self) -> str:
        if not self.kube.served("metallb.io/v1beta1", "IPAddressPool"):
            return gateway.CLOUD_LB_ADDRESS
        return gateway.first_pool_address(self.kube.list("metallb.io/v1beta1", "IPAddressPool"))

    def lookup(self, kind: str, namespace: str, name: str) -> Obj | None:
        """An object on the control plane, for the library's Gateway API controller."""
        api_version = f"{GATEWAY_GROUP}/v1" if kind in GATEWAY_KINDS else "v1"
        return self.kube.get(api_version, kind, name, namespace or None)

    def attached(self, obj: Mapping[str, Any]) -> dict[str, int]:
        """The HTTPRoutes attached to each listener of a Gateway."""
        meta = obj["metadata"]
        out: dict[str, int] = {}
        for route in self.kube.list(f"{GATEWAY_GROUP}/v1", "HTTPRoute"):
            for ref in dig(route, "spec", "parentRefs") or []:
                rns = ref.get("namespace") or route["metadata"]["namespace"]
                if ref.get("name") == meta["name"] and rns == meta["namespace"]:
                    for listener in dig(obj, "spec", "listeners") or []:
                        if ref.get("sectionName") in (None, listener["name"]):
                            out[listener["name"]] = out.get(listener["name"], 0) + 1
        return out

    def reconcile_gateway_api(self, obj: Obj) -> None:
        """Traefik: the library's Gateway API status, written when it changes."""
        if not self.traefik or not self.handles(obj):
            return
        kind = obj["kind"]
        meta = obj["metadata"]
        attached = self.attached(obj) if kind == "Gateway" else None
        wanted = gateway.status(
            obj, True, TRAEFIK_CONTROLLER, self.lb_address(), self.lookup, attached
        )
        if not wanted:
            return
        status = obj.get("status") or {}
        new_status = with_times(status, wanted, int(meta.get("generation", 1)))
        if same_but_times(status, new_status):
            return
        new = copy.deepcopy(obj)
        new["status"] = {**status, **new_status}
        self.write_status(new)
        log.info("traefik: %s %s/%s status written", kind, meta.get("namespace", ""), meta["name"])
        if kind == "Gateway":  # its routes' parents are Programmed now
            self.requeue_all(("HTTPRoute",))

    def handles(self, obj: Mapping[str, Any]) -> bool:
        """Traefik's own: its GatewayClasses, their Gateways, the routes to them."""
        kind = obj["kind"]
        if kind == "GatewayClass":
            return bool(dig(obj, "spec", "controllerName") == TRAEFIK_CONTROLLER)
        if kind == "Gateway":
            return self.ours(str(dig(obj, "spec", "gatewayClassName") or ""))
        namespace = obj["metadata"]["namespace"]
        for ref in dig(obj, "spec", "parentRefs") or []:
            gw = self.lookup("Gateway", ref.get("namespace") or namespace, ref.get("name", ""))
            if gw is not None and self.ours(str(dig(gw, "spec", "gatewayClassName") or "")):
                return True
        return False

    # -- main loop --------------------------------------------------------------------

    def run(self) -> None:
        threading.Thread(target=self.watch_crds, daemon=True, name="watch-crds").start()
        threading.Thread(target=self.watch_flaps, daemon=True, name="watch-flaps").start()

        def resync() -> None:
            while not self.stop.wait(30):
                self.log_stats()
                self.requeue_all()

        threading.Thread(target=resync, daemon=True, name="resync").start()
        for i in range(1, self.workers):
            threading.Thread(target=self.work, daemon=True, name=f"worker-{i}").start()
        self.work()

    def work(self) -> None:
        """One worker: take a key, reconcile it, retry what failed later."""
        while True:
            key = self.queue.get()
            self.count("reconcile")
            try:
                self.reconcile(*key)
            except Deferred as deferred:
                self.count("deferred")
                self.enqueue(*key, delay=deferred.seconds)
            except KubeError as exc:
                self.count(f"error {exc.status}")
                if exc.status == 404:  # gone while the watch was away (a relist misses it)
                    self.forget(key)
                else:
                    if exc.status != 409:
                        log.warning("%s %s/%s: %s", key[1], key[2], key[3], exc)
                    self.enqueue(*key, delay=1)
            except Exception:
                log.exception("%s %s/%s", key[1], key[2], key[3])
                self.enqueue(*key, delay=5)
            finally:
                self.queue.done(key)

    def forget(self, key: Key) -> None:
        with self.lock:
            self.cache.pop(key, None)
            self.seen.pop(key, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--writes-per-second", type=float, default=10.0)
    # provider-kubernetes reconciles 10 at once (--max-reconcile-rate); one worker waiting
    # on a loaded API server reconciled 1 to 3 a second, behind a resync of every object.
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument(
        "--real-kubernetes",
        action="store_true",
        help="leave provider-kubernetes' Objects to the real provider (make e2e-fleet)",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    # kill -USR1 <pid>: every thread's stack in the log, to see what a quiet provider waits on.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    state = os.environ.get("E2E_STATE")
    providers = Providers(
        Kube(), args.writes_per_second, Path(state) if state else None, args.workers
    )
    if args.real_kubernetes:
        providers.real_groups = frozenset(
            {"kubernetes.crossplane.io", "kubernetes.m.crossplane.io"}
        )
    providers.run()


if __name__ == "__main__":
    main()
