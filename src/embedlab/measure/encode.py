"""The input embedding: text -> tokens -> ids -> vectors -> the (B, T, D) input.

The whole input pipeline of a transformer, step by step, on a real
checkpoint's tables (NumPy), as its family builds it (``InputRule``)::

    tokens, ids = tokenizer(texts)             # B sequences, padded to T
    pos = offset + t                           # position ids (B, T); RoBERTa: offset = padding_idx + 1, OPT: 2
    x[b, t] = scale * W_E[ids[b, t]]           # token vector       (B, T, D); Gemma: scale = sqrt(D)
            + W_pos[pos[b, t]]                 # position vector    (B, T, D)
            + W_type[type_ids[b, t]]           # token-type vector  (B, T, D), BERT-style checkpoints
    y[b, t] = LayerNorm(x[b, t])               # where the checkpoint has an embedding LayerNorm (BERT family)
    z[b, t] = W_proj y[b, t] + b_proj          # a factorised table (E < D): ALBERT, ELECTRA widen it to D;
                                               # OPT widens the token vector, then adds its D-wide positions

The same token has the same token vector wherever it stands; its input vector
changes with its position (and type). ``tokenize`` splits texts with the
checkpoint's own ``tokenizer.json`` (the ``tokenizers`` library) and its
special tokens; ``encode`` cuts texts at the truncation length saved there,
as the tokenizer does, and refuses a text longer than the positions the model
can use (T_max less the offset). ``compose`` builds the vectors; ``encode``
does both and measures each step.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import ContextLengthError, ShapeError, SizeError, TokenIdError
from ..engine.input_rule import InputRule
from ..engine.lengths import vector_norms
from ..engine.table import EmbeddingTable

__all__ = ["Tokens", "TokenRow", "SameToken", "Encoding", "tokenize", "compose", "encode"]

PAD_TOKENS = ("[PAD]", "<pad>", "<|pad|>")  # tried in order when tokenizer.json saves no padding


@dataclass(frozen=True)
class Tokens:
    """B tokenized texts, padded to one length T.

    Attributes
    ----------
    tokens : list of list of str
        B lists of T token strings (padding included).
    ids, type_ids : numpy.ndarray, shape (B, T), int64
    padding, special : numpy.ndarray, shape (B, T), bool
        Where a slot is padding; where it is a special token ([CLS], [SEP], ...).
    lengths : list of int
        Tokens per text before padding (after truncation).
    original_lengths : list of int
        Tokens per text before truncation.
    """

    tokens: list[list[str]]
    ids: np.ndarray
    type_ids: np.ndarray
    padding: np.ndarray
    special: np.ndarray
    lengths: list[int]
    original_lengths: list[int]


@dataclass(frozen=True)
class TokenRow:
    """One slot (b, t) of the input: the token and the first values and norm of each vector.

    ``vectors`` maps each of ``Encoding.components`` (``"token"``,
    ``"scaled_token"``, ``"position"``, ``"token_type"``, ``"input"`` (the
    sum), ``"layer_norm"``, ``"projected"`` (the Linear E -> D of a factorised
    table), where the checkpoint has them) to ``{"first": [...], "norm": float}``.
    """

    sequence: int
    position: int  # slot t of the sequence, 0-based
    position_id: int | None  # the row of the position table it reads (t + offset); None without one
    token: str
    id: int
    type_id: int
    padding: bool
    vectors: dict[str, dict[str, Any]]


@dataclass(frozen=True)
class SameToken:
    """One token met at two different positions: same token vector, different input vector."""

    token: str
    id: int
    first: list[int]  # [b, t]
    second: list[int]  # [b, t]
    token_max_abs_diff: float  # 0.0: one row of W_E, looked up twice
    input_max_abs_diff: float
    input_cosine: float


@dataclass(frozen=True)
class Encoding:
    """What ``encode`` measured; plain values (``to_dict`` for JSON)."""

    texts: list[str]
    shape: list[int]  # [B, T, D]
    T_max: int | None  # rows of the position table; None where the checkpoint has none
    position_offset: int  # rows before position 0 (RoBERTa: padding_idx + 1; OPT: 2)
    usable_positions: int | None  # T_max - position_offset: the longest text the model takes
    components: list[str]  # the vectors shown, in order: the summands, "input" (their sum), "layer_norm", ...
    summands: list[str]  # the components summed into "input"; the last component is what the first block sees
    lengths: list[int]
    original_lengths: list[int]
    truncated: bool
    rows: list[TokenRow]
    same_token: list[SameToken]
    notes: list[str] = field(default_factory=list)
    source: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-able dict."""
        return asdict(self)


