"""Opt-in call counts for benchmarks: RunFunction calls, request bytes and compose CPU per kind.

Off unless ``MODELPLANE_CALL_STATS_DIR`` names a folder (``make bench-loop`` sets it); the
server never pays for it otherwise. When on, each process that composes keeps, per
composite kind, the calls it answered, the bytes of their requests (as they came off the
wire: counted at the server, what Crossplane sent) and the CPU seconds its compose
threads spent on them, and writes them to ``<folder>/calls-<pid>.json`` at most once a
second (a write to a temporary file, then a rename: a reader never sees half a file).
A background thread writes what the last call left unwritten, so a reader that waits
two seconds after the last call reads every call. :func:`read_totals` sums the files.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

ENV = "MODELPLANE_CALL_STATS_DIR"
FLUSH_SECONDS = 1.0
FIELDS = ("calls", "request_bytes", "cpu_seconds")


class CallStats:
    """Per-kind call counts of one process, written to its file in ``folder``."""

    def __init__(
        self,
        folder: Path,
        *,
        clock: Callable[[], float] = time.monotonic,
        background: bool = True,
    ) -> None:
        """Count into ``<folder>/calls-<pid>.json``; ``background`` starts the flusher."""
        self.path = folder / f"calls-{os.getpid()}.json"
        self._clock = clock
        self._lock = threading.Lock()
        self._kinds: dict[str, dict[str, float]] = {}
        self._dirty = False
        self._written = -FLUSH_SECONDS
        if background:
            threading.Thread(target=self._flusher, name="callstats", daemon=True).start()

    def record(self, kind: str, size: int, cpu_seconds: float) -> None:
        """Count one call of ``kind`` whose request was ``size`` bytes."""
        with self._lock:
            counts = self._kinds.setdefault(kind or "(unnamed)", dict.fromkeys(FIELDS, 0))
            counts["calls"] += 1
            counts["request_bytes"] += size
            counts["cpu_seconds"] += cpu_seconds
            self._dirty = True
            due = self._clock() - self._written >= FLUSH_SECONDS
        if due:
            self.flush()

    def flush(self) -> None:
        """Write the counts if a call changed them since the last write."""
        with self._lock:
            if not self._dirty:
                return
            snapshot = json.dumps(self._kinds, sort_keys=True)
            self._dirty = False
            self._written = self._clock()
        temporary = self.path.with_suffix(".tmp")
        with contextlib.suppress(OSError):  # a benchmark's aid never fails a call
            temporary.write_text(snapshot)
            temporary.replace(self.path)

    def _flusher(self) -> None:
        while True:
            time.sleep(FLUSH_SECONDS)
            self.flush()


_lock = threading.Lock()
_stats: dict[int, CallStats | None] = {}


def current() -> CallStats | None:
    """This process's counter, or None when the environment does not ask for one.

    Keyed by pid: a process forked from one that counted starts its own file.
    """
    pid = os.getpid()
    with _lock:
        if pid not in _stats:
            folder = os.environ.get(ENV, "")
            _stats[pid] = CallStats(Path(folder)) if folder and Path(folder).is_dir() else None
        return _stats[pid]


@contextlib.contextmanager
def counted(size: int) -> Iterator[Callable[[str], None]]:
    """Time the block's thread CPU; the block names the kind (``named(kind)``) once known.

    A no-op unless counting is on. A call whose kind is never named counts as
    ``(unreadable)``.
    """
    stats = current()
    kind = ["(unreadable)"]
    start = time.thread_time()

    def named(name: str) -> None:
        kind[0] = name

    try:
        yield named
    finally:
        if stats is not None:
            stats.record(kind[0], size, time.thread_time() - start)


def read_totals(folder: Path) -> dict[str, dict[str, float]]:
    """Every process's counts in ``folder``, summed per kind."""
    totals: dict[str, dict[str, float]] = {}
    for path in sorted(folder.glob("calls-*.json")):
        try:
            kinds: Mapping[str, Mapping[str, float]] = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        for kind, counts in kinds.items():
            into = totals.setdefault(kind, dict.fromkeys(FIELDS, 0))
            for field in FIELDS:
                into[field] += counts.get(field, 0)
    return totals
