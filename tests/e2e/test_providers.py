"""e2e/providers.py's plumbing around the fake-provider library: it writes what the
library reports, to a (here, in-memory) API server, and writes nothing that only a
time would change, so no write loops."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from e2e.providers import Providers
from e2e.workloads import gateway_status, observed_manifest
from e2e.writes import merge_conditions, same_but_times, strip_times

GW = "gateway.networking.k8s.io/v1"
Obj = dict[str, Any]


class Resource:
    def __init__(self, api_version: str, kind: str) -> None:
        self.key = (api_version, kind)

    def path(self, namespace: str | None, name: str, sub: str | None = None) -> tuple[Any, ...]:
        return (*self.key, namespace or "", name)


class MemoryKube:
    """The few calls the providers make, over a dict; PUTs counted."""

    def __init__(self, *objects: Obj) -> None:
        self.objects = {self._key(o): copy.deepcopy(o) for o in objects}
        self.puts = 0

    @staticmethod
    def _key(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
        meta = obj["metadata"]
        return (obj["apiVersion"], obj["kind"], meta.get("namespace") or "", meta["name"])

    def resource(self, api_version: str, kind: str) -> Resource:
        return Resource(api_version, kind)

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> Obj | None:
        found = self.objects.get((api_version, kind, namespace or "", name))
        return copy.deepcopy(found) if found else None

    def list(self, api_version: str, kind: str) -> list[Obj]:
        return [copy.deepcopy(o) for k, o in self.objects.items() if k[:2] == (api_version, kind)]

    def served(self, api_version: str, kind: str) -> bool:
        return False

    def request(self, method: str, path: tuple[Any, ...], body: Obj) -> Obj:
        self.puts += 1
        self.objects[path] = copy.deepcopy(body)
        return copy.deepcopy(body)


def traefik_objects() -> list[Obj]:
    return [
        {"apiVersion": GW, "kind": "GatewayClass", "metadata": {"name": "traefik", "generation": 1},
         "spec": {"controllerName": "traefik.io/gateway-controller"}},
        {"apiVersion": GW, "kind": "Gateway",
         "metadata": {"name": "gw", "namespace": "modelplane-system", "generation": 2},
         "spec": {"gatewayClassName": "traefik", "listeners": [{"name": "http", "port": 80}]}},
        {"apiVersion": GW, "kind": "HTTPRoute", "metadata": {"name": "r", "namespace": "team"},
         "spec": {"parentRefs": [{"name": "gw", "namespace": "modelplane-system"}],
                  "rules": [{"backendRefs": [{"name": "svc"}]}]}},
    ]  # fmt: skip


def reconcile_all(providers: Providers, kube: MemoryKube) -> None:
    for kind in ("GatewayClass", "Gateway", "HTTPRoute"):
        for obj in kube.list(GW, kind):
            providers.reconcile_gateway_api(obj)


def test_traefik_writes_each_status_once_then_nothing() -> None:
    kube = MemoryKube(*traefik_objects())
    providers = Providers(kube, rate=1000, state=None)  # type: ignore[arg-type]
    providers.traefik = True
    reconcile_all(providers, kube)
    reconcile_all(providers, kube)  # the route, now that its Gateway is Programmed
    written = kube.puts
    reconcile_all(providers, kube)
    assert kube.puts == written  # a second look changes nothing
    gw = kube.get(GW, "Gateway", "gw", "modelplane-system")
    assert gw is not None
    assert gw["status"]["addresses"] == [{"type": "IPAddress", "value": "198.51.100.10"}]
    assert gw["status"]["listeners"][0]["attachedRoutes"] == 1
    assert all(c["observedGeneration"] == 2 for c in gw["status"]["conditions"])
    route = kube.get(GW, "HTTPRoute", "r", "team")
    assert route is not None
    (parent,) = route["status"]["parents"]
    resolved = {c["type"]: c for c in parent["conditions"]}["ResolvedRefs"]
    assert resolved["reason"] == "BackendNotFound"  # no Service svc on the control plane


def test_every_condition_written_carries_what_the_gateway_api_crds_require() -> None:
    status = gateway_status(
        {"listeners": [{"name": "http"}]}, [{"type": "IPAddress", "value": "a"}], {}
    )
    conds = [*status["conditions"], *status["listeners"][0]["conditions"]]
    assert all(
        {"type", "status", "reason", "message", "lastTransitionTime"} <= set(c) for c in conds
    )


def test_a_condition_keeps_its_time_while_its_status_stays() -> None:
    first = merge_conditions([], [{"type": "Ready", "status": "True", "reason": "A"}])
    again = merge_conditions(first, [{"type": "Ready", "status": "True", "reason": "A"}])
    assert again[0]["lastTransitionTime"] == first[0]["lastTransitionTime"]
    assert again[0]["message"] == ""
    assert strip_times(first) == strip_times(again)
    assert same_but_times({"conditions": first}, {"conditions": again})


def test_an_object_reports_its_manifest_as_the_workload_cluster_would() -> None:
    obj = {
        "metadata": {"name": "o", "creationTimestamp": "2025-01-01T00:00:00Z"},
        "spec": {"forProvider": {"manifest": {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "n"},
            "spec": {"type": "LoadBalancer"}}}},
    }  # fmt: skip
    manifest = observed_manifest(obj, "c")
    assert manifest["spec"]["clusterIP"].startswith("10.96.")
    assert manifest["metadata"]["uid"]
    assert manifest["status"]["loadBalancer"]["ingress"][0]["ip"].startswith("203.0.113.")
    assert observed_manifest(obj, "c") == manifest
