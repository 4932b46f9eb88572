"""Hostile model files, built byte by byte for the tests (never committed), and a way to run the CLI on them.

Each writer follows the format's own description, not embedlab's reader:

* ``.npy``: NumPy's format (``numpy.lib.format``): the magic ``\\x93NUMPY``, a
  version, a little-endian header length, a Python-literal dict header padded
  to 64 bytes, then the data;
* safetensors: 8 bytes of little-endian header length, the JSON header, the
  data (https://github.com/huggingface/safetensors, "Format");
* GGUF: llama.cpp's ``docs/gguf.md``: magic, u32 version, u64 tensor and kv
  counts, then typed key/values and tensor infos;
* word2vec: a ``V D`` header line, then records (text: words and numbers;
  binary: a word, a space and D little-endian float32).

``run_bounded`` runs ``python -m embedlab`` in a child under an address-space
limit and a timeout, for the files that could block (a FIFO) or grow without
end (``/dev/zero``, a declared size of 10^12): a hang or a blow-up fails the
test instead of the test run.
"""

from __future__ import annotations

import json
import os
import pickle
import resource
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import embedlab

ADDRESS_SPACE = 3 * 2**30  # bytes a child may map: NumPy and the CLI need a few hundred MiB of it
RSS_LIMIT = 600 * 2**20  # what a child that refused its file in time has touched at most (bytes)
DEEP = 100_000  # arrays nested this deep exhaust Python's recursion limit (1,000) many times over

# GGUF value types (llama.cpp gguf.md): the ones the writers below use
GGUF_UINT32, GGUF_STRING, GGUF_ARRAY = 4, 8, 9


# -- .npy ----------------------------------------------------------------------------

def npy_with_header(path: Path, descr: str, shape: str, data: bytes = b"") -> Path:
    """A version 1.0 .npy file whose header says ``descr`` and ``shape`` (a Python tuple literal), then ``data``."""
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    header += " " * (-(10 + len(header) + 1) % 64) + "\n"  # magic (6) + version (2) + length (2), padded to 64
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin-1") + data)
    return path


# -- safetensors -----------------------------------------------------------------------

def safetensors_raw(path: Path, header: bytes | str | object, data: bytes = b"", length: int | None = None) -> Path:
    """A safetensors file of the given header (JSON text, bytes or an object to dump) and data.

    ``length`` overrides the 8-byte header length (a lying header).
    """
    raw = header if isinstance(header, bytes) else (header if isinstance(header, str) else json.dumps(header)).encode()
    path.write_bytes(struct.pack("<Q", len(raw) if length is None else length) + raw + data)
    return path


def deep_json(depth: int = DEEP) -> str:
    """A JSON object whose one key holds ``depth`` arrays, each inside the next."""
    return '{"a": ' + "[" * depth + "]" * depth + "}"


# -- GGUF ----------------------------------------------------------------------------

def gguf_string(text: bytes, length: int | None = None) -> bytes:
    """A GGUF string: a u64 length (``length`` to lie about it) and the bytes."""
    return struct.pack("<Q", len(text) if length is None else length) + text


def gguf_kv(key: bytes, value_type: int, payload: bytes) -> bytes:
    """One metadata key/value: the key, its u32 value type, the value's bytes as given."""
    return gguf_string(key) + struct.pack("<I", value_type) + payload


def gguf_tensor_info(name: bytes, ne: list[int], ggml_type: int = 0, offset: int = 0,
                     n_dims: int | None = None) -> bytes:
    """One tensor info: name, n_dims (``n_dims`` to lie about it), ne (fastest first), GGML type (0 = F32), offset."""
    return (gguf_string(name) + struct.pack("<I", len(ne) if n_dims is None else n_dims)
            + struct.pack(f"<{len(ne)}Q", *ne) + struct.pack("<IQ", ggml_type, offset))


def gguf_raw(path: Path, tensor_count: int, kv_count: int, body: bytes = b"", version: int = 3) -> Path:
    """A GGUF file: magic, version, the two counts as declared, then ``body`` (key/values, tensor infos, data)."""
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", version, tensor_count, kv_count) + body)
    return path


