"""What the loop records: one reconcile, one pass, and how a pass's changes are found
(canonical JSON without the fields that change on their own)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from modelplane.dev.fakes.base import Key, describe

SETTLE_LIMIT = 16
"""Reconciles of one composite in one pass before the harness calls it churning."""


def condition_line(cond: Mapping[str, Any]) -> str:
    """Render a condition as ``Type=Status (Reason: message)``."""
    text = f"{cond.get('type')}={cond.get('status')}"
    reason, message = cond.get("reason"), cond.get("message")
    if reason or message:
        detail = f"{reason}: {message}" if message else str(reason)
        text += f" ({detail})"
    return text


@dataclass
class Reconciled:
    """What one reconcile of one composite did."""

    key: Key
    applied: list[Key] = field(default_factory=list)
    deleted: list[Key] = field(default_factory=list)
    collected: list[Key] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    fatal: str = ""
    error: str = ""


@dataclass
class PassRecord:
    """What one pass changed, and where every composite stood at its end.

    Attributes:
        number: 1 for the first pass of this control plane.
        appeared: Objects created during the pass.
        disappeared: Objects deleted during the pass (garbage collected or cascaded).
        changed: Objects that exist before and after but differ.
        diffs: For each changed object, the top-level fields that differ.
        conditions: Each composite's conditions at the end of the pass, by type.
        fatal: Composites whose pipeline returned a Fatal result, with the message.
        errors: Composites whose reconcile failed, with the engine's error.
        events: Every event per composite (``Type Reason: message``), each once.
        warnings: The Warning events among them.
        reconciles: How many times each composite was reconciled.
        unsettled: Composites still changing after :data:`SETTLE_LIMIT` reconciles.
        flapping: What misreported during the pass.
    """

    number: int
    appeared: list[Key] = field(default_factory=list)
    disappeared: list[Key] = field(default_factory=list)
    changed: list[Key] = field(default_factory=list)
    diffs: dict[Key, list[str]] = field(default_factory=dict)
    conditions: dict[Key, dict[str, dict[str, Any]]] = field(default_factory=dict)
    fatal: dict[Key, str] = field(default_factory=dict)
    errors: dict[Key, str] = field(default_factory=dict)
    events: dict[Key, list[str]] = field(default_factory=dict)
    warnings: dict[Key, list[str]] = field(default_factory=dict)
    reconciles: dict[Key, int] = field(default_factory=dict)
    unsettled: list[Key] = field(default_factory=list)
    flapping: list[str] = field(default_factory=list)

    @property
    def quiet(self) -> bool:
        """Tell whether the pass changed nothing at all."""
        return not (self.appeared or self.disappeared or self.changed)

    def ready(self, key: Key) -> bool:
        """Tell whether composite ``key`` was Ready at the end of the pass."""
        return self.conditions.get(key, {}).get("Ready", {}).get("status") == "True"

    def summary(self, limit: int = 12) -> str:
        """Say what the pass changed, for failure messages."""

        def names(keys: list[Key]) -> str:
            shown = ", ".join(describe(k) for k in keys[:limit])
            return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")

        lines = [f"pass {self.number}:"]
        if self.flapping:
            lines.append(f"  flapping: {'; '.join(self.flapping)}")
        if self.appeared:
            lines.append(f"  appeared ({len(self.appeared)}): {names(self.appeared)}")
        if self.disappeared:
            lines.append(f"  DISAPPEARED ({len(self.disappeared)}): {names(self.disappeared)}")
        if self.changed:
            changed = [f"{describe(k)} [{', '.join(self.diffs.get(k, []))}]" for k in self.changed]
            shown = "; ".join(changed[:limit])
            more = f" and {len(changed) - limit} more" if len(changed) > limit else ""
            lines.append(f"  changed ({len(self.changed)}): {shown}{more}")
        for key, message in self.fatal.items():
            lines.append(f"  FATAL {describe(key)}: {message}")
        for key, message in self.errors.items():
            lines.append(f"  ERROR {describe(key)}: {message}")
        if self.unsettled:
            lines.append(f"  unsettled after {SETTLE_LIMIT} reconciles: {names(self.unsettled)}")
        if self.quiet:
            lines.append("  (nothing changed)")
        return "\n".join(lines)


class DeletionBlockedError(RuntimeError):
    """A Usage protects the object from deletion (the API server refuses the request)."""


# --- canonical state -----------------------------------------------------------------------

_VOLATILE = ("lastTransitionTime", "resourceVersion")


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _encode(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _cut(text: str, name: str) -> str | None:
    """Cut every member ``name`` with a string value out of encoded JSON (None: one has
    an escape in its value, which this does not read).

    ``"name":"`` with unescaped quotes is always a key and its value's opening quote:
    within an encoded string every quote is escaped. The member goes with the comma that
    separates it from the one before, or if it is first in its object, from the next.
    """
    parts = text.split(f'"{name}":"')
    kept = [parts[0]]
    for part in parts[1:]:
        end = part.find('"')
        if end < 0 or "\\" in part[:end]:
            return None
        rest = part[end + 1 :]
        if kept[-1].endswith(","):
            kept[-1] = kept[-1][:-1]
        elif rest.startswith(","):
            rest = rest[1:]
        kept.append(rest)
    return "".join(kept)


def canonical(obj: Mapping[str, Any]) -> str:
    """Return an object as canonical JSON, without fields that change on their own.

    The object is encoded whole (json's C encoder) and the volatile members are cut out
    of the text: the loop takes a snapshot of every object twice a reconcile, and copying
    each object without them first cost a third of a loop test. The text is the encoding
    of the object without them, character for character; where a volatile member's value
    is not a plain string, it is encoded from such a copy instead.
    """
    text: str | None = _encode(obj)
    for name in _VOLATILE:
        if text is not None and f'"{name}":' in text:
            text = _cut(text, name)
    if text is None or any(f'"{name}":' in text for name in _VOLATILE):
        return _encode(_strip(obj))
    return text


def top_level_diff(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    out = []
    for name in sorted(set(before) | set(after)):
        if canonical({"v": before.get(name)}) == canonical({"v": after.get(name)}):
            continue
        old, new = before.get(name), after.get(name)
        if isinstance(old, dict) and isinstance(new, dict):
            out += [f"{name}.{sub}" for sub in top_level_diff(old, new)] or [name]
        else:
            out.append(name)
    return out


def history_text(records: Iterable[PassRecord]) -> str:
    """Join pass summaries for a failure message."""
    return "\n".join(r.summary() for r in records)
