"""What the fleet reader and the planner remember across calls: one owner, one reset.

Every call of every ModelDeployment reads the same fleet, and most of it is unchanged
since the last call, so what an object (or a part many objects share) reads as is
remembered by its identity, and each deployment's last placement while nothing it
depends on changes. All of it belongs to :data:`MEMO`, the one process-wide
:class:`Memos`: each reader registers its memo there (:meth:`Memos.add`), and
:meth:`Memos.reset` forgets everything at once (tests and benchmarks measure cold
calls with it; nothing else needs to, as every entry is exact for its key).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, cast

from modelplane.domain.scheduling.memo import PlacementMemo
from modelplane.planning.fields import _MISSING, T, content_key

# The least a memo generation holds (it grows to hold one call's fleet): a 10,000 replica
# fleet and its clusters, several times over.
MEMO_LIMIT = 65_536


class Memo(Generic[T]):
    """Remembers what a message reads as, by its identity, across calls.

    Every call of every ModelDeployment reads the same fleet, and most of it is
    unchanged since the last call. The result is a pure function of the content, which
    the key names, so a remembered one is exact.

    Memory is bounded by two generations: entries are remembered in the young one; when
    it is full it becomes the old one (and the old one is dropped), and an old entry used
    again moves back to the young one. So what a fleet no longer holds (earlier
    resourceVersions, deleted objects) goes after at most two generations, and what every
    call reads stays. A memo given ``name`` (an object's name, from what it reads as)
    forgets an object's earlier version (another key, the same name) as soon as it reads
    a new one: the API server holds one version of an object, so the earlier one is dead,
    and a fleet that changes all over (a restart of every cluster's publisher, a
    benchmark's fleet never seen) is held once, not once per change until the
    generation fills. A generation holds at least :data:`MEMO_LIMIT` entries and at least
    one call's worth (:meth:`expect`), so a fleet of any size is read once, not every call.
    """

    def __init__(
        self,
        read: Callable[[Any], T],
        key: Callable[[Any], Any] = content_key,
        name: Callable[[T], Hashable | None] | None = None,
    ) -> None:
        self._read = read
        self._key = key
        self._name = name
        self._names: dict[Hashable, Any] = {}  # each object's latest key, this generation
        self.limit = MEMO_LIMIT
        self._young: dict[Any, T] = {}
        self._old: dict[Any, T] = {}
        self.misses = 0
        """How many reads were not remembered, ever: a caller's share of new objects."""
        self._cleared: list[Callable[[], None]] = []
        self._superseded: list[Callable[[], None]] = []
        self.last_key: Any = None
        """The key of the last read (calls of several threads may interleave: a caller
        that aliases it (:mod:`.identities`) may miss one, never mistake it)."""

    def expect(self, count: int) -> None:
        """Make room for a call that reads ``count`` messages."""
        self.limit = max(self.limit, count)

    def __call__(self, message: Any) -> T:
        return self.keyed(self._key(message), self._read, message)

    def keyed(self, key: Any, read: Callable[[Any], Any], message: Any) -> T:
        """What the message under ``key`` reads as: remembered, else ``read(message)``.

        For a caller that has the key already, from a decode of its own (``read`` must
        read as this memo's reader would: the entry is exact for its key either way).
        """
        self.last_key = key
        found = self._young.get(key, _MISSING)
        if found is _MISSING:
            found = self._old.pop(key, _MISSING)
            if found is _MISSING:
                self.misses += 1
                found = read(message)
                self._supersede(key, found)
            if len(self._young) >= self.limit:
                self._old, self._young = self._young, {}
                self._names = {}
            self._young[key] = cast("T", found)
        return cast("T", found)

    def _supersede(self, key: Any, found: Any) -> None:
        """Forget the entry of the object's earlier version, if it is remembered."""
        name = None if self._name is None else self._name(found)
        if name is None:
            return
        earlier = self._names.get(name)
        if earlier is not None and earlier != key:
            self._young.pop(earlier, None)
            self._old.pop(earlier, None)
            for forget in self._superseded:
                forget()
        self._names[name] = key

    def peek(self, keys: list[Any]) -> list[Any]:
        """What each key's message reads as if remembered in the young generation, else
        ``_MISSING`` (a key of None too): one C-level lookup each, nothing counted or moved,
        for a caller that reads the others one by one."""
        get = self._young.get
        return [get(key, _MISSING) for key in keys]

    def __len__(self) -> int:
        """How many entries are remembered, in both generations."""
        return len(self._young) + len(self._old)

    def clear(self) -> None:
        """Forget everything (tests and benchmarks measure cold calls with it)."""
        self._young.clear()
        self._old.clear()
        self._names.clear()
        for forget in self._cleared:
            forget()

    def on_clear(self, forget: Callable[[], None]) -> None:
        """Call ``forget`` whenever this memo is cleared (what is derived from it goes too)."""
        self._cleared.append(forget)

    def on_supersede(self, forget: Callable[[], None]) -> None:
        """Call ``forget`` whenever an object's earlier version is forgotten (what holds
        the earlier version goes too)."""
        self._superseded.append(forget)


class Memos:
    """Every memo of the planning package, by name, and the placements memo.

    Attributes:
        placements: Each deployment's last placement (:class:`PlacementMemo`).
        surged: Each deployment's last placement with its rolling update's surge (the
            deployment asked for more replicas): apart, so that the two do not evict
            each other while a rollout lasts.
        narrow, narrow_surged: The same for the narrow view (:mod:`.steady`), whose
            verdict a call holding the whole fleet takes too: apart, so that the two
            views of one call do not evict each other.
    """

    def __init__(self) -> None:
        """Start with no memos; each reader module adds its own when imported."""
        self._memos: dict[str, Memo[Any]] = {}
        self.placements = PlacementMemo()
        self.surged = PlacementMemo()
        self.narrow = PlacementMemo()
        self.narrow_surged = PlacementMemo()

    def add(
        self,
        name: str,
        read: Callable[[Any], T],
        key: Callable[[Any], Any] = content_key,
        object_name: Callable[[T], Hashable | None] | None = None,
    ) -> Memo[T]:
        """A new memo of ``read`` keyed by ``key``, owned (and reset) by this object
        (``object_name``: see :class:`Memo`'s ``name``)."""
        if name in self._memos:
            msg = f"a memo named {name!r} exists already"
            raise ValueError(msg)
        memo: Memo[T] = Memo(read, key, object_name)
        self._memos[name] = memo
        return memo

    def sizes(self) -> dict[str, int]:
        """How many entries each memo holds, by name (benchmarks report them)."""
        return {name: len(memo) for name, memo in self._memos.items()}

    def reset(self) -> None:
        """Forget everything read and placed, so the next call starts afresh."""
        for memo in self._memos.values():
            memo.clear()
        for placements in (self.placements, self.surged, self.narrow, self.narrow_surged):
            placements.clear()


MEMO = Memos()
"""The one owner of everything planning remembers across calls."""
