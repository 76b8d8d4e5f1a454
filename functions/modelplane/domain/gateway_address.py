"""Reading the workload cluster's Gateway address from its observed provider-kubernetes Object."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_ADDRESS_PATH = ("status", "atProvider", "manifest", "status", "addresses")


def gateway_address(observed_gateway: Mapping[str, Any] | None) -> str:
    """Return the Gateway's first address from its Object's observed manifest ("" if none)."""
    address, _ = read_gateway_address(observed_gateway)
    return address


def read_gateway_address(observed_gateway: Mapping[str, Any] | None) -> tuple[str, str | None]:
    """The Gateway's first address ("" if none), and the field that could not be read.

    The Object's status is the provider's and the Gateway controller's to write; a field
    of the wrong type there reads as no address yet, and is named (``status.atProvider
    is a list, not an object``) so the composite can say why it waits.
    """
    value: Any = observed_gateway or {}
    walked: list[str] = []
    for key in _ADDRESS_PATH:
        if not isinstance(value, Mapping):
            return "", f"{'.'.join(walked)} is {_kind_of(value)}, not an object"
        walked.append(key)
        value = value.get(key)
        if value is None:
            return "", None
    if not isinstance(value, list):
        return "", f"{'.'.join(walked)} is {_kind_of(value)}, not a list"
    first = value[0] if value else {}
    if not isinstance(first, Mapping):
        return "", f"{'.'.join(walked)}[0] is {_kind_of(first)}, not an object"
    found = first.get("value")
    if found is not None and not isinstance(found, str):
        return "", f"{'.'.join(walked)}[0].value is {_kind_of(found)}, not text"
    return found or "", None


def _kind_of(value: Any) -> str:
    """A JSON value's type, as a message says it."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, Mapping) else "null"
