"""The kit's old path, for ModelDeployment's adapter and the runtime until they move to
:mod:`modelplane.kit`.  # removed at merge

Everything is :mod:`modelplane.kit`'s, plus the old protocol's ``composer`` and
``release_all`` in terms of the new one: an adapter that returns None releases what it
leaves out once it composes anything, everything after :func:`release_all`, and nothing
when its answer is empty (the old empty-answer guard, unchanged).
"""  # removed at merge

from __future__ import annotations  # removed at merge

import contextvars  # removed at merge
import functools  # removed at merge
from collections.abc import Callable  # removed at merge

from crossplane.function.proto.v1 import run_function_pb2 as fnv1  # removed at merge

from modelplane.kit import *  # noqa: F403  # removed at merge
from modelplane.kit import Compose, Released  # removed at merge
from modelplane.kit import composer as _composer  # removed at merge
from modelplane.kit.request import ref as _ref  # noqa: F401  # removed at merge

_RELEASING: contextvars.ContextVar[bool] = contextvars.ContextVar("releasing", default=False)


def release_all() -> None:  # removed at merge
    """Declare that this call deliberately composes nothing of what exists."""
    _RELEASING.set(True)


def composer(  # removed at merge
    fn: Callable[[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse], None],
) -> Compose:
    """Serve an adapter written to the old protocol (returns None) through the new one."""

    @functools.wraps(fn)
    def adapter(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> Released:
        return contextvars.copy_context().run(_legacy, fn, req, rsp)

    return _composer(adapter)


def _legacy(  # removed at merge
    fn: Callable[[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse], None],
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
) -> Released:
    _RELEASING.set(False)
    fn(req, rsp)
    if _RELEASING.get():
        return Released.everything("release_all()")
    if not rsp.desired.resources:
        return Released.NOTHING
    left_out = (k for k in req.observed.resources if k not in rsp.desired.resources)
    return Released.of(left_out, "the old protocol: what a non-empty answer leaves out")
