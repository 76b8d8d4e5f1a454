"""The composite kinds under ``apis/`` (each XRD and its Composition), the functions their
pipelines call, and what the loop's process needs to send them deep objects."""

from __future__ import annotations

import contextlib
import functools
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml
from google.protobuf.internal import api_implementation

from modelplane import runtime
from modelplane.dev.fakes.base import Obj

ROOT = Path(__file__).resolve().parents[4]
APIS = ROOT / "apis"
EXAMPLES = ROOT / "examples"


@contextlib.contextmanager
def deep_messages() -> Iterator[None]:
    """Let this process's protobuf carry objects as deeply nested as the API server admits.

    The engine's request and response hold objects of the store; one user's deeply
    nested object must reach the functions, as it would in a cluster. The setting is
    process-wide: it is restored afterwards, so other tests see protobuf's default.
    """
    backend = api_implementation.Type()
    if backend not in ("upb", "cpp"):
        runtime.allow_deep_messages()
        yield
        return
    module = "google._upb._message" if backend == "upb" else "google.protobuf.pyext._message"
    setting = importlib.import_module(module)
    setting.SetAllowOversizeProtos(True)
    try:
        yield
    finally:
        setting.SetAllowOversizeProtos(False)


@dataclass(frozen=True)
class Api:
    """One composite kind: its XRD and its Composition."""

    kind: str
    xrd: Obj
    composition: Obj

    def function_names(self) -> list[str]:
        """Return the functions its Composition's pipeline calls."""
        steps = (self.composition.get("spec") or {}).get("pipeline") or []
        return [str(s["functionRef"]["name"]) for s in steps]


@functools.cache
def apis() -> dict[str, Api]:
    """Return every composite kind under ``apis/``, by kind."""
    found: dict[str, Api] = {}
    for definition in sorted(APIS.glob("*/definition.yaml")):
        xrd = yaml.safe_load(definition.read_text())
        composition = yaml.safe_load(definition.with_name("composition.yaml").read_text())
        kind = str(xrd["spec"]["names"]["kind"])
        found[kind] = Api(kind, xrd, composition)
    return found


def function_targets(address: str) -> dict[str, str]:
    """Return every function the Compositions call, each served at ``address``."""
    return {name: address for api in apis().values() for name in api.function_names()}
