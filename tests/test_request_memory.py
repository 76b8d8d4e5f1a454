"""The worker pool's serving process keeps freed request memory for the next requests."""

from __future__ import annotations

import ctypes

import pytest
from modelplane.runtime import limits


class _Libc:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append((param, value))
        return 1


def test_one_arena_and_fixed_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    libc = _Libc()
    monkeypatch.setattr(ctypes, "CDLL", lambda _: libc)
    limits.reuse_request_memory()
    # M_ARENA_MAX first: threads that allocate later all share the one arena.
    assert libc.calls == [
        (-8, 1),
        (-3, limits.REQUEST_MMAP_BYTES),
        (-1, limits.RETAINED_BYTES),
    ]


def test_an_allocator_without_mallopt_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ctypes, "CDLL", lambda _: object())
    limits.reuse_request_memory()  # nothing to set, nothing raised
