"""The domain stays pure: no gRPC, protobuf, Crossplane SDK or generated models in it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

DOMAIN = Path(__file__).resolve().parents[1] / "functions" / "modelplane" / "domain"
FORBIDDEN = (
    "grpc",
    "google.protobuf",
    "crossplane",
    "modelplane.models",
    "modelplane.compose",
    "yaml",
)


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


MODULES = sorted(DOMAIN.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(DOMAIN)) for p in MODULES])
def test_domain_module_imports_nothing_impure(path: Path) -> None:
    bad = [n for n in _imports(path) if any(n == f or n.startswith(f + ".") for f in FORBIDDEN)]
    assert bad == [], f"{path.name} imports {bad}"
