"""Writing output files all or nothing: every file to a temporary beside it, then renamed.

Standard library only.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(files: dict[Path, str | bytes]) -> list[Path]:
    """Write files (text as UTF-8, or bytes) so that none is ever left half-written.

    Every target is checked first (a folder where a file should go, a file
    where a folder should be: an error before anything is written); every
    file is then written in full to a temporary file beside it, and only then
    are all renamed into place (``os.replace``, atomic on one file system).
    If anything fails, the temporaries are removed. Each file is atomic; a
    rename that fails after another succeeded (a full disk, say) can leave
    the files of one call from two runs, never a half-written one.

    Returns the paths written.

    Raises
    ------
    OSError
        (the same subclass, e.g. ``PermissionError``, with its ``errno``)
        as one line naming the file asked for, its folder and the reason:
        ``cannot write 'ro/embed_report.json': permission denied in folder
        'ro'``; never the name of a temporary file.
    """
    for path in files:
        _check_target(Path(path))
    for path in files:
        _make_folder(Path(path))
    staged: list[tuple[str, Path]] = []
    path = Path()
    try:
        for path, content in files.items():
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            staged.append((tmp, path))
            with os.fdopen(fd, "wb") as handle:
                handle.write(content.encode("utf-8") if isinstance(content, str) else content)
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        for tmp, path in staged:
            os.replace(tmp, path)
    except OSError as exc:
        raise _write_error(exc, f"cannot write {str(path)!r}", f"in folder {str(path.parent)!r}") from None
    finally:
        for tmp, _ in staged:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return [path for _, path in staged]


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
