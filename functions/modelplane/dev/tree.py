"""Show rendered composites as a tree, in the style of ``crossplane beta trace``.

Pure: it takes the documents of each render (what :func:`modelplane.dev.render.documents`
returns: the composite, what it composed, then ``kind: Event`` documents) and returns
text. One row per resource with trace's columns (NAME, SYNCED, READY, STATUS); under a
row, every condition of it that is not True, with reason and message, and every Warning
event. A composed resource that was itself rendered (a ModelDeployment's ModelReplica)
shows its own render's conditions and children beneath it, so the renders of one
example read as one tree per composite the example declares.

What an offline render knows of readiness: a composite's ``Synced`` and ``Ready``
conditions as the reconciler set them; a composed resource is not ready when the
reconciler emitted ``Composed resource "<name>" is not yet ready`` for it, ready when
it did not, and its SYNCED is unknown (``-``): no provider ran.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Doc = Mapping[str, Any]

UNKNOWN = "-"
#: A composite composing more resources than this lists its plain same-kind siblings
#: as one row (``Subnet x6``); provider-kubernetes Objects are always listed one by one.
COLLAPSE_OVER = 15
#: Same-kind siblings folded into one row only when there are at least this many.
COLLAPSE_AT_LEAST = 3
#: The composition resource name in the reconciler's event for an unready composed resource.
_UNREADY = re.compile(r'^Composed resource "(?P<name>[^"]+)" is not yet ready')
#: The reconciler's prefix of a function result's event message.
_PIPELINE_STEP = re.compile(r'^Pipeline step "[^"]*": ')
_RESOURCE_NAME = "crossplane.io/composition-resource-name"
_OBJECT_GROUPS = ("kubernetes.crossplane.io", "kubernetes.m.crossplane.io")
_HEADER = ("NAME", "SYNCED", "READY", "STATUS")
#: How to read the tree, for a reader who has not seen `crossplane beta trace`.
LEGEND = (
    "One offline reconcile by Crossplane's own reconciler: nothing was created and no provider\n"
    "ran, so a composed resource's SYNCED is unknown (-). Indented under a resource: each of\n"
    "its conditions that is not True, as type=status  reason: message.\n"
)


@dataclass
class Row:
    """One line of the tree, the notes printed under it, and its children."""

    name: str
    synced: str = UNKNOWN
    ready: str = UNKNOWN
    status: str = ""
    notes: list[str] = field(default_factory=list)
    children: list[Row] = field(default_factory=list)
    #: A plain composed resource (no notes, not an Object): it may share a row with its kind.
    foldable: bool = False


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _meta(doc: Doc) -> Mapping[str, Any]:
    return _mapping(doc.get("metadata"))


def _identity(doc: Doc) -> tuple[str, str, str]:
    meta = _meta(doc)
    return (str(doc.get("kind", "")), str(meta.get("namespace", "")), str(meta.get("name", "")))


def _is_event(doc: Doc) -> bool:
    return doc.get("kind") == "Event" and doc.get("apiVersion") == "v1"


def _conditions(doc: Doc) -> list[Mapping[str, Any]]:
    status = doc.get("status")
    found = status.get("conditions") if isinstance(status, Mapping) else None
    return [c for c in found or [] if isinstance(c, Mapping)]


def _condition(doc: Doc, typ: str) -> Mapping[str, Any] | None:
    return next((c for c in _conditions(doc) if c.get("type") == typ), None)


def _explain(condition: Mapping[str, Any]) -> str:
    reason, message = condition.get("reason", ""), condition.get("message", "")
    return f"{reason}: {message}" if reason and message else str(reason or message)


def _trace_status(doc: Doc) -> tuple[str, str, str]:
    """Return SYNCED, READY and STATUS from a resource's own conditions, as trace shows them.

    STATUS is the Ready condition's reason (and message), unless the resource is not
    Synced: then why it is not.
    """
    synced, ready = _condition(doc, "Synced"), _condition(doc, "Ready")
    status = ready or {}
    if synced is not None and synced.get("status") != "True":
        status = synced
    return (
        str(synced.get("status", UNKNOWN)) if synced else UNKNOWN,
        str(ready.get("status", UNKNOWN)) if ready else UNKNOWN,
        _explain(status),
    )


def _notes(doc: Doc, events: Sequence[Doc] = ()) -> list[str]:
    """Every condition that is not True (Synced and Ready are the row's columns), then warnings.

    A function's warning that only repeats a condition's message is left out.
    """
    failing = [
        c
        for c in _conditions(doc)
        if c.get("status") != "True" and c.get("type") not in ("Synced", "Ready")
    ]
    said = {str(c.get("message", "")) for c in failing}
    warnings = [str(e.get("message", "")) for e in events if e.get("type") == "Warning"]
    return [f"{c.get('type')}={c.get('status')}  {_explain(c)}".rstrip() for c in failing] + [
        f"Warning: {w}" for w in warnings if _PIPELINE_STEP.sub("", w) not in said
    ]


def _label(doc: Doc, parent_namespace: str | None) -> str:
    """``Kind/name``, with ``(namespace)`` unless it is the parent's namespace."""
    kind, namespace, name = _identity(doc)
    shown = f" ({namespace})" if namespace and namespace != parent_namespace else ""
    return f"{kind}/{name}{shown}"


def _wrapped(doc: Doc) -> str:
    """For a provider-kubernetes Object: ``Kind/name on <cluster>`` of the manifest it applies."""
    spec = _mapping(doc.get("spec"))
    manifest = _mapping(spec.get("forProvider")).get("manifest")
    ref = spec.get("providerConfigRef")
    cluster = ref.get("name") if isinstance(ref, Mapping) else None
    namespace = str(_meta(doc).get("namespace", "")) or None
    what = _label(manifest, namespace) if isinstance(manifest, Mapping) else "a manifest"
    return f"{what} on {cluster or '(no providerConfigRef)'}"


def _is_object(doc: Doc) -> bool:
    group = str(doc.get("apiVersion", "")).split("/")[0]
    return doc.get("kind") == "Object" and group in _OBJECT_GROUPS


class _Renders:
    """Each render's documents, indexed by the composite they rendered."""

    def __init__(self, renders: Sequence[Sequence[Doc]]) -> None:
        self.renders = [list(docs) for docs in renders if docs]
        self.by_composite = {_identity(docs[0]): docs for docs in self.renders}
        # Roots: the composites no other render composed (one composing itself stays a root).
        composed = {
            _identity(d)
            for docs in self.renders
            for d in docs[1:]
            if not _is_event(d) and _identity(d) != _identity(docs[0])
        }
        self.roots = [docs for docs in self.renders if _identity(docs[0]) not in composed]

    def composite_row(
        self, docs: Sequence[Doc], parent_namespace: str | None, seen: frozenset[tuple[str, ...]]
    ) -> Row:
        """The row of a rendered composite, with its children beneath it."""
        xr, rest = docs[0], docs[1:]
        events = [d for d in rest if _is_event(d)]
        unready = {m["name"] for e in events if (m := _UNREADY.match(str(e.get("message", ""))))}
        synced, ready, status = _trace_status(xr)
        row = Row(_label(xr, parent_namespace), synced, ready, status, _notes(xr, events))
        namespace = str(_meta(xr).get("namespace", "")) or None
        inside = seen | {_identity(xr)}
        row.children = _collapse(
            [self.composed_row(d, unready, namespace, inside) for d in rest if not _is_event(d)]
        )
        return row

    def composed_row(
        self,
        doc: Doc,
        unready: set[str],
        parent_namespace: str | None,
        seen: frozenset[tuple[str, ...]],
    ) -> Row:
        """The row of a composed resource: its own render's when it was rendered too."""
        own = self.by_composite.get(_identity(doc))
        if own is not None and _identity(doc) not in seen:
            return self.composite_row(own, parent_namespace, seen)
        synced, ready, status = _trace_status(doc)
        if ready == UNKNOWN:
            name = _mapping(_meta(doc).get("annotations")).get(_RESOURCE_NAME)
            ready = "False" if name in unready else "True"
        notes = _notes(doc)
        if _is_object(doc):
            status = _wrapped(doc)
        row = Row(_label(doc, parent_namespace), synced, ready, status, notes)
        row.foldable = not (notes or _is_object(doc))
        return row


def _collapse(rows: list[Row]) -> list[Row]:
    """Fold plain same-kind siblings of a large composite into one row each."""
    if len(rows) <= COLLAPSE_OVER:
        return rows

    def key(row: Row) -> tuple[str, str, str] | None:
        return (row.name.split("/")[0], row.synced, row.ready) if row.foldable else None

    counts: dict[tuple[str, str, str], int] = {}
    for row in rows:
        if (k := key(row)) is not None:
            counts[k] = counts.get(k, 0) + 1
    out: list[Row] = []
    folded: set[tuple[str, str, str]] = set()
    for row in rows:
        k = key(row)
        if k is None or counts[k] < COLLAPSE_AT_LEAST:
            out.append(row)
        elif k not in folded:
            folded.add(k)
            out.append(Row(f"{k[0]} x{counts[k]}", k[1], k[2], row.status))
    return out


def build(renders: Sequence[Sequence[Doc]]) -> list[Row]:
    """Return one tree per composite that no other render composed, in render order."""
    index = _Renders(renders)
    return [index.composite_row(docs, None, frozenset()) for docs in index.roots]


def _lines(row: Row, lead: str, branch: str, below: str) -> list[tuple[str, Row | None]]:
    """Flatten ``row``: (name cell, row) pairs, and (note line, None) for its notes."""
    out: list[tuple[str, Row | None]] = [(lead + branch + row.name, row)]
    child_lead = lead + below
    bar = "│  " if row.children else "   "
    out += [(f"{child_lead}{bar}  {note}", None) for note in row.notes]
    for i, child in enumerate(row.children):
        last = i == len(row.children) - 1
        out += _lines(child, child_lead, "└─ " if last else "├─ ", "   " if last else "│  ")
    return out


def format_tree(renders: Sequence[Sequence[Doc]]) -> str:
    """Return the renders as trace-style tables, one per composite the example declares."""
    blocks = [_lines(root, "", "", "") for root in build(renders)]
    width = max([len(_HEADER[0])] + [len(c) for b in blocks for c, r in b if r is not None])
    header = f"{_HEADER[0]:<{width}}  {_HEADER[1]:<6}  {_HEADER[2]:<5}  {_HEADER[3]}"
    text = [header]
    for n, block in enumerate(blocks):
        text += [""] if n else []
        for cell, row in block:
            if row is None:
                text.append(cell)
            else:
                text.append(
                    f"{cell:<{width}}  {row.synced:<6}  {row.ready:<5}  {row.status}".rstrip()
                )
    return "\n".join(text) + "\n"
