"""Routing domain: endpoint URLs, backend names, label selection, addresses."""

from __future__ import annotations

import re

import pytest
from modelplane.domain import routing
from modelplane.domain.routing import HostKind, InvalidURLError, Upstream


@pytest.mark.parametrize(
    ("url", "want"),
    [
        pytest.param(
            "http://10.0.0.7/ml-team/qwen-1a2b3/v1",
            Upstream("http", "10.0.0.7", HostKind.IPV4, 80, "/ml-team/qwen-1a2b3/v1"),
            id="composed-endpoint-ipv4",
        ),
        pytest.param(
            "https://api.together.xyz/",
            Upstream("https", "api.together.xyz", HostKind.DNS, 443, "/"),
            id="docs-together-https-dns",
        ),
        pytest.param(
            "http://[2001:db8::1]/v1",
            Upstream("http", "2001:db8::1", HostKind.IPV6, 80, "/v1"),
            id="ipv6-default-port",
        ),
        pytest.param(
            "https://[2001:0db8:0000:0000:0000:0000:0000:0001]:8443",
            Upstream("https", "2001:db8::1", HostKind.IPV6, 8443, ""),
            id="ipv6-canonicalized-with-port",
        ),
        pytest.param(
            "HTTP://Inference.Example.COM.:8080/openai/v1",
            Upstream("http", "inference.example.com", HostKind.DNS, 8080, "/openai/v1"),
            id="dns-case-and-trailing-dot",
        ),
        pytest.param(
            "https://172.18.255.200",
            Upstream("https", "172.18.255.200", HostKind.IPV4, 443, ""),
            id="https-ipv4-no-path",
        ),
        pytest.param(
            "http://1.2.3.example:65535/",
            Upstream("http", "1.2.3.example", HostKind.DNS, 65535, "/"),
            id="numeric-labels-then-name",
        ),
    ],
)
def test_parse_url_accepts(url: str, want: Upstream) -> None:
    assert routing.parse_url(url) == want


@pytest.mark.parametrize(
    ("url", "says"),
    [
        pytest.param("", "empty", id="empty"),
        pytest.param("api.together.xyz/v1", "no scheme", id="no-scheme"),
        pytest.param("ftp://files.example.com/", "http or https, not 'ftp'", id="bad-scheme"),
        pytest.param("http://user:pw@example.com/", "credentials", id="userinfo"),
        pytest.param("http://example.com/v1?key=x", "a query", id="query"),
        pytest.param("http://example.com/v1#top", "a fragment", id="fragment"),
        pytest.param("http://example.com:0/", "from 1 to 65535, not 0", id="port-zero"),
        pytest.param("http://example.com:65536/", "from 1 to 65535, not 65536", id="port-high"),
        pytest.param("http://example.com:http/", "a number", id="port-name"),
        pytest.param("http://example.com:/", "a number", id="port-empty"),
        pytest.param("http://example.com:-1/", "a number", id="port-negative"),
        pytest.param("http:///v1", "no host", id="no-host"),
        pytest.param("http://:8080/", "no host", id="port-only"),
        pytest.param("http://256.1.1.1/", "not a valid IPv4 address", id="ipv4-octet"),
        pytest.param("http://10.0.0/", "not a valid IPv4 address", id="ipv4-short"),
        pytest.param("http://010.0.0.1/", "not a valid IPv4 address", id="ipv4-leading-zero"),
        pytest.param("http://127.0.0.1/", "loopback", id="ipv4-loopback"),
        pytest.param("http://0.0.0.0/", "unspecified", id="ipv4-unspecified"),
        pytest.param("http://169.254.1.1/", "link-local", id="ipv4-link-local"),
        pytest.param("http://224.0.0.5/", "link-local multicast", id="ipv4-ll-multicast"),
        pytest.param("http://[::1]/", "loopback", id="ipv6-loopback"),
        pytest.param("http://[fe80::1]/", "link-local", id="ipv6-link-local"),
        pytest.param("http://[fe80::1%25eth0]/", "zone", id="ipv6-zone"),
        pytest.param("http://[::ffff:10.0.0.1]/", "write the IPv4 address 10.0.0.1", id="v4mapped"),
        pytest.param("http://[2001:db8::1/", "no closing bracket", id="ipv6-unclosed"),
        pytest.param("http://[2001:db8::g]/", "not a valid IPv6 address", id="ipv6-bad"),
        pytest.param("http://[2001:db8::1]x/", "only :port may follow", id="ipv6-junk"),
        pytest.param("http://2001:db8::1/", "put it in brackets", id="ipv6-unbracketed"),
        pytest.param("http://localhost/", "not a fully qualified domain name", id="single-label"),
        pytest.param("http://my_host.example.com/", "not a valid DNS label", id="underscore"),
        pytest.param("http://-a.example.com/", "not a valid DNS label", id="leading-hyphen"),
        pytest.param("http://a..example.com/", "not a valid DNS label", id="empty-label"),
        pytest.param("http://" + "a" * 64 + ".com/", "not a valid DNS label", id="long-label"),
        pytest.param("http://" + "a." * 127 + "com/", "the limit is 253", id="long-name"),
        pytest.param("http://1.2.3.4.5/", "not a valid IPv4 address", id="five-numbers"),
        pytest.param("http://bücher.example/", "xn--", id="non-ascii"),
        pytest.param("http://exa mple.com/", "' '", id="space"),
        pytest.param("http://example.com/\n", "'\\n'", id="newline"),
    ],
)
def test_parse_url_rejects_with_a_precise_message(url: str, says: str) -> None:
    with pytest.raises(InvalidURLError, match=re.escape(says)):
        routing.parse_url(url)


