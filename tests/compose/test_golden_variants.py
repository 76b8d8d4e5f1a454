"""Golden responses of the variants one golden file per kind does not reach: an EKS
cluster with an EFA pool (its EFA security group and the pool's launch template) and a
PrefillDecode replica (its endpoint picker's P/D configuration). Same rules as
``test_golden.py``: reconciled in process until settled, regenerated with
``UPDATE_GOLDEN=1`` and reviewed like code.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

import pytest

from tests import inprocess as loop
from tests import setups
from tests.compose import test_waiting as cases
from tests.compose.test_golden import GOLDEN
from tests.inprocess import Store
from tests.requests import as_dict

QWEN3_CODER = "examples/recipes/qwen3-coder"
KIMI_REPLICA = "examples/replicas/kimi-k2"


def efa_cluster() -> setups.Setup:
    """The EKSCluster the qwen3-coder recipe's InferenceCluster composes (an EFA pool)."""
    docs = loop.load(f"{QWEN3_CODER}/inference-cluster.yaml", f"{QWEN3_CODER}/inference-class.yaml")
    cluster = setups.Setup(
        loop.find(docs, "InferenceCluster"), Store([loop.find(docs, "InferenceClass")])
    )
    composed = loop.desired(loop.reconcile(cluster.xr, cluster.store))["cluster"]
    return setups.Setup(composed, Store())


def pd_replica() -> setups.Setup:
    """The kimi-k2 PrefillDecode ModelReplica, on its fleet."""
    xr = loop.find(loop.load(f"{KIMI_REPLICA}/model-replica.yaml"), "ModelReplica")
    return setups.Setup(xr, Store(loop.load(f"{KIMI_REPLICA}/fleet/inference-cluster.yaml")))


VARIANTS: dict[str, Callable[[], setups.Setup]] = {
    "ekscluster-efa": efa_cluster,
    "modelreplica-prefill-decode": pd_replica,
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_settled_variant_matches_its_golden_file(variant: str) -> None:
    xr, store, observed = cases._settled(VARIANTS[variant]())
    got = as_dict(loop.reconcile(xr, store, observed))
    path = GOLDEN / f"{variant}.json"
    text = json.dumps(got, indent=2, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"no golden file {path.name}: run with UPDATE_GOLDEN=1"
    assert json.loads(path.read_text()) == got
