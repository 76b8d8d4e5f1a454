"""The ``modelplane-function`` command: serve one or more Modelplane composition functions.

The flags follow the Crossplane function template so operators find what they expect.
A startup failure (bad flag, unknown function, unreadable certificates) exits non-zero.
"""

from __future__ import annotations

import sys

import click
from crossplane.function import logging, runtime

from modelplane import registry
from modelplane.server import FunctionRunner

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
def cli(
    functions: tuple[str, ...],
    debug: bool,
    address: str,
    tls_certs_dir: str | None,
    insecure: bool,
    max_message_size: int,
) -> None:
    """Serve the named Modelplane functions (default: all of them).

    FUNCTIONS are kind names such as ``inferenceclass`` or ``modeldeployment``
    (a ``modelplane-function-`` prefix is accepted), or ``all``.
    """
    composers = select(functions)
    logging.configure(logging.Level.DEBUG if debug else logging.Level.INFO)
    if not insecure and not tls_certs_dir:
        msg = "give --tls-certs-dir (or TLS_SERVER_CERTS_DIR) or --insecure"
        raise click.UsageError(msg)
    creds = None if insecure else runtime.load_credentials(tls_certs_dir or "")
    options = [
        ("grpc.max_receive_message_length", max_message_size),
        ("grpc.max_send_message_length", max_message_size),
    ]
    try:
        runtime.serve(
            FunctionRunner(composers), address, creds=creds, insecure=insecure, options=options
        )
    except Exception as exc:
        click.echo(f"modelplane-function: cannot serve on {address}: {exc}", err=True)
        sys.exit(1)


def select(functions: tuple[str, ...]) -> dict[str, registry.Compose]:
    """Resolve function names to the composers to serve.

    Raises:
        click.BadParameter: a name that is no Modelplane function.
    """
    if not functions or "all" in functions:
        return dict(registry.COMPOSERS)
    chosen = {}
    for name in functions:
        kind = registry.kind_for(name)
        if kind is None:
            known = ", ".join(registry.names())
            msg = f"unknown function {name!r}; known: {known}, all"
            raise click.BadParameter(msg, param_hint="FUNCTIONS")
        chosen[kind] = registry.COMPOSERS[kind]
    return chosen
