"""The replica's workload plan: topologies, pods, claims, cache, routing and Objects."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from modelplane.domain import objects
from modelplane.domain.workload import (
    DeviceRequest,
    Engine,
    InvalidReplicaError,
    Member,
    Phase,
    ProviderConfigKind,
    Replica,
    Role,
    ServingMode,
    SpecError,
    WorkloadCluster,
    cache_claim,
    plan,
)

GPU = DeviceRequest("gpu", "gpu.nvidia.com", 8, ('device.driver == "gpu.nvidia.com"',))
EFA = DeviceRequest("efa", "efa.networking.k8s.aws", 16, ('device.driver == "dra.net"',))
CLUSTER = WorkloadCluster("eks-us", "eks-us-kubernetes")
POOL_BACKEND = {
    "group": "inference.networking.k8s.io",
    "kind": "InferencePool",
    "name": "llm-abcde",
}


def container(name: str = "engine", **fields: Any) -> dict[str, Any]:
    """Return a container named ``name`` with an image and ``fields``."""
    return {"image": "vllm/vllm-openai:v0.23.0", "name": name, **fields}


def member(
    role: Role = Role.STANDALONE,
    *,
    pool: str | None = "gpu-h200",
    requests: tuple[DeviceRequest, ...] = (GPU,),
    containers: Sequence[Mapping[str, Any]] | None = None,
    nodes: int = 0,
    metadata: Mapping[str, Any] | None = None,
    **spec: Any,
) -> Member:
    """Return a member whose pod template has ``containers`` (an engine by default)."""
    template: dict[str, Any] = {"spec": {"containers": list(containers or [container()]), **spec}}
    if metadata is not None:
        template["metadata"] = dict(metadata)
    return Member(role, template, pool, requests, nodes)


def gang(name: str = "llm", *, nodes: int = 1, copies: int = 1, **worker: Any) -> Engine:
    """Return a Leader/Worker engine; ``worker`` overrides the Worker member's fields."""
    return Engine(name, (member(Role.LEADER), member(Role.WORKER, nodes=nodes, **worker)), copies)


def replica(
    *engines: Engine,
    mode: ServingMode = ServingMode.UNIFIED,
    cache: str | None = None,
    name: str = "llm-abcde",
) -> Replica:
    """Return a replica in ``ml-team`` of deployment ``llm`` (one Standalone engine by default)."""
    found = engines or (Engine("llm", (member(),)),)
    return Replica(name, "ml-team", found, mode, "llm", cache_claim(cache) if cache else None)


def inner(found: Replica, cluster: WorkloadCluster = CLUSTER) -> dict[str, dict[str, Any]]:
    """Return the wrapped manifests of a plan, by composed-resource key."""
    return {c.key: c.resource["spec"]["forProvider"]["manifest"] for c in plan(found, cluster)}


@dataclass
class Pod:
    """A pod template of a plan, with the bits tests look at."""

    template: dict[str, Any]

    @property
    def spec(self) -> dict[str, Any]:
        return self.template["spec"]  # type: ignore[no-any-return]

    @property
    def labels(self) -> dict[str, str]:
        return self.template["metadata"]["labels"]  # type: ignore[no-any-return]

    def container(self, name: str = "engine") -> dict[str, Any]:
        return next(c for c in self.spec["containers"] if c["name"] == name)


def pods_of(workload: Mapping[str, Any]) -> dict[str, Pod]:
    """Return a workload's pod templates: ``standalone``, or ``leader`` and ``worker``."""
    if workload["kind"] == "Deployment":
        return {"standalone": Pod(workload["spec"]["template"])}
    lwt = workload["spec"]["leaderWorkerTemplate"]
    return {"leader": Pod(lwt["leaderTemplate"]), "worker": Pod(lwt["workerTemplate"])}


def pd(*, prefill: Engine | None = None, decode: Engine | None = None) -> Replica:
    """Return a PrefillDecode replica of a prefill and a decode engine."""
    prefill = prefill or Engine("prefill", (member(),), phase=Phase.PREFILL)
    decode = decode or Engine("decode", (member(),), phase=Phase.DECODE)
    return replica(prefill, decode, mode=ServingMode.PREFILL_DECODE, cache="kimi")


