"""A model's token table and output head as stored, for the audit: rows with NaN or infinity kept.

``load`` hands out an ``EmbeddingTable``, which refuses a table holding NaN or
infinity: every ranking and cosine that touched such a row would be wrong. The
audit exists to find such rows (and zero rows, copies, rows past the
tokenizer), so ``read_stored`` reads the same tensors the loaders read, found
by the same rules (``checkpoint.find_roles``, ``checkpoint.decide_tying``,
``gguf.decide_tying``), and hands them over as read-only arrays without that
check. A source other than a checkpoint (the seed table, word vectors, a
``.npy``) is read by ``load`` itself: its own readers refuse non-finite values
with one line naming the row.

Arrays are as the readers give them: F32, F16 and F64 as stored, BF16 widened
to float32 (exactly, a block at a time), GGUF dequantised to float32.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..engine.provenance import Provenance
from ..errors import NoTokenizerError, SourceError, TyingConflictError, UnsafeFormatError, brief
from . import checkpoint, gguf, hf, safetensors
from .loaders import load
from .tokenizer import read_inventory
from .resolve import ANY_SOURCE, GGUF_SUFFIXES, NAMED, PICKLE_SUFFIXES, check_model_name, existing_path, package_dir, \
    package_version

__all__ = ["StoredTables", "read_stored", "read_tokenizer", "from_table", "checkpoint_source"]


@dataclass(frozen=True)
class StoredTables:
    """The token table and the output head of one model, as stored.

    Attributes
    ----------
    table : np.ndarray, shape (V, D), floating, read-only
        The token table, non-finite values kept.
    head : np.ndarray, shape (V_head, D), or None
        The output head where it is a table of its own (untied); None when the
        head is the token table (tied) or the source has none.
    tied : bool or None
        Whether the output head is the token table; None where the source does
        not say (word vectors, a checkpoint without head or config).
    provenance, head_provenance : Provenance
        Where each came from (``head_provenance`` None without a separate head).
    vocab_size : int or None
        The vocabulary size the model's config declares (``config.json``'s
        ``vocab_size``, in ``text_config`` first; a GGUF file's
        ``<arch>.vocab_size``); None where it declares none.
    vocab_size_key : str or None
        Where ``vocab_size`` was read (``"config.json vocab_size"``).
    words : tuple of str or None, or None
        The token of each row for a table that brings its own (word vectors,
        a ``.npy`` with a word list); None for a checkpoint, whose tokens are its
        tokenizer's.
    notes : tuple of str
        What the reader met and the audit should say (a tying conflict).
    """

    table: np.ndarray
    head: np.ndarray | None
    tied: bool | None
    provenance: Provenance
    head_provenance: Provenance | None = None
    vocab_size: int | None = None
    vocab_size_key: str | None = None
    words: tuple[str | None, ...] | None = None
    notes: tuple[str, ...] = ()


def read_stored(model: str | Path, *, tensor: str | None = None, words: str | Path | None = None) -> StoredTables:
    """The token table and the output head of ``model`` as stored.

    Parameters
    ----------
    model : str or Path
        A name (``seed``, ``minilm``, ``glove``) or a path, as ``load`` takes it.
    tensor : str, optional
        For a checkpoint: the token table's name.
    words : str or Path, optional
        For a ``.npy`` table: its word list.

    Returns
    -------
    StoredTables

    Raises
    ------
    SourceError
        As ``load``: a missing, malformed or truncated file, no token table, a
        tensor that is not a floating table; for a checkpoint whose config says
        untied but which has no head, nothing is raised: the note says so.
    UnsafeFormatError, MissingExtraError
        As ``load``.
    """
    check_model_name(model, ANY_SOURCE)
    path = checkpoint_source(model)
    if path is None:
        return from_table(load(model, tensor=tensor, words=words))
    if words is not None:
        raise SourceError(f"words= does not apply to {model!r}: only a .npy table takes a word list",
                          parameter="words", value=str(words), expected="a .npy table as the model")
    if path.suffix.lower() in GGUF_SUFFIXES:
        return _from_gguf(path, tensor)
    named = isinstance(model, str) and model in NAMED
    return _from_safetensors(path, tensor, source=str(model) if named else "safetensors",
                             package=package_version(str(model)) if named else None)


def checkpoint_source(model: str | Path) -> Path | None:
    """The checkpoint folder or file ``model`` stands for (minilm: its package's ``model/`` folder), or
    None for a source that is no checkpoint (the seed table, GloVe, word vectors, a ``.npy``).

    Raises ``UnsafeFormatError`` for a pickle file or a folder of pickle weights only, and
    ``SourceError`` for a path that does not exist.
    """
    if isinstance(model, str) and model in NAMED:
        return package_dir(model) / "model" if model == "minilm" else None
    path = existing_path(model, ANY_SOURCE)
    suffix = path.suffix.lower()
    if suffix in PICKLE_SUFFIXES and path.is_file():
        return None  # load() refuses it, or reads word2vec binary vectors named .bin
    if path.is_dir():
        if not any(path.glob("*.safetensors")) and any(path.glob("*.bin")):
            raise UnsafeFormatError(f"refusing to load {path}: it holds only pickle weights (*.bin), which can run "
                                    "code when loaded; convert them to .safetensors first")
        return path
    return path if suffix in (".safetensors", *GGUF_SUFFIXES) else None


# -- each kind of source -------------------------------------------------------------

def from_table(table: Any) -> StoredTables:
    """An ``EmbeddingTable`` already loaded (the seed table, word vectors, a .npy; its rows are finite), as the
    audit reads a model: no head of its own."""
    vocabulary = table.vocabulary
    return StoredTables(table=table.W_E, head=None, tied=table.provenance.tied, provenance=table.provenance,
                        words=None if vocabulary is None else vocabulary.index_to_token)


def _from_safetensors(path: Path, tensor: str | None, *, source: str, package: str | None) -> StoredTables:
    """A safetensors folder or file: the roles and the tie as ``loaders.load_checkpoint`` finds them."""
    _whole_checkpoint(path)
    infos = safetensors.tensor_infos(path)
    config = checkpoint.read_config(path)
    roles = checkpoint.find_roles(infos, tensor)
    family = None
    if config is not None and roles.head is None and _unnamed_twin(infos, roles.token):
        # A table of the token table's shape under a name HEAD_NAMES lacks: ask transformers what the family
        # calls its output embeddings (it builds the model on the meta device: seconds, so only then).
        family = hf.output_head(config, str(path))
        roles = checkpoint.find_roles(infos, tensor, head_names=checkpoint.head_names(family))
    if roles.token is None:
        raise SourceError(f"tensor {tensor!r} is the output head: the audit reads the token table beside it, and "
                          "this checkpoint holds none; name the token table with tensor= (--tensor)",
                          parameter="tensor", value=tensor, expected="the token table's tensor (or leave it out)")
    notes: list[str] = []
    try:
        verdict = checkpoint.decide_tying(infos, roles, config)
        tied, evidence = verdict.tied, verdict.evidence + (f"; CONFLICT: {verdict.conflict}" if verdict.conflict else "")
        separate = roles.head is not None and not verdict.stored_twice
    except TyingConflictError as exc:  # config says untied, no head in the file: the model is broken, say so
        tied, evidence, separate = None, str(exc), False
        notes.append(str(exc))
    token = infos[roles.token]
    prov = Provenance(source, path=str(path), tensor=roles.token, dtype=token.dtype, tied=tied,
                      tie_evidence=evidence, package=package)
    head = head_prov = None
    if separate:
        head = _floating(infos[roles.head])
        head_prov = replace(prov, tensor=roles.head, dtype=infos[roles.head].dtype, part="head",
                            note="; ".join(family.notes) if family is not None and family.notes else None)
    size, key = _config_vocab_size(config)
    return StoredTables(table=_floating(token), head=head, tied=tied, provenance=prov, head_provenance=head_prov,
                        vocab_size=size, vocab_size_key=key, notes=tuple(notes))


def _from_gguf(path: Path, tensor: str | None) -> StoredTables:
    """A llama.cpp file: ``token_embd.weight`` (or ``tensor``), and ``output.weight`` where it is its own."""
    file = gguf.GGUFFile(path)
    name = tensor or gguf.TOKEN
    if name == gguf.HEAD:
        raise SourceError(f"tensor {name!r} is the output head: the audit reads the token table beside it "
                          f"({gguf.TOKEN}); leave the tensor out", parameter="tensor", value=name,
                          expected=f"the token table's tensor, {gguf.TOKEN} (or leave it out)")
    table = file.read(name)  # (V, D) float32
    verdict = gguf.decide_tying(file, name)
    prov = Provenance("gguf", path=str(file.path), tensor=name, dtype=file.tensors[name].type, tied=verdict.tied,
                      tie_evidence=verdict.evidence)
    head = head_prov = None
    if verdict.tied is False:
        head = file.read(gguf.HEAD)  # (V_head, D) float32
        head_prov = replace(prov, tensor=gguf.HEAD, dtype=file.tensors[gguf.HEAD].type, part="head")
    key = f"{file.architecture}.vocab_size" if file.architecture else None
    size = file.value(key) if key else None
    size = int(size) if isinstance(size, (int, np.integer)) and not isinstance(size, bool) else None
    return StoredTables(table=table, head=head, tied=verdict.tied, provenance=prov, head_provenance=head_prov,
                        vocab_size=size, vocab_size_key=None if size is None else f"GGUF {key}")


# -- helpers ---------------------------------------------------------------------------

def _whole_checkpoint(path: Path) -> None:
    """The audit reads the token table and the output head together: a file that is one shard of a sharded
    checkpoint, whose other shards hold one of them, is refused naming that shard and the folder (read alone,
    a shard holding only ``lm_head.weight`` would be audited as the token table)."""
    elsewhere = safetensors.other_shards(path)
    for role, names in (("token table", checkpoint.TOKEN_NAMES), ("output head", checkpoint.HEAD_NAMES)):
        found = checkpoint.named_in(elsewhere, names)
        if found is not None:
            raise SourceError(f"{path.name} is one shard of a sharded checkpoint: its {role} ({found}) is in another "
                              f"shard, {elsewhere[found]}; the audit reads the token table and the output head "
                              f"together: pass the folder {path.parent}")


def _unnamed_twin(infos: dict[str, safetensors.TensorInfo], token: str | None) -> bool:
    """Whether another 2-D tensor has the token table's shape: an output head under a family's own name."""
    if token is None:
        return False
    shape = infos[token].shape
    return any(name != token and info.shape == shape for name, info in infos.items())


def _floating(info: safetensors.TensorInfo) -> np.ndarray:
    """One tensor as a read-only floating array, non-finite values kept."""
    array = np.asarray(safetensors.read_tensor(info))
    if not np.issubdtype(array.dtype, np.floating) or array.ndim != 2:
        raise SourceError(f"tensor {info.name!r} has dtype {info.dtype} and shape {info.shape}, expected a floating "
                          "(V, D) table")
    array.flags.writeable = False  # a fresh array of ours: handed over read-only
    return array


def _config_vocab_size(config: dict[str, Any] | None) -> tuple[int | None, str | None]:
    """``vocab_size`` of a config (in a nested ``text_config`` first, where a family keeps its language model)."""
    if config is None:
        return None, None
    for holder, prefix in ((config.get("text_config"), "text_config."), (config, "")):
        if isinstance(holder, dict) and "vocab_size" in holder:
            value = holder["vocab_size"]
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                return value, f"config.json {prefix}vocab_size"
            # No parameter field: the value is the file's, not one the user typed (--vocab-size is another thing).
            raise SourceError(f"config.json {prefix}vocab_size must be a whole number, got {brief(value)}")
    return None, None


def read_tokenizer(model: str | Path) -> tuple[Any, str | None]:
    """The tokenizer beside the tables ``read_stored`` reads, as a ``tokenizer.TokenizerInventory``, or None
    and why there is none (a source that is no checkpoint, a folder with no tokenizer file, a GGUF file
    without a token list): the audit then runs the parts that need none and says which it skipped.

    Raises
    ------
    SourceError
        For a tokenizer file that is there but is refused (not a regular file, past its cap, nested too deep,
        not UTF-8, one the library cannot load): an audit that went on without it would report the tokenizer's
        parts as skipped and exit 0, as if the model had none.
    MissingExtraError
        When the library that reads the tokenizer present is not installed.
    """
    path = checkpoint_source(model)
    if path is None:
        name = Path(model).name if not (isinstance(model, str) and model in NAMED) else model
        return None, f"{name} is a table without a model (word vectors, a bare table): it has no tokenizer"
    try:
        return read_inventory(model), None
    except NoTokenizerError as exc:  # said in the result, which reports never give a local path
        folder = path if path.is_dir() else path.parent
        return None, str(exc).replace(str(folder), folder.name or str(folder))
