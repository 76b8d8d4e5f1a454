"""Download the pinned Go modules of tools/e2e/modules.txt; record where they are.

Runs on the host (the stack's network namespace has no route out) before the stack
starts, and writes ``$E2E_STATE/modules.json``: module path -> directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIST = ROOT / "tools" / "e2e" / "modules.txt"


def pinned() -> list[tuple[str, str]]:
    out = []
    for raw in LIST.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            module, version = line.split()
            out.append((module, version))
    return out


def download() -> dict[str, str]:
    dirs = {}
    for module, version in pinned():
        done = subprocess.run(
            ["go", "mod", "download", "-json", f"{module}@{version}"],
            check=False,
            capture_output=True,
            text=True,
            cwd=ROOT / "tools" / "e2e",
        )
        info = json.loads(done.stdout or "{}")
        if done.returncode != 0 or "Dir" not in info:
            sys.exit(
                f"go mod download {module}@{version} failed: {info.get('Error') or done.stderr}"
            )
        dirs[module] = info["Dir"]
    return dirs


def load(state: Path | None = None) -> dict[str, Path]:
    """The module directories recorded by :func:`main`."""
    state = state or Path(os.environ.get("E2E_STATE", ROOT / "build" / "e2e"))
    return {k: Path(v) for k, v in json.loads((state / "modules.json").read_text()).items()}


def main() -> None:
    state = Path(os.environ.get("E2E_STATE", ROOT / "build" / "e2e"))
    state.mkdir(parents=True, exist_ok=True)
    (state / "modules.json").write_text(json.dumps(download(), indent=2) + "\n")


if __name__ == "__main__":
    main()
