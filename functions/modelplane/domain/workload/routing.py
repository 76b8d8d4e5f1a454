"""How a request reaches the replica's engines from the workload cluster's gateway.

An HTTPRoute on the cluster's Gateway (``modelplane/modelplane-system`` unless the
InferenceCluster names another) matches ``/<namespace>/<replica>/`` and rewrites it to
``/`` before the engines. It always targets the replica's InferencePool: the serving
pods of all its engines (every copy, and the leader of every gang), in front of which
llm-d's endpoint picker chooses a pod per request.

- **Unified** (the default): the picker scores the pods by prefix-cache affinity and
  queue depth and picks the best, so a replica of several pods is balanced by what
  each has cached and how busy it is.
- **PrefillDecode**: the picker first picks a decode pod, then, when the prompt's
  uncached part is long, a prefill pod as well (a prefix-based decider); the decode
  pod's disaggregation sidecar runs the prefill there and pulls the KV cache over NIXL.
  A short or mostly cached prompt is served by the decode pod alone.

The pool fails open: while its picker is unreachable the gateway still forwards to a
pod, so a picker restart does not take the replica down. The picker runs llm-d router
v0.9.0 (the endpoint picker of the Gateway API Inference Extension v1.5 pools).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from modelplane.domain import api
from modelplane.domain.workload import names, pods
from modelplane.domain.workload.engines import Manifest, Readiness
from modelplane.domain.workload.spec import Replica, ServingMode, WorkloadCluster

POOL_GROUP = "inference.networking.k8s.io"
POOL_FAILURE_MODE = "FailOpen"
EPP_IMAGE = "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0"
"""llm-d's endpoint picker; the plugin names in the configs below are this release's."""
EPP_GRPC_PORT = 9002
EPP_HEALTH_PORT = 9003
EPP_METRICS_PORT = 9090
EPP_CONFIG_FILE = "epp-config.yaml"
PD_NON_CACHED_TOKENS = 16
"""Disaggregate only when at least this many prompt tokens are not already cached on
the chosen decode pod. 16 is llm-d's own P/D configuration for this router release
(llm-d-router ``deploy/config/pd-epp-config.yaml``, ``prefix-based-pd-decider``
``nonCachedTokens: 16``): one KV block of vLLM's default size, so anything past a
mostly cached prompt goes to a prefill pod (docs/design/cloud-parity.md)."""
PREFIX_PRODUCER = "approx-prefix-cache-producer"
"""Tracks which prompt prefixes each pod has served: the data ``prefix-cache-scorer``
scores. llm-d's configs for router v0.9 declare it beside the scorer."""

UNIFIED_CONFIG = f"""\
apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: {PREFIX_PRODUCER}
- type: prefix-cache-scorer
- type: queue-scorer
- type: max-score-picker
- type: single-profile-handler
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: prefix-cache-scorer
    weight: 3
  - pluginRef: queue-scorer
    weight: 2
  - pluginRef: max-score-picker
"""
"""One profile: the pod that has most of the prompt cached, weighed against its queue."""


def _role_profile(role: str) -> str:
    """A P/D scheduling profile: pods of one role (its filter), then cache against queue."""
    return f"""\
- name: {role}
  plugins:
  - pluginRef: {role}-filter
  - pluginRef: prefix-cache-scorer
    weight: 2
  - pluginRef: queue-scorer
    weight: 1
  - pluginRef: max-score-picker
"""


PD_CONFIG = f"""\
apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: {PREFIX_PRODUCER}
- type: prefill-filter
- type: decode-filter
- type: prefix-cache-scorer
- type: queue-scorer
- type: max-score-picker
- type: prefix-based-pd-decider
  parameters:
    nonCachedTokens: {PD_NON_CACHED_TOKENS}
- type: disagg-profile-handler
  parameters:
    deciders:
      prefill: prefix-based-pd-decider
schedulingProfiles:
{_role_profile("prefill")}{_role_profile("decode")}"""
"""A decode pod always, a prefill pod only when the decider says the uncached prompt is
long; each profile keeps to its role (``llm-d.ai/role``), then weighs cache against queue.
The disaggregation profile handler also sets the headers the decode pod's sidecar reads:
since llm-d-router #905 (before v0.9.0) it is a PreRequest plugin itself, and the separate
``disagg-headers-handler`` is deprecated (redundant, and removed in v0.11, where a config
naming it no longer loads), so it is left out (docs/design/cloud-parity.md)."""


