"""Bad input, every kind: no crash, no loss, and a message that names the problem.

For every kind the registry serves, a valid request is settled first (reconciled in
process until every composed resource is reported healthy: :mod:`tests.compose.settled`),
so it carries observed composed resources and answered requirements. That request is
then mutated systematically, one mutation at a time:

- ``spec``: every field of the composite's spec, of the wrong type (a list where an
  object belongs, an object where a list does, text for a number, a number for text)
  and null;
- ``metadata``: the composite's metadata missing, of the wrong type, without a name
  or namespace, with labels that are no strings;
- ``required``: every field of each related object the function requires (its
  ``status``, ``spec`` and labels), of the wrong type and null; the object without
  metadata;
- ``observed``: the status of one observed composed resource of each kind, of the
  wrong type and null;
- ``observed-all``: every observed composed resource (not one of each kind), every
  field of its status to :data:`MAX_PATH_DEPTH` and its name, labels and annotations:
  of the wrong type, null, and (text) a 200,000-character string: each whole status
  always, and at most :data:`OBSERVED_ALL_LIMIT` deeper fields per kind, evenly spread
  over them all;
- ``deep``: 100 levels of nesting in the composite's spec, in a related object's
  status, and in an observed resource's status;
- ``deep-limit``: as deep as Kubernetes lets an object nest (10,000 levels) in a
  related object's status and in an observed resource's status: one such object, which
  the API server accepts, must not stop the composites that read it. (The composite's
  own spec that deep may be refused with a Fatal that says so.)

Each answer must be in one of three classes (:func:`classify`):

- ``fatal``: a Fatal result (Crossplane then applies nothing) whose message names the
  object (its name) and the field (a key on the mutated path), and is no Python
  exception (no "internal error", no ``KeyError``, ``'NoneType'``, "object has no
  attribute", ...);
- ``held``: a normal answer with a Warning event, and a condition that is not True
  saying where the composite stands, that composes again every observed composed
  resource (it never drops what runs);
- ``composed``: any other normal answer that composes again every observed composed
  resource: the input was valid after all, read as not there yet, or a related object
  the function reads around (a Warning names it; the composite itself is fine).

No result or condition of a normal answer shows Python exception text either.

One exception to "never drops": null in a field the XRD marks optional is the user
removing it (the API server stores no nulls), which may remove what it composed.
"""

from __future__ import annotations

import copy
import functools
import importlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb
from modelplane import registry, runtime

from tests.compose.settled import SETUPS, Settled, settled
from tests.inprocess import Doc, Observed
from tests.requests import request

ROOT = Path(__file__).resolve().parents[2]

DEEP_LEVELS = 100
"""Past protobuf's default decoding limit (some 32 levels); far inside Kubernetes' 10,000."""

MAX_PATH_DEPTH = 8
"""Fields deeper than this (inside pod templates) are mutated as part of their parent."""

OBSERVED_ALL_LIMIT = 250
"""``observed-all`` mutations per kind: a cloud cluster composes some forty resources
with thousands of status fields; an even spread of them keeps the sweep to seconds."""

HUGE_TEXT = "x" * 200_000
"""Longer than any field Kubernetes validates, far below its 1.5 MiB object limit."""

# Python's words for what went wrong: a message that shows one leaks an exception.
PYTHON_TEXT = re.compile(
    r"Traceback|internal error|NoneType|object has no attribute|not subscriptable"
    r"|not iterable|unhashable|KeyError|TypeError|AttributeError|IndexError|ValueError"
    r"|RecursionError|positional argument|takes \d+|got an unexpected|<class |object at 0x"
    r"|validation errors? for|\[type=|errors\.pydantic\.dev"
)

Path_ = tuple[str | int, ...]


def test_every_kind_has_a_setup() -> None:
    assert sorted(SETUPS) == sorted(registry.COMPOSERS)


@pytest.mark.parametrize("kind", sorted(SETUPS))
def test_each_setup_is_a_valid_settled_request(kind: str) -> None:
    """The starting point: no Fatal, something observed, everything observed kept."""
    base = settled(kind)
    rsp = runtime.run(base.request(), registry.COMPOSERS)
    assert [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL] == []
    if kind != "InferenceClass":  # data only: composes nothing
        assert base.observed, f"{kind}: nothing observed to lose"
    assert set(base.observed) <= set(rsp.desired.resources)


# --- mutations ------------------------------------------------------------------------------


@dataclass
class Mutation:
    """One bad input: what is changed, and on which object."""

    id: str
    family: str
    obj_name: str  # the name the Fatal must carry
    path: Path_  # the field changed (keys the Fatal may name)
    xr: Doc
    observed: Observed
    required: dict[str, list[Doc]]
    may_drop: bool = False  # null in an optional field: the user removed it
    deep: Callable[[fnv1.RunFunctionRequest], None] | None = None

    def request(self) -> fnv1.RunFunctionRequest:
        req = request(self.xr, observed=self.observed, required=self.required)
        for name in self.required:
            req.required_resources[name].SetInParent()
        if self.deep is not None:
            self.deep(req)
        return req


