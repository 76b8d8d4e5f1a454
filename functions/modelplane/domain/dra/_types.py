"""CEL types for the checker, and the function declarations of the DRA environment."""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.domain.dra._environment import FEATURE_GATES

TIME_GETTERS = (
    "getFullYear",
    "getMonth",
    "getDayOfYear",
    "getDayOfMonth",
    "getDate",
    "getDayOfWeek",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
)
"""The timestamp (and, from getHours on, duration) accessors, in cel-go's order."""


@dataclass(frozen=True)
class Type:
    """A CEL type. ``kind`` is a primitive name, ``list``, ``map``, ``type``, ``param``
    (a type parameter, named by ``name``) or ``object`` (named by ``name``)."""

    kind: str
    params: tuple[Type, ...] = ()
    name: str = ""

    def __str__(self) -> str:
        if self.kind == "list":
            return f"list({self.params[0]})"
        if self.kind == "map":
            return f"map({self.params[0]}, {self.params[1]})"
        if self.kind == "type":
            return f"type({self.params[0]})" if self.params else "type"
        if self.kind == "optional_type":
            return f"optional_type({self.params[0]})"
        if self.kind in ("object", "param", "opaque"):
            return self.name
        return self.kind


INT = Type("int")
UINT = Type("uint")
DOUBLE = Type("double")
BOOL = Type("bool")
STRING = Type("string")
BYTES = Type("bytes")
NULL = Type("null_type")
DYN = Type("dyn")
ANY = Type("google.protobuf.Any")
ERROR = Type("error")
QUANTITY = Type("object", name="kubernetes.Quantity")
SEMVER = Type("object", name="kubernetes.Semver")
DEVICE = Type("object", name="kubernetes.DRADevice")
TIMESTAMP = Type("google.protobuf.Timestamp")
DURATION = Type("google.protobuf.Duration")
IP = Type("opaque", name="net.IP")
CIDR = Type("opaque", name="net.CIDR")
URL = Type("object", name="kubernetes.URL")
FORMAT = Type("object", name="kubernetes.NamedFormat")
A = Type("param", name="A")
B = Type("param", name="B")


def list_of(elem: Type) -> Type:
    return Type("list", (elem,))


def map_of(key: Type, value: Type) -> Type:
    return Type("map", (key, value))


def type_of(t: Type) -> Type:
    return Type("type", (t,))


def optional_of(t: Type) -> Type:
    return Type("optional_type", (t,))


DEVICE_FIELDS = {
    "driver": STRING,
    "attributes": map_of(STRING, map_of(STRING, ANY)),
    "capacity": map_of(STRING, map_of(STRING, QUANTITY)),
}
"""The fields of ``kubernetes.DRADevice`` (``deviceTypeV131``) a new selector may read."""
if FEATURE_GATES["DRAConsumableCapacity"]:  # pragma: no cover - off by default in 1.35
    DEVICE_FIELDS["allowMultipleAllocations"] = BOOL  # deviceTypeV134ConsumableCapacity
VARIABLES = {"device": DEVICE}


@dataclass(frozen=True)
class Overload:
    """One signature. ``member`` overloads take the receiver as the first parameter."""

    id: str
    params: tuple[Type, ...]
    result: Type
    member: bool = False


def _ov(oid: str, params: tuple[Type, ...], result: Type, member: bool = False) -> Overload:
    return Overload(oid, params, result, member)


_NUMERIC = (("int64", INT), ("uint64", UINT), ("double", DOUBLE))
_ORDERED = (
    *_NUMERIC,
    ("string", STRING),
    ("bytes", BYTES),
    ("bool", BOOL),
    ("timestamp", TIMESTAMP),
    ("duration", DURATION),
)
_COMPARABLE = (
    ("int", INT), ("uint", UINT), ("double", DOUBLE), ("bool", BOOL),
    ("duration", DURATION), ("timestamp", TIMESTAMP), ("string", STRING), ("bytes", BYTES),
)  # fmt: skip
_SUMMABLE = (("int", INT), ("uint", UINT), ("double", DOUBLE), ("duration", DURATION))
OPT_A = optional_of(A)


