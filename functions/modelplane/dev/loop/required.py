"""What the loop hands Crossplane's reconciler as required resources.

Crossplane's render store answers each requirement only from the objects of the group and
kind it selects (then by name or labels, and namespace). So each reconcile is handed the
objects of the kinds its composite kind's pipeline has selected so far (learned from the
selectors each reconcile reports) and Secrets, which the reconciler reads itself. A
reconcile that selected a kind the store holds but was not handed runs again with it,
so every requirement resolves against all the objects of its kind, as the API server
would answer it; a reconcile that fails runs again with the whole store, so its error
is the whole store's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from modelplane.dev import engine

GroupKind = tuple[str, str]

READ_BY_RECONCILER = frozenset({("", "Secret")})
"""Kinds Crossplane's reconciler reads itself, whatever the functions require: Secrets
(its composed resources' connection details, a pipeline step's credentials)."""
_ASKED_KINDS: dict[str, set[GroupKind]] = {}
"""Composite kind -> the (group, kind) of every resource its pipeline has required so far
(in this process). It only grows, and what a reconcile answers does not depend on it."""


def selector_kind(selector: Mapping[str, Any]) -> GroupKind:
    """Return the (group, kind) a pipeline's resource selector (``fnv1.ResourceSelector``
    as JSON) asks for: what the engine's store matches it against, with a name, labels
    and namespace besides."""
    return str(selector.get("apiVersion", "")).rpartition("/")[0], str(selector.get("kind", ""))


def render_asked(
    composite_kind: str,
    present: Iterable[GroupKind],
    render: Callable[[Callable[[GroupKind], bool]], engine.RenderOutput],
) -> engine.RenderOutput:
    """Run ``render`` (handed which kinds to pass as required) until every kind its
    pipeline selects was handed whole: the store's kinds are ``present``.

    Raises:
        engine.EngineError: the reconcile failed with the whole store.
    """
    kinds = set(present)
    asked = _ASKED_KINDS.setdefault(composite_kind, set())
    while True:
        chosen = asked | READ_BY_RECONCILER
        try:
            out = render(chosen.__contains__)
        except engine.EngineError:
            if kinds <= chosen:
                raise
            return render(lambda _: True)  # the error is the whole store's
        selected = {selector_kind(s) for s in out.required}
        asked |= selected
        if not (selected - chosen) & kinds:
            return out  # every requirement was answered from all the objects of its kind
