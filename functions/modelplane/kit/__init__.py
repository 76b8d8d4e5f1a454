"""The kit: what every compose function shares, in small modules in the SDK's spirit.

The door: adapters import ``from modelplane import kit`` and call names module-qualified
(``kit.set_condition(rsp, ...)``). Behind it, one module per job:

- :mod:`.request`: reading a request (the composite, observed and required resources,
  requirements, identity, total field readers);
- :mod:`.respond`: building a response (composed resources, status, conditions, events);
- :mod:`.readiness`: the readiness rule for each composed kind;
- :mod:`.hold`: the hold rule (compose again, unchanged, what cannot be composed anew);
- :mod:`.errors`: unreadable input and its one-line summary;
- :mod:`.composer`: the compose protocol (an adapter returns what it :class:`Released`)
  and the guard every function runs after its adapter;
- :mod:`.structs`: protobuf Structs as plain values;
- :mod:`.teardown`: the ordering Usages that delete a composite's resources in order.
"""

from modelplane.domain.conditions import Condition
from modelplane.kit.composer import (
    Adapter,
    Compose,
    Released,
    composer,
    guard,
    left_out,
    refuse,
    unaccounted,
)
from modelplane.kit.errors import InvalidInputError, field_path, summarize
from modelplane.kit.hold import asking, hold, hold_and_wait, unchanged, waiting
from modelplane.kit.readiness import composed_ready, mark_readiness, readiness_condition
from modelplane.kit.request import (
    DEFAULT_NAMESPACE,
    Meta,
    composite,
    condition_true,
    field,
    is_ready,
    mapping,
    maps,
    meta,
    observed,
    ref,
    ref_of,
    require,
    required,
    required_structs,
    text,
    was_required,
)
from modelplane.kit.respond import (
    compose,
    inform,
    is_fatal,
    keep_status,
    listed,
    set_condition,
    set_ready,
    set_status,
    warn,
)
from modelplane.kit.structs import struct_to_dict
from modelplane.kit.teardown import order as order_teardown

__all__ = [
    "DEFAULT_NAMESPACE",
    "Adapter",
    "Compose",
    "Condition",
    "InvalidInputError",
    "Meta",
    "Released",
    "asking",
    "compose",
    "composed_ready",
    "composer",
    "composite",
    "condition_true",
    "field",
    "field_path",
    "guard",
    "hold",
    "hold_and_wait",
    "inform",
    "is_fatal",
    "is_ready",
    "keep_status",
    "left_out",
    "listed",
    "mapping",
    "maps",
    "mark_readiness",
    "meta",
    "observed",
    "order_teardown",
    "readiness_condition",
    "ref",
    "ref_of",
    "refuse",
    "require",
    "required",
    "required_structs",
    "set_condition",
    "set_ready",
    "set_status",
    "struct_to_dict",
    "summarize",
    "text",
    "unaccounted",
    "unchanged",
    "waiting",
    "warn",
    "was_required",
]
