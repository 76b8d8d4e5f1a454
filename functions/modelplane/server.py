"""The gRPC FunctionRunner: find the composite's kind in the registry and run its function.

Every failure becomes a result, never a crash, and no result carries a Python
exception's text: a request the models reject is a Fatal result that names the object
and each bad field; anything else unexpected is a Fatal result that names the composite
and where the function failed, with the traceback in the function's log.
"""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import grpc
import pydantic
from crossplane.function import logging, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from google.protobuf import struct_pb2 as structpb
from google.protobuf.internal import api_implementation

from modelplane import registry
from modelplane.compose import _kit as kit
from modelplane.compose._kit import Compose

KUBERNETES_MAX_JSON_DEPTH = 10_000
"""How deeply Kubernetes lets a JSON document nest: ``maxDepth`` of
k8s.io/apimachinery/pkg/util/json and ``maxNestingDepth`` of sigs.k8s.io/json, which the
API server decodes with. Every object a request carries is at most this deep."""

MESSAGES_PER_JSON_LEVEL = 3
"""A JSON level is three protobuf messages in a Struct: the Struct, its map entry, the Value."""

UPB_MAX_DEPTH = 65_535
"""The message depth the upb runtime decodes once oversize messages are allowed (its
default is 100, some 32 JSON levels): a Kubernetes object at its deepest fits."""

_RECURSION_FRAMES = 12


def allow_deep_messages() -> None:
    """Let protobuf decode requests as deeply nested as Kubernetes objects can be.

    The limit is process-wide. Decoding recurses on the C stack, about 250 bytes a
    message: a thread that decodes the deepest request needs some 16 MiB of stack, which
    is why ``modelplane-function`` serves from a thread with a large one.
    """
    backend = api_implementation.Type()
    if backend in ("upb", "cpp"):
        module = "google._upb._message" if backend == "upb" else "google.protobuf.pyext._message"
        importlib.import_module(module).SetAllowOversizeProtos(True)
        return
    from google.protobuf.internal import decoder  # noqa: PLC0415  # the pure-Python backend only

    decoder.SetRecursionLimit(UPB_MAX_DEPTH)


class FunctionRunner(grpcv1.FunctionRunnerServiceServicer):
    """Serves the composition functions of one or more Modelplane kinds.

    Every kind runs the same image; a Function package decides which kinds its pods
    accept, so one kind's load never slows another's.
    """

    def __init__(self, composers: Mapping[str, Compose] | None = None) -> None:
        """Create a runner for the given kinds (default: every registered kind)."""
        self.composers = dict(registry.COMPOSERS if composers is None else composers)
        self.log = logging.get_logger()

    async def RunFunction(  # noqa: N802  # the gRPC method name
        self, req: fnv1.RunFunctionRequest, _: grpc.aio.ServicerContext | None
    ) -> fnv1.RunFunctionResponse:
        """Run the function for the request's composite kind."""
        return run(req, self.composers, self.log)


def run(
    req: fnv1.RunFunctionRequest,
    composers: Mapping[str, Compose],
    log: Any = None,
) -> fnv1.RunFunctionResponse:
    """Dispatch one request synchronously; every failure becomes a result, never a crash."""
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
    except pydantic.ValidationError as exc:
        # The API server enforces the XRD's schema, so this is a request from an older
        # or hand-built client; say exactly which fields are wrong.
        logger.info("invalid input", error=kit.summarize(exc))
        return _fatal(req, invalid_message(kind, ref, exc))
    except RecursionError as exc:
        # Thousands of frames of the same few functions: the innermost say enough.
        tail = traceback.format_exc(limit=-_RECURSION_FRAMES)
        logger.error("compose failed: the request nests too deeply", traceback=tail)
        where = failed_in(exc.__traceback__)
        at = f" (in {where})" if where else ""
        return _fatal(req, f"cannot compose {kind} {ref}: the request nests too deeply to read{at}")
    except Exception as exc:  # a bug must surface as a fatal result, not a dropped request
        logger.error("compose failed", error=repr(exc), traceback=traceback.format_exc())
        where = failed_in(exc.__traceback__)
        at = f" (in {where})" if where else ""
        return _fatal(
            req,
            f"internal error while composing {kind} {ref}{at}; nothing was changed, "
            "the function's log has the details",
        )
    logger.debug("composed", resources=len(rsp.desired.resources))
    return rsp


def _fatal(req: fnv1.RunFunctionRequest, message: str) -> fnv1.RunFunctionResponse:
    """A fresh response (no half-written desired state) with one Fatal result."""
    failed = response.to(req)
    response.fatal(failed, message)
    return failed


def identify(xr: structpb.Struct) -> tuple[str, str]:
    """Return the composite's kind and ``namespace/name`` (or ``name``), whatever its shape.

    A field that is missing or of the wrong type reads as empty; no name reads as
    ``(unnamed)``.
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
    return f"invalid {what}: {kit.summarize(exc)}"


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
