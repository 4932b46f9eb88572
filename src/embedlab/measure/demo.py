"""The demo: the torch modules on one batch (``embedlab demo``).

Builds a token embedding, a learned and a sinusoidal position embedding and the
composer (``embedlab.nn``), runs one batch of random ids and measures what the
lesson shows: the (B, T) -> (B, T, D) contract, the parameters each module adds
(learned positions T_max * D, sinusoidal and rotary 0, tied head 0, untied head
V * D), the mean cosine between positions k apart, and the sinusoidal
wavelength bands (Vaswani et al. 2017, section 3.5).

Glossary: ``V`` vocabulary size, ``D`` model width, ``T`` context length,
``T_max`` rows of a position table, ``B`` batch.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from ..engine import positional
from ..errors import SizeError
from ..nn import (EmbeddingComposer, LearnedPositionalEmbedding, RotaryEmbedding, SinusoidalPositionalEmbedding,
                  TiedLMHead, TokenEmbedding, UntiedLMHead, count_parameters, neighbour_cosine_curve)

__all__ = ["DemoSettings", "DemoResult", "demo", "DEMO_MAX_ELEMENTS"]


@dataclass(frozen=True)
class DemoSettings:
    """What ``demo`` builds; the seed lesson's defaults.

    Raises ``SizeError`` (a ``ValueError``; ``parameter`` names the field) when a
    size is below 1, when T > T_max or max_offset >= T_max, and ``SizeError``
    without a parameter when the tensors the demo makes (tables, batch, logits)
    would pass ``DEMO_MAX_ELEMENTS`` elements.
    """

    vocab_size: int = 320  # V
    d_model: int = 64  # D
    max_context_length: int = 128  # T_max
    batch_size: int = 4  # B
    seq_len: int = 32  # T
    seed: int = 11  # torch seed for the tables and the batch
    max_offset: int = 6  # offsets k = 1 .. max_offset for the cosine curve
    base: float = positional.DEFAULT_BASE

    def __post_init__(self) -> None:
        sizes = {"vocab_size": self.vocab_size, "d_model": self.d_model, "max_context_length": self.max_context_length,
                 "batch_size": self.batch_size, "seq_len": self.seq_len, "max_offset": self.max_offset}
        for name, value in sizes.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise SizeError(f"{name}={value!r} must be an int of at least 1", parameter=name, value=value,
                                expected="an int of at least 1")
        V, D, B, T, T_max = self.vocab_size, self.d_model, self.batch_size, self.seq_len, self.max_context_length
        if T > T_max:
            raise SizeError(f"seq_len={T} exceeds max_context_length={T_max}: the position tables have T_max rows",
                            parameter="seq_len", value=T, expected=f"at most T_max = {T_max}, the rows of the position "
                                                                    "tables")
        if self.max_offset >= T_max:
            raise SizeError(f"max_offset={self.max_offset} must be below max_context_length={T_max}: rows p and "
                            "p + k of the position tables must both exist", parameter="max_offset",
                            value=self.max_offset, expected=f"an offset below T_max = {T_max}, so that rows p and "
                                                            "p + k both exist")
        elements = 2 * V * D + 2 * self.max_context_length * D + B * T * (3 * D + V)  # tables, inputs, logits
        if elements > DEMO_MAX_ELEMENTS:
            raise SizeError(f"the demo would hold {elements:,} float32 values (V={V}, D={D}, B={B}, T={T}): "
                             f"more than {DEMO_MAX_ELEMENTS:,}; choose smaller sizes")


# About 1 GiB of float32: the demo is a lesson on one batch, not a load test.
DEMO_MAX_ELEMENTS = 2**28


@dataclass(frozen=True)
class DemoResult:
    """Everything ``embedlab demo`` shows; plain values, JSON-able via ``to_dict``."""

    settings: dict[str, Any]
    shapes: dict[str, list[int]]  # name -> shape of the tensor made
    parameters: dict[str, int]  # module -> trainable parameters it adds
    max_abs_composition_error: float  # max |out[b, t] - (E[ids[b, t]] + P[t])|
    offsets: list[int]
    learned_curve: list[float]
    sinusoidal_curve: list[float]
    learned_decreasing_steps: int
    sinusoidal_decreasing_steps: int
    wavelengths: list[float]  # positions, one per sin/cos pair
    bands_longer_than_context: int
    too_long_error: str  # what the learned table says at T_max + 1
    notes: tuple[str, ...] = ()  # what was adjusted without being asked (a default max_offset shrunk)

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-able dict (notes as a list)."""
        return {**asdict(self), "notes": list(self.notes)}


