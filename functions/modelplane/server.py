"""The gRPC FunctionRunner: find the composite's kind in the registry and run its function."""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from typing import Any

import grpc
import pydantic
from crossplane.function import logging, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from google.protobuf import struct_pb2 as structpb

from modelplane import registry
from modelplane.compose._kit import Compose


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
    kind, name = _identify(req.observed.composite.resource)
    logger = (log or logging.get_logger()).bind(tag=req.meta.tag, kind=kind, name=name)
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
        failed = response.to(req)
        response.fatal(failed, f"invalid {kind} {name}: {_summarize(exc)}")
        return failed
    except Exception as exc:  # a bug must surface as a fatal result, not a dropped request
        logger.error("compose failed", error=str(exc), traceback=traceback.format_exc())
        failed = response.to(req)
        response.fatal(failed, f"internal error composing {kind} {name}: {exc}")
        return failed
    logger.debug("composed", resources=len(rsp.desired.resources))
    return rsp


def _identify(xr: structpb.Struct) -> tuple[str, str]:
    """Return the composite's kind and name, empty where the request lacks them."""
    kind = xr["kind"] if "kind" in xr else ""  # noqa: SIM401  # a Struct has no .get
    meta = xr["metadata"] if "metadata" in xr else structpb.Struct()
    return str(kind), str(meta["name"]) if "name" in meta else ""


def _summarize(exc: pydantic.ValidationError) -> str:
    """Return a validation error as one line: each bad field's path and what is wrong."""
    parts = []
    for error in exc.errors()[:5]:
        path = ".".join(str(p) for p in error["loc"])
        parts.append(f"{path}: {error['msg']}")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")
