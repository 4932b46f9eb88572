"""Fonts for figure text in every script: the families to draw with, and what they cannot draw.

matplotlib's own font, DejaVu Sans, covers Latin, Greek, Cyrillic, Arabic, Hebrew
and many symbols but no Han, kana or Hangul. Noto Sans CJK JP covers those (it is
pan-CJK: Hangul, kana, simplified and traditional Han); its OpenType file comes
in the wheel of the PyPI package ``notojp-matplotlib`` (code 0BSD, the font under
the SIL Open Font License 1.1, whose text sits beside the file), part of the
``plots`` extra. The package is never imported: its ``__init__`` sets the
process-wide default font (``matplotlib.rc``). Its folder is found with
``importlib.util.find_spec``, which does not run the package, and the file is
registered with ``matplotlib.font_manager.fontManager.addfont``.

Figures draw every text with the fallback list ``families()`` (matplotlib picks,
glyph by glyph, the first family that has it). A character that no family has
(most emoji, Devanagari, cuneiform...) would be drawn as an empty box with a
warning; ``missing`` finds such characters before drawing, so that a figure can
draw ``REPLACEMENT`` in their place and say which tokens it could not draw.

The same two files give a page its glyphs (``report.webfont``): ``files()`` are
the font files of ``families()``, in fallback order, and ``charmap`` what each has.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Iterable

from matplotlib import font_manager, ft2font

from ..errors import MissingExtraError

__all__ = ["BASE_FAMILY", "CJK_FAMILY", "CJK_PACKAGE", "REPLACEMENT", "families", "files", "charmap", "cjk_file",
           "missing", "drawable", "undrawable"]

BASE_FAMILY = "DejaVu Sans"  # matplotlib's bundled default: Latin, Greek, Cyrillic, Arabic, Hebrew, symbols
CJK_FAMILY = "Noto Sans CJK JP"  # the family name inside the .otf file
CJK_PACKAGE = "notojp_matplotlib"  # PyPI notojp-matplotlib==1.1.0, in the plots extra
CJK_FILE = ("fonts", "NotoSansCJKjp-Regular.otf")  # inside the package's folder
REPLACEMENT = "\N{REPLACEMENT CHARACTER}"  # drawn for a character no family has (DejaVu Sans has it)
# Characters that are layout, not glyphs, and draw with no warning: a newline breaks the line; zero-width
# spaces and joiners and variation selectors draw nothing.
_LAYOUT = frozenset("\n\u200b\u200c\u200d\ufe0e\ufe0f")


@functools.cache
def families() -> tuple[str, ...]:
    """The font families figure text is drawn with, in fallback order: ``(BASE_FAMILY, CJK_FAMILY)``.

    The first call registers the CJK font file with matplotlib's font manager
    (once per process; the package itself is not imported).

    Raises
    ------
    MissingExtraError
        When ``notojp-matplotlib`` is not installed (the ``plots`` extra).
    """
    font_manager.fontManager.addfont(str(cjk_file()))
    return BASE_FAMILY, CJK_FAMILY


@functools.cache
def files() -> tuple[Path, ...]:
    """The font file of each family of ``families()``, in the same order: what matplotlib draws with.

    Raises ``MissingExtraError`` as ``families``.
    """
    return tuple(Path(font_manager.findfont(font_manager.FontProperties(family=family), fallback_to_default=False))
                 for family in families())


@functools.cache
def charmap(path: Path) -> frozenset[int]:
    """The code points the font file ``path`` has a glyph for (its character map)."""
    return frozenset(ft2font.FT2Font(str(path)).get_charmap())


def missing(text: str) -> str:
    """The characters of ``text`` that no family of ``families()`` can draw, each once, in order.

    >>> missing("king 王 한국어 かな")
    ''
    >>> missing("a\N{UNICORN FACE}b\N{UNICORN FACE}")
    '🦄'
    """
    covered = _covered()
    return "".join(dict.fromkeys(c for c in text if ord(c) not in covered and c not in _LAYOUT))


def drawable(text: str) -> str:
    """``text`` with every character ``missing`` replaced by ``REPLACEMENT``: drawn with no missing glyph.

    >>> drawable("a\N{DEVANAGARI LETTER KA}b")
    'a�b'
    """
    gaps = set(missing(text))
    return "".join(REPLACEMENT if c in gaps else c for c in text) if gaps else text


def undrawable(texts: Iterable[str]) -> list[str]:
    """The texts that hold a character no family can draw, each once, in order."""
    return [t for t in dict.fromkeys(texts) if missing(t)]


@functools.cache
def _covered() -> frozenset[int]:
    """Code points some family of ``families()`` has a glyph for (the union of their charmaps)."""
    return frozenset().union(*(charmap(path) for path in files()))


def cjk_file() -> Path:
    """The path of the CJK font file inside the installed package, found without importing it."""
    try:
        spec = importlib.util.find_spec(CJK_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder).joinpath(*CJK_FILE)
        if path.is_file():
            return path
    raise MissingExtraError.for_module("notojp-matplotlib", "figures", ("plots",))
