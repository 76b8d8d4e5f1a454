"""Kubernetes' IP, CIDR and URL CEL libraries with Go's parsing (net/netip, net/url)."""

from __future__ import annotations

import ipaddress
from typing import Any, TypeVar

from modelplane.domain.dra import _values as v
from modelplane.domain.dra._values import CIDR, IP, URL, EvalError

_T = TypeVar("_T")

# -- IP and CIDR ------------------------------------------------------------------------------


def _parse_addr(text: str) -> IP | None:
    """Go's ``netip.ParseAddr`` without zones, refusing IPv4-mapped IPv6 (as Kubernetes)."""
    if "%" in text or not text:
        return None
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return None
    return IP(address.packed)


def parse_ip(text: str) -> IP:
    return _parsed(
        _parse_addr(text), f"IP Address {text!r} parse error during conversion from string"
    )


def ip_string(address: IP) -> str:
    if address.v4:
        return str(ipaddress.IPv4Address(address.packed))
    return ipaddress.IPv6Address(address.packed).compressed


def parse_cidr(text: str) -> CIDR:
    return _parsed(
        _parse_prefix(text), f"network address parse error during conversion from string: {text!r}"
    )


def _parsed(value: _T | None, error: str) -> _T:
    """What ``ip()`` and ``cidr()`` parsed, or their conversion error."""
    if value is None:
        raise EvalError(error)
    return value


def _parse_prefix(text: str) -> CIDR | None:
    """Go's ``netip.ParsePrefix`` (no zones, bits without sign or leading zeros)."""
    address_text, slash, bits_text = text.rpartition("/")
    if not slash:
        return None
    address = _parse_addr(address_text)
    if address is None:
        return None
    if len(bits_text) > 1 and not "1" <= bits_text[0] <= "9":
        return None
    if not bits_text or not bits_text.isascii() or not bits_text.isdigit():
        return None
    bits = int(bits_text)
    if bits > (32 if address.v4 else 128):
        return None
    return CIDR(address, bits)


def cidr_string(cidr: CIDR) -> str:
    return f"{ip_string(cidr.ip)}/{cidr.bits}"


def _as_int(address: IP) -> int:
    return int.from_bytes(address.packed, "big")


def _mask(address: IP, bits: int) -> int:
    width = len(address.packed) * 8
    return _as_int(address) >> (width - bits) << (width - bits) if bits else 0


def to_ip(value: Any) -> Any:
    if isinstance(value, CIDR):
        return value.ip
    return parse_ip(v.expect(value, str))


def to_cidr(value: Any) -> Any:
    return parse_cidr(v.expect(value, str))


def is_ip(value: Any) -> Any:
    return _parse_addr(v.expect(value, str)) is not None


def is_cidr(value: Any) -> Any:
    return _parse_prefix(v.expect(value, str)) is not None


def is_canonical(value: Any) -> Any:
    return ip_string(parse_ip(v.expect(value, str))) == value


def family(value: Any) -> Any:
    return 4 if v.expect(value, IP).v4 else 6


def is_unspecified(value: Any) -> Any:
    return _as_int(v.expect(value, IP)) == 0


def is_loopback(value: Any) -> Any:
    address = v.expect(value, IP)
    if address.v4:
        return address.packed[0] == 127
    return _as_int(address) == 1


def is_link_local_multicast(value: Any) -> Any:
    address = v.expect(value, IP)
    if address.v4:
        return address.packed[:3] == b"\xe0\x00\x00"
    return address.packed[0] == 0xFF and address.packed[1] & 0x0F == 0x02


def is_link_local_unicast(value: Any) -> Any:
    address = v.expect(value, IP)
    if address.v4:
        return address.packed[:2] == b"\xa9\xfe"
    return address.packed[0] == 0xFE and address.packed[1] & 0xC0 == 0x80


def is_global_unicast(value: Any) -> Any:
    """Go's ``Addr.IsGlobalUnicast`` (private ranges count as global)."""
    address = v.expect(value, IP)
    if address.v4 and address.packed == b"\xff\xff\xff\xff":
        return False
    first = address.packed[0]
    multicast = first & 0xF0 == 0xE0 if address.v4 else first == 0xFF
    return not (
        is_unspecified(address)
        or is_loopback(address)
        or multicast
        or is_link_local_unicast(address)
    )


