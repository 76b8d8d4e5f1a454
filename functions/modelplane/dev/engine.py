"""Render one composite with Crossplane's own reconciler: ``crossplane internal render``.

Crossplane core (v2.4.0, ``bin/crossplane``, built by ``make crossplane``) has a hidden
command that reads a ``crossplane.render.v1alpha1.RenderRequest`` (``proto/render.proto``)
on stdin, runs the real composite reconciler once against an in-memory client, calls the
pipeline's functions at the addresses given over insecure gRPC, and writes a
``RenderResponse`` on stdout. :func:`render_composite` speaks that protocol.

What the engine does with the inputs (``internal/render/composite/render.go``):

- The XR keeps its ``metadata.uid``; without one it gets a deterministic UID
  (:func:`composite_uid`). Its ``resourceVersion`` is set and its ``spec.resourceRefs``
  are replaced by references to the observed resources.
- Observed resources are the XR's existing composed resources. Each needs the
  ``crossplane.io/composition-resource-name`` annotation, must be in the XR's namespace
  when the XR is namespaced, and must either have no controller reference or be
  controlled by the XR's UID (:func:`controlled_by` adds that reference). Only resources
  controlled by the XR are garbage collected when the pipeline stops desiring them.
- Required resources go into the in-memory store that the pipeline's resource
  requirements are answered from (by kind, then name or labels and namespace).
- The XRD, when given, selects the composite schema (Legacy or Modern) as the real
  controller does; without it the schema is Modern.

Exit code 3 means a pipeline step returned a Fatal result: the response still carries
the partial output, and :attr:`RenderOutput.fatal` is set. Any other failure raises
:class:`EngineError` with the command's stderr.
"""

from __future__ import annotations

import copy
import os
import subprocess
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, Unpack

from google.protobuf import struct_pb2

from modelplane import kit
from modelplane.dev.proto import render_pb2

ROOT = Path(__file__).resolve().parents[3]
CROSSPLANE = ROOT / "bin" / "crossplane"
#: Exit code of ``crossplane internal render`` when a pipeline step returned a Fatal result.
EXIT_PIPELINE_FATAL = 3
#: Seconds the engine may spend on one render (its ``--timeout``).
DEFAULT_TIMEOUT_SECONDS = 120.0
#: Seconds past the engine's own timeout before the process is killed.
KILL_GRACE_SECONDS = 15.0
#: The Go runtime's garbage collector settings for one render, unless the environment sets
#: them. A render is a short-lived process whose heap stays far below the limit (tens of
#: MB), so collecting only costs time (about a quarter of a render's CPU); the limit still
#: bounds what one may hold before the collector runs.
GO_RUNTIME_ENV = {"GOGC": "off", "GOMEMLIMIT": "1GiB"}

Doc = dict[str, Any]