def _arith(name: str, kinds: tuple[tuple[str, Type], ...]) -> list[Overload]:
    return [_ov(f"{name}_{suffix}", (t, t), t) for suffix, t in kinds]


def _compare(name: str) -> list[Overload]:
    same = [_ov(f"{name}_{suffix}", (t, t), BOOL) for suffix, t in _ORDERED]
    cross = [
        _ov(f"{name}_{ls}_{rs}", (lt, rt), BOOL)
        for ls, lt in _NUMERIC
        for rs, rt in _NUMERIC
        if ls != rs
    ]
    return same + cross


FUNCTIONS: dict[str, list[Overload]] = {
    "_+_": [
        *_arith("add", _NUMERIC),
        _ov("add_string", (STRING, STRING), STRING),
        _ov("add_bytes", (BYTES, BYTES), BYTES),
        _ov("add_list", (list_of(A), list_of(A)), list_of(A)),
        _ov("add_timestamp_duration", (TIMESTAMP, DURATION), TIMESTAMP),
        _ov("add_duration_timestamp", (DURATION, TIMESTAMP), TIMESTAMP),
        _ov("add_duration_duration", (DURATION, DURATION), DURATION),
    ],
    "_-_": [
        *_arith("subtract", _NUMERIC),
        _ov("subtract_timestamp_timestamp", (TIMESTAMP, TIMESTAMP), DURATION),
        _ov("subtract_timestamp_duration", (TIMESTAMP, DURATION), TIMESTAMP),
        _ov("subtract_duration_duration", (DURATION, DURATION), DURATION),
    ],
    "_*_": _arith("multiply", _NUMERIC),
    "_/_": _arith("divide", _NUMERIC),
    "_%_": _arith("modulo", _NUMERIC[:2]),
    "-_": [_ov("negate_int64", (INT,), INT), _ov("negate_double", (DOUBLE,), DOUBLE)],
    "!_": [_ov("logical_not", (BOOL,), BOOL)],
    "_&&_": [_ov("logical_and", (BOOL, BOOL), BOOL)],
    "_||_": [_ov("logical_or", (BOOL, BOOL), BOOL)],
    "_?_:_": [_ov("conditional", (BOOL, A, A), A)],
    "@not_strictly_false": [_ov("not_strictly_false", (BOOL,), BOOL)],
    "_==_": [_ov("equals", (A, A), BOOL)],
    "_!=_": [_ov("not_equals", (A, A), BOOL)],
    "_<_": _compare("less"),
    "_<=_": _compare("less_equals"),
    "_>_": _compare("greater"),
    "_>=_": _compare("greater_equals"),
    "@in": [
        _ov("in_list", (A, list_of(A)), BOOL),
        _ov("in_map", (A, map_of(A, B)), BOOL),
    ],
    "_[_]": [
        _ov("index_list", (list_of(A), INT), A),
        _ov("index_map", (map_of(A, B), A), B),
        _ov("optional_list_index_int", (optional_of(list_of(A)), INT), OPT_A),
        _ov("optional_map_index_value", (optional_of(map_of(B, A)), B), OPT_A),
    ],
    "_[?_]": [
        _ov("list_optindex_optional_int", (list_of(A), INT), OPT_A),
        _ov("optional_list_optindex_optional_int", (optional_of(list_of(A)), INT), OPT_A),
        _ov("map_optindex_optional_value", (map_of(B, A), B), OPT_A),
        _ov("optional_map_optindex_optional_value", (optional_of(map_of(B, A)), B), OPT_A),
    ],
    "size": [
        _ov("size_string", (STRING,), INT),
        _ov("size_bytes", (BYTES,), INT),
        _ov("size_list", (list_of(A),), INT),
        _ov("size_map", (map_of(A, B),), INT),
        _ov("string_size", (STRING,), INT, True),
        _ov("bytes_size", (BYTES,), INT, True),
        _ov("list_size", (list_of(A),), INT, True),
        _ov("map_size", (map_of(A, B),), INT, True),
    ],
    "contains": [_ov("contains_string", (STRING, STRING), BOOL, True)],
    "startsWith": [_ov("starts_with_string", (STRING, STRING), BOOL, True)],
    "endsWith": [_ov("ends_with_string", (STRING, STRING), BOOL, True)],
    "matches": [
        _ov("matches", (STRING, STRING), BOOL),
        _ov("matches_string", (STRING, STRING), BOOL, True),
    ],
    "int": [
        _ov("int64_to_int64", (INT,), INT),
        _ov("uint64_to_int64", (UINT,), INT),
        _ov("double_to_int64", (DOUBLE,), INT),
        _ov("string_to_int64", (STRING,), INT),
        _ov("duration_to_int64", (DURATION,), INT),
        _ov("timestamp_to_int64", (TIMESTAMP,), INT),
    ],
    "uint": [
        _ov("uint64_to_uint64", (UINT,), UINT),
        _ov("int64_to_uint64", (INT,), UINT),
        _ov("double_to_uint64", (DOUBLE,), UINT),
        _ov("string_to_uint64", (STRING,), UINT),
    ],
    "double": [
        _ov("double_to_double", (DOUBLE,), DOUBLE),
        _ov("int64_to_double", (INT,), DOUBLE),
        _ov("uint64_to_double", (UINT,), DOUBLE),
        _ov("string_to_double", (STRING,), DOUBLE),
    ],
    "string": [
        _ov("string_to_string", (STRING,), STRING),
        _ov("int64_to_string", (INT,), STRING),
        _ov("uint64_to_string", (UINT,), STRING),
        _ov("double_to_string", (DOUBLE,), STRING),
        _ov("bool_to_string", (BOOL,), STRING),
        _ov("bytes_to_string", (BYTES,), STRING),
        _ov("duration_to_string", (DURATION,), STRING),
        _ov("timestamp_to_string", (TIMESTAMP,), STRING),
        _ov("ip_to_string", (IP,), STRING),
        _ov("cidr_to_string", (CIDR,), STRING),
    ],
    "bool": [_ov("bool_to_bool", (BOOL,), BOOL), _ov("string_to_bool", (STRING,), BOOL)],
    "bytes": [_ov("bytes_to_bytes", (BYTES,), BYTES), _ov("string_to_bytes", (STRING,), BYTES)],
    "duration": [
        _ov("duration_to_duration", (DURATION,), DURATION),
        _ov("int64_to_duration", (INT,), DURATION),
        _ov("string_to_duration", (STRING,), DURATION),
    ],
    "timestamp": [
        _ov("timestamp_to_timestamp", (TIMESTAMP,), TIMESTAMP),
        _ov("int64_to_timestamp", (INT,), TIMESTAMP),
        _ov("string_to_timestamp", (STRING,), TIMESTAMP),
    ],
    "dyn": [_ov("to_dyn", (A,), DYN)],
    "type": [_ov("type", (A,), type_of(A))],
    # Timestamp and duration accessors.
    **{
        name: [
            _ov(f"timestamp_to_{name}", (TIMESTAMP,), INT, True),
            _ov(f"timestamp_to_{name}_with_tz", (TIMESTAMP, STRING), INT, True),
            *(
                [_ov(f"duration_to_{name}", (DURATION,), INT, True)]
                if name in ("getHours", "getMinutes", "getSeconds", "getMilliseconds")
                else []
            ),
        ]
        for name in TIME_GETTERS
    },
    # Kubernetes quantity library.
    "quantity": [_ov("string_to_quantity", (STRING,), QUANTITY)],
    "isQuantity": [_ov("is_quantity_string", (STRING,), BOOL)],
    "sign": [_ov("quantity_sign", (QUANTITY,), INT)],
    "isGreaterThan": [
        _ov("quantity_is_greater_than", (QUANTITY, QUANTITY), BOOL, True),
        _ov("semver_is_greater_than", (SEMVER, SEMVER), BOOL, True),
    ],
    "isLessThan": [
        _ov("quantity_is_less_than", (QUANTITY, QUANTITY), BOOL, True),
        _ov("semver_is_less_than", (SEMVER, SEMVER), BOOL, True),
    ],
    "compareTo": [
        _ov("quantity_compare_to", (QUANTITY, QUANTITY), INT, True),
        _ov("semver_compare_to", (SEMVER, SEMVER), INT, True),
    ],
    "asApproximateFloat": [_ov("quantity_get_float", (QUANTITY,), DOUBLE, True)],
    "asInteger": [_ov("quantity_get_int", (QUANTITY,), INT, True)],
    "isInteger": [_ov("quantity_is_integer", (QUANTITY,), BOOL, True)],
    "add": [
        _ov("quantity_add", (QUANTITY, QUANTITY), QUANTITY, True),
        _ov("quantity_add_int", (QUANTITY, INT), QUANTITY, True),
    ],
    "sub": [
        _ov("quantity_sub", (QUANTITY, QUANTITY), QUANTITY, True),
        _ov("quantity_sub_int", (QUANTITY, INT), QUANTITY, True),
    ],
    # Kubernetes semver library (version 1).
    "semver": [
        _ov("string_to_semver", (STRING,), SEMVER),
        _ov("string_bool_to_semver", (STRING, BOOL), SEMVER),
    ],
    "isSemver": [
        _ov("is_semver_string", (STRING,), BOOL),
        _ov("is_semver_string_bool", (STRING, BOOL), BOOL),
    ],
    "major": [_ov("semver_major", (SEMVER,), INT, True)],
    "minor": [_ov("semver_minor", (SEMVER,), INT, True)],
    "patch": [_ov("semver_patch", (SEMVER,), INT, True)],
    # cel-go strings extension, version 2.
    "charAt": [_ov("string_char_at_int", (STRING, INT), STRING, True)],
    "indexOf": [
        _ov("string_index_of_string", (STRING, STRING), INT, True),
        _ov("string_index_of_string_int", (STRING, STRING, INT), INT, True),
        _ov("list_a_index_of_int", (list_of(A), A), INT, True),
    ],
    "lastIndexOf": [
        _ov("string_last_index_of_string", (STRING, STRING), INT, True),
        _ov("string_last_index_of_string_int", (STRING, STRING, INT), INT, True),
        _ov("list_a_last_index_of_int", (list_of(A), A), INT, True),
    ],
    "lowerAscii": [_ov("string_lower_ascii", (STRING,), STRING, True)],
    "upperAscii": [_ov("string_upper_ascii", (STRING,), STRING, True)],
    "replace": [
        _ov("string_replace_string_string", (STRING, STRING, STRING), STRING, True),
        _ov("string_replace_string_string_int", (STRING, STRING, STRING, INT), STRING, True),
    ],
    "split": [
        _ov("string_split_string", (STRING, STRING), list_of(STRING), True),
        _ov("string_split_string_int", (STRING, STRING, INT), list_of(STRING), True),
    ],
    "substring": [
        _ov("string_substring_int", (STRING, INT), STRING, True),
        _ov("string_substring_int_int", (STRING, INT, INT), STRING, True),
    ],
    "trim": [_ov("string_trim", (STRING,), STRING, True)],
    "join": [
        _ov("list_join", (list_of(STRING),), STRING, True),
        _ov("list_join_string", (list_of(STRING), STRING), STRING, True),
    ],
    "strings.quote": [_ov("strings_quote", (STRING,), STRING)],
    "format": [_ov("string_format", (STRING, list_of(DYN)), STRING, True)],
    # Kubernetes regex library.
    "find": [_ov("string_find_string", (STRING, STRING), STRING, True)],
    "findAll": [
        _ov("string_find_all_string", (STRING, STRING), list_of(STRING), True),
        _ov("string_find_all_string_int", (STRING, STRING, INT), list_of(STRING), True),
    ],
    # cel-go lists extension, version 3.
    "slice": [_ov("list_slice", (list_of(A), INT, INT), list_of(A), True)],
    "flatten": [
        _ov("list_flatten", (list_of(list_of(A)),), list_of(A), True),
        _ov("list_flatten_int", (list_of(DYN), INT), list_of(DYN), True),
    ],
    "sort": [_ov(f"list_{name}_sort", (list_of(t),), list_of(t), True) for name, t in _COMPARABLE],
    "@sortByAssociatedKeys": [
        _ov(f"list_{name}_sortByAssociatedKeys", (list_of(A), list_of(t)), list_of(A), True)
        for name, t in _COMPARABLE
    ],
    "lists.range": [_ov("lists_range", (INT,), list_of(INT))],
    "reverse": [_ov("list_reverse", (list_of(A),), list_of(A), True)],
    "distinct": [_ov("list_distinct", (list_of(A),), list_of(A), True)],
    # Kubernetes lists library.
    "isSorted": [
        _ov(f"list_{name}_is_sorted_bool", (list_of(t),), BOOL, True) for name, t in _COMPARABLE
    ],
    "sum": [_ov(f"list_{name}_sum_{name}", (list_of(t),), t, True) for name, t in _SUMMABLE],
    "max": [_ov(f"list_{name}_max_{name}", (list_of(t),), t, True) for name, t in _COMPARABLE],
    "min": [_ov(f"list_{name}_min_{name}", (list_of(t),), t, True) for name, t in _COMPARABLE],
    # cel-go sets extension.
    "sets.contains": [_ov("list_sets_contains_list", (list_of(A), list_of(A)), BOOL)],
    "sets.equivalent": [_ov("list_sets_equivalent_list", (list_of(A), list_of(A)), BOOL)],
    "sets.intersects": [_ov("list_sets_intersects_list", (list_of(A), list_of(A)), BOOL)],
    # cel-go optional types.
    "optional.of": [_ov("optional_of", (A,), OPT_A)],
    "optional.ofNonZeroValue": [_ov("optional_ofNonZeroValue", (A,), OPT_A)],
    "optional.none": [_ov("optional_none", (), OPT_A)],
    "value": [_ov("optional_value", (OPT_A,), A, True)],
    "hasValue": [_ov("optional_hasValue", (OPT_A,), BOOL, True)],
    "or": [_ov("optional_or_optional", (OPT_A, OPT_A), OPT_A, True)],
    "orValue": [_ov("optional_orValue_value", (OPT_A, A), A, True)],
    "first": [_ov("list_first", (list_of(A),), OPT_A, True)],
    "last": [_ov("list_last", (list_of(A),), OPT_A, True)],
    "optional.unwrap": [_ov("optional_unwrap", (list_of(OPT_A),), list_of(A))],
    "unwrapOpt": [_ov("optional_unwrapOpt", (list_of(OPT_A),), list_of(A), True)],
    # cel-go two-variable comprehensions.
    "cel.@mapInsert": [
        _ov("@mapInsert_map_key_value", (map_of(A, B), A, B), map_of(A, B)),
        _ov("@mapInsert_map_map", (map_of(A, B), map_of(A, B)), map_of(A, B)),
    ],
    # Kubernetes URL library.
    "url": [_ov("string_to_url", (STRING,), URL)],
    "isURL": [_ov("is_url_string", (STRING,), BOOL)],
    "getScheme": [_ov("url_get_scheme", (URL,), STRING, True)],
    "getHost": [_ov("url_get_host", (URL,), STRING, True)],
    "getHostname": [_ov("url_get_hostname", (URL,), STRING, True)],
    "getPort": [_ov("url_get_port", (URL,), STRING, True)],
    "getEscapedPath": [_ov("url_get_escaped_path", (URL,), STRING, True)],
    "getQuery": [_ov("url_get_query", (URL,), map_of(STRING, list_of(STRING)), True)],
    # Kubernetes IP and CIDR libraries.
    "ip": [
        _ov("string_to_ip", (STRING,), IP),
        _ov("cidr_ip", (CIDR,), IP, True),
    ],
    "isIP": [_ov("is_ip", (STRING,), BOOL)],
    "ip.isCanonical": [_ov("ip_is_canonical", (STRING,), BOOL)],
    "family": [_ov("ip_family", (IP,), INT, True)],
    "isUnspecified": [_ov("ip_is_unspecified", (IP,), BOOL, True)],
    "isLoopback": [_ov("ip_is_loopback", (IP,), BOOL, True)],
    "isLinkLocalMulticast": [_ov("ip_is_link_local_multicast", (IP,), BOOL, True)],
    "isLinkLocalUnicast": [_ov("ip_is_link_local_unicast", (IP,), BOOL, True)],
    "isGlobalUnicast": [_ov("ip_is_global_unicast", (IP,), BOOL, True)],
    "cidr": [_ov("string_to_cidr", (STRING,), CIDR)],
    "isCIDR": [_ov("is_cidr", (STRING,), BOOL)],
    "containsIP": [
        _ov("cidr_contains_ip_string", (CIDR, STRING), BOOL, True),
        _ov("cidr_contains_ip_ip", (CIDR, IP), BOOL, True),
    ],
    "containsCIDR": [
        _ov("cidr_contains_cidr_string", (CIDR, STRING), BOOL, True),
        _ov("cidr_contains_cidr", (CIDR, CIDR), BOOL, True),
    ],
    "prefixLength": [_ov("cidr_prefix_length", (CIDR,), INT, True)],
    "masked": [_ov("cidr_masked", (CIDR,), CIDR, True)],
    # Kubernetes format library.
    "validate": [_ov("format-validate", (FORMAT, STRING), optional_of(list_of(STRING)), True)],
    "format.named": [_ov("format-named", (STRING,), optional_of(FORMAT))],
    **{
        f"format.{name}": [_ov(f"format.{name}", (), FORMAT)]
        for name in (
            "dns1123Label",
            "dns1123Subdomain",
            "dns1035Label",
            "qualifiedName",
            "dns1123LabelPrefix",
            "dns1123SubdomainPrefix",
            "dns1035LabelPrefix",
            "labelValue",
            "uri",
            "uuid",
            "byte",
            "date",
            "datetime",
        )
    },
}

