"""Kubernetes Dynamic Resource Allocation: devices and CEL device selectors.

This package is a sealed library: code outside ``modelplane.domain.dra`` imports this
module only, never one of its private modules (``_selector``, ``_device``, the CEL
parser, checker, cost estimator, evaluator and libraries behind them). Selectors compile
as Kubernetes' API server compiles them and evaluate as its scheduler matches a device;
docs/design/cel.md has the details.

>>> device = Device.build("gpu.nvidia.com", capacity={"memory": "81559Mi"})
>>> matches('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0', device)
Verdict(matched=False, error=None, cost=7)
"""

from modelplane.domain.dra._budget import (
    WORK_LIMIT,
    CallBudget,
    Cancelled,
    call_deadline,
    check_call_deadline,
)
from modelplane.domain.dra._device import Attribute, AttributeKind, Device, qualify
from modelplane.domain.dra._environment import FEATURE_GATES, KUBERNETES_VERSION
from modelplane.domain.dra._selector import (
    COST_LIMIT,
    MAX_EXPRESSION_BYTES,
    SHARED_MIN_COST,
    Selector,
    SelectorError,
    Verdict,
    VerdictStore,
    clear_caches,
    compile_selector,
    matches,
    share_verdicts,
    verdict_key,
)

__all__ = [
    "COST_LIMIT",
    "FEATURE_GATES",
    "KUBERNETES_VERSION",
    "MAX_EXPRESSION_BYTES",
    "SHARED_MIN_COST",
    "WORK_LIMIT",
    "Attribute",
    "AttributeKind",
    "CallBudget",
    "Cancelled",
    "Device",
    "Selector",
    "SelectorError",
    "Verdict",
    "VerdictStore",
    "call_deadline",
    "check_call_deadline",
    "clear_caches",
    "compile_selector",
    "matches",
    "qualify",
    "share_verdicts",
    "verdict_key",
]
