"""Model families read as Hugging Face ``transformers`` reads them: tie defaults and exact counts from a config.

A ``config.json`` names its family (``model_type``); the family's config class
in transformers holds the defaults of the keys a config leaves out (Llama:
``tie_word_embeddings`` false; GPT-2: true), and the family's model class says
which tables exist and how wide they are (ALBERT's factorised 128-wide table,
OPT's projection, T5's one shared table). Both are read here from transformers
itself, never from a table kept by hand:

* ``family_ties(model_type)``: the family's default for ``tie_word_embeddings``;
* ``count_config(config)``: the model the config describes, built on the
  meta device (shapes, no memory, no weights), counted table by table;
* ``output_head(config)``: the same model's output head: the name of its
  weight (``get_output_embeddings()``) and what the family does around it
  (T5 scales the decoder's output by D^-0.5 before a tied head).

torch and transformers are imported inside the functions: without them
``family_ties`` and ``output_head`` answer None and ``count_config`` raises ``MissingExtraError``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

from ..errors import ConfigError, ConfigSizeError, MissingExtraError
from . import config_limits

__all__ = ["ModelCount", "OutputHead", "HEAD_SCALES", "available", "family_ties", "count_config", "output_head"]

# Keys of a saved config.json that describe the file, not the model.
_FILE_KEYS = ("model_type", "transformers_version", "_name_or_path")
# The heads tried, in order, when a config names no class of transformers (the family's usual head): the
# language-model heads, then the generation class of a multimodal family whose config saves no architectures
# (qwen2_vl: Qwen2VLForConditionalGeneration, with its lm_head; its base Qwen2VLModel has no head), then the
# bare model. An Auto class this transformers does not have is passed over.
_AUTO_HEADS = ("AutoModelForSeq2SeqLM", "AutoModelForMaskedLM", "AutoModelForCausalLM", "AutoModelForImageTextToText",
               "AutoModelForMultimodalLM", "AutoModel")
# Module names (the last part) of learned absolute position tables and of token-type tables.
_POSITION_MODULES = ("position_embeddings", "wpe", "embed_positions")
_TYPE_MODULES = ("token_type_embeddings",)


@dataclass(frozen=True)
class ModelCount:
    """The parameters of a model built from a config, as transformers builds it.

    Attributes
    ----------
    built : str
        The class built (``"LlamaForCausalLM"``); the head changes the total.
    V, D : int
        The token table's shape (V, D): D is its own width (ALBERT's
        ``embedding_size``), not necessarily the model's ``hidden_size``.
    token, position, token_type, head : int
        Parameters of the token table, the learned position table (0 for
        rotary, ALiBi or relative positions), the token-type table and a
        separate output head (0 when tied or absent).
    other : tuple of int
        Parameters of every other tensor, one entry per tensor.
    vocab_bias : int
        Parameters in ``other`` that grow with V: output biases of V entries.
    tied : bool or None
        Whether the output head is the token table (the same Parameter); None without a head.
    T_max : int or None
        Rows of the learned position table; None without one.
    type_vocab : int
        Rows of the token-type table; 0 where there is none.
    tensors : dict of str -> str
        Role -> the module's parameter name in the model built.
    library : str
        ``"transformers 5.24.0"``: what built it.
    parameters : tuple of (str, tuple of int)
        Every parameter once (``named_parameters()``), its name and shape.
    config : dict
        The config as transformers holds it (``to_dict()``): every key, the
        family's defaults filled in.
    notes : tuple of str
        What the reader should know about the build (a class ``architectures``
        names that transformers does not have).
    """

    built: str
    V: int
    D: int
    token: int
    position: int
    token_type: int
    head: int
    other: tuple[int, ...]
    vocab_bias: int
    tied: bool | None
    T_max: int | None
    type_vocab: int
    tensors: dict[str, str]
    library: str = ""
    parameters: tuple[tuple[str, tuple[int, ...]], ...] = ()
    config: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class OutputHead:
    """A family's output head, as transformers builds the model (``output_head``).

    Attributes
    ----------
    built : str
        The class built (``"LlamaForCausalLM"``).
    name : str or None
        The parameter name of the head's weight in that model
        (``get_output_embeddings().weight``: ``"lm_head.weight"``); None when
        the class has no output head (a bare ``BertModel``).
    notes : tuple of str
        What the family does between the last hidden state and the head, or to
        its scores (``HEAD_SCALES``); the head itself is as stored.
    library : str
        ``"transformers 5.24.0"``: what built it.
    """

    built: str
    name: str | None
    notes: tuple[str, ...] = ()
    library: str = ""


# Config keys (as transformers' config class holds them, defaults filled in) by which a family changes
# what its output head computes, and what each does, read from the families' modeling code in transformers:
# T5 (and mT5, UMT5, LongT5, Switch) scale the decoder's output before the head; Cohere multiplies the
# scores, Granite divides them, Gemma 2 and 3 soft-cap them.
HEAD_SCALES = {
    "scale_decoder_outputs": "the decoder's output is multiplied by D^-0.5 = 1/sqrt({D}) before this head "
                             "({config}, transformers): logits = (h * D^-0.5) @ W_U^T; the table is as stored",
    "logit_scale": "the scores are multiplied by {value} after this head ({config}, transformers): "
                   "logits = {value} * (h @ W_U^T); the table is as stored",
    "logits_scaling": "the scores are divided by {value} after this head ({config}, transformers): "
                      "logits = (h @ W_U^T) / {value}; the table is as stored",
    "final_logit_softcapping": "the scores are soft-capped at {value} after this head ({config}, transformers): "
                               "logits = {value} * tanh((h @ W_U^T) / {value}); the table is as stored",
}


def available() -> bool:
    """Whether torch and transformers can be imported."""
    try:
        import torch
        import transformers
    except ImportError:
        return False
    return bool(torch and transformers)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """transformers' own log lines (``[transformers] Model config: ...``) held back while embedlab reads
    with it: its verbosity set to errors, then put back as it was."""
    try:
        from transformers.utils import logging
    except ImportError:
        yield
        return
    before = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(before)


def config_defaults(config: dict[str, Any]) -> dict[str, Any] | None:
    """A config with its family's defaults filled in, as transformers' config class reads it.

    ``None`` without transformers, without a ``model_type``, or for a config
    its class refuses: the caller reads the keys the file has.
    """
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not available():
        return None
    import transformers

    try:
        with quiet():
            cfg = transformers.AutoConfig.for_model(model_type).__class__.from_dict(
                {k: v for k, v in config.items() if k not in _FILE_KEYS})
    except Exception:  # a family it does not know, or a config it refuses: the file's keys stand
        return None
    return cfg.to_dict()


def family_ties(model_type: str) -> bool | None:
    """The default of ``tie_word_embeddings`` for a family, as transformers' config class sets it.

    A family that keeps its language model in a nested ``text_config``
    (Gemma 3, LLaVA) answers with that config's default. None when
    transformers is not installed or does not know ``model_type``.

    >>> family_ties("llama"), family_ties("gpt2")  # with transformers installed
    (False, True)
    """
    try:
        import transformers
    except ImportError:
        return None
    try:
        with quiet():
            config = transformers.AutoConfig.for_model(model_type)
    except Exception:  # a family it does not know, or one whose defaults it refuses
        return None
    text = getattr(config, "text_config", None)
    for holder in (text, config):
        value = getattr(holder, "tie_word_embeddings", None)
        if isinstance(value, bool):
            return value
    return None


def count_config(config: dict[str, Any], where: str = "config") -> ModelCount:
    """Count a model described by a config as transformers builds it, on the meta device.

    The class built is the one the config's ``architectures`` names (when
    transformers has it), else the family's usual head: the first of
    seq2seq LM, masked LM, causal LM, image-text-to-text, multimodal LM
    (the generation class of a multimodal family, Qwen2-VL's
    ``Qwen2VLForConditionalGeneration``) and the bare model that
    transformers' Auto classes map ``model_type`` to; ``ModelCount.notes``
    says which Auto class chose. The model is made under
    ``torch.device("meta")``: every shape, no memory, no weights.

    Parameters
    ----------
    config : dict
        A parsed ``config.json`` with a ``model_type``.
    where : str
        The file's name, for messages.

    Raises
    ------
    ConfigError
        For a config without ``model_type``, a family transformers does not
        know, or a config transformers refuses (its message is kept).
    ConfigSizeError
        (a ``ConfigError``) for a model of more modules than
        ``config_limits.MODULES``: the build is stopped there.
    MissingExtraError
        When torch or transformers is not installed.
    """
    model, library, notes = _build(config, where)
    return replace(_count(model), library=library, notes=notes)


def output_head(config: dict[str, Any], where: str = "config") -> OutputHead | None:
    """The family's output head as transformers builds it from a config (on the meta device, as ``count_config``).

    The head's name is that of ``get_output_embeddings()``'s weight in the
    model built (``lm_head.weight`` for Llama, Qwen, Gemma, Mistral, T5;
    ``cls.predictions.decoder.weight`` for BERT's masked LM), whether or not
    it is tied. The notes say what the family does between the last hidden
    state and the head, or to its scores, as the config transformers reads
    (the family's defaults filled in) sets it: T5's decoder output scaled by
    D^-0.5 (``scale_decoder_outputs``), Cohere's ``logit_scale``, Granite's
    ``logits_scaling``, Gemma 2's ``final_logit_softcapping``.

    Returns
    -------
    OutputHead or None
        None without torch or transformers, and for a config transformers
        cannot build (no ``model_type``, an unknown family, a refused config):
        the caller then finds the head by the names it knows (``checkpoint.HEAD_NAMES``).
    """
    if not available() or not isinstance(config.get("model_type"), str):
        return None
    try:
        model, library, _ = _build(config, where)
    except ConfigError:
        return None
    try:
        module = model.get_output_embeddings()
    except Exception:  # a class that does not implement it: no head transformers can name
        module = None
    name = next((f"{n}.weight" for n, m in model.named_modules() if m is module and n), None) if module is not None \
        else None
    return OutputHead(built=type(model).__name__, name=name, notes=_head_notes(model.config), library=library)


def _build(config: dict[str, Any], where: str) -> tuple[Any, str, tuple[str, ...]]:
    """(the model built on the meta device, ``"transformers 5.24.0"``, notes on the class chosen)."""
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise MissingExtraError.for_module(exc.name or "transformers", "exact counts from a config",
                                           ("hf",)) from None
    model_type = config.get("model_type")
    try:
        with quiet():
            cfg = transformers.AutoConfig.for_model(model_type).__class__.from_dict(
                {k: v for k, v in config.items() if k not in _FILE_KEYS})
    except Exception as exc:  # an unknown family, or a config its class refuses (huggingface_hub's strict checks)
        raise ConfigError(f"{where}: transformers {transformers.__version__} cannot read model_type="
                          f"{model_type!r}: {_reason(exc)}", parameter="config", value=model_type,
                          expected="a config transformers can read") from None
    build, unknown, auto = _model_class(transformers, cfg, config.get("architectures"))
    try:
        with quiet(), torch.device("meta"), config_limits.bounded_build(where):
            model = build(cfg)
    except ConfigSizeError:  # more modules than the bound: stopped where it stood
        raise
    except Exception as exc:  # transformers' own checks on the config (head counts, sizes)
        raise ConfigError(f"{where}: transformers cannot build {getattr(build, '__name__', build)} from it: {_reason(exc)}",
                          parameter="config", value=model_type, expected="a config transformers can build") from None
    if unknown:
        notes = (f"architectures names {unknown!r}, which transformers {transformers.__version__} does not have: "
                 f"built {build.__name__}, the family's usual head ({auto})",)
    elif auto:
        notes = (f"no architectures in the config: the class transformers' {auto} maps model_type={model_type} to",)
    else:
        notes = ()
    return model, f"transformers {transformers.__version__}", notes


def _head_notes(cfg: Any) -> tuple[str, ...]:
    """What a family does around its output head, from the config transformers holds (``HEAD_SCALES``)."""
    kind = type(cfg).__name__
    notes = []
    for key, says in HEAD_SCALES.items():
        value = getattr(cfg, key, None)
        if value is None or value is False:
            continue
        D = getattr(cfg, "d_model", None) or getattr(cfg, "hidden_size", None)
        notes.append(says.format(value=value, D=D, config=f"{kind}.{key}={value!r}"))
    return tuple(notes)


def _reason(exc: Exception, limit: int = 160) -> str:
    """transformers' message on one line, cut to ``limit`` characters: some list every family it knows
    (hundreds of names), which would bury the line they stand in. A first line that only introduces the
    next (huggingface_hub's "Class validation error for validator ...:") is joined to it.

    >>> _reason(ValueError("Validation error for field 'x':\\n    TypeError: expected int"))
    "Validation error for field 'x': TypeError: expected int"
    """
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    text = lines[0] + (" " + lines[1] if lines[0].endswith(":") and len(lines) > 1 else "")
    return text if len(text) <= limit else text[:limit] + f"… ({len(text):,} characters)"


def _model_class(transformers: Any, cfg: Any, architectures: Any) -> tuple[Any, str | None, str | None]:
    """The class named by ``architectures`` if transformers has it, else the family's usual head: the first
    of ``_AUTO_HEADS`` whose mapping holds the config's class. Also the name ``architectures`` gave that
    transformers does not have, and the Auto class that chose (each None where none)."""
    unknown = None
    if isinstance(architectures, list) and architectures and isinstance(architectures[0], str):
        named = getattr(transformers, architectures[0], None)
        if isinstance(named, type):
            return named, None, None
        unknown = architectures[0]
    for auto in _AUTO_HEADS:
        mapping = getattr(getattr(transformers, auto, None), "_model_mapping", {})
        if type(cfg) in mapping:
            return mapping[type(cfg)], unknown, auto
    raise ConfigError(f"transformers has no model class for model_type={cfg.model_type!r}", parameter="config",
                      value=cfg.model_type, expected="a model_type with a model class in transformers")


def _count(model: Any) -> ModelCount:
    """Every table, the tie and the rest of a model object, each Parameter once."""
    table = model.get_input_embeddings().weight  # (V, D)
    head_module = model.get_output_embeddings()
    head = None if head_module is None else head_module.weight  # (V, D) or absent
    tied = None if head is None else head is table
    V, D = table.shape
    names = {id(p): n for n, p in model.named_parameters()}  # named_parameters() lists a shared one once
    positions = _module_weight(model, _POSITION_MODULES)
    types = _module_weight(model, _TYPE_MODULES)
    roles = {"token": table, "position": positions, "token_type": types, "head": None if tied else head}
    kept = {id(p) for p in roles.values() if p is not None}
    other = [p for p in model.parameters() if id(p) not in kept]
    return ModelCount(
        built=type(model).__name__, V=V, D=D, token=table.numel(),
        position=0 if positions is None else positions.numel(),
        token_type=0 if types is None else types.numel(),
        head=0 if tied or head is None else head.numel(),
        other=tuple(p.numel() for p in other),
        vocab_bias=sum(p.numel() for p in other if tuple(p.shape) == (V,)),
        tied=tied, T_max=None if positions is None else positions.shape[0],
        type_vocab=0 if types is None else types.shape[0],
        tensors={role: names[id(p)] for role, p in roles.items() if p is not None and id(p) in names},
        parameters=tuple((n, tuple(p.shape)) for n, p in model.named_parameters()),
        config=model.config.to_dict(),
    )


def _module_weight(model: Any, last_names: tuple[str, ...]) -> Any:
    """The 2-D weight of the first module whose name ends with one of ``last_names``; None if none."""
    for name, module in model.named_modules():
        weight = getattr(module, "weight", None)
        if name.rsplit(".", 1)[-1] in last_names and weight is not None and weight.dim() == 2:
            return weight
    return None
