"""Replica and endpoint names: stable, opaque and valid Kubernetes names."""

from __future__ import annotations

import hashlib
import re

import pytest
from modelplane.domain import naming

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _hash5(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:5]


@pytest.mark.parametrize(
    ("deployment", "cluster", "index", "prefix"),
    [
        pytest.param("qwen-demo", "eks-us-east", 0, "qwen-demo", id="short"),
        pytest.param("a" * 63, "c", 0, "a" * 57, id="cut-to-57"),
        pytest.param("a" * 56 + "-b" + "c" * 5, "c", 1, "a" * 56, id="trailing-dash-removed"),
        pytest.param("x" * 57, "gke-a", 12, "x" * 57, id="exactly-57"),
    ],
)
def test_replica_name(deployment: str, cluster: str, index: int, prefix: str) -> None:
    name = naming.replica_name(deployment, cluster, index)
    assert name == f"{prefix}-{_hash5(f'{deployment}-{cluster}-{index}')}"
    assert len(name) <= 63
    assert DNS_LABEL.match(name)


def test_replica_name_differs_by_cluster_and_index() -> None:
    names = {naming.replica_name("qwen", c, i) for c in ("a", "b") for i in range(50)}
    assert len(names) == 100


@pytest.mark.parametrize(
    ("address", "want"),
    [
        pytest.param("203.0.113.7", "http://203.0.113.7/ml-team/qwen-92535/v1", id="ip"),
        pytest.param(
            "gw.example.com:8080",
            "http://gw.example.com:8080/ml-team/qwen-92535/v1",
            id="host-port",
        ),
        pytest.param(
            "https://gw.example.com/", "https://gw.example.com/ml-team/qwen-92535/v1", id="url"
        ),
        pytest.param("2001:db8::7", "http://[2001:db8::7]/ml-team/qwen-92535/v1", id="ipv6"),
        pytest.param(
            "[2001:db8::7]:8080", "http://[2001:db8::7]:8080/ml-team/qwen-92535/v1", id="ipv6-port"
        ),
    ],
)
def test_endpoint_url(address: str, want: str) -> None:
    assert naming.endpoint_url(address, "ml-team", "qwen-92535") == want


def test_rewrite_path() -> None:
    assert naming.rewrite_path("ml-team", "qwen-92535") == "/ml-team/qwen-92535/"


# A label value as the API server validates it (k8s.io/apimachinery IsValidLabelValue).
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("qwen-demo", id="short"),
        pytest.param("", id="empty"),
        pytest.param("a" * 63, id="exactly-63"),
        pytest.param("qwen2.5-72b.instruct", id="dots"),
        pytest.param("x", id="one-character"),
    ],
)
def test_label_value_keeps_a_name_that_is_one(name: str) -> None:
    assert naming.label_value(name) == name


@pytest.mark.parametrize(
    ("name", "prefix"),
    [
        pytest.param("a" * 64, "a" * 57, id="64"),
        pytest.param("a" * 253, "a" * 57, id="253-the-longest-name"),
        pytest.param("a" * 56 + "-" + "b" * 100, "a" * 56, id="cut-at-a-dash"),
        pytest.param("a" * 55 + ".-" + "b" * 100, "a" * 55, id="cut-at-dot-and-dash"),
        pytest.param("team.models." + "q" * 80, "team.models." + "q" * 45, id="dots-kept"),
        pytest.param("-" * 70, "", id="nothing-left-but-the-hash"),
        pytest.param("Qwen 2.5/72B!", "Qwen-2.5-72B", id="short-but-invalid"),
    ],
)
def test_label_value_cuts_and_hashes_to_exactly_63(name: str, prefix: str) -> None:
    value = naming.label_value(name)
    digest = hashlib.sha256(name.encode()).hexdigest()
    assert LABEL_VALUE.match(value), value
    assert len(value) == 63
    if prefix:
        assert value == f"{prefix}-{digest[: 63 - len(prefix) - 1]}"
    else:
        assert value == digest[:63]


def test_label_value_is_stable_and_tells_long_names_apart() -> None:
    names = [f"{'m' * 64}-{i}" for i in range(500)]
    values = [naming.label_value(n) for n in names]
    assert values == [naming.label_value(n) for n in names]
    assert len(set(values)) == len(names)
    assert all(len(v) == 63 and LABEL_VALUE.match(v) for v in values)


def test_replica_name_drops_a_trailing_dot_at_the_cut() -> None:
    name = naming.replica_name("a" * 56 + "." + "b" * 10, "c", 0)
    assert name.startswith("a" * 56 + "-"), name
