"""A status condition, typed: what the domain decides and the kit writes.

Kubernetes' condition status is one of three words; ``status`` is that word's meaning
(True, False, or None for Unknown), so no caller spells the words or compares strings.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Condition:
    """One condition of a composite's status (Crossplane stamps its transition time)."""

    type: str
    status: bool | None
    reason: str
    message: str = ""

    @property
    def word(self) -> str:
        """The status as Kubernetes writes it: ``True``, ``False`` or ``Unknown``."""
        return {True: "True", False: "False", None: "Unknown"}[self.status]
