"""How a replica serves: its route on the cluster's gateway, prefill/decode disaggregation
and unified serving through the endpoint picker (the pods' llm-d roles, NIXL settings and
routing sidecar, the InferencePool route, the picker's configuration). The workload's
other rules: test_workload.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import yaml
from modelplane.domain.workload import (
    Engine,
    InvalidReplicaError,
    Phase,
    ServingMode,
    WorkloadCluster,
    plan,
)

from tests.domain.test_workload import (
    CLUSTER,
    POOL_BACKEND,
    container,
    gang,
    inner,
    member,
    pd,
    pods_of,
    replica,
)


def test_pd_pods_carry_their_llm_d_role_and_the_nixl_host() -> None:
    found = inner(pd())
    for engine, role in (("prefill", "prefill"), ("decode", "decode")):
        pod = pods_of(found[f"engine-{engine}-workload"])["standalone"]
        assert pod.labels["llm-d.ai/role"] == role
        assert pod.container()["env"][:2] == [
            {
                "name": "VLLM_NIXL_SIDE_CHANNEL_HOST",
                "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
            },
            {"name": "VLLM_NIXL_SIDE_CHANNEL_PORT", "value": "5600"},
        ]


def test_users_nixl_settings_win() -> None:
    mine = container(
        env=[{"name": "VLLM_NIXL_SIDE_CHANNEL_PORT", "value": "5700"}],
        ports=[{"containerPort": 5700, "name": "nixl"}],
    )
    prefill = Engine("prefill", (member(containers=[mine]),), phase=Phase.PREFILL)
    engine = pods_of(inner(pd(prefill=prefill))["engine-prefill-workload"])["standalone"]
    env = engine.container()["env"]
    assert [e["name"] for e in env] == [
        "VLLM_NIXL_SIDE_CHANNEL_HOST",
        "VLLM_NIXL_SIDE_CHANNEL_PORT",
    ]
    assert env[1]["value"] == "5700"
    assert {"containerPort": 5700, "name": "nixl"} in engine.container()["ports"]
    assert not any(p["containerPort"] == 5600 for p in engine.container()["ports"])


def test_decode_pods_put_the_routing_sidecar_in_front_of_the_engine() -> None:
    found = inner(pd())
    decode = pods_of(found["engine-decode-workload"])["standalone"]
    sidecar = decode.container("routing-sidecar")
    assert sidecar["image"] == "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.9.0"
    assert sidecar["ports"] == [{"containerPort": 8000, "protocol": "TCP"}]
    assert "--port=8000" in sidecar["args"]
    assert "--vllm-port=8001" in sidecar["args"], "v0.9.0 has no --model-server-port"
    assert "--kv-connector=nixlv2" in sidecar["args"]
    assert "--secure-proxy=false" in sidecar["args"], "the gateway speaks plain HTTP to it"
    assert sidecar["readinessProbe"]["httpGet"] == {"path": "/health", "port": 8000}
    assert decode.container()["ports"] == [
        {"containerPort": 8001, "protocol": "TCP"},
        {"containerPort": 5600, "name": "nixl", "protocol": "TCP"},
    ]
    assert decode.container()["readinessProbe"]["httpGet"]["port"] == 8001
    prefill = pods_of(found["engine-prefill-workload"])["standalone"]
    assert [c["name"] for c in prefill.spec["containers"]] == ["engine"]
    assert prefill.container()["ports"] == [
        {"containerPort": 8000, "protocol": "TCP"},
        {"containerPort": 5600, "name": "nixl", "protocol": "TCP"},
    ]


def test_pd_gang_puts_the_sidecar_on_the_leader_only() -> None:
    decode = Engine("decode", gang().members, phase=Phase.DECODE)
    templates = pods_of(inner(pd(decode=decode))["engine-decode-workload"])
    assert "routing-sidecar" in [c["name"] for c in templates["leader"].spec["containers"]]
    assert [c["name"] for c in templates["worker"].spec["containers"]] == ["engine"]
    names = [e["name"] for e in templates["worker"].container()["env"][:4]]
    assert names == [
        "MODELPLANE_LEADER_ADDRESS",
        "MODELPLANE_RANK",
        "VLLM_NIXL_SIDE_CHANNEL_HOST",
        "VLLM_NIXL_SIDE_CHANNEL_PORT",
    ]


def test_pd_route_goes_through_an_inference_pool_and_its_endpoint_picker() -> None:
    found = inner(pd())
    pool = found["inference-pool"]
    assert pool["apiVersion"] == "inference.networking.k8s.io/v1"
    assert pool["spec"]["selector"]["matchLabels"] == {
        "modelplane.ai/replica": "llm-abcde",
        "modelplane.ai/serving": "true",
    }
    assert pool["spec"]["targetPorts"] == [{"number": 8000}]
    picker = found["epp-service"]["metadata"]["name"]
    assert pool["spec"]["endpointPickerRef"]["name"] == picker
    assert pool["spec"]["endpointPickerRef"]["port"] == {"number": 9002}
    assert pool["spec"]["endpointPickerRef"]["failureMode"] == "FailOpen"
    assert found["route"]["spec"]["rules"][0]["backendRefs"] == [POOL_BACKEND]
    for engine in ("prefill", "decode"):
        labels = pods_of(found[f"engine-{engine}-workload"])["standalone"].labels
        assert pool["spec"]["selector"]["matchLabels"].items() <= labels.items(), engine


def test_endpoint_picker_reads_its_pool_with_its_own_rbac_and_config() -> None:
    found = inner(pd())
    deployment = found["epp-deployment"]
    spec = deployment["spec"]["template"]["spec"]
    args = spec["containers"][0]["args"]
    assert "--pool-name=llm-abcde" in args
    assert "--pool-namespace=ml-team" in args
    assert spec["serviceAccountName"] == found["epp-service-account"]["metadata"]["name"]
    binding = found["epp-role-binding"]
    assert binding["roleRef"]["name"] == found["epp-role"]["metadata"]["name"]
    assert binding["subjects"][0]["name"] == spec["serviceAccountName"]
    readable = {r for rule in found["epp-role"]["rules"] for r in rule["resources"]}
    assert {"pods", "inferencepools"} <= readable
    config = picker_config(found)
    assert {p["name"] for p in config["schedulingProfiles"]} == {"prefill", "decode"}
    assert spec["containers"][0]["image"] == "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0"
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert found["epp-service"]["spec"]["selector"] == selector
    assert "nodeSelector" not in spec, "the picker runs off the GPU pools"


def picker_config(found: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Return the endpoint picker's configuration, read as the picker reads it."""
    args = found["epp-deployment"]["spec"]["template"]["spec"]["containers"][0]["args"]
    path = next(a for a in args if a.startswith("--config-file=")).split("=", 1)[1]
    mount = found["epp-deployment"]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
    assert path.startswith(mount[0]["mountPath"] + "/")
    loaded: dict[str, Any] = yaml.safe_load(found["epp-config"]["data"][path.rsplit("/", 1)[1]])
    return loaded