def prefix_length(value: Any) -> Any:
    return v.expect(value, CIDR).bits


def masked(value: Any) -> Any:
    cidr = v.expect(value, CIDR)
    width = len(cidr.ip.packed)
    return CIDR(IP(_mask(cidr.ip, cidr.bits).to_bytes(width, "big")), cidr.bits)


def contains_ip(value: Any, other: Any) -> Any:
    cidr = v.expect(value, CIDR)
    address = v.expect(parse_ip(other) if isinstance(other, str) else other, IP)
    if len(address.packed) != len(cidr.ip.packed):
        return False
    return _mask(address, cidr.bits) == _mask(cidr.ip, cidr.bits)


def contains_cidr(value: Any, other: Any) -> Any:
    cidr = v.expect(value, CIDR)
    inner = v.expect(parse_cidr(other) if isinstance(other, str) else other, CIDR)
    if len(inner.ip.packed) != len(cidr.ip.packed):
        return False
    bits = min(cidr.bits, inner.bits)
    overlaps = _mask(cidr.ip, bits) == _mask(inner.ip, bits)
    return overlaps and cidr.bits <= inner.bits


def to_string(value: Any) -> str:
    if isinstance(value, IP):
        return ip_string(value)
    return cidr_string(v.expect(value, CIDR))


# -- URL --------------------------------------------------------------------------------------

_UNRESERVED = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_HEXDIGITS = frozenset(b"0123456789abcdefABCDEF")
_PATH, _HOST, _ZONE, _USER, _QUERY, _FRAGMENT = range(6)


def _should_escape(c: int, mode: int) -> bool:
    """Go's ``shouldEscape`` for one byte."""
    if c in _UNRESERVED:
        return False
    char = chr(c)
    if mode in (_HOST, _ZONE) and char in "!$&'()*+,;=:[]<>\"":
        return False
    if char in "-_.~":
        return False
    if char in "$&+,/:;=?@":
        if mode == _PATH:
            return char == "?"
        if mode == _USER:
            return char in "@/?:"
        if mode == _QUERY:
            return True
        if mode == _FRAGMENT:
            return False
    return not (mode == _FRAGMENT and char in "!()*")


class _URLError(ValueError):
    pass


def _unescape(s: bytes, mode: int) -> bytes:
    i = 0
    while i < len(s):
        c = s[i]
        if c == 0x25:  # %
            if i + 2 >= len(s) or s[i + 1] not in _HEXDIGITS or s[i + 2] not in _HEXDIGITS:
                msg = "invalid URL escape"
                raise _URLError(msg)
            if mode == _HOST and int(chr(s[i + 1]), 16) < 8 and s[i : i + 3] != b"%25":
                msg = "invalid URL escape"
                raise _URLError(msg)
            if mode == _ZONE:
                value = int(s[i + 1 : i + 3], 16)
                if s[i : i + 3] != b"%25" and value != 0x20 and _should_escape(value, _HOST):
                    msg = "invalid URL escape"
                    raise _URLError(msg)
            i += 3
            continue
        if mode in (_HOST, _ZONE) and c < 0x80 and _should_escape(c, mode):
            msg = "invalid character in host name"
            raise _URLError(msg)
        i += 1
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c == 0x25:
            out.append(int(s[i + 1 : i + 3], 16))
            i += 3
        elif c == 0x2B and mode == _QUERY:
            out.append(0x20)
            i += 1
        else:
            out.append(c)
            i += 1
    return bytes(out)


def _escape(s: bytes, mode: int) -> bytes:
    out = bytearray()
    for c in s:
        if c == 0x20 and mode == _QUERY:
            out.append(0x2B)
        elif _should_escape(c, mode):
            out.extend(f"%{c:02X}".encode())
        else:
            out.append(c)
    return bytes(out)


def _valid_port(port: bytes) -> bool:
    return not port or (port[:1] == b":" and all(0x30 <= c <= 0x39 for c in port[1:]))


def _scheme(raw: bytes) -> tuple[bytes, bytes]:
    for i, c in enumerate(raw):
        if 0x61 <= c <= 0x7A or 0x41 <= c <= 0x5A:
            continue
        if 0x30 <= c <= 0x39 or c in b"+-.":
            if i == 0:
                return b"", raw
            continue
        if c == 0x3A:
            if i == 0:
                msg = "missing protocol scheme"
                raise _URLError(msg)
            return raw[:i], raw[i + 1 :]
        return b"", raw
    return b"", raw