def workload(found: Replica, engine: str = "llm") -> dict[str, Any]:
    return inner(found)[f"engine-{engine}-workload"]


# -- topologies ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("engine", "kind", "replicas", "size"),
    [
        pytest.param(Engine("llm", (member(),)), "Deployment", 1, None, id="standalone"),
        pytest.param(Engine("llm", (member(),), copies=3), "Deployment", 3, None, id="copies"),
        pytest.param(gang(nodes=1), "LeaderWorkerSet", 1, 2, id="gang-of-two"),
        pytest.param(gang(nodes=3, copies=2), "LeaderWorkerSet", 2, 4, id="two-gangs-of-four"),
    ],
)
def test_topology(engine: Engine, kind: str, replicas: int, size: int | None) -> None:
    found = workload(replica(engine))
    assert found["kind"] == kind
    assert found["spec"]["replicas"] == replicas
    if kind == "LeaderWorkerSet":
        assert found["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
        assert found["spec"]["leaderWorkerTemplate"]["size"] == size
    else:
        assert found["apiVersion"] == "apps/v1"


ONE_PER_NODE = {
    "labelSelector": {
        "matchExpressions": [{"key": "leaderworkerset.sigs.k8s.io/group-key", "operator": "Exists"}]
    },
    "matchLabelKeys": ["leaderworkerset.sigs.k8s.io/group-key"],
    "topologyKey": "kubernetes.io/hostname",
}


def test_a_gangs_pods_run_one_per_node() -> None:
    found = workload(replica(gang(nodes=2)))
    lwt = found["spec"]["leaderWorkerTemplate"]
    for template in (lwt["leaderTemplate"], lwt["workerTemplate"]):
        anti = template["spec"]["affinity"]["podAntiAffinity"]
        assert anti["requiredDuringSchedulingIgnoredDuringExecution"] == [ONE_PER_NODE]
    standalone = workload(replica(Engine("llm", (member(),))))
    assert "affinity" not in standalone["spec"]["template"]["spec"]


def test_a_gangs_own_anti_affinity_is_kept_beside_one_per_node() -> None:
    theirs = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [theirs]}}
    engine = Engine("llm", (member(Role.LEADER, affinity=affinity), member(Role.WORKER, nodes=1)))
    lwt = workload(replica(engine))["spec"]["leaderWorkerTemplate"]
    required = lwt["leaderTemplate"]["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert required == [theirs, ONE_PER_NODE]
    assert affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == [theirs]


def test_every_engine_gets_its_own_workload_and_service() -> None:
    found = inner(replica(Engine("chat", (member(),)), gang("code", nodes=2)))
    assert found["engine-chat-workload"]["kind"] == "Deployment"
    assert found["engine-code-workload"]["kind"] == "LeaderWorkerSet"
    services = {
        found[k]["metadata"]["name"] for k in ("engine-chat-service", "engine-code-service")
    }
    assert services == {"llm-abcde-chat", "llm-abcde-code"}
    backends = found["route"]["spec"]["rules"][0]["backendRefs"]
    assert backends == [POOL_BACKEND], "the route reaches every engine through the pool"
    selector = found["inference-pool"]["spec"]["selector"]["matchLabels"]
    for key in ("engine-chat-workload", "engine-code-workload"):
        serving = [p for p in pods_of(found[key]).values() if "modelplane.ai/serving" in p.labels]
        assert serving, key
        assert all(selector.items() <= p.labels.items() for p in serving), key


def test_service_selects_only_the_serving_pods_of_its_engine() -> None:
    found = inner(replica(gang("code")))
    selector = found["engine-code-service"]["spec"]["selector"]
    assert selector == {
        "modelplane.ai/engine": "code",
        "modelplane.ai/replica": "llm-abcde",
        "modelplane.ai/serving": "true",
    }
    templates = pods_of(found["engine-code-workload"])
    assert selector.items() <= templates["leader"].labels.items()
    assert "modelplane.ai/serving" not in templates["worker"].labels


@pytest.mark.parametrize(
    ("members", "problem"),
    [
        pytest.param((member(), member()), "2 Standalone", id="two-standalone"),
        pytest.param((member(Role.LEADER),), "1 Leader)", id="leader-alone"),
        pytest.param((member(), member(Role.WORKER, nodes=1)), "1 Standalone, 1 Worker", id="mix"),
        pytest.param(
            (member(Role.LEADER), member(Role.WORKER, nodes=1), member(Role.WORKER, nodes=1)),
            "1 Leader, 2 Worker",
            id="two-worker-members",
        ),
        pytest.param((member(Role.LEADER), member(Role.WORKER)), "spans no nodes", id="no-nodes"),
        pytest.param((member(pool=None),), "pinned to a node pool", id="no-pool"),
        pytest.param(
            (member(Role.LEADER, pool="a"), member(Role.WORKER, pool="b", nodes=1)),
            "several node pools (a, b)",
            id="two-pools",
        ),
        pytest.param(
            (member(containers=[container("server")]),),
            "no container named 'engine'",
            id="no-engine",
        ),
    ],
)
def test_engines_that_cannot_run_are_refused(members: tuple[Member, ...], problem: str) -> None:
    with pytest.raises(SpecError, match=r"engine 'llm': .*") as err:
        plan(replica(Engine("llm", members)), CLUSTER)
    assert problem in str(err.value)


# -- gangs ------------------------------------------------------------------------------


def test_gang_env_comes_first_in_every_container_of_every_pod() -> None:
    user_env = [
        {"name": "NCCL_DEBUG", "value": "INFO"},
        {"name": "VLLM_HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    ]
    helper = container("log-shipper", image="busybox", env=[{"name": "A", "value": "1"}])
    engine = gang(containers=[container(env=user_env), helper])
    for role, pod in pods_of(workload(replica(engine))).items():
        for c in pod.spec["containers"]:
            assert [e["name"] for e in c["env"][:2]] == [
                "MODELPLANE_LEADER_ADDRESS",
                "MODELPLANE_RANK",
            ], f"{role}/{c['name']}"
            assert c["env"][0]["value"] == "$(LWS_LEADER_ADDRESS)"
            assert c["env"][1]["valueFrom"]["fieldRef"]["fieldPath"] == (
                "metadata.labels['leaderworkerset.sigs.k8s.io/worker-index']"
            )
        if role == "worker":
            assert pod.container()["env"][2:] == user_env, "the user's env follows, verbatim"
            assert pod.container("log-shipper")["env"][2:] == [{"name": "A", "value": "1"}]


def test_standalone_pods_get_no_gang_env() -> None:
    pod = pods_of(workload(replica()))["standalone"]
    assert "env" not in pod.container()


def test_member_without_devices_rides_the_gang_pool_with_no_claim() -> None:
    engine = Engine(
        "llm",
        (member(Role.LEADER, pool=None, requests=()), member(Role.WORKER, nodes=2, pool="h200")),
    )
    found = inner(replica(engine))
    templates = pods_of(found["engine-llm-workload"])
    assert templates["leader"].spec["nodeSelector"] == {"modelplane.ai/pool": "h200"}
    assert "resourceClaims" not in templates["leader"].spec
    assert "resources" not in templates["leader"].container()
    assert "engine-llm-leader-claims" not in found
    assert (
        templates["worker"].spec["resourceClaims"][0]["resourceClaimTemplateName"]
        == (found["engine-llm-worker-claims"]["metadata"]["name"])
    )


def test_workers_do_not_serve() -> None:
    templates = pods_of(workload(replica(gang())))
    assert templates["leader"].container()["ports"] == [{"containerPort": 8000, "protocol": "TCP"}]
    assert "readinessProbe" in templates["leader"].container()
    assert "ports" not in templates["worker"].container()
    assert "readinessProbe" not in templates["worker"].container()


# -- every pod --------------------------------------------------------------------------


def test_claims_one_request_per_device_request() -> None:
    found = inner(replica(Engine("llm", (member(requests=(GPU, EFA)),))))
    rct = found["engine-llm-standalone-claims"]
    assert rct["apiVersion"] == "resource.k8s.io/v1"
    assert rct["kind"] == "ResourceClaimTemplate"
    assert rct["spec"]["spec"]["devices"]["requests"] == [
        {
            "exactly": {
                "allocationMode": "ExactCount",
                "count": r.count,
                "deviceClassName": r.device_class_name,
                "selectors": [{"cel": {"expression": cel}} for cel in r.selectors],
            },
            "name": r.name,
        }
        for r in (GPU, EFA)
    ]
    pod = pods_of(found["engine-llm-workload"])["standalone"]
    assert pod.spec["resourceClaims"] == [
        {"name": "devices", "resourceClaimTemplateName": rct["metadata"]["name"]}
    ]
    assert pod.container()["resources"]["claims"] == [{"name": "devices"}]


def test_request_without_selectors_takes_any_device_of_its_class() -> None:
    plain = DeviceRequest("gpu", "gpu.nvidia.com", 2)
    found = inner(replica(Engine("llm", (member(requests=(plain,)),))))
    request = found["engine-llm-standalone-claims"]["spec"]["spec"]["devices"]["requests"][0]
    assert request == {
        "exactly": {
            "allocationMode": "ExactCount",
            "count": 2,
            "deviceClassName": "gpu.nvidia.com",
        },
        "name": "gpu",
    }


def test_user_resources_survive_the_claim() -> None:
    limits = {"limits": {"memory": "64Gi"}}
    pod = pods_of(
        workload(replica(Engine("llm", (member(containers=[container(resources=limits)]),))))
    )
    assert pod["standalone"].container()["resources"] == {
        "claims": [{"name": "devices"}],
        "limits": {"memory": "64Gi"},
    }


@pytest.mark.parametrize(
    ("spec", "node_selector", "tolerations"),
    [
        pytest.param(
            {},
            {"modelplane.ai/pool": "gpu-h200"},
            [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}],
            id="bare",
        ),
        pytest.param(
            {
                "nodeSelector": {"topology.kubernetes.io/zone": "a", "modelplane.ai/pool": "x"},
                "tolerations": [{"key": "dedicated", "operator": "Exists"}],
            },
            {"topology.kubernetes.io/zone": "a", "modelplane.ai/pool": "gpu-h200"},
            [
                {"key": "dedicated", "operator": "Exists"},
                {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"},
            ],
            id="user-selector-and-toleration-kept-pool-wins",
        ),
        pytest.param(
            {
                "tolerations": [
                    {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}
                ]
            },
            {"modelplane.ai/pool": "gpu-h200"},
            [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}],
            id="gpu-toleration-not-doubled",
        ),
    ],
)
def test_every_pod_is_pinned_to_its_pool_and_tolerates_gpus(
    spec: dict[str, Any], node_selector: dict[str, str], tolerations: list[dict[str, str]]
) -> None:
    engine = Engine("llm", (member(Role.LEADER, **spec), member(Role.WORKER, nodes=1, **spec)))
    for role, pod in pods_of(workload(replica(engine))).items():
        assert pod.spec["nodeSelector"] == node_selector, role
        assert pod.spec["tolerations"] == tolerations, role


def test_engine_serves_on_8000_with_a_health_probe_and_memory_shm() -> None:
    pod = pods_of(workload(replica()))["standalone"]
    engine = pod.container()
    assert engine["ports"] == [{"containerPort": 8000, "protocol": "TCP"}]
    assert engine["readinessProbe"]["httpGet"] == {"path": "/health", "port": 8000}
    assert "livenessProbe" not in engine, "nothing restarts an engine that is still loading"
    assert "startupProbe" not in engine
    assert {"mountPath": "/dev/shm", "name": "modelplane-shm"} in engine["volumeMounts"]
    assert {"emptyDir": {"medium": "Memory"}, "name": "modelplane-shm"} in pod.spec["volumes"]


def test_readiness_probe_is_timed_for_engines_that_load_large_weights() -> None:
    probe = pods_of(workload(replica()))["standalone"].container()["readinessProbe"]
    assert probe["initialDelaySeconds"] >= 30, "no probing while the weights load"
    assert probe["timeoutSeconds"] >= 5, "a busy engine answers /health slowly"
    assert probe["periodSeconds"] == 10
    assert probe["failureThreshold"] >= 3


def test_user_probe_port_and_shm_are_kept() -> None:
    probe = {"httpGet": {"path": "/v1/models", "port": 8000}}
    mine = container(
        ports=[{"containerPort": 8000, "name": "http"}],
        readinessProbe=probe,
        volumeMounts=[{"mountPath": "/dev/shm", "name": "shm"}],
    )
    volumes = [{"emptyDir": {"medium": "Memory", "sizeLimit": "20Gi"}, "name": "shm"}]
    pod = pods_of(workload(replica(Engine("llm", (member(containers=[mine], volumes=volumes),)))))
    engine = pod["standalone"].container()
    assert engine["ports"] == [{"containerPort": 8000, "name": "http"}]
    assert engine["readinessProbe"] == probe
    assert engine["volumeMounts"] == [{"mountPath": "/dev/shm", "name": "shm"}]
    assert pod["standalone"].spec["volumes"] == volumes


def test_template_passes_through_verbatim() -> None:
    mine = container(
        image="lmsysorg/sglang:v0.5.10.post1-runtime",
        command=["/bin/sh", "-c", "exec python3 -m sglang.launch_server --port 8000"],
        args=["--tp-size", "8"],
        env=[{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"key": "t", "name": "hf"}}}],
        securityContext={"privileged": True},
    )
    metadata = {"annotations": {"team": "ml"}, "labels": {"app": "coder"}}
    spec: dict[str, Any] = {
        "imagePullSecrets": [{"name": "regcred"}],
        "serviceAccountName": "reader",
    }
    engine = Engine("llm", (member(containers=[mine], metadata=metadata, **spec),))
    pod = pods_of(workload(replica(engine)))["standalone"]
    for key in ("image", "command", "args", "env", "securityContext"):
        assert pod.container()[key] == mine[key], key
    assert pod.spec["imagePullSecrets"] == [{"name": "regcred"}]
    assert pod.spec["serviceAccountName"] == "reader"
    assert pod.template["metadata"]["annotations"] == {"team": "ml"}
    assert pod.labels["app"] == "coder"


