"""The fake providers' work queue, as client-go's workqueue behaves for a controller with
several workers: a key is queued at most once (the earliest time asked wins), handed to
one worker at a time (a key queued again while a worker has it waits until that worker
is done), and handed out in the order it became due.

A heap keeps taking the next key O(log n): a provider's resync queues every object it
knows, and with a scan per take a resync of ~1,300 Objects cost more than its reconciles.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    def __init__(self) -> None:
        self._wake = threading.Condition()
        self._due: dict[K, float] = {}  # queued keys and when each is due
        self._heap: list[tuple[float, int, K]] = []  # (due, order, key); stale entries skipped
        self._order = itertools.count()
        self._busy: set[K] = set()  # keys a worker has
        self._parked: dict[K, float] = {}  # busy keys queued again, and when due

    def add(self, key: K, delay: float = 0) -> None:
        """Queue ``key`` to be due in ``delay`` seconds (sooner if it is queued sooner)."""
        due = time.monotonic() + delay
        with self._wake:
            if key in self._busy:
                self._parked[key] = min(due, self._parked.get(key, due))
                return
            self._push(key, due)

    def _push(self, key: K, due: float) -> None:
        if key in self._due and self._due[key] <= due:
            return
        self._due[key] = due
        heapq.heappush(self._heap, (due, next(self._order), key))
        self._wake.notify()

    def get(self) -> K:
        """Wait for a due key and take it; :meth:`done` must follow."""
        with self._wake:
            while True:
                now = time.monotonic()
                while self._heap and self._heap[0][0] <= now:
                    due, _, key = heapq.heappop(self._heap)
                    if self._due.get(key) != due:
                        continue  # queued again sooner; that entry was taken
                    del self._due[key]
                    self._busy.add(key)
                    return key
                soonest = self._heap[0][0] - now if self._heap else 5.0
                self._wake.wait(max(0.01, soonest))

    def done(self, key: K) -> None:
        """A worker is done with ``key``: queue it again if it was asked for meanwhile."""
        with self._wake:
            self._busy.discard(key)
            due = self._parked.pop(key, None)
            if due is not None:
                self._push(key, due)

    def counts(self) -> tuple[int, int]:
        """Keys queued and, of them, due now (for the providers' stats line)."""
        with self._wake:
            now = time.monotonic()
            due = sum(1 for d in self._due.values() if d <= now)
            return len(self._due) + len(self._parked), due