# Kubernetes' authorization library is in the base environment, but its receiver types
# only come from the ``authorizer`` variable, which DRA does not declare: a call
# type-checks only on a ``dyn`` receiver and then fails at run time, as in Kubernetes.
_AUTHORIZER = Type("object", name="kubernetes.authorization.Authorizer")
_PATH_CHECK = Type("object", name="kubernetes.authorization.PathCheck")
_GROUP_CHECK = Type("object", name="kubernetes.authorization.GroupCheck")
_RESOURCE_CHECK = Type("object", name="kubernetes.authorization.ResourceCheck")
_DECISION = Type("object", name="kubernetes.authorization.Decision")
FUNCTIONS.update(
    {
        "path": [_ov("authorizer_path", (_AUTHORIZER, STRING), _PATH_CHECK, True)],
        "group": [_ov("authorizer_group", (_AUTHORIZER, STRING), _GROUP_CHECK, True)],
        "serviceAccount": [
            _ov("authorizer_serviceaccount", (_AUTHORIZER, STRING, STRING), _AUTHORIZER, True)
        ],
        "resource": [_ov("groupcheck_resource", (_GROUP_CHECK, STRING), _RESOURCE_CHECK, True)],
        **{
            name: [_ov(f"resourcecheck_{name}", (_RESOURCE_CHECK, STRING), _RESOURCE_CHECK, True)]
            for name in ("subresource", "namespace", "name")
        },
        "check": [
            _ov("pathcheck_check", (_PATH_CHECK, STRING), _DECISION, True),
            _ov("resourcecheck_check", (_RESOURCE_CHECK, STRING), _DECISION, True),
        ],
        "errored": [_ov("decision_errored", (_DECISION,), BOOL, True)],
        "error": [_ov("decision_error", (_DECISION,), STRING, True)],
        "allowed": [_ov("decision_allowed", (_DECISION,), BOOL, True)],
        "reason": [_ov("decision_reason", (_DECISION,), STRING, True)],
        "fieldSelector": [
            _ov("authorizer_fieldselector", (_RESOURCE_CHECK, STRING), _RESOURCE_CHECK, True)
        ],
        "labelSelector": [
            _ov("authorizer_labelselector", (_RESOURCE_CHECK, STRING), _RESOURCE_CHECK, True)
        ],
    }
)
AUTHZ = frozenset(
    ["path", "group", "serviceAccount", "resource", "subresource", "namespace", "name", "check",
     "errored", "error", "allowed", "reason", "fieldSelector", "labelSelector"]
)  # fmt: skip
