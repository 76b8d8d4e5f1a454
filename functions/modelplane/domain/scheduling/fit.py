"""Pool fitting: which pools of a cluster can host each engine, and at what node cost.

A pool fits a member when the member's device requests can all be satisfied at once by
the pool's device entries: each request takes one entry whose every selector is true
and whose per-node count covers it, and an entry's count is shared among the requests
it serves. Among the ways to do that, the one claiming the most ``claim: DRA`` entries
wins (Synthetic devices are matched for scheduling, never claimed). An engine fits a
pool when all its members do; its node cost there is ``copies x pods`` summed over the
members that claim at least one DRA device.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from modelplane.domain.dra import Device
from modelplane.domain.scheduling import sharing
from modelplane.domain.scheduling.fleet import (
    Demand,
    DeviceRequest,
    Engine,
    Member,
    Pool,
    PoolDevice,
)
from modelplane.domain.scheduling.ledger import Room
from modelplane.domain.scheduling.placement import (
    ClaimedRequest,
    ConflictMiss,
    CountMiss,
    EnginePlacement,
    MemberPlacement,
    Miss,
    NothingOffered,
    PoolMiss,
    SelectorMiss,
    SyntheticOnly,
)

# A bound on the search for a joint assignment of a member's requests to a pool's
# devices, so no shape of input can stall a reconcile. Real members have a handful of
# requests and pools a handful of devices; hitting it counts as "does not fit".
ASSIGNMENT_BUDGET = 20_000


class Selectors(Protocol):
    """The CEL device selector engine the scheduler matches with."""

    def check(self, expression: str) -> str | None:
        """Return None when ``expression`` compiles, else a readable error."""

    def matches(self, expression: str, device: Device) -> bool:
        """Tell whether ``expression`` is true for ``device`` (an evaluation error is false)."""


@dataclass(frozen=True)
class MemberFit:
    """How a member fits a pool: the DRA requests it claims there."""

    claims: tuple[ClaimedRequest, ...]
    requests: int

    @property
    def claims_real(self) -> bool:
        """Tell whether the member claims at least one real (DRA) device here."""
        return bool(self.claims)


@dataclass(frozen=True)
class EngineFit:
    """An engine on one pool: the cost and each member's claims."""

    placement: EnginePlacement

    @property
    def pool(self) -> str:
        """The pool's name."""
        return self.placement.pool

    @property
    def nodes(self) -> int:
        """The engine's node cost on this pool."""
        return self.placement.nodes


@dataclass(frozen=True)
class EngineOptions:
    """The pools of one cluster that fit an engine (by name), or why none does."""

    engine: Engine
    fits: tuple[EngineFit, ...]
    misses: tuple[PoolMiss, ...]


def fit_member(
    member: Member, devices: Sequence[PoolDevice], matches: Callable[[str, Device], bool]
) -> MemberFit | Miss:
    """Fit one member to a pool's devices.

    Args:
        member: The member whose device requests to satisfy.
        devices: The pool's device entries.
        matches: Tells whether a selector is true for a device.

    Returns:
        The member's fit, or the first reason it does not fit.
    """
    candidates: list[list[int]] = []
    for request in member.devices:
        usable = [
            i
            for i, entry in enumerate(devices)
            if entry.count >= max(request.count, 1)
            and all(matches(s, entry.device) for s in request.selectors)
        ]
        if not usable:
            return _explain(request, devices, matches)
        # Real devices first, so the best assignment is found first.
        usable.sort(key=lambda i: (devices[i].claim != "DRA", i))
        candidates.append(usable)
    chosen = _assign(member.devices, devices, candidates)
    if chosen is None:
        return ConflictMiss(tuple(r.name for r in member.devices))
    claims = tuple(
        ClaimedRequest(
            name=request.name,
            device_class_name=devices[entry].device_class_name,
            count=max(request.count, 1),
            selectors=request.selectors,
        )
        for request, entry in zip(member.devices, chosen, strict=True)
        if devices[entry].claim == "DRA"
    )
    return MemberFit(claims=claims, requests=len(member.devices))