def _plugins(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {p.get("name", p["type"]): p for p in config["plugins"]}


def test_pd_disaggregates_only_when_the_uncached_prompt_is_long() -> None:
    config = picker_config(inner(pd()))
    assert config["apiVersion"] == "llm-d.ai/v1alpha1"
    assert config["kind"] == "EndpointPickerConfig"
    plugins = _plugins(config)
    decider = plugins["prefix-based-pd-decider"]
    # llm-d-router's pd-epp-config.yaml for this release: one vLLM KV block (16 tokens).
    assert decider["parameters"]["nonCachedTokens"] == 16
    assert "approx-prefix-cache-producer" in plugins, "the prefix scorer needs its producer"
    handler = plugins["disagg-profile-handler"]
    assert handler["parameters"]["deciders"] == {"prefill": "prefix-based-pd-decider"}
    assert "always-disagg-pd-decider" not in plugins
    assert "disagg-headers-handler" not in plugins, "deprecated: the profile handler sets them"
    for profile in config["schedulingProfiles"]:
        refs = [p["pluginRef"] for p in profile["plugins"]]
        assert refs[0] == f"{profile['name']}-filter", "each profile keeps to its role"
        assert {"prefix-cache-scorer", "queue-scorer", "max-score-picker"} <= set(refs)
    _every_reference_is_declared(config)


def _every_reference_is_declared(config: Mapping[str, Any]) -> None:
    declared = set(_plugins(config))
    refs = {p["pluginRef"] for prof in config["schedulingProfiles"] for p in prof["plugins"]}
    assert refs <= declared
    assert len(config["plugins"]) == len(declared), "plugin names are unique"


@pytest.mark.parametrize(
    "engines",
    [
        pytest.param((Engine("llm", (member(),)),), id="standalone"),
        pytest.param((Engine("llm", (member(),), copies=3),), id="copies"),
        pytest.param((gang(nodes=2, copies=2),), id="gangs"),
        pytest.param((Engine("a", (member(),)), Engine("b", (member(),))), id="two-engines"),
    ],
)
def test_unified_serving_goes_through_the_picker(engines: tuple[Engine, ...]) -> None:
    found = inner(replica(*engines))
    assert found["route"]["spec"]["rules"][0]["backendRefs"] == [POOL_BACKEND]
    pool = found["inference-pool"]
    assert pool["spec"]["endpointPickerRef"]["failureMode"] == "FailOpen"
    assert pool["spec"]["endpointPickerRef"]["name"] == found["epp-service"]["metadata"]["name"]
    selector = pool["spec"]["selector"]["matchLabels"]
    for engine in engines:
        for role, pod in pods_of(found[f"engine-{engine.name}-workload"]).items():
            serving = "modelplane.ai/serving" in pod.labels
            assert (selector.items() <= pod.labels.items()) == serving, (engine.name, role)
    config = picker_config(found)
    assert [p["name"] for p in config["schedulingProfiles"]] == ["default"]
    plugins = _plugins(config)
    assert {"prefix-cache-scorer", "queue-scorer", "max-score-picker"} <= plugins.keys()
    assert "single-profile-handler" in plugins
    assert "approx-prefix-cache-producer" in plugins, "the prefix scorer needs its producer"
    assert not {"prefill-filter", "decode-filter", "prefix-based-pd-decider"} & plugins.keys()
    _every_reference_is_declared(config)
    assert {
        "epp-config",
        "epp-deployment",
        "epp-role",
        "epp-role-binding",
        "epp-service",
        "epp-service-account",
    } <= found.keys()


def test_unified_replicas_have_no_pd_roles() -> None:
    phased = Engine("llm", (member(),), phase=Phase.DECODE)
    found = inner(replica(phased))
    pod = pods_of(found["engine-llm-workload"])["standalone"]
    assert "llm-d.ai/role" not in pod.labels, "a phase means nothing without PrefillDecode"
    assert [c["name"] for c in pod.spec["containers"]] == ["engine"]
    assert not any(e["name"].startswith("VLLM_NIXL") for e in pod.container().get("env", []))


@pytest.mark.parametrize(
    "phases",
    [
        pytest.param((Phase.PREFILL,), id="one-engine"),
        pytest.param((Phase.PREFILL, Phase.PREFILL), id="two-prefill"),
        pytest.param((Phase.PREFILL, None), id="unphased"),
        pytest.param((Phase.PREFILL, Phase.DECODE, Phase.DECODE), id="three"),
    ],
)
def test_pd_takes_one_prefill_and_one_decode_engine(phases: tuple[Phase | None, ...]) -> None:
    engines = [Engine(f"e{i}", (member(),), phase=p) for i, p in enumerate(phases)]
    with pytest.raises(InvalidReplicaError, match="exactly two engines"):
        plan(replica(*engines, mode=ServingMode.PREFILL_DECODE), CLUSTER)


# -- routing ----------------------------------------------------------------------------


def test_route_strips_the_replica_prefix_on_the_clusters_gateway() -> None:
    cluster = WorkloadCluster("c", "c-pc", gateway_name="edge", gateway_namespace="gw-system")
    route = inner(replica(), cluster)["route"]
    assert route["apiVersion"] == "gateway.networking.k8s.io/v1"
    assert route["metadata"]["namespace"] == "ml-team"
    assert route["spec"]["parentRefs"] == [
        {
            "group": "gateway.networking.k8s.io",
            "kind": "Gateway",
            "name": "edge",
            "namespace": "gw-system",
        }
    ]
    rule = route["spec"]["rules"][0]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/ml-team/llm-abcde/"}}]
    assert rule["timeouts"] == {"request": "0s"}, "generations outlast default timeouts"
    assert rule["filters"] == [
        {
            "type": "URLRewrite",
            "urlRewrite": {"path": {"replacePrefixMatch": "/", "type": "ReplacePrefixMatch"}},
        }
    ]