def encode(table: EmbeddingTable, tokenizer: Any, texts: Sequence[str], *, rule: InputRule | None = None,
           truncate: bool | None = None, show: int = 4) -> Encoding:
    """Run texts through the input pipeline of a checkpoint and measure every step.

    Parameters
    ----------
    table : EmbeddingTable
        The token table, with its position and token-type tables where the
        checkpoint has them.
    tokenizer : tokenizers.Tokenizer
        The checkpoint's own tokenizer (``sources.load_tokenizer``); not changed.
    texts : sequence of str, length B >= 1
    rule : InputRule, optional
        How the family builds the input (``sources.read_input_rule``): position
        offset, token scale, embedding LayerNorm. The plain rule by default.
    truncate : bool or None
        ``None`` (default): cut at the truncation length saved in
        tokenizer.json, as the tokenizer does, and refuse a text longer than
        the usable positions where none is saved. ``True``: cut to the saved
        length, or to the usable positions. ``False``: never cut; refuse a
        text longer than the saved length (or the usable positions).
    show : int
        How many leading values of each vector to keep, >= 0.

    Returns
    -------
    Encoding

    Raises
    ------
    ContextLengthError
        (a ``ValueError``) for a text with more tokens than the model's usable
        positions (T_max less the offset), naming the tokens that fit and the
        offset, unless it is cut; with ``truncate=False``, also for a text
        longer than the saved truncation length, naming it.
    ValueError
        For no texts or show < 0.
    """
    if isinstance(show, bool) or not isinstance(show, int) or show < 0:
        raise SizeError(f"show must be an int >= 0, got {show!r}", parameter="show", value=show,
                        expected="an int >= 0")
    rule = rule or InputRule()
    T_max = None if _position_table(table, rule) is None else _position_table(table, rule).shape[0]
    usable = None if T_max is None else rule.usable_positions(T_max)
    saved = None if tokenizer.truncation is None else int(tokenizer.truncation["max_length"])
    limits = [n for n in (saved, usable) if n is not None]
    max_length = min(limits) if limits else None  # the tokens a text may hold
    cut = max_length is not None and truncate is not False and (saved is not None or truncate is True)
    toks = tokenize(tokenizer, texts, max_length=max_length, truncate=cut,
                    limit=_limit_words(T_max, usable, rule, saved), hint=_hint(saved, max_length),
                    pad_id=rule.pad_token_id)
    vectors = _vectors(table, rule, toks.ids, toks.type_ids, toks.padding)  # name -> (B, T, D) float64
    x = _output(table, vectors)  # (B, T, D): what the first block sees
    pos_ids = None if T_max is None else rule.position_ids(toks.padding)  # (B, T)
    summands = _summands(vectors, rule)
    rows = [_row(toks, vectors, pos_ids, b, t, show) for b in range(x.shape[0]) for t in range(x.shape[1])]
    return Encoding(
        texts=list(texts), shape=list(x.shape), T_max=T_max, position_offset=rule.position_offset,
        usable_positions=usable, components=list(vectors), summands=summands, lengths=toks.lengths,
        original_lengths=toks.original_lengths, truncated=toks.lengths != toks.original_lengths, rows=rows,
        same_token=_same_tokens(toks, vectors["token"], x),
        notes=_notes(table, tokenizer, rule, saved, truncate, usable) + _beyond_training(table, rule, toks),
        source=table.provenance.to_dict(),
    )


