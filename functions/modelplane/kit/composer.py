"""The compose protocol: an adapter says what it releases by what it returns.

An adapter is ``(request, response) -> Released``. It writes the desired state into the
response and returns what, of the observed composed resources it left out, it means to
let Crossplane delete. :func:`composer` turns it into the function the registry serves
(``(request, response) -> None``) and keeps, after it, the rules every function keeps:

- input it cannot read (:class:`InvalidInputError`, a pydantic ``ValidationError``)
  is answered with a Fatal result naming object and field: Crossplane applies nothing;
- every observed resource that is neither desired nor released is held (composed
  again, unchanged) with a Warning event naming it: an answer that forgets something,
  empty or partial, never deletes it;
- every composed resource whose readiness the adapter left unset gets its kind's rule.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar

import pydantic
from crossplane.function import logging, response
from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.kit.errors import InvalidInputError, summarize
from modelplane.kit.hold import hold
from modelplane.kit.readiness import mark_readiness
from modelplane.kit.request import composite, ref
from modelplane.kit.respond import is_fatal, listed, warn


@dataclass(frozen=True)
class Released:
    """What an adapter lets go of: observed composed resources it does not compose again.

    Attributes:
        keys: The composed-resource keys released.
        every: Everything observed is released (the user scaled to zero, removed the
            last pool): an empty answer that means it.
        reason: Why, for whoever reads the adapter, and in the debug log.
    """

    keys: frozenset[str] = frozenset()
    every: bool = False
    reason: str = ""

    NOTHING: ClassVar[Released]
    """Releases nothing: whatever is observed and not composed is held."""

    @classmethod
    def everything(cls, reason: str) -> Released:
        """Release every observed resource the answer leaves out."""
        return cls(every=True, reason=reason)

    @classmethod
    def of(cls, keys: Iterable[str], reason: str) -> Released:
        """Release the resources of ``keys`` (none when it is empty)."""
        return cls(keys=frozenset(keys), reason=reason)

    def covers(self, key: str) -> bool:
        """Tell whether the resource ``key`` is released."""
        return self.every or key in self.keys


Released.NOTHING = Released()

Adapter = Callable[[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse], Released]
"""A kind's compose function as written: it returns what it releases."""

Compose = Callable[[fnv1.RunFunctionRequest, fnv1.RunFunctionResponse], None]
"""A kind's compose function as served (wrapped by :func:`composer`)."""


def composer(fn: Adapter) -> Compose:
    """Wrap a kind's adapter with the rules every function keeps (see the module)."""

    @functools.wraps(fn)
    def run(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse) -> None:
        try:
            released = fn(req, rsp)
        except (InvalidInputError, pydantic.ValidationError) as err:
            refuse(req, rsp, err)
            return
        if is_fatal(rsp):
            return
        if not isinstance(released, Released):
            # A programming error, caught by mypy first; the runtime answers it Fatal.
            msg = f"{fn.__qualname__} returned {type(released).__name__}, not Released"
            raise TypeError(msg)
        guard(req, rsp, released)
        _log_release(req, rsp, released)
        mark_readiness(req, rsp)

    return run


def _log_release(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, released: Released
) -> None:
    """Log, at debug level, what this answer lets Crossplane delete, and why."""
    gone = [k for k in req.observed.resources if k not in rsp.desired.resources]
    if gone:
        logging.get_logger().debug("released", resources=sorted(gone), reason=released.reason)


def left_out(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, reason: str) -> Released:
    """Release what a complete answer leaves out, for an adapter that composes its whole
    desired state from its spec (a pool, a component, a cluster the spec no longer names).

    An empty answer releases nothing: it is held by :func:`guard`, as a fleet read that
    comes back empty is likelier a glitch than a wish. Call it last, after every compose
    and hold.
    """
    if not rsp.desired.resources:
        return Released.NOTHING
    desired = rsp.desired.resources
    return Released.of((k for k in req.observed.resources if k not in desired), reason)


def unaccounted(
    req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, released: Released
) -> list[str]:
    """Return the observed resources the answer neither composes nor releases, sorted."""
    desired = rsp.desired.resources
    return sorted(k for k in req.observed.resources if k not in desired and not released.covers(k))


def guard(req: fnv1.RunFunctionRequest, rsp: fnv1.RunFunctionResponse, released: Released) -> None:
    """Hold what the answer forgot (neither desired nor released) and warn, naming it."""
    forgotten = unaccounted(req, rsp, released)
    if not forgotten:
        return
    empty = not rsp.desired.resources
    held = hold(req, rsp, forgotten)
    if empty:
        warn(rsp, f"composed nothing while {len(held)} resources exist; kept them unchanged")
        return
    them = "it" if len(held) == 1 else "them"
    warn(rsp, f"neither composed nor released {listed(held, sep=', ')}; kept {them} unchanged")


def refuse(
    req: fnv1.RunFunctionRequest,
    rsp: fnv1.RunFunctionResponse,
    err: InvalidInputError | pydantic.ValidationError,
) -> None:
    """Answer input the function cannot read with a Fatal result naming object and field.

    Crossplane applies nothing after a Fatal result, so nothing that runs is lost.
    """
    xr = composite(req)
    kind = str(xr.get("kind") or "composite")
    what = summarize(err) if isinstance(err, pydantic.ValidationError) else str(err)
    rsp.desired.Clear()
    del rsp.results[:]
    del rsp.conditions[:]
    response.fatal(rsp, f"invalid {kind} {ref(xr)}: {what}")
