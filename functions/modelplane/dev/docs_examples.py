"""Extract the complete manifests of the product docs into ``examples/``.

``python -m modelplane.dev.docs_examples`` (re)writes them; ``--check`` exits non-zero when
``examples/`` differs from a fresh extraction of the docs.

The docs file is a flattened copy of the product docs: its blank lines are gone, and each
manifest sits under a file label line (six spaces and the file's name) with its first line
indented by four spaces. :data:`MANIFESTS` names every complete manifest by the docs line of
its ``apiVersion:``; the extractor takes the whole block that holds it, comments included,
and checks that each document in it parses with the expected kind and name.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from modelplane.dev.docs_manifests import FLEET_COPIES, MANIFESTS, Manifest, parse_table

# The table's names, read through this module by the tests and `make examples`.
__all__ = ["FLEET_COPIES", "MANIFESTS", "Manifest", "parse_table"]

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT.parent / "shared" / "docs" / "modelplane-docs.txt"
EXAMPLES = ROOT / "examples"

README = "README.md"

# Authored, not extracted: observed state (with status) for offline rendering.
AUTHORED = ("getting-started/fleet", "replicas", "routing")

# What a Kubernetes manifest may hold at its top level; anything else is prose that
# slipped into a block.
TOP_LEVEL_KEYS = frozenset(
    {"apiVersion", "kind", "metadata", "spec", "status", "rules", "roleRef", "subjects", "data"}
)

_LABEL = "      "  # a file label line: six spaces, then the file name
_FIRST = "    "  # the first line of a block is indented by four spaces
_LABEL_LINE = re.compile(r" {6}[\w.-]+\.yaml")
_KEY = re.compile(r"[A-Za-z_][\w.\-/]*:(\s|$)")
_BLOCK_SCALAR = re.compile(r"(:|^\s*-)\s*[|>][-+0-9]*\s*(#.*)?$")


class ExtractionError(ValueError):
    """The docs no longer hold a manifest where the table says, as the table says."""


def files(manifests: Sequence[Manifest] | None = None) -> dict[str, list[Manifest]]:
    """Return manifests (by default the table's) grouped by file path, in table order."""
    grouped: dict[str, list[Manifest]] = {}
    for manifest in MANIFESTS if manifests is None else manifests:
        grouped.setdefault(manifest.path, []).append(manifest)
    return grouped


@dataclass(frozen=True)
class Block:
    """One example file as the docs hold it.

    Attributes:
        path: Its path relative to examples/.
        page: The docs page it is on, e.g. ``/recipes/qwen3-8b/``.
        title: That page's title.
        first: The docs line of its first line.
        last: The docs line of its last line.
        text: Its text, as written to the file.
        manifests: The table's rows for its documents, in order.
    """

    path: str
    page: str
    title: str
    first: int
    last: int
    text: str
    manifests: tuple[Manifest, ...]


def blocks(docs: str, manifests: Sequence[Manifest] | None = None) -> list[Block]:
    """Return every file that ``manifests`` name, cut out of the docs and checked.

    Args:
        docs: The text of the docs file.
        manifests: The manifests to find; by default the table's.

    Raises:
        ExtractionError: A block is missing, sits on another page than its folder says,
            does not parse, or does not hold the documents the table lists for it.
    """
    lines = docs.split("\n")
    found = []
    for path, rows in files(manifests).items():
        start = block_start(lines, rows[0])
        end = block_end(lines, start)
        block = [lines[start].removeprefix(_FIRST), *lines[start + 1 : end]]
        verify(path, block, start + 1, rows)
        page, title = page_of(lines, start)
        if not f"{rows[0].folder}/".startswith(page.strip("/") + "/"):
            msg = f"{path}: docs line {rows[0].line} is on page {page}, not in that folder"
            raise ExtractionError(msg)
        text = "\n".join(block) + "\n"
        found.append(Block(path, page, title, start + 1, end, text, tuple(rows)))
    return found


def extract(docs: str) -> dict[str, str]:
    """Return the text of every file the extractor owns, by path relative to examples/.

    That is every block of :func:`blocks`, the getting-started fleet's copies of some of
    them (:data:`FLEET_COPIES`), and ``README.md``.

    Args:
        docs: The text of the docs file.

    Raises:
        ExtractionError: See :func:`blocks`.
    """
    found = blocks(docs)
    out = {block.path: block.text for block in found}
    for copy, source in FLEET_COPIES.items():
        out[copy] = out[source]
    out[README] = readme(found)
    return dict(sorted(out.items()))


def page_of(lines: Sequence[str], index: int) -> tuple[str, str]:
    """Return the path and title of the docs page that holds line ``index``."""
    for line in range(index, 0, -1):
        if lines[line].startswith("Source: ") and lines[line - 1].startswith("# "):
            return lines[line].removeprefix("Source: "), lines[line - 1].removeprefix("# ")
    msg = f"docs line {index + 1} is on no page"
    raise ExtractionError(msg)


def block_start(lines: Sequence[str], manifest: Manifest) -> int:
    """Return the index of the first line of the block that holds ``manifest``.

    The block starts right after the file label, so comments above ``apiVersion:`` stay.
    """
    if not 0 < manifest.line <= len(lines):
        msg = f"{manifest.path}: docs line {manifest.line} is outside the docs"
        raise ExtractionError(msg)
    label = _LABEL + manifest.file
    for index in range(manifest.line - 1, 0, -1):
        if lines[index - 1] == label and lines[index].startswith(_FIRST):
            return index
        if _LABEL_LINE.fullmatch(lines[index]):
            break
    msg = f"{manifest.path}: no file label {manifest.file!r} above docs line {manifest.line}"
    raise ExtractionError(msg)


def block_end(lines: Sequence[str], start: int) -> int:
    """Return the index just past the last line of the block that starts at ``start``."""
    scalar_indent: int | None = None  # indent of the line that opened a block scalar
    for index in range(start + 1, len(lines)):
        line = lines[index]
        indent = len(line) - len(line.lstrip(" "))
        if scalar_indent is not None and (not line.strip() or indent > scalar_indent):
            continue
        scalar_indent = None
        if _ends_block(lines, index):
            return index
        if _BLOCK_SCALAR.search(line):
            scalar_indent = indent
    return len(lines)


def _ends_block(lines: Sequence[str], index: int) -> bool:
    line = lines[index]
    stripped = line.strip()
    if line.startswith(("```", "<", "## ")):
        return True
    if line == "---":
        return _is_page_separator(lines, index)
    if line.startswith(" "):
        return _is_label(stripped)
    return not (line.startswith(("#", "- ")) or _KEY.match(line))


def _is_page_separator(lines: Sequence[str], index: int) -> bool:
    """Tell a page break (``---``, a title, ``Source:``) from a YAML document separator."""
    return index + 2 < len(lines) and lines[index + 2].startswith("Source: ")


def _is_label(stripped: str) -> bool:
    """Tell a tab, file or language label (``EKS``, ``platform.yaml``, ``bash``) from YAML."""
    return ":" not in stripped and not stripped.startswith(("-", "#", '"', "'", "[", "]", "{", "}"))


def verify(path: str, block: Sequence[str], first_line: int, manifests: Sequence[Manifest]) -> None:
    """Check that a block holds exactly the documents the table lists for its file.

    Args:
        path: The file's path under examples/, for messages.
        block: The block's lines as written to the file.
        first_line: The docs line number of the block's first line.
        manifests: The table's rows for this file, in order.

    Raises:
        ExtractionError: The block does not parse or holds other documents.
    """
    try:
        docs = [d for d in yaml.safe_load_all("\n".join(block)) if d is not None]
    except yaml.YAMLError as err:
        msg = f"{path}: docs lines {first_line}-{first_line + len(block) - 1} do not parse: {err}"
        raise ExtractionError(msg) from err
    starts = [first_line + i for i, line in enumerate(block) if line.startswith("apiVersion:")]
    found = [(line, *identity(doc)) for line, doc in zip(starts, docs, strict=False)]
    want = [(m.line, m.kind, m.name) for m in manifests]
    if len(docs) != len(starts) or found != want:
        msg = f"{path}: the docs hold {found}, the table expects {want}"
        raise ExtractionError(msg)
    for doc in docs:
        if stray := sorted(set(doc) - TOP_LEVEL_KEYS):
            msg = f"{path}: {doc.get('kind')} has unexpected top-level keys {stray}"
            raise ExtractionError(msg)


def identity(doc: Any) -> tuple[str, str]:
    """Return a document's kind and metadata.name ("" where absent)."""
    if not isinstance(doc, Mapping):
        return "", ""
    metadata = doc.get("metadata")
    name = metadata.get("name", "") if isinstance(metadata, Mapping) else ""
    return str(doc.get("kind", "")), str(name)


def drift(examples: Path, expected: Mapping[str, str]) -> list[str]:
    """Return how ``examples`` differs from ``expected``, one line per file.

    The extractor owns the top-level folders it writes into, except :data:`AUTHORED`
    folders; other top-level folders hold hand-written scenarios and are not its.
    """
    groups = {path.split("/")[0] for path in expected if "/" in path}
    found = {
        path
        for path in (p.relative_to(examples).as_posix() for p in examples.rglob("*.yaml"))
        if path.split("/")[0] in groups and not _authored(path)
    }
    if (examples / README).exists():
        found.add(README)
    problems = [f"missing: {path}" for path in sorted(set(expected) - found)]
    problems += [f"not in the docs table: {path}" for path in sorted(found - set(expected))]
    problems += [
        f"differs from the docs: {path}"
        for path in sorted(set(expected) & found)
        if (examples / path).read_text() != expected[path]
    ]
    return problems


def _authored(path: str) -> bool:
    # recipes/<recipe>/fleet/: written by modelplane.dev.recipe_fleets, not from the docs.
    recipe_fleet = path.startswith("recipes/") and path.split("/")[2:3] == ["fleet"]
    return recipe_fleet or any(path.startswith(folder + "/") for folder in AUTHORED)


_INTRO = """\
# Examples

Every complete manifest in the product docs, verbatim (comments included), in one
folder per docs page. Generated by `python -m modelplane.dev.docs_examples` from the
table in `functions/modelplane/dev/docs_examples.py`; do not edit by hand. `--check`
(and `tests/examples/`) fails when these files no longer match the docs.

- `getting-started/`: the getting-started tour, one sub-folder per step.
- `platform/`: the platform team's pages: the gateway, hardware classes, clusters.
- `models/`: the ML team's pages: deployments, services, caches, external endpoints.
- `guides/`: task guides, each a full platform-plus-model setup.
- `recipes/`: validated recipes, one folder per model.
- `overview/`: the overview page's first deployment and service.

Any other top-level folder is not from the docs: it is written by hand (scenario
fleets for tests and renders) and has its own README.

A file keeps the docs' file label as its name. Where a page shows the same file
label in several tabs (EKS, GKE, AKS, Nebius, Vultr), each tab has a sub-folder;
a page section that repeats a file label gets a sub-folder named after it.

## The getting-started fleet

`getting-started/` itself is a complete fleet to render offline (`make demo`):
the InferenceGateway `default`, the EKS platform (InferenceClass `l4-1x-g6` and
InferenceCluster `eks-us-east`), the ModelDeployment `qwen-demo` and the
ModelService `qwen`. Its top-level files are copies of the docs' files:

{copies}

`getting-started/fleet/` is not from the docs: it holds the observed state a render
needs, the InferenceCluster `eks-us-east` with the status our function publishes (GPU
pools, gateway address, Ready) and the InferenceGateway `default` with its address.
Nobody applies these; the renderer reads them in place of the documents they mirror.

Each `recipes/<recipe>/fleet/` is not from the docs either: it holds the recipe's
InferenceClusters with the status Modelplane publishes once they run (GPU pools from
their classes, a gateway address, Ready), written by `python -m
modelplane.dev.recipe_fleets`, so that `make render EXAMPLE=examples/recipes/<recipe>`
and `modelplane plan examples/recipes/<recipe>` place the recipe's model.

## Files and the docs lines they come from

"Lines" is the block's range in `modelplane-docs.txt`; each document is listed with
the line of its `apiVersion:`.
"""

_SUBFOLDERS = {
    "eks": "EKS tab",
    "gke": "GKE tab",
    "aks": "AKS tab",
    "nebius": "Nebius tab",
    "vultr": "Vultr tab",
    "speculative-decoding": "Speculative decoding section",
}


def readme(found: Sequence[Block]) -> str:
    """Return examples/README.md: the groups, each folder's files and their docs lines."""
    copies = "\n".join(f"- `{copy}` = `{source}`" for copy, source in FLEET_COPIES.items())
    out = [_INTRO.format(copies=copies)]
    folder = ""
    for block in sorted(found, key=lambda b: b.path.rsplit("/", 1)):
        here = block.path.rsplit("/", 1)[0]
        if here != folder:
            folder = here
            out.append(_folder_heading(folder, block))
        docs = ", ".join(f"{m.kind} `{m.name}` (L{m.line})" for m in block.manifests)
        name = block.path.rsplit("/", 1)[1]
        out.append(f"| `{name}` | {docs} | L{block.first}-L{block.last} |\n")
    return "".join(out)


def _folder_heading(folder: str, block: Block) -> str:
    page = block.page.strip("/")
    where = f"{block.title} (`{block.page}`)"
    if folder != page:
        where += f", {_SUBFOLDERS[folder.removeprefix(page + '/')]}"
    return f"\n### `{folder}/`\n\n{where}\n\n| File | Documents | Lines |\n|---|---|---|\n"


def write(examples: Path, expected: Mapping[str, str]) -> list[Path]:
    """Write every expected file under ``examples`` and return the paths written."""
    written = []
    for path, text in expected.items():
        target = examples / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        written.append(target)
    return written


def main(argv: Iterable[str] | None = None) -> int:
    """Write the examples, or with ``--check`` report how they differ from the docs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if examples/ is stale")
    parser.add_argument("--docs", type=Path, default=DOCS, help="the docs file")
    parser.add_argument("--examples", type=Path, default=EXAMPLES, help="the examples folder")
    args = parser.parse_args(None if argv is None else list(argv))
    try:
        expected = extract(args.docs.read_text())
    except (OSError, ExtractionError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.check:
        problems = drift(args.examples, expected)
        for problem in problems:
            print(problem)
        return 1 if problems else 0
    for path in write(args.examples, expected):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