def compose(table: EmbeddingTable, ids: Any, type_ids: Any = None, *, rule: InputRule | None = None,
            padding: Any = None) -> np.ndarray:
    """The input of the first block: token + position (+ token-type) vectors, as the family builds them.

    ``x[b, t] = scale * W_E[ids[b, t]] + W_pos[pos[b, t]] + W_type[type_ids[b, t]]``
    with ``pos[b, t] = offset + t`` (``rule``; the plain rule has scale 1 and
    offset 0), then the rule's LayerNorm where it has one; summed in float64
    and returned as the table's dtype, float32 at least. A table without a
    position table contributes none (its positions act inside attention, or
    nowhere); one without a token-type table ignores type_ids.
    A factorised table (ALBERT, ELECTRA, OPT: E < D) is widened by the rule's
    ``projection``, the Linear E -> D the family applies after its embedding
    module (OPT adds its D-wide positions after it), so the result is D wide;
    where the checkpoint saves no such Linear it stays E wide, as the rule's
    notes say.

    Parameters
    ----------
    table : EmbeddingTable
    ids : array_like of int, shape (B, T)
    type_ids : array_like of int, shape (B, T), optional
        Segment ids; 0 everywhere by default.
    rule : InputRule, optional
        The family's position offset, token scale and LayerNorm.
    padding : array_like of bool, shape (B, T), optional
        Padding slots (none by default); a rule with ``skip_padding`` does
        not count them.

    Returns
    -------
    numpy.ndarray, shape (B, T, D)
        D is the blocks' width: the table's, or the projection's output.

    Raises
    ------
    ContextLengthError
        (a ``ValueError``) when T exceeds the usable positions, T_max less the
        offset (names both).
    TokenIdError
        (an ``IndexError``) for a token id outside [0, V) or a type id outside
        [0, n_types).
    ShapeError
        For ids that are not 2-D, or type_ids of another shape.

    >>> t = EmbeddingTable([[1.0, 0.0], [0.0, 1.0]], positions=[[10.0, 10.0], [20.0, 20.0]])
    >>> compose(t, [[0, 1], [1, 1]]).tolist()
    [[[11.0, 10.0], [20.0, 21.0]], [[10.0, 11.0], [20.0, 21.0]]]
    """
    rule = rule or InputRule()
    pad = np.zeros(np.shape(ids), dtype=bool) if padding is None else np.asarray(padding, dtype=bool)
    return _output(table, _vectors(table, rule, ids, type_ids, pad))  # (B, T, D)


def tokenize(tokenizer: Any, texts: Sequence[str], *, max_length: int | None = None,
             truncate: bool = False, limit: str | None = None, hint: str | None = None,
             pad_id: int | None = None) -> Tokens:
    """Tokenize texts with a ``tokenizers.Tokenizer`` and pad them to the longest.

    The truncation and padding saved in ``tokenizer.json`` are ignored (a
    copy is used; the tokenizer passed in is not changed): every text keeps
    all its tokens, and one longer than ``max_length`` is an error unless
    ``truncate``, which cuts it to ``max_length`` (special tokens kept).
    Padding uses the saved pad token, else the first of ``PAD_TOKENS`` the
    vocabulary has. ``limit`` says in words what max_length is (by default
    "the position table's T_max=... rows"); ``hint`` how to get past it (by
    default: pass truncate=True). ``pad_id`` (the config's ``pad_token_id``)
    is the padding where tokenizer.json saves none, before ``PAD_TOKENS``.

    Raises
    ------
    ContextLengthError
        Naming the text, its token count and max_length (``value`` the
        count, ``expected`` the limit).
    ValueError
        For no texts, or texts of different lengths with no pad token.
    """
    texts = list(texts)
    if not texts or not all(isinstance(t, str) for t in texts):
        raise ValueError("encode needs at least one text, and texts must be strings")
    for i, text in enumerate(texts):
        _check_utf8(text, i)
    tk = type(tokenizer).from_str(tokenizer.to_str())  # a copy: the caller's settings stay as they were
    tk.no_truncation()
    tk.no_padding()
    found = tk.encode_batch(texts)
    original = [len(e.ids) for e in found]
    if max_length is not None and max(original) > max_length:
        if not truncate:
            i = int(np.argmax(original))
            what = limit or f"the position table's T_max={max_length} rows"
            how = hint or f"pass truncate=True (--truncate) to cut it to {max_length} tokens"
            raise ContextLengthError(f"text {i + 1} has {original[i]} tokens, more than {what} ({how})",
                                     parameter="texts",
                                     value=original[i], expected=f"at most {max_length} tokens: {what}")
        tk.enable_truncation(max_length)
        found = tk.encode_batch(texts)
    lengths = [len(e.ids) for e in found]
    T = max(lengths)
    pad_id, pad_token = _pad(tokenizer, tk, lengths, pad_id)
    out = {name: np.zeros((len(found), T), dtype=dtype) for name, dtype in
           (("ids", np.int64), ("type_ids", np.int64), ("padding", bool), ("special", bool))}
    tokens = []
    for b, e in enumerate(found):
        n = lengths[b]
        out["ids"][b] = e.ids + [pad_id] * (T - n)
        out["type_ids"][b, :n] = e.type_ids
        out["padding"][b, n:] = True
        out["special"][b, :n] = np.array(e.special_tokens_mask, dtype=bool)
        tokens.append(list(e.tokens) + [pad_token] * (T - n))
    return Tokens(tokens=tokens, lengths=lengths, original_lengths=original, **out)


