"""Run every ``benches/bench_*.py`` module's ``main()`` in name order."""

from __future__ import annotations

import importlib
import pkgutil

import benches


def run() -> None:
    names = sorted(
        m.name for m in pkgutil.iter_modules(benches.__path__) if m.name.startswith("bench_")
    )
    for name in names:
        print(f"== {name}")
        importlib.import_module(f"benches.{name}").main()


if __name__ == "__main__":
    run()
