"""A checkpoint's tokenizer and vocabulary files: ``tokenizer.json`` (the ``tokenizers`` library),
``vocab.txt`` or ``vocab.json`` beside the weights.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import MissingExtraError, SourceError
from ..engine.vocabulary import Vocabulary
from .resolve import A_CHECKPOINT, NAMED, check_model_name, existing_path, file_kind, package_dir
from .word_vectors import read_words

__all__ = ["NEEDS_TOKENIZER", "load_tokenizer", "folder_vocabulary"]

NEEDS_TOKENIZER = ("tokenizing text (encode) needs --model minilm or a checkpoint folder holding tokenizer.json "
                   "(or a .safetensors file with tokenizer.json beside it)")

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
    check_model_name(model, A_CHECKPOINT)
    if model == "minilm":
        folder = path = package_dir("minilm") / "model"
    elif model in NAMED:
        raise SourceError(f"model {model!r} has no tokenizer.json: it is a bare table, not a checkpoint "
                          "(try --model minilm or a checkpoint folder)")
    else:
        path = existing_path(model, A_CHECKPOINT)
        if path.is_file() and path.suffix.lower() != ".safetensors":
            raise SourceError(f"{path} is {file_kind(path)}, not a checkpoint: {NEEDS_TOKENIZER}")
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

def folder_vocabulary(folder: Path, size: int) -> Vocabulary | None:
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
