"""Routing on the control plane: endpoint URLs, backend names, selection and traffic weights.

Pure: plain values in and out. The compose functions of ModelEndpoint, ModelService and
InferenceGateway turn these values into Kubernetes and Gateway API objects.

Three questions are answered here:

- **What is an endpoint's URL?** :func:`parse_url` accepts ``http`` or ``https`` with an
  IPv4 address, a bracketed IPv6 address or a DNS name, and an optional port (80 or 443
  by default). It rejects what a gateway backend cannot express (credentials, a query, a
  fragment) and what Kubernetes would refuse in an EndpointSlice (loopback, link-local,
  unspecified addresses), each with a message that says what is wrong. No message
  echoes a URL's user info (``https://user:token@host/``): :func:`redact_url` hides it,
  and every caller that puts a URL in a condition or an event uses it too.
- **Which endpoints does a service route to?** :func:`matches` is a label selector's
  ``matchLabels``: every label must be present with the same value.
- **How much traffic does each endpoint get?** :func:`split` gives every
  ``spec.endpoints`` entry its weight as its share of the traffic, spread evenly over
  the endpoints it matches, and expresses the result as the smallest integers that keep
  every share exact (or, when the exact integers would pass Gateway API's bound of
  1,000,000, the closest integers within it).
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction

MAX_WEIGHT = 1_000_000
"""Gateway API's upper bound on a backendRef's weight."""

MAX_BACKENDS = 16
"""Gateway API's upper bound on the backendRefs of one HTTPRoute rule."""

DEFAULT_PORTS = {"http": 80, "https": 443}

GATEWAY_NAME = "modelplane"
"""The control-plane Gateway, which the InferenceGateway composes and every route attaches to."""

GATEWAY_NAMESPACE = "modelplane-system"
"""Where the control-plane Gateway lives (the namespace Modelplane's prerequisites create)."""

GATEWAY_LISTENER = "http"
"""The Gateway's one listener; it admits routes from every namespace."""

_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
_DNS1035 = re.compile(r"[a-z]([a-z0-9-]{0,61}[a-z0-9])?")
_FORBIDDEN_CHARS = re.compile(r"[\s\x00-\x1f\x7f\\]")


class HostKind(Enum):
    """How an endpoint's host is written, which decides the EndpointSlice's addressType."""

    IPV4 = "IPv4"
    IPV6 = "IPv6"
    DNS = "FQDN"


@dataclass(frozen=True)
class Upstream:
    """A parsed endpoint URL.

    Attributes:
        scheme: ``http`` or ``https``.
        host: The IP address in canonical form (IPv6 without brackets), or the DNS name
            in lower case without a trailing dot.
        kind: Whether ``host`` is an IPv4 address, an IPv6 address or a DNS name.
        port: The explicit port, or 80 for http and 443 for https.
        path: The URL's path ("" when it has none). Routing ignores it: the endpoint's
            ``rewritePath`` says where requests go.
    """

    scheme: str
    host: str
    kind: HostKind
    port: int
    path: str = ""

    @property
    def tls(self) -> bool:
        """Tell whether the gateway must speak TLS to this upstream."""
        return self.scheme == "https"


REDACTED = "redacted"
"""What stands in for a URL's user info in a message."""


class InvalidURLError(ValueError):
    """An endpoint URL that cannot be routed to; the message says what is wrong."""


def redact_url(text: str) -> str:
    """Return ``text`` with the URL's user info, if any, replaced by ``redacted``.

    ``https://user:token@host/v1`` becomes ``https://redacted@host/v1``. The user info
    is everything before the last ``@`` ahead of any query or fragment (with or without
    a scheme), so even a malformed URL (a ``/`` in a password, say) leaks nothing: a
    path that holds ``@`` is hidden up to it too. Text without ``@`` is returned as is.

    Args:
        text: A URL, well-formed or not, as a user wrote it.
    """
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "", text
    head = re.split(r"[?#]", rest, maxsplit=1)[0]
    at = head.rfind("@")
    if at < 0:
        return text
    return f"{scheme}{sep}{REDACTED}{rest[at:]}"


