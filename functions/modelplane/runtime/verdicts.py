"""The CEL verdict cache on disk, shared by one server's worker processes.

The SDK has nothing like it: it is ours because our workers are processes (see
:mod:`modelplane.runtime.pool`), and a costly selector's verdict is worth sharing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the serving process makes the folder and never evaluates: no CEL there
    from modelplane.domain import dra as cel


class DiskVerdicts:
    """Verdicts of costly selectors shared by one server's worker processes.

    A selector near the cost limit may take a second of CPU on a device (its work limit,
    ``cel.WORK_LIMIT``); with this store each (selector, device) is evaluated once by the
    whole server, not once per worker: a lookup takes some 30 us (benches/bench_verdicts.py).
    Every verdict is decided by cost and work counts alone, so any process may reuse it.
    One small JSON file per verdict, named by the digest of (selector, device content),
    in a folder the supervisor creates private to its user (0700; files 0600) and
    removes; written whole then renamed, so a reader sees a verdict or nothing.
    """

    MAX_WRITES = 65_536
    """Verdicts one process writes at most (each a few hundred bytes)."""

    def __init__(self, folder: Path) -> None:
        """Keep verdicts in ``folder`` (which must exist)."""
        self.folder = folder
        self._writes = 0

    def get(self, key: str) -> cel.Verdict | None:
        """The verdict under ``key``; None when absent or unreadable."""
        try:
            data = json.loads((self.folder / key).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        matched, error = data.get("matched"), data.get("error")
        if not isinstance(matched, bool) or not isinstance(error, (str, type(None))):
            return None
        cost, work = data.get("cost"), data.get("work")
        from modelplane.domain.dra import Verdict  # noqa: PLC0415  # workers only

        return Verdict(
            matched,
            error,
            cost if isinstance(cost, int) else None,
            over_limit=data.get("over_limit") is True,
            over_work=data.get("over_work") is True,
            work=work if isinstance(work, int) else 0,
        )

    def put(self, key: str, verdict: cel.Verdict) -> None:
        """Keep ``verdict`` (best effort: a full disk only costs re-evaluation)."""
        if self._writes >= self.MAX_WRITES:
            return
        self._writes += 1
        text = json.dumps(dataclasses.asdict(verdict), sort_keys=True)
        partial = self.folder / f".{key}.{os.getpid()}.{threading.get_ident()}"
        try:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(text)
            partial.replace(self.folder / key)
        except OSError:
            with contextlib.suppress(OSError):
                partial.unlink()


def private_folder(prefix: str) -> Path:
    """A new folder only this user can enter (0700, whatever the umask)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    folder.chmod(0o700)
    return folder