def _assign(
    requests: Sequence[DeviceRequest],
    devices: Sequence[PoolDevice],
    candidates: Sequence[Sequence[int]],
) -> list[int] | None:
    """Return the entry each request takes, claiming the most DRA entries; None if none."""
    remaining = [d.count for d in devices]
    chosen: list[int] = []
    best: list[int] | None = None
    best_score = -1
    steps = 0

    def search(i: int, score: int) -> bool:
        """Depth-first; returns True to stop (optimal found or budget spent)."""
        nonlocal best, best_score, steps
        steps += 1
        if steps > ASSIGNMENT_BUDGET:
            return True
        if score + len(requests) - i <= best_score:
            return False
        if i == len(requests):
            best, best_score = list(chosen), score
            return best_score == len(requests)
        need = max(requests[i].count, 1)
        for entry in candidates[i]:
            if remaining[entry] < need:
                continue
            remaining[entry] -= need
            chosen.append(entry)
            stop = search(i + 1, score + (devices[entry].claim == "DRA"))
            chosen.pop()
            remaining[entry] += need
            if stop:
                return True
        return False

    search(0, 0)
    return best


def _explain(
    request: DeviceRequest, devices: Sequence[PoolDevice], matches: Callable[[str, Device], bool]
) -> Miss:
    """Say why no device entry serves a request: a selector, the count, or nothing offered."""
    offered = [d for d in devices if d.count > 0]
    if not offered:
        return NothingOffered(request.name)
    matching = [d for d in offered if all(matches(s, d.device) for s in request.selectors)]
    if matching:
        return CountMiss(request.name, max(request.count, 1), max(d.count for d in matching))
    # Blame the first failing selector of the device that came closest.
    best_passed, blamed = -1, request.selectors[0] if request.selectors else ""
    for entry in offered:
        for passed, selector in enumerate(request.selectors):
            if not matches(selector, entry.device):
                if passed > best_passed:
                    best_passed, blamed = passed, selector
                break
    return SelectorMiss(request.name, blamed)


