"""Generations on the loop's control plane: what the API server and Crossplane keep of them.

A composite's ``metadata.generation`` goes up by one per spec change, and Crossplane
stamps its own conditions with the generation its status write returns: the harness
(:mod:`modelplane.dev.loop.harness`) does both, as they do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SYSTEM_CONDITIONS = ("Ready", "Synced")


def stamp_generation(obj: dict[str, Any]) -> None:
    """Stamp the reconciler's own conditions with the generation ``obj`` has now.

    Crossplane's composite reconciler marks Ready and Synced through its
    ObservedGenerationPropagationManager (``observedGeneration: metadata.generation``)
    after its status patch has reloaded the composite from the API server's answer: so
    the generation stamped is the one the object has when the status is written, which
    is newer than the spec the reconcile read when another writer changed the spec
    meanwhile (:meth:`~modelplane.dev.loop.harness.ControlPlane.race`). The render
    engine's in-memory reconcile leaves the field out, so it is put here as the real
    controller writes it.
    """
    generation = (obj.get("metadata") or {}).get("generation")
    if generation is None:
        return
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") in SYSTEM_CONDITIONS:
            cond["observedGeneration"] = generation


def next_generation(previous: Mapping[str, Any] | None, obj: Mapping[str, Any]) -> int:
    """A composite's ``metadata.generation`` as the API server keeps it: +1 per spec change.

    Crossplane stamps each condition with the generation it observed, so a composite's
    Ready tells whether it speaks of the current spec (a rolling update relies on it).
    """

    def spec(o: Mapping[str, Any]) -> Any:
        return {k: v for k, v in (o.get("spec") or {}).items() if k != "crossplane"}

    if previous is None:
        return 1
    generation = int((previous.get("metadata") or {}).get("generation") or 1)
    return generation + 1 if spec(previous) != spec(obj) else generation
