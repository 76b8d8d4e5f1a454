"""The chart-index check: every pin in stack.CHARTS against its repository's index.

The reading of indexes is tested on canned answers; the live check runs for every pinned
chart and fails on a version its index does not list. From a machine that reaches no
chart repository (this build machine reaches only the package registries) each live
case is skipped, naming the index it could not read: the README's version table says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import pytest
import yaml
from modelplane.dev import chart_index
from modelplane.dev.chart_index import FOUND, MISSING, UNREACHABLE, Reply, UnreachableError
from modelplane.domain import stack

HTTP_CHART = stack.Chart(
    None, "cluster-autoscaler", "cluster-autoscaler", "https://example.test/autoscaler",
    "9.57.0", "kube-system", "the cluster autoscaler",
)  # fmt: skip
OCI_CHART = stack.Chart(
    None, "lws", "lws", "oci://registry.example.test/lws/charts", "0.8.0", "lws-system", "LWS"
)


def _index(*versions: str) -> bytes:
    entries = {"cluster-autoscaler": [{"version": v} for v in versions], "x": [{"version": "1"}]}
    return yaml.safe_dump({"apiVersion": "v1", "entries": entries}).encode()


class Canned:
    """A fetch that answers from a table by URL prefix, and records every request."""

    def __init__(self, answers: Mapping[str, Reply | Exception]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, dict[str, str]]] = []

    def __call__(self, url: str, headers: Mapping[str, str]) -> Reply:
        self.asked.append((url, dict(headers)))
        for prefix, answer in self.answers.items():
            if url.startswith(prefix):
                if isinstance(answer, Exception):
                    raise answer
                return answer
        return Reply(404, {}, b"")


def test_an_http_index_listing_the_pin_finds_it() -> None:
    index = Reply(200, {}, _index("9.56.0", "9.57.0"))
    fetch = Canned({"https://example.test/autoscaler/index.yaml": index})
    verdict = chart_index.check(HTTP_CHART, fetch)
    assert verdict.outcome == FOUND
    assert fetch.asked == [("https://example.test/autoscaler/index.yaml", {})]


def test_an_http_index_without_the_pin_says_missing_and_what_it_lists() -> None:
    fetch = Canned({"https://example.test/": Reply(200, {}, _index("9.55.0", "9.56.0"))})
    verdict = chart_index.check(HTTP_CHART, fetch)
    assert verdict.outcome == MISSING
    assert "9.57.0 not in https://example.test/autoscaler" in verdict.detail
    assert "9.56.0" in verdict.detail


def test_an_index_that_cannot_be_read_is_unreachable_not_missing() -> None:
    broken = (
        UnreachableError("Could not resolve host"),
        Reply(503, {}, b""),
        Reply(200, {}, b"{:"),
    )
    for answer in broken:
        verdict = chart_index.check(HTTP_CHART, Canned({"https://": answer}))
        assert verdict.outcome == UNREACHABLE, answer


def test_an_oci_registry_is_asked_for_its_tags_with_an_anonymous_token() -> None:
    challenge = 'Bearer realm="https://registry.example.test/token",service="registry"'
    tags = "https://registry.example.test/v2/lws/charts/lws/tags/list"
    token = "https://registry.example.test/token?scope=repository%3Alws%2Fcharts%2Flws%3Apull"
    asked: list[str] = []

    def registry(url: str, headers: Mapping[str, str]) -> Reply:
        asked.append(url)
        if url == tags and headers.get("Authorization") == "Bearer t0k":
            return Reply(200, {}, json.dumps({"tags": ["0.7.0", "0.8.0"]}).encode())
        if url == tags:
            return Reply(401, {"www-authenticate": challenge}, b"")
        assert url == token + "&service=registry"
        return Reply(200, {}, b'{"token": "t0k"}')

    assert chart_index.check(OCI_CHART, registry).outcome == FOUND
    assert asked == [tags, token + "&service=registry", tags]


def test_an_oci_tag_spells_a_plus_as_underscore() -> None:
    chart = stack.Chart(None, "x", "x", "oci://r.test/c", "1.0.0+1", "ns", "x")
    body = json.dumps({"tags": ["1.0.0_1"]}).encode()
    assert chart_index.check(chart, lambda url, headers: Reply(200, {}, body)).outcome == FOUND


def test_a_registry_that_wants_credentials_is_unreachable() -> None:
    reply = Reply(401, {"www-authenticate": 'Basic realm="x"'}, b"")
    verdict = chart_index.check(OCI_CHART, lambda url, headers: reply)
    assert verdict.outcome == UNREACHABLE
    assert "credentials" in verdict.detail


def test_main_fails_only_on_a_missing_version_unless_strict(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    verdicts = [
        chart_index.Verdict("a", FOUND, ""),
        chart_index.Verdict("b", UNREACHABLE, "no route"),
    ]
    monkeypatch.setattr(chart_index, "check_all", lambda charts: verdicts)
    assert chart_index.main([]) == 0
    assert chart_index.main(["--strict"]) == 1
    verdicts.append(chart_index.Verdict("c", MISSING, "gone"))
    assert chart_index.main([]) == 1
    assert "c" in capsys.readouterr().out


@pytest.mark.parametrize("release", sorted(stack.CHARTS))
def test_every_pinned_version_is_in_its_chart_index(release: str) -> None:
    verdict = chart_index.check(stack.CHARTS[release])
    if verdict.outcome == UNREACHABLE:
        pytest.skip(f"cannot be checked from here: {verdict.detail}")
    assert verdict.outcome == FOUND, verdict.detail
