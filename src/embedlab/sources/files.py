"""Reading a file that a stranger wrote: the rules every reader in ``sources`` follows.

People run embedlab on folders downloaded from a model hub, so every name, size and
byte in a model file is untrusted input. Each reader of this package opens a file the
user named (``--model``, ``--words``, ``--config``, ``--vectors``) or a file found in a
model's folder (``config.json``, ``tokenizer.json``, ``vocab.txt``, the shard index,
the shards) through this module, under four rules:

1. **Regular files only.** ``regular_file`` stats the path, following symlinks, before
   anything opens it, and refuses by name a folder where a file is expected, a FIFO
   (named pipe), a character or block device (``/dev/zero``) and a socket: ``open()``
   of a FIFO blocks until a writer comes, and a device never ends. ``open_regular``
   then opens without blocking and checks the open file again, so a file swapped for
   a FIFO in between is refused too. (Readers that hand a path to a library, NumPy's
   memory map, ``gguf``, ``safetensors``, do so only after ``regular_file``.)
2. **Names said as they are.** A symlink loop is reported as a symlink loop (ELOOP),
   a link whose target is missing as a broken link, never as "no such file".
3. **Bounded reads.** A file read whole (``read_capped``, ``read_json``) is read at
   most ``cap + 1`` bytes, and one past its cap is refused, naming the file and the
   cap: ``CONFIG_CAP`` for ``config.json``, the shard index and ``vocab.json``,
   ``TOKENIZER_CAP`` for ``tokenizer.json``, ``WORDS_CAP`` for a word list or
   ``vocab.txt``. Readers of the big formats (safetensors, GGUF, .npy, word vectors)
   bound what they read by what the format declares, checked against the file's size
   before anything is allocated, and a line of text by ``LINE_CAP``. JSON nested
   deeper than Python's parser follows is refused in one line, naming the file.
4. **Confinement.** A file named *inside* another file (a shard that
   ``model.safetensors.index.json`` lists) must resolve, after symlinks, inside the
   folder that names it (``inside``): an absolute name or one that climbs out
   (``../../base/alone.safetensors``) is refused, naming the entry. The one place
   outside that is followed is a Hugging Face cache's own layout: a snapshot
   (``models--ORG--NAME/snapshots/REV/``) links its files to that repository's
   ``blobs/`` folder.

Messages name the file and the value at fault; they never quote a file's bytes.
Standard library only: ``resolve`` and ``word2vec`` use it before NumPy is imported.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import SourceError, brief

__all__ = ["CONFIG_CAP", "TOKENIZER_CAP", "WORDS_CAP", "LINE_CAP", "regular_file", "existing", "present",
           "open_regular", "read_capped", "read_json", "parse_json", "inside", "size_text"]

MiB = 2**20
CONFIG_CAP = 64 * MiB  # config.json, model.safetensors.index.json, vocab.json: real ones are kilobytes to a few MiB
TOKENIZER_CAP = 256 * MiB  # tokenizer.json: a 262k-token vocabulary with its merges is about 35 MiB
WORDS_CAP = 256 * MiB  # a word list or vocab.txt, one token per line: 400k GloVe words are 3 MiB
LINE_CAP = 16 * MiB  # one line of GloVe/word2vec text: 8,192 values written out are about 100 KiB

# What each kind of file that is not a regular file is called in a message.
_NOT_REGULAR = ((stat.S_ISDIR, "a folder, not a file"), (stat.S_ISFIFO, "a FIFO (named pipe), not a regular file"),
                (stat.S_ISCHR, "a character device, not a regular file"),
                (stat.S_ISBLK, "a block device, not a regular file"), (stat.S_ISSOCK, "a socket, not a regular file"))


def regular_file(path: str | Path, what: str = "file") -> os.stat_result:
    """The ``os.stat`` of a regular file (symlinks followed); ``SourceError`` for anything else, by name.

    Nothing is opened: a FIFO or a device is refused before ``open()`` could block
    or read without end.

    Parameters
    ----------
    path : str or Path
    what : str
        What the file is for, in messages: ``"config file"``, ``"word list"``.

    Returns
    -------
    os.stat_result

    Raises
    ------
    SourceError
        For a missing file, a broken symlink, a symlink loop, a folder, a FIFO, a
        device or a socket, or a path the system refuses (permission, name too long).

    >>> regular_file("/dev/null", "word list")
    Traceback (most recent call last):
    ...
    embedlab.errors.SourceError: word list /dev/null is a character device, not a regular file
    """
    status = _stat(path, what)
    if not stat.S_ISREG(status.st_mode):
        raise SourceError(f"{what} {path} is {_kind(status.st_mode)}")
    return status


def existing(path: str | Path, what: str = "file") -> os.stat_result:
    """The ``os.stat`` of a folder or a regular file (a model path may be either); ``SourceError`` for the rest.

    Raises ``SourceError`` as ``regular_file`` does, but a folder is welcome (and a
    missing path is "no such file or folder").
    """
    try:
        status = os.stat(path)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        if getattr(exc, "errno", None) == errno.ENOENT and not os.path.islink(path):
            raise SourceError(f"no such file or folder: {path}") from None
        raise _error(exc, path, what) from None
    if not (stat.S_ISREG(status.st_mode) or stat.S_ISDIR(status.st_mode)):
        raise SourceError(f"{what} {path} is {_kind(status.st_mode)}")
    return status


def present(path: str | Path, what: str = "file") -> bool:
    """Whether an optional file (``config.json`` beside the weights) is there: False when nothing has its name.

    Something by that name that is not a readable regular file (a folder, a FIFO, a
    broken link, a symlink loop) is refused rather than taken for absent.

    Raises
    ------
    SourceError
        As ``regular_file``, except for a name that does not exist.
    """
    if not os.path.lexists(path):
        return False
    regular_file(path, what)
    return True


def open_regular(path: str | Path, what: str = "file") -> BinaryIO:
    """A regular file opened for binary reading, without ever blocking on a FIFO.

    Checked by ``regular_file`` first, then opened non-blocking and checked again
    (``fstat``), so a file swapped for a FIFO or a device in between is refused too.

    Raises
    ------
    SourceError
        As ``regular_file``, or when the open fails.
    """
    regular_file(path, what)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise _error(exc, path, what) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise SourceError(f"{what} {path} is {_kind(mode)}")
    return os.fdopen(fd, "rb")


def read_capped(path: str | Path, what: str, cap: int) -> bytes:
    """The bytes of a regular file of at most ``cap`` bytes, read at most ``cap + 1`` bytes.

    Raises
    ------
    SourceError
        As ``open_regular``, or for a file larger than ``cap``, naming it and the cap.
    """
    try:
        with open_regular(path, what) as handle:
            too_big = os.fstat(handle.fileno()).st_size > cap  # refused unread; the cap + 1 read stops one that grows
            data = b"" if too_big else handle.read(cap + 1)
    except OSError as exc:
        raise _error(exc, path, what) from None
    if too_big or len(data) > cap:
        raise SourceError(f"{what} {path} is larger than {size_text(cap)}, the most embedlab reads for it")
    return data


def read_json(path: str | Path, what: str, cap: int, **options: Any) -> Any:
    """A UTF-8 JSON file of at most ``cap`` bytes, parsed by ``json.loads`` (``options`` passed on).

    Raises
    ------
    SourceError
        As ``read_capped``, or for bytes that are not UTF-8 or not JSON, or JSON
        nested too deep to parse; the message names the file, never its bytes.
    """
    data = read_capped(path, what, cap)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"{what} {path} is not UTF-8 (byte {exc.start:,} is 0x{data[exc.start]:02x})") from None
    return parse_json(text, f"{what} {path}", **options)


def parse_json(text: str, where: str, **options: Any) -> Any:
    """``json.loads(text, **options)``, its failures as one ``SourceError`` that starts with ``where``.

    Arrays or objects nested thousands deep exhaust Python's recursion limit; that is
    said in words, as is a number too long to convert (Python's 4,300-digit limit).

    >>> parse_json("[" * 100_000 + "]" * 100_000, "config file c.json")
    Traceback (most recent call last):
    ...
    embedlab.errors.SourceError: config file c.json: its JSON nests arrays or objects too deep to read
    """
    try:
        return json.loads(text, **options)
    except RecursionError:
        raise SourceError(f"{where}: its JSON nests arrays or objects too deep to read") from None
    except json.JSONDecodeError as exc:
        raise SourceError(f"{where} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except ValueError as exc:  # an integer literal beyond Python's digit limit
        raise SourceError(f"{where} is not JSON: {brief(str(exc), 120)}") from None


def inside(folder: str | Path, name: object, what: str) -> Path:
    """``folder / name`` for a file named by another file, refused unless it resolves inside ``folder``.

    The name must be a relative path that, symlinks followed, lands inside
    ``folder`` (or, for a Hugging Face cache snapshot, in its repository's
    ``blobs/``, where the hub library links every file).

    Parameters
    ----------
    folder : str or Path
        The folder of the file that names it (the model's folder).
    name : object
        The name as the file gives it (a weight_map value).
    what : str
        Where the name comes from, for messages: ``"shard named in model.safetensors.index.json"``.

    Returns
    -------
    Path
        ``folder / name``, unresolved (messages show it as the file names it).

    Raises
    ------
    SourceError
        For a name that is not a non-empty string, is absolute or resolves outside.

    >>> inside("/models/m", "/etc/passwd", "shard")
    Traceback (most recent call last):
    ...
    embedlab.errors.SourceError: shard '/etc/passwd' is an absolute path: it must be a file inside /models/m
    """
    if not isinstance(name, str) or not name or "\x00" in name:
        raise SourceError(f"{what} {brief(name)} is not a file name: expected a file inside {folder}")
    if os.path.isabs(name) or Path(name).drive:
        raise SourceError(f"{what} {brief(name)} is an absolute path: it must be a file inside {folder}")
    root = Path(os.path.realpath(folder))
    target = Path(os.path.realpath(Path(folder) / name))
    if not any(target.is_relative_to(allowed) for allowed in (root, *_hub_blobs(root))):
        raise SourceError(f"{what} {brief(name)} resolves outside the model folder {folder} (to {target}): refused, "
                          "a model's files must lie inside its folder")
    return Path(folder) / name


def size_text(n: int) -> str:
    """Bytes in binary units, for messages.

    >>> size_text(64 * 2**20), size_text(1536)
    ('64 MiB', '1,536 bytes')
    """
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size and n % size == 0:
            return f"{n // size:,} {unit}"
    return f"{n:,} bytes"


# -- helpers -----------------------------------------------------------------

def _stat(path: str | Path, what: str) -> os.stat_result:
    try:
        return os.stat(path)
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise _error(exc, path, what) from None


def _error(exc: Exception, path: str | Path, what: str) -> SourceError:
    """One ``SourceError`` for an ``OSError`` from stat or open, in words."""
    code = getattr(exc, "errno", None)
    if code == errno.ELOOP:
        return SourceError(f"{what} {path} is a symlink loop (too many levels of symbolic links)")
    if code == errno.ENOENT:
        if os.path.islink(path):
            return SourceError(f"{what} {path} is a broken symbolic link: its target does not exist")
        return SourceError(f"no such {what}: {path}")
    reason = getattr(exc, "strerror", None) or str(exc)
    return SourceError(f"cannot read {what} {path}: {reason}")


def _kind(mode: int) -> str:
    return next((words for test, words in _NOT_REGULAR if test(mode)), "not a regular file")


def _hub_blobs(root: Path) -> tuple[Path, ...]:
    """``.../models--ORG--NAME/blobs`` for a Hugging Face cache snapshot ``.../models--ORG--NAME/snapshots/REV``."""
    repository = root.parent.parent
    if root.parent.name == "snapshots" and repository.name.startswith(("models--", "datasets--", "spaces--")):
        return (repository / "blobs",)
    return ()
