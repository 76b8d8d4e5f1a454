"""A device as a DRA CEL selector sees it, built from an InferenceClass device entry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

AttributeKind = Literal["string", "bool", "int", "version"]


@dataclass(frozen=True, order=True)
class Attribute:
    """One typed attribute value, as DRA's DeviceAttribute carries it."""

    kind: AttributeKind
    value: str | bool | int


@dataclass(frozen=True)
class Device:
    """What a selector reads: ``device.driver``, ``device.attributes``, ``device.capacity``.

    Keys are fully qualified ``domain/name``; a bare name in a class is qualified with
    the device's driver when the device is built (see :func:`qualify`). The mappings are
    stored as sorted tuples so a device is hashable and two devices with the same content
    are equal, which lets results be memoized per (expression, device content).
    """

    driver: str
    attributes: tuple[tuple[str, Attribute], ...] = ()
    capacity: tuple[tuple[str, str], ...] = ()

    @classmethod
    def build(
        cls,
        driver: str,
        attributes: dict[str, Attribute] | None = None,
        capacity: dict[str, str] | None = None,
    ) -> Device:
        """Build a device, qualifying bare keys with the driver's domain."""
        return cls(
            driver=driver,
            attributes=tuple(
                sorted((qualify(k, driver), v) for k, v in (attributes or {}).items())
            ),
            capacity=tuple(sorted((qualify(k, driver), v) for k, v in (capacity or {}).items())),
        )


def qualify(key: str, driver: str) -> str:
    """Return ``domain/name`` for a key: bare names take the driver as their domain."""
    return key if "/" in key else f"{driver}/{key}"