def path_prefix(replica: Replica) -> str:
    """Return the path the replica answers on at its cluster's gateway."""
    return f"/{replica.namespace}/{replica.name}/"


def route(replica: Replica, cluster: WorkloadCluster) -> Manifest:
    """Return the HTTPRoute from the cluster's gateway to the replica's engines."""
    spec: dict[str, Any] = {
        "parentRefs": [
            {
                "group": api.GATEWAY_GROUP,
                "kind": "Gateway",
                "name": cluster.gateway_name,
                "namespace": cluster.gateway_namespace,
            }
        ],
        "rules": [
            {
                "backendRefs": _backends(replica),
                "filters": [
                    {
                        "type": "URLRewrite",
                        "urlRewrite": {
                            "path": {"replacePrefixMatch": "/", "type": "ReplacePrefixMatch"}
                        },
                    }
                ],
                "matches": [{"path": {"type": "PathPrefix", "value": path_prefix(replica)}}],
                # A long generation streams for minutes; a gateway's default request
                # timeout (Envoy's is 15s) would cut it off. "0s" disables it.
                "timeouts": {"request": "0s"},
            }
        ],
    }
    manifest = {
        "apiVersion": api.GATEWAY_API,
        "kind": "HTTPRoute",
        "metadata": _metadata(replica, names.fit(replica.name)),
        "spec": spec,
    }
    return Manifest("route", manifest, Readiness.ACCEPTED)


def _backends(replica: Replica) -> list[dict[str, Any]]:
    return [{"group": POOL_GROUP, "kind": "InferencePool", "name": pool_name(replica)}]


def pool_name(replica: Replica) -> str:
    """Name the replica's InferencePool."""
    return names.fit(replica.name)


def config(replica: Replica) -> str:
    """Return the endpoint picker's configuration for the replica's serving mode."""
    return PD_CONFIG if replica.serving_mode is ServingMode.PREFILL_DECODE else UNIFIED_CONFIG


def endpoint_picker(replica: Replica) -> list[Manifest]:
    """Return llm-d's routing layer in front of the replica's serving pods.

    An InferencePool of the replica's serving pods (every engine's; prefill and decode
    alike), its endpoint picker (a Deployment with its config, service account and the
    RBAC to read pods and pools, behind a Service).
    """
    epp = names.endpoint_picker(replica)
    return [
        Manifest("inference-pool", _pool(replica, epp)),
        Manifest("epp-config", _epp_config(replica, epp)),
        Manifest("epp-service-account", _object(replica, "v1", "ServiceAccount", epp)),
        Manifest("epp-role", _epp_role(replica, epp)),
        Manifest("epp-role-binding", _epp_role_binding(replica, epp)),
        Manifest("epp-deployment", _epp_deployment(replica, epp), Readiness.AVAILABLE),
        Manifest("epp-service", _epp_service(replica, epp)),
    ]


def _metadata(replica: Replica, name: str) -> dict[str, Any]:
    return {
        "labels": dict(sorted(names.base_labels(replica).items())),
        "name": name,
        "namespace": replica.namespace,
    }


