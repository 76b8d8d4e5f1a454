"""Each docs recipe renders offline with its model placed (``make render EXAMPLE=<recipe>``).

The recipe's ``fleet/`` (:mod:`modelplane.dev.recipe_fleets`) gives its clusters the
status Modelplane publishes and the getting-started gateway, as the docs assume; so one
offline reconcile schedules every replica and routes to the gateway.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from modelplane.dev import recipe_fleets, render

pytestmark = pytest.mark.crossplane


def _condition(doc: dict[str, Any], typ: str) -> dict[str, Any]:
    found = [c for c in (doc.get("status") or {}).get("conditions", []) if c["type"] == typ]
    return found[0] if found else {}


@pytest.mark.parametrize("folder", recipe_fleets.recipe_folders(), ids=lambda p: p.name)
def test_every_recipe_renders_with_its_model_placed(folder: Path) -> None:
    rendered = render.render_path(folder, depth=0)
    assert all(one.error is None for one in rendered), [str(one.error) for one in rendered]
    deployments = [one for one in rendered if one.xr["kind"] == "ModelDeployment"]
    assert deployments
    for one in deployments:
        xr = one.docs[0]
        scheduled = _condition(xr, "ReplicasScheduled")
        assert scheduled.get("status") == "True", (folder.name, scheduled)
        replicas = [d for d in one.docs[1:] if d.get("kind") == "ModelReplica"]
        assert len(replicas) == one.xr["spec"].get("replicas", 1), folder.name  # XRD default 1
    for one in rendered:
        if one.xr["kind"] == "ModelService":
            routing = _condition(one.docs[0], "RoutingReady")
            assert routing.get("reason") != "GatewayNotFound", (folder.name, routing)