# -- helpers -----------------------------------------------------------------

def _vectors(table: EmbeddingTable, rule: InputRule, ids: Any, type_ids: Any, padding: np.ndarray
             ) -> dict[str, np.ndarray]:
    """The vectors to show, each (B, T, width) float64, checked before any is taken, in the order the
    family builds them: the summands, then ``"input"`` (their sum), ``"layer_norm"`` and ``"projected"``
    where the rule has them. The last one is what the first block sees.

    OPT (a projection with its own positions) widens the token vectors first,
    so its summands are ``"projected"`` and the D-wide ``"position"``.
    """
    idx = np.asarray(ids)
    if idx.ndim != 2:
        raise ShapeError(f"ids must be (B, T), got shape {idx.shape}")
    T = idx.shape[1]
    positions = _position_table(table, rule)  # (T_max, width) or None
    T_max = None if positions is None else positions.shape[0]
    if T_max is not None and T > rule.usable_positions(T_max):
        usable = rule.usable_positions(T_max)
        raise ContextLengthError(f"sequence of {T} tokens is longer than {_limit_words(T_max, usable, rule)}",
                                 parameter="ids", value=T, expected=f"at most {usable} tokens")
    types = np.zeros(idx.shape, dtype=np.int64) if type_ids is None else np.asarray(type_ids)
    if types.shape != idx.shape:
        raise ShapeError(f"type_ids have shape {types.shape}, ids have {idx.shape}")
    tok = table.lookup(idx).astype(np.float64)  # (B, T, E) checks ids against [0, V)
    parts = {"token": tok}
    if rule.scale is not None:
        parts["scaled_token"] = rule.scale_tokens(tok)  # (B, T, E) as the family's module computes it
    late = rule.projection is not None and rule.projection.positions is not None  # OPT: widen, then positions
    if late:
        parts["projected"] = rule.projection.apply(parts["scaled_token" if rule.scale is not None else "token"])
    if positions is not None:
        rows = rule.position_ids(padding)  # (B, T) along time, never batch
        parts["position"] = positions.astype(np.float64)[rows]  # (B, T, width)
    if table.token_types is not None:
        n_types = table.token_types.shape[0]
        if types.size and (types.min() < 0 or types.max() >= n_types):
            bad = int(types.min() if types.min() < 0 else types.max())
            raise TokenIdError(f"token type id {bad} is out of range for {n_types} token types")
        parts["token_type"] = table.token_types.astype(np.float64)[types]  # (B, T, E)
    parts["input"] = sum(parts[name] for name in _summands(parts, rule))  # float64: rounded once, at the end
    if rule.layer_norm is not None:
        parts["layer_norm"] = rule.layer_norm.apply(parts["input"])  # (B, T, E)
    if rule.projection is not None and not late:
        parts["projected"] = rule.projection.apply(parts[list(parts)[-1]])  # (B, T, D): ALBERT, ELECTRA
    return parts


