"""Render Modelplane composites offline with the real Crossplane CLI.

``python -m modelplane.dev.render PATH...`` (``make render EXAMPLE=PATH``) starts the
functions it needs on free local ports, writes Function manifests that point
``crossplane render`` at them through its Development runtime, renders every Modelplane
composite found in PATH with its kind's Composition, prints the rendered YAML, and
stops the functions.

What a PATH holds:

- a file: every document in it;
- a folder: the ``*.yaml`` files directly in it (sub-folders are other variants, such
  as the docs' per-cloud tabs, and are not read), plus ``fleet/`` and ``observed/``
  below it.

Every Modelplane composite among those documents is rendered. Every document, and
everything under ``fleet/``, is also offered to the functions as a required resource,
so a ModelService finds its ModelEndpoints and a ModelDeployment its InferenceClusters.
A ``fleet/`` document replaces an input document of the same kind and name: it is the
observed state (with ``status``) of what the input declares. ``observed/`` holds the
composite's observed composed resources (annotated with their
``crossplane.io/composition-resource-name``), as on a later reconcile.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from modelplane import registry

ROOT = Path(__file__).resolve().parents[3]
CRANK = ROOT / "bin" / "crank"
GROUPS = ("modelplane.ai", "infrastructure.modelplane.ai")
FUNCTION_PREFIX = "modelplane-function-"
STARTUP_TIMEOUT_SECONDS = 30.0

Doc = dict[str, Any]


class RenderError(RuntimeError):
    """crank could not render a composite; the message carries its stderr."""


def function_name(kind: str) -> str:
    """Return the Function that composes ``kind``, as the Compositions name it."""
    return FUNCTION_PREFIX + kind.lower()


def is_composite(doc: Mapping[str, Any]) -> bool:
    """Tell whether a document is one of our composite resources."""
    group = str(doc.get("apiVersion", "")).split("/")[0]
    return group in GROUPS


def load_documents(path: Path) -> list[Doc]:
    """Load every YAML document of a file, or of the ``*.yaml`` files directly in a folder."""
    files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    docs: list[Doc] = []
    for file in files:
        docs.extend(d for d in yaml.safe_load_all(file.read_text()) if isinstance(d, dict))
    return docs


def composition_for(kind: str) -> Path:
    """Return the Composition file for ``kind``.

    Raises:
        RenderError: no XRD under apis/ defines that kind.
    """
    for definition in sorted((ROOT / "apis").glob("*/definition.yaml")):
        xrd = yaml.safe_load(definition.read_text())
        if xrd["spec"]["names"]["kind"] == kind:
            return definition.with_name("composition.yaml")
    msg = f"no XRD under apis/ defines kind {kind}"
    raise RenderError(msg)


def _key(doc: Mapping[str, Any]) -> tuple[str, str, str, str]:
    meta = doc.get("metadata") or {}
    return (
        str(doc.get("apiVersion", "")),
        str(doc.get("kind", "")),
        str(meta.get("namespace", "")),
        str(meta.get("name", "")),
    )


def overlay(inputs: Iterable[Doc], observed: Iterable[Doc]) -> list[Doc]:
    """Return ``inputs`` with each document replaced by its observed twin, plus the rest."""
    seen = {_key(d): d for d in observed}
    merged = [seen.pop(_key(d), d) for d in inputs]
    return merged + list(seen.values())


def free_port() -> int:
    """Return a TCP port on the loopback interface that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_listening(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            msg = f"function server exited with code {proc.returncode} before listening"
            raise RenderError(msg)
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    msg = f"function server did not listen on port {port} within {STARTUP_TIMEOUT_SECONDS:.0f}s"
    raise RenderError(msg)


@dataclass
class Functions:
    """Running function servers: one address per kind they compose."""

    targets: dict[str, str]

    def manifests(self) -> list[Doc]:
        """Return Function manifests that send crank to the running servers."""
        return [
            {
                "apiVersion": "pkg.crossplane.io/v1",
                "kind": "Function",
                "metadata": {
                    "name": function_name(kind),
                    "annotations": {
                        "render.crossplane.io/runtime": "Development",
                        "render.crossplane.io/runtime-development-target": target,
                    },
                },
                "spec": {"package": f"modelplane/{function_name(kind)}:dev"},
            }
            for kind, target in sorted(self.targets.items())
        ]


@contextlib.contextmanager
def serve(kinds: Iterable[str], *, shared: bool = False) -> Iterator[Functions]:
    """Start function servers for ``kinds`` on free local ports; stop them on exit.

    Args:
        kinds: The composite kinds to serve.
        shared: Serve every kind from one process (fast for test sessions) instead of
            one process per kind, as Crossplane runs them.
    """
    wanted = sorted(set(kinds))
    groups = [wanted] if shared else [[kind] for kind in wanted]
    procs: list[subprocess.Popen[bytes]] = []
    targets: dict[str, str] = {}
    try:
        ports = []
        for group in groups:
            port = free_port()
            cmd = [sys.executable, "-m", "modelplane", *[k.lower() for k in group]]
            cmd += ["--insecure", "--address", f"127.0.0.1:{port}"]
            procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
            ports.append(port)
        # Start every server first, then wait: they boot in parallel.
        for group, port, proc in zip(groups, ports, procs, strict=True):
            _wait_listening(port, proc)
            targets.update(dict.fromkeys(group, f"127.0.0.1:{port}"))
        yield Functions(targets)
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def _dump(path: Path, docs: Iterable[Mapping[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump_all([dict(d) for d in docs], sort_keys=True))
    return path


def render(
    xr: Mapping[str, Any],
    functions: Functions,
    *,
    required: Sequence[Mapping[str, Any]] = (),
    observed: Sequence[Mapping[str, Any]] = (),
    include_results: bool = True,
    timeout: str = "1m",
) -> list[Doc]:
    """Render one composite with ``crossplane render`` and return its output documents.

    Raises:
        RenderError: crank is missing or failed; the message carries its stderr.
    """
    if not CRANK.exists():
        msg = f"{CRANK.relative_to(ROOT)} is missing: run `make tools`"
        raise RenderError(msg)
    with tempfile.TemporaryDirectory(prefix="modelplane-render-") as tmp:
        work = Path(tmp)
        cmd = [
            str(CRANK),
            "render",
            str(_dump(work / "xr.yaml", [xr])),
            str(composition_for(str(xr["kind"]))),
            str(_dump(work / "functions.yaml", functions.manifests())),
            f"--timeout={timeout}",
        ]
        if required:
            cmd.append(f"--required-resources={_dump(work / 'required.yaml', required)}")
        if observed:
            cmd.append(f"--observed-resources={_dump(work / 'observed.yaml', observed)}")
        if include_results:
            cmd.append("--include-function-results")
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        name = (xr.get("metadata") or {}).get("name", "?")
        msg = f"crossplane render {xr.get('kind')}/{name} failed: {done.stderr.strip()}"
        raise RenderError(msg)
    return [d for d in yaml.safe_load_all(done.stdout) if isinstance(d, dict)]


@dataclass
class Rendered:
    """One composite's render: its output documents, or why it failed."""

    xr: Doc
    docs: list[Doc]
    error: RenderError | None = None
    composed_by: str | None = None  # "Kind namespace/name" of the composite that composed it


def describe(doc: Mapping[str, Any]) -> str:
    """Return ``Kind namespace/name`` (or ``Kind name`` when cluster-scoped)."""
    meta = doc.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{doc.get('kind')} {where}{meta.get('name')}"


def render_path(path: Path, *, shared: bool = False, depth: int = 0) -> list[Rendered]:
    """Render every composite found at ``path`` (see the module docstring).

    Args:
        path: An example file or folder.
        shared: Serve every kind from one process.
        depth: Also render the Modelplane composites that rendered composites compose
            (a ModelDeployment's ModelReplicas, say), this many levels down.

    Returns:
        One render per composite, inputs first in file order, then what they composed:
        one composite that fails to render doesn't hide the others.
    """
    inputs = load_documents(path)
    base = path if path.is_dir() else path.parent
    fleet = _load_tree(base / "fleet")
    observed = _load_tree(base / "observed")
    required = overlay(inputs, fleet)
    queue: list[tuple[Doc, str | None]] = [(xr, None) for xr in inputs if _renderable(xr)]
    kinds = set(registry.COMPOSERS) if depth else {str(xr["kind"]) for xr, _ in queue}
    results: list[Rendered] = []
    with serve(kinds, shared=shared) as functions:
        for level in range(depth + 1):
            composed: list[tuple[Doc, str | None]] = []
            for xr, parent in queue:
                try:
                    docs = render(
                        xr, functions, required=required, observed=observed if level == 0 else ()
                    )
                except RenderError as err:
                    results.append(Rendered(xr, [], err, parent))
                    continue
                results.append(Rendered(xr, docs, None, parent))
                composed += [(d, describe(xr)) for d in docs[1:] if _renderable(d)]
            queue = composed
    return results


def _renderable(doc: Mapping[str, Any]) -> bool:
    return is_composite(doc) and doc.get("kind") in registry.COMPOSERS


def _load_tree(folder: Path) -> list[Doc]:
    return [d for f in sorted(folder.rglob("*.yaml")) for d in load_documents(f)]


def _skipped(path: Path) -> list[str]:
    docs = load_documents(path)
    kinds = {str(d.get("kind")) for d in docs if is_composite(d)}
    return sorted(kinds - set(registry.COMPOSERS))


def main(argv: Sequence[str] | None = None) -> int:
    """Render each PATH and print the YAML crank produced."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="+", type=Path, help="example files or folders")
    parser.add_argument(
        "--depth",
        type=int,
        default=1,
        help="also render the Modelplane composites the rendered ones compose, this many "
        "levels down (default 1: a ModelDeployment's ModelReplicas; 0: only PATH's)",
    )
    args = parser.parse_args(argv)
    failed = False
    for path in args.paths:
        if not path.exists():
            print(f"render: {path} does not exist", file=sys.stderr)
            return 2
        for kind in _skipped(path):
            print(f"# {path}: no function composes {kind} yet; not rendered", file=sys.stderr)
        try:
            rendered = render_path(path, depth=args.depth)
        except RenderError as err:  # the functions could not start
            print(f"render: {err}", file=sys.stderr)
            return 1
        for one in rendered:
            if one.error is not None:
                print(f"render: {one.error}", file=sys.stderr)
                failed = True
                continue
            origin = f"composed by {one.composed_by}" if one.composed_by else str(path)
            print(f"# ---- {describe(one.xr)} ({origin})")
            print(yaml.safe_dump_all(one.docs, sort_keys=False), end="")
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