def parse_url(text: str) -> Upstream:
    """Parse an endpoint URL.

    Args:
        text: The URL, e.g. ``http://10.0.0.7/ml-team/qwen-1a2b3/v1`` or
            ``https://api.together.xyz/``.

    Returns:
        The parsed upstream.

    Raises:
        InvalidURLError: The URL is not an http(s) URL the gateway can route to.
    """
    if not text:
        msg = "the URL is empty"
        raise InvalidURLError(msg)
    if bad := _FORBIDDEN_CHARS.search(text):
        msg = f"the URL contains {bad.group()!r}, which a URL may not hold unescaped"
        raise InvalidURLError(msg)
    scheme, sep, rest = text.partition("://")
    if not sep:
        shown = redact_url(text)
        msg = f"{shown!r} has no scheme: write it as http://host[:port]/path or https://..."
        raise InvalidURLError(msg)
    scheme = scheme.lower()
    if scheme not in DEFAULT_PORTS:
        msg = f"the scheme must be http or https, not {redact_url(scheme)!r}"
        raise InvalidURLError(msg)
    for mark, what in (("#", "a fragment"), ("?", "a query")):
        if mark in rest:
            msg = f"the URL has {what} ({mark}...); an endpoint URL is a base URL without one"
            raise InvalidURLError(msg)
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        raise InvalidURLError(_CREDENTIALS)
    try:
        host, port = _split_authority(authority, scheme)
        kind, host = _classify(host)
    except InvalidURLError:
        if "@" in path:
            # ``user:pa/ss@host``: the authority ends at the password's ``/``, and what
            # reads as its host or port is part of the credentials: say nothing of it.
            raise InvalidURLError(_CREDENTIALS) from None
        raise
    return Upstream(scheme=scheme, host=host, kind=kind, port=port, path=slash + path)


_CREDENTIALS = "the URL carries credentials (user@host); they are not supported in an endpoint URL"


def _split_authority(authority: str, scheme: str) -> tuple[str, int]:
    if not authority:
        msg = "the URL has no host"
        raise InvalidURLError(msg)
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            msg = f"the IPv6 address in {authority!r} has no closing bracket"
            raise InvalidURLError(msg)
        host, after = authority[: end + 1], authority[end + 1 :]
        if after and not after.startswith(":"):
            msg = f"unexpected {after!r} after the IPv6 address; only :port may follow it"
            raise InvalidURLError(msg)
        port_text = after[1:] if after else None
    else:
        host, colon, port_text_raw = authority.partition(":")
        port_text = port_text_raw if colon else None
        if port_text is not None and ":" in port_text:
            msg = f"{authority!r} looks like an IPv6 address: put it in brackets, [addr]:port"
            raise InvalidURLError(msg)
    return host, _port(port_text, scheme)


def _port(text: str | None, scheme: str) -> int:
    if text is None:
        return DEFAULT_PORTS[scheme]
    if not text.isascii() or not text.isdigit():
        msg = f"the port must be a number from 1 to 65535, not {text!r}"
        raise InvalidURLError(msg)
    port = int(text)
    if not 1 <= port <= 65535:
        msg = f"the port must be from 1 to 65535, not {port}"
        raise InvalidURLError(msg)
    return port


def _classify(host: str) -> tuple[HostKind, str]:
    if not host:
        msg = "the URL has no host"
        raise InvalidURLError(msg)
    if host.startswith("["):
        return HostKind.IPV6, _ipv6(host[1:-1])
    if all(part.isdigit() for part in host.split(".") if part) and host.replace(".", ""):
        return HostKind.IPV4, _ipv4(host)
    return HostKind.DNS, _dns_name(host)


def _ipv4(text: str) -> str:
    try:
        address = ipaddress.IPv4Address(text)
    except ValueError as err:
        msg = f"{text!r} is not a valid IPv4 address ({err})"
        raise InvalidURLError(msg) from err
    _reject_special(address)
    return str(address)


def _ipv6(text: str) -> str:
    if "%" in text:
        msg = f"the IPv6 address {text!r} has a zone (%...), which a backend cannot use"
        raise InvalidURLError(msg)
    try:
        address = ipaddress.IPv6Address(text)
    except ValueError as err:
        msg = f"{text!r} is not a valid IPv6 address ({err})"
        raise InvalidURLError(msg) from err
    if address.ipv4_mapped is not None:
        mapped = address.ipv4_mapped
        msg = f"{text!r} is an IPv4-mapped IPv6 address; write the IPv4 address {mapped}"
        raise InvalidURLError(msg)
    _reject_special(address)
    return address.compressed


