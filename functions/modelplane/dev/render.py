"""Render Modelplane composites offline with Crossplane's own reconciler.

``python -m modelplane.dev.render PATH...`` (``make render EXAMPLE=PATH``) starts one
function server (``modelplane-function all --insecure``) on a free local port, renders
every Modelplane composite found in PATH with its kind's Composition and XRD through
``crossplane internal render`` (Crossplane v2.4.0's composite reconciler against an
in-memory API server, :mod:`modelplane.dev.engine`), prints the rendered YAML, and stops
the server.

What a PATH holds:

- a file: every document in it;
- a folder: the ``*.yaml`` files directly in it (sub-folders are other variants, such
  as the docs' per-cloud tabs, and are not read), plus ``fleet/`` and ``observed/``
  below it.

Every Modelplane composite among those documents is rendered. Every document, and
everything under ``fleet/``, is also offered to the functions as a required resource,
so a ModelService finds its ModelEndpoints and a ModelDeployment its InferenceClusters.
A ``fleet/`` document replaces an input document of the same kind and name: it is the
observed state (with ``status``) of what the input declares. ``observed/`` holds the
composites' observed composed resources (annotated with their
``crossplane.io/composition-resource-name``), as on a later reconcile: a file named
``<kind>-<name>.yaml`` (``modelservice-qwen3-8b.yaml``) belongs to that composite, any
other file to every composite of PATH in whose namespace its documents are. They are
handed to the reconciler as composed by the composite (its controller reference is
added where missing), so what the pipeline no longer desires is garbage collected.

Before anything renders, every Modelplane document PATH holds (``fleet/`` and
``observed/`` included) is validated against the XRDs (:mod:`modelplane.dev.checks`):
an unknown field, a wrong type or a kind no XRD defines stops the render with a
kubectl-style message and exit code 1.

Each composite prints as YAML: the composite as the reconciler left it (status and
conditions, ``Synced`` and ``Ready`` among them), then what it composed, then a
``kind: Event`` document per event the reconciler emitted (function results among them,
as ``Pipeline step "<step>": <message>``); a ``# deleted:`` comment names each observed
resource it garbage collected.

``--tree`` prints a tree instead, in the style of ``crossplane beta trace``
(:mod:`modelplane.dev.tree`): each composite of PATH with what it composes nested
beneath it, readiness, and every condition that is not True. ``--yaml-file FILE`` also
writes the YAML to FILE (``make demo`` shows the tree and keeps the YAML there).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, Unpack

import yaml

from modelplane import kit, registry
from modelplane.dev import checks, engine, tree
from modelplane.dev.function_server import Functions, RenderError, free_port, serve

# The function server's names, used through this module by the CLI and the tests.
__all__ = ["Functions", "RenderError", "free_port", "serve"]

ROOT = Path(__file__).resolve().parents[3]
CRANK = ROOT / "bin" / "crank"  # only for `crank beta validate` (modelplane.dev.schemas)
GROUPS = ("modelplane.ai", "infrastructure.modelplane.ai")
FUNCTION_PREFIX = "modelplane-function-"

Doc = dict[str, Any]


def function_name(kind: str) -> str:
    """Return the Function that composes ``kind``, as the Compositions name it."""
    return FUNCTION_PREFIX + kind.lower()


def is_composite(doc: Mapping[str, Any]) -> bool:
    """Tell whether a document is one of our composite resources."""
    group = str(doc.get("apiVersion", "")).split("/")[0]
    return group in GROUPS


def load_documents(path: Path) -> list[Doc]:
    """Load every YAML document of a file, or of the ``*.yaml`` files directly in a folder."""
    files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    docs: list[Doc] = []
    for file in files:
        docs.extend(d for d in yaml.safe_load_all(file.read_text()) if isinstance(d, dict))
    return docs


@functools.cache
def _api_folders() -> dict[str, Path]:
    folders: dict[str, Path] = {}
    for definition in sorted((ROOT / "apis").glob("*/definition.yaml")):
        xrd = yaml.safe_load(definition.read_text())
        folders[xrd["spec"]["names"]["kind"]] = definition.parent
    return folders


def _api_folder(kind: str) -> Path:
    try:
        return _api_folders()[kind]
    except KeyError:
        msg = f"no XRD under apis/ defines kind {kind}"
        raise RenderError(msg) from None


def composition_for(kind: str) -> Path:
    """Return the Composition file for ``kind``.

    Raises:
        RenderError: no XRD under apis/ defines that kind.
    """
    return _api_folder(kind) / "composition.yaml"


def definition_for(kind: str) -> Path:
    """Return the XRD file for ``kind``.

    Raises:
        RenderError: no XRD under apis/ defines that kind.
    """
    return _api_folder(kind) / "definition.yaml"


def overlay(inputs: Iterable[Doc], observed: Iterable[Doc]) -> list[Doc]:
    """Return ``inputs`` with each document replaced by its observed twin, plus the rest."""
    seen = {engine.store_key(d): d for d in observed}
    merged = [seen.pop(engine.store_key(d), d) for d in inputs]
    return merged + list(seen.values())


class Options(TypedDict, total=False):
    """What a render takes besides the composite and the functions.

    Attributes:
        required: Resources the pipeline's requirements are answered from.
        observed: The composite's composed resources, as on a later reconcile (each
            without a controller reference gets one to the composite, as Crossplane sets
            it on what it composes).
        timeout: Seconds the engine may spend (``engine.DEFAULT_TIMEOUT_SECONDS``).
    """

    required: Sequence[Mapping[str, Any]]
    observed: Sequence[Mapping[str, Any]]
    timeout: float


def render_output(
    xr: Mapping[str, Any],
    functions: Functions,
    **options: Unpack[Options],
) -> engine.RenderOutput:
    """Reconcile one composite once with its kind's Composition and XRD (:class:`Options`).

    Raises:
        RenderError: the engine failed, or a pipeline step returned a Fatal result; the
            message carries the engine's stderr.
    """
    kind = str(xr.get("kind"))
    composition = yaml.safe_load(composition_for(kind).read_text())
    xrd = yaml.safe_load(definition_for(kind).read_text())
    try:
        out = engine.render_composite(
            xr,
            composition,
            functions.for_composition(composition),
            observed=[engine.controlled_by(xr, d) for d in options.get("observed", ())],
            required=options.get("required", ()),
            xrd=xrd,
            timeout=options.get("timeout", engine.DEFAULT_TIMEOUT_SECONDS),
        )
    except engine.EngineError as err:
        raise RenderError(str(err)) from err
    if out.fatal:
        msg = f"rendering {describe(xr)}: {out.error}"
        raise RenderError(msg)
    return out


def event_document(event: engine.Event) -> Doc:
    """Return an event as a YAML document (the fields of a core/v1 Event that it has)."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "type": event.type,
        "reason": event.reason,
        "message": event.message,
    }


