"""The docs extractor cuts each manifest block out of the flattened docs, no more, no less."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from modelplane.dev import docs_examples
from modelplane.dev.docs_examples import ExtractionError, Manifest

PAGE = ["---", "# A page", "Source: /guides/a-page/", "Some prose."]
CLASS = [
    "kind: InferenceClass",
    "metadata:",
    "  name: small",
    "spec:",
    "  devices:",
    "  - name: gpu",
]


def _docs(*blocks: list[str]) -> tuple[str, int]:
    """Return docs text of one page holding ``blocks``, and the line of the first apiVersion."""
    lines = list(PAGE)
    for block in blocks:
        lines.extend(block)
    first = next(i for i, line in enumerate(lines, 1) if "apiVersion:" in line)
    return "\n".join(lines), first


def _class_block(*, label: str = "x.yaml", comment: bool = False) -> list[str]:
    head = ["    # A comment above apiVersion.", "apiVersion: modelplane.ai/v1alpha1"]
    if not comment:
        head = ["    apiVersion: modelplane.ai/v1alpha1"]
    return [f"      {label}", *head, *CLASS]


def _extracted(docs: str, line: int, kind: str = "InferenceClass", name: str = "small") -> str:
    found = docs_examples.blocks(docs, [Manifest("guides/a-page", "x.yaml", line, kind, name)])
    return found[0].text


@dataclass(frozen=True)
class EndCase:
    reason: str
    after: list[str]
    want_tail: list[str]


END_CASES = [
    EndCase("prose ends a block", ["Wait until it is ready:"], []),
    EndCase("a heading ends a block", ["## Next step"], []),
    EndCase("a code fence ends a block", ["```bash"], []),
    EndCase("html residue ends a block", ["<p>Apply it:"], []),
    EndCase("a tab label ends a block", ["    GKE", "      x.yaml"], []),
    EndCase("a language label ends a block", ["    bash", "  kubectl apply -f x.yaml"], []),
    EndCase("a page separator ends a block", ["---", "# Next page", "Source: /next/"], []),
    EndCase(
        "a block scalar may hold prose-like lines",
        ["    selectors:", "    - cel: |", "        device.driver == x", "        bash"],
        ["    selectors:", "    - cel: |", "        device.driver == x", "        bash"],
    ),
    EndCase(
        "comments at column zero stay, whatever their indentation",
        ["# trailing comment", "          # odd indent"],
        ["# trailing comment", "          # odd indent"],
    ),
]


@pytest.mark.parametrize("case", END_CASES, ids=[c.reason for c in END_CASES])
def test_a_block_ends_where_the_yaml_ends(case: EndCase) -> None:
    docs, line = _docs(_class_block(), case.after)
    text = _extracted(docs, line)
    assert text.splitlines() == ["apiVersion: modelplane.ai/v1alpha1", *CLASS, *case.want_tail]


def test_comments_above_apiversion_are_kept() -> None:
    docs, line = _docs(_class_block(comment=True), ["Prose."])
    text = _extracted(docs, line)
    assert text.splitlines()[:2] == [
        "# A comment above apiVersion.",
        "apiVersion: modelplane.ai/v1alpha1",
    ]


def test_a_yaml_document_separator_keeps_the_block_going() -> None:
    second = [
        "---",
        "apiVersion: modelplane.ai/v1alpha1",
        "kind: InferenceClass",
        "metadata:",
        "  name: big",
    ]
    docs, line = _docs(_class_block(), second, ["Prose."])
    rows = [
        Manifest("guides/a-page", "x.yaml", line, "InferenceClass", "small"),
        Manifest("guides/a-page", "x.yaml", line + len(CLASS) + 2, "InferenceClass", "big"),
    ]
    (block,) = docs_examples.blocks(docs, rows)
    assert block.text.endswith("  name: big\n")
    assert block.manifests == tuple(rows)


@pytest.mark.parametrize(
    ("manifest", "error"),
    [
        pytest.param(
            ("guides/a-page", "x.yaml", "ModelService", "small"),
            "the table expects",
            id="wrong-kind",
        ),
        pytest.param(
            ("guides/a-page", "x.yaml", "InferenceClass", "other"),
            "the table expects",
            id="wrong-name",
        ),
        pytest.param(
            ("guides/a-page", "y.yaml", "InferenceClass", "small"),
            "no file label",
            id="wrong-label",
        ),
        pytest.param(
            ("recipes/a-page", "x.yaml", "InferenceClass", "small"), "on page", id="wrong-page"
        ),
    ],
)
def test_a_table_row_that_does_not_match_the_docs_is_an_error(
    manifest: tuple[str, str, str, str], error: str
) -> None:
    docs, line = _docs(_class_block(), ["Prose."])
    folder, file, kind, name = manifest
    with pytest.raises(ExtractionError, match=error):
        docs_examples.blocks(docs, [Manifest(folder, file, line, kind, name)])


@pytest.mark.parametrize(
    ("line", "error"),
    [
        pytest.param(1, "no file label", id="above-any-label"),
        pytest.param(10_000, "outside the docs", id="past-the-end"),
        pytest.param(0, "outside the docs", id="zero"),
    ],
)
def test_a_line_with_no_block_is_an_error(line: int, error: str) -> None:
    docs, _ = _docs(_class_block(), ["Prose."])
    with pytest.raises(ExtractionError, match=error):
        docs_examples.blocks(docs, [Manifest("guides/a-page", "x.yaml", line, "K", "n")])


def test_prose_that_looks_like_a_key_is_caught() -> None:
    docs, line = _docs(_class_block(), ["Note: this is prose.", "More prose."])
    with pytest.raises(ExtractionError, match="unexpected top-level keys"):
        _extracted(docs, line)


def test_unparseable_yaml_is_an_error() -> None:
    docs, line = _docs(_class_block(), ["  - name: [unclosed"])
    with pytest.raises(ExtractionError, match="do not parse"):
        _extracted(docs, line)


def test_check_reports_missing_stale_and_unknown_files(tmp_path: Path) -> None:
    expected = {
        "a/x.yaml": "x: 1\n",
        "a/y.yaml": "y: 1\n",
        "getting-started/z.yaml": "z: 1\n",
        "README.md": "# Examples\n",
    }
    docs_examples.write(tmp_path, expected)
    (tmp_path / "a" / "y.yaml").write_text("y: 2\n")
    (tmp_path / "a" / "z.yaml").write_text("z: 1\n")
    (tmp_path / "README.md").unlink()
    authored = tmp_path / docs_examples.AUTHORED[0] / "state.yaml"
    authored.parent.mkdir(parents=True)
    authored.write_text("observed: true\n")
    scenario = tmp_path / "scenarios" / "hand-written.yaml"
    scenario.parent.mkdir()
    scenario.write_text("kind: Scenario\n")
    assert docs_examples.drift(tmp_path, expected) == [
        "missing: README.md",
        "not in the docs table: a/z.yaml",
        "differs from the docs: a/y.yaml",
    ]


def test_extraction_is_deterministic_and_covers_every_table_file() -> None:
    if not docs_examples.DOCS.exists():
        pytest.skip(f"{docs_examples.DOCS} is absent")
    docs = docs_examples.DOCS.read_text()
    first, second = docs_examples.extract(docs), docs_examples.extract(docs)
    assert first == second
    want = {*docs_examples.files(), *docs_examples.FLEET_COPIES, docs_examples.README}
    assert set(first) == want


@pytest.mark.parametrize(
    ("table", "want"),
    [
        pytest.param(
            "[a/b]\nx.yaml  12  Kind  name\n\n[c]\ny.yaml 3 K n\n",
            (Manifest("a/b", "x.yaml", 12, "Kind", "name"), Manifest("c", "y.yaml", 3, "K", "n")),
            id="folders-and-rows",
        ),
        pytest.param("x.yaml 12 Kind name\n", ValueError, id="row-before-folder"),
        pytest.param("[a]\nx.yaml twelve Kind name\n", ValueError, id="line-not-a-number"),
        pytest.param("[a]\nx.yaml 12 Kind\n", ValueError, id="missing-column"),
    ],
)
def test_parse_table(table: str, want: tuple[Manifest, ...] | type[Exception]) -> None:
    if isinstance(want, tuple):
        assert docs_examples.parse_table(table) == want
    else:
        with pytest.raises(want, match="bad table line"):
            docs_examples.parse_table(table)


def test_main_writes_then_checks_and_fails_on_a_stale_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, line = _docs(_class_block(), ["Prose."])
    table = (Manifest("guides/a-page", "x.yaml", line, "InferenceClass", "small"),)
    monkeypatch.setattr(docs_examples, "MANIFESTS", table)
    monkeypatch.setattr(docs_examples, "FLEET_COPIES", {})
    source = tmp_path / "docs.txt"
    source.write_text(docs)
    args = ["--docs", str(source), "--examples", str(tmp_path / "ex")]
    assert docs_examples.main(args) == 0
    assert docs_examples.main([*args, "--check"]) == 0
    (tmp_path / "ex" / "README.md").write_text("edited\n")
    assert docs_examples.main([*args, "--check"]) == 1


def test_main_reports_missing_docs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert docs_examples.main(["--docs", str(tmp_path / "absent.txt"), "--check"]) == 2
    assert "absent.txt" in capsys.readouterr().err
