"""Answers: the responses to recent requests, by what each request holds.

A steady composite is reconciled again and again with nothing changed: Crossplane polls
it and is woken by every object it requires, and each time sends the same request,
encoded anew (Go writes map entries in a new order, so the bytes differ). A function's
response is a pure function of its request (the same request gives the same response,
byte for byte), so the response to a request named as an earlier one
(:func:`modelplane.registry.request_identity`: every object it holds by its ``(uid,
resourceVersion)``, the rest by its deterministic encoding) is the one computed then:
given back as it was sent, without composing it or encoding it again.

An object named by its ``(uid, resourceVersion)`` is taken to hold what the API server
holds under them, as it does for every object Crossplane reads (``crossplane render``,
whose objects come from files, sends no tag, so its requests are never answered from
here).

Naming a request reads the identity of every object it holds, so only requests whose
tag was seen before are named (Crossplane tags a request with a digest of it: a fleet
never seen does not pay for naming). A response with a Fatal result is not kept (a
failure may come from the call, not the request: its memory, a nesting too deep for its
stack). What is kept is bounded by :data:`ENTRIES` and :data:`KEPT_BYTES`, the least
recently used going first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import registry
from modelplane.runtime.dispatch import is_fatal

V = TypeVar("V")

ENTRIES = 256
"""Responses kept at most: a reconcile's calls for a few hundred composites."""
KEPT_BYTES = 64 * 2**20
"""Bytes of responses kept at most (a 50,000 replica fleet's response is about 1 MiB)."""
TAGS = 4096
"""Request tags remembered, to tell a tag seen before."""


class Answers(Generic[V]):
    """Responses (as bytes, or as messages) by the name of their request."""

    def __init__(self, entries: int = ENTRIES, kept_bytes: int = KEPT_BYTES) -> None:
        """Keep at most ``entries`` responses and ``kept_bytes`` of them."""
        self._entries, self._limit = entries, kept_bytes
        self._lock = threading.Lock()
        self._kept: OrderedDict[bytes, tuple[V, int]] = OrderedDict()
        self._tags: OrderedDict[str, None] = OrderedDict()
        self._size = 0
        self.hits = 0
        """How many calls were answered from here, ever (tests and benchmarks read it)."""

    def name(self, req: fnv1.RunFunctionRequest) -> bytes | None:
        """The request's name when its tag was seen before; None the first time (the tag
        is remembered), or when it cannot be named."""
        tag = req.meta.tag
        if not tag:
            return None
        with self._lock:
            seen = tag in self._tags
            self._tags[tag] = None
            self._tags.move_to_end(tag)
            if len(self._tags) > TAGS:
                self._tags.popitem(last=False)
        if not seen:
            return None
        try:
            return registry.request_identity(req)
        except Exception:  # naming only saves work: a request it cannot name is composed
            return None

    def answer(
        self,
        req: fnv1.RunFunctionRequest,
        compose: Callable[[], tuple[fnv1.RunFunctionResponse, V, int]],
    ) -> tuple[V, bool]:
        """The answer kept for a request named as ``req`` (and True); else ``compose``'s
        (the response, the answer as sent, its size), kept for the next (and False)."""
        name = self.name(req)
        known = self.recall(name)
        if known is not None:
            return known, True
        rsp, answer, size = compose()
        self.keep(name, rsp, answer, size)
        return answer, False

    def recall(self, name: bytes | None) -> V | None:
        """The response kept for a request of this name, if any."""
        if name is None:
            return None
        with self._lock:
            found = self._kept.get(name)
            if found is None:
                return None
            self._kept.move_to_end(name)
            self.hits += 1
            return found[0]

    def keep(self, name: bytes | None, rsp: fnv1.RunFunctionResponse, answer: V, size: int) -> None:
        """Keep ``answer`` (``rsp`` as it is sent, ``size`` bytes) for requests of this name,
        unless it is Fatal or too large to keep."""
        if name is None or size > self._limit or is_fatal(rsp):
            return
        with self._lock:
            old = self._kept.pop(name, None)
            self._size += size - (old[1] if old else 0)
            self._kept[name] = (answer, size)
            while len(self._kept) > self._entries or self._size > self._limit:
                _, (_, freed) = self._kept.popitem(last=False)
                self._size -= freed

    def __len__(self) -> int:
        """How many responses are kept."""
        return len(self._kept)