_FIRST = ("apiVersion", "kind", "metadata", "spec", "status")


def tidy(doc: Mapping[str, Any]) -> Doc:
    """Return ``doc`` with a stable key order: apiVersion, kind, metadata, spec, status first.

    The engine's protobuf Structs carry no key order; everything below the top level is
    sorted.
    """
    first = [k for k in _FIRST if k in doc]
    rest = sorted(k for k in doc if k not in _FIRST)
    return {k: _sorted(doc[k]) for k in [*first, *rest]}


def _sorted(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def _composed_order(doc: Mapping[str, Any]) -> tuple[str, str, str, str]:
    meta = doc.get("metadata") or {}
    name = (meta.get("annotations") or {}).get("crossplane.io/composition-resource-name", "")
    return (str(name), str(doc.get("kind")), str(meta.get("namespace", "")), str(meta.get("name")))


def is_result(event: engine.Event) -> bool:
    """Tell whether an event reports a function's result (``Pipeline step "<step>": ...``)."""
    return event.message.startswith('Pipeline step "')


def documents(out: engine.RenderOutput, *, all_events: bool = False) -> list[Doc]:
    """Return a render as documents: the composite, what it composed, then events.

    Composed resources are ordered by their composition resource name (the engine
    applies them in no fixed order); events stay in the order they were emitted.

    Args:
        out: The engine's output.
        all_events: Every event the reconciler emitted (composition selected, a composed
            resource not ready yet, ...), not only the functions' results.
    """
    composed = sorted(out.composed, key=_composed_order)
    events = [event_document(e) for e in out.events if all_events or is_result(e)]
    return [tidy(d) for d in (out.composite, *composed, *events)]


def render(
    xr: Mapping[str, Any],
    functions: Functions,
    **options: Unpack[Options],
) -> list[Doc]:
    """Render one composite and return its :func:`documents`.

    They are the composite, what it composed, then a ``kind: Event`` document per result
    the functions returned (``Pipeline step "<step>": <message>``).

    Raises:
        RenderError: see :func:`render_output`.
    """
    return documents(render_output(xr, functions, **options))


@dataclass
class Rendered:
    """One composite's render, or why it failed."""

    xr: Doc
    output: engine.RenderOutput | None
    error: RenderError | None = None
    composed_by: str | None = None  # "Kind namespace/name" of the composite that composed it
    docs: list[Doc] = field(init=False)

    def __post_init__(self) -> None:
        self.docs = documents(self.output, all_events=True) if self.output is not None else []


def describe(doc: Mapping[str, Any]) -> str:
    """Return ``Kind namespace/name`` (or ``Kind name`` when cluster-scoped)."""
    return f"{doc.get('kind')} {kit.ref(doc)}"


def observed_for(xr: Mapping[str, Any], files: Mapping[str, list[Doc]]) -> list[Doc]:
    """Return the ``observed/`` documents that belong to ``xr`` (see the module docstring).

    Args:
        xr: A composite of PATH.
        files: Each ``observed/`` file's stem (``modelservice-qwen3-8b``) and documents.
    """
    meta = xr.get("metadata") or {}
    own = f"{str(xr.get('kind', '')).lower()}-{meta.get('name', '')}"
    if own in files:
        return list(files[own])
    namespace = meta.get("namespace")
    return [
        d
        for stem, docs in sorted(files.items())
        if not _names_a_composite(stem)
        for d in docs
        if not namespace or (d.get("metadata") or {}).get("namespace") == namespace
    ]


def _names_a_composite(stem: str) -> bool:
    return any(stem.startswith(f"{kind.lower()}-") for kind in registry.COMPOSERS)


def render_path(path: Path, *, depth: int = 0) -> list[Rendered]:
    """Render every composite found at ``path`` (see the module docstring).

    Args:
        path: An example file or folder.
        depth: Also render the Modelplane composites that rendered composites compose
            (a ModelDeployment's ModelReplicas, say), this many levels down.

    Returns:
        One render per composite, inputs first in file order, then what they composed:
        one composite that fails to render doesn't hide the others.

    Raises:
        RenderError: the function server could not start.
    """
    inputs = load_documents(path)
    base = path if path.is_dir() else path.parent
    fleet = _load_tree(base / "fleet")
    observed = {f.stem: load_documents(f) for f in sorted((base / "observed").rglob("*.yaml"))}
    required = overlay(inputs, fleet)
    queue: list[tuple[Doc, str | None]] = [(xr, None) for xr in inputs if _renderable(xr)]
    kinds = None if depth else {str(xr["kind"]) for xr, _ in queue}
    results: list[Rendered] = []
    if not queue:
        return results
    with serve(kinds) as functions:
        for level in range(depth + 1):
            composed: list[tuple[Doc, str | None]] = []
            for xr, parent in queue:
                try:
                    out = render_output(
                        xr,
                        functions,
                        required=required,
                        observed=observed_for(xr, observed) if level == 0 else (),
                    )
                except RenderError as err:
                    results.append(Rendered(xr, None, err, parent))
                    continue
                results.append(Rendered(xr, out, None, parent))
                composed += [(d, describe(xr)) for d in out.composed if _renderable(d)]
            queue = composed
    return results


def _renderable(doc: Mapping[str, Any]) -> bool:
    return is_composite(doc) and doc.get("kind") in registry.COMPOSERS


def _load_tree(folder: Path) -> list[Doc]:
    return [d for f in sorted(folder.rglob("*.yaml")) for d in load_documents(f)]


def _skipped(path: Path) -> list[str]:
    docs = load_documents(path)
    kinds = {str(d.get("kind")) for d in docs if is_composite(d)}
    return sorted(kinds - set(registry.COMPOSERS))


def inputs_of(path: Path) -> list[checks.Located]:
    """Return every document :func:`render_path` reads for ``path``, with its file."""
    base = path if path.is_dir() else path.parent
    found = checks.located([path], recursive=False)
    for below in ("fleet", "observed"):
        if (base / below).is_dir():
            found += checks.located([base / below])
    return found


def invalid_inputs(path: Path) -> list[str]:
    """Return the problems of ``path``'s Modelplane documents (see :mod:`modelplane.dev.checks`).

    A kind in our API groups that no XRD defines is one: rendering it would render nothing.
    """
    try:
        return checks.check(inputs_of(path))
    except (ValueError, checks.ChecksUnavailableError) as err:
        return [str(err)]


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="+", type=Path, help="example files or folders")
    parser.add_argument(
        "--depth",
        type=int,
        default=1,
        help="also render the Modelplane composites the rendered ones compose, this many "
        "levels down (default 1: a ModelDeployment's ModelReplicas; 0: only PATH's)",
    )
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument(
        "--yaml",
        dest="format",
        action="store_const",
        const="yaml",
        default="yaml",
        help="print every rendered document as YAML (the default)",
    )
    shown.add_argument(
        "--tree",
        dest="format",
        action="store_const",
        const="tree",
        help="print a tree like `crossplane beta trace`: each composite, what it composes, "
        "readiness, and every condition that is not True",
    )
    parser.add_argument(
        "--yaml-file",
        type=Path,
        metavar="FILE",
        help="also write the YAML to FILE (with --tree: the tree on stdout, the YAML there)",
    )
    return parser.parse_args(argv)


