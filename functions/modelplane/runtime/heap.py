"""Keep protobuf's runtime from giving the whole heap back to the kernel during every call.

protobuf's Python extension (upb) frees each message's arena through an allocator that
calls glibc's ``malloc_trim(0)`` once per 10,000 blocks it frees (as of 7.36.2; a
later source of protobuf we read has that call disabled). A worker that reads an L fleet
frees that many blocks several times a call: each trim hands every free page of the heap
back (one ``madvise`` per free chunk), and the call faults them in again: ~7,000 minor
faults and ~20 ms of system time per served L call, besides the walk of the heap itself.
glibc's own thresholds (:func:`.limits.reuse_request_memory`) already bound what a
process keeps; the extension's trim only undoes them.

:func:`stop_protobuf_trim` points the extension's one call of ``malloc_trim`` at a C
function that does nothing with it (``malloc_usable_size(NULL)``, which returns 0, as a
trim that released nothing): what ``LD_PRELOAD`` of a no-op would do, for this library
alone and without a compiled helper. It writes only where the extension's ELF
relocation for ``malloc_trim`` is found and its slot holds what the dynamic linker put
there; anywhere else (another platform, backend or layout) it changes nothing.

The one exception to keeping memory is a call far larger than an L fleet's
(:data:`GIVE_BACK_AFTER_BYTES`): :func:`give_back_after` hands what it freed back at once.
Kept, a 5xL call's memory stays in both processes that held it: the serving process
keeps gRPC's three copies of the request (its slices, the pieces it joins, the joined
bytes) and the worker its decode, each near its own peak, so the one's peak lands on the
other's kept memory (~670 MiB summed at 5xL against ~450 given back). Faulting it in
again costs the next such call ~250 ms of system time: a tenth of a never-seen 5xL call,
a quarter of a steady one.
"""

from __future__ import annotations

import ctypes
import struct
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from google.protobuf.internal import api_implementation

_TRIM = b"malloc_trim"
_MAGIC = b"\x7fELF\x02\x01"  # ELF, 64-bit, little-endian
_SHT_RELA, _SHT_DYNSYM = 4, 11
_JUMP_SLOTS = {62: (7, 6), 183: (1026, 1025)}  # x86-64, aarch64: JUMP_SLOT, GLOB_DAT
_SECTION = struct.Struct("<IIQQQQIIQQ")  # Elf64_Shdr
_RELA = struct.Struct("<QQq")  # Elf64_Rela: offset, info, addend
_SYM = struct.Struct("<IBBHQQ")  # Elf64_Sym: name, info, other, section, value, size


GIVE_BACK_AFTER_BYTES = 32 * 1024 * 1024
"""A process gives freed memory back to the kernel after a call whose request is at
least this large: twice an L fleet's (~15 MiB), whose memory is worth keeping."""


def give_back_after(request_bytes: int) -> bool:
    """After a call whose request was ``request_bytes``: give every free page of the heap
    back when it was large (:data:`GIVE_BACK_AFTER_BYTES`). True when it did (glibc)."""
    if request_bytes < GIVE_BACK_AFTER_BYTES:
        return False
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


@cache
def _malloc_trim() -> Callable[[int], object] | None:
    """glibc's ``malloc_trim``, None in another C library (it has no such call)."""
    trim: Callable[[int], object] | None = getattr(ctypes.CDLL(None), "malloc_trim", None)
    return trim


@dataclass(frozen=True)
class _Section:
    kind: int
    offset: int
    size: int
    link: int


class _DlInfo(ctypes.Structure):
    _fields_ = (
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    )


def stop_protobuf_trim() -> bool:
    """Stop protobuf's extension calling ``malloc_trim``; True when it no longer does.

    Call while the process has one thread (as it starts): a lazy binding resolved on
    another thread at the same moment would write the slot back.
    """
    if not sys.platform.startswith("linux") or api_implementation.Type() != "upb":
        return False
    from google._upb import _message  # noqa: PLC0415  # the upb backend only

    try:
        libc = ctypes.CDLL(None)
        noop = ctypes.cast(libc.malloc_usable_size, ctypes.c_void_p).value
        trim = ctypes.cast(libc.malloc_trim, ctypes.c_void_p).value  # not glibc: no such
        base = _base_of(ctypes.CDLL(_message.__file__), libc)
        slot = _trim_slot(Path(_message.__file__).read_bytes(), base)
    except (OSError, AttributeError, ValueError, struct.error):
        return False
    if slot is None or not noop or not trim:
        return False
    found = ctypes.c_uint64.from_address(slot)
    if found.value == noop:
        return True
    if found.value != trim and not _is_lazy_stub(found.value, base, libc):
        return False  # not what the dynamic linker writes: leave it
    found.value = noop
    return True


def _base_of(library: ctypes.CDLL, libc: ctypes.CDLL) -> int:
    """Where ``library`` is loaded (``dladdr`` of its module init function)."""
    info = _DlInfo()
    init = ctypes.cast(library.PyInit__message, ctypes.c_void_p)
    if not libc.dladdr(init, ctypes.byref(info)) or not info.dli_fbase:
        msg = "dladdr found no base"
        raise ValueError(msg)
    return int(info.dli_fbase)


def _is_lazy_stub(address: int, base: int, libc: ctypes.CDLL) -> bool:
    """Whether ``address`` is in the library loaded at ``base`` (a lazy binding's PLT
    entry)."""
    info = _DlInfo()
    return bool(libc.dladdr(ctypes.c_void_p(address), ctypes.byref(info))) and (
        info.dli_fbase == base
    )


def _trim_slot(elf: bytes, base: int) -> int | None:
    """The address of the slot through which the library calls ``malloc_trim``, if any."""
    if not elf.startswith(_MAGIC):
        return None
    (machine,) = struct.unpack_from("<H", elf, 18)
    slots = _JUMP_SLOTS.get(machine)
    if slots is None:
        return None
    for offset, kind, name in _relocations(elf, _sections(elf)):
        if kind in slots and name == _TRIM:
            return base + offset
    return None


def _relocations(elf: bytes, sections: list[_Section]) -> Iterator[tuple[int, int, bytes]]:
    """Each dynamic relocation: its offset, its type and its symbol's name."""
    symbols = next((s for s in sections if s.kind == _SHT_DYNSYM), None)
    if symbols is None:
        return
    names, index = sections[symbols.link], sections.index(symbols)
    for rela in (s for s in sections if s.kind == _SHT_RELA and s.link == index):
        for at in range(rela.offset, rela.offset + rela.size, _RELA.size):
            offset, info, _ = _RELA.unpack_from(elf, at)
            name_at = _SYM.unpack_from(elf, symbols.offset + (info >> 32) * _SYM.size)[0]
            start = names.offset + name_at
            yield int(offset), info & 0xFFFFFFFF, elf[start : elf.index(b"\0", start)]


def _sections(elf: bytes) -> list[_Section]:
    """The ELF file's section headers."""
    (table,) = struct.unpack_from("<Q", elf, 40)
    size, count = struct.unpack_from("<HH", elf, 58)
    found = []
    for at in range(table, table + size * count, size):
        _, kind, _, _, offset, length, link, _, _, _ = _SECTION.unpack_from(elf, at)
        found.append(_Section(kind, offset, length, link))
    return found