@pytest.mark.parametrize(
    ("url", "want"),
    [
        pytest.param("https://user:token@host.example/v1", "https://redacted@host.example/v1"),
        pytest.param("https://token@host.example", "https://redacted@host.example", id="user-only"),
        pytest.param("http://u:p@[2001:db8::1]:8080/", "http://redacted@[2001:db8::1]:8080/"),
        pytest.param("user:token@host.example/v1", "redacted@host.example/v1", id="no-scheme"),
        pytest.param("ftp://u:p@files.example/", "ftp://redacted@files.example/", id="ftp"),
        pytest.param("https://u:p@q@host.example/", "https://redacted@host.example/", id="two-ats"),
        pytest.param("http://us/er:pw@host.example/", "http://redacted@host.example/", id="slash"),
        pytest.param("https://host.example/v1?mail=a@b", "https://host.example/v1?mail=a@b"),
        pytest.param("https://host.example/v1#a@b", "https://host.example/v1#a@b", id="fragment"),
        pytest.param("https://api.together.xyz/", "https://api.together.xyz/", id="none"),
        pytest.param("", "", id="empty"),
    ],
)
def test_redact_url(url: str, want: str) -> None:
    assert routing.redact_url(url) == want


SECRET = "s3cr3t-t0ken"


@pytest.mark.parametrize(
    "url",
    [
        f"https://user:{SECRET}@api.example.com/v1",
        f"user:{SECRET}@api.example.com/v1",
        f"https://user:{SECRET}@api.example.com/v1?x=1",
        f"https://user:{SECRET}@api.example.com/v1#top",
        f"ftp://user:{SECRET}@api.example.com/",
        f"user:{SECRET}@api.example.com://x",
        f"https://user:{SECRET}@[2001:db8::1/",
        f"https://user:{SECRET}@localhost/",
        f"https://user:{SECRET}@127.0.0.1/",
        f"https://user:{SECRET}@api.example.com:http/",
        f"https://us/er:{SECRET}@api.example.com/",
        # A '/' in the password ends the authority early: what reads as a port or host
        # is the password's start.
        f"https://user:{SECRET}/x@api.example.com/v1",
        f"https://{SECRET}:pa/ss@api.example.com/v1",
        f"https://user:{SECRET[:4]}/{SECRET[4:]}@api.example.com/v1",
        f"https://{SECRET}/@api.example.com/v1",
    ],
)
def test_no_message_echoes_credentials(url: str) -> None:
    with pytest.raises(InvalidURLError) as raised:
        routing.parse_url(url)
    assert SECRET not in str(raised.value)
    assert SECRET[:4] not in str(raised.value), "no part of it either"


def test_upstream_speaks_tls_only_for_https() -> None:
    assert routing.parse_url("https://api.together.xyz/").tls
    assert not routing.parse_url("http://10.0.0.7/").tls


@pytest.mark.parametrize(
    ("endpoint", "want"),
    [
        pytest.param("qwen3-8b-7323a", "qwen3-8b-7323a", id="valid-kept"),
        pytest.param("kimi-k2-together", "kimi-k2-together", id="docs-external"),
        pytest.param("kimi.together", "kimi-together-", id="dot-replaced"),
        pytest.param("8b-model", "me-8b-model-", id="leading-digit"),
    ],
)
def test_backend_name(endpoint: str, want: str) -> None:
    got = routing.backend_name(endpoint)
    assert got.startswith(want)
    assert re.fullmatch(r"[a-z]([a-z0-9-]{0,61}[a-z0-9])?", got), got


def test_backend_name_of_long_names_is_short_stable_and_distinct() -> None:
    first = routing.backend_name("a." * 100 + "x")
    second = routing.backend_name("a." * 100 + "y")
    assert len(first) <= 63
    assert first != second
    assert routing.backend_name("a." * 100 + "x") == first


@pytest.mark.parametrize(
    ("selector", "labels", "want"),
    [
        pytest.param({"d": "qwen"}, {"d": "qwen", "c": "east"}, True, id="subset"),
        pytest.param({"d": "qwen", "c": "east"}, {"d": "qwen", "c": "east"}, True, id="all"),
        pytest.param({"d": "qwen", "c": "west"}, {"d": "qwen", "c": "east"}, False, id="one-off"),
        pytest.param({"d": "qwen"}, {}, False, id="unlabelled"),
        pytest.param({}, {"d": "qwen"}, True, id="empty-selects-all"),
    ],
)
def test_matches(selector: dict[str, str], labels: dict[str, str], want: bool) -> None:
    assert routing.matches(selector, labels) is want


@pytest.mark.parametrize(
    ("gateway", "want"),
    [
        pytest.param("172.18.255.200", "http://172.18.255.200/ml-team/qwen", id="ipv4"),
        pytest.param("2001:db8::5", "http://[2001:db8::5]/ml-team/qwen", id="ipv6-bracketed"),
        pytest.param("gw.example.com", "http://gw.example.com/ml-team/qwen", id="hostname"),
    ],
)
def test_service_address(gateway: str, want: str) -> None:
    assert routing.service_address(gateway, "ml-team", "qwen") == want


def test_route_prefix_has_both_slashes() -> None:
    assert routing.route_prefix("ml-team", "qwen") == "/ml-team/qwen/"
