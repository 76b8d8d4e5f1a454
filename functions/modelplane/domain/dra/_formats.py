"""Kubernetes' format library: ``format.dns1123Label().validate(s)`` and friends.

Each named format validates a string the way apimachinery (and kube-openapi's strfmt)
does, with the same messages; ``validate`` returns ``optional.none()`` when the string is
valid and the list of problems otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modelplane.domain.dra import _net, _regex, _time
from modelplane.domain.dra import _values as v
from modelplane.domain.dra._values import NONE, NamedFormat, Optional

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + "(\\." + _LABEL + ")*"
_DNS1035 = "[a-z]([-a-z0-9]*[a-z0-9])?"
_KEY = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = "(" + _KEY + ")?"
_UUID = r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
_BASE64 = r"^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$"
_TIME = r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character"
)
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character"
)
_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character"
)


def _full(pattern: str) -> Callable[[str], bool]:
    regex = _regex.compile_regex("^" + pattern + "$")
    return regex.search


def _regex_error(message: str, pattern: str, *examples: str) -> str:
    if not examples:
        return f"{message} (regex used for validation is '{pattern}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def _max_len(length: int, unit: str = "characters") -> str:
    return f"must be no more than {length} {unit}"


def _dns1123_label(s: str) -> list[str]:
    errors = [_max_len(63)] if len(s.encode()) > 63 else []
    if not _full(_LABEL)(s):
        if _full(_SUBDOMAIN)(s):
            errors.append("must not contain dots")
        else:
            errors.append(_regex_error(_LABEL_MSG, _LABEL, "my-name", "123-abc"))
    return errors


def _dns1123_subdomain(s: str, unit: str = "characters") -> list[str]:
    errors = [_max_len(253, unit)] if len(s.encode()) > 253 else []
    if not _full(_SUBDOMAIN)(s):
        errors.append(_regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN, "example.com"))
    return errors


def _dns1035_label(s: str) -> list[str]:
    errors = [_max_len(63)] if len(s.encode()) > 63 else []
    if not _full(_DNS1035)(s):
        errors.append(_regex_error(_DNS1035_MSG, _DNS1035, "my-name", "abc-123"))
    return errors


def _qualified_name(s: str) -> list[str]:
    errors: list[str] = []
    parts = s.split("/")
    if len(parts) > 2:
        key_error = _regex_error(_KEY_MSG, _KEY, "MyName", "my.name", "123-abc")
        return [
            f"a valid label key {key_error} with an optional DNS subdomain prefix and '/' "
            "(e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend(f"prefix part {m}" for m in _dns1123_subdomain(prefix, "bytes"))
    if not name:
        errors.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errors.append("name part " + _max_len(63, "bytes"))
    if not _full(_KEY)(name):
        errors.append("name part " + _regex_error(_KEY_MSG, _KEY, "MyName", "my.name", "123-abc"))
    return errors


def _label_value(s: str) -> list[str]:
    errors = [_max_len(63, "bytes")] if len(s.encode()) > 63 else []
    if not _full(_LABEL_VALUE)(s):
        errors.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE, "MyValue", "my_value", "12345"))
    return errors


def _mask_trailing_dash(s: str) -> str:
    """apimachinery's ``maskTrailingDash`` (which drops two bytes, not one)."""
    raw = s.encode()
    if len(raw) > 1 and raw.endswith(b"-"):
        return (raw[:-2] + b"a").decode("utf-8", "replace")
    return s


def _prefix(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    return lambda s: check(_mask_trailing_dash(s))


def _uri(s: str) -> list[str]:
    if _net.is_url(s):
        return []
    return [f'parse "{s}": invalid URI for request']


def _uuid(s: str) -> list[str]:
    return [] if _regex.compile_regex(_UUID).search(s) else ["does not match the UUID format"]


def _byte(s: str) -> list[str]:
    return [] if _regex.compile_regex(_BASE64).search(s) else ["invalid base64"]


def _is_date(s: str) -> bool:
    if len(s) != 10 or s[4] != "-" or s[7] != "-":
        return False
    year, month, day = s[:4], s[5:7], s[8:]
    if not (year.isdigit() and month.isdigit() and day.isdigit() and s.isascii()):
        return False
    m = int(month)
    return 1 <= m <= 12 and 1 <= int(day) <= _time.days_in(m, int(year))


def _date(s: str) -> list[str]:
    return [] if _is_date(s) else ["invalid date"]


def _datetime(s: str) -> list[str]:
    if len(s.encode()) < 4:
        return ["invalid datetime"]
    parts = s.lower().split("t")
    if len(parts) < 2 or not _is_date(parts[0]):
        return ["invalid datetime"]
    match = _regex.compile_regex(_TIME)
    if not match.search(parts[1]):
        return ["invalid datetime"]
    hours, minutes, seconds = parts[1][0:2], parts[1][3:5], parts[1][6:8]
    if hours <= "23" and minutes <= "59" and seconds <= "59":
        return []
    return ["invalid datetime"]


_BASE64_SIZE = 84
_URL_SIZE = 1103
FORMATS: dict[str, tuple[str, int, Callable[[str], list[str]]]] = {
    "dns1123Label": ("DNS1123Label", 30, _dns1123_label),
    "dns1123Subdomain": ("DNS1123Subdomain", 60, _dns1123_subdomain),
    "dns1035Label": ("DNS1035Label", 30, _dns1035_label),
    "qualifiedName": ("QualifiedName", 60, _qualified_name),
    "dns1123LabelPrefix": ("DNS1123LabelPrefix", 30, _prefix(_dns1123_label)),
    "dns1123SubdomainPrefix": ("DNS1123SubdomainPrefix", 60, _prefix(_dns1123_subdomain)),
    "dns1035LabelPrefix": ("DNS1035LabelPrefix", 30, _prefix(_dns1035_label)),
    "labelValue": ("LabelValue", 40, _label_value),
    "uri": ("URI", _URL_SIZE, _uri),
    "uuid": ("uuid", len(_UUID), _uuid),
    "byte": ("byte", _BASE64_SIZE, _byte),
    "date": ("date", len(_TIME), _date),
    "datetime": ("datetime", len(_TIME), _datetime),
}
_BY_NAME = {name: key for key, (name, _, _) in FORMATS.items()}


def constant(key: str) -> NamedFormat:
    """``format.<key>()``."""
    name, size, _ = FORMATS[key]
    return NamedFormat(name, size)


def named(value: Any) -> Any:
    """``format.named(name)``: the format, or ``optional.none()``."""
    if not isinstance(value, str):
        raise v.no_overload()
    if value not in FORMATS:
        return NONE
    return Optional(True, constant(value))


def validate(fmt: Any, value: Any) -> Any:
    """``<format>.validate(s)``: ``optional.none()`` or the problems found."""
    if not isinstance(fmt, NamedFormat) or not isinstance(value, str):
        raise v.no_overload()
    errors = FORMATS[_BY_NAME[fmt.name]][2](value)
    return Optional(True, tuple(errors)) if errors else NONE
