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
