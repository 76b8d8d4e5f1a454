"""modelplane.dev.validate: how it drives crank and reads its report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from modelplane.dev import validate
from modelplane.dev.validate import Problem

# A made-up kind whose rule passes only once the schema's default is applied.
DEFAULTED_XRD = """
apiVersion: apiextensions.crossplane.io/v2
kind: CompositeResourceDefinition
metadata: {name: widgets.test.example}
spec:
  group: test.example
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    referenceable: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: string, default: small, maxLength: 16}
            x-kubernetes-validations:
            - rule: 'has(self.size) && self.size == "small"'
              message: size must be small
"""


def _widget(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    metadata = {"name": name, "namespace": "default"}
    return {"apiVersion": "test.example/v1", "kind": "Widget", "metadata": metadata, "spec": spec}


@pytest.mark.parametrize(
    ("line", "want"),
    [
        pytest.param(
            "[x] schema validation error modelplane.ai/v1alpha1, Kind=ModelCache, qwen : "
            'spec.source: Unsupported value: "NGC": supported values: "HuggingFace"',
            [Problem("ModelCache", "qwen", 'spec.source: Unsupported value: "NGC": '
                     'supported values: "HuggingFace"')],
            id="schema-error",
        ),
        pytest.param(
            "[x] CEL validation error modelplane.ai/v1alpha1, Kind=ModelDeployment,  : "
            "spec.template.spec: Invalid value: phase ...",
            [Problem("ModelDeployment", "", "spec.template.spec: Invalid value: phase ...")],
            id="cel-error-unnamed",
        ),
        pytest.param(
            "[!] failed to apply defaults for test.example/v1, Kind=Widget, w: no schema found",
            [Problem("Widget", "w", "no schema found")],
            id="defaulting-failure",
        ),
        pytest.param(
            "[✓] modelplane.ai/v1alpha1, Kind=ModelService, qwen validated successfully",
            [],
            id="success-line",
        ),
        pytest.param(
            "Total 3 resources: 0 missing schemas, 3 success cases, 0 failure cases", [], id="total"
        ),
    ],
)  # fmt: skip
def test_parse_reads_one_problem_per_error_line(line: str, want: list[Problem]) -> None:
    assert validate._parse(line + "\n") == want


@pytest.mark.parametrize(
    ("document", "want"),
    [
        pytest.param(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml-team"}},
            Problem("Namespace", "ml-team", "no XRD or CRD given defines v1 Namespace"),
            id="kind-no-extension-defines",
        ),
        pytest.param(
            {"kind": "ModelCache", "metadata": {"name": "qwen"}},
            Problem("ModelCache", "qwen", "a manifest needs apiVersion and kind"),
            id="no-api-version",
        ),
        pytest.param(
            {"apiVersion": "modelplane.ai/v1", "kind": "ModelCache"},
            Problem("ModelCache", "", "no XRD or CRD given defines modelplane.ai/v1 ModelCache"),
            id="wrong-version-unnamed",
        ),
    ],
)
def test_documents_no_extension_defines_are_problems(
    document: dict[str, Any], want: Problem
) -> None:
    # No document is checkable, so crank does not even run.
    assert validate.validate([document]) == [want]


def test_default_extensions_are_every_xrd() -> None:
    paths = validate.xrd_paths()
    assert paths == sorted(paths)
    assert {p.parent.name for p in paths} >= {"modeldeployments", "inferenceclasses"}


@pytest.mark.crank
def test_defaults_apply_before_rules_and_extensions_replace_the_xrds(tmp_path: Path) -> None:
    xrd = tmp_path / "widget.yaml"
    xrd.write_text(DEFAULTED_XRD)
    cache = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelCache",
        "metadata": {"name": "c"},
    }
    problems = validate.validate(
        [_widget("defaulted", {}), _widget("large", {"size": "large"}), cache], extensions=[xrd]
    )
    assert problems == [
        Problem("ModelCache", "c", "no XRD or CRD given defines modelplane.ai/v1alpha1 ModelCache"),
        Problem("Widget", "large", "spec: Invalid value: size must be small"),
    ]


@pytest.mark.crank
def test_a_broken_extension_is_an_error_not_a_pass(tmp_path: Path) -> None:
    xrd = tmp_path / "widget.yaml"
    xrd.write_text(
        DEFAULTED_XRD.replace("type: object\n        properties", "type: 7\n        properties")
    )
    with pytest.raises(RuntimeError, match="crank beta validate failed"):
        validate.validate([_widget("w", {})], extensions=[xrd])


@pytest.mark.crank
def test_cli_reports_problems_and_skips_foreign_kinds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    service = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelService",
        "metadata": {"name": "qwen", "namespace": "ml-team"},
        "spec": {"endpoints": [{"selector": {"matchLabels": {"app": "qwen"}}, "weight": -1}]},
    }
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml-team"}}
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "all.yaml").write_text(yaml.safe_dump_all([namespace, service]))
    (tmp_path / "notes.txt").write_text("not yaml: [")

    assert validate.main([str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "ModelService/qwen: spec.endpoints[0].weight: Invalid value: -1: "
        "spec.endpoints[0].weight in body should be greater than or equal to 0"
    ]
    assert err.strip() == "1 documents checked, 1 problems, 1 of other kinds skipped"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        pytest.param("kind: [", "not YAML", id="not-yaml"),
        pytest.param("- a\n- b\n", "must be a mapping", id="a-list"),
    ],
)
def test_cli_refuses_files_that_are_not_manifests(
    text: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    assert validate.main([str(bad)]) == 2
    assert says in capsys.readouterr().err
