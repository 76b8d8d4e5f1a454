"""Validate composed manifests against the real schemas of their kinds, offline.

``tools/schemas/fetch.sh`` puts the pinned schemas in ``build/schemas/``: Kubernetes'
OpenAPI v3 documents under ``openapi/`` and the CRDs of LeaderWorkerSet, Gateway API,
the Inference Extension and provider-kubernetes under ``crds/``. :func:`validate` hands
them, with the Kubernetes kinds turned into equivalent CRDs, to ``crossplane beta
validate``, which checks every manifest the way an API server checks a custom resource:
types, enums, required fields, unknown fields and CEL rules.

An API server's hand-written checks of built-in kinds (name formats, port ranges,
quantity syntax) are not in the OpenAPI, so they are not checked here.

``modelplane.dev.validate`` runs crank the same way for our XRDs (both through
:mod:`modelplane.dev.offline_crank`); this module adds the third-party and built-in
kinds, whose CRDs it builds (the core group is ``""``, which that module's kind index
does not expect).
"""

from __future__ import annotations

import copy
import json
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from modelplane.dev import offline_crank, render

SCHEMAS = render.ROOT / "build" / "schemas"
PINS = render.ROOT / "tools" / "schemas"

Doc = dict[str, Any]
_REF = "#/components/schemas/"
_INT_OR_STRING = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
    "io.k8s.apimachinery.pkg.api.resource.Quantity",
}
_DROPPED = {
    "default",
    "x-kubernetes-group-version-kind",
    "x-kubernetes-patch-merge-key",
    "x-kubernetes-patch-strategy",
    "x-kubernetes-unions",
}
_CLUSTER_SCOPED = {"Namespace"}
_RESULT = re.compile(r"^\[(?P<mark>[x!✓])\] (?P<text>.*)$")
_TOTAL = re.compile(
    r"^Total (?P<total>\d+) resources: \d+ missing schemas, (?P<passed>\d+) success cases, "
)


class SchemasMissingError(RuntimeError):
    """The schemas have not been fetched (or are stale): run tools/schemas/fetch.sh."""


ValidationRunError = offline_crank.ValidationRunError
"""crank gave no verdict on every manifest: it failed, or validated nothing."""


@dataclass(frozen=True)
class Report:
    """What ``crossplane beta validate`` said.

    Attributes:
        failures: One line per schema, unknown-field or CEL error.
        missing: One line per manifest whose kind has no schema.
        validated: How many manifests passed, by crank's ``Total`` line (it prints a
            success line per schema a kind has, so those lines can outnumber manifests).
        output: Everything crank printed, for a failure message.
        total: How many manifests crank reported on (its ``Total`` line; 0 without one).
        returncode: crank's exit code.
    """

    failures: tuple[str, ...]
    missing: tuple[str, ...]
    validated: int
    output: str
    total: int = 0
    returncode: int = 0

    @property
    def ok(self) -> bool:
        """Tell whether crank passed every manifest it got (at least one), each with a schema."""
        return (
            not self.failures
            and not self.missing
            and self.returncode == 0
            and 0 < self.validated == self.total
        )


def available(root: Path = SCHEMAS) -> bool:
    """Tell whether the pinned schemas are fetched and current."""
    stamp = root / "modules.txt"
    pinned = "".join(p.read_text() for p in sorted(PINS.glob("*.txt")))
    return stamp.exists() and stamp.read_text() == pinned


def core_crds(kinds: Iterable[tuple[str, str]] | None = None, root: Path = SCHEMAS) -> list[Doc]:
    """Return a CRD for each Kubernetes kind in the fetched OpenAPI documents.

    Args:
        kinds: The ``(apiVersion, kind)`` pairs wanted; None for every kind.
        root: Where the schemas were fetched.
    """
    wanted = None if kinds is None else set(kinds)
    crds: list[Doc] = []
    for path in sorted((root / "openapi").glob("*.json")):
        schemas = json.loads(path.read_text())["components"]["schemas"]
        for name, schema in sorted(schemas.items()):
            for gvk in schema.get("x-kubernetes-group-version-kind", []):
                group, version, kind = gvk["group"], gvk["version"], gvk["kind"]
                api_version = f"{group}/{version}" if group else version
                if not name.endswith(f".{kind}") or kind.endswith("List"):
                    continue
                if wanted is None or (api_version, kind) in wanted:
                    crds.append(crd(group, version, kind, inline(name, schemas)))
    return crds


def crd(group: str, version: str, kind: str, schema: Mapping[str, Any]) -> Doc:
    """Return a CustomResourceDefinition that validates ``kind`` with ``schema``."""
    plural = kind.lower() + "s"
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}" if group else plural},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "scope": "Cluster" if kind in _CLUSTER_SCOPED else "Namespaced",
            "versions": [
                {
                    "name": version,
                    "schema": {"openAPIV3Schema": dict(schema)},
                    "served": True,
                    "storage": True,
                }
            ],
        },
    }


