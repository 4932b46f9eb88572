"""A checkpoint's tokenizer and vocabulary files: ``tokenizer.json`` (the ``tokenizers`` library),
``vocab.txt`` or ``vocab.json`` beside the weights; and, for the audit, a tokenizer's inventory
(``read_inventory``): every id's token, the added, special and unused ones, and the object
that decodes and encodes them, read by the field's libraries, never by hand.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import Tokenizer

from ..errors import MissingExtraError, NoTokenizerError, SourceError
from ..engine.vocabulary import Vocabulary
from . import files
from .gguf import GGUFFile, TOKEN_TYPES_KEY, TOKENS_KEY
from .hf import quiet
from .resolve import A_CHECKPOINT, GGUF_SUFFIXES, NAMED, check_model_name, existing_path, file_kind, package_dir
from .word_vectors import read_words

__all__ = ["NEEDS_TOKENIZER", "load_tokenizer", "folder_vocabulary", "TokenizerSpelling", "TokenizerInventory",
           "read_inventory", "TOKENIZER_FILES"]

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
        When the data package is not installed.
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
    folder holds none of the three files. A vocabulary read from
    ``tokenizer.json`` spells typed tokens as that tokenizer does
    (``TokenizerSpelling``); one from ``vocab.txt`` or ``vocab.json`` alone
    finds them as typed only.

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
    """
    spell = None
    if files.present(folder / "tokenizer.json", "tokenizer"):
        tokens, owners, rule, spell = _tokenizer_json(folder / "tokenizer.json", size)
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
    return Vocabulary(tokens, owners={t: i for t, i in owners.items() if tokens[i] == t}, rule=rule, spell=spell)


class TokenizerSpelling:
    """How a ``tokenizers.Tokenizer`` spells a typed token: the forms ``Vocabulary.respell`` tries, in order.

    First the tokenizer's normalizer's output (``normalize_str``: ALBERT's
    NFKD decomposes ``표`` into ``ᄑ`` + ``ᅭ``; BERT's lowercases), then, where
    its pre-tokenizer makes one piece of that, the piece (``pre_tokenize_str``:
    GPT-2's byte-level letters ``Ġking``, a sentencepiece word start ``▁king``).
    Text the pre-tokenizer splits into several pieces is several tokens, not
    one, and gives no second form. Nothing is guessed beyond what the
    tokenizer itself writes; a form equal to the text is left out.

    Parameters
    ----------
    tokenizer : tokenizers.Tokenizer
        Only its normalizer and pre-tokenizer are kept (either may be None).
    """

    def __init__(self, tokenizer: Any) -> None:
        self.normalizer = tokenizer.normalizer
        self.pre_tokenizer = tokenizer.pre_tokenizer

    def __call__(self, text: str) -> list[tuple[str, str]]:
        normal = text if self.normalizer is None else self.normalizer.normalize_str(text)
        forms = [(normal, "normalizer")] if normal != text else []
        pieces = [] if self.pre_tokenizer is None else self.pre_tokenizer.pre_tokenize_str(normal)
        if len(pieces) == 1 and pieces[0][0] not in (text, normal):
            forms.append((pieces[0][0], "pre_tokenizer"))
        return forms


def _tokenizer_json(path: Path, size: int) -> tuple[list[str | None], dict[str, int], str, TokenizerSpelling]:
    """(string of each id, the id each string means, the rule, its spelling) as the ``tokenizers`` library
    reads ``path``."""
    tokenizer = _read_tokenizer(path)
    spell = TokenizerSpelling(tokenizer)
    owners = tokenizer.get_vocab(with_added_tokens=True)
    by_id = {i: t for t, i in owners.items()}
    if len(by_id) == len(owners) and max(by_id, default=-1) == len(owners) - 1:
        # Ids 0..n-1, each held by one string: that string is id_to_token's. get_vocab merges the model's map
        # with the added tokens' (each id -> its content, id_to_token's answer where the id is added), so an id
        # whose id_to_token string means another id, or two strings for one id, leaves an id out or repeats
        # one; neither happens here. One dict, not 128,256 calls into the library (benchmarks/README.md).
        # No string is repeated, so each means its only id and no owners are needed (nor checked, row by row).
        return [by_id[i] for i in range(len(by_id))], {}, "the id the tokenizers library's get_vocab gives it", spell
    top = max(max(owners.values(), default=-1), size - 1)
    tokens = [tokenizer.id_to_token(i) for i in range(top + 1)]
    while len(tokens) > size and tokens[-1] is None:
        tokens.pop()
    return tokens, owners, "the id the tokenizers library's get_vocab gives it", spell


