"""The e2e scenarios, in the order they run: the docs' flows, asserted on objects read back
from the API server. Each family lives in its own module (``e2e/*_scenarios.py``); the
context they share in ``e2e/context.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from e2e.context import Context
from e2e.edit_scenarios import deletion, drain, flap, invalid_edit, quiet, scale
from e2e.examples_scenarios import examples
from e2e.protection_scenarios import protection
from e2e.teardown_scenarios import teardown_in_order
from e2e.tour_scenarios import check_columns, getting_started


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    run: Callable[[Context], None]
    needs: tuple[str, ...] = ()
    # Run only when named: it needs more than the default fleet has (the reason says what).
    optional: str = ""


SCENARIOS = (
    Scenario(
        "getting-started",
        "the docs' tour: Installation, InferenceGateway, InferenceClasses, an EKS and an "
        "Existing InferenceCluster, ModelCache, ModelDeployment, ModelService",
        getting_started,
    ),
    Scenario(
        "kubectl-get",
        "kubectl get of every kind in the tour: columns filled and named once, "
        "SYNCED and READY True",
        check_columns,
        ("getting-started",),
    ),
    Scenario(
        "quiet",
        "once Ready, the fleet goes quiet: no composite changes for 20 s",
        quiet,
        ("getting-started",),
    ),
    Scenario(
        "scale", "kubectl scale modeldeployment up to 2 and down to 1", scale, ("getting-started",)
    ),
    Scenario(
        "flap",
        "the EKS cluster's managed resource not Ready for a while, then Ready: nothing deleted",
        flap,
        ("getting-started",),
    ),
    Scenario(
        "drain",
        "a NoExecute taint moves the replica to another cluster",
        drain,
        ("getting-started",),
    ),
    Scenario(
        "invalid-edit",
        "a selector that does not compile is reported; running replicas stay",
        invalid_edit,
        ("getting-started",),
    ),
    Scenario(
        "deletion",
        "deleting the ModelDeployment garbage-collects what it composed; the clusters stay "
        "held by the ModelCache",
        deletion,
        ("getting-started",),
    ),
    Scenario(
        "protection",
        "an InferenceCluster in use can't be deleted (Crossplane's ClusterUsage webhook); "
        "once nothing uses it, the refused deletion is replayed",
        protection,
        ("getting-started",),
    ),
    Scenario(
        "examples",
        "every docs manifest admitted (server-side dry run); the XRDs' negative cases refused",
        examples,
    ),
    Scenario(
        "teardown",
        "ML resources deleted, then each InferenceCluster and the InferenceGateway: each "
        "deletion completes in order (its ordering Usages held), nothing left on a finalizer",
        teardown_in_order,
        ("getting-started",),
    ),
)
