"""Sources: the only code that reads files. A model name or path -> an ``EmbeddingTable``.

``load(model, table=)`` takes a named table (``seed``, ``minilm``, ``glove``) or a path
(a Hugging Face style folder, a ``.safetensors`` file, a llama.cpp ``.gguf``
file, a ``.npy`` with a word list, GloVe/word2vec text or word2vec binary),
resolved once (``resolve``). One module per kind of file: ``safetensors``
(headers, one tensor at a time), ``checkpoint`` (tensor roles, buffers,
config.json, weight tying), ``gguf`` (llama.cpp files, through the gguf
library), ``npy``, ``word_vectors`` (text vectors and word lists), ``word2vec``
(the binary format), ``tokenizer`` (tokenizer.json and vocabulary files), ``head``
(the output head as a table: its vocabulary, a tied head said once),
``family_rules`` (a family's input rule read from transformers: position offset, token scale,
embedding LayerNorm, the Linear E -> D of a factorised table),
``config_limits`` (the largest sizes a config may declare);
``loaders`` dispatches. Nothing is read with pickle. Every file is untrusted
input, opened under the rules of ``files`` (regular files only, bounded reads,
shards confined to the model's folder); ``gguf_header`` checks a GGUF file's
declared counts before the gguf library trusts them.

The public names below are imported lazily (NumPy is needed only once a table
is read), so ``from embedlab import sources`` costs nothing; a missing extra is
a ``MissingExtraError`` naming it.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..errors import needs_extra

# public name -> the module of this package that defines it
_PUBLIC = {
    "load": "loaders", "load_checkpoint": "loaders",
    "NAMED": "resolve", "package_dir": "resolve", "checkpoint_path": "resolve",
    "load_gguf": "gguf", "load_npy": "npy", "load_vectors": "npy",
    "load_text": "word_vectors", "read_words": "word_vectors", "load_word2vec_binary": "word2vec",
    "load_tokenizer": "tokenizer",
    "read_input_rule": "family_rules",
}

__all__ = list(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with needs_extra("real tables"):  # NumPy or safetensors missing: say which extra installs it
        module = importlib.import_module(f".{_PUBLIC[name]}", __name__)
    return getattr(module, name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
