"""Arguments and argument types that several commands share: the model, the probe, memory, sizes."""

from __future__ import annotations

import argparse
import contextlib
import math
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from ..engine.neighbors.defaults import DEFAULT_MEMORY
from ..report.locales import DEFAULT_LANGUAGE, LANGUAGES


ANY_TABLE = "seed, minilm, glove, or a path: a checkpoint folder, a .safetensors, .gguf, .npy or GloVe/word2vec text file"


TABLES = ("input", "head")  # engine.provenance.PARTS, without importing the package's engine here

# --model when not given: the lab's seed table, for every command that can run on it; the commands that need
# what it lacks (a tokenizer: encode, audit; a position table: positions, plot positions) read minilm.
DEFAULT_MODEL = "seed"
DEFAULT_REAL_MODEL = "minilm"


def add_model_arguments(p: argparse.ArgumentParser, default: str = DEFAULT_MODEL, kinds: str = ANY_TABLE,
                        words: bool = True, table: bool = True) -> None:
    """--model (what ``kinds`` says it may be), --tensor, --table where the command can read the output head,
    and, where a table can be a .npy, --words."""
    p.add_argument("--model", default=default, help=f"{kinds} (default {default})")
    if table:
        p.add_argument("--tensor", type=given(str, "a tensor name"),
                       help="for a checkpoint: the name of the tensor of the table read (--table), instead of "
                            "finding it by name; an output head's name (lm_head.weight) reads the head")
        p.add_argument("--table", choices=TABLES, default="input",
                       help="which table of the model: input, the token-embedding table (default), or head, the "
                            "output head that scores every token (a tied model's head is its input table; word "
                            "vectors have none)")
    else:
        p.add_argument("--tensor", type=given(str, "a tensor name"),
                       help="for a checkpoint: the name of the token-embedding tensor")
    if words:
        p.add_argument("--words", type=given(str, "a word-list file"),
                       help="for a .npy table: a file with one token per line, in row order")


def add_language_argument(p: argparse.ArgumentParser, what: str) -> None:
    """--lang: one of the report's languages (``report.locales.LANGUAGES``), the report's default
    when not given; argparse refuses another value with a usage error naming it and the choices."""

    p.add_argument("--lang", choices=LANGUAGES, default=DEFAULT_LANGUAGE,
                   help=f"language of {what}: {', '.join(LANGUAGES)} (default {DEFAULT_LANGUAGE})")


PROBE_HELP = ("probe token: a token string or a token id; a number that is also a token is the token, write "
              "id:N to mean the id (default: 'king' where the table's vocabulary holds it, else id 137)")


def check_model_options(args: argparse.Namespace) -> None:
    """A usage error (exit 2) for --tensor or --words beside --model seed, the lab's built-in table."""
    given = [flag for flag, value in (("--tensor", args.tensor), ("--words", args.words)) if value is not None]
    if args.model == "seed" and given:
        args.usage_error(f"{' and '.join(given)} {'does' if len(given) == 1 else 'do'} not apply to --model seed: "
                         "it is the lab's built-in table")


def add_memory_argument(p: argparse.ArgumentParser) -> None:
    # Default None: the library applies DEFAULT_MEMORY, and a view knows whether the flag was given.
    p.add_argument("--memory", type=byte_size, default=None, metavar="BYTES",
                   help="working memory of the search: a number of bytes, or with K, M or G "
                        f"(binary: 1M = 2**20 bytes); default {DEFAULT_MEMORY // 2**20}M. Given, neighbors, hubs "
                        "and graph also print each search's plan against it (the screen it runs and why) and the "
                        "table's resident cost (outside the budget)")


def byte_size(text: str) -> int:
    """``"256M"`` -> 268435456: bytes, with an optional K/M/G suffix (powers of 1024).

    A fraction is allowed only with a unit, and rounds down to whole bytes
    (``"1.5K"`` -> 1536); a fractional count of bytes (``"1.5"``) is a usage
    error, as is a size below one byte.
    """
    units = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}
    found = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*(?:([KMG])I?B?|B)?\s*", text.upper())
    if found is None:
        raise argparse.ArgumentTypeError(f"expected bytes such as 268435456, 512K, 256M or 1G, got {text!r}")
    if not found[2] and "." in found[1] and float(found[1]) != int(float(found[1])):
        raise argparse.ArgumentTypeError(f"expected a whole number of bytes, got {text!r}: a fraction needs a "
                                         "unit (K, M or G), e.g. 1.5K")
    value = int(float(found[1]) * units[found[2] or ""])
    if value <= 0:
        raise argparse.ArgumentTypeError(f"memory must be positive, got {text!r}")
    return value


DEVICE_CHOICES = "cpu, cuda or cuda:N"


def device_name(text: str) -> str:
    """An argument type for --device: ``cpu``, ``cuda`` or ``cuda:N`` (N a GPU index), as given.

    Another name is a usage error (exit 2); whether torch sees that GPU is
    checked when the search runs (``engine.neighbors.torch_screen.resolve_device``, exit 1).

    >>> device_name("cuda:1")
    'cuda:1'
    """
    if re.fullmatch(r"cpu|cuda(?::[0-9]+)?", text) is None:
        raise argparse.ArgumentTypeError(f"expected {DEVICE_CHOICES}, got {text!r}")
    return text


def sample_help(default: int) -> str:
    """The help of --sample, word for word the same in ``plot projection`` and ``projector``."""
    return (f"points in all: the probe, its k cosine and k dot neighbours, then random rows (default {default:,}, or "
            "V on a smaller table; from 2k + 1 to V)")


# Said in the help of every option that names one output file (plot --out, projector --out, compress --plot):
# files.write_atomic creates the file's folder where it is missing.
MAKES_FOLDER = "; a missing folder is created"