class EngineError(RuntimeError):
    """``crossplane internal render`` failed other than with a pipeline Fatal result."""

    def __init__(self, message: str, *, returncode: int | None = None, stderr: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


@dataclass(frozen=True)
class Event:
    """A Kubernetes event the reconciler would have emitted for the composite."""

    type: str  # Normal or Warning
    reason: str
    message: str


@dataclass(frozen=True)
class RenderOutput:
    """What one reconcile of a composite did.

    Attributes:
        composite: The XR as the reconciler left it: the pipeline's desired status, its
            conditions (Synced, Ready and the functions' own) and ``spec.resourceRefs``.
        composed: The composed resources the reconciler applied (server-side apply).
        deleted: The observed composed resources it garbage collected.
        events: The events it emitted, function results among them (a result's message
            is prefixed with ``Pipeline step "<step>": ``).
        required: The resource selectors the pipeline requested (``fnv1.ResourceSelector``
            as JSON: ``apiVersion``, ``kind``, ``matchName`` or ``matchLabels``,
            ``namespace``), whether or not a required resource matched.
        required_schemas: The schema selectors the pipeline requested.
        fatal: A pipeline step returned a Fatal result; the output is what the reconciler
            had recorded by then, and ``error`` says which step and why.
        error: The engine's error line when ``fatal``, else empty.
    """

    composite: Doc
    composed: list[Doc] = field(default_factory=list)
    deleted: list[Doc] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    required: list[Doc] = field(default_factory=list)
    required_schemas: list[Doc] = field(default_factory=list)
    fatal: bool = False
    error: str = ""


def find_crossplane() -> Path:
    """Return the Crossplane binary: ``$MODELPLANE_CROSSPLANE``, else ``bin/crossplane``.

    Raises:
        EngineError: it is missing (build it with ``make crossplane``).
    """
    configured = os.environ.get("MODELPLANE_CROSSPLANE")
    path = Path(configured) if configured else CROSSPLANE
    if not (path.is_file() and os.access(path, os.X_OK)):
        msg = f"{path} is missing or not executable: run `make crossplane`"
        raise EngineError(msg)
    return path


def composite_uid(xr: Mapping[str, Any]) -> str:
    """Return the XR's UID as the engine uses it: its own, or the engine's deterministic one.

    The engine derives a missing UID as a SHA-1 UUID (namespace: the nil UUID) of
    ``"<group>/<version>, Kind=<kind>\\0<namespace>\\0<name>"``.
    """
    meta = xr.get("metadata") or {}
    if meta.get("uid"):
        return str(meta["uid"])
    group, _, version = str(xr.get("apiVersion", "")).rpartition("/")
    gvk = f"{group}/{version}, Kind={xr.get('kind', '')}"
    key = f"{gvk}\x00{meta.get('namespace', '')}\x00{meta.get('name', '')}"
    return str(uuid.uuid5(uuid.UUID(int=0), key))


def controlled_by(xr: Mapping[str, Any], resource: Mapping[str, Any]) -> Doc:
    """Return a copy of ``resource`` with ``xr`` as its controller, as Crossplane composes it.

    A resource that already has a controller reference is returned unchanged (copied).
    """
    out = copy.deepcopy(dict(resource))
    meta = out.setdefault("metadata", {})
    refs = meta.setdefault("ownerReferences", [])
    if any(ref.get("controller") for ref in refs):
        return out
    xr_meta = xr.get("metadata") or {}
    refs.append(
        {
            "apiVersion": xr["apiVersion"],
            "kind": xr["kind"],
            "name": xr_meta.get("name", ""),
            "uid": composite_uid(xr),
            "controller": True,
            "blockOwnerDeletion": True,
        }
    )
    return out


def store_key(doc: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """Return what identifies a document in the engine's store: apiVersion, kind, namespace, name."""
    meta = doc.get("metadata") or {}
    return (
        str(doc.get("apiVersion", "")),
        str(doc.get("kind", "")),
        str(meta.get("namespace", "")),
        str(meta.get("name", "")),
    )


def _struct(doc: Mapping[str, Any]) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(doc)
    return s


class Inputs(TypedDict, total=False):
    """What a reconcile reads besides the composite, its Composition and the functions.

    Attributes:
        observed: The XR's existing composed resources (see the module docstring).
        required: Resources the pipeline's requirements are answered from.
        xrd: The XR's CompositeResourceDefinition, to select its schema as Crossplane does.
    """

    observed: Iterable[Mapping[str, Any]]
    required: Iterable[Mapping[str, Any]]
    xrd: Mapping[str, Any] | None


def build_request(
    xr: Mapping[str, Any],
    composition: Mapping[str, Any],
    functions: Mapping[str, str],
    **inputs: Unpack[Inputs],
) -> render_pb2.RenderRequest:
    """Return the RenderRequest :func:`render_composite` sends.

    A required resource that is the XR itself (same apiVersion, kind, namespace and name)
    is left out: the engine's store already holds the XR, and a second copy would
    replace it.
    """
    observed, required = inputs.get("observed", ()), inputs.get("required", ())
    xrd = inputs.get("xrd")
    own = store_key(xr)
    composite = render_pb2.CompositeInput(
        composite_resource=_struct(xr),
        composition=_struct(composition),
        functions=[
            render_pb2.FunctionInput(name=name, address=address)
            for name, address in sorted(functions.items())
        ],
        observed_resources=[_struct(d) for d in observed],
        required_resources=[_struct(d) for d in required if store_key(d) != own],
    )
    if xrd is not None:
        composite.composite_resource_definition.CopyFrom(_struct(xrd))
    return render_pb2.RenderRequest(meta=render_pb2.RequestMeta(), composite=composite)


def parse_response(data: bytes, *, fatal: bool = False, error: str = "") -> RenderOutput:
    """Decode a RenderResponse into a :class:`RenderOutput`.

    Raises:
        EngineError: the bytes are not a composite RenderResponse.
    """
    rsp = render_pb2.RenderResponse()
    try:
        rsp.ParseFromString(data)
    except Exception as err:  # protobuf raises its own DecodeError
        msg = f"cannot decode the engine's RenderResponse: {err}"
        raise EngineError(msg) from err
    if rsp.WhichOneof("output") != "composite":
        msg = "the engine's RenderResponse holds no composite output"
        raise EngineError(msg)
    out = rsp.composite
    return RenderOutput(
        composite=kit.struct_to_dict(out.composite_resource),
        composed=[kit.struct_to_dict(s) for s in out.composed_resources],
        deleted=[kit.struct_to_dict(s) for s in out.deleted_resources],
        events=[Event(e.type, e.reason, e.message) for e in out.events],
        required=[kit.struct_to_dict(s) for s in out.required_resources],
        required_schemas=[kit.struct_to_dict(s) for s in out.required_schemas],
        fatal=fatal,
        error=error,
    )


def render_composite(
    xr: Mapping[str, Any],
    composition: Mapping[str, Any],
    functions: Mapping[str, str],
    *,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    crossplane: Path | None = None,
    **inputs: Unpack[Inputs],
) -> RenderOutput:
    """Reconcile ``xr`` once with ``composition`` through Crossplane's real reconciler.

    Args:
        xr: The composite resource.
        composition: The Composition to compose it with (a Pipeline).
        functions: Function name (a pipeline step's ``functionRef.name``) to the
            ``host:port`` of a running function server speaking insecure gRPC.
        timeout: Seconds the engine may spend, calls to the functions included.
        crossplane: The binary to run; :func:`find_crossplane` by default.
        inputs: What else it reads (:class:`Inputs`).

    Returns:
        The reconcile's output; ``fatal`` is set when a pipeline step returned a Fatal
        result (exit code 3).

    Raises:
        EngineError: the binary is missing, timed out, or failed for any other reason
            (a function unreachable, an invalid input); the message carries its stderr.
    """
    binary = crossplane or find_crossplane()
    request = build_request(xr, composition, functions, **inputs)
    cmd = [str(binary), "internal", "render", f"--timeout={timeout:g}s"]
    env = {**GO_RUNTIME_ENV, **os.environ}
    try:
        done = subprocess.run(
            cmd,
            input=request.SerializeToString(),
            capture_output=True,
            check=False,
            timeout=timeout + KILL_GRACE_SECONDS,
            env=env,
        )
    except subprocess.TimeoutExpired as err:
        msg = f"crossplane internal render did not finish within {timeout:g}s"
        stderr = (err.stderr or b"").decode(errors="replace").strip()
        raise EngineError(msg, stderr=stderr) from err
    stderr = done.stderr.decode(errors="replace").strip()
    if done.returncode == 0:
        return parse_response(done.stdout)
    if done.returncode == EXIT_PIPELINE_FATAL and done.stdout:
        return parse_response(done.stdout, fatal=True, error=stderr)
    msg = (
        f"crossplane internal render {xr.get('kind')} {kit.ref(xr)} "
        f"exited with code {done.returncode}: {stderr or '(no stderr)'}"
    )
    raise EngineError(msg, returncode=done.returncode, stderr=stderr)