def _read_tokenizer(path: Path) -> Any:
    """A ``tokenizer.json`` through the ``tokenizers`` library, its bytes read by ``files`` (a regular file of
    at most ``files.TOKENIZER_CAP`` bytes) and handed over as text: the library never opens the path itself."""
    data = files.read_capped(path, "tokenizer", files.TOKENIZER_CAP)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"cannot read the tokenizer {path}: not UTF-8 (byte {exc.start:,} is "
                          f"0x{data[exc.start]:02x})") from None
    try:
        return Tokenizer.from_str(text)
    except Exception as exc:  # tokenizers raises a bare Exception on bad JSON; serde_json caps the nesting at 128
        # one line, cut: serde's message may quote a name from the file
        raise SourceError(f"cannot read the tokenizer {path}: {_one_line(exc)}") from None


def _json_pairs(path: Path) -> list[tuple[str, int]]:
    """The (token, id) entries of ``vocab.json`` in file order, repeated keys included."""
    pairs = files.read_json(path, "vocabulary", files.CONFIG_CAP, object_pairs_hook=list)
    if not isinstance(pairs, list) or not all(isinstance(p, tuple) and isinstance(p[1], int)
                                              and not isinstance(p[1], bool) and p[1] >= 0 for p in pairs):
        raise SourceError(f"{path} is not a vocabulary: expected a JSON object of token -> id (ids >= 0)")
    return pairs


# -- the audit's inventory of a tokenizer ----------------------------------------------

# Files from which transformers builds a tokenizer when a folder has no tokenizer.json.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "tokenizer.model",
                   "spiece.model", "sentencepiece.bpe.model")
# Files AutoTokenizer also opens beside them, when they are there.
_COMPANION_FILES = ("special_tokens_map.json", "added_tokens.json", "merges.txt")


@dataclass(frozen=True)
class TokenizerInventory:
    """What a tokenizer holds, id by id, and the object that decodes and encodes its tokens.

    Attributes
    ----------
    tokens : tuple of (str or None), length = the largest id + 1
        Each id's token as the vocabulary stores it (``id_to_token``: ``'Ġthe'``,
        ``'##ing'``); None for an id that has no token (a hole).
    length : int
        ``len(tokenizer)`` as transformers counts it: the base vocabulary plus
        the added tokens (``get_vocab_size(with_added_tokens=True)``), the
        number ``resize_token_embeddings(len(tokenizer))`` takes. For a GGUF
        file, the tokens listed.
    base_size : int or None
        The base vocabulary, without added tokens; None where the source does not say.
    added : frozenset of int
        Ids in the tokenizer's list of added tokens (GGUF: user-defined tokens).
    special : frozenset of int
        Ids the tokenizer treats as special: added tokens marked special, and
        (read through transformers) its named special tokens, ``all_special_ids``
        (GGUF: control tokens).
    unused : frozenset of int
        Ids the file itself marks unused (GGUF token type 5); empty otherwise.
    types : tuple of str or None
        GGUF token type of each id (``"normal"``, ``"control"``, ...); None elsewhere.
    reader : str
        What it was read from, and by what (``"tokenizer.json, read by tokenizers"``).
    runner : tokenizers.Tokenizer or None
        The object whose ``decode_batch``/``encode_batch`` the reachability test
        runs, its saved padding and truncation switched off; None where there is
        none (a GGUF file's token list).
    notes : tuple of str
        What could not be read (a GGUF file without token types).
    """

    tokens: tuple[str | None, ...]
    length: int
    base_size: int | None
    added: frozenset[int]
    special: frozenset[int]
    unused: frozenset[int]
    types: tuple[str, ...] | None
    reader: str
    runner: Any
    notes: tuple[str, ...] = ()


def read_inventory(model: str | Path) -> TokenizerInventory:
    """The tokenizer of a checkpoint folder (or beside a ``.safetensors`` file), ``minilm``, or a GGUF file.

    A folder's ``tokenizer.json`` is read as saved by the ``tokenizers``
    library (as ``load_tokenizer`` and ``embedlab encode`` read it); a folder
    without one, by transformers' ``AutoTokenizer`` from the files it reads
    (``vocab.txt``, ``tokenizer.model``, ...; ``local_files_only``, never
    remote code). A GGUF file's ``tokenizer.ggml.tokens`` and
    ``tokenizer.ggml.token_type`` are read with the gguf library; there is no
    tokenizer to run then (``runner`` None).

    Raises
    ------
    NoTokenizerError
        (a ``SourceError``) for a source without a tokenizer: named tables, word
        vectors, a folder with none of ``TOKENIZER_FILES``, a GGUF file without a
        token list.
    SourceError
        For a tokenizer file that is there but is refused: not a regular file
        (a FIFO, a folder), past its cap, JSON nested too deep, not UTF-8, or
        one the library does not load (the message names the file and what the
        library said).
    MissingExtraError
        For a folder without tokenizer.json when transformers (the ``hf`` extra) is not installed.
    """
    check_model_name(model, A_CHECKPOINT)
    if model == "minilm":
        return _folder_inventory(package_dir("minilm") / "model")
    if isinstance(model, str) and model in NAMED:
        raise NoTokenizerError(f"model {model!r} has no tokenizer: it is a bare table, not a checkpoint")
    path = existing_path(model, A_CHECKPOINT)
    if path.is_file() and path.suffix.lower() in GGUF_SUFFIXES:
        return _gguf_inventory(path)
    if path.is_file() and path.suffix.lower() != ".safetensors":
        raise NoTokenizerError(f"{path} is {file_kind(path)}: a bare table has no tokenizer")
    return _folder_inventory(path if path.is_dir() else path.parent)