def _parse_host(scheme: bytes, host: bytes) -> bytes:
    bracket = host.rfind(b"[")
    if bracket > 0:
        msg = "invalid IP-literal"
        raise _URLError(msg)
    if bracket == 0:
        close = host.rfind(b"]")
        if close < 0:
            msg = "missing ']' in host"
            raise _URLError(msg)
        colon_port = host[close + 1 :]
        if not _valid_port(colon_port):
            msg = "invalid port after host"
            raise _URLError(msg)
        port = _unescape(colon_port, _HOST)
        name = host[1:close]
        zone = name.find(b"%25")
        if zone >= 0:
            literal = _unescape(name[:zone], _HOST) + _unescape(name[zone:], _ZONE)
        else:
            literal = _unescape(name, _HOST)
        text = literal.decode("utf-8", "replace")
        address, _, zone_text = text.partition("%")
        try:
            parsed = ipaddress.ip_address(address)
        except ValueError:
            msg = "invalid host"
            raise _URLError(msg) from None
        if isinstance(parsed, ipaddress.IPv4Address) or (zone_text == "" and "%" in text):
            msg = "invalid IP-literal"
            raise _URLError(msg)
        return b"[" + literal + b"]" + port
    first = host.find(b":")
    if first != -1:
        last = host.rfind(b":")
        index = last if last != first else first
        if not _valid_port(host[index:]):
            msg = "invalid port after host"
            raise _URLError(msg)
    return _unescape(host, _HOST)


_USERINFO = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._:~!$&'()*+,;=%@"
)


def _parse_authority(scheme: bytes, authority: bytes) -> tuple[bytes | None, bytes]:
    at = authority.rfind(b"@")
    host = _parse_host(scheme, authority[at + 1 :] if at >= 0 else authority)
    if at < 0:
        return None, host
    userinfo = authority[:at]
    if not all(c in _USERINFO for c in userinfo):
        msg = "invalid userinfo"
        raise _URLError(msg)
    name, colon, password = userinfo.partition(b":")
    user = _escape(_unescape(name, _USER), _USER)
    if colon:
        user += b":" + _escape(_unescape(password, _USER), _USER)
    return user, host


class _Parsed:
    def __init__(self) -> None:
        self.scheme = b""
        self.opaque = b""
        self.user: bytes | None = None
        self.host = b""
        self.path = b""
        self.raw_path = b""
        self.raw_query = b""
        self.force_query = False
        self.omit_host = False
        self.fragment = b""
        self.raw_fragment = b""


def _parse(raw: bytes, via_request: bool) -> _Parsed:
    if any(c < 0x20 or c == 0x7F for c in raw):
        msg = "invalid control character in URL"
        raise _URLError(msg)
    if not raw and via_request:
        msg = "empty url"
        raise _URLError(msg)
    url = _Parsed()
    if raw == b"*":
        url.path = b"*"
        return url
    scheme, rest = _scheme(raw)
    url.scheme = scheme.lower()
    if rest.endswith(b"?") and rest.count(b"?") == 1:
        url.force_query = True
        rest = rest[:-1]
    else:
        rest, _, url.raw_query = rest.partition(b"?")
    if not rest.startswith(b"/"):
        if url.scheme:
            url.opaque = rest
            return url
        if via_request:
            msg = "invalid URI for request"
            raise _URLError(msg)
        if b":" in rest.partition(b"/")[0]:
            msg = "first path segment in URL cannot contain colon"
            raise _URLError(msg)
    if (url.scheme or (not via_request and not rest.startswith(b"///"))) and rest.startswith(b"//"):
        authority, slash, path = rest[2:].partition(b"/")
        rest = slash + path
        url.user, url.host = _parse_authority(url.scheme, authority)
    elif url.scheme and rest.startswith(b"/"):
        url.omit_host = True
    url.path = _unescape(rest, _PATH)
    url.raw_path = b"" if _escape(url.path, _PATH) == rest else rest
    return url