def demo(settings: DemoSettings = DemoSettings()) -> DemoResult:
    """Build the modules, run one batch, and measure what the demo shows.

    The global torch random state is restored afterwards. Raises what the
    modules raise for bad settings (e.g. ``ContextLengthError`` for
    seq_len > max_context_length).
    """
    s = settings
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(s.seed)
        tok = TokenEmbedding(s.vocab_size, s.d_model)
        learned = LearnedPositionalEmbedding(s.max_context_length, s.d_model)
        sinusoidal = SinusoidalPositionalEmbedding(s.max_context_length, s.d_model, s.base)
        ids = torch.randint(0, s.vocab_size, (s.batch_size, s.seq_len))  # (B, T) int64
        untied = UntiedLMHead(s.vocab_size, s.d_model)
    tied = TiedLMHead(tok)
    with torch.no_grad():
        tokens = tok(ids)  # (B, T, D)
        x_learned = EmbeddingComposer(tok, learned)(ids)  # (B, T, D)
        x_sinusoidal = EmbeddingComposer(tok, sinusoidal)(ids)  # (B, T, D)
        expected = tok.embedding.weight[ids] + learned.embedding.weight[: s.seq_len][None]  # (B, T, D)
        logits = tied(x_learned)  # (B, T, V)
    learned_curve = neighbour_cosine_curve(learned.table, s.max_offset)
    sinusoidal_curve = neighbour_cosine_curve(sinusoidal.table, s.max_offset)
    bands = positional.wavelengths(s.d_model, s.base)  # (ceil(D/2),)
    return DemoResult(
        settings=asdict(s),
        shapes={"ids": list(ids.shape), "token": list(tokens.shape), "learned_input": list(x_learned.shape),
                "sinusoidal_input": list(x_sinusoidal.shape), "tied_logits": list(logits.shape)},
        parameters=_added_parameters(tok, learned, sinusoidal, tied, untied, 2 * max(1, s.d_model // 2)),
        max_abs_composition_error=float((x_learned - expected).abs().max()),
        offsets=list(range(1, s.max_offset + 1)),
        learned_curve=learned_curve,
        sinusoidal_curve=sinusoidal_curve,
        learned_decreasing_steps=int(np.sum(np.diff(learned_curve) < 0)),
        sinusoidal_decreasing_steps=int(np.sum(np.diff(sinusoidal_curve) < 0)),
        wavelengths=bands.tolist(),
        bands_longer_than_context=int(np.sum(bands > s.max_context_length)),
        too_long_error=_error_text(lambda: learned(s.max_context_length + 1)),
    )


# -- helpers -----------------------------------------------------------------

def _added_parameters(tok: TokenEmbedding, learned: nn.Module, sinusoidal: nn.Module, tied: nn.Module,
                      untied: nn.Module, head_dim: int) -> dict[str, int]:
    """Parameters each module adds to a model that already has the token table
    (rotary measured at an even head size near D: it has none at any size)."""
    base = count_parameters(tok)
    return {
        "token": base,
        "learned_positions": count_parameters(learned),
        "sinusoidal_positions": count_parameters(sinusoidal),
        "rotary": count_parameters(RotaryEmbedding(head_dim)),
        "tied_head": count_parameters(nn.ModuleList([tok, tied])) - base,
        "untied_head": count_parameters(nn.ModuleList([tok, untied])) - base,
    }


def _error_text(call: Any) -> str:
    """The message of the ValueError that call() raises, or "" if it raises none."""
    try:
        call()
    except ValueError as exc:
        return str(exc)
    return ""
