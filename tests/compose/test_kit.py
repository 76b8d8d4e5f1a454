"""The rules every function keeps, as the compose kit enforces them."""

from __future__ import annotations

from typing import Any

import pytest
from crossplane.function import response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import kit

from tests.requests import request

XR = {"apiVersion": "modelplane.ai/v1alpha1", "kind": "ModelReplica", "metadata": {"name": "r"}}


def _with(condition: str, status: str) -> dict[str, Any]:
    return {"status": {"conditions": [{"type": condition, "status": status}]}}


def _manifest(api_version: str, kind: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}


@pytest.mark.parametrize(
    ("api_version", "kind", "observed", "ready"),
    [
        # Managed resources, Objects, Releases and our composites: their Ready condition.
        ("eks.aws.m.upbound.io/v1beta1", "Cluster", _with("Ready", "True"), True),
        ("eks.aws.m.upbound.io/v1beta1", "Cluster", _with("Ready", "False"), False),
        ("eks.aws.m.upbound.io/v1beta1", "Cluster", {}, False),
        ("kubernetes.m.crossplane.io/v1alpha1", "Object", _with("Ready", "True"), True),
        ("kubernetes.m.crossplane.io/v1alpha1", "Object", _with("Synced", "True"), False),
        ("helm.m.crossplane.io/v1beta1", "Release", _with("Ready", "True"), True),
        ("infrastructure.modelplane.ai/v1alpha1", "ServingStack", _with("Ready", "False"), False),
        ("modelplane.ai/v1alpha1", "ModelReplica", _with("Ready", "True"), True),
        # Gateway API objects: their own condition.
        ("gateway.networking.k8s.io/v1", "Gateway", _with("Programmed", "True"), True),
        ("gateway.networking.k8s.io/v1", "Gateway", _with("Ready", "True"), False),
        ("gateway.networking.k8s.io/v1", "GatewayClass", _with("Accepted", "True"), True),
        # No readiness of their own: ready once they exist.
        ("kubernetes.m.crossplane.io/v1alpha1", "ClusterProviderConfig", {}, True),
        ("aws.m.upbound.io/v1beta1", "ProviderConfig", {}, True),
        ("protection.crossplane.io/v1beta1", "Usage", {}, True),
        ("v1", "Service", {}, True),
        ("discovery.k8s.io/v1", "EndpointSlice", {}, True),
        # Nothing exists yet: never ready.
        ("v1", "Service", None, False),
        ("protection.crossplane.io/v1beta1", "Usage", None, False),
    ],
)
def test_composed_readiness_follows_the_rule_for_the_kind(
    api_version: str, kind: str, observed: dict[str, Any] | None, ready: bool
) -> None:
    assert kit.composed_ready(_manifest(api_version, kind), observed) is ready


