"""examples: every docs manifest admitted (server-side dry run); the XRDs' negative cases refused."""

from __future__ import annotations

from pathlib import Path

from e2e.context import DOCS_FOLDERS, EXAMPLES, ROOT, Context
from e2e.kube import KubeError, Obj

# -- examples ----------------------------------------------------------------------------------


def docs_documents() -> list[tuple[Path, Obj]]:
    out: list[tuple[Path, Obj]] = []
    for folder in DOCS_FOLDERS:
        for path in sorted((EXAMPLES / folder).rglob("*.yaml")):
            if "fleet" in path.relative_to(EXAMPLES).parts:
                continue
            out.extend((path, doc) for doc in Context.documents(path) if doc.get("kind"))
    return out


def examples(ctx: Context) -> None:
    docs = docs_documents()
    for _, doc in docs:
        ns = doc.get("metadata", {}).get("namespace")
        if ns:
            ctx.ensure_namespace(ns)
    admitted = 0
    unserved: set[str] = set()
    refused: list[str] = []
    for path, doc in docs:
        api, kind = doc["apiVersion"], doc["kind"]
        if not ctx.kube.served(api, kind):
            unserved.add(f"{kind}.{api}")
            continue
        try:
            ctx.kube.apply(doc, dry_run=True)
        except KubeError as exc:
            refused.append(
                f"{path.relative_to(ROOT)} {kind} {doc['metadata'].get('name')}: {exc.message}"
            )
        else:
            admitted += 1
    ctx.step(f"{admitted} docs manifests admitted by the API server (server-side dry run)")
    if unserved:
        ctx.step(f"not served here (no CRDs for these providers): {sorted(unserved)}")
    assert not refused, "refused:\n" + "\n".join(refused)

    # The XRDs' negative cases (tests/apis/test_validation.py), now on the real API server.
    from tests.apis import test_validation as cases  # noqa: PLC0415 - the dev extras' pytest

    valid_refused = []
    for doc in cases.VALID:
        try:
            ctx.kube.create(doc, dry_run=True)
        except KubeError as exc:
            valid_refused.append(f"{doc['kind']} {doc['metadata']['name']}: {exc.message}")
    assert not valid_refused, "valid manifests refused:\n" + "\n".join(valid_refused)
    ctx.step(f"{len(cases.VALID)} minimal valid manifests of every kind admitted")
    wrong = []
    for case, make, says in cases.INVALID:
        doc = make(case)
        try:
            ctx.kube.create(doc, dry_run=True)
        except KubeError as exc:
            if exc.status not in (400, 422) or not same_refusal(says, exc.message):
                wrong.append(
                    f"{case}: refused with {exc.status} {exc.message!r}, expected {says!r}"
                )
        else:
            wrong.append(f"{case}: admitted, expected refusal {says!r}")
    assert not wrong, "negative cases:\n" + "\n".join(wrong)
    ctx.step(f"{len(cases.INVALID)} invalid manifests refused with the XRD's message")


def same_refusal(says: str, message: str) -> bool:
    """Whether the API server refused for the reason the case names.

    The cases' messages are the XRD's own (CEL rules' messages, OpenAPI limits), as
    crank words them; only an unknown field is worded differently by the API server
    (``strict decoding error: unknown field "spec....bogus"``).
    """
    if says in message:
        return True
    if says.startswith("unknown field"):
        field_name = says.split('"')[1]
        return "unknown field" in message and f".{field_name}" in message
    return False
