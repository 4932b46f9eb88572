"""InputRule: how a model family turns its tables into the first block's input.

The tables alone do not say how a family uses them. Three rules differ by
family (``sources.family_rules`` reads them from transformers' classes)::

    pos[b, t] = offset + (number of non-padding tokens before t)   # RoBERTa: offset = padding_idx + 1; OPT: 2
    x[b, t]   = scale * W_E[ids[b, t]] + W_pos[pos[b, t]] (+ W_type[type_ids[b, t]])   # Gemma: scale = sqrt(D)
    y[b, t]   = LayerNorm(x[b, t]) = (x - mean) / sqrt(var + eps) * weight + bias     # BERT family
    z[b, t]   = W_proj y[b, t] + b_proj    # a factorised table, E -> D: ALBERT, ELECTRA (after the LayerNorm)
    z[b, t]   = W_proj (scale * W_E[ids[b, t]]) + W_pos[pos[b, t]]     # OPT: its D-wide positions come after

A family that counts from an offset never uses the first ``offset`` rows of
its position table for a token: a table of T_max rows holds
``T_max - offset`` usable positions. Padding slots of such families read
row ``offset - 1`` (RoBERTa's padding row) and do not advance the count.
``InputRule()`` is the plain rule: positions 0, 1, 2, ..., no scale, no
LayerNorm.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["LayerNorm", "InputProjection", "InputRule", "round_to_stored"]


@dataclass(frozen=True)
class LayerNorm:
    """The embedding LayerNorm of a checkpoint: weight and bias (D,), and eps.

    ``apply`` normalises over the last axis with the biased variance, as
    ``torch.nn.LayerNorm`` does (Ba et al. 2016), in float64.
    """

    weight: np.ndarray  # (D,)
    bias: np.ndarray  # (D,)
    eps: float

    def apply(self, x: np.ndarray) -> np.ndarray:
        """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last axis; (..., D) -> (..., D) float64.

        >>> ln = LayerNorm(np.ones(2), np.zeros(2), 0.0)
        >>> ln.apply(np.array([1.0, 3.0])).tolist()
        [-1.0, 1.0]
        """
        x = np.asarray(x, dtype=np.float64)  # (..., D)
        mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)  # (..., 1) biased, as torch
        return (x - mean) / np.sqrt(var + self.eps) * self.weight.astype(np.float64) + self.bias.astype(np.float64)


@dataclass(frozen=True)
class InputProjection:
    """The Linear E -> D a family puts between a factorised token table (E wide) and its D-wide blocks.

    ALBERT (Lan et al. 2020, section 3.1, "factorized embedding
    parameterization") and ELECTRA widen the embedding module's output, after
    its LayerNorm; OPT widens the token vectors (``project_in``) and adds its
    D-wide positions after that.

    Attributes
    ----------
    name : str
        The module as transformers names it in the base model
        (``"encoder.embedding_hidden_mapping_in"``, ``"embeddings_project"``,
        ``"decoder.project_in"``).
    weight : numpy.ndarray, shape (D, E)
        As ``torch.nn.Linear`` stores it: ``z = x @ weight.T + bias``.
    bias : numpy.ndarray, shape (D,), or None
        None where the Linear has none (OPT's ``project_in``).
    positions : numpy.ndarray, shape (T_max, D), or None
        The position table added after the projection (OPT), in place of an
        E-wide one added before it.
    positions_name : str or None
        That table's module name (``"decoder.embed_positions"``).
    """

    name: str
    weight: np.ndarray  # (D, E)
    bias: np.ndarray | None = None  # (D,)
    positions: np.ndarray | None = None  # (T_max, D)
    positions_name: str | None = None

    def apply(self, x: np.ndarray) -> np.ndarray:
        """``x @ weight.T + bias`` over the last axis, in float64; (..., E) -> (..., D).

        >>> InputProjection("p", np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])).apply(np.array([1.0, 2.0])).tolist()
        [1.0, 3.0, 4.0]
        """
        z = np.asarray(x, dtype=np.float64) @ self.weight.astype(np.float64).T  # (..., D)
        return z if self.bias is None else z + self.bias.astype(np.float64)


@dataclass(frozen=True)
class InputRule:
    """How a family builds the first block's input from its tables.

    Attributes
    ----------
    family : str or None
        The config's ``model_type`` (``"roberta"``), ``None`` without a config.
    position_offset : int
        Rows of the position table before position 0 (RoBERTa: padding_idx + 1; OPT: 2).
    skip_padding : bool
        Padding slots read row ``position_offset - 1`` and do not advance the
        count (RoBERTa, OPT); otherwise slot t reads row ``offset + t``.
    scale : float or None
        The factor on the token vectors, as the family's module computes it
        (Gemma: sqrt(D), cast to the weights' dtype first).
    scale_text : str or None
        The factor in words (``"sqrt(D) = sqrt(3072) = 55.4256..., as bfloat16 55.5"``).
    scale_dtype : str or None
        The stored dtype (``"BF16"``, ``"F16"``) the family computes the scaled
        vectors in, where that rounds them; ``None`` for float32 or wider.
    layer_norm : LayerNorm or None
        The embedding LayerNorm, where the checkpoint has one.
    projection : InputProjection or None
        The Linear E -> D after a factorised table (ALBERT, ELECTRA, OPT),
        where the checkpoint saves it.
    pad_token_id : int or None
        The config's ``pad_token_id``: the id padding slots take where
        tokenizer.json saves no padding.
    max_context_length : int or None
        T_max, the config's ``max_position_embeddings``: the context the model
        was trained for, which a family without a position table (rotary, ALiBi)
        does not enforce.
    notes : tuple of str
        Where each rule was read: a transformers class, or a fallback by hand.
    """

    family: str | None = None
    position_offset: int = 0
    skip_padding: bool = False
    scale: float | None = None
    scale_text: str | None = None
    scale_dtype: str | None = None
    layer_norm: LayerNorm | None = None
    projection: InputProjection | None = None
    pad_token_id: int | None = None
    max_context_length: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def usable_positions(self, T_max: int) -> int:
        """Positions a token can take: ``T_max - position_offset`` (0 at least).

        >>> InputRule(position_offset=2).usable_positions(514)
        512
        """
        return max(int(T_max) - self.position_offset, 0)

    def position_table(self, table: Any) -> np.ndarray | None:
        """The position table the family adds to the token vectors, as stored (offset rows included).

        The D-wide table added after the projection (OPT's ``decoder.embed_positions``
        beside a factorised token table) where there is one, else the table's own
        (``table.positions``, (T_max, E)); None for a family without a position table
        (rotary, ALiBi, relative positions) and for word vectors.
        """
        if self.projection is not None and self.projection.positions is not None:
            return self.projection.positions  # (T_max + offset, D)
        return getattr(table, "positions", None)  # (T_max + offset, E) or None

    def position_rows(self, table: Any) -> np.ndarray | None:
        """The rows of ``position_table`` that tokens read, position 0 first: row ``p + position_offset``
        is position p. RoBERTa's unused row 0 and its padding row 1 (``padding_idx``) are left out, as are
        OPT's first 2 rows; None without a position table.

        >>> InputRule(position_offset=2).position_rows(type("T", (), {"positions": np.arange(5.0)[:, None]})).ravel().tolist()
        [2.0, 3.0, 4.0]
        """
        stored = self.position_table(table)
        return None if stored is None else stored[self.position_offset:]  # (T_max, width)

    def position_ids(self, padding: Any) -> np.ndarray:
        """The row of the position table each slot reads; (B, T) bool -> (B, T) int64.

        >>> InputRule(position_offset=2, skip_padding=True).position_ids([[False, False, True]]).tolist()
        [[2, 3, 1]]
        >>> InputRule().position_ids([[False, True]]).tolist()
        [[0, 1]]
        """
        pad = np.asarray(padding, dtype=bool)  # (B, T)
        if not self.skip_padding:
            return np.broadcast_to(np.arange(pad.shape[1], dtype=np.int64) + self.position_offset, pad.shape).copy()
        real = (~pad).astype(np.int64)  # (B, T)
        return np.cumsum(real, axis=1) * real - 1 + self.position_offset  # pads land on offset - 1

    def scale_tokens(self, tokens: np.ndarray) -> np.ndarray:
        """The token vectors as the family scales them, (B, T, D) float64; unchanged without a scale."""
        if self.scale is None:
            return tokens
        return round_to_stored(tokens * self.scale, self.scale_dtype)  # (B, T, D)


def round_to_stored(x: np.ndarray, dtype: str | None) -> np.ndarray:
    """Round float values to a 16-bit stored dtype (``"BF16"``, ``"F16"``) and back to float64.

    Round to nearest, ties to even, as torch rounds a product in that dtype.
    Any other dtype (``None``, ``"F32"``) rounds to float32.

    >>> round_to_stored(np.array([55.42562484741211]), "BF16").tolist()
    [55.5]
    >>> round_to_stored(np.array([55.42562484741211]), "F16").tolist()
    [55.4375]
    """
    x = np.asarray(x, dtype=np.float64)
    if dtype == "F16":
        return x.astype(np.float16).astype(np.float64)
    bits = x.astype(np.float32).view(np.uint32)
    if dtype != "BF16":
        return bits.view(np.float32).astype(np.float64)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) & np.uint32(0xFFFF0000)  # nearest even
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)
