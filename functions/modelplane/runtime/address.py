"""The address a server listens on: Go's ``:9443``, a port gRPC would wrap, a port taken.

gRPC logs why it cannot bind on the C core's stderr and answers "port 0"; this turns
that into the one line a startup failure is (the SDK's ``runtime.serve`` ignores it).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator

import grpc

from modelplane.runtime.errors import StartupError

_PORTED = re.compile(r"(?:dns:(?:///)?|ipv4:|ipv6:)?(?:\[[^\]]*\]|[^:\[\]]*):(\d+)")


def listen_address(address: str) -> str:
    """The address gRPC binds: Go's ``:9443`` (every interface, as the Crossplane function
    template's flag takes it) is ``[::]:9443``; anything else as given."""
    return f"[::]{address}" if address.startswith(":") else address


def check_port(address: str) -> None:
    """Refuse a port past 65535, which gRPC would silently wrap around.

    Raises:
        StartupError: the port is out of range.
    """
    ported = _PORTED.fullmatch(address)
    port = ported.group(1) if ported is not None else ""
    if len(port) > len("65535") or (port and int(port) > 65535):
        msg = f"cannot serve on {address}: port {port} is not from 0 to 65535"
        raise StartupError(msg)


def bind(grpc_server: grpc.aio.Server, address: str, creds: grpc.ServerCredentials | None) -> int:
    """Add the listening port and return it; gRPC's own complaint (on stderr) becomes our
    one line.

    Raises:
        StartupError: the address cannot be bound or the credentials are refused.
    """
    with _stderr_captured() as captured:
        try:
            if creds is None:
                port = grpc_server.add_insecure_port(address)
            else:
                port = grpc_server.add_secure_port(address, creds)
        except RuntimeError:
            port = 0
    if port == 0:
        msg = f"cannot serve on {address}: {_grpc_reason(captured()) or 'gRPC could not bind it'}"
        raise StartupError(msg)
    if said := captured():
        sys.stderr.write(said)
    return int(port)


def _grpc_reason(logged: str) -> str:
    """The gist of what gRPC logged about a failed port: its last error, one line."""
    errors = [line.split("] ", 1)[-1] for line in logged.splitlines() if line.startswith("E")]
    if not errors:
        return ""
    text = errors[-1].removeprefix("Failed to add port to server: ")
    bind = re.search(r"Error in bind for address '[^']*': ([^)]*)\)", text)
    if bind:
        return bind.group(1)
    if text.startswith("Unable to create secure server"):
        return "; ".join(e.rstrip(".") for e in errors[:-1]) or text
    return one_line(text)


@contextlib.contextmanager
def _stderr_captured() -> Iterator[Callable[[], str]]:
    """Collect what is written to file descriptor 2 (gRPC's C core logs there)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as sink:
        text: list[str] = []
        os.dup2(sink.fileno(), 2)
        try:
            yield lambda: "".join(text)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            text.append(sink.read().decode(errors="replace"))


def one_line(text: str) -> str:
    """``text`` with its runs of whitespace (newlines too) as single spaces."""
    return " ".join(text.split())
