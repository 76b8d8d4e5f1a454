"""Print the import graph by layer: modules per layer, imports between layers, and any
import that runs upward (from a lower layer to a higher one).

Usage: python tools/layers/graph.py [ROOT]   (ROOT: the checkout, default: this one)

The layers are the ones `make lint`'s import contracts enforce (pyproject.toml,
[tool.importlinter]); this prints the picture those contracts keep.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import grimp

# Lowest first. A module belongs to the first layer whose prefix it starts with.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("domain", ("modelplane.domain",)),
    ("models (generated)", ("modelplane.models",)),
    ("kit", ("modelplane.kit", "modelplane.compose._kit")),
    ("planning", ("modelplane.planning", "modelplane.compose.model_deployment.")),
    ("adapters", ("modelplane.compose",)),
    ("registry", ("modelplane.registry", "modelplane.kinds")),
    ("runtime", ("modelplane.runtime", "modelplane.server", "modelplane.main")),
    (
        "edges",
        (
            "modelplane.cli",
            "modelplane.cli_output",
            "modelplane.simulate",
            "modelplane.dev",
            "modelplane.dra",
            "benches",
        ),
    ),
    ("package", ("modelplane",)),
)
# Where the layers lived before the package had a door per layer (for the "before" graph).
LEGACY = (
    "modelplane.compose._kit",
    "modelplane.compose.model_deployment.",
    "modelplane.server",
    "modelplane.main",
)
RANK = {name: rank for rank, (name, _) in enumerate(LAYERS)}


def layer_of(module: str) -> str:
    """The layer a module belongs to (the ModelDeployment package's internals count as
    planning: that is what they were before `modelplane.planning` held them)."""
    for name, prefixes in LAYERS:
        for prefix in prefixes:
            if module == prefix.rstrip(".") and prefix.endswith("."):
                continue  # the package itself is the adapter
            if module == prefix or module.startswith(prefix.rstrip(".") + "."):
                return name
    return "package"


def main(root: Path) -> None:
    sys.path[:0] = [str(root / "functions"), str(root)]
    graph = grimp.build_graph("modelplane", "benches", cache_dir=None)
    if "modelplane.planning" in graph.modules:  # today's layout: the old homes are gone
        global LAYERS  # noqa: PLW0603
        LAYERS = tuple((n, tuple(p for p in ps if p not in LEGACY)) for n, ps in LAYERS)
    per_layer = Counter(layer_of(m) for m in graph.modules)
    between: Counter[tuple[str, str]] = Counter()
    upward: list[str] = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            a, b = layer_of(importer), layer_of(imported)
            if a == b:
                continue
            between[(a, b)] += 1
            if RANK[a] < RANK[b] and a != "package" and b != "package":
                upward.append(f"  {importer} -> {imported}")
    print("modules per layer:")
    for name, _ in LAYERS:
        print(f"  {name:20} {per_layer[name]}")
    print("imports between layers (importer -> imported: count):")
    for (a, b), count in sorted(between.items(), key=lambda kv: (RANK[kv[0][0]], RANK[kv[0][1]])):
        print(f"  {a:20} -> {b:20} {count}")
    print(f"upward imports: {len(upward)}")
    print("\n".join(upward))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
