"""The ``modelplane-function`` command: serve one or more Modelplane composition functions.

The flags follow the Crossplane function template so operators find what they expect
(the SDK has no command line of its own to reuse). With more than one worker this
process serves gRPC and only moves bytes: each call's request goes, undecoded, to the
least busy worker process, and its response comes back the same way
(:class:`~modelplane.runtime.pool.ComputePool`). So calls run in parallel even when
they share one connection, as all of a Crossplane pod's calls to a Function do
(processes sharing the port with SO_REUSEPORT would split connections, not calls).
A worker that dies is replaced; on SIGTERM the workers stop with the server; one whose
server dies is stopped by the kernel (PR_SET_PDEATHSIG): no orphans.

A startup failure (bad flag, unknown function, missing or unreadable certificates, an
address that cannot be bound) is one line on stderr and a non-zero exit; so is a crash
loop (the sixth worker death within a minute).
"""

from __future__ import annotations

import functools
import os
import re
import sys
from typing import TYPE_CHECKING

import click
from crossplane.function import logging

from modelplane import kinds
from modelplane.runtime import limits
from modelplane.runtime.address import listen_address, one_line
from modelplane.runtime.errors import CrashLoopError, StartupError
from modelplane.runtime.serving import serve, serve_workers
from modelplane.runtime.tls import load_credentials

if TYPE_CHECKING:  # imported when used: a pool's serving process never composes
    from modelplane.runtime.runner import FunctionRunner

# Fleet-scale requests (every InferenceCluster and ModelReplica of the fleet) run to
# tens of MiB; gRPC's default 4 MiB would reject them. Crossplane itself sends up to
# what the function accepts, so the function sets the ceiling.
DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024 * 1024


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("functions", nargs=-1)
@click.option("--debug", "-d", is_flag=True, help="Emit debug logs.")
@click.option(
    "--address",
    default="0.0.0.0:9443",
    show_default=True,
    help="Address at which to listen for gRPC connections.",
)
@click.option(
    "--tls-certs-dir",
    envvar="TLS_SERVER_CERTS_DIR",
    help="Serve using mTLS certificates (tls.crt, tls.key, ca.crt) from this directory.",
)
@click.option(
    "--insecure",
    is_flag=True,
    help="Run without mTLS credentials. If you supply this flag --tls-certs-dir is ignored.",
)
@click.option(
    "--max-message-size",
    type=click.IntRange(min=4 * 1024 * 1024),
    default=DEFAULT_MAX_MESSAGE_BYTES,
    show_default=True,
    help="Largest gRPC message, in bytes, the server receives or sends.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Processes serving calls in parallel on the one port "
    "(default: the CPUs this process may run on).",
)
def cli(
    functions: tuple[str, ...],
    debug: bool,
    address: str,
    tls_certs_dir: str | None,
    insecure: bool,
    max_message_size: int,
    workers: int | None,
) -> None:
    """Serve the named Modelplane functions (default: all of them).

    FUNCTIONS are kind names such as ``inferenceclass`` or ``modeldeployment``
    (a ``modelplane-function-`` prefix is accepted), or ``all``.
    """
    served = select(functions)
    logging.configure(logging.Level.DEBUG if debug else logging.Level.INFO)
    if not insecure and not tls_certs_dir:
        msg = "give --tls-certs-dir (or TLS_SERVER_CERTS_DIR) or --insecure"
        raise click.UsageError(msg)
    options = [
        ("grpc.max_receive_message_length", max_message_size),
        ("grpc.max_send_message_length", max_message_size),
    ]
    count = workers or default_workers()
    address = listen_address(address)
    started = functools.partial(log_start, address, tls=not insecure, workers=count, kinds=served)
    # Before any thread starts; the SDK's serve has no say over the allocator.
    limits.reuse_request_memory()
    try:
        creds = None if insecure else load_credentials(tls_certs_dir or "")
        if count == 1:
            serve(_in_process(served), address, creds=creds, options=options, started=started)
        else:
            serve_workers(
                served,
                address,
                creds=creds,
                options=options,
                workers=count,
                debug=debug,
                started=started,
            )
    except (StartupError, CrashLoopError) as exc:
        _die(str(exc))
    except Exception as exc:  # anything else still ends in one line, not a traceback
        _die(f"cannot serve on {address}: {one_line(str(exc)) or type(exc).__name__}")


def log_start(address: str, port: int, *, tls: bool, workers: int, kinds: list[str]) -> None:
    """Say, in one log line, where and how the server listens and what it composes."""
    logging.get_logger().info(
        "serving",
        address=re.sub(r":\d+$", f":{port}", address),  # the port bound, when asked for 0
        transport="mTLS" if tls else "insecure",
        workers=workers,
        kinds=kinds,
    )


def _die(message: str) -> None:
    click.echo(f"modelplane-function: {message}", err=True)
    sys.exit(1)


def default_workers() -> int:
    """The CPUs this process may run on (its affinity, which containers narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def select(functions: tuple[str, ...]) -> list[str]:
    """Resolve function names to the kinds to serve, sorted.

    Raises:
        click.BadParameter: a name that is no Modelplane function.
    """
    if not functions or "all" in functions:
        return sorted(kinds.KINDS)
    chosen = set()
    for name in functions:
        kind = kinds.kind_for(name)
        if kind is None:
            known = ", ".join(kinds.names())
            msg = f"unknown function {name!r}; known: {known}, all"
            raise click.BadParameter(msg, param_hint="FUNCTIONS")
        chosen.add(kind)
    return sorted(chosen)


def _in_process(served: list[str]) -> FunctionRunner:
    """A runner composing ``served`` in this process (``--workers 1``): the one case where
    the serving process imports the functions."""
    from modelplane import registry  # noqa: PLC0415
    from modelplane.runtime.runner import FunctionRunner  # noqa: PLC0415

    return FunctionRunner({kind: registry.COMPOSERS[kind] for kind in served})
