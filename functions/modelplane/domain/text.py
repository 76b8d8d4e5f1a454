"""Text for people: messages stay short enough for a condition or an event."""

from __future__ import annotations


def cut(text: str, limit: int) -> str:
    """Shorten text to ``limit`` characters, ending in ``...`` when cut."""
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."