def sample_count(text: str) -> int:
    """An argument type for --sample: any int; its range (``sample_range``) is checked once k is known."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an int (points in all), got {text!r}") from None


def sample_range(k: int, V: int | None = None) -> str:
    """The points a sample may hold, in the words of ``projection.choose_rows``'s error:
    from 2k + 1 (the probe and its k cosine and k dot neighbours) to V.

    >>> sample_range(10)
    'an int from 21 (the probe and its 10 + 10 neighbours) to V'
    """
    return f"an int from {2 * k + 1:,} (the probe and its {k} + {k} neighbours) to V" + (
        "" if V is None else f" = {V:,}")


def check_sample(args: argparse.Namespace, default_k: int) -> None:
    """A usage error (exit 2) for ``--sample`` below 2k + 1, before any table is loaded: that bound
    depends on k only. The upper bound V is the table's, said when it is loaded (exit 1), in the same words."""
    if getattr(args, "sample", None) is None:
        return
    k = args.k if args.k is not None else default_k
    if args.sample < 2 * k + 1:
        args.usage_error(f"--sample {args.sample}: expected {sample_range(k)}")


def at_least(least: int | float, what: str, kind: type = int) -> Callable[[str], Any]:
    """An argument type for a number of at least ``least`` (an int, or a finite float with
    ``kind=float``): anything else is a usage error (exit 2) naming the value and ``what``
    was expected, as argparse says a bad choice.

    >>> at_least(1, "points")("12")
    12
    """
    def check(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or value < least:
            noun = "an int" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"expected {noun} of at least {least} ({what}), got {text!r}")
        return value

    return check


def above(bound: float, what: str) -> Callable[[str], float]:
    """An argument type for a finite float above ``bound`` (a perplexity above 0, a base above 1):
    anything else is a usage error (exit 2)."""
    def check(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not (bound < value < float("inf")):
            raise argparse.ArgumentTypeError(f"expected a number above {bound:g} ({what}), got {text!r}")
        return value

    return check


def query_count(text: str) -> int | None:
    """``all`` -> None (every token); a positive whole number -> that many sampled queries."""
    if text == "all":
        return None
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected 'all' or a positive number of queries, got {text!r}")
    return int(text)


@contextlib.contextmanager
def progress_bar(total: int, desc: str) -> Iterator[Callable[[int], None] | None]:
    """A tqdm bar on stderr when it is a terminal (and tqdm is installed); nothing otherwise."""
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is None or not sys.stderr.isatty():
        yield None
        return
    with tqdm(total=total, desc=desc, unit="query", file=sys.stderr, leave=False) as bar:
        yield bar.update


def given(convert: Callable[[str], Any], expected: str) -> Callable[[str], Any]:
    """An argument type that refuses an empty value (as a path, '' would silently be the current folder)."""
    def check(text: str) -> Any:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"empty value {text!r}: expected {expected}")
        return convert(text)

    return check


def widths(text: str) -> list[int]:
    """'64,32' -> [64, 32]: model widths, each at least 1."""
    try:
        widths = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"widths {text!r} must be comma-separated ints, e.g. 64,32") from None
    if not widths or min(widths) < 1:
        raise argparse.ArgumentTypeError(f"widths {text!r} must be ints >= 1")
    return widths


def pixels(text: str) -> tuple[int, int]:
    """'1200x800' -> (1200, 800): a figure size in pixels, each side at least 100."""
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"size {text!r} must be WIDTHxHEIGHT in pixels, e.g. 1200x800") from None
    if not (100 <= width <= 10000 and 100 <= height <= 10000):
        raise argparse.ArgumentTypeError(f"size {text!r} must be between 100x100 and 10000x10000 pixels")
    return width, height


def figure_path(text: str) -> Path:
    """A file name ending in .png or .svg: the figure's format follows it."""
    if not text.lower().endswith((".png", ".svg")):
        raise argparse.ArgumentTypeError(f"{text!r} must end in .png or .svg: the figure's format follows the name")
    return Path(text)


def token_list(text: str) -> list[str]:
    """'a,b,c' -> ['a', 'b', 'c']; an empty item is an error, not silently dropped."""
    items = [item.strip() for item in text.split(",")]
    if not text.strip() or any(not item for item in items):
        raise ValueError(f"--tokens {text!r} has an empty item: expected comma-separated tokens or ids, "
                         "e.g. king,queen")
    return items


@contextlib.contextmanager
def working(desc: str, *, after: float = 1.0, every: float = 0.5) -> Iterator[None]:
    """A status line on stderr while a long call runs, where stderr is a terminal: ``desc: 12 s``.

    For the commands whose library call has no steps to count (report, positions, encode, audit, params):
    it shows that the command is at work and for how long, from ``after`` seconds on, redrawn every
    ``every`` seconds by a daemon thread, and is erased when the call ends (before anything is printed).
    Nothing is written where stderr is not a terminal (pipes, files, tests).
    """
    if not sys.stderr.isatty():
        yield
        return
    done = threading.Event()
    start = time.monotonic()

    def draw() -> None:
        if done.wait(after):
            return
        while True:
            sys.stderr.write(f"\r{desc}: {time.monotonic() - start:.0f} s")
            sys.stderr.flush()
            if done.wait(every):
                break
        sys.stderr.write("\r\033[K")  # the line erased: the command's own output starts clean
        sys.stderr.flush()

    thread = threading.Thread(target=draw, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


@contextlib.contextmanager
def progress(total: int, desc: str, quiet: bool) -> Iterator[Any]:
    """A tqdm bar on a terminal; silent when stderr is not a terminal or with --quiet."""
    from tqdm import tqdm

    with tqdm(total=total, desc=desc, disable=quiet or not sys.stderr.isatty(), leave=False) as bar:
        yield bar


