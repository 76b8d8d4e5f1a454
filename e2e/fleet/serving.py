"""What qwen-demo serves, as the fleet scenarios read it: its Ready replicas, the
ModelService's live backends, and a wait for a given number of each."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from e2e.context import ML, MP
from e2e.fleet.context import Fleet, fits
from e2e.kube import Obj, conditions, dig

HASH_LABEL = "modelplane.ai/template-hash"
READY_TEMPLATE = "readyTemplateHash"


def routed_backends(ctx: Fleet) -> list[str]:
    """The ModelService's live backends: each backendRef of its HTTPRoute whose ModelEndpoint
    still exists (not being deleted) and names that Service. A ref left to an endpoint that
    is gone sends its share of traffic nowhere, so it does not count as serving."""
    ms = ctx.kube.get(MP, "ModelService", "qwen", ML)
    if ms is None:
        return []
    live = {
        str(dig(e, "status", "routing", "backendName"))
        for e in ctx.kube.list(MP, "ModelEndpoint", ML)
        if not dig(e, "metadata", "deletionTimestamp")
    }
    return [
        name
        for ref, route in ctx.composed(ms)
        if ref["kind"] == "HTTPRoute" and route is not None
        for rule in dig(route, "spec", "rules") or []
        for backend in rule.get("backendRefs") or []
        if (name := str(backend.get("name"))) in live
    ]


def fresh_ready(replica: Mapping[str, Any]) -> bool:
    """Ready on the spec it carries: the condition speaks of its current generation and,
    when it carries a template hash, ``status.readyTemplateHash`` names that hash (the
    Ready was judged on that template: Crossplane's generation stamp alone can name a
    newer spec than the one judged)."""
    ready = conditions(replica).get("Ready") or {}
    generation = dig(replica, "metadata", "generation")
    observed = ready.get("observedGeneration", generation)
    template = (dig(replica, "metadata", "labels") or {}).get(HASH_LABEL)
    judged = template is None or dig(replica, "status", READY_TEMPLATE) == template
    return ready.get("status") == "True" and observed == generation and judged


def scale_ready(ctx: Fleet, replicas: int, spec: Mapping[str, Any] | None = None) -> list[Obj]:
    """Scale qwen-demo to ``replicas`` (with ``spec``'s other fields) and wait until that
    many replicas are Ready and the ModelService routes to each; return them. The
    scenarios start from this whatever the ones before them left."""
    room = fits(ctx)
    assert room >= replicas, f"the fleet fits {room} qwen-demo replicas, {replicas} needed"
    patch = {**(spec or {}), "replicas": replicas}
    ctx.kube.patch(MP, "ModelDeployment", "qwen-demo", {"spec": patch}, ML)

    def settled() -> list[Obj] | None:
        found = ctx.replicas()
        ready = sum(1 for r in found if fresh_ready(r)) == len(found) == replicas
        return found if ready and len(routed_backends(ctx)) == replicas else None

    done = ctx.wait_for(
        f"{replicas} Ready replicas of qwen-demo, each routed to",
        settled,
        300,
        lambda: str(
            [(r["metadata"]["name"], fresh_ready(r)) for r in ctx.replicas()] + routed_backends(ctx)
        ),
    )
    ctx.step(f"qwen-demo runs {replicas} Ready replicas, all routed to")
    return list(done)