@kit.composer
def _composes(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> kit.Released:
    kit.compose(rsp, "object", _manifest("kubernetes.m.crossplane.io/v1alpha1", "Object"))
    kit.compose(rsp, "config", _manifest("aws.m.upbound.io/v1beta1", "ProviderConfig"))
    kit.compose(rsp, "stated", _manifest("v1", "Service"), ready=False)
    return kit.Released.NOTHING


def test_every_composed_resource_leaves_with_its_readiness_set() -> None:
    observed = {
        "object": {
            **_manifest("kubernetes.m.crossplane.io/v1alpha1", "Object"),
            **_with("Ready", "True"),
        },
        "config": _manifest("aws.m.upbound.io/v1beta1", "ProviderConfig"),
        "stated": _manifest("v1", "Service"),
    }
    rsp = response.to(request(XR, observed=observed))
    _composes(request(XR, observed=observed), rsp)
    got = {key: r.ready for key, r in rsp.desired.resources.items()}
    assert got == {"object": fnv1.READY_TRUE, "config": fnv1.READY_TRUE, "stated": fnv1.READY_FALSE}


def test_before_anything_exists_nothing_is_ready() -> None:
    req = request(XR)
    rsp = response.to(req)
    _composes(req, rsp)
    assert {r.ready for r in rsp.desired.resources.values()} == {fnv1.READY_FALSE}


RUNNING = {
    "deployment": {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {
            "name": "r-engine",
            "namespace": "ml",
            "labels": {"team": "a"},
            "annotations": {"crossplane.io/composition-resource-name": "deployment"},
            "uid": "1234",
            "resourceVersion": "77",
            "generation": 3,
            "managedFields": [{"manager": "crossplane"}],
            "ownerReferences": [{"kind": "ModelReplica", "name": "r", "uid": "9"}],
            "finalizers": ["finalizer.managedresource.crossplane.io"],
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"forProvider": {"manifest": {"kind": "Deployment"}}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
}


def test_hold_composes_what_exists_as_it_is_less_what_the_server_owns() -> None:
    req = request(XR, observed=RUNNING)
    rsp = response.to(req)
    assert kit.hold(req, rsp) == ["deployment"]
    held = kit.struct_to_dict(rsp.desired.resources["deployment"].resource)
    assert held == {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {
            "name": "r-engine",
            "namespace": "ml",
            "labels": {"team": "a"},
            "annotations": {"crossplane.io/composition-resource-name": "deployment"},
        },
        "spec": {"forProvider": {"manifest": {"kind": "Deployment"}}},
    }


def test_hold_never_overrides_what_the_function_composed() -> None:
    req = request(XR, observed=RUNNING)
    rsp = response.to(req)
    kit.compose(rsp, "deployment", {"apiVersion": "v1", "kind": "Service"})
    assert kit.hold(req, rsp) == []
    assert kit.struct_to_dict(rsp.desired.resources["deployment"].resource)["kind"] == "Service"


def test_hold_of_named_keys_leaves_the_others_to_go() -> None:
    observed = {**RUNNING, "other": {"apiVersion": "v1", "kind": "Service", "metadata": {}}}
    req = request(XR, observed=observed)
    rsp = response.to(req)
    assert kit.hold(req, rsp, ["other", "never-composed"]) == ["other"]
    assert set(rsp.desired.resources) == {"other"}


def test_hold_and_wait_keeps_what_runs_and_what_others_read_and_says_why() -> None:
    shown = {**XR, "status": {"address": "http://a", "other": "x"}}
    req = request(shown, observed=RUNNING)
    rsp = response.to(req)
    held = kit.hold_and_wait(req, rsp, "Accepted", "InvalidSpec", "bad", keep=("address",))
    assert held == ["deployment"]
    assert set(rsp.desired.resources) == {"deployment"}
    assert kit.struct_to_dict(rsp.desired.composite.resource) == {"status": {"address": "http://a"}}
    [condition] = rsp.conditions
    assert (condition.type, condition.reason, condition.message) == (
        "Accepted",
        "InvalidSpec",
        "bad",
    )
    assert condition.status == fnv1.STATUS_CONDITION_FALSE
    assert [r.message for r in rsp.results] == ["bad"]
    assert rsp.desired.composite.ready == fnv1.READY_FALSE


@kit.composer
def _composes_nothing(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> kit.Released:
    kit.set_condition(rsp, "Ready", False, "Waiting", "waiting")
    return kit.Released.NOTHING


@kit.composer
def _releases_everything(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse
) -> kit.Released:
    return kit.Released.everything("scaled to zero")


@kit.composer
def _fails(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> kit.Released:
    response.fatal(rsp, "cannot compose")
    return kit.Released.NOTHING


SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}
THREE = {**RUNNING, "service": SERVICE, "secret": {**SERVICE, "kind": "Secret"}}


@kit.composer
def _composes_the_service(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse
) -> kit.Released:
    """A partial answer: the service is composed, the deployment and the secret are not."""
    kit.compose(rsp, "service", SERVICE)
    return kit.Released.NOTHING


@kit.composer
def _composes_the_service_releasing_the_secret(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse
) -> kit.Released:
    kit.compose(rsp, "service", SERVICE)
    return kit.Released.of(["secret"], "the spec no longer names it")


def _warnings(rsp: fnv1.RunFunctionResponse) -> list[str]:
    return [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING]


def test_an_empty_answer_while_something_runs_is_held_and_said() -> None:
    req = request(XR, observed=RUNNING)
    rsp = response.to(req)
    _composes_nothing(req, rsp)
    assert set(rsp.desired.resources) == {"deployment"}
    assert rsp.desired.resources["deployment"].ready == fnv1.READY_TRUE
    assert _warnings(rsp) == ["composed nothing while 1 resources exist; kept them unchanged"]


def test_a_partial_answer_holds_what_it_forgot_and_names_it() -> None:
    req = request(XR, observed=THREE)
    rsp = response.to(req)
    _composes_the_service(req, rsp)
    assert set(rsp.desired.resources) == {"deployment", "secret", "service"}
    held = kit.struct_to_dict(rsp.desired.resources["deployment"].resource)
    assert held == kit.unchanged(RUNNING["deployment"])
    assert _warnings(rsp) == [
        "neither composed nor released deployment, secret; kept them unchanged"
    ]


def test_an_explicit_release_lets_go_of_what_it_names_only() -> None:
    req = request(XR, observed=THREE)
    rsp = response.to(req)
    _composes_the_service_releasing_the_secret(req, rsp)
    assert set(rsp.desired.resources) == {"deployment", "service"}
    assert _warnings(rsp) == ["neither composed nor released deployment; kept it unchanged"]


def test_a_deliberate_release_of_everything_composes_nothing() -> None:
    req = request(XR, observed=RUNNING)
    rsp = response.to(req)
    _releases_everything(req, rsp)
    assert len(rsp.desired.resources) == 0
    assert _warnings(rsp) == []
    # A release is what one call returns: the next empty answer is held again.
    again = response.to(req)
    _composes_nothing(req, again)
    assert set(again.desired.resources) == {"deployment"}


def test_left_out_releases_what_a_complete_answer_omits_never_an_empty_one() -> None:
    req = request(XR, observed=THREE)
    rsp = response.to(req)
    assert kit.left_out(req, rsp, "x") == kit.Released.NOTHING
    kit.compose(rsp, "service", SERVICE)
    released = kit.left_out(req, rsp, "the spec no longer names them")
    assert released.keys == {"deployment", "secret"}
    assert not released.every
    assert kit.unaccounted(req, rsp, released) == []


def test_an_adapter_that_returns_no_release_is_a_programming_error() -> None:
    @kit.composer
    def _returns_none(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> Any:
        return None

    req = request(XR, observed=RUNNING)
    with pytest.raises(TypeError, match="not Released"):
        _returns_none(req, response.to(req))


def test_a_fatal_result_is_left_alone_crossplane_applies_nothing() -> None:
    req = request(XR, observed=RUNNING)
    rsp = response.to(req)
    _fails(req, rsp)
    assert len(rsp.desired.resources) == 0
    assert kit.is_fatal(rsp)


def test_set_condition_takes_a_typed_condition_or_its_fields() -> None:
    typed = fnv1.RunFunctionResponse()
    kit.set_condition(typed, kit.Condition("Ready", None, "Waiting", "for the cluster"))
    fields = fnv1.RunFunctionResponse()
    kit.set_condition(fields, "Ready", None, "Waiting", "for the cluster")
    assert typed == fields
    assert typed.conditions[0].status == fnv1.STATUS_CONDITION_UNKNOWN


def test_keep_status_republishes_what_this_call_did_not_set() -> None:
    shown = {**XR, "status": {"gateway": {"address": "10.0.0.1"}, "cache": {"x": 1}, "other": 1}}
    req = request(shown)
    rsp = response.to(req)
    kit.set_status(rsp, {"cache": {"x": 2}})
    kit.keep_status(req, rsp, "gateway", "cache", "missing")
    status = kit.struct_to_dict(rsp.desired.composite.resource)["status"]
    assert status == {"gateway": {"address": "10.0.0.1"}, "cache": {"x": 2}}


def test_set_ready_only_vetoes() -> None:
    rsp = fnv1.RunFunctionResponse()
    kit.set_ready(rsp, True)
    assert rsp.desired.composite.ready == fnv1.READY_UNSPECIFIED
    kit.set_ready(rsp, False)
    assert rsp.desired.composite.ready == fnv1.READY_FALSE
