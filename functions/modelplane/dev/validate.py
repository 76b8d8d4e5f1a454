"""Validate manifests against our XRDs offline, with the real Crossplane CLI.

``python -m modelplane.dev.validate FILE_OR_DIR...`` prints every problem and exits 1
when there is one (2 when a file cannot be read). It checks the documents of our API
groups, and of other kinds an ``--extension`` defines; it skips the rest.
:func:`validate` does the same for documents in memory.

Both run ``bin/crank beta validate`` (``make tools``) once per call, whatever the number
of documents. For each document whose apiVersion and kind an extension defines, crank
derives the CRD from the XRD exactly as Crossplane does (``spec.crossplane`` and the
status conditions included) and then, like the API server on create:

- applies the schema's defaults (before anything is checked, so rules see them);
- checks the OpenAPI schema: types, enums, required fields, bounds, patterns;
- reports unknown fields, which the API server would silently prune, as errors;
- evaluates the CEL ``x-kubernetes-validations`` rules, with their messages.

It does not check what only the API server does: ``x-kubernetes-list-type`` uniqueness
(our XRDs repeat those as CEL rules), metadata (names, labels), or the CEL cost
estimate of the XRD itself. A document no extension defines is reported as a problem
rather than sent to crank.

It runs fully offline, as :mod:`modelplane.dev.offline_crank` runs crank for both
schema checks: crank always wants the Crossplane package's own schemas, so it gets a
fresh cache directory in which that package is already "cached" (empty), and proxies
that lead nowhere in case anything still tries to fetch.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from modelplane.dev import offline_crank

ROOT = Path(__file__).resolve().parents[3]
APIS = ROOT / "apis"
CRANK = ROOT / "bin" / "crank"

_DEFINITIONS = frozenset({"CompositeResourceDefinition", "CustomResourceDefinition"})
# How crank names the document a line is about: ``<group>/<version>, Kind=<kind>, <name>``.
_DOCUMENT = r"(?P<group_version>\S*), Kind=(?P<kind>[^,]*), (?P<name>\S*)"
_ERROR_LINE = re.compile(rf"^\[x\] (?:schema|CEL) validation error {_DOCUMENT} : (?P<message>.*)$")
_DEFAULTS_LINE = re.compile(rf"^\[!\] failed to apply defaults for {_DOCUMENT}: (?P<message>.*)$")
_NO_SCHEMA_LINE = re.compile(
    r"^\[!\] could not find CRD/XRD for: (?P<group_version>\S*), Kind=(?P<kind>\S*)$"
)
_TOTAL_LINE = re.compile(r"^Total (?P<total>\d+) resources: ")


@dataclass(frozen=True, order=True)
class Problem:
    """One reason a document would be rejected.

    Attributes:
        kind: The document's kind.
        name: Its ``metadata.name`` (empty when it has none).
        message: What is wrong, starting with the field path.
    """

    kind: str
    name: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.name or '<unnamed>'}: {self.message}"


def xrd_paths() -> list[Path]:
    """Return every XRD of the project, ``apis/*/definition.yaml``, sorted."""
    return sorted(APIS.glob("*/definition.yaml"))


def validate(
    documents: Sequence[Mapping[str, Any]], *, extensions: Sequence[Path] = ()
) -> list[Problem]:
    """Validate documents as the API server would, with one crank run.

    Args:
        documents: Manifests, e.g. from ``yaml.safe_load_all``.
        extensions: XRD and CRD files that define the documents' kinds. Empty means
            :func:`xrd_paths`; to add CRDs, pass ``[*xrd_paths(), *more]``.

    Returns:
        Every problem found, sorted; empty when all documents are valid.

    Raises:
        ValueError: ``documents`` is empty: validating nothing is not a pass.
        FileNotFoundError: ``bin/crank`` is missing (run ``make tools``).
        offline_crank.ValidationRunError: crank failed without reporting problems (e.g.
            on a bad extension), or did not report on every document it was given.
    """
    if not documents:
        msg = "nothing to validate: no documents given"
        raise ValueError(msg)
    paths = list(extensions) or xrd_paths()
    known = _defined_kinds(paths)
    problems: list[Problem] = []
    checkable: list[dict[str, Any]] = []
    for document in documents:
        missing = _unknown(document, known)
        if missing is None:
            checkable.append(_plain(document))
        else:
            problems.append(missing)
    if checkable:
        problems.extend(_crank(checkable, paths))
    return sorted(set(problems))


def _defined_kinds(paths: Iterable[Path]) -> set[tuple[str, str]]:
    """Return the (apiVersion, kind) pairs the XRDs and CRDs in ``paths`` define."""
    defined = set()
    for path in paths:
        for definition in yaml.safe_load_all(path.read_text()):
            if not isinstance(definition, dict) or definition.get("kind") not in _DEFINITIONS:
                continue
            spec = definition.get("spec", {})
            for version in spec.get("versions", []):
                defined.add((f"{spec['group']}/{version['name']}", spec["names"]["kind"]))
    return defined


