"""A short path that reads an object otherwise than the careful reader cannot pass silently.

Under test every read is checked (``tests/conftest.py`` turns
``planning.agreement.CHECKING`` on): here a short path is made to read one field
otherwise, as a change to one reader and not the other would, and the read fails,
naming both readings; with the check off (production) it is not run.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from modelplane import planning
from modelplane.planning import agreement
from modelplane.planning import clusters as cluster_reader
from modelplane.planning import replicas as replica_reader

from tests.compose.deployments import inference_cluster
from tests.compose.test_fleet_memo import _replica


@pytest.fixture(autouse=True)
def _fresh() -> None:
    planning.forget()


def test_every_test_checks_the_readers_agree() -> None:
    assert agreement.CHECKING


def test_a_short_path_that_reads_a_cluster_otherwise_fails_the_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain = cluster_reader._plain_cluster

    def drifted(fields: Any) -> Any:
        found = plain(fields)
        return dataclasses.replace(found, gateway_address="elsewhere")

    monkeypatch.setattr(cluster_reader, "_plain_cluster", drifted)
    with pytest.raises(agreement.ReaderDisagreementError, match="InferenceCluster"):
        planning.read_cluster(planning.as_struct(inference_cluster("eks-a")))


def test_a_short_path_that_reads_a_replica_otherwise_fails_the_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain = replica_reader._plain_replica

    def drifted(fields: Any, engines_of: Any = None) -> Any:
        found = plain(fields, engines_of)
        return dataclasses.replace(found, index=found.index + 1)

    admitted = replica_reader._admitted_replica

    def drifted_admitted(fields: Any) -> Any:  # the fleet reader's short path, in one pass
        found = admitted(fields)
        return dataclasses.replace(found, index=found.index + 1)

    monkeypatch.setattr(replica_reader, "_plain_replica", drifted)
    doc = _replica()
    with pytest.raises(agreement.ReaderDisagreementError, match="ModelReplica"):
        planning.read_replica(planning.as_struct(doc))
    planning.forget()
    monkeypatch.setattr(replica_reader, "_admitted_replica", drifted_admitted)
    with pytest.raises(agreement.ReaderDisagreementError, match="ModelReplica"):
        planning.read_fleet([], [planning.as_struct(doc).SerializeToString()])


def test_unchecked_the_short_path_answers_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = cluster_reader._plain_cluster
    monkeypatch.setattr(agreement, "CHECKING", False)
    monkeypatch.setattr(
        cluster_reader,
        "_plain_cluster",
        lambda fields: dataclasses.replace(plain(fields), gateway_address="elsewhere"),
    )
    read = planning.read_cluster(planning.as_struct(inference_cluster("eks-a")))
    assert read is not None
    assert read.gateway_address == "elsewhere"
