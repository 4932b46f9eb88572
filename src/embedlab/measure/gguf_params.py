"""The parameters of a llama.cpp model, counted from the tensor infos of its GGUF file.

``from_gguf(path)`` returns the same ``params.Count`` as a safetensors
checkpoint does: token table ``token_embd.weight`` (V, D), learned positions
``position_embd.weight``, token types ``token_types.weight``, the output head
``output.weight`` (0 when tied: llama.cpp ties by leaving it out) and every
other tensor. Only the tensor infos are read (names, dimensions, GGML types),
and, where ``output.weight`` is present, the bytes of the table and the head,
to tell a head stored twice from a separate one.

Bytes are the file's own: ``Count.file_bytes`` each part as stored, and
``Breakdown.bytes`` (``dtype="stored"``) each table priced in the type the
file stores it in (a Q8_0 table at 34 bytes per block of 32 weights, an F32
head at 4 bytes a weight, from ``gguf.GGML_QUANT_SIZES``), so the what-ifs
(bigger V, tied or untied) grow each table at its own price; a head the file
does not hold is priced as the token table. ``dtype`` names one dtype for
every part instead (fp32, fp16, bf16, int8, int4), as for any model.
"""

from __future__ import annotations

from pathlib import Path

from ..sources import gguf
from . import dimensions
from .params import STORED, Breakdown, Buffer, Bytes, Count

__all__ = ["from_gguf"]

# llama.cpp architectures (general.architecture) that rotate queries and keys, or add ALiBi biases:
# neither stores a position table.
ROTARY_ARCHS = frozenset({"llama", "llama4", "mistral3", "qwen2", "qwen3", "qwen2moe", "qwen3moe", "gemma", "gemma2",
                          "gemma3", "phi2", "phi3", "stablelm", "gptneox", "gptj", "falcon", "olmo", "olmo2",
                          "deepseek2", "granite", "command-r", "starcoder2", "internlm2", "chatglm"})
ALIBI_ARCHS = frozenset({"bloom", "mpt", "jais"})


def from_gguf(path: str | Path, *, tensor: str | None = None, dtype: str | None = None) -> Count:
    """Count every parameter of a GGUF file from its tensor infos.

    Parameters
    ----------
    path : str or Path
        A llama.cpp ``.gguf`` file.
    tensor : str, optional
        The token table's name; default ``token_embd.weight``. ``output.weight``
        is the head whatever names it: the token table is then the default.
    dtype : str, optional
        What ``Breakdown.bytes`` are counted in (fp32, fp16, bf16, int8,
        int4); default ``"stored"``: each part in the type the file stores it in.

    Returns
    -------
    Count
        ``source="gguf"``; ``file_bytes`` each part in the file's own types
        and ``file_types`` (role -> GGML type, ``"F32/Q4_K"`` for several);
        ``stored_bytes`` every tensor's data; ``keys`` where V, T_max and the
        position kind came from. ``rope_freqs.weight`` and integer tensors are
        buffers, not parameters.

    Raises
    ------
    SourceError
        For a missing, malformed or truncated file, or a token table that is
        absent, not 2-D or stored as integers (names the tensor).
    """
    file = gguf.GGUFFile(path)
    token = tensor if tensor not in (None, gguf.HEAD) else gguf.TOKEN  # output.weight named is the head, as it is
    table = file.matrix_info(token)
    V, D = table.shape
    verdict = gguf.decide_tying(file, token)
    roles = {"token": token, "position": gguf.POSITIONS, "token_type": gguf.TOKEN_TYPES, "head": gguf.HEAD}
    roles = {role: name for role, name in roles.items() if name in file.tensors and (role == "token" or name != token)}
    infos = file.tensors
    buffers = tuple(Buffer(i.name, i.shape, i.type, i.numel, i.nbytes, reason) for i in infos.values()
                    if (reason := _buffer_reason(i)) is not None)
    counted = {role: name for role, name in roles.items() if not (role == "head" and verdict.stored_twice)}
    kept = {b.name for b in buffers} | set(roles.values())
    others = [i for i in infos.values() if i.name not in kept]

    def part(role: str, of: str) -> int:
        return getattr(infos[counted[role]], of) if role in counted else 0

    breakdown = Breakdown(V, D, token=table.numel, position=part("position", "numel"),
                          token_type=part("token_type", "numel"), head=part("head", "numel"),
                          other=sum(i.numel for i in others), tied=verdict.tied,
                          dtype=dtype or STORED, other_tensors=tuple(i.numel for i in others),
                          stored={role: gguf.block_bytes(infos[name].type) for role, name in counted.items()},
                          stored_other=sum(i.nbytes for i in others))
    parts = [part(role, "nbytes") for role in ("token", "position", "token_type", "head")]
    other_bytes = sum(i.nbytes for i in others)
    file_types = {role: infos[name].type for role, name in counted.items()}
    if others:
        file_types["other"] = "/".join(sorted({i.type for i in others}))
    positions, T_max, keys = _positions(file, roles, V, D, token)
    counted_infos = [(i.name, i.shape) for i in infos.values() if i.name not in {b.name for b in buffers}
                     and not (i.name == roles.get("head") and "head" not in counted)]
    plan = dimensions.plan_from_parameters(counted_infos, D, config=_widths(file), roles=roles,
                                           source="the file's tensor infos, its metadata's widths")
    return Count(breakdown, "gguf", str(path), positions, T_max,
                 infos[roles["token_type"]].shape[0] if "token_type" in roles else 0, keys, verdict.evidence,
                 stored_twice=verdict.stored_twice, tensors=roles, buffers=buffers,
                 stored_bytes=sum(i.nbytes for i in infos.values()),
                 file_bytes=Bytes(*parts, other_bytes, sum(parts) + other_bytes), file_types=file_types, plan=plan)


