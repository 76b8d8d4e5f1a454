# removed at merge: a temporary shim (see the docstring).
"""The kit's old path, for ModelDeployment's adapter and the runtime until they move to
:mod:`modelplane.kit` (removed at merge).

Everything is :mod:`modelplane.kit`'s, plus the old protocol's ``composer`` and
``release_all`` in terms of the new one: an adapter that returns None releases what it
leaves out once it composes anything, everything after :func:`release_all`, and nothing
when its answer is empty (the old empty-answer guard, unchanged).
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.kit import Compose, Released, left_out, struct_to_dict, summarize

__all__ = ["Compose", "Released", "composer", "release_all", "struct_to_dict", "summarize"]


def __getattr__(name: str) -> Any:
    """Every other name is the kit's, under its old path."""
    return getattr(kit, name)


_RELEASING: contextvars.ContextVar[bool] = contextvars.ContextVar("releasing", default=False)


def release_all() -> None:
    """Declare that this call deliberately composes nothing of what exists."""
    _RELEASING.set(True)


def composer(
    fn: Callable[[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse], None],
) -> Compose:
    """Serve an adapter written to the old protocol (returns None) through the new one."""

    @functools.wraps(fn)
    def adapter(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> Released:
        return contextvars.copy_context().run(_legacy, fn, req, rsp)

    return kit.composer(adapter)


def _legacy(
    fn: Callable[[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse], None],
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
) -> Released:
    _RELEASING.set(False)
    fn(req, rsp)
    if _RELEASING.get():
        return Released.everything("release_all()")
    return left_out(req, rsp, "the old protocol: what a non-empty answer leaves out")
