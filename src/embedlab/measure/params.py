"""Parameter and memory accounting: the vocabulary tables, tied or not, now and at a bigger V.

The token table W_E is (V, D); an output head W_U is (V, D) too. Tied (W_U is
W_E) the pair costs V*D parameters, untied 2*V*D, and both grow with V while D
stays put. Three ways in, one ``Breakdown`` out:

* ``from_numbers(vocab_size, d_model, ...)``: sizes given by hand (here);
* ``model_params.from_config(path)``: a Hugging Face ``config.json`` alone
  (the tables only);
* ``model_params.from_checkpoint(path)``: every tensor of a safetensors
  checkpoint, read from its headers, buffers set apart, tying decided from
  the file; ``gguf_params.from_gguf(path)`` the same for a llama.cpp file.

``growth`` sets a breakdown beside the same model at a bigger V, tied and untied.

All counts are exact ints, and so are bytes: fp32 4, fp16 and bf16 2, int8 1,
int4 half a byte per parameter, rounded up per tensor (5 int4 parameters take
3 bytes). Shared storage is counted once. A file that stores each tensor in a
type of its own (GGUF: an F32 head beside a Q8_0 table) is priced part by part
as stored (``dtype="stored"``, ``Breakdown.stored``), not at one dtype for all.

>>> b = from_numbers(512, 64).breakdown
>>> b.token, b.head, b.total
(32768, 0, 32768)
>>> g = growth(b, growth_factor=2)
>>> g.untied_now.total, g.tied_bigger.total, g.untied_bigger.total
(65536, 65536, 131072)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..deprecation import renamed
from ..errors import ChoiceError, DtypeError, SizeError
from . import dimensions
from .dimensions import DimensionPlan

__all__ = [
    "DTYPES", "STORED", "POSITION_KINDS", "Breakdown", "Bytes", "Buffer", "Count", "Growth", "ParamsResult",
    "tensor_bytes", "from_numbers", "growth",
]

# dtype -> bytes per parameter as a fraction (numerator, denominator): int4 packs two per byte.
DTYPES: dict[str, tuple[int, int]] = {"fp32": (4, 1), "fp16": (2, 1), "bf16": (2, 1), "int8": (1, 1), "int4": (1, 2)}
STORED = "stored"  # the dtype of a breakdown priced part by part as its file stores each (Breakdown.stored)
POSITION_KINDS = ("learned", "sinusoidal", "rotary", "none")


def tensor_bytes(numel: int, dtype: str) -> int:
    """Bytes of one tensor of ``numel`` parameters in ``dtype``, rounded up to a whole byte.

    Exact integer arithmetic: ``ceil(numel * num / den)`` for the dtype's
    bytes per parameter ``num/den`` (int4: 1/2).

    Raises ``DtypeError`` (a ``ValueError``) for an unknown dtype.

    >>> tensor_bytes(5, "int4"), tensor_bytes(5, "bf16")
    (3, 10)
    """
    num, den = _dtype(dtype)
    return -(-numel * num // den)


@dataclass(frozen=True)
class Bytes:
    """Bytes of each part of a ``Breakdown`` in its dtype (exact ints); ``other`` None when unknown."""

    token: int
    position: int
    token_type: int
    head: int
    other: int | None
    total: int


@dataclass(frozen=True)
class Breakdown:
    """Parameters of the vocabulary tables and of the rest of a model, and their bytes.

    Counted in: every parameter, shared storage once. Counted out: buffers
    (``checkpoint.buffer_reason``), optimizer state, activations.

    Attributes
    ----------
    V, D : int
        Vocabulary size and model width: the token table is (V, D).
    token : int
        Parameters of the token table W_E: V*D.
    position : int
        Parameters of a learned position table (T_max, D); 0 for sinusoidal,
        rotary or no positions, which are computed, not stored.
    token_type : int
        Parameters of a token-type (segment) table (type vocabulary, D); 0 where absent.
    head : int
        Parameters of a separate output head W_U (V, D); 0 when tied (W_U is
        W_E, counted once, under ``token``) or when the model has no head.
    other : int or None
        Every other parameter (attention, MLP, norms, biases); None when not
        known (a config alone).
    tied : bool or None
        Whether the head is the token table; None when neither file nor config says.
    dtype : str
        What ``bytes`` are counted in: "fp32", "fp16", "bf16", "int8" or "int4";
        or ``STORED``, each part as ``stored`` says.
    stored : dict of str -> (int, int)
        For ``dtype=STORED``: the bytes and weights of one block of the type
        the file stores each table in ("token", and "position", "token_type",
        "head" where present; Q8_0 is (34, 32), F32 (4, 1)); a head the file
        does not hold (an untied what-if) is priced as the token table.
    stored_other : int or None
        For ``dtype=STORED``: the bytes of ``other`` as the file stores them.
    other_tensors : tuple of int
        Parameters of each tensor in ``other``, so that int4 rounds up per
        tensor; empty means ``other`` is taken as one tensor.
    vocab_bias : int
        Parameters in ``other`` that grow with V: output biases of V entries
        each (BERT's ``cls.predictions.bias``). A factorised projection
        (ALBERT's E -> hidden) does not grow with V and is not among them.

    Raises
    ------
    SizeError
        For V or D below 1, a negative part, or ``other_tensors`` not summing to ``other``.
    DtypeError
        For an unknown dtype.
    """

    V: int
    D: int
    token: int
    position: int
    token_type: int
    head: int
    other: int | None
    tied: bool | None
    dtype: str = "fp32"
    other_tensors: tuple[int, ...] = field(default=(), repr=False)
    vocab_bias: int = 0
    stored: dict[str, tuple[int, int]] = field(default_factory=dict, repr=False)
    stored_other: int | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        _size(self.V, "V")
        _size(self.D, "D")
        for name in ("token", "position", "token_type", "head"):
            _size(getattr(self, name), name, minimum=0)
        if self.other is not None:
            _size(self.other, "other", minimum=0)
        if self.other_tensors and sum(self.other_tensors) != self.other:
            raise SizeError(f"other_tensors sum to {sum(self.other_tensors)}, but other is {self.other}")
        if self.vocab_bias % self.V or self.vocab_bias > (self.other or 0):
            raise SizeError(f"vocab_bias {self.vocab_bias} must be whole biases of V={self.V} entries within "
                            f"other={self.other}", parameter="vocab_bias", value=self.vocab_bias,
                            expected=f"a multiple of V={self.V} no larger than other")
        if self.dtype == STORED:
            if "token" not in self.stored or (self.other is not None and self.stored_other is None):
                raise DtypeError(f"dtype {STORED!r} needs the token table's stored type and other's stored bytes",
                                 parameter="dtype", value=self.dtype, expected=f"one of {', '.join(DTYPES)}")
        else:
            _dtype(self.dtype)

    @property
    def total(self) -> int:
        """All parameters counted once: the tables plus ``other`` (0 when unknown)."""
        return self.tables + (self.other or 0)

    @property
    def tables(self) -> int:
        """Parameters of the embedding tables: token + position + token_type + head."""
        return self.token + self.position + self.token_type + self.head

    @property
    def non_embedding(self) -> int | None:
        """``total`` without the input tables (token, position, token_type), each once.

        A separate head stays in (it is a layer of its own), as in Hugging
        Face's ``num_parameters(exclude_embeddings=True)``. None when ``other`` is unknown.
        """
        if self.other is None:
            return None
        return self.total - self.token - self.position - self.token_type

    @property
    def share(self) -> float | None:
        """The tables' share of ``total``, in [0, 1]; None when ``other`` is unknown."""
        return None if self.other is None else self.tables / self.total

    @property
    def bytes(self) -> Bytes:
        """Bytes of each part in ``dtype``, int4 rounded up per tensor; with ``dtype=STORED`` each table in
        its own stored type (rounded up to a whole byte) and ``other`` as stored."""
        def of(n: int, part: str = "other") -> int:
            if self.dtype != STORED:
                return tensor_bytes(n, self.dtype)
            num, den = self.stored.get(part, self.stored["token"])  # a head the file lacks: as its table
            return -(-n * num // den)

        other = None
        if self.other is not None:
            if self.dtype == STORED:
                other = self.stored_other
            else:
                other = sum(of(n) for n in self.other_tensors) if self.other_tensors else of(self.other)
        parts = (of(self.token, "token"), of(self.position, "position"), of(self.token_type, "token_type"),
                 of(self.head, "head"))
        return Bytes(*parts, other, sum(parts) + (other or 0))

    def with_vocab(self, V: int) -> Breakdown:
        """The same model at vocabulary size V: token (and a separate head) become V*D, each output bias V."""
        V = _size(V, "V")
        biases = self.vocab_bias // self.V
        changes: dict[str, Any] = {}
        if biases:
            tensors = list(self.other_tensors)
            if tensors:
                for _ in range(biases):
                    tensors.remove(self.V)  # each bias of V entries becomes one of the new V
                tensors += [V] * biases
            changes = {"other": (self.other or 0) + biases * (V - self.V), "vocab_bias": biases * V,
                       "other_tensors": tuple(tensors)}
        return replace(self, V=V, token=V * self.D, head=V * self.D if self.head else 0, **changes)

    def with_tied(self, tied: bool) -> Breakdown:
        """The same model tied (head 0) or untied (head V*D)."""
        return replace(self, tied=tied, head=0 if tied else self.V * self.D)

    def with_dtype(self, dtype: str) -> Breakdown:
        """The same counts, bytes in another dtype."""
        return replace(self, dtype=dtype)

    def to_dict(self) -> dict[str, Any]:
        """``tied``, ``params`` (each part, the tables, total, non_embedding), ``dtype``,
        ``bytes`` (each part) and ``share``, as JSON-able values (exact ints)."""
        params = {key: getattr(self, key) for key in ("token", "position", "token_type", "head", "other",
                                                      "tables", "total", "non_embedding")}
        return {"tied": self.tied, "params": params, "dtype": self.dtype, "bytes": asdict(self.bytes),
                "share": self.share}


@dataclass(frozen=True)
class Buffer:
    """A saved tensor that is not a parameter: name, shape, file dtype, elements, bytes, why."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    elements: int
    bytes: int
    reason: str


@dataclass(frozen=True)
class Count:
    """A ``Breakdown`` and the facts it was read from.

    Attributes
    ----------
    breakdown : Breakdown
    source : str
        "numbers", "config", "checkpoint" or "gguf".
    path : str or None
        The config or checkpoint read.
    positions : str
        "learned", "sinusoidal", "rotary" or "none".
    T_max : int or None
        Maximum context (rows of a learned table, or the config's limit); None if not known.
    type_vocab : int
        Rows of the token-type table; 0 where there is none.
    keys : dict of str -> str
        For a config: what each number came from (``{"V": "vocab_size=30522", ...}``).
    tie_evidence : str
        The facts the tied flag rests on.
    stored_twice : bool
        The file holds the head with the very bytes of the token table: tied, counted once.
    conflict : str or None
        A disagreement between config and file about tying, reported, never resolved.
    tensors : dict of str -> str
        For a checkpoint: role ("token", "position", "token_type", "head") -> tensor name.
    buffers : tuple of Buffer
        For a checkpoint: the saved tensors left out of the parameters.
    stored_bytes : int or None
        For a checkpoint: data bytes in its files, buffers and duplicates included.
    file_bytes : Bytes or None
        For a GGUF file: the bytes of each part as the file stores it, each
        tensor in its own type (Q8_0: 34 bytes per 32 weights); None elsewhere.
    file_types : dict of str -> str
        For a GGUF file: part ("token", "head", "other", ...) -> the type it is
        stored in (``"Q8_0"``; ``"F32/Q4_K"`` for a part in several).
    files : tuple of str
        For a checkpoint: the files counted (those transformers loads).
    built : str or None
        For a config read with transformers: the model class built (the head changes the total).
    reader : str
        How a config was read: with transformers (exact, every family rule), or
        by hand (common keys only: total unknown, family rules not checked).
    left_out : tuple of str
        For a checkpoint folder: the ``.safetensors`` files beside the counted
        ones that transformers would not load (another copy, such as
        ``consolidated.safetensors``).
    plan : DimensionPlan or None
        The widths through the model (h, d_k, d_ff, L) and its parameters by
        part (``measure.dimensions``); None where the sizes do not say.
    """

    breakdown: Breakdown
    source: str
    path: str | None
    positions: str
    T_max: int | None
    type_vocab: int
    keys: dict[str, str]
    tie_evidence: str
    stored_twice: bool = False
    conflict: str | None = None
    tensors: dict[str, str] = field(default_factory=dict)
    buffers: tuple[Buffer, ...] = ()
    stored_bytes: int | None = None
    file_bytes: Bytes | None = None
    file_types: dict[str, str] = field(default_factory=dict)
    files: tuple[str, ...] = ()
    built: str | None = None
    reader: str = ""
    plan: DimensionPlan | None = None
    left_out: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The facts, then the breakdown's ``to_dict`` keys, as JSON-able values (buffer shapes as lists).

        ``file_bytes`` holds the same keys as ``bytes`` (``null`` when the source has no storage types of its own).
        """
        b = self.breakdown
        return {
            "source": self.source, "path": self.path,
            "V": b.V, "D": b.D, "positions": self.positions, "T_max": self.T_max, "type_vocab": self.type_vocab,
            "tied": b.tied, "tie_evidence": self.tie_evidence, "stored_twice": self.stored_twice,
            "conflict": self.conflict, "keys": self.keys, "tensors": self.tensors,
            "buffers": [dict(asdict(buf), shape=list(buf.shape)) for buf in self.buffers],
            "stored_bytes": self.stored_bytes,
            "file_bytes": None if self.file_bytes is None else asdict(self.file_bytes), "file_types": self.file_types,
            "files": list(self.files), "built": self.built, "reader": self.reader,
            "left_out": list(self.left_out), "plan": None if self.plan is None else self.plan.to_dict(),
            **b.to_dict(),
        }


@dataclass(frozen=True)
class Growth:
    """A breakdown beside the same model at a bigger V, tied and untied.

    Attributes
    ----------
    factor : int or None
        V grew by this whole factor; None when a target V was given.
    tied_now, tied_bigger, untied_now, untied_bigger : Breakdown
        The model at today's V and at the bigger V, tied and untied.
    """

    factor: int | None
    tied_now: Breakdown
    tied_bigger: Breakdown
    untied_now: Breakdown
    untied_bigger: Breakdown

    @property
    def V(self) -> int:
        """Today's vocabulary size."""
        return self.tied_now.V

    @property
    def bigger_V(self) -> int:
        """The bigger vocabulary size."""
        return self.tied_bigger.V

    @property
    def tied_added(self) -> int:
        """Parameters the bigger V adds to a tied model: (bigger_V - V) * D."""
        return self.tied_bigger.total - self.tied_now.total

    @property
    def untied_added(self) -> int:
        """Parameters the bigger V adds to an untied model: 2 * (bigger_V - V) * D."""
        return self.untied_bigger.total - self.untied_now.total

    @property
    def tied_added_bytes(self) -> int:
        """Bytes the bigger V adds to a tied model."""
        return self.tied_bigger.bytes.total - self.tied_now.bytes.total

    @property
    def untied_added_bytes(self) -> int:
        """Bytes the bigger V adds to an untied model."""
        return self.untied_bigger.bytes.total - self.untied_now.bytes.total

    @property
    def saved(self) -> int:
        """Parameters tying saves at today's V: one table, V*D."""
        return self.untied_now.total - self.tied_now.total

    @property
    def bigger_saved(self) -> int:
        """Parameters tying saves at the bigger V."""
        return self.untied_bigger.total - self.tied_bigger.total

    def to_dict(self) -> dict[str, Any]:
        """Factor, both V, each breakdown (``Breakdown.to_dict``), what the bigger V adds and what tying saves."""
        return {
            "factor": self.factor, "V": self.V, "bigger_V": self.bigger_V,
            "tied": {"now": self.tied_now.to_dict(), "bigger": self.tied_bigger.to_dict(),
                     "added": self.tied_added, "added_bytes": self.tied_added_bytes},
            "untied": {"now": self.untied_now.to_dict(), "bigger": self.untied_bigger.to_dict(),
                       "added": self.untied_added, "added_bytes": self.untied_added_bytes},
            "saved": self.saved, "bigger_saved": self.bigger_saved,
        }


@dataclass(frozen=True)
class ParamsResult:
    """What ``embedlab params`` shows: a count and its growth to a bigger vocabulary."""

    count: Count
    growth: Growth

    def to_dict(self) -> dict[str, Any]:
        """``Count.to_dict`` with ``growth`` (``Growth.to_dict``) added: parameters and bytes as exact ints,
        ``share`` the tables' fraction of the total (``null`` when the other parameters are unknown)."""
        return {**self.count.to_dict(), "growth": self.growth.to_dict()}


@renamed(V="vocab_size", D="d_model", T_max="max_context_length")
def from_numbers(vocab_size: int, d_model: int, *, tied: bool = True, max_context_length: int | None = None,
                 positions: str | None = None, type_vocab: int = 0, other: int = 0, dtype: str = "fp32",
                 heads: int | None = None, layers: int | None = None, d_ff: int | None = None) -> Count:
    """Count the tables of a model described by its sizes.

    Parameters
    ----------
    vocab_size, d_model : int
        Vocabulary size V and model width D, each >= 1.
    tied : bool
        Whether the output head is the token table (default True).
    max_context_length : int, optional
        T_max, the rows of a learned position table; needed (>= 1) for learned positions.
    positions : str, optional
        "learned" (a (T_max, D) table), "sinusoidal", "rotary" or "none" (no
        parameters). Default: "learned" when max_context_length is given, else "none".
    type_vocab : int
        Rows of a token-type table, >= 0 (BERT: 2).
    other : int
        Every other parameter, >= 0, taken as one tensor (default 0: the tables alone).
    dtype : str
        What bytes are counted in (see ``DTYPES``).
    heads, layers, d_ff : int, optional
        h and L (both, or neither) and the feed-forward width (default 4 * D):
        the blocks are then counted (``dimensions.from_numbers``, the GPT-2
        layout) as ``other``, and ``Count.plan`` shows the dimension plan.

    Returns
    -------
    Count

    Raises
    ------
    SizeError
        For a size that is zero or negative where it must be positive, or not
        a whole number; for learned positions without max_context_length; for heads
        without layers (or the reverse), d_ff without both, or ``other``
        given with them.
    TypeError
        For a size that is not a number, or ``tied`` not a bool.
    ValueError
        For an unknown position kind; ``DtypeError`` for an unknown dtype.

    >>> c = from_numbers(5, 3, tied=False, other=9)
    >>> c.breakdown.total, c.breakdown.non_embedding
    (39, 24)
    """
    V, D = _size(vocab_size, "vocab_size"), _size(d_model, "d_model")
    if not isinstance(tied, bool):
        raise TypeError(f"tied must be True or False, got {tied!r}")
    T_max = None if max_context_length is None else _size(max_context_length, "max_context_length")
    positions = positions or ("learned" if T_max is not None else "none")
    if positions not in POSITION_KINDS:
        raise ChoiceError(f"unknown position kind {positions!r}: expected one of {', '.join(POSITION_KINDS)}",
                          parameter="positions", value=positions, expected=f"one of {', '.join(POSITION_KINDS)}")
    if positions == "learned" and T_max is None:
        raise SizeError("learned positions need max_context_length (T_max), the rows of the position table",
                        parameter="max_context_length", value=None,
                        expected="the rows of the position table, an int >= 1")
    type_vocab, other = _size(type_vocab, "type_vocab", minimum=0), _size(other, "other", minimum=0)
    position = T_max * D if positions == "learned" and T_max is not None else 0
    plan = _plan(D, heads, layers, d_ff, other, tables=V * D + position + type_vocab * D, head=0 if tied else V * D)
    if plan is not None:
        other = plan.parts["attention"] + plan.parts["feed_forward"] + plan.parts["norms"]
    breakdown = Breakdown(V, D, token=V * D, position=position, token_type=type_vocab * D,
                          head=0 if tied else V * D, other=other, tied=tied, dtype=dtype)
    evidence = "tied as given" if tied else "untied as given"
    return Count(breakdown, "numbers", None, positions, T_max, type_vocab, {}, evidence, plan=plan)


def _plan(D: int, heads: int | None, layers: int | None, d_ff: int | None, other: int, *, tables: int,
          head: int) -> DimensionPlan | None:
    """The blocks' plan from h and L (``dimensions.from_numbers``); None when neither is given."""
    if heads is None and layers is None:
        if d_ff is not None:
            raise SizeError("d_ff needs heads and layers: the blocks are counted from h, L and d_ff together",
                            parameter="d_ff", value=d_ff, expected="heads and layers given with it")
        return None
    if heads is None or layers is None:
        missing, given = ("heads", layers) if heads is None else ("layers", heads)
        raise SizeError(f"{missing} is needed with {'layers' if heads is None else 'heads'}={given}: the blocks "
                        "are counted from h and L together", parameter=missing, value=None,
                        expected="an int >= 1, given with the other (h and L count the blocks together)")
    if other:
        raise SizeError(f"other={other} and heads/layers both count the blocks: give one", parameter="other",
                        value=other, expected="none: heads and layers count the other parameters (the blocks)")
    return dimensions.from_numbers(D, heads=heads, layers=layers, d_ff=d_ff, tables=tables, head=head)



@renamed(factor="growth_factor", target_V="target_vocab_size")
def growth(breakdown: Breakdown, *, growth_factor: int | None = None, target_vocab_size: int | None = None) -> Growth:
    """The same model at a bigger vocabulary, tied and untied, beside today's.

    Only the tables that grow with V change: the token table and a separate
    head. Positions, token types and ``other`` stay as they are.

    Parameters
    ----------
    breakdown : Breakdown
        Today's model.
    growth_factor : int, optional
        Whole growth factor >= 1 (2.0 is taken as 2; 1.5 is refused).
    target_vocab_size : int, optional
        The bigger vocabulary size V, >= 1. Give exactly one of growth_factor and target_vocab_size.

    Raises
    ------
    SizeError
        For a factor that is not a whole number >= 1, or a target V below 1.
    TypeError
        For a factor or V that is not a number, or for neither/both given.

    >>> g = growth(from_numbers(512, 64).breakdown, target_vocab_size=1000)
    >>> g.bigger_V, g.tied_added, g.untied_added
    (1000, 31232, 62464)
    """
    if (growth_factor is None) == (target_vocab_size is None):
        raise TypeError("give exactly one of growth_factor and target_vocab_size")
    factor = None
    if growth_factor is not None:
        factor = _size(growth_factor, "growth_factor")
        bigger = breakdown.V * factor
    else:
        bigger = _size(target_vocab_size, "target_vocab_size")
    tied, untied = breakdown.with_tied(True), breakdown.with_tied(False)
    return Growth(factor, tied, tied.with_vocab(bigger), untied, untied.with_vocab(bigger))


# -- helpers -----------------------------------------------------------------

def _size(value: Any, name: str, minimum: int = 1) -> int:
    """An exact int >= minimum; a float with a whole value (2.0) is taken as that int."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a whole number, got {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise SizeError(f"{name} must be a whole number, got {value!r}", parameter=name, value=value,
                            expected=f"a whole number >= {minimum}")
        value = int(value)
    if value < minimum:
        raise SizeError(f"{name} must be >= {minimum}, got {value}", parameter=name, value=value,
                        expected=f"a whole number >= {minimum}")
    return value


def _dtype(dtype: str) -> tuple[int, int]:
    try:
        return DTYPES[dtype]
    except (KeyError, TypeError):
        raise DtypeError(f"unknown dtype {dtype!r}: expected one of {', '.join(DTYPES)}", parameter="dtype",
                         value=dtype, expected=f"one of {', '.join(DTYPES)}") from None
