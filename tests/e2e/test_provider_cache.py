"""e2e/providers.py reconciles from what its watches showed, as a real provider reads its
informer cache: a resync of every object costs no request for an object whose status
stands, and a status it wrote is what it compares with next."""

from __future__ import annotations

import time
from typing import Any

from e2e.providers import Providers
from tests.e2e.test_providers import MemoryKube

API = "kubernetes.m.crossplane.io/v1alpha1"


class CountingKube(MemoryKube):
    def __init__(self, *objects: dict[str, Any]) -> None:
        super().__init__(*objects)
        self.gets = 0

    def get(self, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        self.gets += 1
        return super().get(*args, **kwargs)


def _object(version: str) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "Object",
        "metadata": {"name": "o", "namespace": "n", "resourceVersion": version,
                     "creationTimestamp": "2025-01-01T00:00:00Z"},
        "spec": {"forProvider": {"manifest": {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}}},
        "status": {"atProvider": {}},
    }  # fmt: skip


def test_a_resync_reads_the_cache_and_writes_a_status_once() -> None:
    kube = CountingKube(_object("5"))
    providers = Providers(kube, rate=1000, state=None)  # type: ignore[arg-type]
    key = (API, "Object", "n", "o")
    providers.remember(key, _object("5"))
    providers.seen[key] = time.monotonic() - 60  # created a minute ago: provisioned
    for _ in range(3):  # the watch's event, then two resyncs
        providers.reconcile(*key)
    assert (kube.puts, kube.gets) == (1, 0)
    stored = kube.get(API, "Object", "o", "n")
    assert stored is not None
    assert {c["type"]: c["status"] for c in stored["status"]["conditions"]} == {
        "Synced": "True",
        "Ready": "True",
    }


def test_an_older_watch_event_does_not_replace_a_status_written_since() -> None:
    providers = Providers(MemoryKube(), rate=1000, state=None)  # type: ignore[arg-type]
    key = (API, "Object", "n", "o")
    providers.remember(key, _object("7"))
    providers.remember(key, _object("6"))  # an event from before the write, late
    assert providers.cache[key]["metadata"]["resourceVersion"] == "7"
    providers.remember(key, _object("8"))
    assert providers.cache[key]["metadata"]["resourceVersion"] == "8"