def _summands(parts: Any, rule: InputRule) -> list[str]:
    """The names summed into ``"input"``, in order: the token vector (scaled, or widened first where the
    rule says so), the position and the token-type vector, where present."""
    late = rule.projection is not None and rule.projection.positions is not None
    first = "projected" if late else "scaled_token" if rule.scale is not None else "token"
    return [first] + [name for name in ("position", "token_type") if name in parts]


def _position_table(table: EmbeddingTable, rule: InputRule) -> np.ndarray | None:
    """The position table the family adds: the D-wide one after its projection (OPT), else the table's."""
    return rule.position_table(table)  # (T_max, D or E) or None


def _output(table: EmbeddingTable, vectors: dict[str, np.ndarray]) -> np.ndarray:
    """The last vector (what the first block sees) in the table's dtype, float32 at least."""
    x = vectors[list(vectors)[-1]]  # (B, T, D) float64
    return x.astype(np.result_type(table.dtype, np.float32))


def _limit_words(T_max: int | None, usable: int | None, rule: InputRule, saved: int | None = None) -> str:
    """What the length limit is, for a message: the truncation length tokenizer.json saves, where it is
    the shorter, else the position table's rows less the family's offset."""
    if saved is not None and (usable is None or saved <= usable):
        return f"the {saved} tokens tokenizer.json saves as its truncation length"
    if T_max is None or usable is None:
        return "the limit"
    if rule.position_offset == 0:
        return f"the position table's T_max={T_max} rows"
    return (f"the {usable} positions this model can use: its position table has T_max={T_max} rows and "
            f"{rule.family or 'the family'} numbers positions from row {rule.position_offset} "
            f"(offset {rule.position_offset})")


def _hint(saved: int | None, max_length: int | None) -> str | None:
    """How to get past the limit, for a message; None for the default (pass truncate=True)."""
    if saved is None or max_length is None:
        return None
    how = ", as the tokenizer does" if saved == max_length else ""
    return f"leave out truncate=False (--no-truncate) to cut it to {max_length} tokens{how}"


def _row(toks: Tokens, vectors: dict[str, np.ndarray], pos_ids: np.ndarray | None, b: int, t: int,
         show: int) -> TokenRow:
    return TokenRow(sequence=b, position=t, position_id=None if pos_ids is None else int(pos_ids[b, t]),
                    token=toks.tokens[b][t], id=int(toks.ids[b, t]), type_id=int(toks.type_ids[b, t]),
                    padding=bool(toks.padding[b, t]),
                    vectors={name: _summary(v[b, t], show) for name, v in vectors.items()})


def _summary(v: np.ndarray, show: int) -> dict[str, Any]:
    v64 = v.astype(np.float64)  # (D,)
    return {"first": v64[:show].tolist(), "norm": float(vector_norms(v64[None, :])[0])}


def _same_tokens(toks: Tokens, token_vectors: np.ndarray, x: np.ndarray) -> list[SameToken]:
    """Each ordinary token met at two positions: its first place and its first place at another position."""
    places: dict[int, list[tuple[int, int]]] = defaultdict(list)
    B, T = toks.ids.shape
    for b in range(B):
        for t in range(T):
            if not (toks.padding[b, t] or toks.special[b, t]):
                places[int(toks.ids[b, t])].append((b, t))
    found = []
    for token_id, where in places.items():
        first = where[0]
        other = next((p for p in where[1:] if p[1] != first[1]), None)
        if other is None:
            continue
        a, c = x[first].astype(np.float64), x[other].astype(np.float64)  # (D,) each
        length_a, length_c = vector_norms(np.stack([a, c]))  # exact for any finite entries
        found.append(SameToken(
            token=toks.tokens[first[0]][first[1]], id=token_id, first=list(first), second=list(other),
            token_max_abs_diff=float(np.abs(token_vectors[first] - token_vectors[other]).max()),
            input_max_abs_diff=float(np.abs(a - c).max()),
            input_cosine=_cosine(a, length_a, c, length_c),
        ))
    return found


