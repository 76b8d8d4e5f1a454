"""Crossplane's requirement loop, in process, for tests and benchmarks.

A function is called again with what its last response required until the requirements
settle, as Crossplane's function runner does (up to ``MaxRequirementsIterations``), each
requirement answered from a list of objects as the API server's cache would answer it:
by group/version and kind, then name or labels, and namespace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

Doc = dict[str, Any]
Answers = dict[str, list[Doc]]
MAX_CALLS = 5
"""Crossplane's ``MaxRequirementsIterations``."""


class UnsettledError(RuntimeError):
    """A function's requirements did not settle within :data:`MAX_CALLS` calls."""


def selected(objects: Iterable[Doc], selector: fnv1.ResourceSelector) -> list[Doc]:
    """The objects a requirement's selector matches, in namespace and name order."""
    which = selector.WhichOneof("match")
    labels = dict(selector.match_labels.labels) if which == "match_labels" else {}
    out = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        if (obj.get("apiVersion"), obj.get("kind")) != (selector.api_version, selector.kind):
            continue
        if selector.HasField("namespace") and meta.get("namespace") != selector.namespace:
            continue
        if which == "match_name" and meta.get("name") != selector.match_name:
            continue
        found = meta.get("labels") or {}
        if any(found.get(k) != v for k, v in labels.items()):
            continue
        out.append(obj)
    return sorted(out, key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))


def settle(
    call: Callable[[Mapping[str, list[Doc]]], fnv1.RunFunctionResponse], objects: Iterable[Doc]
) -> tuple[fnv1.RunFunctionResponse, Answers]:
    """Call ``call`` (given each requirement's answer) until what it requires is what it
    was given; return its last response and those answers.

    Raises:
        UnsettledError: the requirements changed on every one of :data:`MAX_CALLS` calls.
    """
    store = list(objects)
    asked: dict[str, bytes] = {}
    answers: Answers = {}
    for _ in range(MAX_CALLS):
        rsp = call(answers)
        wanted = {
            name: sel.SerializeToString(deterministic=True)
            for name, sel in rsp.requirements.resources.items()
        }
        if wanted == asked:
            return rsp, answers
        asked = wanted
        answers = {name: selected(store, sel) for name, sel in rsp.requirements.resources.items()}
    msg = f"requirements did not settle in {MAX_CALLS} calls"
    raise UnsettledError(msg)