def _reject_special(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
    """Refuse the addresses Kubernetes refuses in an EndpointSlice, before it does."""
    problem = (
        "is unspecified"
        if address.is_unspecified
        else "is a loopback address"
        if address.is_loopback
        else "is a link-local address"
        if address.is_link_local
        else "is a link-local multicast address"
        if _link_local_multicast(address)
        else ""
    )
    if problem:
        msg = f"{address} {problem}; the gateway cannot route to it"
        raise InvalidURLError(msg)


def _link_local_multicast(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv4Address):
        return address in ipaddress.IPv4Network("224.0.0.0/24")
    return address in ipaddress.IPv6Network("ff02::/16")


def _dns_name(text: str) -> str:
    name = text.lower().removesuffix(".")
    if not name.isascii():
        msg = f"the host {text!r} is not ASCII; write an internationalized name in its xn-- form"
        raise InvalidURLError(msg)
    if len(name) > 253:
        msg = f"the host name is {len(name)} characters long; the limit is 253"
        raise InvalidURLError(msg)
    labels = name.split(".")
    if len(labels) < 2:
        msg = f"the host {text!r} is not a fully qualified domain name (e.g. api.example.com)"
        raise InvalidURLError(msg)
    for label in labels:
        if not _LABEL.fullmatch(label):
            msg = (
                f"{label!r} in the host {text!r} is not a valid DNS label: 1 to 63 letters, "
                "digits or '-', neither starting nor ending with '-'"
            )
            raise InvalidURLError(msg)
    if labels[-1].isdigit():
        msg = f"the host {text!r} ends in a numeric label: neither an IPv4 address nor a DNS name"
        raise InvalidURLError(msg)
    return name


def backend_name(endpoint: str) -> str:
    """Return the name of the Service that fronts an endpoint (a valid DNS-1035 label).

    The endpoint's own name when it is one, so the two are easy to relate; otherwise
    the name made valid (lower case, '-' for anything else, a leading letter), cut to
    57 characters, plus a short hash of the original so distinct names stay distinct.

    Args:
        endpoint: The ModelEndpoint's name.
    """
    if _DNS1035.fullmatch(endpoint):
        return endpoint
    cleaned = re.sub(r"[^a-z0-9-]+", "-", endpoint.lower()).strip("-")
    if not cleaned[:1].isalpha():
        cleaned = "me-" + cleaned
    digest = hashlib.sha256(endpoint.encode()).hexdigest()[:5]
    return f"{cleaned[:57].rstrip('-')}-{digest}"


def matches(match_labels: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """Tell whether an object with ``labels`` is selected by ``match_labels``.

    Every selector label must be present with the same value; an empty selector selects
    everything, as in Kubernetes.
    """
    return all(labels.get(key) == value for key, value in match_labels.items())


def route_prefix(namespace: str, name: str) -> str:
    """Return the path prefix a ModelService serves under: ``/<namespace>/<name>/``."""
    return f"/{namespace}/{name}/"


def service_address(gateway: str, namespace: str, name: str) -> str:
    """Return a ModelService's public address, ``http://<gateway>/<namespace>/<name>``.

    Args:
        gateway: The gateway's address: an IP address or a host name. An IPv6 address
            is bracketed, as a URL requires.
        namespace: The service's namespace.
        name: The service's name.
    """
    host = gateway.strip()
    try:
        if isinstance(ipaddress.ip_address(host), ipaddress.IPv6Address):
            host = f"[{host}]"
    except ValueError:
        pass  # a host name goes in as it is
    return f"http://{host}/{namespace}/{name}"


@dataclass(frozen=True)
class Entry:
    """One ``spec.endpoints`` entry of a ModelService, resolved.

    Attributes:
        weight: The entry's relative weight (0 sends it no traffic).
        endpoints: The names of the routable endpoints it matches.
    """

    weight: int
    endpoints: tuple[str, ...]


@dataclass(frozen=True)
class Split:
    """How a service's traffic is shared among its backends.

    Attributes:
        weights: (endpoint name, integer weight), sorted by name; each endpoint once.
        exact: Whether the integer weights give every entry exactly its share. False
            only when exact integers would pass :data:`MAX_WEIGHT`.
        dropped: Endpoints left out to stay within :data:`MAX_BACKENDS`, sorted.
    """

    weights: tuple[tuple[str, int], ...]
    exact: bool = True
    dropped: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, int]:
        """Return the weights by endpoint name."""
        return dict(self.weights)


def split(
    entries: Sequence[Entry],
    *,
    max_backends: int = MAX_BACKENDS,
    max_weight: int = MAX_WEIGHT,
) -> Split:
    """Share a service's traffic among the endpoints its entries match.

    Each entry takes ``weight / sum(weights)`` of the traffic (entries that match no
    endpoint take none, so the others share it), spread evenly over the endpoints it
    matches: adding replicas to a deployment never changes its entry's share. An
    endpoint matched by several entries is one backend whose share is the sum of what
    each entry gives it, so every entry still gets exactly its own share.

    When more endpoints match than one HTTPRoute rule can hold, endpoints are kept in
    turns, one per entry (entries with a weight first, in order; each entry's endpoints
    by name), so every entry keeps at least one endpoint and its full share.

    Args:
        entries: The service's entries, in spec order.
        max_backends: At most this many backends.
        max_weight: No integer weight above this.

    Returns:
        Integer weights, as small as keeps the shares exact when that fits.
    """
    kept = _keep(entries, max_backends)
    every = {name for entry in entries for name in entry.endpoints}
    trimmed = [
        Entry(e.weight, tuple(sorted({n for n in e.endpoints if n in kept}))) for e in entries
    ]
    shares = _shares(trimmed)
    weights, exact = _integers(shares, max_weight)
    return Split(
        weights=tuple(sorted(weights.items())),
        exact=exact,
        dropped=tuple(sorted(every - kept)),
    )


def _keep(entries: Sequence[Entry], limit: int) -> set[str]:
    order = sorted(range(len(entries)), key=lambda i: (entries[i].weight <= 0, i))
    queues = [sorted(set(entries[i].endpoints)) for i in order]
    kept: set[str] = set()
    while len(kept) < limit and any(queues):
        for queue in queues:
            while queue and queue[0] in kept:
                queue.pop(0)
            if queue and len(kept) < limit:
                kept.add(queue.pop(0))
    return kept


def _shares(entries: Sequence[Entry]) -> dict[str, Fraction]:
    shares: dict[str, Fraction] = {}
    for entry in entries:
        for name in entry.endpoints:
            given = Fraction(max(entry.weight, 0), len(entry.endpoints))
            shares[name] = shares.get(name, Fraction(0)) + given
    return shares


def _integers(shares: Mapping[str, Fraction], max_weight: int) -> tuple[dict[str, int], bool]:
    if not shares:
        return {}, True
    common = math.lcm(*(share.denominator for share in shares.values()))
    exact = {name: int(share * common) for name, share in shares.items()}
    exact = _reduced(exact)
    if max(exact.values()) <= max_weight:
        return exact, True
    top = max(shares.values())
    scaled = {
        name: max(1, round(share * max_weight / top)) if share > 0 else 0
        for name, share in shares.items()
    }
    return _reduced(scaled), False


def _reduced(weights: Mapping[str, int]) -> dict[str, int]:
    divisor = math.gcd(*weights.values())
    if divisor <= 1:
        return dict(weights)
    return {name: weight // divisor for name, weight in weights.items()}


def entry_shares(entries: Sequence[Entry], weights: Mapping[str, int]) -> list[Fraction]:
    """Return the share of traffic each entry receives under ``weights``.

    An endpoint's weight is divided among the entries that match it in proportion to
    what each entry gives it, which is how :func:`split` built it. Used to check and
    report a split.

    Args:
        entries: The entries the split was built from.
        weights: The integer weights by endpoint name.
    """
    total = sum(weights.values())
    present = [Entry(e.weight, tuple(n for n in e.endpoints if n in weights)) for e in entries]
    given = _shares(present)
    result = []
    for entry in entries:
        names = [n for n in entry.endpoints if n in weights]
        share = Fraction(0)
        for name in names:
            if total and given[name]:
                part = Fraction(max(entry.weight, 0), len(names)) / given[name]
                share += part * Fraction(weights[name], total)
        result.append(share)
    return result