def test_managed_labels_win_and_name_the_deployment() -> None:
    metadata = {"labels": {"modelplane.ai/replica": "spoof", "tier": "gold"}}
    pod = pods_of(workload(replica(Engine("llm", (member(metadata=metadata),)))))["standalone"]
    assert pod.labels == {
        "app.kubernetes.io/managed-by": "modelplane",
        "modelplane.ai/deployment": "llm",
        "modelplane.ai/engine": "llm",
        "modelplane.ai/replica": "llm-abcde",
        "modelplane.ai/serving": "true",
        "tier": "gold",
    }


def test_plan_leaves_its_input_untouched() -> None:
    found = replica(gang(containers=[container(env=[{"name": "A", "value": "1"}])]))
    before = copy.deepcopy(found)
    plan(found, CLUSTER)
    assert found == before


# -- model cache ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "args"),
    [
        pytest.param({}, ["--model=/mnt/models"], id="no-args"),
        pytest.param(
            {"args": ["--dtype=half"]}, ["--model=/mnt/models", "--dtype=half"], id="args"
        ),
        pytest.param(
            {"args": ["--model-loader-extra-config={}"]},
            ["--model=/mnt/models", "--model-loader-extra-config={}"],
            id="model-prefixed-flag-is-not-model",
        ),
        pytest.param({"args": ["--model=/weights"]}, ["--model=/weights"], id="own-model-equals"),
        pytest.param({"args": ["--model", "/w"]}, ["--model", "/w"], id="own-model-separate"),
        pytest.param(
            {"command": ["vllm", "serve", "/mnt/models"], "args": ["--port=8000"]},
            ["--port=8000"],
            id="own-command",
        ),
        pytest.param({"command": ["sh"]}, None, id="own-command-no-args"),
    ],
)
def test_cache_adds_model_only_without_command_or_model(
    fields: dict[str, Any], args: list[str] | None
) -> None:
    engine = Engine("llm", (member(containers=[container(**fields)]),))
    pod = pods_of(workload(replica(engine, cache="kimi")))["standalone"]
    assert pod.container().get("args") == args