def _unknown(document: Mapping[str, Any], known: set[tuple[str, str]]) -> Problem | None:
    """Return a problem when no extension defines the document's kind, else None."""
    api_version, kind = document.get("apiVersion"), document.get("kind")
    metadata = document.get("metadata")
    name = str(metadata.get("name", "")) if isinstance(metadata, Mapping) else ""
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return Problem(str(kind or ""), name, "a manifest needs apiVersion and kind")
    if (api_version, kind) not in known:
        return Problem(kind, name, f"no XRD or CRD given defines {api_version} {kind}")
    return None


def _plain(value: Any) -> Any:
    """Return ``value`` with every mapping and sequence as a dict or list, for YAML."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _crank(documents: list[dict[str, Any]], extensions: list[Path]) -> list[Problem]:
    """Run crank once over the documents and return the problems it reports."""
    if not CRANK.exists():
        msg = f"{CRANK} is missing: run `make tools` to build the Crossplane CLI"
        raise FileNotFoundError(msg)
    with tempfile.TemporaryDirectory(prefix="modelplane-validate-") as tmp:
        resources = Path(tmp) / "resources.yaml"
        resources.write_text(yaml.safe_dump_all(documents, sort_keys=False))
        done = offline_crank.run(CRANK, extensions, resources, Path(tmp))
    problems = _parse(done.stdout)
    offline_crank.require_verdicts(
        done, judged=bool(problems), total=_total(done.stdout), given=len(documents)
    )
    return problems


def _total(output: str) -> int:
    """Return how many documents crank's ``Total`` line says it read (0 without one)."""
    for line in output.splitlines():
        found = _TOTAL_LINE.match(line)
        if found:
            return int(found["total"])
    return 0


def _parse(output: str) -> list[Problem]:
    """Return the problems in crank's report, one per error line."""
    problems = []
    for line in output.splitlines():
        found = _ERROR_LINE.match(line) or _DEFAULTS_LINE.match(line)
        if found:
            problems.append(Problem(found["kind"], found["name"], found["message"].strip()))
        elif unknown := _NO_SCHEMA_LINE.match(line):
            # crank names no document here, only its kind: it was not validated.
            message = f"no schema for {unknown['group_version']} {unknown['kind']}"
            problems.append(Problem(unknown["kind"], "", message))
    return problems


def load(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Return the YAML documents of files and of the ``*.yaml``/``*.yml`` under directories.

    Args:
        paths: Files and directories, read in order (a directory's files sorted).

    Returns:
        Every non-empty document.

    Raises:
        ValueError: A file is not YAML, or holds a document that is not a mapping.
    """
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix in {".yaml", ".yml"}))
        else:
            files.append(path)
    documents: list[dict[str, Any]] = []
    for file in files:
        try:
            found = [d for d in yaml.safe_load_all(file.read_text()) if d is not None]
        except yaml.YAMLError as error:
            msg = f"{file}: not YAML: {error}"
            raise ValueError(msg) from error
        if not all(isinstance(d, dict) for d in found):
            msg = f"{file}: every document must be a mapping (a Kubernetes manifest)"
            raise ValueError(msg)
        documents.extend(found)
    return documents


def is_modelplane(document: Mapping[str, Any]) -> bool:
    """Tell whether a document's apiVersion is in a Modelplane API group."""
    group = str(document.get("apiVersion", "")).rpartition("/")[0]
    return group == "modelplane.ai" or group.endswith(".modelplane.ai")


def main(argv: Sequence[str] | None = None) -> int:
    """Validate files and directories of manifests; print the problems."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path, help="YAML files or directories")
    parser.add_argument(
        "--extension",
        action="append",
        type=Path,
        default=[],
        help="an extra XRD or CRD file, in addition to apis/ (repeatable)",
    )
    args = parser.parse_args(argv)
    extensions = [*xrd_paths(), *args.extension]
    known = _defined_kinds(extensions)
    try:
        documents = load(args.paths)
    except (OSError, ValueError) as error:
        print(error, file=sys.stderr)
        return 2
    # Only our kinds, and others an --extension defines: the rest cannot be checked here.
    checked = [d for d in documents if is_modelplane(d) or _unknown(d, known) is None]
    if not checked:
        print(
            f"nothing to validate: none of the {len(documents)} documents is of a kind "
            "apis/ or an --extension defines",
            file=sys.stderr,
        )
        return 1
    problems = validate(checked, extensions=extensions)
    for problem in problems:
        print(problem)
    skipped = len(documents) - len(checked)
    print(
        f"{len(checked)} documents checked, {len(problems)} problems"
        + (f", {skipped} of other kinds skipped" if skipped else ""),
        file=sys.stderr,
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
