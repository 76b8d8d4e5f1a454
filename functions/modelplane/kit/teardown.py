"""Compose the ordering Usages of a composite: teardown in order
(:mod:`modelplane.domain.teardown`).

An adapter calls :func:`order` last, after composing and holding everything else, with
the rule that pairs its resources; it returns the keys of the ordering Usages it no
longer composes, for the adapter to release. A resource let go while such a Usage of it
still exists is held one more pass: the Usage goes first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.domain import teardown
from modelplane.kit.hold import hold
from modelplane.kit.request import composite, meta, observed
from modelplane.kit.respond import compose
from modelplane.kit.structs import struct_to_dict

Edges = Callable[[Mapping[str, Mapping[str, Any]]], list[teardown.Edge]]
"""A rule that pairs a composite's composed manifests (by key) into ordering edges."""


def order(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, edges: Edges) -> list[str]:
    """Compose a Usage for each edge among the resources composed now that exist; return
    the observed ordering Usages not composed now (an end released or not yet made).

    Both ends must be in the desired state and in the observed one: a Usage names what
    exists (its controller reports an error otherwise), and a resource the answer lets
    go takes its Usages with it, so nothing waits on what is being removed.
    """
    desired = rsp.desired.resources
    present = {
        key: struct_to_dict(res.resource)
        for key, res in desired.items()
        if not key.startswith(teardown.KEY_PREFIX) and observed(req, key) is not None
    }
    owner = meta(composite(req)).name
    for edge in edges(present):
        manifest = teardown.usage(owner, edge)
        if manifest is not None:
            # Ready from the start: it orders a teardown, it serves nothing, so the
            # composite's Ready never waits for it.
            compose(rsp, teardown.usage_key(edge), manifest, ready=True)
    unordered = sorted(
        key
        for key in req.observed.resources
        if key.startswith(teardown.KEY_PREFIX) and key not in desired
    )
    hold(req, rsp, _still_used(req, rsp, unordered))
    return unordered


def _still_used(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, usages: list[str]
) -> list[str]:
    """Return the resources let go now that a Usage being let go now still names as
    ``of``: each waits one pass, so Crossplane deletes the Usage first and its webhook
    never refuses the resource's deletion (a pool's node group, a disabled component)."""
    if not usages:
        return []
    desired = rsp.desired.resources
    released = {
        key: struct_to_dict(res.resource)
        for key, res in req.observed.resources.items()
        if key not in desired and not key.startswith(teardown.KEY_PREFIX)
    }
    found = teardown.refs(released)
    held = []
    for key in usages:
        usage = struct_to_dict(req.observed.resources[key].resource)
        of = teardown.used_by(usage)
        held += [k for k, r in found.items() if of is not None and teardown.is_used(r, of)]
    return sorted(set(held))
