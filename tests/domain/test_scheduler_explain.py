"""The words the scheduler's reasons turn into: conditions, events and `modelplane plan`."""

from __future__ import annotations

import pytest
from modelplane.domain.scheduling import explain
from modelplane.domain.scheduling.placement import (
    CacheUnresolved,
    ClusterGone,
    ClusterReason,
    ConflictMiss,
    CountMiss,
    Evicted,
    Held,
    Hold,
    InvalidSelector,
    NoGateway,
    NoPoolFits,
    NoPools,
    NoRoom,
    NotNeeded,
    NotReady,
    NotSelected,
    OutsideCache,
    PassedOver,
    PoolMiss,
    PoolNoLongerFits,
    Repelled,
    ScaledDown,
    SelectorMiss,
    Shortage,
    SyntheticOnly,
)
from modelplane.domain.taints import Taint

from tests.domain.scheduler_kit import (
    cluster,
    deployment,
    engine,
    fleet,
    gpu,
    memory_at_least,
    pool,
    request,
    run,
    standalone,
)

MEMORY_40 = memory_at_least("40Gi")
MAINTENANCE = Taint("modelplane.ai/maintenance", "NoSchedule")


@pytest.mark.parametrize(
    ("expression", "want"),
    [
        pytest.param(MEMORY_40, "memory >= 40Gi", id="capacity"),
        pytest.param(
            'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0\n',
            "memory >= 20Gi",
            id="block-scalar-newline",
        ),
        pytest.param(
            'device.attributes["gpu.nvidia.com"].architecture == "Hopper"',
            "architecture == Hopper",
            id="attribute",
        ),
        pytest.param(
            'device.attributes["gpu.nvidia.com"].cudaComputeCapability.isGreaterThan(semver("8.9.0"))',
            "cudaComputeCapability > 8.9.0",
            id="version",
        ),
        pytest.param('device.driver == "dra.net"', "driver == dra.net", id="driver"),
        pytest.param(
            '"gpu.nvidia.com" in device.attributes', "gpu.nvidia.com attributes", id="presence"
        ),
        pytest.param(
            'device.driver == "gpu.nvidia.com" && '
            'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("120Gi")) >= 0',
            "driver == gpu.nvidia.com and memory >= 120Gi",
            id="conjunction",
        ),
        pytest.param(
            "device.driver.startsWith('gpu')", "device.driver.startsWith('gpu')", id="verbatim"
        ),
        pytest.param("x" * 200, "x" * 93 + "...", id="shortened"),
    ],
)
def test_selector_in_words(expression: str, want: str) -> None:
    assert explain.selector(expression) == want


@pytest.mark.parametrize(
    ("reason", "want"),
    [
        pytest.param(
            NotSelected("modelplane.ai/region", "us-west", "us-east"),
            "clusterSelector wants modelplane.ai/region=us-west, cluster has modelplane.ai/region=us-east",
            id="not-selected",
        ),
        pytest.param(
            NotSelected("tier", "h100", None),
            "clusterSelector wants tier=h100, cluster has no such label",
            id="not-selected-missing",
        ),
        pytest.param(
            OutsideCache("qwen3-coder"),
            "outside the footprint of ModelCache qwen3-coder",
            id="cache",
        ),
        pytest.param(NotReady(), "not Ready", id="not-ready"),
        pytest.param(NoGateway(), "no gateway address", id="no-gateway"),
        pytest.param(
            Repelled((MAINTENANCE,)),
            "taint modelplane.ai/maintenance:NoSchedule not tolerated",
            id="taint",
        ),
        pytest.param(NoPools(), "publishes no GPU pools", id="no-pools"),
        pytest.param(NoPools(unknown=True), "GPU pools not published yet", id="pools-unknown"),
        pytest.param(
            NoPoolFits("qwen", (PoolMiss("gpu-l4", "Standalone", SelectorMiss("gpu", MEMORY_40)),)),
            "no pool fits engine qwen: gpu needs memory >= 40Gi",
            id="no-pool-fits",
        ),
        pytest.param(
            NoPoolFits(
                "qwen",
                (
                    PoolMiss("a", "Standalone", SelectorMiss("gpu", MEMORY_40)),
                    PoolMiss("b", "Standalone", SelectorMiss("gpu", MEMORY_40)),
                ),
            ),
            "no pool fits engine qwen: gpu needs memory >= 40Gi",
            id="same-miss-said-once",
        ),
        pytest.param(
            NoPoolFits(
                "coder",
                (
                    PoolMiss("a", "Leader", CountMiss("gpu", 8, 1)),
                    PoolMiss("b", "Worker", ConflictMiss(("gpu", "efa"))),
                    PoolMiss("c", "Leader", SyntheticOnly(("gpu",))),
                    PoolMiss("d", "Leader", CountMiss("gpu", 8, 2)),
                ),
            ),
            "no pool fits engine coder (a: Leader gpu needs 8 per node, the pool has 1; "
            "b: Worker gpu and efa do not fit on one node together; "
            "c: Leader gpu would match only Synthetic devices; 1 more pools)",
            id="different-misses-per-pool",
        ),
        pytest.param(
            NoRoom((Shortage("gpu-h100", 0, 2, 1),)),
            "pool gpu-h100 has 0 of 2 nodes free, needs 1",
            id="no-room",
        ),
        pytest.param(NotNeeded(), "not needed: every wanted replica is placed", id="not-needed"),
        pytest.param(Held(), "not tried: placement is held", id="held"),
    ],
)
def test_cluster_reason(reason: ClusterReason, want: str) -> None:
    assert explain.cluster_reason(reason) == want