# -- helpers -----------------------------------------------------------------

# llama.cpp's metadata keys (gguf-py's Keys.LLM / Keys.Attention, prefixed by the architecture) -> the
# config keys ``dimensions.config_numbers`` reads.
WIDTH_KEYS = {"attention.head_count": "num_attention_heads", "attention.head_count_kv": "num_key_value_heads",
              "attention.key_length": "head_dim", "feed_forward_length": "intermediate_size",
              "block_count": "num_hidden_layers"}


def _widths(file: gguf.GGUFFile) -> dict[str, int]:
    """The dimension plan's widths from the file's ``{arch}.*`` metadata, as config keys."""
    arch = file.architecture
    found = {config_key: file.value(f"{arch}.{key}") for key, config_key in WIDTH_KEYS.items()} if arch else {}
    return {k: v for k, v in found.items() if isinstance(v, int) and not isinstance(v, bool)}


def _positions(file: gguf.GGUFFile, roles: dict[str, str], V: int, D: int,
               token: str) -> tuple[str, int | None, dict[str, str]]:
    """(position kind, T_max, keys): a table in the file wins; else the metadata and the architecture say."""
    arch = file.architecture
    keys = {"V": f"{token} stored as ne=[{D}, {V}]"}
    if "position" in roles:
        T_max = file.tensors[roles["position"]].shape[0]
        keys["positions"] = f"{roles['position']} present: learned"
        return "learned", T_max, keys
    limit = file.value(f"{arch}.context_length") if arch else None
    if isinstance(limit, int):
        keys["T_max"] = f"{arch}.context_length={limit}"
    rope = next((k for k in (f"{arch}.rope.dimension_count", f"{arch}.rope.freq_base")
                 if arch and file.value(k) is not None), None)
    if rope or arch in ROTARY_ARCHS:
        keys["positions"] = f"{rope} present: rotary" if rope else f"general.architecture={arch}: rotary"
        kind = "rotary"
    else:
        why = "ALiBi, " if arch in ALIBI_ARCHS else ""
        keys["positions"] = f"general.architecture={arch}: {why}no position table"
        kind = "none"
    return kind, limit if isinstance(limit, int) else None, keys


def _buffer_reason(info: gguf.GGUFTensor) -> str | None:
    """Why a stored tensor is not a parameter: rotary frequency factors, or integer data."""
    if info.name == "rope_freqs.weight":
        return "rotary frequency factors"
    if info.type in gguf.INTEGER_TYPES:
        return f"integer type {info.type}"
    return None