class PoolFitter:
    """Fits a deployment's engines to pools, remembering results across a fleet.

    Many clusters publish pools of the same InferenceClass; the fitter computes each
    (member, device list) once per scheduling call.
    """

    def __init__(self, engines: Sequence[Engine], matches: Callable[[str, Device], bool]) -> None:
        """Create a fitter for a deployment's engines with a selector matcher."""
        self.engines = tuple(engines)
        self._matches = matches
        # Keyed by the device tuple's identity, which is cheap to hash; the entry keeps
        # the tuple alive so its identity cannot be reused during the call.
        self._fits: dict[tuple[int, int, int], tuple[tuple[PoolDevice, ...], MemberFit | Miss]]
        self._fits = {}
        # Fleets are templated: many clusters publish the same pools (names and classes),
        # so an engine's options are remembered per pool layout.
        self._options: dict[tuple[int, tuple[tuple[str, int], ...]], EngineOptions] = {}
        self._layouts: list[Sequence[Pool]] = []

    def member(self, engine: int, member: int, pool: Pool) -> MemberFit | Miss:
        """Return how member ``member`` of engine ``engine`` fits ``pool``."""
        key = (engine, member, id(pool.devices))
        found = self._fits.get(key)
        if found is None:
            fit = fit_member(self.engines[engine].members[member], pool.devices, self._matches)
            found = (pool.devices, fit)
            self._fits[key] = found
        return found[1]

    def engine_on(self, engine: int, pool: Pool) -> EngineFit | PoolMiss:
        """Fit a whole engine to one pool, ignoring other pools (the retain check)."""
        fits: list[MemberFit] = []
        for m, member in enumerate(self.engines[engine].members):
            fit = self.member(engine, m, pool)
            if not isinstance(fit, MemberFit):
                return PoolMiss(pool.name, member.role, fit)
            fits.append(fit)
        return self._engine_fit(engine, pool, fits)

    def options(self, engine: int, pools: Sequence[Pool]) -> EngineOptions:
        """Return the pools of one cluster that fit an engine, by pool name.

        A member that can claim a real device on some pool of the cluster is never put
        on a pool where it would match only Synthetic devices.
        """
        key = (engine, tuple((p.name, id(p.devices)) for p in pools))
        found = self._options.get(key)
        if found is None:
            found = self._options[key] = self._compute_options(engine, pools)
            self._layouts.append(pools)  # keeps the device tuples alive, so ids stay unique
        return found

    def _compute_options(self, engine: int, pools: Sequence[Pool]) -> EngineOptions:
        spec = self.engines[engine]
        ordered = sorted(pools, key=lambda p: p.name)
        table = [[self.member(engine, m, p) for m in range(len(spec.members))] for p in ordered]
        real_somewhere = [
            any(_claims_real(row[m]) for row in table) for m in range(len(spec.members))
        ]
        fits: list[EngineFit] = []
        misses: list[PoolMiss] = []
        for pool, row in zip(ordered, table, strict=True):
            outcome = _all_fit(spec, row, real_somewhere, pool.name)
            if isinstance(outcome, PoolMiss):
                misses.append(outcome)
            else:
                fits.append(self._engine_fit(engine, pool, outcome))
        return EngineOptions(spec, tuple(fits), tuple(misses))

    def _engine_fit(self, engine: int, pool: Pool, fits: Sequence[MemberFit]) -> EngineFit:
        spec = self.engines[engine]
        pods = sum(m.pods for m, f in zip(spec.members, fits, strict=True) if f.claims_real)
        members = tuple(
            MemberPlacement(role=m.role, claims=f.claims)
            for m, f in zip(spec.members, fits, strict=True)
        )
        copies = max(spec.copies, 1)
        nodes = copies * pods
        # What each pod claims, for a pool whose pods share nodes.
        # A gang's pods each take a node of their own (the docs: one per node).
        mark = sharing.gang if spec.is_gang else _same
        claimed = sharing.pods(
            (
                mark(sharing.demand((c.device_class_name, c.count) for c in f.claims)),
                copies * m.pods,
            )
            for m, f in zip(spec.members, fits, strict=True)
            if f.claims_real
        )
        return EngineFit(EnginePlacement(spec.name, pool.name, nodes, members, claimed))


def _same(claimed: Demand) -> Demand:
    return claimed


def _claims_real(fit: MemberFit | Miss) -> bool:
    return isinstance(fit, MemberFit) and fit.claims_real


def _all_fit(
    engine: Engine, row: Sequence[MemberFit | Miss], real_somewhere: Sequence[bool], pool: str
) -> list[MemberFit] | PoolMiss:
    """Return every member's fit on a pool, or the first member's reason it does not fit."""
    fits: list[MemberFit] = []
    for member, fit, real in zip(engine.members, row, real_somewhere, strict=True):
        if not isinstance(fit, MemberFit):
            return PoolMiss(pool, member.role, fit)
        if real and not fit.claims_real:
            requests = tuple(r.name for r in member.devices)
            return PoolMiss(pool, member.role, SyntheticOnly(requests))
        fits.append(fit)
    return fits


def choose_pools(options: Sequence[EngineOptions], room: Room) -> list[EngineFit] | None:
    """Pick a pool for every engine so that, together, they fit the pools' free nodes.

    Pools are tried in name order per engine, engines in the deployment's order; the
    first combination that fits wins. An engine that costs no nodes fits any pool it
    matches, even a full one (:class:`Room`).
    """
    chosen: list[EngineFit] = []

    def search(i: int) -> bool:
        if i == len(options):
            return True
        for fit in options[i].fits:
            if not room.take(fit.pool, fit.nodes, fit.placement.pods):
                continue
            chosen.append(fit)
            if search(i + 1):
                return True
            chosen.pop()
            room.give_back(fit.pool, fit.nodes, fit.placement.pods)
        return False

    return chosen if search(0) else None
