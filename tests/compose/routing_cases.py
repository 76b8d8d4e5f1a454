"""The routing render cases of examples/routing/: load one and render it with the engine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from modelplane.dev import render, schemas

ROUTING = render.ROOT / "examples" / "routing"

Doc = dict[str, Any]


@dataclass(frozen=True)
class Case:
    """One folder of examples/routing/ (see its README)."""

    folder: Path

    def composites(self) -> list[Doc]:
        """Return the composites the case renders, in file order."""
        return [d for d in render.load_documents(self.folder) if render.is_composite(d)]

    def composite(self, kind: str) -> Doc:
        """Return the case's composite of ``kind``."""
        return next(d for d in self.composites() if d["kind"] == kind)

    def required(self) -> list[Doc]:
        """Return what the case offers as required resources: its documents and fleet/."""
        fleet = [
            doc
            for path in sorted((self.folder / "fleet").glob("*.yaml"))
            for doc in render.load_documents(path)
        ]
        return render.overlay(render.load_documents(self.folder), fleet)

    def observed(self, xr: Doc) -> list[Doc]:
        """Return the composed resources of ``xr`` that exist (none if the file is absent)."""
        path = self.folder / "observed" / f"{xr['kind'].lower()}-{xr['metadata']['name']}.yaml"
        return render.load_documents(path) if path.exists() else []


def case(name: str) -> Case:
    """Return the case in ``examples/routing/<name>``."""
    return Case(ROUTING / name)


@dataclass(frozen=True)
class Rendered:
    """What the render engine returned for one composite."""

    composite: Doc
    composed: list[Doc]
    results: list[Doc]

    def condition(self, typ: str) -> Doc:
        """Return the composite's condition ``typ``."""
        conditions = self.composite.get("status", {}).get("conditions", [])
        return next(c for c in conditions if c["type"] == typ)

    def one(self, kind: str) -> Doc:
        """Return the only composed resource of ``kind``."""
        (found,) = [d for d in self.composed if d["kind"] == kind]
        return found


def render_case(
    functions: render.Functions, name: str, kind: str, *, observed: bool = True
) -> Rendered:
    """Render the ``kind`` composite of case ``name``, with or without its observed state."""
    chosen = case(name)
    xr = chosen.composite(kind)
    out = render.render(
        xr,
        functions,
        required=chosen.required(),
        observed=chosen.observed(xr) if observed else (),
    )
    results = [d for d in out[1:] if d.get("kind") == "Event"]
    composed = [d for d in out[1:] if d.get("kind") != "Event"]
    return Rendered(out[0], composed, results)


def check_schemas(docs: list[Doc]) -> None:
    """Validate ``docs`` against their real schemas (tools/schemas/); skip what is not fetched.

    A failure always fails the test. A kind whose schema is not fetched skips it, naming
    the kind: tools/schemas/routing.txt lists the schemas these functions need.
    """
    if not schemas.available():
        pytest.skip("the schemas are not fetched: run tools/schemas/fetch.sh")
    report = schemas.validate(docs)
    assert report.failures == (), report.output
    if report.missing:
        pytest.skip(f"no schema fetched for {report.missing}; see tools/schemas/routing.txt")
    assert report.validated == len(docs)
