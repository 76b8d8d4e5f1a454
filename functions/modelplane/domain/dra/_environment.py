"""The Kubernetes release the DRA CEL engine follows, and the feature gates it applies.

A selector reaches a cluster through two compilations: kube-apiserver validates a new
ResourceClaim (or DeviceClass) in its *NewExpressions* CEL environment, built for the
API server's compatibility version (its own minor version minus one) with the DRA device
type its feature gates select; the scheduler later compiles the stored selector again in
the *StoredExpressions* environment, which ignores feature gates. Only what passes the
first can reach the second, so we compile as the API server does for new expressions.

At Kubernetes 1.35 every CEL library of the base environment was introduced by 1.34, so
both environments have the same libraries; they differ only in the device type. The one
feature-gated field of DRA's device type is ``allowMultipleAllocations``
(``DRAConsumableCapacity``, alpha since 1.34, off by default in 1.35). The other DRA gates
(admin access, prioritized lists, partitionable devices, device taints, binding
conditions, extended resources, ...) change claims, slices and allocation, not what a
selector sees; the authorization-selectors library (``AuthorizeWithSelectors``) is GA and
locked on since 1.34.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

KUBERNETES_VERSION: Final = (1, 35)
"""The Kubernetes minor version whose API server and scheduler we follow (v1.35)."""

CEL_COMPATIBILITY_VERSION: Final = (KUBERNETES_VERSION[0], KUBERNETES_VERSION[1] - 1)
"""The version kube-apiserver builds its NewExpressions environment for (n - 1)."""

FEATURE_GATES: Final = MappingProxyType({"DRAConsumableCapacity": False})
"""The feature gates that change DRA selectors, at their Kubernetes 1.35 defaults."""
