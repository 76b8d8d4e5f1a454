"""The gRPC services a server offers: the FunctionRunner (v1 and v1beta1) and reflection.

The same services as the SDK's ``runtime.serve`` (its ``SERVICE_NAMES``, its
``BetaFunctionRunner``), registered by hand for what the generated registration cannot
do: decode v1 requests with ``registry.decode_request`` (a ModelDeployment's fleet stays
encoded until it is read), write every response deterministically (the same bytes from
any process), and, for a worker pool, pass bytes through undecoded.
"""

from __future__ import annotations

from typing import Any

import grpc
from crossplane.function import runtime
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from crossplane.function.proto.v1beta1 import run_function_pb2 as fnv1beta1
from grpc_reflection.v1alpha import reflection

from modelplane.runtime.pool import ComputePool

V1, V1BETA1 = (
    d.services_by_name["FunctionRunnerService"].full_name
    for d in (fnv1.DESCRIPTOR, fnv1beta1.DESCRIPTOR)
)

Runner = grpcv1.FunctionRunnerServiceServicer | ComputePool
"""What serves the calls: a servicer composing in this process, or a pool of worker
processes the calls' bytes are handed to."""


def add_services(grpc_server: grpc.aio.Server, runner: Runner) -> None:
    """Offer ``runner`` as both FunctionRunner versions, and reflection, on ``grpc_server``."""
    if isinstance(runner, ComputePool):
        # Bytes in, bytes out: v1 and v1beta1 messages are the same on the wire.
        raw = grpc.unary_unary_rpc_method_handler(runner.run)
        for service in (V1, V1BETA1):
            _add(grpc_server, service, raw)
    else:
        from modelplane.runtime.dispatch import serialize_response  # noqa: PLC0415  # composes here

        add_function_runner(runner, grpc_server)
        beta = runtime.BetaFunctionRunner(wrapped=runner)
        handler = grpc.unary_unary_rpc_method_handler(
            beta.RunFunction,
            request_deserializer=fnv1beta1.RunFunctionRequest.FromString,
            response_serializer=serialize_response,  # like v1's
        )
        _add(grpc_server, V1BETA1, handler)
    reflection.enable_server_reflection(runtime.SERVICE_NAMES, grpc_server)


def add_function_runner(servicer: Any, server: Any) -> None:
    """Register a v1 FunctionRunnerService as the SDK's generated code does, decoding
    requests with ``registry.decode_request`` (a drop-in for
    ``add_FunctionRunnerServiceServicer_to_server``, for a sync or an asyncio server)."""
    from modelplane import registry  # noqa: PLC0415  # a pool's serving process never decodes
    from modelplane.runtime.dispatch import serialize_response  # noqa: PLC0415

    handler = grpc.unary_unary_rpc_method_handler(
        servicer.RunFunction,
        request_deserializer=registry.decode_request,
        response_serializer=serialize_response,  # the same bytes in every process
    )
    _add(server, V1, handler)
    server.add_registered_method_handlers(V1, {"RunFunction": handler})


def _add(server: Any, service: str, handler: grpc.RpcMethodHandler) -> None:
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service, {"RunFunction": handler}),)
    )
