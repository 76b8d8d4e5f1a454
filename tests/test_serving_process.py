"""The serving process of a worker pool only moves bytes: it never imports the functions.

It reads the kinds it serves from ``modelplane.kinds`` and names what it says to its
workers from ``runtime.protocol``; the functions (the registry, planning, the CEL engine,
pydantic's models) load in the fork server and its workers alone. The runtime's door
still gives every name it did, those that compose imported when first asked for.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from modelplane import kinds, registry, runtime
from modelplane.runtime import dispatch, runner

COMPOSING = ["modelplane.registry", "modelplane.planning", "modelplane.domain.dra", "pydantic"]


def test_the_serving_process_of_a_pool_imports_no_function() -> None:
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from modelplane import runtime\n"
        "from modelplane.runtime import serving, services\n"
        "served = runtime.select(('modeldeployment',))\n"
        "pool = runtime.ComputePool(served, 2, verdicts=Path('.'), debug=False)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('modelplane', 'pydantic')))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    loaded = set(json.loads(out.stdout))
    assert "modelplane.runtime.pool" in loaded
    assert not loaded & {*COMPOSING, "modelplane.runtime.worker", "modelplane.runtime.dispatch"}


def test_the_door_gives_the_composing_names_when_asked() -> None:
    assert runtime.run is dispatch.run
    assert runtime.FunctionRunner is runner.FunctionRunner
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = runtime.no_such_name


def test_the_kinds_the_command_line_knows_are_the_registry_s() -> None:
    assert sorted(kinds.KINDS) == sorted(registry.COMPOSERS)
    assert runtime.select(()) == sorted(registry.COMPOSERS)
    assert kinds.names() == registry.names()
