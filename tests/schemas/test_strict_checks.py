"""The offline schema checks fail when they validated nothing, or when crank exits non-zero.

A fake ``crank`` stands in for the real one: these are the cases the real one does not
produce on demand (a crash, a silent exit). The real one's verdicts are tested in
``tests/apis/test_validate.py`` and next to the composers.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import yaml
from modelplane.dev import render, schemas, validate

SERVICE = {
    "apiVersion": "modelplane.ai/v1alpha1",
    "kind": "ModelService",
    "metadata": {"name": "qwen", "namespace": "ml-team"},
    "spec": {"endpoints": [{"selector": {"matchLabels": {"app": "qwen"}}, "weight": 1}]},
}
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml-team"}}


def _fake_crank(tmp_path: Path, stdout: str, code: int, stderr: str = "") -> Path:
    script = tmp_path / "crank"
    (tmp_path / "out.txt").write_text(stdout)
    (tmp_path / "err.txt").write_text(stderr)
    script.write_text(
        f"#!/bin/sh\ncat '{tmp_path / 'out.txt'}'\ncat '{tmp_path / 'err.txt'}' >&2\nexit {code}\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def _fetched_root(tmp_path: Path) -> Path:
    """Return an empty schema root that :func:`schemas.available` takes as fetched."""
    root = tmp_path / "schemas"
    (root / "crds").mkdir(parents=True)
    (root / "openapi").mkdir()
    pinned = "".join(p.read_text() for p in sorted(schemas.PINS.glob("*.txt")))
    (root / "modules.txt").write_text(pinned)
    assert schemas.available(root)
    return root


PASSED = (
    "[✓] v1, Kind=Namespace, ml-team validated successfully\n"
    "Total 1 resources: 0 missing schemas, 1 success cases, 0 failure cases\n"
)


# --- modelplane.dev.schemas ---------------------------------------------------------------


def test_schemas_refuses_to_validate_nothing() -> None:
    with pytest.raises(ValueError, match="nothing to validate"):
        schemas.validate([])


def test_schemas_passes_what_crank_passed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render, "CRANK", _fake_crank(tmp_path, PASSED, 0))
    report = schemas.validate([NAMESPACE], _fetched_root(tmp_path))
    assert (report.ok, report.validated, report.total) == (True, 1, 1)


@pytest.mark.parametrize(
    ("stdout", "code", "says"),
    [
        pytest.param("", 1, r"failed \(1\) without a verdict", id="crash"),
        pytest.param("", 0, "reported on 0 of 1", id="silent-success"),
        pytest.param(
            "Total 0 resources: 0 missing schemas, 0 success cases, 0 failure cases\n",
            0,
            "reported on 0 of 1",
            id="read-nothing",
        ),
    ],
)
def test_schemas_fails_when_crank_gave_no_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stdout: str, code: int, says: str
) -> None:
    monkeypatch.setattr(render, "CRANK", _fake_crank(tmp_path, stdout, code, "crank: boom"))
    with pytest.raises(schemas.ValidationRunError, match=says):
        schemas.validate([NAMESPACE], _fetched_root(tmp_path))


def test_schemas_failures_with_a_non_zero_exit_are_a_report_not_a_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed = (
        "[x] schema validation error /v1, Kind=Namespace, ml-team : spec: bad\n"
        "Total 1 resources: 0 missing schemas, 0 success cases, 1 failure cases\n"
    )
    monkeypatch.setattr(render, "CRANK", _fake_crank(tmp_path, failed, 1))
    report = schemas.validate([NAMESPACE], _fetched_root(tmp_path))
    assert not report.ok
    assert report.failures == ("schema validation error /v1, Kind=Namespace, ml-team : spec: bad",)


# --- modelplane.dev.validate (our XRDs) ---------------------------------------------------


def test_validate_refuses_to_validate_nothing() -> None:
    with pytest.raises(ValueError, match="nothing to validate"):
        validate.validate([])


def test_validate_cli_fails_when_no_document_is_checkable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ns.yaml").write_text(yaml.safe_dump(NAMESPACE))
    assert validate.main([str(tmp_path)]) == 1
    assert "nothing to validate" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("stdout", "code", "says"),
    [
        pytest.param("", 1, r"failed \(1\)", id="crash"),
        pytest.param("", 0, "reported on 0 of 1", id="silent-success"),
        pytest.param(
            "Total 0 resources: 0 missing schemas, 0 success cases, 0 failure cases\n",
            0,
            "reported on 0 of 1",
            id="read-nothing",
        ),
    ],
)
def test_validate_fails_when_crank_gave_no_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stdout: str, code: int, says: str
) -> None:
    monkeypatch.setattr(validate, "CRANK", _fake_crank(tmp_path, stdout, code, "crank: boom"))
    with pytest.raises(RuntimeError, match=says):
        validate.validate([SERVICE])


def test_validate_passes_what_crank_passed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    passed = (
        "[✓] modelplane.ai/v1alpha1, Kind=ModelService, qwen validated successfully\n"
        "Total 1 resources: 0 missing schemas, 1 success cases, 0 failure cases\n"
    )
    monkeypatch.setattr(validate, "CRANK", _fake_crank(tmp_path, passed, 0))
    assert validate.validate([SERVICE]) == []


def test_validate_a_document_crank_found_no_schema_for_is_a_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = (
        "[!] could not find CRD/XRD for: modelplane.ai/v1alpha1, Kind=ModelService\n"
        "Total 1 resources: 1 missing schemas, 0 success cases, 0 failure cases\n"
    )
    monkeypatch.setattr(validate, "CRANK", _fake_crank(tmp_path, missing, 0))
    assert validate.validate([SERVICE]) == [
        validate.Problem("ModelService", "", "no schema for modelplane.ai/v1alpha1 ModelService")
    ]


@pytest.mark.crank
def test_the_real_crank_reports_on_every_document() -> None:
    bad = {**SERVICE, "metadata": {"name": "bad", "namespace": "ml-team"}}
    bad["spec"] = {"endpoints": [{"selector": {"matchLabels": {"app": "q"}}, "weight": -1}]}
    problems = validate.validate([SERVICE, bad])
    assert [(p.kind, p.name) for p in problems] == [("ModelService", "bad")]
