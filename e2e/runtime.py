"""An External package runtime: what Crossplane's Deployment runtime does, for no pods.

Crossplane runs with ``--package-runtime=External``, so nothing runs a package's
runtime or reports on it. This does, for every ProviderRevision and FunctionRevision:

- a TLS server Secret ``<package>-tls-server`` in ``crossplane-system`` (``tls.crt``,
  ``tls.key``, ``ca.crt``), holding the certificate our function server presents (signed
  by Crossplane's root CA), named in the revision's ``status.tlsServerSecretName``;
- for a FunctionRevision, ``status.endpoint``: the address of ``modelplane-function
  all``, which serves every kind;
- ``RuntimeHealthy=True`` (and ``RuntimeActive=True``), as the Deployment runtime
  reports once its Deployment is available.

    python -m e2e.runtime --endpoint 127.0.0.1:9443 --tls-dir DIR
"""

from __future__ import annotations

import argparse
import base64
import datetime
import logging
import queue
import threading
import time
from pathlib import Path
from typing import Any

from e2e.kube import Kube, KubeError, conditions

NAMESPACE = "crossplane-system"
PKG = "pkg.crossplane.io/v1"
KINDS = ("FunctionRevision", "ProviderRevision")
PARENT_LABEL = "pkg.crossplane.io/package"
MANAGER = "modelplane-e2e-runtime"

log = logging.getLogger("e2e.runtime")


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Runtime:
    def __init__(self, kube: Kube, endpoint: str, tls_dir: Path) -> None:
        self.kube = kube
        self.endpoint = endpoint
        self.tls = {
            key: base64.b64encode((tls_dir / key).read_bytes()).decode()
            for key in ("tls.crt", "tls.key", "ca.crt")
        }
        self.secrets: set[str] = set()

    def secret(self, package: str) -> str:
        name = f"{package}-tls-server"
        if name not in self.secrets:
            self.kube.apply(
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {
                        "name": name,
                        "namespace": NAMESPACE,
                        "labels": {PARENT_LABEL: package},
                    },
                    "type": "kubernetes.io/tls",
                    "data": self.tls,
                },
                manager=MANAGER,
            )
            self.secrets.add(name)
        return name

    def reconcile(self, kind: str, name: str) -> None:
        rev = self.kube.get(PKG, kind, name)
        if rev is None or rev["metadata"].get("deletionTimestamp"):
            return
        package = rev["metadata"].get("labels", {}).get(PARENT_LABEL)
        if not package:
            return
        status = rev.get("status") or {}
        want: dict[str, Any] = {"tlsServerSecretName": self.secret(package)}
        if kind == "FunctionRevision":
            want["endpoint"] = self.endpoint
        conds = conditions(rev)
        healthy = conds.get("RuntimeHealthy", {}).get("status") == "True"
        active = conds.get("RuntimeActive", {}).get("status") == "True"
        if healthy and active and all(status.get(k) == v for k, v in want.items()):
            return
        merged = [
            c
            for c in status.get("conditions") or []
            if c.get("type") not in ("RuntimeHealthy", "RuntimeActive")
        ]
        merged.append(_condition("RuntimeHealthy", "HealthyPackageRevision", conds))
        merged.append(_condition("RuntimeActive", "ActiveRuntime", conds))
        patch = {
            "metadata": {"resourceVersion": rev["metadata"]["resourceVersion"]},
            "status": {**want, "conditions": merged},
        }
        self.kube.patch(PKG, kind, name, patch, sub="status")
        log.info("%s %s: runtime healthy, endpoint %s", kind, name, want.get("endpoint", "-"))


def _condition(kind: str, reason: str, current: dict[str, Any]) -> dict[str, Any]:
    old = current.get(kind, {})
    since = old.get("lastTransitionTime") if old.get("status") == "True" else None
    return {"type": kind, "status": "True", "reason": reason, "lastTransitionTime": since or now()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--endpoint", required=True, help="the function server's host:port")
    parser.add_argument("--tls-dir", required=True, type=Path, help="tls.crt, tls.key, ca.crt")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    kube = Kube()
    runtime = Runtime(kube, args.endpoint, args.tls_dir)
    work: queue.Queue[tuple[str, str]] = queue.Queue()
    stop = threading.Event()

    def watch(kind: str) -> None:
        while not stop.is_set():
            try:
                for _, obj in kube.watch(PKG, kind, stop):
                    work.put((kind, obj["metadata"]["name"]))
            except KubeError as exc:
                log.warning("watch %s: %s", kind, exc)
                time.sleep(2)

    def resync() -> None:
        while not stop.wait(20):
            for kind in KINDS:
                try:
                    for obj in kube.list(PKG, kind):
                        work.put((kind, obj["metadata"]["name"]))
                except KubeError as exc:
                    log.warning("resync %s: %s", kind, exc)

    for kind in KINDS:
        threading.Thread(target=watch, args=(kind,), daemon=True).start()
    threading.Thread(target=resync, daemon=True).start()
    log.info("External package runtime: functions at %s", args.endpoint)
    while True:
        kind, name = work.get()
        try:
            runtime.reconcile(kind, name)
        except KubeError as exc:
            if exc.status != 409:
                log.warning("%s %s: %s", kind, name, exc)
            time.sleep(0.5)
            work.put((kind, name))


if __name__ == "__main__":
    main()
