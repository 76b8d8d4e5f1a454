"""Compose the ordering Usages of a composite: teardown in order
(:mod:`modelplane.domain.teardown`).

An adapter calls :func:`order` last, after composing and holding everything else, with
the rule that pairs its resources; it returns the keys of the ordering Usages it no
longer composes, for the adapter to release.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.domain import teardown
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
    return sorted(
        key
        for key in req.observed.resources
        if key.startswith(teardown.KEY_PREFIX) and key not in desired
    )