def _escaped_path(url: _Parsed) -> bytes:
    if url.raw_path and _valid_encoded(url.raw_path):
        try:
            if _unescape(url.raw_path, _PATH) == url.path:
                return url.raw_path
        except _URLError:
            pass
    if url.path == b"*":
        return b"*"
    return _escape(url.path, _PATH)


def _valid_encoded(s: bytes) -> bool:
    return all(c in b"!$&'()*+,;=:@[]%" or not _should_escape(c, _PATH) for c in s)


def _string(url: _Parsed, path: bytes) -> bytes:
    out = bytearray()
    if url.scheme:
        out += url.scheme + b":"
    if url.opaque:
        out += url.opaque
    else:
        if (url.scheme or url.host or url.user is not None) and not (
            url.omit_host and not url.host and url.user is None
        ):
            if url.host or url.path or url.user is not None:
                out += b"//"
            if url.user is not None:
                out += url.user + b"@"
            if url.host:
                out += _escape(url.host, _HOST)
        if path and path[:1] != b"/" and url.host:
            out += b"/"
        if not out and b":" in path.partition(b"/")[0]:
            out += b"./"
        out += path
    if url.force_query or url.raw_query:
        out += b"?" + url.raw_query
    if url.fragment:
        out += b"#" + _escaped_fragment(url)
    return bytes(out)


def _escaped_fragment(url: _Parsed) -> bytes:
    raw = url.raw_fragment
    if raw and all(c in b"!$&'()*+,;=:@[]%" or not _should_escape(c, _FRAGMENT) for c in raw):
        try:
            if _unescape(raw, _FRAGMENT) == url.fragment:
                return raw
        except _URLError:
            pass
    return _escape(url.fragment, _FRAGMENT)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def parse_url(text: str) -> URL:
    """Kubernetes' ``url()``: ``url.ParseRequestURI`` must accept it, ``url.Parse`` reads it."""
    raw = text.encode()
    try:
        _parse(raw, via_request=True)
        head, hash_mark, fragment = raw.partition(b"#")
        url = _parse(head, via_request=False)
        if hash_mark and fragment:
            url.fragment = _unescape(fragment, _FRAGMENT)
            url.raw_fragment = b"" if _escape(url.fragment, _FRAGMENT) == fragment else fragment
    except _URLError as err:
        msg = f"URL parse error during conversion from string: {err}"
        raise EvalError(msg) from None
    path = _escaped_path(url)
    return URL(
        scheme=_text(url.scheme),
        opaque=_text(url.opaque),
        user=_text(url.user or b""),
        host=_text(url.host),
        path=_text(path),
        raw_path=_text(url.raw_path),
        raw_query=_text(url.raw_query),
        fragment=_text(url.fragment),
        text=_text(_string(url, path)),
    )


def is_url(value: Any) -> Any:
    try:
        _parse(v.expect(value, str).encode(), via_request=True)
    except _URLError:
        return False
    return True


def to_url(value: Any) -> Any:
    return parse_url(v.expect(value, str))


def _split_host_port(host: str) -> tuple[str, str]:
    port = ""
    colon = host.rfind(":")
    if colon != -1 and _valid_port(host[colon:].encode()):
        host, port = host[:colon], host[colon + 1 :]
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, port


def get_scheme(value: Any) -> Any:
    return v.expect(value, URL).scheme


def get_host(value: Any) -> Any:
    return v.expect(value, URL).host


def get_hostname(value: Any) -> Any:
    return _split_host_port(v.expect(value, URL).host)[0]


def get_port(value: Any) -> Any:
    return _split_host_port(v.expect(value, URL).host)[1]


def get_escaped_path(value: Any) -> Any:
    return v.expect(value, URL).path


def get_query(value: Any) -> Any:
    """Go's ``url.Query()``: bad pairs are skipped, values keep their order."""
    query = v.expect(value, URL).raw_query.encode()
    out: dict[str, list[str]] = {}
    for pair in query.split(b"&") if query else []:
        if b";" in pair or not pair:
            continue
        key, _, val = pair.partition(b"=")
        try:
            k, value_bytes = _unescape(key, _QUERY), _unescape(val, _QUERY)
        except _URLError:
            continue
        out.setdefault(_text(k), []).append(_text(value_bytes))
    return {k: tuple(vals) for k, vals in out.items()}
