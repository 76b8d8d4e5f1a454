"""The import map is a contract: `make lint` runs import-linter with the contracts in
pyproject.toml. Each contract is shown to bite: one import planted against it, in a copy
of the package, breaks exactly that contract; the copy without the plant keeps them all."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# contract id -> (the module a plant goes in, relative to the checkout; the import planted)
PLANTS: dict[str, tuple[str, str]] = {
    "domain-pure": ("functions/modelplane/domain/text.py", "import modelplane.kit"),
    "private-stays-private": (
        "functions/modelplane/simulate/table.py",
        "import modelplane.domain.dra._parser",
    ),
    "kit-below-adapters": (
        "functions/modelplane/kit/__init__.py",
        "import modelplane.compose.model_cache",
    ),
    "planning-below-adapters": (
        "functions/modelplane/planning/__init__.py",
        "import modelplane.registry",
    ),
    "adapters-independent": (
        "functions/modelplane/compose/model_cache.py",
        "import modelplane.compose.model_endpoint",
    ),
    "adapters-below-registry": (
        "functions/modelplane/compose/model_cache.py",
        "import modelplane.registry",
    ),
    "runtime-knows-registry": (
        "functions/modelplane/runtime/__init__.py",
        "import modelplane.compose.model_cache",
    ),
    "edges-use-doors": ("functions/modelplane/cli.py", "import modelplane.compose.model_cache"),
    "runtime-door": ("benches/bench_cel.py", "import modelplane.runtime.callstats"),
    "planning-door": ("benches/bench_cel.py", "import modelplane.planning.fleet"),
}


def _copy(tmp: Path) -> Path:
    """A copy of what import-linter reads: the package, the benches, the configuration."""
    shutil.copytree(
        ROOT / "functions" / "modelplane",
        tmp / "functions" / "modelplane",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copytree(ROOT / "benches", tmp / "benches", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp / "pyproject.toml")
    return tmp


def _lint_imports(checkout: Path, *contract: str) -> subprocess.CompletedProcess[str]:
    """Run import-linter on a checkout: every contract, or the one named."""
    env = {
        "PYTHONPATH": f"{checkout / 'functions'}:{checkout}",
        "PATH": "/usr/bin:/bin",
        "COLUMNS": "1000",  # one line per contract in its report
    }
    only = ["--contract", contract[0]] if contract else []
    return subprocess.run(
        [str(LINT_IMPORTS), str(checkout / "pyproject.toml"), "--no-cache", *only],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def test_every_contract_has_a_plant() -> None:
    import tomllib  # noqa: PLC0415

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert {c["id"] for c in config["tool"]["importlinter"]["contracts"]} == set(PLANTS)


def test_the_package_as_it_is_keeps_every_contract(tmp_path: Path) -> None:
    done = _lint_imports(_copy(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(PLANTS)} kept, 0 broken." in done.stdout, done.stdout


@pytest.mark.parametrize("contract_id", sorted(PLANTS))
def test_a_planted_import_breaks_its_contract(tmp_path: Path, contract_id: str) -> None:
    checkout = _copy(tmp_path)
    module, planted = PLANTS[contract_id]
    target = checkout / module
    assert target.exists(), f"the plant's module {module} is gone: choose another"
    target.write_text(target.read_text() + f"\n{planted}  # planted by the test\n")
    done = _lint_imports(checkout, contract_id)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Contracts: 0 kept, 1 broken." in done.stdout, done.stdout
    planted_module = module.removeprefix("functions/").removesuffix(".py").replace("/", ".")
    assert planted_module.removesuffix(".__init__") in done.stdout, done.stdout


def test_the_independence_contract_lists_every_adapter_the_registry_serves() -> None:
    import tomllib  # noqa: PLC0415

    from modelplane import registry  # noqa: PLC0415

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (listed,) = [
        c["modules"]
        for c in config["tool"]["importlinter"]["contracts"]
        if c["id"] == "adapters-independent"
    ]
    assert sorted(listed) == sorted(fn.__module__ for fn in registry.COMPOSERS.values())
