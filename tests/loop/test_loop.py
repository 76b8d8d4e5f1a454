"""The system contract under Crossplane's real loop (issue 9, item 5).

Every example fleet is reconciled from scratch by :mod:`modelplane.dev.loop.harness` (Crossplane's
own composite reconciler, the real functions over gRPC, fake providers that report every
managed resource Ready) and must:

- **converge**: every composite ``Ready=True`` within :data:`READY_WITHIN` passes, and
  once a pass changes nothing, one more pass changes nothing either (no churn);
- **survive flaps**: a dependency reporting ``Ready=False``, or missing a status field,
  for one pass deletes nothing that existed before, and every composite that was Ready
  is Ready again within :data:`RECOVER_WITHIN` passes;
- **keep running while waiting**: an edit a function cannot compose right now (an
  invalid selector, a selector no pool fits, a missing cluster or cache...) never
  lowers the number of ModelReplicas or of their workload Objects, drops nothing the
  edited composite runs, and the composite says why in a condition;
- **move make-before-break**: a replica whose pool no longer fits an edited selector
  keeps running until its replacement elsewhere is Ready.

Throughout, no reconcile fails (an engine error, or a composed resource the API server
refuses: a name or label value it rejects) and no message carries a raw Python exception
(nonsense in a dependency's status, another team's deeply nested object).

Failure messages name the composite, the resource and the pass. ``-m loop`` selects these
tests; they skip only when ``bin/crossplane`` is not built (``make crossplane``).
``MODELPLANE_LOOP_FUNCTIONS=host:port`` runs them against a function server already
running (``modelplane-function all --insecure --debug``, say) instead of starting one.
"""

from __future__ import annotations

import pytest
from modelplane.dev.fakes.base import Key, describe
from modelplane.dev.loop import fleets
from modelplane.dev.loop.harness import ControlPlane
from modelplane.dev.loop.records import condition_line, history_text

from tests.loop.conftest import Fleets
from tests.loop.contract import (
    READY_WITHIN,
    _errors,
    _not_ready_text,
    _python_errors,
)

pytestmark = pytest.mark.loop


# --- converging ----------------------------------------------------------------------------

FLEET_NAMES = [fleet.name for fleet in fleets.FLEETS]


@pytest.mark.parametrize("fleet", FLEET_NAMES)
def test_converges_to_ready(fleet: str, converged: Fleets) -> None:
    """Every composite of the fleet is Ready=True within READY_WITHIN passes."""
    done = converged.get(fleet)
    record = done.after(READY_WITHIN)
    composites = sorted(record.conditions)
    unready = [k for k in composites if not record.ready(k)]
    problems: dict[Key, str] = {}
    for passed in done.records[:READY_WITHIN]:
        problems.update({k: f"FATAL {describe(k)}: {m}" for k, m in passed.fatal.items()})
        problems.update({k: f"ERROR {describe(k)}: {m}" for k, m in passed.errors.items()})
    step = " of the fleet's second step" if done.first else ""
    passes = min(READY_WITHIN, len(done.records))
    assert not unready, (
        f"{fleet}: {len(unready)} of {len(composites)} composites not Ready after "
        f"{passes} passes{step} (pass {record.number} of the control plane):\n"
        + "\n".join(
            f"  {describe(k)}: "
            + "; ".join(condition_line(c) for c in record.conditions[k].values())
            for k in unready
        )
        + ("\nfatal results and errors:\n  " + "\n  ".join(problems.values()) if problems else "")
        + f"\nhistory:\n{history_text(done.records[:READY_WITHIN])}"
    )
    failed = _errors(done.records)
    assert not failed, f"{fleet}: reconciles failed:\n  " + "\n  ".join(failed[:10])


@pytest.mark.parametrize("fleet", FLEET_NAMES)
def test_no_churn_after_convergence(fleet: str, converged: Fleets) -> None:
    """Once a pass changes nothing, the next pass changes nothing either."""
    done = converged.get(fleet)
    assert done.quiet, (
        f"{fleet}: still changing after {len(done.records)} passes "
        f"(every pass changed something):\n{history_text(done.records[-3:])}"
    )
    plane = done.plane.clone()
    record = plane.run_pass()
    assert record.quiet, (
        f"{fleet}: pass {record.number}, after a pass that changed nothing, changed things:\n"
        f"{record.summary(limit=40)}"
    )


# --- names ---------------------------------------------------------------------------------

LONG_NAME = ("qwen-demo-" + "-".join(["with-a-very-long-name"] * 3))[:63]
"""The longest ModelDeployment name the API server admits: Crossplane caps a composite's
name at 63 characters (it labels what it composes with it), and label values and the
replica names derived from it must stay valid."""


def test_long_deployment_name_converges(loop_functions: dict[str, str]) -> None:
    """A ModelDeployment with the longest admitted name composes nothing the API refuses."""
    docs = []
    for doc in fleets.BY_NAME["getting-started"].documents():
        if doc.get("kind") == "ModelService":
            continue  # it selects the deployment by its label, which names the old name
        renamed = {**doc["metadata"], "name": LONG_NAME}
        docs.append({**doc, "metadata": renamed} if doc.get("kind") == "ModelDeployment" else doc)
    plane = ControlPlane(docs, loop_functions)
    records = plane.converge(READY_WITHIN)
    failed = _python_errors(records) + _errors(records)
    assert not failed, (
        f"a ModelDeployment named {LONG_NAME} ({len(LONG_NAME)} characters):\n  "
        + "\n  ".join(failed[:10])
    )
    unready = plane.unready()
    assert not unready, (
        f"a ModelDeployment named {LONG_NAME} ({len(LONG_NAME)} characters): not Ready after "
        f"{len(records)} passes:\n{_not_ready_text(plane, unready)}\n"
        f"history:\n{history_text(records)}"
    )
