"""Input a function cannot read: one error for it, one summary of a validation error."""

from __future__ import annotations

from collections.abc import Sequence

import pydantic


class InvalidInputError(ValueError):
    """An object the function reads is not what its schema says; the message names the
    field. Raised by readers; a function that lets it escape answers with a Fatal result."""


def summarize(exc: pydantic.ValidationError, limit: int = 5) -> str:
    """Return a validation error as one line: each bad field's path and what is wrong.

    Paths read as in Kubernetes: ``spec.engines[0].members[1].role``.
    """
    parts = [f"{field_path(e['loc'])}: {e['msg']}" for e in exc.errors()[:limit]]
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def field_path(loc: Sequence[int | str]) -> str:
    """Return a pydantic error location as a field path, list indexes in brackets."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "(the object)"
