"""The oracle's JSON-lines protocol, answered by Modelplane's own implementation.

Each input line is one of::

    {"id": "a", "expression": "<CEL>", "device": {"driver": "...",
        "attributes": {"name": {"string"|"bool"|"int"|"version": value}},
        "capacity": {"name": {"value": "<quantity>"}}}}
    {"id": "b", "quantity": "40Gi", "other": "39Gi"}
    {"id": "c", "semver": "1.2.3", "other": "1.2.4"}

and each output line the matching verdict, in the same form tests/oracle prints: the
verdict class, the runtime ``cost`` and the static ``estimate`` of a selector (a selector
too costly to compile reports its estimate as ``cost``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from modelplane.domain import dra, semver
from modelplane.domain import quantity as qty
from modelplane.domain.dra import Attribute, Device

_KINDS = ("string", "bool", "int", "version")


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """Answer one request line."""
    rid = request.get("id", "")
    if request.get("expression") is not None:
        return {"id": rid, **_selector(request["expression"], request.get("device") or {})}
    if request.get("quantity") is not None:
        return {"id": rid, **_quantity(request["quantity"], request.get("other"))}
    if request.get("semver") is not None:
        return {"id": rid, **_semver(request["semver"], request.get("other"))}
    return {"id": rid, "verdict": "bad_input", "error": "need expression, quantity or semver"}


def render(verdict: dict[str, Any]) -> str:
    """One output line, formatted as Go's encoder formats it."""
    return json.dumps(verdict, ensure_ascii=False, separators=(",", ":"))


def _selector(expression: str, device: dict[str, Any]) -> dict[str, Any]:
    try:
        selector = dra.compile_selector(expression)
    except dra.SelectorError as err:
        failed: dict[str, Any] = {"verdict": "compile_error"}
        if err.cost is not None:
            failed["cost"] = err.cost
        return {**failed, "error": err.reason}
    built = _device(device)
    if isinstance(built, str):
        return {"verdict": "runtime_error", "estimate": selector.max_cost, "error": built}
    verdict = selector.evaluate(built)
    out: dict[str, Any] = {"verdict": _verdict_class(verdict)}
    if verdict.cost is not None:
        out["cost"] = verdict.cost
    out["estimate"] = selector.max_cost
    if verdict.error is not None:
        out["error"] = verdict.error
    return out


def _verdict_class(verdict: dra.Verdict) -> str:
    if verdict.error is not None:
        return "runtime_error"
    return "match" if verdict.matched else "no_match"


def _device(raw: dict[str, Any]) -> Device | str:
    attributes: dict[str, Attribute] = {}
    for name, value in (raw.get("attributes") or {}).items():
        present = [k for k in _KINDS if isinstance(value, dict) and value.get(k) is not None]
        if len(present) != 1:
            return f"attribute {name}: unsupported attribute value"
        kind = present[0]
        attributes[name] = Attribute(kind, value[kind])  # type: ignore[arg-type]
    capacity = {name: str(c.get("value", "")) for name, c in (raw.get("capacity") or {}).items()}
    return Device.build(str(raw.get("driver", "")), attributes, capacity)


def _quantity(text: str, other: str | None) -> dict[str, Any]:
    return _parsed(qty.parse, qty.QuantityError, text, other, _quantity_fields)


def _quantity_fields(parsed: qty.Quantity) -> dict[str, Any]:
    out: dict[str, Any] = {"canonical": qty.canonical(parsed), "sign": parsed.sign()}
    as_int = parsed.as_int64()
    if as_int is not None:
        out["integer"] = as_int
    approx = parsed.as_approximate_float()
    if math.isfinite(approx):
        out["float"] = approx
    return out


def _semver(text: str, other: str | None) -> dict[str, Any]:
    return _parsed(semver.parse, semver.SemverError, text, other, _semver_fields)


def _semver_fields(version: semver.Version) -> dict[str, Any]:
    return {
        "canonical": str(version),
        "major": version.major,
        "minor": version.minor,
        "patch": version.patch,
    }


def _parsed(
    parse: Callable[[str], Any],
    error: type[Exception],
    text: str,
    other: str | None,
    fields: Callable[[Any], dict[str, Any]],
) -> dict[str, Any]:
    """The verdict on a quantity or a version, in the oracle's key order: its fields and,
    given another, how the two compare; or the first parse error (the other's prefixed
    ``other:``)."""
    try:
        value = parse(text)
    except error as err:
        return {"verdict": "error", "error": str(err)}
    out: dict[str, Any] = {"verdict": "ok", **fields(value)}
    if other is not None:
        try:
            out["compare"] = value.compare(parse(other))
        except error as err:
            return {"verdict": "error", "error": f"other: {err}"}
    return out
