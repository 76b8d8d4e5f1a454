"""What an API server admits: the ObjectMeta checks it makes on every kind."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_NAMED = frozenset({"Namespace"})
"""Kinds whose names must be DNS-1123 labels (63 characters)."""
DNS_1035_NAMED = frozenset({"Service"})
"""Kinds whose names must be DNS-1035 labels (63 characters, starting with a letter)."""


def admission_problems(obj: Mapping[str, Any]) -> list[str]:
    """Say why an API server would refuse ``obj``'s name or labels (empty: it admits them).

    The checks apiserver's ObjectMeta validation makes on every kind: the name (a DNS-1123
    subdomain, a label for Namespaces, a DNS-1035 label for Services) and every label key
    and value (qualified names; values at most 63 characters).
    """
    meta = obj.get("metadata") or {}
    kind = str(obj.get("kind", ""))
    name = str(meta.get("name") or "")
    problems = []
    if not name:
        problems.append("metadata.name: Required value")
    elif kind in LABEL_NAMED and not (len(name) <= 63 and _DNS_LABEL.match(name)):
        problems.append(f"metadata.name: Invalid value: {name!r}: must be a DNS-1123 label")
    elif kind in DNS_1035_NAMED and not (len(name) <= 63 and _DNS_1035.match(name)):
        problems.append(f"metadata.name: Invalid value: {name!r}: must be a DNS-1035 label")
    elif not (len(name) <= 253 and _DNS_SUBDOMAIN.match(name)):
        problems.append(f"metadata.name: Invalid value: {name!r}: must be a DNS-1123 subdomain")
    problems += label_problems(meta.get("labels") or {}, "metadata.labels")
    return problems


def label_problems(labels: Mapping[str, Any], where: str) -> list[str]:
    """Say which keys and values of a label map (or a selector's) an API server refuses."""
    problems = []
    for key, value in labels.items():
        prefix, _, label = str(key).rpartition("/")
        if not (len(label) <= 63 and _QUALIFIED.match(label)) or (
            prefix and not (len(prefix) <= 253 and _DNS_SUBDOMAIN.match(prefix))
        ):
            problems.append(f"{where}: Invalid value: {key!r}: not a qualified name")
        text = str(value)
        if text and not (len(text) <= 63 and _QUALIFIED.match(text)):
            problems.append(
                f"{where}: Invalid value: {text!r}: a label value must be 63 characters "
                "or fewer, alphanumeric at both ends"
            )
    return problems