def _object(replica: Replica, api_version: str, kind: str, name: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": _metadata(replica, name)}


def _pool(replica: Replica, epp: str) -> dict[str, Any]:
    selector = {names.LABEL_REPLICA: names.fit(replica.name), names.LABEL_SERVING: names.SERVING}
    return {
        **_object(replica, f"{POOL_GROUP}/v1", "InferencePool", pool_name(replica)),
        "spec": {
            "endpointPickerRef": {
                "failureMode": POOL_FAILURE_MODE,
                "group": "",
                "kind": "Service",
                "name": epp,
                "port": {"number": EPP_GRPC_PORT},
            },
            "selector": {"matchLabels": dict(sorted(selector.items()))},
            # Every engine serves here; on a decode pod it is the sidecar in front of it.
            "targetPorts": [{"number": pods.ENGINE_PORT}],
        },
    }


def _epp_config(replica: Replica, epp: str) -> dict[str, Any]:
    return {**_object(replica, "v1", "ConfigMap", epp), "data": {EPP_CONFIG_FILE: config(replica)}}


def _epp_role(replica: Replica, epp: str) -> dict[str, Any]:
    read = ["get", "list", "watch"]
    rules = [
        {"apiGroups": [""], "resources": ["pods"], "verbs": read},
        {"apiGroups": [POOL_GROUP], "resources": ["inferencepools"], "verbs": read},
        {
            "apiGroups": ["inference.networking.x-k8s.io"],
            "resources": ["inferencemodelrewrites", "inferenceobjectives"],
            "verbs": read,
        },
    ]
    return {**_object(replica, "rbac.authorization.k8s.io/v1", "Role", epp), "rules": rules}


def _epp_role_binding(replica: Replica, epp: str) -> dict[str, Any]:
    return {
        **_object(replica, "rbac.authorization.k8s.io/v1", "RoleBinding", epp),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": epp},
        "subjects": [{"kind": "ServiceAccount", "name": epp, "namespace": replica.namespace}],
    }


def _epp_deployment(replica: Replica, epp: str) -> dict[str, Any]:
    selector = {names.LABEL_REPLICA: names.fit(replica.name), "app.kubernetes.io/name": epp}
    container = {
        "args": _epp_args(replica),
        "env": [
            {"name": "NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
        "image": EPP_IMAGE,
        "livenessProbe": _grpc_probe("liveness"),
        "name": "epp",
        "ports": [
            {"containerPort": EPP_GRPC_PORT, "name": "grpc", "protocol": "TCP"},
            {"containerPort": EPP_HEALTH_PORT, "name": "grpc-health", "protocol": "TCP"},
            {"containerPort": EPP_METRICS_PORT, "name": "metrics", "protocol": "TCP"},
        ],
        "readinessProbe": _grpc_probe("readiness"),
        "volumeMounts": [{"mountPath": "/config", "name": "config"}],
    }
    labels = {**names.base_labels(replica), **selector}
    return {
        **_object(replica, "apps/v1", "Deployment", epp),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(sorted(selector.items()))},
            # The picker keeps per-pod state; one active replica, replaced outright.
            "strategy": {"type": "Recreate"},
            "template": {
                "metadata": {"labels": dict(sorted(labels.items()))},
                "spec": {
                    "containers": [container],
                    "serviceAccountName": epp,
                    "volumes": [{"configMap": {"name": epp}, "name": "config"}],
                },
            },
        },
    }


def _epp_args(replica: Replica) -> list[str]:
    return [
        f"--pool-name={pool_name(replica)}",
        f"--pool-namespace={replica.namespace}",
        f"--pool-group={POOL_GROUP}",
        f"--config-file=/config/{EPP_CONFIG_FILE}",
        f"--grpc-port={EPP_GRPC_PORT}",
        f"--grpc-health-port={EPP_HEALTH_PORT}",
        "--metrics-endpoint-auth=false",
        "--zap-encoder=json",
    ]


def _grpc_probe(service: str) -> dict[str, Any]:
    return {
        "grpc": {"port": EPP_HEALTH_PORT, "service": service},
        "initialDelaySeconds": 5,
        "periodSeconds": 10,
    }


def _epp_service(replica: Replica, epp: str) -> dict[str, Any]:
    selector = {names.LABEL_REPLICA: names.fit(replica.name), "app.kubernetes.io/name": epp}
    ports: Sequence[tuple[str, int]] = (
        ("grpc-ext-proc", EPP_GRPC_PORT),
        ("http-metrics", EPP_METRICS_PORT),
    )
    return {
        **_object(replica, "v1", "Service", epp),
        "spec": {
            "ports": [
                {"name": name, "port": port, "protocol": "TCP", "targetPort": port}
                for name, port in ports
            ],
            "selector": dict(sorted(selector.items())),
            "type": "ClusterIP",
        },
    }
