"""PyTorch modules for the two ends of a transformer LM.

Token ids (B, T) become the input (B, T, D) of the first block::

    x = token_embedding(ids)              # (B, T, D)  E[ids[b, t]]
      + positional_embedding(T)[None]     # (1, T, D)  P[t], broadcast over B

and a hidden state (B, T, D) becomes a score for every token through the very
token table (weight tying): ``logits = h @ E.T  # (B, T, V)``.

The public contract of the seed lesson is kept (``TokenEmbedding``,
``LearnedPositionalEmbedding``, ``SinusoidalPositionalEmbedding``,
``EmbeddingComposer``, ``count_parameters``, ``neighbour_cosine_curve``) and
extended: odd D for the sinusoidal table, ``padding_idx``, ``offset``, sqrt(D)
scaling, tied and untied heads, rotary embeddings and ALiBi. Position formulas
come from ``embedlab.engine.positional`` and position similarity from
``embedlab.engine.position_similarity`` (NumPy, float64): the array code and
these modules share one formula, and nothing here reaches up into ``measure``.
Besides ``measure.demo``, which runs these modules, this is the only module that
imports torch at import time.

Parameter counts (``count_parameters``): token V*D, learned positions T_max*D,
sinusoidal, rotary and ALiBi 0, tied head 0 more, untied head V*D more.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from .engine import position_similarity, positional
from .engine.vocabulary import Vocabulary, resolve_ids
from .errors import ContextLengthError, ShapeError, TokenIdError

__all__ = [
    "DEFAULT_INIT_STD", "TokenEmbedding", "PositionalEmbedding", "LearnedPositionalEmbedding",
    "SinusoidalPositionalEmbedding", "EmbeddingComposer", "TiedLMHead", "UntiedLMHead",
    "RotaryEmbedding", "ALiBi", "count_parameters", "neighbour_cosine_curve",
]

DEFAULT_INIT_STD = 0.02  # GPT-2's N(0, 0.02) for embedding tables


class TokenEmbedding(nn.Module):
    """Token id -> vector: an ``nn.Embedding(V, D)`` held as ``embedding``.

    Parameters
    ----------
    vocab_size : int
        ``V`` >= 1.
    d_model : int
        ``D`` >= 1.
    init_std : float
        Rows start as N(0, init_std) draws.
    padding_idx : int, optional
        A token id in ``[0, V)`` whose row starts at zero and gets no gradient
        *from the lookup* (``nn.Embedding``'s rule). The row is an ordinary
        part of the weight otherwise: a ``TiedLMHead`` on this table scores
        the padding token like any other, so the loss gradient through the
        head does reach the padding row (it moves away from zero unless the
        padding logit is masked out of the loss).

    Raises
    ------
    ValueError
        For V < 1 or D < 1. ``TokenIdError`` (an ``IndexError``) for a
        padding_idx outside ``[0, V)``.

    >>> TokenEmbedding(10, 4)(torch.zeros(2, 3, dtype=torch.long)).shape
    torch.Size([2, 3, 4])
    """

    def __init__(self, vocab_size: int, d_model: int, init_std: float = DEFAULT_INIT_STD,
                 padding_idx: int | None = None) -> None:
        super().__init__()
        _check_size(vocab_size, "vocab_size")
        _check_size(d_model, "d_model")
        if padding_idx is not None and not 0 <= padding_idx < vocab_size:
            # nn.Embedding would take a negative padding_idx as counted from the end
            raise TokenIdError(f"padding_idx {padding_idx} is out of range for V={vocab_size}")
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)  # weight (V, D)
        with torch.no_grad():
            self.embedding.weight.normal_(mean=0.0, std=init_std)
            if padding_idx is not None:
                self.embedding.weight[padding_idx].zero_()

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """(B, T) int64 ids -> (B, T, D) rows of the table.

        Raises ``TypeError`` for ids that are not an int64 tensor,
        ``ValueError`` for ids that are not 2-D, and ``TokenIdError`` (an
        ``IndexError``) naming the first id outside ``[0, V)``; all before any
        lookup.
        """
        if not isinstance(ids, torch.Tensor) or ids.dtype != torch.long:
            raise TypeError(f"ids must be an int64 (long) tensor, got {getattr(ids, 'dtype', type(ids).__name__)}")
        if ids.dim() != 2:
            raise ShapeError(f"ids must be (B, T), got shape {tuple(ids.shape)}")
        if ids.numel():
            lo, hi = int(ids.min()), int(ids.max())
            if lo < 0 or hi >= self.vocab_size:
                raise TokenIdError(f"token id {lo if lo < 0 else hi} is out of range for V={self.vocab_size}")
        return self.embedding(ids)  # (B, T, D)

    def ids(self, queries: Any, vocabulary: Vocabulary | Sequence[str | None] | None = None) -> torch.Tensor:
        """A (B, T) batch written as token ids or token strings -> the int64 tensor ``forward`` takes.

        Each entry is resolved by ``embedlab.engine.vocabulary.resolve_ids``
        against ``[0, V)``: an int is an id, ``"id:N"`` the id N, any other
        string a token of ``vocabulary`` (a digit string that is no token is
        the id).

        Parameters
        ----------
        queries : nested sequence of int or str, shape (B, T)
        vocabulary : Vocabulary or sequence of str, length V, optional
            Token strings in id order; without one, only ids (and digit strings) resolve.

        Raises
        ------
        ShapeError
            (a ``ValueError``) for queries that are not (B, T), or a vocabulary whose length is not V.
        TokenIdError, UnknownTokenError, TypeError
            For a bad entry (as ``resolve_ids``); nothing is returned then.

        >>> TokenEmbedding(3, 2).ids([["b", 0], ["id:2", "c"]], ["a", "b", "c"]).tolist()
        [[1, 0], [2, 2]]
        """
        if vocabulary is not None and not isinstance(vocabulary, Vocabulary):
            vocabulary = Vocabulary(vocabulary)
        if vocabulary is not None and len(vocabulary) != self.vocab_size:
            raise ShapeError(f"vocabulary has {len(vocabulary)} tokens, the table has V={self.vocab_size} rows")
        grid = np.asarray(queries, dtype=object)  # (B, T); ragged rows make a 1-D array of lists
        if grid.ndim != 2:
            raise ShapeError(f"queries must be (B, T), got shape {grid.shape}")
        flat = resolve_ids(grid.ravel().tolist(), self.vocab_size, vocabulary)  # (B * T,)
        return torch.tensor(flat, dtype=torch.long).reshape(grid.shape)  # (B, T)


class PositionalEmbedding(nn.Module):
    """Base of the additive position tables: ``forward(seq_len, offset=0) -> (T, D)``.

    Subclasses set ``max_context_length`` (T_max), ``d_model`` (D) and the
    ``table`` property (T_max, D).
    """

    max_context_length: int
    d_model: int

    @property
    def table(self) -> torch.Tensor:
        """The whole position table, (T_max, D)."""
        raise NotImplementedError

    def check_length(self, seq_len: int, offset: int = 0) -> None:
        """Raise ``ContextLengthError`` (a ``ValueError``) naming T and T_max unless
        positions ``offset .. offset + seq_len - 1`` all lie in ``[0, T_max)``."""
        for value, name in ((seq_len, "seq_len"), (offset, "offset")):
            if isinstance(value, bool) or not hasattr(value, "__index__"):
                raise TypeError(f"{name} must be an int, got {value!r}")
        seq_len, offset = operator.index(seq_len), operator.index(offset)
        if seq_len < 1:
            raise ContextLengthError(f"seq_len must be >= 1, got {seq_len}")
        if offset < 0 or offset + seq_len > self.max_context_length:
            where = f"seq_len {seq_len}" if offset == 0 else f"positions {offset}..{offset + seq_len - 1}"
            raise ContextLengthError(f"{where} exceeds max_context_length {self.max_context_length}: "
                                     f"the position table has T_max={self.max_context_length} rows")

    def forward(self, seq_len: int, offset: int = 0) -> torch.Tensor:
        """Vectors of positions ``offset .. offset + T - 1``: (T, D), T = seq_len."""
        self.check_length(seq_len, offset)
        start = operator.index(offset)
        return self.table[start:start + operator.index(seq_len)]  # (T, D)


class LearnedPositionalEmbedding(PositionalEmbedding):
    """A trained position table: ``nn.Embedding(T_max, D)`` held as ``embedding``.

    Adds T_max * D parameters, N(0, init_std) at the start: rows are drawn
    independently, so neighbouring positions are unrelated until trained.

    Raises ``ValueError`` for T_max < 1 or D < 1.
    """

    def __init__(self, max_context_length: int, d_model: int, init_std: float = DEFAULT_INIT_STD) -> None:
        super().__init__()
        _check_size(max_context_length, "max_context_length")
        _check_size(d_model, "d_model")
        self.max_context_length = max_context_length
        self.d_model = d_model
        self.embedding = nn.Embedding(max_context_length, d_model)  # weight (T_max, D)
        with torch.no_grad():
            self.embedding.weight.normal_(mean=0.0, std=init_std)

    @property
    def table(self) -> torch.Tensor:
        """The parameter itself, (T_max, D); gradients flow through slices of it."""
        return self.embedding.weight

    def forward(self, seq_len: int, offset: int = 0) -> torch.Tensor:
        """Vectors of positions ``offset .. offset + T - 1``: (T, D), T = seq_len.

        A lookup (``nn.Embedding`` on the position ids), so the result is a
        new tensor, as a token lookup is: editing it in place leaves the
        table alone, while gradients still reach the rows it read. A slice of
        the weight would be a view of the parameter.

        Raises ``ContextLengthError`` (a ``ValueError``) naming T and T_max,
        and ``TypeError`` for a seq_len or offset that is not an int.
        """
        self.check_length(seq_len, offset)
        start = operator.index(offset)
        weight = self.embedding.weight  # (T_max, D)
        positions = torch.arange(start, start + operator.index(seq_len), device=weight.device)  # (T,)
        return self.embedding(positions)  # (T, D) a copy of the rows, not a view


class SinusoidalPositionalEmbedding(PositionalEmbedding):
    """The fixed sin/cos table of Vaswani et al. 2017, section 3.5; no parameters.

    ``positional.sinusoidal_table(T_max, D, base)`` (angles in float64,
    interleaved sin/cos, odd D allowed: the last column is a lone sine),
    computed once and registered as the buffer ``pe`` (T_max, D) in torch's
    default dtype. Not saved in the state dict: it is a formula, not state.

    Raises ``ValueError`` for T_max < 1, D < 1 or base <= 1.

    >>> pe = SinusoidalPositionalEmbedding(8, 5)
    >>> pe(3).shape, count_parameters(pe)
    (torch.Size([3, 5]), 0)
    """

    def __init__(self, max_context_length: int, d_model: int, base: float = positional.DEFAULT_BASE) -> None:
        super().__init__()
        _check_size(max_context_length, "max_context_length")
        _check_size(d_model, "d_model")
        self.max_context_length = max_context_length
        self.d_model = d_model
        self.base = float(base)
        pe = torch.from_numpy(positional.sinusoidal_table(max_context_length, d_model, base))  # (T_max, D) float64
        self.register_buffer("pe", pe.to(torch.get_default_dtype()), persistent=False)

    @property
    def table(self) -> torch.Tensor:
        """The buffer ``pe``, (T_max, D)."""
        return self.pe


class EmbeddingComposer(nn.Module):
    """The transformer's input: token vectors plus position vectors, (B, T) -> (B, T, D).

    ``out[b, t] = s * E[ids[b, t]] + P[t]``: the position table (T, D) is
    broadcast over the batch as (1, T, D), along time, never along the batch.
    A sum, not a concatenation: D stays D. ``s`` is 1, or sqrt(D) with
    ``scale_by_sqrt_d`` (Vaswani et al. 2017, section 3.4), formed as a Python
    float (float64) and applied in float32 at least, so a bf16/fp16 table is
    rounded once, at the end, never through a rounded factor.

    Parameters
    ----------
    token_embedding : TokenEmbedding
    positional_embedding : LearnedPositionalEmbedding or SinusoidalPositionalEmbedding
    scale_by_sqrt_d : bool

    Raises
    ------
    TypeError
        For arguments of the wrong kind.
    ValueError
        When their d_model differ (names both).
    """

    def __init__(self, token_embedding: TokenEmbedding, positional_embedding: PositionalEmbedding,
                 scale_by_sqrt_d: bool = False) -> None:
        super().__init__()
        if not isinstance(token_embedding, TokenEmbedding):
            raise TypeError(f"token_embedding must be a TokenEmbedding, got {type(token_embedding).__name__}")
        if not isinstance(positional_embedding, PositionalEmbedding):
            raise TypeError("positional_embedding must be a LearnedPositionalEmbedding or "
                            f"SinusoidalPositionalEmbedding, got {type(positional_embedding).__name__} "
                            "(rotary and ALiBi act inside attention, not on the input)")
        if token_embedding.d_model != positional_embedding.d_model:
            raise ShapeError(f"token embedding has d_model={token_embedding.d_model}, positional embedding "
                             f"has d_model={positional_embedding.d_model}: they must be equal to be summed")
        self.token_embedding = token_embedding
        self.positional_embedding = positional_embedding
        self.scale_by_sqrt_d = bool(scale_by_sqrt_d)
        self.scale = math.sqrt(token_embedding.d_model)  # a Python float: float64, never rounded to bf16

    @property
    def d_model(self) -> int:
        """D, shared by both embeddings."""
        return self.token_embedding.d_model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """(B, T) int64 ids -> (B, T, D).

        Raises ``ContextLengthError`` (a ``ValueError``) naming T and T_max
        before any lookup, and what ``TokenEmbedding`` raises for bad ids.
        """
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
            raise ShapeError(f"ids must be a (B, T) tensor, got shape {tuple(getattr(ids, 'shape', ()))}")
        seq_len = ids.shape[1]
        self.positional_embedding.check_length(seq_len)  # before any lookup
        tok = self.token_embedding(ids)  # (B, T, D)
        pos = self.positional_embedding(seq_len).unsqueeze(0)  # (1, T, D) broadcast along B
        if not self.scale_by_sqrt_d:
            return tok + pos  # (B, T, D)
        wide = torch.promote_types(tok.dtype, torch.float32)
        out = tok.to(wide) * self.scale + pos.to(wide)  # (B, T, D) one rounding, at the end
        return out.to(torch.promote_types(tok.dtype, pos.dtype))


class TiedLMHead(nn.Module):
    """Output head that reuses the token table: (B, T, D) -> (B, T, V) logits.

    ``self.weight`` *is* ``token_embedding.embedding.weight`` (one shared
    Parameter, (V, D), no transpose, never a copy), so gradients from the head
    and from the lookup add up in one tensor, and the head adds no parameters.
    ``logits = h @ W_E.T``.

    Raises ``TypeError`` if token_embedding is not a ``TokenEmbedding``.
    """

    def __init__(self, token_embedding: TokenEmbedding) -> None:
        super().__init__()
        if not isinstance(token_embedding, TokenEmbedding):
            raise TypeError(f"token_embedding must be a TokenEmbedding, got {type(token_embedding).__name__}")
        self.vocab_size = token_embedding.vocab_size
        self.d_model = token_embedding.d_model
        self.weight = token_embedding.embedding.weight  # the tie: the same Parameter object

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., D) -> (..., V). Raises ``ShapeError`` (a ``ValueError``) naming both widths."""
        _check_width(hidden, self.d_model)
        return F.linear(hidden, self.weight)  # (..., V)


class UntiedLMHead(nn.Module):
    """Output head with its own (V, D) table, for comparison: adds V * D parameters.

    Raises ``ValueError`` for V < 1 or D < 1.
    """

    def __init__(self, vocab_size: int, d_model: int, init_std: float = DEFAULT_INIT_STD) -> None:
        super().__init__()
        _check_size(vocab_size, "vocab_size")
        _check_size(d_model, "d_model")
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.weight = nn.Parameter(torch.empty(vocab_size, d_model).normal_(0.0, init_std))  # (V, D)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., D) -> (..., V). Raises ``ShapeError`` naming both widths."""
        _check_width(hidden, self.d_model)
        return F.linear(hidden, self.weight)  # (..., V)


class RotaryEmbedding(nn.Module):
    """Rotary position embedding (Su et al. 2021) for (B, H, T, Dh) queries and keys.

    Same formula as ``positional.apply_rope``: pair i of the vector at
    position m is rotated by ``m * base ** (-2i / Dh)``; ``pairing`` is
    ``"interleaved"`` (channels 2i, 2i+1, the paper's) or ``"half"`` (i and
    i + Dh/2). Angles come from ``positional.rope_angles`` in float64; the
    rotation runs in float32 at least and returns the input dtype. No
    parameters.

    Raises ``ValueError`` for an odd head_dim, base <= 1 or an unknown pairing.
    """

    def __init__(self, head_dim: int, base: float = positional.DEFAULT_BASE, pairing: str = "interleaved") -> None:
        super().__init__()
        positional.rope_angles([0], head_dim, base)  # validates head_dim and base
        if pairing not in positional.PAIRINGS:
            raise ValueError(f"unknown rotary pairing {pairing!r}: expected one of {', '.join(positional.PAIRINGS)}")
        self.head_dim = head_dim
        self.base = float(base)
        self.pairing = pairing

    def forward(self, q: torch.Tensor, k: torch.Tensor, offset: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotate q and k, (B, H, T, Dh) each, at positions ``offset .. offset + T - 1``."""
        return self.rotate(q, offset), self.rotate(k, offset)

    def rotate(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """(..., T, Dh) -> (..., T, Dh), rows at positions ``offset ..``.

        Raises ``ShapeError`` when the last axis is not head_dim.
        """
        if x.dim() < 2 or x.shape[-1] != self.head_dim:
            raise ShapeError(f"x has shape {tuple(x.shape)}, expected (..., T, Dh) with Dh={self.head_dim}")
        T = x.shape[-2]
        angle = torch.from_numpy(positional.rope_angles(np.arange(offset, offset + T), self.head_dim, self.base))
        wide = torch.promote_types(x.dtype, torch.float32)
        cos, sin = angle.cos().to(x.device, wide), angle.sin().to(x.device, wide)  # (T, Dh/2) each
        v = x.to(wide)  # (..., T, Dh)
        if self.pairing == "interleaved":
            a, b = v[..., 0::2], v[..., 1::2]  # (..., T, Dh/2) each
            out = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)  # back to 0,1,2,...
        else:
            a, b = v[..., : self.head_dim // 2], v[..., self.head_dim // 2:]
            out = torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
        return out.to(x.dtype)  # (..., T, Dh)


class ALiBi(nn.Module):
    """Attention with Linear Biases (Press et al. 2022): the (H, T, T) causal score bias.

    ``forward(T)[h, i, j] = -slope[h] * (i - j)`` for j <= i and ``-inf`` for
    j > i, from ``positional.alibi_bias``; the slopes (buffer ``slopes``, (H,))
    follow the paper's rule, non-power-of-two head counts included. No
    parameters.

    Raises ``ValueError`` for num_heads < 1.
    """

    def __init__(self, num_heads: int) -> None:
        super().__init__()
        slopes = torch.from_numpy(positional.alibi_slopes(num_heads))  # (H,) float64, exact powers of two
        self.num_heads = num_heads
        self.register_buffer("slopes", slopes.to(torch.get_default_dtype()), persistent=False)

    def forward(self, seq_len: int) -> torch.Tensor:
        """(H, T, T) bias to add to attention scores (B, H, T, T)."""
        bias = torch.from_numpy(positional.alibi_bias(self.num_heads, seq_len))  # (H, T, T) float64
        return bias.to(self.slopes.device, self.slopes.dtype)


def count_parameters(module: nn.Module) -> int:
    """Trainable parameters of a module, shared storage counted once.

    A Parameter reached through two paths (a tied head) and two Parameters
    over the same storage are counted once. Buffers (the sinusoidal ``pe``,
    ALiBi slopes) and frozen parameters are not counted.

    >>> tok = TokenEmbedding(5, 3)
    >>> count_parameters(nn.ModuleList([tok, TiedLMHead(tok)])), count_parameters(nn.ModuleList([tok, UntiedLMHead(5, 3)]))
    (15, 30)
    """
    seen: set[tuple[Any, ...]] = set()
    total = 0
    for p in module.parameters():  # already skips a repeated Parameter object
        if not p.requires_grad:
            continue
        ptr = p.untyped_storage().data_ptr()
        key = (ptr, p.storage_offset(), tuple(p.shape), p.stride()) if ptr else (id(p),)
        if key not in seen:
            seen.add(key)
            total += p.numel()
    return total


def neighbour_cosine_curve(table: Any, max_offset: int = 8) -> list[float]:
    """For k = 1 .. max_offset, the mean cosine between rows p and p + k of a (T_max, D) table.

    Measured in float64 by ``engine.position_similarity.mean_cosine_by_offset``
    (zero-length rows have cosine 0.0). A freshly initialised learned table
    gives ~0 at every k; the sinusoidal table decays smoothly.

    Parameters
    ----------
    table : torch.Tensor or array_like, shape (T_max, D)
    max_offset : int
        ``1 <= max_offset < T_max``.

    Returns
    -------
    list of float, length max_offset
        Item k - 1 is the mean cosine at offset k.

    Raises
    ------
    ValueError
        For a table that is not 2-D, max_offset outside ``[1, T_max)``, or a
        row holding NaN or infinity (names the row and column; such a row is
        never measured as if it were a zero row).
    """
    rows = table.detach().cpu().double().numpy() if isinstance(table, torch.Tensor) else np.asarray(table, np.float64)
    if rows.ndim != 2:
        raise ShapeError(f"table must be (T_max, D), got shape {rows.shape}")
    if isinstance(max_offset, bool) or not isinstance(max_offset, (int, np.integer)) or not 1 <= max_offset < rows.shape[0]:
        raise ValueError(f"max_offset {max_offset!r} is out of range: expected 1 <= max_offset < "
                         f"rows of the table = {rows.shape[0]}")
    return position_similarity.mean_cosine_by_offset(rows, range(1, max_offset + 1)).tolist()


# -- helpers -----------------------------------------------------------------

def _check_width(hidden: torch.Tensor, d_model: int) -> None:
    if not isinstance(hidden, torch.Tensor) or hidden.dim() < 1 or hidden.shape[-1] != d_model:
        raise ShapeError(f"hidden has shape {tuple(getattr(hidden, 'shape', ()))}, expected (..., D) with D={d_model}")


def _check_size(value: Any, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
