"""Check every Modelplane document a command reads against the XRDs, before it runs.

``render``, ``plan``, ``simulate`` and ``validate`` call :func:`check` first: one
``crank beta validate`` run (:mod:`modelplane.dev.validate`, about two seconds) over
every Modelplane document they were given, whatever its file. A problem reads like
kubectl's::

    examples/x/model-deployment.yaml, document 1: ModelDeployment ml-team/qwen is invalid: spec.replica: Invalid value: "replica": unknown field "spec.replica"

naming the file, the document's position in it, the object, the field path and what
was expected. What a user declares is checked (apiVersion, kind, metadata, spec), not
``status``: the API server drops a status given on create, controllers write it. Unknown fields are errors (the API server would silently drop them: a
``nodeSelecter`` typo would compose a GPU model with no GPU claim), and so is a kind
in a Modelplane API group that no XRD defines.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from modelplane.dev import validate

Doc = dict[str, Any]
# Each document is validated under a stand-in name, so a problem maps back to exactly
# one document even when two files declare the same kind and name (a recipe's variants).
_STAND_IN = "modelplane-check-{}"


class ChecksUnavailableError(RuntimeError):
    """The Crossplane CLI that validates is not built (``make tools``)."""


@dataclass(frozen=True)
class Located:
    """A document and where it was read: ``file, document N`` or a scenario path."""

    where: str
    document: Doc


def located(paths: Iterable[Path], *, recursive: bool = True) -> list[Located]:
    """Return the documents of files and folders with their file and position.

    Args:
        paths: Files, and folders whose ``*.yaml``/``*.yml`` files are read (sorted).
        recursive: Read a folder's sub-folders too.

    Raises:
        ValueError: a file is not YAML.
    """
    found: list[Located] = []
    for path in paths:
        for file in _files(path, recursive=recursive):
            try:
                docs = list(yaml.safe_load_all(file.read_text()))
            except yaml.YAMLError as error:
                msg = f"{file}: not YAML: {error}"
                raise ValueError(msg) from error
            found += [
                Located(f"{file}, document {i}", d)
                for i, d in enumerate(docs, start=1)
                if isinstance(d, dict)
            ]
    return found


def _files(path: Path, *, recursive: bool) -> list[Path]:
    if not path.is_dir():
        return [path]
    pattern = "**/*" if recursive else "*"
    return sorted(p for p in path.glob(pattern) if p.suffix in {".yaml", ".yml"} and p.is_file())


def describe(document: Doc) -> str:
    """Return ``Kind namespace/name`` (``Kind name`` when it has no namespace)."""
    meta = document.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{document.get('kind') or '<no kind>'} {where}{meta.get('name') or '<unnamed>'}"


def check(documents: Sequence[Located]) -> list[str]:
    """Validate the Modelplane documents among ``documents``; return kubectl-style problems.

    Documents of other API groups (Secrets, Gateways, ...) are not ours to check.

    Raises:
        ChecksUnavailableError: ``bin/crank`` is not built.
    """
    ours = [one for one in documents if validate.is_modelplane(one.document)]
    if not ours:
        return []
    if not validate.CRANK.exists():
        msg = f"{validate.CRANK} is missing: run `make tools` (or make setup) to check inputs"
        raise ChecksUnavailableError(msg)
    stand_ins = [_stand_in(one.document, i) for i, one in enumerate(ours)]
    problems = validate.validate(stand_ins)
    by_name = {_STAND_IN.format(i): one for i, one in enumerate(ours)}
    return [_message(p, by_name) for p in problems]


def _stand_in(document: Doc, index: int) -> Doc:
    # Without status: every Modelplane kind has the status subresource, so the API
    # server drops a status given on create; controllers write it. A fleet's observed
    # state (fleet/, scenarios) is read as given.
    copied = {k: copy.deepcopy(v) for k, v in document.items() if k != "status"}
    meta = copied.get("metadata")
    if not isinstance(meta, dict):
        meta = copied["metadata"] = {}
    meta["name"] = _STAND_IN.format(index)
    return copied


def _message(problem: validate.Problem, by_name: dict[str, Located]) -> str:
    one = by_name.get(problem.name)
    if one is None:  # crank named no document (it had no schema for the kind)
        return f"{problem.kind}: {problem.message}"
    text = problem.message.replace(problem.name, str(_name(one.document)))
    return f"{one.where}: {describe(one.document)} is invalid: {text}"


def _name(document: Doc) -> Any:
    meta = document.get("metadata")
    return meta.get("name") if isinstance(meta, dict) else None
