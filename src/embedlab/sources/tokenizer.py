"""A checkpoint's tokenizer and vocabulary files: ``tokenizer.json`` (the ``tokenizers`` library),
``vocab.txt`` or ``vocab.json`` beside the weights.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import MissingExtraError, SourceError
from ..engine.vocabulary import Vocabulary
from . import files
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
            kind = file_kind(path)
            why = " (word vectors have no tokenizer)" if "word2vec" in kind or "GloVe" in kind else \
                " (a bare table has no tokenizer)" if kind.startswith("a .npy") else ""
            raise SourceError(f"{path} is {kind}{why}, not a checkpoint: {NEEDS_TOKENIZER}")
        folder = path if path.is_dir() else path.parent
    file = folder / "tokenizer.json"
    if not files.present(file, "tokenizer"):
        where = f"{folder} has" if folder == path else f"{path} is a single .safetensors file, and its folder {folder} has"
        raise SourceError(f"{where} no tokenizer.json: {NEEDS_TOKENIZER}")
    return _read_tokenizer(file)

def folder_vocabulary(folder: Path, size: int) -> Vocabulary | None:
    """Token strings of a checkpoint folder, read as the checkpoint's own tokenizer reads them.

    From ``tokenizer.json`` (the ``tokenizers`` library: each id's string is
    ``id_to_token``, and a repeated string means the id ``get_vocab`` gives
    it), else ``vocab.txt`` (lines as ``read_words``; a repeated line means
    its last copy, as transformers' ``BertTokenizer``/``load_vocab`` keeps
    it), else ``vocab.json`` (a repeated key means its last entry, as
    ``json.load`` in ``GPT2Tokenizer``). Every id keeps its own string, so
    each copy of a repeated token is shown and reached by ``id:N``; ids past
    the tokenizer (padding rows of the table) have none. ``None`` when the
    folder holds none of the three files.

    Parameters
    ----------
    folder : Path
        The checkpoint folder.
    size : int
        V, the rows of the token table.

    Raises
    ------
    SourceError
        For a tokenizer with ids ``>= V`` (it and the weights do not belong
        together), or a file that cannot be read.
    MissingExtraError
        For ``tokenizer.json`` without the ``tokenizers`` library.
    """
    if files.present(folder / "tokenizer.json", "tokenizer"):
        tokens, owners, rule = _tokenizer_json(folder / "tokenizer.json", size)
    elif files.present(folder / "vocab.txt", "vocabulary"):
        tokens = read_words(folder / "vocab.txt")
        owners = {t: i for i, t in enumerate(tokens)}  # a later line overwrites: load_vocab's OrderedDict
        rule = "the last copy, as transformers' BertTokenizer reads vocab.txt"
    elif files.present(folder / "vocab.json", "vocabulary"):
        pairs = _json_pairs(folder / "vocab.json")
        tokens = [None] * (max((i for _, i in pairs), default=-1) + 1)
        for token, i in pairs:
            tokens[i] = token if tokens[i] is None else tokens[i]
        owners = dict(pairs)  # a later key overwrites, as json.load does
        rule = "the last entry, as json.load reads vocab.json"
    else:
        return None
    if len(tokens) > size:
        raise SourceError(f"the tokenizer in {folder} has token ids up to {len(tokens) - 1}, but the table has only "
                          f"V={size} rows: the tokenizer and the weights do not belong together")
    tokens = [*tokens, *[None] * (size - len(tokens))]  # padding rows past the tokenizer have no string
    return Vocabulary(tokens, owners={t: i for t, i in owners.items() if tokens[i] == t}, rule=rule)


def _tokenizer_json(path: Path, size: int) -> tuple[list[str | None], dict[str, int], str]:
    """(string of each id, the id each string means, the rule) as the ``tokenizers`` library reads ``path``."""
    tokenizer = _read_tokenizer(path)
    owners = tokenizer.get_vocab(with_added_tokens=True)
    top = max(max(owners.values(), default=-1), size - 1)
    tokens = [tokenizer.id_to_token(i) for i in range(top + 1)]
    while len(tokens) > size and tokens[-1] is None:
        tokens.pop()
    return tokens, owners, "the id the tokenizers library's get_vocab gives it"


def _read_tokenizer(path: Path) -> Any:
    """A ``tokenizer.json`` through the ``tokenizers`` library, its bytes read by ``files`` (a regular file of
    at most ``files.TOKENIZER_CAP`` bytes) and handed over as text: the library never opens the path itself."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise MissingExtraError.for_module("tokenizers", "tokenizer.json files", ("models",)) from None
    data = files.read_capped(path, "tokenizer", files.TOKENIZER_CAP)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"cannot read the tokenizer {path}: not UTF-8 (byte {exc.start:,} is "
                          f"0x{data[exc.start]:02x})") from None
    try:
        return Tokenizer.from_str(text)
    except Exception as exc:  # tokenizers raises a bare Exception on bad JSON; serde_json caps the nesting at 128
        reason = " ".join(str(exc).split())  # one line, cut: serde's message may quote a name from the file
        cut = reason if len(reason) <= 200 else reason[:200] + "…"
        raise SourceError(f"cannot read the tokenizer {path}: {cut}") from None


def _json_pairs(path: Path) -> list[tuple[str, int]]:
    """The (token, id) entries of ``vocab.json`` in file order, repeated keys included."""
    pairs = files.read_json(path, "vocabulary", files.CONFIG_CAP, object_pairs_hook=list)
    if not isinstance(pairs, list) or not all(isinstance(p, tuple) and isinstance(p[1], int)
                                              and not isinstance(p[1], bool) and p[1] >= 0 for p in pairs):
        raise SourceError(f"{path} is not a vocabulary: expected a JSON object of token -> id (ids >= 0)")
    return pairs