def show(path: Path_) -> str:
    """``spec.engines[0].members[1].role``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _walk(value: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every field below ``value`` (not ``value`` itself), to MAX_PATH_DEPTH."""
    if len(path) >= MAX_PATH_DEPTH:
        return
    items: list[tuple[str | int, Any]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    for key, child in items:
        here = (*path, key)
        yield here, child
        yield from _walk(child, here)


def wrong_values(value: Any) -> list[tuple[str, Any]]:
    """Values of the wrong type for ``value``'s, and null."""
    if isinstance(value, dict):
        return [("list", ["x"]), ("null", None)]
    if isinstance(value, list):
        return [("object", {"x": 1}), ("null", None)]
    if isinstance(value, bool):
        return [("text", "yes"), ("null", None)]
    if isinstance(value, int | float):
        return [("text", "many"), ("null", None)]
    if isinstance(value, str):
        return [("number", 12), ("null", None)]
    return [("text", "x")]


def _put(doc: Any, path: Path_, value: Any) -> None:
    for part in path[:-1]:
        doc = doc[part]
    doc[path[-1]] = value


def _get(doc: Any, path: Path_) -> Any:
    for part in path:
        doc = doc[part]
    return doc


# The XRD schema says which fields are optional (null there is the field removed).
@functools.cache
def _schemas() -> dict[str, Doc]:
    found = {}
    for definition in sorted((ROOT / "apis").glob("*/definition.yaml")):
        xrd = yaml.safe_load(definition.read_text())
        version = next(v for v in xrd["spec"]["versions"] if v.get("served", True))
        found[xrd["spec"]["names"]["kind"]] = version["schema"]["openAPIV3Schema"]
    return found


def optional(kind: str, path: Path_) -> bool:
    """Whether the XRD lets the field at ``path`` be absent (unknown fields: no)."""
    schema: Doc | None = _schemas().get(kind)
    for part in path:
        if schema is None:
            return False
        if isinstance(part, int):
            schema = schema.get("items")
            continue
        parent = schema
        schema = (schema.get("properties") or {}).get(part)
        if part == path[-1] and schema is not None:
            return part not in (parent.get("required") or [])
    return False


def _nest(value: structpb.Struct, levels: int) -> None:
    for _ in range(levels):
        value = value.fields["a"].struct_value
    value["leaf"] = "x"


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    name = meta.get("name", "") if isinstance(meta, dict) else ""
    return name if isinstance(name, str) else ""


def _copy(base: Settled) -> dict[str, Any]:
    """The parts of a request to mutate, copied."""
    return {
        "xr": copy.deepcopy(base.xr),
        "observed": copy.deepcopy(base.observed),
        "required": copy.deepcopy(base.required),
    }


def _spec(kind: str, base: Settled) -> Iterator[Mutation]:
    for path, value in _walk(base.xr.get("spec"), ("spec",)):
        for what, bad in wrong_values(value):
            parts = _copy(base)
            _put(parts["xr"], path, bad)
            may_drop = bad is None and optional(kind, path)
            name = _name(base.xr)
            yield Mutation(f"{show(path)}={what}", "spec", name, path, **parts, may_drop=may_drop)


def _drop(*path: str | int) -> Callable[[Doc], None]:
    return lambda doc: _get(doc, path[:-1]).pop(path[-1])


def _to(value: Any, *path: str | int) -> Callable[[Doc], None]:
    return lambda doc: _put(doc, path, value)


METADATA: list[tuple[str, Path_, Callable[[Doc], None]]] = [
    ("metadata=missing", ("metadata",), _drop("metadata")),
    ("metadata=list", ("metadata",), _to(["x"], "metadata")),
    ("metadata.name=missing", ("metadata", "name"), _drop("metadata", "name")),
    ("metadata.name=number", ("metadata", "name"), _to(5, "metadata", "name")),
    ("metadata.labels=text", ("metadata", "labels"), _to("x", "metadata", "labels")),
    ("metadata.labels.team=number", ("metadata", "labels", "team"), _to({"team": 5}, "metadata", "labels")),
    ("metadata.annotations=list", ("metadata", "annotations"), _to(["x"], "metadata", "annotations")),
]  # fmt: skip
NAMESPACE = (
    "metadata.namespace=missing",
    ("metadata", "namespace"),
    _drop("metadata", "namespace"),
)


def _metadata(kind: str, base: Settled) -> Iterator[Mutation]:
    namespaced = "namespace" in base.xr["metadata"]
    for case_id, path, change in [*METADATA, *([NAMESPACE] if namespaced else [])]:
        parts = _copy(base)
        change(parts["xr"])
        # Without a readable name, the Fatal names the kind.
        who = _name(base.xr) if _name(parts["xr"]) == _name(base.xr) else kind
        yield Mutation(case_id, "metadata", who, path, **parts)


def _required(base: Settled) -> Iterator[Mutation]:
    """Each field of the first and the last object answered for each requirement."""
    for name, items in sorted(base.required.items()):
        for index in sorted({0, len(items) - 1}) if items else []:
            obj = items[index]
            who = f"{name}[{index}]"
            fields = [
                (path, value)
                for top in ("status", "spec")
                if isinstance(obj.get(top), dict)
                for path, value in [((top,), obj[top]), *_walk(obj[top], (top,))]
            ]
            labels = (obj.get("metadata") or {}).get("labels")
            if labels:
                fields.append((("metadata", "labels"), labels))
                fields += list(_walk(labels, ("metadata", "labels")))
            for path, value in fields:
                for what, bad in wrong_values(value):
                    parts = _copy(base)
                    _put(parts["required"][name][index], path, bad)
                    mutation_id = f"{who}.{show(path)}={what}"
                    yield Mutation(mutation_id, "required", _name(obj), path, **parts)
            parts = _copy(base)
            parts["required"][name][index].pop("metadata")
            yield Mutation(f"{who}.metadata=missing", "required", "", ("metadata",), **parts)


def _observed(base: Settled) -> Iterator[Mutation]:
    """The status of one observed composed resource of each kind, to three levels."""
    seen: set[tuple[str, str]] = set()
    for key, obj in sorted(base.observed.items()):
        what_kind = (str(obj.get("apiVersion")), str(obj.get("kind")))
        if what_kind in seen or not isinstance(obj.get("status"), dict):
            continue
        seen.add(what_kind)
        status = obj["status"]
        paths: list[tuple[Path_, Any]] = [(("status",), status)]
        for path, value in _walk(status, ("status",)):
            if len(path) <= 3 and (path[1] != "conditions" or path[2:3] in ((), (0,))):
                paths.append((path, value))
        if status.get("conditions"):
            paths.append((("status", "conditions", 0, "status"), True))
        for path, value in paths:
            for what, bad in wrong_values(value):
                parts = _copy(base)
                _put(parts["observed"][key], path, bad)
                mutation_id = f"{key}.{show(path)}={what}"
                yield Mutation(mutation_id, "observed", _name(obj), path, **parts)


def _observed_all(base: Settled) -> Iterator[Mutation]:
    """Every observed resource's status fields, name, labels and annotations (spread)."""
    everything = list(_observed_everywhere(base))
    top = [m for m in everything if len(m[2]) <= 1]  # each status, whole: always
    deeper = [m for m in everything if len(m[2]) > 1]
    stride = max(1, -(-len(deeper) // OBSERVED_ALL_LIMIT))
    for key, obj, path, what, bad in [*top, *deeper[::stride]]:
        parts = _copy(base)
        _put(parts["observed"][key], path, bad)
        mutation_id = f"{key}.{show(path)}={what}"
        yield Mutation(mutation_id, "observed-all", _name(obj), path, **parts)


def _observed_everywhere(base: Settled) -> Iterator[tuple[str, Doc, Path_, str, Any]]:
    for key, obj in sorted(base.observed.items()):
        fields: list[tuple[Path_, Any]] = []
        if isinstance(obj.get("status"), dict):
            fields += [(("status",), obj["status"]), *_walk(obj["status"], ("status",))]
        meta: dict[str, Any] = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
        for top in ("name", "labels", "annotations"):
            if top in meta:
                here = ("metadata", top)
                fields += [(here, meta[top]), *_walk(meta[top], here)]
        for path, value in fields:
            wrong = wrong_values(value)
            if isinstance(value, str):
                wrong.append(("huge", HUGE_TEXT))
            for what, bad in wrong:
                yield key, obj, path, what, bad


def _deep(base: Settled, levels: int, *, composite: bool) -> Iterator[Mutation]:
    """``levels`` of nesting in the composite's spec, a related object's and an observed
    resource's status."""
    family = "deep" if composite else "deep-limit"
    if composite:
        yield Mutation(
            f"spec.deep={levels}-levels",
            family,
            _name(base.xr),
            ("spec", "deep"),
            **_copy(base),
            deep=functools.partial(_deep_composite, levels),
        )
    for name, items in sorted(base.required.items()):
        if items:
            yield Mutation(
                f"{name}[0].status.deep={levels}-levels",
                family,
                _name(items[0]),
                ("status", "deep"),
                **_copy(base),
                deep=functools.partial(_deep_required, name, levels),
            )
    for key in sorted(base.observed)[:3]:
        yield Mutation(
            f"{key}.status.deep={levels}-levels",
            family,
            _name(base.observed[key]),
            ("status", "deep"),
            **_copy(base),
            deep=functools.partial(_deep_observed, key, levels),
        )


def mutations(kind: str, family: str) -> Iterator[Mutation]:
    """Every mutation of ``family`` of the kind's settled request."""
    base = settled(kind)
    if family == "spec":
        yield from _spec(kind, base)
    elif family == "metadata":
        yield from _metadata(kind, base)
    elif family == "required":
        yield from _required(base)
    elif family == "observed":
        yield from _observed(base)
    elif family == "observed-all":
        yield from _observed_all(base)
    elif family == "deep":
        yield from _deep(base, DEEP_LEVELS, composite=True)
    elif family == "deep-limit":
        yield from _deep(base, runtime.KUBERNETES_MAX_JSON_DEPTH, composite=False)


def _deep_composite(levels: int, req: fnv1.RunFunctionRequest) -> None:
    spec = req.observed.composite.resource.fields["spec"].struct_value
    _nest(spec.fields["deep"].struct_value, levels)


def _deep_required(name: str, levels: int, req: fnv1.RunFunctionRequest) -> None:
    obj = req.required_resources[name].items[0].resource
    _nest(obj.fields["status"].struct_value.fields["deep"].struct_value, levels)


def _deep_observed(key: str, levels: int, req: fnv1.RunFunctionRequest) -> None:
    obj = req.observed.resources[key].resource
    _nest(obj.fields["status"].struct_value.fields["deep"].struct_value, levels)


# --- the checks -----------------------------------------------------------------------------


def _flat(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def check(mutation: Mutation) -> list[str]:
    """Run one mutation; return what is wrong with the answer (empty: nothing)."""
    _, problems = classify(mutation)
    return problems


def classify(mutation: Mutation) -> tuple[str, list[str]]:
    """Run one mutation: its answer's class (fatal, held, composed) and what is wrong."""
    rsp = runtime.run(mutation.request(), registry.COMPOSERS)
    fatal = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]
    problems: list[str] = []
    if fatal:
        message = _flat(fatal[0])
        if leaked := PYTHON_TEXT.search(message):
            problems.append(f"Fatal shows {leaked.group()!r}: {message}")
        elif mutation.obj_name and mutation.obj_name not in message:
            problems.append(f"Fatal does not name {mutation.obj_name!r}: {message}")
        elif not _names_a_field(message, mutation.path):
            problems.append(f"Fatal names no field of {show(mutation.path)}: {message}")
        return "fatal", problems
    unreadable = mutation.family == "spec" and not _readable(mutation.xr)
    if unreadable and rsp.desired.composite.ready != fnv1.READY_FALSE:
        problems.append("a spec the models reject is not vetoed Ready (ready=False)")
    dropped = sorted(set(mutation.observed) - set(rsp.desired.resources))
    if dropped and not mutation.may_drop:
        problems.append(f"drops {len(dropped)} of {len(mutation.observed)} observed: {dropped}")
    texts = [r.message for r in rsp.results] + [c.message for c in rsp.conditions]
    for text in dict.fromkeys(texts):
        if leaked := PYTHON_TEXT.search(text):
            problems.append(f"message shows {leaked.group()!r}: {_flat(text)}")
    warned = any(r.severity == fnv1.SEVERITY_WARNING for r in rsp.results)
    if warned and any(c.status != fnv1.STATUS_CONDITION_TRUE for c in rsp.conditions):
        return "held", problems
    # Valid (perhaps with a Warning about a related object it reads around, as a
    # deployment does about an unreadable object of the fleet).
    return "composed", problems


def _readable(xr: Doc) -> bool:
    """Whether the kind's generated model reads the composite: its spec as the XRD has it."""
    kind = str(xr.get("kind"))
    model = getattr(importlib.import_module(f"modelplane.models.{kind.lower()}"), kind)
    try:
        model.model_validate(xr)
    except pydantic.ValidationError:
        return False
    return True


def _names_a_field(message: str, path: Path_) -> bool:
    """The message names the field changed: its own key (of a list item, the list's)."""
    keys = [p for p in path if isinstance(p, str)]
    return bool(keys) and keys[-1] in message


FAMILIES = ("spec", "metadata", "required", "observed", "observed-all", "deep", "deep-limit")


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("kind", sorted(SETUPS))
def test_bad_input_is_no_crash_no_loss_and_named(kind: str, family: str) -> None:
    failures = []
    count = 0
    for mutation in mutations(kind, family):
        count += 1
        for problem in check(mutation):
            failures.append(f"{kind} {mutation.id}: {problem}")
    if family in ("spec", "metadata", "deep"):
        assert count, f"{kind}: no {family} mutations"
    assert not failures, f"{len(failures)} of {count} mutations fail:\n" + "\n".join(failures)
