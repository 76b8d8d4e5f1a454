"""Drive ``bin/benchclient`` (tools/benchclient), the Go client that encodes as Crossplane.

Crossplane builds every RunFunctionRequest anew from its cache (``structpb.NewStruct`` of
each unstructured object, each requirement listed by namespace and name), tags it with
the SHA-256 of its deterministic encoding (``xfn.Tag``), and encodes it with Go's
protobuf, whose map entries come out in a different order on every call: the same
object is never the same bytes twice. Python's
encoder is deterministic, so a Python client sends the server bytes it has seen before and
measures a cache Crossplane never hits. Every served figure of ``make bench`` comes from
this client; the Python client stays for profiles only.

The client is a long-lived subprocess fed one command a line (see ``tools/benchclient``);
the request it builds from is written here from the Python generator's fleet.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

ROOT = Path(__file__).resolve().parent.parent
BINARY = ROOT / "bin" / "benchclient"


class ClientError(RuntimeError):
    """The Go client failed a command (its message says why)."""


@dataclass(frozen=True)
class Answer:
    """One command's outcome: wall seconds per call (one figure when concurrent)."""

    seconds: list[float]
    encode_seconds: float
    sizes: list[int]
    digest: str  # of the last response, as benches.bench_scheduler.digest computes it


class GoClient:
    """``benchclient`` against ``address``, building requests from ``template``."""

    def __init__(self, address: str, template: fnv1.RunFunctionRequest) -> None:
        """Write the template and start the client (it connects on the first call)."""
        if not BINARY.exists():
            msg = f"{BINARY} is missing: run `make benchclient`"
            raise ClientError(msg)
        self._dir = tempfile.TemporaryDirectory(prefix="benchclient-")
        folder = Path(self._dir.name)
        (folder / "request.pb").write_bytes(template.SerializeToString())
        self._response = folder / "response.pb"
        self._tag = template.meta.tag
        self._proc = subprocess.Popen(
            [
                str(BINARY),
                "-address",
                address,
                "-request",
                str(folder / "request.pb"),
                "-response",
                str(self._response),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    @property
    def pid(self) -> int:
        """The client's process id (its CPU shares the cores with the server's)."""
        return self._proc.pid

    def _command(self, command: str, count: int) -> dict[str, Any]:
        assert self._proc.stdin is not None
        assert self._proc.stdout is not None
        self._proc.stdin.write(f"{command} {count}\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            msg = f"benchclient exited ({self._proc.poll()}) during {command} {count}"
            raise ClientError(msg)
        found: dict[str, Any] = json.loads(line)
        if found.get("error"):
            msg = f"benchclient {command} {count}: {found['error']}"
            raise ClientError(msg)
        return found

    def encodings(self, count: int, *, steady: bool = False) -> list[bytes]:
        """``count`` requests as Go encodes them: the template's fleet, then renewed ones
        (``steady``: the same objects each time, as a steady reconcile sends them, each
        encoded anew, so their bytes still differ)."""
        self._command("save-steady" if steady else "save", count)
        data, out, at = self._response.read_bytes(), [], 0
        while at < len(data):
            size, shift = 0, 0
            while True:
                byte = data[at]
                at += 1
                size |= (byte & 0x7F) << shift
                shift += 7
                if byte < 0x80:
                    break
            out.append(data[at : at + size])
            at += size
        return out

    def run(self, command: str, count: int) -> Answer:
        """Run ``new N``, ``steady N``, ``touched N`` or ``concurrent K`` and return what it
        measured. The last response is digested as the template's request is answered:
        its tag (the request's, which the client computes per call as Crossplane does)
        read as the template's."""
        found = self._command(command, count)
        rsp = fnv1.RunFunctionResponse.FromString(self._response.read_bytes())
        rsp.meta.tag = self._tag
        digest = hashlib.sha256(rsp.SerializeToString(deterministic=True)).hexdigest()
        return Answer(found["seconds"], found["encode_seconds"], found["bytes"], digest)

    def close(self) -> None:
        """Stop the client and remove its files."""
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.write("quit\n")
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
        self._dir.cleanup()

    def __enter__(self) -> GoClient:
        """The client, started."""
        return self

    def __exit__(self, *_: object) -> None:
        """Stop it."""
        self.close()
