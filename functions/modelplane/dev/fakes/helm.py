"""provider-helm: what it reports about a Release it installed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.dev.fakes.base import Obj


def chart_of(release: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Release's ``spec.forProvider.chart`` (name, repository, version)."""
    return ((release.get("spec") or {}).get("forProvider") or {}).get("chart") or {}


def observe(release: Mapping[str, Any]) -> Obj:
    """``status.atProvider`` of a deployed Release (helm install's first revision).

    ``version`` is the chart version deployed, as provider-helm reports it (without a
    leading ``v``), when the Release pins one.
    """
    out: Obj = {"releaseDescription": "Install complete", "revision": 1, "state": "deployed"}
    version = chart_of(release).get("version")
    if version:
        out["version"] = str(version).lstrip("v")
    return out
