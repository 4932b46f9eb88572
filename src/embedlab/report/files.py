"""Writing output files all or nothing: every file to a temporary beside it, then renamed.

Standard library only.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["write_atomic"]


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
    of another. Temporaries are always removed.

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
    for path in targets:
        _make_folder(path)
    staged: list[tuple[str, Path]] = []  # (temporary, target)
    kept: list[tuple[str | None, Path]] = []  # (the old file kept aside or None, target), renamed so far
    path = Path()
    try:
        for path, content in zip(targets, files.values()):
            staged.append((_stage(path, content), path))
        for tmp, path in staged:
            kept.append((_keep_aside(path, tmp), path))
            os.replace(tmp, path)
    except BaseException as exc:
        _put_back(kept)
        if isinstance(exc, OSError):
            raise _write_error(exc, f"cannot write {str(path)!r}", f"in folder {str(path.parent)!r}") from None
        raise
    finally:
        for name in [tmp for tmp, _ in staged] + [old for old, _ in kept if old]:
            if os.path.exists(name):
                os.unlink(name)
    return targets


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


def _make_folder(path: Path) -> None:
    """Create the folder a file goes into; an error names the file and the folder that could not be made."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        folder = exc.filename if exc.filename is not None else path.parent
        raise _write_error(exc, f"cannot write {str(path)!r}", f"creating folder {str(folder)!r}") from None


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
