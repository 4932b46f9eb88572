"""Writing output files all or nothing: every file to a temporary beside it, then renamed.

``check_writable`` says before any work whether ``write_atomic`` could write
the files (a folder where a file goes, a file where a folder should be, a
folder that may not be written in), so a command refuses an output path
before it computes what would go there. Only the folders a file needs are
created (``a/../b/x.txt``, ``a`` missing: ``b`` alone), and a write that fails
removes the folders it created.

Standard library only.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable

__all__ = ["write_atomic", "check_writable", "write_error"]


def write_atomic(files: dict[Path, str | bytes]) -> list[Path]:
    """Write several files (text as UTF-8, or bytes) all or nothing.

    Every target is checked first (a folder where a file should go, a file
    where a folder should be: an error before anything is written); every
    file is then written in full to a temporary file beside it; only then is
    each renamed into place (``os.replace``, atomic on one file system), the
    file it replaces kept aside as a hard link (a copy where links are not
    possible). If anything fails or is interrupted (Ctrl-C included) before
    the last rename, the files already renamed are put back as they were
    (restored, or removed where there was none), so the folder is as it was
    before the call: a report never holds a JSON of one run beside a Markdown
    of another. Temporaries are always removed, and so are the folders the
    call created (only those a file needs: ``a/../b/x.txt`` with no ``a``
    makes ``b`` alone).

    Returns the paths written, in the order given.

    Raises
    ------
    OSError
        (the same subclass, e.g. ``PermissionError``, with its ``errno``)
        as one line naming the file asked for, its folder and the reason:
        ``cannot write 'ro/embed_report.json': permission denied in folder
        'ro'``; never the name of a temporary file.
    """
    targets = [Path(path) for path in files]
    for path in targets:
        _check_target(path)
    created: list[Path] = []  # folders made for the files, outermost first: removed again on failure
    try:
        # Where each file really goes: the folder as the system resolves it (mkstemp would read "link/.." lexically).
        places = [Path(os.path.realpath(_make_folders(path, created))) / path.name for path in targets]
    except BaseException:
        _remove_folders(created)
        raise
    staged: list[tuple[str, Path]] = []  # (temporary, target)
    kept: list[tuple[str | None, Path]] = []  # (the old file kept aside or None, target), renamed so far
    path = Path()
    done = False
    try:
        for path, place, content in zip(targets, places, files.values()):
            staged.append((_stage(place, content), place))
        for (tmp, place), path in zip(staged, targets):
            kept.append((_keep_aside(place, tmp), place))
            os.replace(tmp, place)
        done = True
    except BaseException as exc:
        _put_back(kept)
        if isinstance(exc, OSError):
            raise write_error(exc, path) from None
        raise
    finally:
        for name in [tmp for tmp, _ in staged] + [old for old, _ in kept if old]:
            if os.path.exists(name):
                os.unlink(name)
        if not done:
            _remove_folders(created)
    return targets


def check_writable(paths: Iterable[str | os.PathLike[str]]) -> None:
    """Refuse, before any work, files that ``write_atomic`` could not write.

    Each path must name a file, not a folder; no folder on its way may be
    a file; and the deepest folder of it that exists must let this process
    create files (or folders) in it: tried, with an empty temporary file
    removed at once, since permissions alone do not say (root, read-only
    mounts, /proc). Nothing else is created or changed.

    Raises
    ------
    IsADirectoryError, NotADirectoryError, PermissionError
        (``OSError``) as one line naming the path as given, and the folder at
        fault: ``cannot write 'out/x.png': it is a folder, expected a file name``.

    >>> check_writable(["."])
    Traceback (most recent call last):
    ...
    IsADirectoryError: cannot write '.': it is a folder, expected a file name
    """
    for path in map(Path, paths):
        _check_target(path)
        folder, missing = _folders(path.parent)
        folder = missing[0].parent if missing else folder  # the deepest that exists: the first made goes in it
        try:
            fd, probe = tempfile.mkstemp(dir=os.path.realpath(folder), prefix=f".{path.name}.", suffix=".tmp")
        except OSError as exc:
            raise write_error(exc, path, folder) from None
        os.close(fd)
        os.unlink(probe)


def write_error(exc: OSError, path: Path, folder: Path | None = None) -> OSError:
    """The error of a file that could not be written, as one line naming it as given, never a temporary.

    ``cannot write 'ro/x.json': permission denied in folder 'ro'``: ``exc``'s
    class and errno kept; ``folder`` is the folder named (default the file's).
    """
    where = path.parent if folder is None else folder
    return _write_error(exc, f"cannot write {str(path)!r}", f"in folder {str(where)!r}")


def _stage(path: Path, content: str | bytes) -> str:
    """Write ``content`` in full to a new temporary file beside ``path``; return its name."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content.encode("utf-8") if isinstance(content, str) else content)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def _keep_aside(path: Path, tmp: str) -> str | None:
    """A second name for the file at ``path`` (None where there is none), to restore it from.

    The name is the staged temporary's (unique in the folder) with ``.old`` added.
    """
    if not path.exists():
        return None
    old = f"{tmp}.old"
    try:
        os.link(path, old)
    except OSError:  # a file system without hard links: keep a copy
        shutil.copy2(path, old)
    return old


def _put_back(kept: list[tuple[str | None, Path]]) -> None:
    """Undo the renames done so far: restore each replaced file, remove each new one."""
    for old, path in reversed(kept):
        try:
            if old is None:
                if path.exists():
                    os.unlink(path)
            else:
                os.replace(old, path)
        except OSError:
            pass  # the original error is the one to report


def _make_folders(path: Path, created: list[Path]) -> Path:
    """Create the folders ``path`` needs (``_folders``), each added to ``created``; return the folder it goes in.

    An error names the file and the folder that could not be made.
    """
    folder, missing = _folders(path.parent)
    for folder in missing:
        try:
            folder.mkdir()
        except OSError as exc:
            raise _write_error(exc, f"cannot write {str(path)!r}", f"creating folder {str(folder)!r}") from None
        created.append(folder)
    return folder


def _folders(folder: Path) -> tuple[Path, list[Path]]:
    """The folder a file of ``folder`` is written in, and the folders to create first, outermost first.

    The part of ``folder`` that exists is the system's to resolve (symlinks
    and ``..`` included); the part below it that does not exist is read
    lexically, so ``a/../b`` with no ``a`` makes ``b`` alone, not an empty ``a``.

    >>> _folders(Path("no-such-folder/../neither"))
    (PosixPath('neither'), [PosixPath('neither')])
    """
    parts = folder.parts
    depth = len(parts)
    while depth and not os.path.isdir(os.path.join(*parts[:depth])):
        depth -= 1
    place = Path(*parts[:depth])  # Path() is the current folder
    missing: list[Path] = []
    for part in Path(os.path.normpath(os.path.join(".", *parts[depth:]))).parts:  # leading ".." climb what exists
        place = place / part
        if missing or not place.is_dir():
            missing.append(place)
    return place, missing


def _remove_folders(created: list[Path]) -> None:
    """Remove the folders a failed write created, innermost first (each is empty again by then)."""
    for folder in reversed(created):
        try:
            folder.rmdir()
        except OSError:
            pass  # the original error is the one to report


def _write_error(exc: OSError, what: str, where: str) -> OSError:
    """``exc`` again as one plain line, ``{what}: {reason} {where}``, keeping its class and errno.

    The builtin's own text names the temporary file (``[Errno 13] ...
    '.embed_report.json.x1y2.tmp'``), which the user never asked for.
    """
    reason = exc.strerror or str(exc) or type(exc).__name__
    cls = type(exc) if type(exc).__module__ == "builtins" else OSError
    error = cls(f"{what}: {reason[:1].lower() + reason[1:]} {where}")
    error.errno = exc.errno
    return error


def _check_target(path: Path) -> None:
    if not path.name or path.is_dir():
        raise IsADirectoryError(f"cannot write {str(path)!r}: it is a folder, expected a file name")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise NotADirectoryError(f"cannot write {str(path)!r}: {str(parent)!r} is a file, not a folder")
            break


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
