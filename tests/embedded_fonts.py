"""The fonts a page or SVG file embeds, read back as a browser would get them: each ``@font-face`` rule's
``data:`` URL decoded, checked to be WOFF2, and opened with fontTools (which decodes WOFF2 through brotli);
what a face covers is the decoded font's own character map, never a list embedlab wrote."""

from __future__ import annotations

import base64
import io
import re

import pytest

pytest.importorskip("brotli")

from fontTools.ttLib import TTFont  # noqa: E402

FACE = re.compile(r'@font-face \{ font-family: "embedlab";[^}]*src: url\(data:font/woff2;base64,([A-Za-z0-9+/=]+)\) '
                  r'format\("woff2"\); unicode-range: ([^;]+); \}')


def faces(css: str) -> list[tuple[TTFont, set[int]]]:
    """Each face of ``css``: the font its data URL decodes to, and the code points its unicode-range names."""
    found = []
    for data, ranges in FACE.findall(css):
        raw = base64.b64decode(data)
        assert raw[:4] == b"wOF2"  # the WOFF2 signature
        found.append((TTFont(io.BytesIO(raw)), _points(ranges)))
    return found


def covered(css: str) -> set[int]:
    """Code points some face of ``css`` has a glyph for, by the decoded fonts' own cmaps."""
    return set().union(*(font.getBestCmap() for font, _ in faces(css)))


def _points(ranges: str) -> set[int]:
    """``U+20, U+41-43`` -> {0x20, 0x41, 0x42, 0x43}."""
    points = set()
    for part in ranges.split(", "):
        first, _, last = part.removeprefix("U+").partition("-")
        points.update(range(int(first, 16), int(last or first, 16) + 1))
    return points