def yaml_text(path: Path, rendered: Iterable[Rendered]) -> str:
    """Return the YAML of ``path``'s renders: per composite a ``# ----`` header, then its docs.

    Every document starts with ``---``, the first of each composite too: without it the
    next composite's first document would continue the previous composite's last one
    (its keys merged into the same mapping), which a strict loader rejects.
    """
    out: list[str] = []
    for one in rendered:
        if one.output is None:
            continue
        origin = f"composed by {one.composed_by}" if one.composed_by else str(path)
        out.append(f"# ---- {describe(one.xr)} ({origin})\n")
        out += [f"# deleted: {describe(gone)}\n" for gone in one.output.deleted]
        out.append(yaml.safe_dump_all(one.docs, sort_keys=False, explicit_start=True))
    return "".join(out)


def tree_text(rendered: Sequence[Rendered]) -> str:
    """Return the renders as a :mod:`modelplane.dev.tree`, then what each garbage collected."""
    done = [one for one in rendered if one.output is not None]
    deleted = [
        f"deleted by {describe(one.xr)}: {describe(gone)}\n"
        for one in done
        for gone in (one.output.deleted if one.output else [])
    ]
    return tree.format_tree([one.docs for one in done]) + "".join(deleted)


def _write_yaml(file: Path, text: str) -> bool:
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text)
    except OSError as err:
        print(f"render: cannot write --yaml-file {file}: {err}", file=sys.stderr)
        return False
    return True


