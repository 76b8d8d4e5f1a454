"""Dispatch: find the composite's kind in the registry and run its function.

Every failure becomes a result, never a crash, and no result carries a Python
exception's text: a request the models reject is a Fatal result that names the object
and each bad field; anything else unexpected is a Fatal result that names the composite
and where the function failed, with the traceback in the function's log.

A call with a budget (its client's deadline) stops at the next safe point once the
budget is spent: before and after composing, and at every selector evaluation loop (see
``modelplane.domain.dra.call_deadline``); the server answers DEADLINE_EXCEEDED.
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Any

import pydantic
from crossplane.function import logging, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2 as structpb

from modelplane.domain import dra as cel

# The runtime's only names from the kit (one block, so the kit can move under it).
from modelplane.kit import is_fatal, summarize
from modelplane.registry import Compose
from modelplane.runtime.protocol import DEADLINE_MESSAGE, deadline_of

__all__ = [
    "DEADLINE_MESSAGE",
    "deadline_of",
    "failed_in",
    "identify",
    "invalid_message",
    "is_fatal",
    "run",
    "serialize_response",
]


_RECURSION_FRAMES = 12


def run(
    req: fnv1.RunFunctionRequest,
    composers: Mapping[str, Compose],
    log: Any = None,
    budget: cel.CallBudget | None = None,
) -> fnv1.RunFunctionResponse:
    """Compose one request synchronously; every failure becomes a result, never a crash.

    Raises:
        cel.Cancelled: ``budget`` is spent (checked before and after composing); the
            answer would reach nobody.
    """
    with _within(budget):
        rsp = response.to(req)
        kind, ref = identify(req.observed.composite.resource)
        logger = (log or logging.get_logger()).bind(tag=req.meta.tag, kind=kind, name=ref)
        compose = composers.get(kind)
        if compose is None:
            served = ", ".join(sorted(composers)) or "nothing"
            what = kind or "an unnamed kind"
            response.fatal(rsp, f"this function does not compose {what}; it serves {served}")
            return rsp
        try:
            compose(req, rsp)
        except Exception as exc:  # a bug must surface as a fatal result, not a dropped request
            return _fatal(req, _explain(exc, kind, ref, logger))
        logger.debug("composed", resources=len(rsp.desired.resources))
        return rsp


@contextlib.contextmanager
def _within(budget: cel.CallBudget | None) -> Iterator[None]:
    """Run the block under ``budget`` (None: the caller's, unchecked), checked on the way
    in and out."""
    if budget is None:
        yield
        return
    with cel.call_deadline(budget):
        cel.check_call_deadline()
        yield
        cel.check_call_deadline()


def _explain(exc: Exception, kind: str, ref: str, logger: Any) -> str:
    """Log a failed composition (inside its ``except``) and say what failed, never how."""
    if isinstance(exc, pydantic.ValidationError):
        # The API server enforces the XRD's schema, so this is a request from an older
        # or hand-built client; say exactly which fields are wrong.
        logger.info("invalid input", error=summarize(exc))
        return invalid_message(kind, ref, exc)
    where = failed_in(exc.__traceback__)
    at = f" (in {where})" if where else ""
    if isinstance(exc, RecursionError):
        # Thousands of frames of the same few functions: the innermost say enough.
        tail = traceback.format_exc(limit=-_RECURSION_FRAMES)
        logger.error("compose failed: the request nests too deeply", traceback=tail)
        return f"cannot compose {kind} {ref}: the request nests too deeply to read{at}"
    logger.error("compose failed", error=repr(exc), traceback=traceback.format_exc())
    return (
        f"internal error while composing {kind} {ref}{at}; nothing was changed, "
        "the function's log has the details"
    )


def _fatal(req: fnv1.RunFunctionRequest, message: str) -> fnv1.RunFunctionResponse:
    """A fresh response (no half-written desired state) with one Fatal result."""
    failed = response.to(req)
    response.fatal(failed, message)
    return failed


def identify(xr: structpb.Struct) -> tuple[str, str]:
    """Return the composite's kind and ``namespace/name`` (or ``name``), whatever its shape.

    A field that is missing or of the wrong type reads as empty; no name reads as
    ``(unnamed)``. It reads the two fields in place: the SDK's ``resource.struct_to_dict``
    would copy the whole composite to name it.
    """
    fields: Any = xr.fields
    kind = fields["kind"].string_value if "kind" in fields else ""
    meta: Any = fields["metadata"].struct_value.fields if "metadata" in fields else {}
    name = meta["name"].string_value if "name" in meta else ""
    namespace = meta["namespace"].string_value if "namespace" in meta else ""
    ref = name or "(unnamed)"
    return kind, f"{namespace}/{ref}" if namespace else ref


def invalid_message(kind: str, ref: str, exc: pydantic.ValidationError) -> str:
    """Say which object failed validation and each bad field, in one line.

    The models validate the composite and, in some functions, the objects it requires;
    a model of another kind than the composite's is named as such.
    """
    title = str(exc.title)
    what = f"{kind} {ref}" if title in (kind, "") else f"{title} required by {kind} {ref}"
    return f"invalid {what}: {summarize(exc)}"


def failed_in(tb: TracebackType | None) -> str:
    """Name the innermost Modelplane function a traceback passes through.

    That is where the function failed (an exception raised inside a library is named by
    the Modelplane code that called it); never the exception's own text. Empty when no
    Modelplane code is on the traceback.
    """
    where = ""
    for frame, _ in traceback.walk_tb(tb):
        module = str(frame.f_globals.get("__name__", ""))
        if module.startswith("modelplane.") and module != __name__:
            where = f"{module}.{frame.f_code.co_name}"
    return where


def serialize_response(rsp: Any) -> bytes:
    """A response's bytes, the same for the same response in every process.

    Protobuf writes map entries (every Struct's fields) in its hash tables' order unless
    asked for deterministic output, so the same response differed in bytes, not in
    meaning, across restarts; sorted, it is byte for byte the same.
    """
    return bytes(rsp.SerializeToString(deterministic=True))
