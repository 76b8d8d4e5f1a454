"""examples/ holds the docs' manifests: they match the table and §5, and our XRDs accept them."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from modelplane.dev import docs_examples

EXAMPLES = docs_examples.EXAMPLES
INVENTORY = docs_examples.DOCS.with_name("spec-inventory.md")
GROUP = "modelplane.ai"
FILES = docs_examples.files()

Doc = dict[str, Any]


def _load(path: Path) -> list[Doc]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _group(doc: Mapping[str, Any]) -> str:
    return str(doc.get("apiVersion", "")).split("/")[0]


def _all_documents() -> list[tuple[str, Doc]]:
    return [
        (path.relative_to(EXAMPLES).as_posix(), doc)
        for path in sorted(EXAMPLES.rglob("*.yaml"))
        for doc in _load(path)
    ]


@pytest.mark.parametrize("path", sorted(FILES), ids=sorted(FILES))
def test_every_file_holds_the_documents_the_table_lists(path: str) -> None:
    docs = _load(EXAMPLES / path)
    found = [docs_examples.identity(doc) for doc in docs]
    assert found == [(m.kind, m.name) for m in FILES[path]]
    assert all(isinstance(doc, dict) and doc.get("apiVersion") for doc in docs)


def _inventory_section(number: str) -> str:
    text = INVENTORY.read_text()
    start = text.index(f"### {number} ")
    end = text.index("\n###", start + 1)
    return text[start:end]


def _inventory_lines(section: str) -> set[int]:
    """Return the L column of an inventory table: the last cell of each numbered row."""
    lines: set[int] = set()
    for row in section.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) > 2 and re.fullmatch(r"[\d, ]+", cells[-1]):
            lines.update(int(n) for n in cells[-1].split(","))
    return lines


@pytest.mark.skipif(not INVENTORY.exists(), reason=f"{INVENTORY} is absent")
@pytest.mark.parametrize(
    ("section", "group"),
    [
        pytest.param("5.1", True, id="modelplane-manifests"),
        pytest.param("5.2", False, id="other-manifests"),
    ],
)
def test_the_table_covers_every_manifest_the_inventory_lists(section: str, group: bool) -> None:
    want = _inventory_lines(_inventory_section(section))
    ours = {d["kind"] for path in FILES for d in _load(EXAMPLES / path) if _group(d) == GROUP}
    got = {m.line for m in docs_examples.MANIFESTS if (m.kind in ours) == group}
    assert got == want


def test_the_counts_match_the_spec_inventory() -> None:
    # §5.1 numbers 101 entries, one per file; the multi-document files (platform.yaml,
    # platform-scale.yaml) make that 113 modelplane.ai documents. §5.2 adds 8 files
    # (prerequisites.yaml holds 5 documents) with 12 documents.
    by_group: dict[bool, list[int]] = defaultdict(lambda: [0, 0])
    for path in FILES:
        docs = _load(EXAMPLES / path)
        ours = {_group(d) == GROUP for d in docs}
        assert len(ours) == 1, f"{path} mixes modelplane.ai and other documents"
        counts = by_group[ours.pop()]
        counts[0] += 1
        counts[1] += len(docs)
    assert by_group[True] == [101, 113]
    assert by_group[False] == [8, 12]


@pytest.mark.parametrize(
    ("copy", "source"),
    sorted(docs_examples.FLEET_COPIES.items()),
    ids=sorted(docs_examples.FLEET_COPIES),
)
def test_the_getting_started_fleet_copies_the_docs(copy: str, source: str) -> None:
    assert (EXAMPLES / copy).read_text() == (EXAMPLES / source).read_text()


def _fleet_inputs() -> dict[tuple[str, str], Doc]:
    folder = EXAMPLES / "getting-started"
    return {
        docs_examples.identity(doc): doc
        for path in sorted(folder.glob("*.yaml"))
        for doc in _load(path)
    }


def test_the_getting_started_fleet_is_complete() -> None:
    kinds = sorted(docs_examples.identity(d) for d in _fleet_inputs().values())
    assert kinds == [
        ("InferenceClass", "l4-1x-g6"),
        ("InferenceCluster", "eks-us-east"),
        ("InferenceGateway", "default"),
        ("ModelDeployment", "qwen-demo"),
        ("ModelService", "qwen"),
    ]


OBSERVED = sorted((EXAMPLES / "getting-started" / "fleet").glob("*.yaml"))


@pytest.mark.parametrize("path", OBSERVED, ids=[p.name for p in OBSERVED])
def test_observed_state_mirrors_a_fleet_document_and_is_ready(path: Path) -> None:
    inputs = _fleet_inputs()
    for doc in _load(path):
        declared = inputs[docs_examples.identity(doc)]
        assert {k: v for k, v in doc.items() if k != "status"} == declared
        ready = [c for c in doc["status"]["conditions"] if c["type"] == "Ready"]
        assert [c["status"] for c in ready] == ["True"]


def test_observed_cluster_publishes_its_pools_with_their_class_devices() -> None:
    classes = {
        d["metadata"]["name"]: d for d in _fleet_inputs().values() if d["kind"] == "InferenceClass"
    }
    cluster = _load(EXAMPLES / "getting-started" / "fleet" / "inference-cluster.yaml")[0]
    want = [
        {
            "name": pool["name"],
            "nodes": pool.get("maxNodeCount", pool.get("nodeCount")),
            "devices": classes[pool["className"]]["spec"]["devices"],
        }
        for pool in cluster["spec"]["nodePools"]
    ]
    assert cluster["status"]["gpuPools"] == want
    assert cluster["status"]["gateway"]["address"]
    assert cluster["status"]["providerConfigRef"]["name"]


@pytest.mark.crank
def test_every_modelplane_document_is_accepted_by_our_xrds() -> None:
    validate = pytest.importorskip("modelplane.dev.validate")
    found = [(where, doc) for where, doc in _all_documents() if _group(doc) == GROUP]
    files_of: dict[tuple[str, str], list[str]] = defaultdict(list)
    for where, doc in found:
        files_of[docs_examples.identity(doc)].append(where)
    problems = validate.validate([doc for _, doc in found])
    report = [
        f"{p.kind} {p.name} ({', '.join(files_of[(p.kind, p.name)])}): {p.message}"
        for p in problems
    ]
    assert report == [], "\n".join(report)


@pytest.mark.skipif(not docs_examples.DOCS.exists(), reason=f"{docs_examples.DOCS} is absent")
def test_committed_examples_match_a_fresh_extraction() -> None:
    expected = docs_examples.extract(docs_examples.DOCS.read_text())
    assert docs_examples.drift(EXAMPLES, expected) == []
