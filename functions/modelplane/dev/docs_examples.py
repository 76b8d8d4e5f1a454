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


@dataclass(frozen=True)
class Manifest:
    """One complete manifest of the docs.

    Attributes:
        folder: Its folder under examples/: the docs page, plus a sub-folder for a tab or a
            section whose file label repeats one already used on the page.
        file: The docs' file label, used as the file name.
        line: The docs line of its ``apiVersion:``.
        kind: Its kind.
        name: Its metadata.name.
    """

    folder: str
    file: str
    line: int
    kind: str
    name: str

    @property
    def path(self) -> str:
        """Return its file's path relative to examples/."""
        return f"{self.folder}/{self.file}"


# The table: a ``[folder]`` line, then one line per manifest in that folder:
# file label, docs line of its ``apiVersion:``, kind, metadata.name. A file with several
# documents has one line per document, in order.
TABLE = """
[overview]
model-deployment.yaml               127  ModelDeployment          qwen-demo
model-service.yaml                  156  ModelService             qwen
[guides/anthropic-messages-api]
inference-class.yaml                214  InferenceClass           h100-1x
inference-cluster.yaml              253  InferenceCluster         nebius-eu-north
model-deployment.yaml               302  ModelDeployment          qwen3-8b
model-service.yaml                  345  ModelService             qwen3-8b
[models/model-deployment]
model-deployment.yaml               610  ModelDeployment          qwen3-8b
model-deployment-multinode.yaml     687  ModelDeployment          qwen3-coder
[getting-started/installation]
prerequisites.yaml                  849  Namespace                modelplane-system
prerequisites.yaml                  854  ClusterRole              crossplane-compose-modelplane
prerequisites.yaml                  887  DeploymentRuntimeConfig  provider-helm-modelplane
prerequisites.yaml                  899  ClusterRoleBinding       provider-helm-modelplane
prerequisites.yaml                  913  ImageConfig              provider-helm-modelplane
configuration.yaml                  931  Configuration            modelplane
[recipes/qwen3-8b]
inference-class.yaml               1000  InferenceClass           eks-l4-1x-g6
inference-cluster.yaml             1029  InferenceCluster         eks-l4
model-deployment.yaml              1068  ModelDeployment          qwen3-8b
model-service.yaml                 1110  ModelService             qwen3-8b
[recipes/qwen3-8b/speculative-decoding]
model-deployment.yaml              1170  ModelDeployment          qwen3-8b-spec
model-service.yaml                 1218  ModelService             qwen3-8b-spec
[platform/inference-gateway]
inference-gateway.yaml             1278  InferenceGateway         default
[recipes/qwen2.5-7b]
inference-class.yaml               1406  InferenceClass           vultr-a16-1x
inference-cluster.yaml             1433  InferenceCluster         vultr-a16
model-deployment.yaml              1460  ModelDeployment          qwen-7b
model-service.yaml                 1494  ModelService             qwen-7b
[recipes/nemotron-3.5-lightning]
inference-class-nebius.yaml        1563  InferenceClass           nebius-h100-1x
inference-cluster-nebius.yaml      1607  InferenceCluster         nebius-eu-north
model-cache.yaml                   1633  ModelCache               nemotron-lightning
model-deployment.yaml              1662  ModelDeployment          nemotron-lightning
model-service.yaml                 1714  ModelService             nemotron-lightning
[getting-started/build-the-platform]
inference-gateway.yaml             1801  InferenceGateway         default
clusterproviderconfig-aws.yaml     1840  ClusterProviderConfig    default
clusterproviderconfig-gke.yaml     1860  ClusterProviderConfig    default
clusterproviderconfig-azure.yaml   1887  ClusterProviderConfig    default
clusterproviderconfig-nebius.yaml  1909  ClusterProviderConfig    default
clusterproviderconfig-vultr.yaml   1939  ClusterProviderConfig    default
[getting-started/build-the-platform/eks]
platform.yaml                      1959  InferenceClass           l4-1x-g6
platform.yaml                      1984  InferenceCluster         eks-us-east
[getting-started/build-the-platform/gke]
platform.yaml                      2008  InferenceClass           gke-l4-1x-g2
platform.yaml                      2033  InferenceCluster         starter
[getting-started/build-the-platform/aks]
platform.yaml                      2058  InferenceClass           a10-1x
platform.yaml                      2086  InferenceCluster         aks-westeurope
[getting-started/build-the-platform/nebius]
platform.yaml                      2107  InferenceClass           l40s-1x
platform.yaml                      2136  InferenceCluster         nebius-eu-north
[getting-started/build-the-platform/vultr]
platform.yaml                      2156  InferenceClass           l40s-1x
platform.yaml                      2184  InferenceCluster         vultr-ewr
[guides/collecting-engine-metrics]
inference-class.yaml               2239  InferenceClass           gke-l4-1x-g2
inference-cluster.yaml             2273  InferenceCluster         gke-l4-single
model-deployment.yaml              2311  ModelDeployment          qwen2-5-0-5b
model-service.yaml                 2352  ModelService             qwen2-5-0-5b
podmonitor.yaml                    2368  PodMonitor               qwen2-5-0-5b-metrics
[platform/inference-class]
inference-class-gke-l4.yaml        2461  InferenceClass           gke-l4-1x-g2
inference-class-eks-l4.yaml        2492  InferenceClass           eks-l4-1x-g6
inference-class-aks-h100.yaml      2530  InferenceClass           aks-h100-8x
inference-class-nebius-h100.yaml   2567  InferenceClass           nebius-h100-8x
inference-class-vultr-l40s.yaml    2606  InferenceClass           vultr-l40s-1x
inference-class-h100-byo.yaml      2641  InferenceClass           h100-8x-byo
[models/model-service]
model-service.yaml                 2811  ModelService             qwen3-8b
[recipes/qwen3-coder]
inference-class.yaml               3115  InferenceClass           eks-h200-8x-p5en
inference-cluster.yaml             3152  InferenceCluster         eks-coder
inference-class-fp8.yaml           3185  InferenceClass           eks-h200-8x-p5en
model-cache.yaml                   3220  ModelCache               qwen3-coder
model-deployment.yaml              3258  ModelDeployment          qwen3-coder
model-service.yaml                 3357  ModelService             qwen3-coder
model-deployment-fp8.yaml          3386  ModelDeployment          qwen3-coder-sgl
model-service-fp8.yaml             3433  ModelService             qwen3-coder-sgl
[recipes/glm-4.5-air]
inference-class.yaml               3500  InferenceClass           gke-a100-40-1x
inference-cluster.yaml             3526  InferenceCluster         gke-a100
model-deployment.yaml              3558  ModelDeployment          glm-air
model-service.yaml                 3600  ModelService             glm-air
[models/model-cache]
model-cache.yaml                   3698  ModelCache               qwen3-coder
[getting-started/deploying-a-model/eks]
model-deployment.yaml              3739  ModelDeployment          qwen-demo
[getting-started/deploying-a-model/gke]
model-deployment.yaml              3770  ModelDeployment          qwen-demo
[getting-started/deploying-a-model/aks]
model-deployment.yaml              3801  ModelDeployment          qwen-demo
[getting-started/deploying-a-model/nebius]
model-deployment.yaml              3832  ModelDeployment          qwen-demo
[getting-started/deploying-a-model]
model-service.yaml                 3893  ModelService             qwen
[recipes/kimi-k2]
inference-class.yaml               4007  InferenceClass           eks-h200-8x-p5en
inference-cluster.yaml             4040  InferenceCluster         eks-kimi
model-cache.yaml                   4075  ModelCache               kimi-k2
model-deployment.yaml              4106  ModelDeployment          kimi-k2
model-service.yaml                 4210  ModelService             kimi-k2
[platform/inference-cluster]
inference-cluster-gke.yaml         4282  InferenceCluster         gke-us-central
inference-cluster-eks.yaml         4333  InferenceCluster         eks-us-west
inference-cluster-aks.yaml         4389  InferenceCluster         aks-westeurope
inference-cluster-nebius.yaml      4444  InferenceCluster         nebius-eu-north
inference-cluster-vultr.yaml       4503  InferenceCluster         vultr-ewr
inference-cluster-existing.yaml    4530  InferenceCluster         byo-us-east
[recipes/laguna]
inference-class-nebius.yaml        4839  InferenceClass           nebius-h100-8x
inference-cluster-nebius.yaml      4883  InferenceCluster         nebius-eu-north
model-cache.yaml                   4908  ModelCache               laguna
model-deployment.yaml              4942  ModelDeployment          laguna
model-service.yaml                 4990  ModelService             laguna
model-deployment-sglang.yaml       5024  ModelDeployment          laguna
[recipes/qwen2.5-72b]
inference-class-aks.yaml           5150  InferenceClass           aks-a100-1x-nc24ads
inference-cluster-aks.yaml         5181  InferenceCluster         aks-a100-single
inference-class-nebius.yaml        5204  InferenceClass           nebius-h100-1x-sxm
inference-cluster-nebius.yaml      5237  InferenceCluster         nebius-h100-single
model-cache.yaml                   5256  ModelCache               qwen-72b-awq
model-deployment.yaml              5277  ModelDeployment          qwen-72b
model-service.yaml                 5314  ModelService             qwen-72b
model-service-split.yaml           5337  ModelService             qwen-72b
[recipes/llama-3.1-8b]
inference-class-eks.yaml           5654  InferenceClass           eks-l4-1x-g6
inference-cluster-eks.yaml         5684  InferenceCluster         eks-l4-single
inference-class-gke.yaml           5710  InferenceClass           gke-l4-1x-g2
inference-cluster-gke.yaml         5740  InferenceCluster         gke-l4-single
model-deployment.yaml              5777  ModelDeployment          llama-3-1-8b
model-service.yaml                 5821  ModelService             llama-3-1-8b
[models/model-endpoint]
model-endpoint.yaml                5848  ModelEndpoint            kimi-k2-together
model-service-external.yaml        5874  ModelService             kimi-k2
[getting-started/scale-the-platform/eks]
platform-scale.yaml                5904  InferenceClass           l40s-1x-g6e
platform-scale.yaml                5931  InferenceCluster         eks-us-west
platform-scale.yaml                5951  InferenceCluster         eks-eu-central
[getting-started/scale-the-platform/gke]
platform-scale.yaml                5977  InferenceClass           gke-a100-40-1x
platform-scale.yaml                6005  InferenceCluster         gpu-us-west
platform-scale.yaml                6025  InferenceCluster         gpu-us-east
[getting-started/scale-the-platform/aks]
platform-scale.yaml                6053  InferenceClass           a100-1x
platform-scale.yaml                6080  InferenceCluster         aks-eastus
platform-scale.yaml                6098  InferenceCluster         aks-southcentralus
[getting-started/scale-the-platform/nebius]
platform-scale.yaml                6122  InferenceClass           h100-1x
platform-scale.yaml                6153  InferenceCluster         nebius-eu-north-h100
[getting-started/scale-the-model/eks]
model-deployment-west.yaml         6444  ModelDeployment          qwen-west
[getting-started/scale-the-model/gke]
model-deployment-west.yaml         6482  ModelDeployment          qwen-west
[getting-started/scale-the-model/aks]
model-deployment-west.yaml         6521  ModelDeployment          qwen-west
[getting-started/scale-the-model/nebius]
model-deployment-scale.yaml        6560  ModelDeployment          qwen-west
[getting-started/scale-the-model]
model-service-multi.yaml           6607  ModelService             qwen
"""


