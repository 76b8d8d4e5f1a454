"""mTLS: the server's certificate, key and the CA it accepts callers by, from one folder.

The SDK's ``runtime.load_credentials`` reads the files; this checks them first, so that
a missing, unreadable or non-PEM file is one line naming it, not a traceback or gRPC's
misleading "failed to bind" later.
"""

from __future__ import annotations

import ssl
from pathlib import Path

import grpc
from crossplane.function import runtime

from modelplane.runtime.errors import StartupError

CERT_FILES = ("tls.crt", "tls.key", "ca.crt")


def load_credentials(tls_certs_dir: str) -> grpc.ServerCredentials:
    """Load mTLS server credentials (``tls.crt``, ``tls.key``, ``ca.crt``) from a directory.

    Callers must present a certificate the CA signed (Crossplane does).

    Raises:
        StartupError: the directory or a file is missing, unreadable or not PEM.
    """
    folder = Path(tls_certs_dir)
    where = f"--tls-certs-dir {tls_certs_dir}"
    _check_files(folder, where)
    try:
        creds = runtime.load_credentials(tls_certs_dir)
    except OSError as exc:
        msg = f"{where}: cannot read {Path(str(exc.filename)).name}: {exc.strerror}"
        raise StartupError(msg) from exc
    _check_pem(folder, where)
    return creds


def _check_files(folder: Path, where: str) -> None:
    """Refuse a folder that is not there or lacks a file, naming what is missing."""
    if not folder.is_dir():
        problem = "is not a directory" if folder.exists() else "does not exist"
        msg = f"{where} {problem}"
        raise StartupError(msg)
    missing = [name for name in CERT_FILES if not (folder / name).is_file()]
    if missing:
        needed = ", ".join(CERT_FILES)
        msg = f"{where} lacks {', '.join(missing)}: it must hold {needed}"
        raise StartupError(msg)


def _check_pem(folder: Path, where: str) -> None:
    """Refuse what gRPC would refuse later with a misleading "failed to bind"."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(folder / "tls.crt", folder / "tls.key", password=b"")
    except ssl.SSLError as exc:
        msg = (
            f"{where}: tls.crt and tls.key are not a PEM certificate and its unencrypted key "
            f"({exc.reason or 'unreadable'})"
        )
        raise StartupError(msg) from exc
    try:
        context.load_verify_locations(cafile=folder / "ca.crt")
    except ssl.SSLError as exc:
        msg = f"{where}: ca.crt is not a PEM CA certificate ({exc.reason or 'unreadable'})"
        raise StartupError(msg) from exc