def _pad(saved: Any, tk: Any, lengths: list[int], config_id: int | None = None) -> tuple[int, str]:
    """The pad id and token: the one saved in tokenizer.json, else the config's pad_token_id, else a known
    pad token."""
    if saved.padding is not None:
        return int(saved.padding["pad_id"]), str(saved.padding["pad_token"])
    if config_id is not None and tk.id_to_token(config_id) is not None:
        return config_id, tk.id_to_token(config_id)
    for token in PAD_TOKENS:
        token_id = tk.token_to_id(token)
        if token_id is not None:
            return int(token_id), token
    if len(set(lengths)) > 1:
        raise ValueError(f"texts have different lengths {lengths} and the tokenizer has no pad token "
                         f"(tried {', '.join(PAD_TOKENS)}): encode them one at a time")
    return 0, ""


def _beyond_training(table: EmbeddingTable, rule: InputRule, toks: Tokens) -> list[str]:
    """A note where a text is longer than the context the model was trained for and nothing refuses it
    (no position table: rotary or ALiBi positions run on)."""
    if _position_table(table, rule) is not None or rule.max_context_length is None:
        return []
    longest = max(toks.lengths)
    if longest <= rule.max_context_length:
        return []
    return [f"a text has {longest} tokens, more than max_position_embeddings={rule.max_context_length}, the context "
            "this model was trained for; without a position table nothing stops it here, but the model was never "
            "trained on positions that far"]


def _notes(table: EmbeddingTable, tokenizer: Any, rule: InputRule, saved: int | None, truncate: bool | None,
           usable: int | None) -> list[str]:
    notes = list(rule.notes)
    if _position_table(table, rule) is None:  # where positions start says nothing without a table
        notes = [note for note in notes if not note.startswith("positions from row 0")]
    if saved is not None and truncate is not False:
        if usable is None or saved <= usable:
            notes.append(f"tokenizer.json saves truncation at {saved} tokens: encode cuts there, as the tokenizer "
                         "does (truncate=False (--no-truncate) refuses a longer text instead)")
        else:
            notes.append(f"tokenizer.json saves truncation at {saved} tokens, more than the {usable} positions the "
                         f"model can use: encode cuts at {usable} (truncate=False (--no-truncate) refuses a longer "
                         "text instead)")
    elif saved is not None:
        notes.append(f"tokenizer.json saves truncation at {saved} tokens: a longer text is refused (truncate=False)")
    if rule.scale is not None and not any(rule.scale_text in note for note in notes):
        notes.append(f"token vectors are scaled by {rule.scale_text} before the sum")
    if rule.layer_norm is not None:
        seen = "" if rule.projection is not None else ", the vector the first block sees"
        notes.append(f"layer_norm: the sum after the embeddings' LayerNorm (eps={rule.layer_norm.eps:g}){seen} "
                     "(dropout is off at inference)")
    elif table.token_types is not None:
        notes.append("the sum; this checkpoint saves no embeddings.LayerNorm to apply after it")
    if _position_table(table, rule) is None:
        notes.append("this checkpoint has no position table: its positions act inside attention, or nowhere")
    return notes


def _cosine(a: np.ndarray, length_a: float, c: np.ndarray, length_c: float) -> float:
    """Cosine of two vectors (D,) given their lengths; 0.0 if either is zero.

    Taken of the unit vectors, so lengths near 1e-200 or 1e200, whose product
    leaves float64's range, still give the right cosine.
    """
    if length_a == 0 or length_c == 0:
        return 0.0
    return float(np.clip((a / length_a) @ (c / length_c), -1.0, 1.0))


def _check_utf8(text: str, i: int) -> None:
    """Refuse a text the tokenizer cannot take: one with lone surrogates, such as the
    ``surrogateescape`` characters Python puts in ``sys.argv`` for bytes that are not UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        byte = f"byte 0x{ord(bad) - 0xDC00:02x}" if 0xDC80 <= ord(bad) <= 0xDCFF else f"U+{ord(bad):04X}"
        raise ValueError(f"text {i + 1} is not valid UTF-8: {byte} at character {exc.start + 1}") from None
