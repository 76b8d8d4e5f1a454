"""What provider-kubernetes reports of a workload in the reconcile that changes its spec.

The fake provider (:mod:`modelplane.dev.loop.fakes`) reports each Object's workload as
its controller leaves it once the manifest is applied. The real provider reports less
on the way there: its Update stores the API server's answer to the apply in
``status.atProvider.manifest`` and judges ``Ready`` (the readiness CEL query) on it,
and that answer carries the new spec with its ``metadata.generation`` raised and the
*old* status, whose ``observedGeneration`` is the previous generation: the Deployment
controller has not seen the new spec yet. Only a later poll (a later observe here)
reports the controller's status for it.

:class:`Generations` remembers, per Object, the workload spec last applied, its
generation and the status last reported, and rewrites what the fake reports
accordingly: the generation goes up by one per spec change, and in the observe that
first sees a changed spec the workload reports the apply's answer. Deployments and
StatefulSets only: their status has ``observedGeneration`` (a LeaderWorkerSet's does not).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, replace

from modelplane.dev.fakes.base import Obj, uid_of

KINDS = frozenset({"Deployment", "StatefulSet"})


@dataclass(frozen=True)
class Applied:
    """One Object's workload as the provider last applied and observed it.

    Attributes:
        spec: The workload's spec, as canonical JSON.
        generation: Its ``metadata.generation`` on the workload cluster.
        status: Its status as last reported once its controller saw ``generation``.
        call: The observe in which ``spec`` was applied.
    """

    spec: str
    generation: int
    status: Obj
    call: int


class Generations:
    """The provider's memory of each workload it applied (see the module docstring)."""

    def __init__(self) -> None:
        self.applied: dict[str, Applied] = {}
        self.calls = 0

    def clone(self) -> Generations:
        out = Generations()
        out.applied = dict(self.applied)
        out.calls = self.calls
        return out

    def next_observe(self) -> None:
        """Start an observe: an apply of an earlier one has been seen by its controller."""
        self.calls += 1

    def report(self, obj: Obj, manifest: Obj, ready: Callable[[Obj], bool]) -> bool | None:
        """Rewrite ``manifest`` (the workload as reported, with its status) in place as the
        provider reports it now; return its readiness then (None: not a kind tracked)."""
        if manifest.get("kind") not in KINDS or "status" not in manifest:
            return None
        uid, spec = uid_of(obj), json.dumps(manifest.get("spec"), sort_keys=True)
        found = self.applied.get(uid)
        if found is None:  # created: its controller's status follows at once
            found = Applied(spec, 1, {}, self.calls - 1)
        elif found.spec != spec:  # updated: the apply's answer, until a later observe
            found = Applied(spec, found.generation + 1, found.status, self.calls)
        meta = manifest.setdefault("metadata", {})
        meta["generation"] = found.generation
        if found.call == self.calls:
            status = copy.deepcopy(found.status)
        else:
            status = {**manifest["status"], "observedGeneration": found.generation}
            found = replace(found, status=copy.deepcopy(status))
        manifest["status"] = status
        self.applied[uid] = found
        return ready(manifest)
