"""The runtime: serve Modelplane's composition functions over gRPC.

The public door of the ``modelplane-function`` server. It knows the registry (which
kind each function composes, and how to decode a request lazily), never an adapter.
A module per job:

- :mod:`~modelplane.runtime.command`: the command line (``modelplane-function``);
- :mod:`~modelplane.runtime.serving`: the gRPC server on its thread, stopped by signals;
- :mod:`~modelplane.runtime.services`: the FunctionRunner services and reflection;
- :mod:`~modelplane.runtime.runner`: composing in the serving process, on threads;
- :mod:`~modelplane.runtime.pool` and :mod:`~modelplane.runtime.worker`: composing in
  worker processes (``--workers N``), requests as bytes or memory files;
- :mod:`~modelplane.runtime.dispatch`: kind to composer, every failure a result;
- :mod:`~modelplane.runtime.verdicts`: the CEL verdict cache the workers share on disk;
- :mod:`~modelplane.runtime.tls`, :mod:`~modelplane.runtime.address`,
  :mod:`~modelplane.runtime.limits`, :mod:`~modelplane.runtime.errors`;
- :mod:`~modelplane.runtime.heap`: protobuf's runtime kept from handing the heap back
  mid-call (the SDK has no say over the allocator);
- :mod:`~modelplane.runtime.callstats`: opt-in call counts, which the loop benchmark reads
  through this door (``runtime.callstats``).

A ModelDeployment call's path to its composer, with workers (the default):
``pool.ComputePool.run`` (the gRPC handler: the request's bytes, undecoded) ->
``pool._Slot.send`` (a pipe, or a memory file) -> ``worker.Worker.serve`` ->
``worker.Worker.answer`` (``registry.decode_request``: the fleet stays encoded) ->
``dispatch.run`` -> ``registry.COMPOSERS["ModelDeployment"]``. In the serving process
(``--workers 1``): ``registry.decode_request`` (the deserializer) ->
``runner.FunctionRunner.RunFunction`` -> ``dispatch.run`` -> the composer.

The serving process of a pool only moves bytes: importing this door imports neither the
functions nor the CEL engine (``select`` reads the kinds from :mod:`modelplane.kinds`);
the names that compose (``run``, ``FunctionRunner``, the dispatch helpers) are imported
when first used.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from modelplane.runtime import callstats
from modelplane.runtime.command import cli, default_workers, select
from modelplane.runtime.errors import CrashLoopError, PoolError, StartupError
from modelplane.runtime.limits import KUBERNETES_MAX_JSON_DEPTH, allow_deep_messages
from modelplane.runtime.pool import WORKER_DIED_MESSAGE, ComputePool
from modelplane.runtime.protocol import DEADLINE_MESSAGE, SHARED_REQUEST_BYTES, deadline_of
from modelplane.runtime.services import add_function_runner, add_services
from modelplane.runtime.serving import serve, serve_workers
from modelplane.runtime.tls import load_credentials
from modelplane.runtime.verdicts import DiskVerdicts, private_folder

if TYPE_CHECKING:
    from modelplane.runtime.dispatch import (
        failed_in,
        identify,
        invalid_message,
        run,
        serialize_response,
    )
    from modelplane.runtime.runner import FunctionRunner

_COMPOSING = {
    "FunctionRunner": "modelplane.runtime.runner",
    "failed_in": "modelplane.runtime.dispatch",
    "identify": "modelplane.runtime.dispatch",
    "invalid_message": "modelplane.runtime.dispatch",
    "run": "modelplane.runtime.dispatch",
    "serialize_response": "modelplane.runtime.dispatch",
}
"""The door's names that import the functions, each imported when first asked for."""


def __getattr__(name: str) -> Any:
    module = _COMPOSING.get(name)
    if module is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(import_module(module), name)


__all__ = [
    "DEADLINE_MESSAGE",
    "KUBERNETES_MAX_JSON_DEPTH",
    "SHARED_REQUEST_BYTES",
    "WORKER_DIED_MESSAGE",
    "ComputePool",
    "CrashLoopError",
    "DiskVerdicts",
    "FunctionRunner",
    "PoolError",
    "StartupError",
    "add_function_runner",
    "add_services",
    "allow_deep_messages",
    "callstats",
    "cli",
    "deadline_of",
    "default_workers",
    "failed_in",
    "identify",
    "invalid_message",
    "load_credentials",
    "private_folder",
    "run",
    "select",
    "serialize_response",
    "serve",
    "serve_workers",
]
