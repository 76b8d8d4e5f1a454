"""Read a ``modelplane simulate`` scenario file: a fleet and a timeline of events.

A scenario is one YAML document::

    kind: Scenario
    name: drain-a-cluster
    description: What the platform team wants to know.
    include: [../getting-started/platform.yaml]   # files or folders, relative to this file
    fleet: [...]            # more documents, inline: InferenceClass, InferenceCluster,
                            # ModelDeployment, ModelCache, ModelReplica
    timeline:
    - name: drain gpu-us-east
      events:
      - taint: {cluster: gpu-us-east, key: modelplane.ai/maintenance, effect: NoExecute}

Documents of the same kind and name replace earlier ones (``include`` first, then
``fleet``), so a ``fleet/`` file of observed state can follow the manifests it observes.

Every field is checked here, before anything runs, and a problem is a
:class:`ScenarioError` naming where it is: ``timeline[1].events[0].taint.effect``.
What the events do to the fleet is :mod:`modelplane.simulate.world`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar, cast, get_args

import yaml

from modelplane.domain import taints
from modelplane.simulate.events import (
    AddPool,
    Apply,
    Delete,
    DeviceSelectors,
    EditDeployment,
    Event,
    NodesDown,
    Race,
    RemovePool,
    RestoreNodes,
    SetClusterReady,
    SetPoolNodes,
    Taint,
    Untaint,
)

# The events are read through this module too, as they always were.
__all__ = [
    "AddPool",
    "Apply",
    "Delete",
    "DeviceSelectors",
    "EditDeployment",
    "Event",
    "NodesDown",
    "Race",
    "RemovePool",
    "RestoreNodes",
    "SetClusterReady",
    "SetPoolNodes",
    "Taint",
    "Untaint",
]

YAML_SUFFIXES = (".yaml", ".yml")
KINDS = ("InferenceClass", "InferenceCluster", "ModelDeployment", "ModelCache", "ModelReplica")
EFFECTS: tuple[str, ...] = get_args(taints.Effect)
T = TypeVar("T")


class ScenarioError(ValueError):
    """A scenario that cannot be simulated: where in the file, and what is wrong."""


@dataclass(frozen=True)
class Located:
    """An event and where it is in the file, for messages: ``timeline[1].events[0]``."""

    where: str
    event: Event


@dataclass(frozen=True)
class Step:
    """A point on the timeline: events that happen together, then the fleet settles."""

    name: str
    events: tuple[Located, ...]


@dataclass(frozen=True)
class Scenario:
    """A fleet and what happens to it."""

    name: str
    description: str
    fleet: tuple[tuple[str, dict[str, Any]], ...]  # (where it came from, document)
    steps: tuple[Step, ...] = field(default_factory=tuple)


# --- reading ----------------------------------------------------------------------------------


def load(path: Path) -> Scenario:
    """Read and check a scenario file.

    Raises:
        ScenarioError: the file cannot be read, or a field is wrong (named with its path).
    """
    try:
        raw = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"{path}: cannot read: {exc}"
        raise ScenarioError(msg) from exc
    except yaml.YAMLError as exc:
        msg = f"{path}: not valid YAML: {exc}"
        raise ScenarioError(msg) from exc
    try:
        return parse(raw, path.parent)
    except ScenarioError as exc:
        msg = f"{path}: {exc}"
        raise ScenarioError(msg) from None


def parse(raw: Any, base: Path) -> Scenario:
    """Check a scenario document and return it; ``base`` resolves ``include`` paths.

    Raises:
        ScenarioError: a field is wrong, named with its path.
    """
    top = _mapping(raw, "(the scenario)")
    _known(
        top,
        "(the scenario)",
        ("kind", "apiVersion", "name", "description", "include", "fleet", "timeline"),
    )
    if top.get("kind") != "Scenario":
        msg = f"kind: must be Scenario, got {top.get('kind')!r}"
        raise ScenarioError(msg)
    name = _string(top, "name", "(the scenario)", default="scenario")
    description = _string(top, "description", "(the scenario)", default="")
    documents: list[tuple[str, dict[str, Any]]] = []
    for i, item in enumerate(_list(top, "include", "(the scenario)")):
        where = f"include[{i}]"
        if not isinstance(item, str) or not item:
            msg = f"{where}: must be a file or folder path"
            raise ScenarioError(msg)
        documents.extend(_read_documents(base / item, where))
    for i, item in enumerate(_list(top, "fleet", "(the scenario)")):
        documents.append((f"fleet[{i}]", _document(item, f"fleet[{i}]")))
    steps = tuple(
        _step(item, f"timeline[{i}]", base)
        for i, item in enumerate(_list(top, "timeline", "(the scenario)"))
    )
    return Scenario(name, description, tuple(documents), steps)


def _read_documents(path: Path, where: str) -> list[tuple[str, dict[str, Any]]]:
    """Every object of a YAML file, or of every YAML file under a folder (sorted)."""
    if not path.exists():
        msg = f"{where}: {path} does not exist"
        raise ScenarioError(msg)
    files = (
        sorted(p for p in path.rglob("*") if p.suffix in YAML_SUFFIXES and p.is_file())
        if path.is_dir()
        else [path]
    )
    found: list[tuple[str, dict[str, Any]]] = []
    for file in files:
        try:
            loaded = list(yaml.safe_load_all(file.read_text()))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            msg = f"{where}: {file}: not valid YAML: {exc}"
            raise ScenarioError(msg) from exc
        for j, doc in enumerate(d for d in loaded if d is not None):
            found.append(
                (f"{where} ({file.name}#{j})", _document(doc, f"{where} ({file.name}#{j})"))
            )
    return found


def _document(raw: Any, where: str) -> dict[str, Any]:
    doc = _mapping(raw, where)
    kind = doc.get("kind")
    if kind not in KINDS:
        msg = f"{where}.kind: must be one of {', '.join(KINDS)}, got {kind!r}"
        raise ScenarioError(msg)
    meta = doc.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str) or not meta["name"]:
        msg = f"{where}.metadata.name: a {kind} needs a name"
        raise ScenarioError(msg)
    namespaced = kind in ("ModelDeployment", "ModelCache", "ModelReplica")
    if namespaced and (not isinstance(meta.get("namespace"), str) or not meta["namespace"]):
        msg = f"{where}.metadata.namespace: a {kind} needs a namespace"
        raise ScenarioError(msg)
    return dict(doc)


def _step(raw: Any, where: str, base: Path) -> Step:
    step = _mapping(raw, where)
    _known(step, where, ("name", "events"))
    name = _string(step, "name", where, default="")
    events = _list(step, "events", where)
    if not events:
        msg = f"{where}.events: a step needs at least one event"
        raise ScenarioError(msg)
    located = tuple(
        Located(f"{where}.events[{i}]", _event(item, f"{where}.events[{i}]", base))
        for i, item in enumerate(events)
    )
    return Step(name or "; ".join(e.event.describe() for e in located), located)


def _event(raw: Any, where: str, base: Path) -> Event:
    event = _mapping(raw, where)
    if len(event) != 1:
        keys = ", ".join(sorted(map(str, event))) or "none"
        msg = f"{where}: an event is one of {', '.join(sorted(_EVENTS))}, with its fields (got keys: {keys})"
        raise ScenarioError(msg)
    ((kind, body),) = event.items()
    reader = _EVENTS.get(str(kind))
    if reader is None:
        msg = f"{where}: unknown event {kind!r}; one of {', '.join(sorted(_EVENTS))}"
        raise ScenarioError(msg)
    return reader(body, f"{where}.{kind}", base)


def _apply(body: Any, where: str, base: Path) -> Apply:
    items = body if isinstance(body, list) else [body]
    documents: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        here = f"{where}[{i}]" if isinstance(body, list) else where
        if isinstance(item, Mapping) and set(item) == {"file"}:
            file = item["file"]
            if not isinstance(file, str) or not file:
                msg = f"{here}.file: must be a file or folder path"
                raise ScenarioError(msg)
            documents.extend(d for _, d in _read_documents(base / file, f"{here}.file"))
        else:
            documents.append(_document(item, here))
    if not documents:
        msg = f"{where}: nothing to apply"
        raise ScenarioError(msg)
    return Apply(tuple(documents))


def _delete(body: Any, where: str, _: Path) -> Delete:
    spec = _mapping(body, where)
    _known(spec, where, ("kind", "name", "namespace"))
    kind = _string(spec, "kind", where)
    if kind not in KINDS:
        msg = f"{where}.kind: must be one of {', '.join(KINDS)}, got {kind!r}"
        raise ScenarioError(msg)
    namespace = _string(spec, "namespace", where, default="")
    if kind in ("ModelDeployment", "ModelCache", "ModelReplica") and not namespace:
        msg = f"{where}.namespace: a {kind} needs a namespace"
        raise ScenarioError(msg)
    return Delete(kind, _string(spec, "name", where), namespace)


def _edit(body: Any, where: str, _: Path) -> EditDeployment:
    spec = _mapping(body, where)
    fields = (
        "deployment",
        "replicas",
        "clusterSelector",
        "tolerations",
        "copies",
        "deviceSelectors",
        "image",
        "starts",
    )
    _known(spec, where, fields)
    namespace, name = _deployment_ref(spec, where)
    edit = EditDeployment(namespace, name)
    if "replicas" in spec:
        edit = replace(edit, replicas=_count(spec, "replicas", where))
    if "clusterSelector" in spec:
        selector = spec["clusterSelector"]
        if selector is not None:
            selector = _string_map(selector, f"{where}.clusterSelector")
        edit = replace(edit, cluster_selector=selector)
    if "tolerations" in spec:
        tolerations = tuple(
            dict(_mapping(t, f"{where}.tolerations[{i}]"))
            for i, t in enumerate(_list(spec, "tolerations", where))
        )
        edit = replace(edit, tolerations=tolerations)
    if "copies" in spec:
        copies = _mapping(spec["copies"], f"{where}.copies")
        edit = replace(
            edit,
            copies=tuple(
                (str(engine), _count(copies, engine, f"{where}.copies", least=1))
                for engine in sorted(copies)
            ),
        )
    if "deviceSelectors" in spec:
        edit = replace(
            edit,
            device_selectors=tuple(
                _device_selectors(item, f"{where}.deviceSelectors[{i}]")
                for i, item in enumerate(_list(spec, "deviceSelectors", where))
            ),
        )
    if "image" in spec:
        edit = replace(edit, image=_string(spec, "image", where))
    if "starts" in spec:
        if not isinstance(spec["starts"], bool) or "image" not in spec:
            msg = f"{_path(where, 'starts')}: true or false, with an image (false: it never turns Ready)"
            raise ScenarioError(msg)
        edit = replace(edit, starts=spec["starts"])
    if edit == EditDeployment(namespace, name):
        msg = f"{where}: nothing to edit; set replicas, clusterSelector, tolerations, copies, deviceSelectors or image"
        raise ScenarioError(msg)
    return edit


def _device_selectors(raw: Any, where: str) -> DeviceSelectors:
    spec = _mapping(raw, where)
    _known(spec, where, ("engine", "role", "device", "cel"))
    cel = _list(spec, "cel", where)
    for i, expression in enumerate(cel):
        if not isinstance(expression, str) or not expression.strip():
            msg = f"{where}.cel[{i}]: must be a CEL expression"
            raise ScenarioError(msg)
    return DeviceSelectors(
        _string(spec, "engine", where),
        _string(spec, "role", where, default="Standalone"),
        _string(spec, "device", where),
        tuple(cel),
    )


def _taint(body: Any, where: str, _: Path) -> Taint:
    spec = _mapping(body, where)
    _known(spec, where, ("cluster", "key", "value", "effect"))
    effect = _string(spec, "effect", where)
    if effect not in EFFECTS:
        msg = f"{where}.effect: must be NoSchedule or NoExecute, got {effect!r}"
        raise ScenarioError(msg)
    cluster = _string(spec, "cluster", where)
    key = _string(spec, "key", where)
    value = _string(spec, "value", where, default="")
    return Taint(cluster, taints.Taint(key, cast(taints.Effect, effect), value))


def _untaint(body: Any, where: str, _: Path) -> Untaint:
    spec = _mapping(body, where)
    _known(spec, where, ("cluster", "key", "effect"))
    effect = _string(spec, "effect", where, default="")
    if effect and effect not in EFFECTS:
        msg = f"{where}.effect: must be NoSchedule or NoExecute, got {effect!r}"
        raise ScenarioError(msg)
    return Untaint(_string(spec, "cluster", where), _string(spec, "key", where), effect)


def _add_pool(body: Any, where: str, _: Path) -> AddPool:
    spec = _mapping(body, where)
    _known(spec, where, ("cluster", "pool"))
    pool = dict(_mapping(spec.get("pool"), f"{where}.pool"))
    _string(pool, "name", f"{where}.pool")
    _string(pool, "className", f"{where}.pool")
    for key in ("nodeCount", "minNodeCount", "maxNodeCount"):
        if key in pool:
            _count(pool, key, f"{where}.pool")
    return AddPool(_string(spec, "cluster", where), pool)


def _remove_pool(body: Any, where: str, _: Path) -> RemovePool:
    spec = _mapping(body, where)
    _known(spec, where, ("cluster", "pool"))
    return RemovePool(_string(spec, "cluster", where), _string(spec, "pool", where))


def _set_pool_nodes(body: Any, where: str, _: Path) -> SetPoolNodes:
    spec = _mapping(body, where)
    _known(spec, where, ("cluster", "pool", "nodes"))
    return SetPoolNodes(
        _string(spec, "cluster", where), _string(spec, "pool", where), _count(spec, "nodes", where)
    )


def _set_ready(body: Any, where: str, _: Path) -> SetClusterReady:
    spec = _mapping(body, where)
    _known(spec, where, ("cluster", "ready"))
    ready = spec.get("ready")
    if not isinstance(ready, bool):
        msg = f"{where}.ready: must be true or false, got {ready!r}"
        raise ScenarioError(msg)
    return SetClusterReady(_string(spec, "cluster", where), ready)


def _nodes_down(how: str) -> Callable[[Any, str, Path], NodesDown]:
    def read(body: Any, where: str, _: Path) -> NodesDown:
        spec = _mapping(body, where)
        _known(spec, where, ("cluster", "pool", "nodes"))
        return NodesDown(
            _string(spec, "cluster", where),
            _string(spec, "pool", where),
            _count(spec, "nodes", where),
            how,
        )

    return read


def _restore_nodes(body: Any, where: str, _: Path) -> RestoreNodes:
    spec = _mapping(body, where)
    _known(spec, where, ("cluster", "pool"))
    return RestoreNodes(_string(spec, "cluster", where), _string(spec, "pool", where))


def _race(body: Any, where: str, _: Path) -> Race:
    _known(_mapping(body or {}, where), where, ())
    return Race()


_EVENTS: dict[str, Callable[[Any, str, Path], Event]] = {
    "apply": _apply,
    "delete": _delete,
    "editDeployment": _edit,
    "taint": _taint,
    "untaint": _untaint,
    "addPool": _add_pool,
    "removePool": _remove_pool,
    "setPoolNodes": _set_pool_nodes,
    "setClusterReady": _set_ready,
    "loseNodes": _nodes_down("lost"),
    "cordonNodes": _nodes_down("cordoned"),
    "restoreNodes": _restore_nodes,
    "race": _race,
}


# --- typed fields -----------------------------------------------------------------------------


def _mapping(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        msg = f"{where}: must be a mapping, got {_type(raw)}"
        raise ScenarioError(msg)
    return {str(k): v for k, v in raw.items()}


def _list(spec: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = spec.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        msg = f"{_path(where, key)}: must be a list, got {_type(value)}"
        raise ScenarioError(msg)
    return value


def _string(spec: Mapping[str, Any], key: str, where: str, *, default: str | None = None) -> str:
    value = spec.get(key)
    if value is None and default is not None:
        return default
    if not isinstance(value, str) or (default is None and not value):
        msg = f"{_path(where, key)}: must be a non-empty string, got {_type(value)}"
        raise ScenarioError(msg)
    return value


def _count(spec: Mapping[str, Any], key: str, where: str, *, least: int = 0) -> int:
    value = spec.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        msg = f"{_path(where, key)}: must be a whole number of at least {least}, got {value!r}"
        raise ScenarioError(msg)
    return value


def _string_map(raw: Any, where: str) -> dict[str, str]:
    found = _mapping(raw, where)
    for key, value in found.items():
        if not isinstance(value, str):
            msg = f'{where}["{key}"]: must be a string, got {_type(value)}'
            raise ScenarioError(msg)
    return found


def _deployment_ref(spec: Mapping[str, Any], where: str) -> tuple[str, str]:
    ref = _string(spec, "deployment", where)
    namespace, _, name = ref.partition("/")
    if not namespace or not name or "/" in name:
        msg = f"{where}.deployment: must be namespace/name, got {ref!r}"
        raise ScenarioError(msg)
    return namespace, name


def _known(spec: Mapping[str, Any], where: str, fields: Sequence[str]) -> None:
    unknown = sorted(set(spec) - set(fields))
    if unknown:
        msg = f"{_path(where, unknown[0])}: unknown field; expected one of {', '.join(fields)}"
        raise ScenarioError(msg)


def _path(where: str, key: str) -> str:
    return key if where == "(the scenario)" else f"{where}.{key}"


def _type(value: Any) -> str:
    if value is None:
        return "nothing"
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list"}
    return names.get(
        type(value), "a mapping" if isinstance(value, Mapping) else type(value).__name__
    )
