"""Inputs are checked everywhere: render, plan, simulate and validate refuse a typo'd
document with a kubectl-style message naming the file, the object and the field.

Every example passes the same check, and every recipe plans with its model placed.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from modelplane import cli
from modelplane.dev import checks, recipe_fleets, render

pytestmark = pytest.mark.crank

EXAMPLES = render.ROOT / "examples"
GETTING_STARTED = EXAMPLES / "getting-started"
Doc = dict[str, Any]


def _deployment() -> Doc:
    doc: Doc = yaml.safe_load((GETTING_STARTED / "model-deployment.yaml").read_text())
    return doc


def _member(doc: Doc) -> Doc:
    member: Doc = doc["spec"]["template"]["spec"]["engines"][0]["members"][0]
    return member


def _rename(doc: Doc, key: str, new: str, where: Callable[[Doc], Doc] = lambda d: d["spec"]) -> Doc:
    out = copy.deepcopy(doc)
    holder = where(out)
    holder[new] = holder.pop(key)
    return out


def _set(doc: Doc, value: Any) -> Doc:
    out = copy.deepcopy(doc)
    out["spec"]["replicas"] = value
    return out


def _kind(doc: Doc, kind: str) -> Doc:
    return {**copy.deepcopy(doc), "kind": kind}


@dataclass(frozen=True)
class Typo:
    """A document a user got wrong, and what the message must name."""

    name: str
    document: Doc
    field: str


TYPOS = [
    Typo("replica", _rename(_deployment(), "replicas", "replica"), "spec.replica"),
    Typo(
        "nodeSelecter",
        _rename(_deployment(), "nodeSelector", "nodeSelecter", _member),
        "nodeSelecter",
    ),
    Typo("replicas-two", _set(_deployment(), "two"), "spec.replicas"),
    Typo("wrong-kind", _kind(_deployment(), "ModelDeploymnet"), "ModelDeploymnet"),
]


@pytest.fixture(params=TYPOS, ids=[t.name for t in TYPOS])
def typo(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Typo, Path]:
    case: Typo = request.param
    folder = tmp_path / "example"
    folder.mkdir()
    (folder / "model-deployment.yaml").write_text(yaml.safe_dump(case.document))
    return case, folder


def _names_it(text: str, case: Typo, file: Path) -> None:
    assert case.field in text, text
    assert str(file) in text, text
    assert "document 1" in text or "fleet[0]" in text, text


def test_validate_names_the_file_document_object_and_field(typo: tuple[Typo, Path]) -> None:
    case, folder = typo
    result = CliRunner().invoke(cli.main, ["validate", str(folder)])
    assert result.exit_code == 1, result.output
    _names_it(result.output, case, folder / "model-deployment.yaml")
    if case.name != "wrong-kind":
        assert "ModelDeployment ml-team/qwen-demo is invalid" in result.output


def test_plan_refuses_it_before_planning(typo: tuple[Typo, Path]) -> None:
    case, folder = typo
    fleet = GETTING_STARTED / "fleet"
    result = CliRunner().invoke(cli.main, ["plan", str(folder), str(fleet)])
    assert result.exit_code != 0, result.output
    _names_it(result.output, case, folder / "model-deployment.yaml")
    assert "nothing was run" in result.output


def test_simulate_refuses_it_in_a_scenario(typo: tuple[Typo, Path]) -> None:
    case, folder = typo
    scenario = folder / "scenario.yaml"
    ready = {"setClusterReady": {"cluster": "eks-us-east", "ready": True}}
    scenario.write_text(
        yaml.safe_dump(
            {
                "kind": "Scenario",
                "name": "t",
                "include": [str(GETTING_STARTED / "fleet" / "inference-cluster.yaml")],
                "fleet": [case.document],
                "timeline": [{"name": "start", "events": [ready]}],
            }
        )
    )
    result = CliRunner().invoke(cli.main, ["simulate", str(scenario)])
    assert result.exit_code != 0, result.output
    if case.name == "wrong-kind":  # the scenario reader knows its kinds and says so first
        assert "ModelDeploymnet" in result.output
        return
    _names_it(result.output, case, scenario)


@pytest.mark.crossplane
def test_render_refuses_it_and_renders_nothing(
    typo: tuple[Typo, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    case, folder = typo
    assert render.main([str(folder)]) == 1
    out = capsys.readouterr()
    assert out.out == "", "nothing rendered"
    _names_it(out.err, case, folder / "model-deployment.yaml")


def test_every_example_is_valid() -> None:
    found = checks.located([EXAMPLES])
    assert len(found) > 200
    assert checks.check(found) == []


@pytest.mark.parametrize("folder", recipe_fleets.recipe_folders(), ids=lambda p: p.name)
def test_every_recipe_plans_with_its_models_placed(folder: Path) -> None:
    """``plan FOLDER --name NAME`` places each deployment; a name two files share is
    planned file by file (``plan FILE FOLDER``), as the refusal says."""
    files: dict[str, list[str]] = {}
    for one in checks.located([folder], recursive=False):
        if one.document.get("kind") == "ModelDeployment":
            name = one.document["metadata"]["name"]
            files.setdefault(name, []).append(one.where.split(", document")[0])
    assert files
    for name, where in sorted(files.items()):
        runs = [["plan", str(folder), "--name", name]]
        if len(where) > 1:
            refused = CliRunner().invoke(cli.main, runs[0])
            assert refused.exit_code != 0
            assert f"several ModelDeployments are named {name}" in refused.output
            runs = [["plan", file, str(folder)] for file in where]
        for args in runs:
            result = CliRunner().invoke(cli.main, [*args, "-o", "yaml"])
            assert result.exit_code == 0, result.output
            plan = yaml.safe_load(result.stdout)
            assert plan["placed"] == plan["wanted"] > 0, (args, result.stdout)


def test_recipe_fleets_are_up_to_date() -> None:
    assert recipe_fleets.main(["--check"]) == 0


SCENARIOS = sorted((EXAMPLES / "simulate").glob("*.yaml"))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.stem)
def test_every_simulate_example_passes_the_check_and_runs(scenario: Path) -> None:
    result = CliRunner().invoke(cli.main, ["simulate", str(scenario), "-o", "json"])
    assert result.exit_code == 0, result.output
    assert "problem" not in result.stderr