def _tree_footer(yaml_file: Path | None) -> str:
    where = f"Every rendered document, as YAML: {yaml_file}\n" if yaml_file else ""
    return f"\n{tree.LEGEND}{where}"


def main(argv: Sequence[str] | None = None) -> int:
    """Render each PATH and print the YAML the reconciler produced, or its tree."""
    args = _arguments(argv)
    failed = False
    yaml_out: list[str] = []
    for path in args.paths:
        if not path.exists():
            print(f"render: {path} does not exist", file=sys.stderr)
            return 2
        problems = invalid_inputs(path)
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print(f"render: {path}: invalid input, nothing rendered", file=sys.stderr)
            return 1
        for kind in _skipped(path):
            print(f"# {path}: no function composes {kind} yet; not rendered", file=sys.stderr)
        try:
            rendered = render_path(path, depth=args.depth)
        except RenderError as err:  # the functions could not start
            print(f"render: {err}", file=sys.stderr)
            return 1
        for one in rendered:
            if one.error is not None or one.output is None:
                print(f"render: {one.error}", file=sys.stderr)
                failed = True
        yaml_out.append(yaml_text(path, rendered))
        print(yaml_out[-1] if args.format == "yaml" else tree_text(rendered), end="")
    if args.yaml_file is not None and not _write_yaml(args.yaml_file, "".join(yaml_out)):
        return 1
    if args.format == "tree":
        print(_tree_footer(args.yaml_file), end="")
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