def test_no_cache_adds_no_model() -> None:
    pod = pods_of(workload(replica()))["standalone"]
    assert "args" not in pod.container()


def test_cache_mounts_in_every_pod_of_a_gang() -> None:
    for role, pod in pods_of(workload(replica(gang(nodes=2), cache="coder"))).items():
        assert {"mountPath": "/mnt/models", "name": "modelplane-model-cache"} in pod.container()[
            "volumeMounts"
        ], role
        assert {
            "name": "modelplane-model-cache",
            "persistentVolumeClaim": {"claimName": "coder-model-cache"},
        } in pod.spec["volumes"], role


@pytest.mark.parametrize(
    ("engines", "problem"),
    [
        pytest.param((), "no engines", id="no-engines"),
        pytest.param(
            (Engine("a", (member(),)), Engine("a", (member(),))), "repeat: a", id="same-name"
        ),
    ],
)
def test_replica_engines_must_be_distinct(engines: tuple[Engine, ...], problem: str) -> None:
    found = Replica("r", "ns", engines)
    with pytest.raises(InvalidReplicaError, match=problem):
        plan(found, CLUSTER)


# -- Objects ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("found", "workloads"),
    [
        pytest.param(replica(), {"engine-llm-workload", "epp-deployment"}, id="standalone"),
        pytest.param(replica(gang()), {"engine-llm-workload", "epp-deployment"}, id="gang"),
        pytest.param(
            pd(),
            {"engine-prefill-workload", "engine-decode-workload", "epp-deployment"},
            id="prefill-decode",
        ),
    ],
)
def test_objects_name_the_provider_config_and_follow_their_workload(
    found: Replica, workloads: set[str]
) -> None:
    cluster = WorkloadCluster("c", "c-pc", ProviderConfigKind.NAMESPACED)
    composed = plan(found, cluster)
    assert {c.key for c in composed if c.workload} == workloads
    for item in composed:
        spec = item.resource["spec"]
        assert item.resource["apiVersion"] == "kubernetes.m.crossplane.io/v1alpha1"
        assert item.resource["kind"] == "Object"
        assert item.resource["metadata"]["namespace"] == "ml-team"
        assert spec["providerConfigRef"] == {"kind": "ProviderConfig", "name": "c-pc"}
        readiness = spec["readiness"]
        # Status-derived readiness is watched (it changes after the apply); a created
        # object's is settled by the apply itself.
        assert spec.get("watch", False) is (readiness["policy"] == "DeriveFromCelQuery"), item.key
        if item.workload:
            assert readiness["policy"] == "DeriveFromCelQuery", item.key
            kind = item.resource["spec"]["forProvider"]["manifest"]["kind"]
            assert readiness["celQuery"] == objects.workload_query(kind), item.key
            assert '"Available"' not in readiness["celQuery"], item.key
        elif item.kind == "HTTPRoute":
            assert '"Accepted"' in readiness["celQuery"]
        else:
            assert readiness == {"policy": "SuccessfulCreate"}, item.key


def test_namespace_is_named_like_the_replicas_and_never_deleted() -> None:
    composed = {c.key: c for c in plan(replica(), CLUSTER)}
    namespace = composed["namespace"].resource["spec"]
    assert namespace["forProvider"]["manifest"]["metadata"]["name"] == "ml-team"
    assert "Delete" not in namespace["managementPolicies"]
    assert "Create" in namespace["managementPolicies"]
    others = [c for k, c in composed.items() if k != "namespace"]
    assert all("managementPolicies" not in c.resource["spec"] for c in others)


def test_plan_is_deterministic_and_sorted() -> None:
    first = plan(pd(), CLUSTER)
    assert first == plan(pd(), CLUSTER)
    assert [c.key for c in first] == sorted(c.key for c in first)
