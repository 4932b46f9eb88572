"""embedlab: see and measure the two ends of a transformer language model.

The token-embedding table (token id -> vector), the positional signal added to
it, and the output head that scores every token by reusing that table (weight
tying).

Glossary, used in code, CLI flags, docs and reports alike:

======  ================================================================
``V``   vocabulary size: rows of the token-embedding table
``D``   model width, d_model: columns of the table
``T``   context length: tokens in one sequence
``T_max``  maximum context: rows of a position table
``B``   batch: sequences at once
``N``   queries (neighbour search)
``K``   top-k: neighbours per query
======  ================================================================

Layers: ``embedlab.embed`` is the reference (standard library only);
``embedlab.engine.table.EmbeddingTable`` the array engine (NumPy); ``embedlab.nn`` the
PyTorch modules. The names below are imported lazily, so ``import embedlab``
needs nothing beyond the standard library.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it (imported on first use)
_LAZY = {
    "EmbeddingTable": "engine.table",
    "Provenance": "engine.table",
    "Vocabulary": "engine.vocabulary",
    "Neighbors": "engine.search",
    "load": "sources.loaders",
    "LabSettings": "measure.lab",
    "LabResult": "measure.lab",
    "measure": "measure.lab",
    "Breakdown": "measure.params",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'embedlab' has no attribute {name!r}")
