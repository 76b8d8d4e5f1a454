"""Read a PNG's pixels with the standard library: enough for Chromium's screenshots.

Handles 8-bit RGB and RGBA, non-interlaced, with every scanline filter; raises on
anything else rather than guessing.
"""

from __future__ import annotations

import struct
import zlib
from collections import Counter
from pathlib import Path

_CHANNELS = {2: 3, 6: 4}  # colour type: RGB, RGBA


def pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Return width, height and the image's rows (``channels`` bytes per pixel)."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        msg = f"{path} is not a PNG"
        raise ValueError(msg)
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if depth != 8 or colour not in _CHANNELS or interlace:
        msg = (
            f"{path}: unsupported PNG (depth {depth}, colour type {colour}, interlace {interlace})"
        )
        raise ValueError(msg)
    channels = _CHANNELS[colour]
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind_of_filter, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        _unfilter(kind_of_filter, line, previous, channels)
        rows.append(bytes(line))
        previous = line
    return width, height, rows


def _unfilter(kind: int, line: bytearray, previous: bytearray, bpp: int) -> None:
    for i in range(len(line)):
        left = line[i - bpp] if i >= bpp else 0
        up = previous[i]
        corner = previous[i - bpp] if i >= bpp else 0
        if kind == 1:
            line[i] = (line[i] + left) & 0xFF
        elif kind == 2:
            line[i] = (line[i] + up) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + (left + up) // 2) & 0xFF
        elif kind == 4:
            line[i] = (line[i] + _paeth(left, up, corner)) & 0xFF


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def colour_counts(path: Path) -> Counter[str]:
    """Return how many pixels of each ``#rrggbb`` colour the image has."""
    width, _, rows = pixels(path)
    channels = len(rows[0]) // width
    counts: Counter[str] = Counter()
    for row in rows:
        for x in range(0, len(row), channels):
            counts["#{:02x}{:02x}{:02x}".format(*row[x : x + 3])] += 1
    return counts