@pytest.mark.parametrize(
    ("reason", "want"),
    [
        pytest.param(ClusterGone(), "its cluster no longer exists", id="gone"),
        pytest.param(
            ClusterGone(selecting=True),
            "its cluster no longer exists or no longer matches the clusterSelector",
            id="gone-or-deselected",
        ),
        pytest.param(
            Evicted((Taint("modelplane.ai/maintenance", "NoExecute"),)),
            "taint modelplane.ai/maintenance:NoExecute not tolerated",
            id="evicted",
        ),
        pytest.param(
            PoolNoLongerFits(
                "qwen", "gpu-l4", PoolMiss("gpu-l4", "Standalone", SelectorMiss("gpu", MEMORY_40))
            ),
            "pool gpu-l4 no longer fits engine qwen: gpu needs memory >= 40Gi",
            id="pool-no-longer-fits",
        ),
        pytest.param(ScaledDown(), "scaled down", id="scaled-down"),
    ],
)
def test_drop_reason(reason: object, want: str) -> None:
    assert explain.drop_reason(reason) == want  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("reason", "want"),
    [
        pytest.param(
            InvalidSelector("qwen", "Standalone", "gpu", "device.memory >=\n", "syntax error"),
            "engine qwen Standalone device gpu: selector 'device.memory >=' is invalid: syntax error",
            id="invalid",
        ),
        pytest.param(CacheUnresolved("weights"), "ModelCache weights is not resolved", id="cache"),
    ],
)
def test_hold(reason: Hold, want: str) -> None:
    assert explain.hold(reason) == want


def test_summary_orders_groups_and_caps() -> None:
    passed = [PassedOver(f"c{i:03}", (NotReady(),)) for i in range(50)]
    passed.append(PassedOver("nebius-1", (NoRoom((Shortage("gpu-h100", 0, 2, 1),)),)))
    passed.append(PassedOver("gke-a", (Repelled((MAINTENANCE,)),)))
    text = explain.summary(passed)
    assert text == (
        "nebius-1: pool gpu-h100 has 0 of 2 nodes free, needs 1; "
        "gke-a: taint modelplane.ai/maintenance:NoSchedule not tolerated; "
        "c000, c001, c002 and 47 more: not Ready"
    )


@pytest.mark.parametrize("limit", [40, 120, 300])
def test_summary_respects_the_limit(limit: int) -> None:
    passed = [
        PassedOver(f"cluster-{i}", (NoRoom((Shortage(f"pool-{i}", 0, i, 1),)),)) for i in range(40)
    ]
    text = explain.summary(passed, limit)
    assert len(text) <= limit
    assert text.endswith("more") or text.endswith("...")


def test_docs_example_words_end_to_end() -> None:
    """The issue's example: an L4 cluster passed over for a 40Gi deployment."""
    dep = deployment("qwen", 2, engine("qwen", standalone(request("gpu", 1, MEMORY_40))))
    placement = run(
        dep,
        fleet(
            cluster("eks-us-east", pool("gpu-l4", 1, gpu("23034Mi"))),
            cluster("gke-a", pool("gpu", 1, gpu("46068Mi")), taints=[MAINTENANCE]),
            cluster("nebius-1", pool("gpu-h100", 1, gpu("81559Mi"))),
        ),
    )
    assert explain.summary(placement.passed_over) == (
        "nebius-1: pool gpu-h100 has 0 of 1 nodes free, needs 1; "
        "eks-us-east: no pool fits engine qwen: gpu needs memory >= 40Gi; "
        "gke-a: taint modelplane.ai/maintenance:NoSchedule not tolerated"
    )