def inline(name: str, schemas: Mapping[str, Any]) -> Doc:
    """Return schema ``name`` with every reference inlined, as a CRD's structural schema.

    References become copies of what they name, int-or-string types become
    ``x-kubernetes-int-or-string``, and what a CRD schema may not hold (defaults, patch
    strategies, unions) is dropped.
    """
    return _inline(schemas[name], schemas, (name,))


def _inline(schema: Mapping[str, Any], schemas: Mapping[str, Any], seen: tuple[str, ...]) -> Doc:
    ref = _target(schema)
    if ref is not None:
        if ref in _INT_OR_STRING:
            resolved: Doc = {"x-kubernetes-int-or-string": True}
        elif ref in seen:  # a recursive type: accept whatever is below it
            resolved = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        else:
            resolved = _inline(schemas[ref], schemas, (*seen, ref))
        if "description" in schema:
            resolved["description"] = schema["description"]
        return resolved
    out: Doc = {}
    for key, value in schema.items():
        if key in _DROPPED:
            continue
        if key == "properties":
            out[key] = {k: _inline(v, schemas, seen) for k, v in value.items()}
        elif key in {"items", "additionalProperties"} and isinstance(value, Mapping):
            out[key] = _inline(value, schemas, seen)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _target(schema: Mapping[str, Any]) -> str | None:
    ref = schema.get("$ref")
    if ref is None and len(schema.get("allOf") or []) == 1:
        ref = schema["allOf"][0].get("$ref")
    return ref.removeprefix(_REF) if isinstance(ref, str) else None


def unwrap(objects: Iterable[Mapping[str, Any]]) -> list[Doc]:
    """Return each provider-kubernetes Object and the manifest it wraps."""
    found: list[Doc] = []
    for obj in objects:
        found.append(dict(obj))
        if obj.get("kind") == "Object":
            found.append(dict(obj["spec"]["forProvider"]["manifest"]))
    return found


def validate(docs: Sequence[Mapping[str, Any]], root: Path = SCHEMAS) -> Report:
    """Validate ``docs`` against the fetched schemas with ``crossplane beta validate``.

    Raises:
        SchemasMissingError: The schemas are not fetched, or not the pinned ones.
        render.RenderError: crank is missing.
        ValueError: ``docs`` is empty: validating nothing is not a pass.
        ValidationRunError: crank exited non-zero without a verdict on any manifest, or
            did not report on every manifest it was given.
    """
    if not docs:
        msg = "nothing to validate: no manifests given"
        raise ValueError(msg)
    if not available(root):
        msg = f"{root} is missing or stale: run tools/schemas/fetch.sh"
        raise SchemasMissingError(msg)
    if not render.CRANK.exists():
        msg = f"{render.CRANK} is missing: run `make tools`"
        raise render.RenderError(msg)
    with tempfile.TemporaryDirectory(prefix="modelplane-validate-") as tmp:
        work = Path(tmp)
        extensions = work / "extensions"
        extensions.mkdir()
        for path in sorted((root / "crds").glob("*.yaml")):
            (extensions / path.name).write_text(path.read_text())
        kinds = {(str(d.get("apiVersion")), str(d.get("kind"))) for d in docs}
        _dump(extensions / "kubernetes.yaml", core_crds(kinds, root))
        resources = _dump(work / "resources.yaml", docs)
        done = offline_crank.run(render.CRANK, [extensions], resources, work)
    report = _report(done.stdout + done.stderr, done.returncode)
    offline_crank.require_verdicts(
        done,
        judged=bool(report.failures or report.missing),
        total=report.total,
        given=len(docs),
        noun="manifests",
    )
    return report


def _dump(path: Path, docs: Iterable[Mapping[str, Any]]) -> Path:
    # JSON is YAML, and far quicker to write than PyYAML's pure-Python emitter.
    path.write_text("".join(f"---\n{json.dumps(d, sort_keys=True)}\n" for d in docs))
    return path


def _report(output: str, returncode: int = 0) -> Report:
    failures: list[str] = []
    missing: list[str] = []
    validated = 0
    total = 0
    for line in output.splitlines():
        summary = _TOTAL.match(line.strip())
        if summary is not None:
            total, validated = int(summary["total"]), int(summary["passed"])
            continue
        match = _RESULT.match(line.strip())
        if match is None:
            continue
        mark, text = match["mark"], match["text"]
        if mark == "✓":
            continue  # counted by the Total line
        if "could not find CRD/XRD" in text or mark == "!":
            missing.append(text)
        else:
            failures.append(text)
    return Report(tuple(failures), tuple(missing), validated, output, total, returncode)
