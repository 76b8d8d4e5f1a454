"""How the e2e's fake controllers write a status to a real API server: condition times
kept while a status stays, nothing written that only a time would change, and writes
paced (a token bucket) so Crossplane's per-composite circuit breaker holds."""

from __future__ import annotations

import datetime
import json
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_conditions(
    current: Sequence[Mapping[str, Any]],
    wanted: Sequence[Mapping[str, Any]],
    generation: int | None = None,
) -> list[dict[str, Any]]:
    """``wanted`` with lastTransitionTime kept from ``current`` where the status is the same
    (and a ``message``, which the Gateway API CRDs require even when empty)."""
    old = {c.get("type"): c for c in current}
    out = []
    for want in wanted:
        c = {"message": "", **want}
        prev = old.get(c["type"])
        same = prev is not None and prev.get("status") == c["status"]
        c["lastTransitionTime"] = prev["lastTransitionTime"] if same and prev else now()
        if generation is not None:
            c["observedGeneration"] = generation
        out.append(c)
    kept = [dict(c) for t, c in old.items() if t not in {w["type"] for w in wanted}]
    return kept + out


def strip_times(conds: Any) -> list[tuple[Any, ...]]:
    return sorted(
        (
            c.get("type"),
            c.get("status"),
            c.get("reason"),
            c.get("message") or "",
            c.get("observedGeneration"),
        )
        for c in conds or []
    )


def with_times(
    old: Mapping[str, Any], wanted: Mapping[str, Any], generation: int
) -> dict[str, Any]:
    """``wanted``'s conditions (top level, a route's parents', a Gateway's listeners') with
    the times and generation a controller writes, times kept where a status stays."""
    out = dict(wanted)
    if "conditions" in out:
        out["conditions"] = merge_conditions(
            old.get("conditions") or [], out["conditions"], generation
        )
    for field, key in (("parents", "parentRef"), ("listeners", "name")):
        previous = {
            json.dumps(item.get(key), sort_keys=True): item for item in old.get(field) or []
        }
        out_items = []
        for item in out.get(field) or []:
            before = previous.get(json.dumps(item.get(key), sort_keys=True)) or {}
            conds = merge_conditions(
                before.get("conditions") or [], item.get("conditions") or [], generation
            )
            out_items.append({**item, "conditions": conds})
        if field in out:
            out[field] = out_items
    return out


def same_but_times(old: Any, new: Any) -> bool:
    """Equal but for condition times: nothing to write."""
    if isinstance(old, dict) and isinstance(new, dict):
        if "conditions" in new and strip_times(old.get("conditions")) != strip_times(
            new.get("conditions")
        ):
            return False
        keys = set(new) - {"conditions", "lastTransitionTime"}
        return all(same_but_times(old.get(k), new.get(k)) for k in keys)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(
            same_but_times(a, b) for a, b in zip(old, new, strict=True)
        )
    return bool(old == new)


class Deferred(Exception):  # noqa: N818 - not an error: come back later
    """A write that must wait for its composite's pacer."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"deferred {seconds:.1f}s")
        self.seconds = seconds


class Pacer:
    """A token bucket: at most ``rate`` writes a second, bursts of ``burst``."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.tokens = float(burst)
        self.stamp = time.monotonic()
        self.lock = threading.Lock()

    def try_take(self) -> float:
        """Take a token if there is one (0); else how long until there is."""
        with self.lock:
            t = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (t - self.stamp) * self.rate)
            self.stamp = t
            if self.tokens >= 1:
                self.tokens -= 1
                return 0.0
            return (1 - self.tokens) / self.rate

    def take(self) -> None:
        """Take a token, waiting for one."""
        while wait := self.try_take():
            time.sleep(wait)


def ok(kind: str, reason: str, message: str = "") -> dict[str, Any]:
    """A True condition with every field the Gateway API CRDs require."""
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": "1970-01-01T00:00:00Z",
    }


def for_api_server(value: Any) -> Any:
    """Conditions as the Gateway API CRDs require them (``message`` too, even empty)."""
    if isinstance(value, dict):
        out = {k: for_api_server(v) for k, v in value.items()}
        if {"type", "status", "reason"} <= set(out) and "lastTransitionTime" in out:
            out.setdefault("message", "")
        return out
    if isinstance(value, list):
        return [for_api_server(v) for v in value]
    return value
