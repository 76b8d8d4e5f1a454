"""The short paths and the careful readers must agree: checked on every read when asked.

Each object shape has two readers: the careful one, which checks every field and names
the first problem, and a short path with few Python-level steps, which reads objects as
the API server writes them and declines anything else (a 10,000 replica fleet is read
in full after every restart, so the short path is what keeps that fast; see
docs/benchmarks.md). What the short path returns, the careful reader must return too.

With :data:`CHECKING` on, every value a short path returns is read again by the careful
reader and compared, and a difference raises :class:`ReaderDisagreement` naming both.
The test suite turns it on for every test (``tests/conftest.py``, and
``MODELPLANE_CHECK_READERS=1`` for the function servers it starts), so a field added to
one reader and not the other fails every test that reads such an object; production
pays one flag test per object read.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from modelplane.planning.fields import UnreadableError

CHECKING = os.environ.get("MODELPLANE_CHECK_READERS") == "1"
"""Whether :func:`check` runs (tests turn it on; off in production)."""


class ReaderDisagreementError(AssertionError):
    """A short path read an object otherwise than the careful reader: a bug in one of them.

    An AssertionError, so that no reader's error handling mistakes it for a bad object.
    """


def check(what: str, fast: Any, careful: Callable[[], Any]) -> None:
    """Read again with ``careful`` and raise if it does not give ``fast``.

    Args:
        what: The shape read, for the message (``InferenceCluster``, ``engines``, ...).
        fast: What the short path returned.
        careful: The careful reader, on the same object.
    """
    try:
        slow = careful()
    except UnreadableError as exc:
        slow = exc
    if slow != fast:
        msg = f"{what}: the short path read {fast!r}, the careful reader {slow!r}"
        raise ReaderDisagreementError(msg)
