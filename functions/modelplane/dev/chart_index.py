"""Check every pinned chart version (``stack.CHARTS``) against its chart repository.

``python -m modelplane.dev.chart_index`` (``make check-charts``) asks each repository for
each pin and prints one line per chart: ``found``, ``MISSING`` (the index answers and
lacks the version) or ``unreachable`` (the index could not be read from here, with why).
It exits 1 when a version is missing, 0 otherwise; ``--strict`` also fails on an
unreachable index.

- An ``https://`` repository is a classic Helm repository: its ``index.yaml`` lists
  ``entries.<chart>[].version``.
- An ``oci://host/path`` repository is an OCI registry: the chart is the repository
  ``path/<chart>`` and each version a tag (``GET /v2/<path>/<chart>/tags/list``, with the
  anonymous bearer token the registry's ``WWW-Authenticate`` challenge offers).

The network is only touched through a :data:`Fetch` function, so tests hand it canned
answers.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from modelplane.domain import stack

TIMEOUT_SECONDS = 10.0
FOUND = "found"
MISSING = "MISSING"
UNREACHABLE = "unreachable"


class UnreachableError(Exception):
    """The index could not be read (no route, DNS, refused, an HTTP error)."""


@dataclass(frozen=True)
class Reply:
    """What a GET returned: its status, headers (lower-case names) and body."""

    status: int
    headers: Mapping[str, str]
    body: bytes


Fetch = Callable[[str, Mapping[str, str]], Reply]
"""GET a URL with headers; raise :class:`UnreachableError` when nothing answers."""


@dataclass(frozen=True)
class Verdict:
    """One chart's outcome: :data:`FOUND`, :data:`MISSING` or :data:`UNREACHABLE`."""

    release: str
    outcome: str
    detail: str


def http_fetch(url: str, headers: Mapping[str, str]) -> Reply:
    """GET ``url`` over the network (the default :data:`Fetch`)."""
    request = urllib.request.Request(url, headers=dict(headers))
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
            found = {k.lower(): v for k, v in response.headers.items()}
            return Reply(response.status, found, response.read())
    except urllib.error.HTTPError as exc:
        found = {k.lower(): v for k, v in exc.headers.items()}
        return Reply(exc.code, found, exc.read() or b"")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise UnreachableError(str(getattr(exc, "reason", exc))) from exc


def check(chart: stack.Chart, fetch: Fetch = http_fetch) -> Verdict:
    """Return whether ``chart``'s pinned version is in its repository's index."""
    try:
        if chart.repository.startswith("oci://"):
            versions = _oci_tags(chart, fetch)
        else:
            versions = _index_versions(chart, fetch)
    except UnreachableError as exc:
        return Verdict(chart.release, UNREACHABLE, f"{chart.repository}: {exc}")
    if chart.version in versions:
        return Verdict(chart.release, FOUND, f"{chart.name} {chart.version}")
    newest = ", ".join(sorted(versions)[-3:]) or "none"
    detail = f"{chart.name} {chart.version} not in {chart.repository} (last listed: {newest})"
    return Verdict(chart.release, MISSING, detail)


def _index_versions(chart: stack.Chart, fetch: Fetch) -> set[str]:
    reply = fetch(chart.repository.rstrip("/") + "/index.yaml", {})
    if reply.status != 200:
        message = f"index.yaml answered HTTP {reply.status}"
        raise UnreachableError(message)
    try:
        index = yaml.safe_load(reply.body)
    except yaml.YAMLError as exc:
        message = f"index.yaml is not YAML: {exc}"
        raise UnreachableError(message) from exc
    entries = (index or {}).get("entries") if isinstance(index, Mapping) else None
    found = entries.get(chart.name) if isinstance(entries, Mapping) else None
    return {str(e.get("version")) for e in found or () if isinstance(e, Mapping)}


def _oci_tags(chart: stack.Chart, fetch: Fetch) -> set[str]:
    host, _, path = chart.repository.removeprefix("oci://").partition("/")
    host = REGISTRY_HOSTS.get(host, host)
    repository = "/".join(p for p in (path.strip("/"), chart.name) if p)
    url = f"https://{host}/v2/{repository}/tags/list"
    reply = fetch(url, {})
    if reply.status == 401:
        token = _anonymous_token(reply.headers.get("www-authenticate", ""), repository, fetch)
        reply = fetch(url, {"Authorization": f"Bearer {token}"})
    if reply.status != 200:
        message = f"tags/list answered HTTP {reply.status}"
        raise UnreachableError(message)
    try:
        tags = json.loads(reply.body).get("tags") or []
    except (ValueError, AttributeError) as exc:
        message = f"tags/list is not JSON: {exc}"
        raise UnreachableError(message) from exc
    # Helm writes a "+" in a version as "_" in the tag.
    return {str(t).replace("_", "+") for t in tags}


REGISTRY_HOSTS = {"docker.io": "registry-1.docker.io"}
"""Registries whose API lives on another host than the name charts use (as Helm maps it)."""
_CHALLENGE = re.compile(r'(\w+)="([^"]*)"')


def _anonymous_token(challenge: str, repository: str, fetch: Fetch) -> str:
    params = dict(_CHALLENGE.findall(challenge))
    realm = params.get("realm")
    if not challenge.lower().startswith("bearer") or not realm:
        message = f"the registry asks for credentials ({challenge or 'no challenge'})"
        raise UnreachableError(message)
    query = {"scope": f"repository:{repository}:pull"}
    if params.get("service"):
        query["service"] = params["service"]
    reply = fetch(f"{realm}?{urllib.parse.urlencode(query)}", {})
    if reply.status != 200:
        message = f"no anonymous token (HTTP {reply.status})"
        raise UnreachableError(message)
    body: Any = json.loads(reply.body)
    token = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
    if not token:
        message = "the token endpoint returned no token"
        raise UnreachableError(message)
    return str(token)


def check_all(charts: Iterable[stack.Chart], fetch: Fetch = http_fetch) -> list[Verdict]:
    """Return a verdict for every chart, in release order."""
    return [check(chart, fetch) for chart in sorted(charts, key=lambda c: c.release)]


def main(argv: list[str] | None = None) -> int:
    """Print one line per pinned chart and return the exit code (see the module doc)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strict", action="store_true", help="fail on an unreachable index")
    args = parser.parse_args(argv)
    verdicts = check_all(stack.CHARTS.values())
    for verdict in verdicts:
        print(f"{verdict.release:28} {verdict.outcome:12} {verdict.detail}")
    outcomes = {v.outcome for v in verdicts}
    if MISSING in outcomes or (args.strict and UNREACHABLE in outcomes):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