def parse_table(table: str) -> tuple[Manifest, ...]:
    """Return the manifests a table in the format of :data:`TABLE` lists.

    Raises:
        ValueError: A line is neither a ``[folder]`` nor four columns, or comes before
            the first folder.
    """
    manifests = []
    folder = ""
    for line in table.splitlines():
        if not line.strip():
            continue
        if line.startswith("["):
            folder = line.strip("[]")
            continue
        match line.split():
            case [file, number, kind, name] if folder and number.isdigit():
                manifests.append(Manifest(folder, file, int(number), kind, name))
            case _:
                msg = f"bad table line {line!r}"
                raise ValueError(msg)
    return tuple(manifests)


MANIFESTS = parse_table(TABLE)

# The getting-started fleet a newcomer renders (`make demo`): the EKS tab of each step,
# copied to the top of getting-started/ under the docs' file names.
FLEET_COPIES: Mapping[str, str] = {
    f"getting-started/{copy}": f"getting-started/{source}"
    for copy, source in (
        ("inference-gateway.yaml", "build-the-platform/inference-gateway.yaml"),
        ("platform.yaml", "build-the-platform/eks/platform.yaml"),
        ("model-deployment.yaml", "deploying-a-model/eks/model-deployment.yaml"),
        ("model-service.yaml", "deploying-a-model/model-service.yaml"),
    )
}


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