# -- word2vec --------------------------------------------------------------------------

def word2vec_binary(path: Path, header: bytes, records: list[tuple[bytes, tuple[float, ...]]]) -> Path:
    """word2vec binary: the header line as given, then each word, a space and its float32 values."""
    path.write_bytes(header + b"".join(w + b" " + struct.pack(f"<{len(v)}f", *v) for w, v in records))
    return path


# -- pickle ----------------------------------------------------------------------------

class Marker:
    """Unpickling this object creates the file ``path``: proof that something ran pickle on it."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self) -> tuple:
        return open, (self.path, "w")


def pickled_marker(path: Path, marker: Path) -> Path:
    """A pickle at ``path`` that, if anything unpickled it, would create ``marker``."""
    path.write_bytes(pickle.dumps(Marker(marker)))
    return path


# -- a tiny checkpoint -------------------------------------------------------------------

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b", "c", "d"]


def tiny_bert(folder: Path, **config: object) -> Path:
    """A BERT-like folder: model.safetensors (V=8, D=4, positions, types, LayerNorm), tokenizer.json, config.json.

    ``config`` keys are written over the sizes; the weights are small whole numbers, so the files are exact.
    """
    import tokenizers

    from safetensors_writer import f32, write_config, write_safetensors

    folder.mkdir(parents=True, exist_ok=True)
    V, D, T_max = len(WORDS), 4, 8
    write_safetensors(folder / "model.safetensors", {
        "embeddings.word_embeddings.weight": ("F32", (V, D), f32(*[(i % 5) - 2.0 for i in range(V * D)])),
        "embeddings.position_embeddings.weight": ("F32", (T_max, D), f32(*[(i % 3) - 1.0 for i in range(T_max * D)])),
        "embeddings.token_type_embeddings.weight": ("F32", (2, D), f32(*[0.5] * (2 * D))),
        "embeddings.LayerNorm.weight": ("F32", (D,), f32(*[1.0] * D)),
        "embeddings.LayerNorm.bias": ("F32", (D,), f32(*[0.0] * D)),
    })
    sizes = {"model_type": "bert", "vocab_size": V, "hidden_size": D, "max_position_embeddings": T_max,
             "num_attention_heads": 1, "num_hidden_layers": 1, "intermediate_size": 8, "type_vocab_size": 2}
    write_config(folder, **{**sizes, **config})
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel({w: i for i, w in enumerate(WORDS)},
                                                                 unk_token="[UNK]"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder


# -- running the CLI in a child -----------------------------------------------------------

@dataclass(frozen=True)
class Run:
    """What a child run of the CLI did: exit code, its output, and its peak resident memory in bytes."""

    returncode: int
    stdout: str
    stderr: str
    max_rss: int


# The child: the CLI's own main, then its peak resident set (Linux: KiB) written where the parent reads it.
_CHILD = """
import os, sys
from embedlab.cli import main
try:
    code = main(sys.argv[1:])
finally:
    # VmHWM: this process's own peak, since its exec. getrusage's ru_maxrss would also count the pages of
    # the test process it was forked from (Linux carries the peak across exec), ~1 GB late in a full run.
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    with open(os.environ["HOSTILE_RSS_FILE"], "w") as handle:
        handle.write(str(peak * 1024))
sys.exit(code)
"""


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run_bounded(args: list[str], folder: Path, timeout: float = 60) -> Run:
    """``embedlab ARGS`` in a child process, limited to ``ADDRESS_SPACE`` bytes and ``timeout`` seconds.

    Raises ``subprocess.TimeoutExpired`` (the child is killed) when it does not finish in time.
    """
    rss_file = folder / "child-rss.txt"
    source = str(Path(embedlab.__file__).resolve().parents[1])  # the embedlab under test, first on the child's path
    path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": path, "HOSTILE_RSS_FILE": str(rss_file), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", _CHILD, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=folder, preexec_fn=_limit_memory)
    rss = int(rss_file.read_text()) if rss_file.exists() else -1
    rss_file.unlink(missing_ok=True)
    return Run(done.returncode, done.stdout, done.stderr, rss)
