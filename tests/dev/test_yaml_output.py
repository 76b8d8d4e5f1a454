"""Every multi-document YAML we print or write parses strictly and keeps its documents.

A ``---`` missing between two renders merged one composite's first document into the
previous composite's last Event: duplicate keys for a strict loader, a silently merged
document for PyYAML, yq and kubectl. Each test loads an output with the strict loader
(duplicate keys are errors) and counts its documents against what was rendered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from modelplane import cli
from modelplane.dev import engine, render, strict_yaml

EXAMPLES = render.ROOT / "examples"
GETTING_STARTED = EXAMPLES / "getting-started"


def _rendered(kind: str, name: str, events: int) -> render.Rendered:
    xr = {"apiVersion": "modelplane.ai/v1alpha1", "kind": kind, "metadata": {"name": name}}
    composed = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-cm"}}
    out = engine.RenderOutput(
        composite=xr,
        composed=[composed],
        events=[engine.Event("Normal", "Ok", f'Pipeline step "s": {i}') for i in range(events)],
    )
    return render.Rendered(xr, out)


def _documents(text: str) -> list[dict[str, Any]]:
    return [d for d in strict_yaml.load_all(text) if d is not None]


def test_the_strict_loader_refuses_a_repeated_key() -> None:
    with pytest.raises(yaml.YAMLError, match="duplicate key 'kind'"):
        strict_yaml.load_all("apiVersion: v1\nkind: Event\nkind: InferenceClass\n")


def test_two_renders_in_one_stream_stay_separate_documents() -> None:
    renders = [_rendered("InferenceClass", "a", events=2), _rendered("InferenceClass", "b", 1)]
    text = render.yaml_text(Path("x.yaml"), renders)
    docs = _documents(text)
    assert len(docs) == sum(len(r.docs) for r in renders) == 7
    assert [d["kind"] for d in docs][3:6] == ["Event", "InferenceClass", "ConfigMap"]
    # And the other loaders people use agree with the strict one.
    assert [d for d in yaml.safe_load_all(text) if d] == docs


def test_plan_yaml_output_is_one_strict_document() -> None:
    result = CliRunner().invoke(
        cli.main, ["plan", str(GETTING_STARTED), "--name", "qwen-demo", "-o", "yaml"]
    )
    assert result.exit_code == 0, result.output
    (plan,) = _documents(result.stdout)
    assert plan["deployment"] == "ml-team/qwen-demo"


def test_simulate_yaml_output_is_one_strict_document() -> None:
    scenario = EXAMPLES / "simulate" / "getting-started.yaml"
    result = CliRunner().invoke(cli.main, ["simulate", str(scenario), "-o", "yaml"])
    assert result.exit_code == 0, result.output
    (run,) = _documents(result.stdout)
    assert run["steps"]


@pytest.mark.crossplane
def test_make_render_output_and_the_demo_yaml_file_round_trip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "demo" / "rendered.yaml"
    assert render.main(["--yaml-file", str(out_file), str(GETTING_STARTED)]) == 0
    printed = capsys.readouterr().out
    rendered = render.render_path(GETTING_STARTED, depth=1)
    expected = sum(len(one.docs) for one in rendered)
    assert len(rendered) >= 5, "the fleet's four composites and the replica they compose"
    for text in (printed, out_file.read_text()):
        docs = _documents(text)
        assert len(docs) == expected
        # The replica twice: as its deployment composed it, then as its own render.
        assert sum(d["kind"] == "ModelReplica" for d in docs) == 2
