"""Taints and tolerations on the Kubernetes model (docs L4637-L4643)."""

from __future__ import annotations

import pytest
from modelplane.domain.taints import Taint, Toleration, tolerates, untolerated

MAINTENANCE = Taint("modelplane.ai/maintenance", "NoSchedule")
MAINTENANCE_EVICT = Taint("modelplane.ai/maintenance", "NoExecute")
GPU_SHORTAGE = Taint("tier", "NoSchedule", "frontier")


@pytest.mark.parametrize(
    ("toleration", "taint", "want"),
    [
        pytest.param(
            Toleration("modelplane.ai/maintenance", "Exists"), MAINTENANCE, True, id="exists-key"
        ),
        pytest.param(
            Toleration("modelplane.ai/maintenance", "Exists"),
            GPU_SHORTAGE,
            False,
            id="exists-other-key",
        ),
        pytest.param(Toleration("", "Exists"), GPU_SHORTAGE, True, id="exists-empty-key-all"),
        pytest.param(Toleration("tier", "Equal", "frontier"), GPU_SHORTAGE, True, id="equal"),
        pytest.param(Toleration("tier", value="frontier"), GPU_SHORTAGE, True, id="default-equal"),
        pytest.param(Toleration("tier", "Equal", "edge"), GPU_SHORTAGE, False, id="equal-value"),
        pytest.param(Toleration("tier", "Equal"), GPU_SHORTAGE, False, id="equal-no-value"),
        pytest.param(
            Toleration("modelplane.ai/maintenance"), MAINTENANCE, True, id="equal-both-empty"
        ),
        pytest.param(Toleration("", "Equal"), MAINTENANCE, False, id="equal-empty-key-nothing"),
        pytest.param(
            Toleration("modelplane.ai/maintenance", "Exists", effect="NoExecute"),
            MAINTENANCE,
            False,
            id="effect-mismatch",
        ),
        pytest.param(
            Toleration("modelplane.ai/maintenance", "Exists", effect="NoSchedule"),
            MAINTENANCE,
            True,
            id="effect-match",
        ),
        pytest.param(
            Toleration("modelplane.ai/maintenance", "Exists"),
            MAINTENANCE_EVICT,
            True,
            id="empty-effect-matches-noexecute",
        ),
        pytest.param(
            Toleration("", "Exists", effect="NoSchedule"),
            MAINTENANCE_EVICT,
            False,
            id="empty-key-but-effect",
        ),
    ],
)
def test_tolerates(toleration: Toleration, taint: Taint, want: bool) -> None:
    assert tolerates(toleration, taint) is want


@pytest.mark.parametrize(
    ("taints", "tolerations", "effect", "want"),
    [
        pytest.param((), (), None, (), id="untainted"),
        pytest.param((MAINTENANCE,), (), None, (MAINTENANCE,), id="no-tolerations"),
        pytest.param(
            (MAINTENANCE, GPU_SHORTAGE),
            (Toleration("tier", value="frontier"),),
            None,
            (MAINTENANCE,),
            id="must-tolerate-every-taint",
        ),
        pytest.param(
            (MAINTENANCE, MAINTENANCE_EVICT),
            (),
            "NoExecute",
            (MAINTENANCE_EVICT,),
            id="only-noexecute",
        ),
        pytest.param(
            (GPU_SHORTAGE, MAINTENANCE, GPU_SHORTAGE),
            (),
            None,
            (MAINTENANCE, GPU_SHORTAGE),
            id="sorted-and-unique",
        ),
    ],
)
def test_untolerated(
    taints: tuple[Taint, ...],
    tolerations: tuple[Toleration, ...],
    effect: str | None,
    want: tuple[Taint, ...],
) -> None:
    assert untolerated(taints, tolerations, effect=effect) == want  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("taint", "want"),
    [
        pytest.param(MAINTENANCE, "modelplane.ai/maintenance:NoSchedule", id="no-value"),
        pytest.param(GPU_SHORTAGE, "tier=frontier:NoSchedule", id="value"),
    ],
)
def test_taint_reads_like_kubectl(taint: Taint, want: str) -> None:
    assert str(taint) == want