def _folder_inventory(folder: Path) -> TokenizerInventory:
    file = folder / "tokenizer.json"
    if files.present(file, "tokenizer"):
        return _runner_inventory(_read_tokenizer(file), frozenset(), f"{file.name}, read by tokenizers")
    present = [name for name in TOKENIZER_FILES if files.present(folder / name, "tokenizer")]
    if not present:
        raise NoTokenizerError(f"{folder} has no tokenizer: none of {', '.join(TOKENIZER_FILES)}")
    for name in (*TOKENIZER_FILES, *_COMPANION_FILES):  # transformers opens them itself: files' rules first
        if files.present(folder / name, "tokenizer") and (folder / name).stat().st_size > files.TOKENIZER_CAP:
            raise SourceError(f"tokenizer {folder / name} is larger than {files.size_text(files.TOKENIZER_CAP)}, "
                              "the most embedlab reads for it")
    try:
        import transformers
    except ImportError:
        raise MissingExtraError.for_module("transformers", f"tokenizers without tokenizer.json ({present[0]})",
                                           ("hf",)) from None
    try:
        with quiet():
            tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True,
                                                                   trust_remote_code=False)
    except Exception as exc:  # whatever the tokenizer class refuses
        raise SourceError(f"cannot read the tokenizer in {folder} ({', '.join(present)}): {_one_line(exc)}") from None
    runner = getattr(tokenizer, "backend_tokenizer", None)
    if runner is None:
        raise SourceError(f"the tokenizer in {folder} ({type(tokenizer).__name__}) has no tokenizers backend to "
                          "decode and encode with")
    named = frozenset(int(i) for i in tokenizer.all_special_ids if i is not None)
    return _runner_inventory(runner, named, f"{', '.join(present)}, read by transformers' "
                                            f"{type(tokenizer).__name__}")


def _runner_inventory(runner: Any, named_special: frozenset[int], reader: str) -> TokenizerInventory:
    """The inventory of a ``tokenizers.Tokenizer``: every id up to the largest one, holes as None.

    Padding and truncation saved in tokenizer.json are switched off on ``runner`` (ours, just read), as
    transformers switches them off for a call that asks for neither: a token's string is encoded whole.
    """
    runner.no_padding()
    runner.no_truncation()
    owners = runner.get_vocab(with_added_tokens=True)  # token -> id
    span = max(owners.values(), default=-1) + 1
    tokens = tuple(runner.id_to_token(i) for i in range(span))
    decoder = runner.get_added_tokens_decoder()  # id -> AddedToken
    special = frozenset(i for i, token in decoder.items() if token.special) | named_special
    return TokenizerInventory(tokens=tokens, length=runner.get_vocab_size(with_added_tokens=True),
                              base_size=runner.get_vocab_size(with_added_tokens=False), added=frozenset(decoder),
                              special=frozenset(i for i in special if 0 <= i < span), unused=frozenset(), types=None,
                              reader=reader, runner=runner)


def _gguf_inventory(path: Path) -> TokenizerInventory:
    """A llama.cpp file's token list and token types."""
    file = GGUFFile(path)
    listed = file.token_list()
    if listed is None:
        raise NoTokenizerError(f"{path} has no {TOKENS_KEY}: no token list to audit")
    kinds = file.token_types()  # gguf.TokenType names: "normal", "control", ...
    notes: tuple[str, ...] = ()
    if kinds is None:
        notes = (f"{path.name} has no {TOKEN_TYPES_KEY}: special, added and unused tokens are unknown",)
    elif len(kinds) != len(listed):
        notes = (f"{path.name}: {TOKEN_TYPES_KEY} lists {len(kinds):,} types for {len(listed):,} tokens: the types "
                 "are left out",)
        kinds = None
    names = None if kinds is None else tuple(kinds)
    of = (lambda kind: frozenset(i for i, k in enumerate(names or ()) if k == kind))
    return TokenizerInventory(tokens=tuple(listed), length=len(listed), base_size=None, added=of("user_defined"),
                              special=of("control"), unused=of("unused"), types=names,
                              reader=f"{path.name}'s {TOKENS_KEY}" + ("" if kinds is None else f" and {TOKEN_TYPES_KEY}"),
                              runner=None, notes=notes)


def _one_line(exc: BaseException, limit: int = 200) -> str:
    """A library's message on one line, cut to ``limit`` characters."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[:limit] + "…"
