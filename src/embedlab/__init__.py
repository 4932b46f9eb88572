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
needs nothing beyond the standard library; a name whose extra is not installed
raises ``embedlab.errors.MissingExtraError`` naming the extra.

One call per command (``embedlab.api``; ``plot`` in ``embedlab.figures``), each returning the command's
result:

==================  ===================================================================
``report``          the lab report's measurements (seed table, a model, a list of rows)
``neighbors``       nearest tokens by cosine and by dot, side by side
``hubs``            rows that enter the most neighbour lists
``graph``           every token's k nearest (cosine, dot), written as Parquet
``compress``        what shrinking the vectors costs: recall@k of PCA, truncation, int8, binary, pq vs bytes
``params``          parameters and bytes, tied and untied, now and at a bigger V
``positions``       a learned position table against the sinusoidal one
``encode``          text -> tokens -> ids -> vectors -> (B, T, D)
``demo``            the torch modules on one batch
``projector``       what the offline projector page shows: points, exact neighbours over all V
``export``          the table as TensorBoard projector files (vectors.tsv, metadata.tsv)
``audit``           tokenizer vs table vs head: accounting, reachability, degenerate rows, under-trained tokens
``diff``            two tables (or a table and its head): moved rows, new rows, Procrustes alignment
``plot``            one figure (projection, norms, neighbors, scale, positions, bands)
``resolve_probe``   the report's probe: a token or id, else "king", else id 137
==================  ===================================================================

Tables and results: ``load`` (a model name or path -> ``EmbeddingTable``: the token table, or
with ``table="head"`` the output head),
``EmbeddingTable``, ``Vocabulary``, ``resolve_ids`` (tokens or ids -> checked
ids), ``Neighbors``, ``Provenance``, ``measure`` with ``LabSettings`` and
``LabResult``, ``ParamsResult``, ``Breakdown``.

>>> import embedlab
>>> "report" in dir(embedlab) and "EmbeddingTable" in dir(embedlab)
True
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

from . import errors

__version__ = "0.1.0"

# public name -> module that defines it (imported on first use)
_LAZY = {
    "report": "api",
    "neighbors": "api",
    "hubs": "api",
    "graph": "api",
    "compress": "api",
    "audit": "api",
    "diff": "api",
    "params": "api",
    "positions": "api",
    "encode": "api",
    "demo": "api",
    "projector": "api",
    "export": "api",
    "resolve_probe": "api",
    "plot": "figures",
    "ParamsResult": "measure.params",
    "load": "sources.loaders",
    "EmbeddingTable": "engine.table",
    "Provenance": "engine.provenance",
    "Vocabulary": "engine.vocabulary",
    "resolve_ids": "engine.vocabulary",
    "Neighbors": "engine.neighbors.search",
    "LabSettings": "measure.lab",
    "LabResult": "measure.lab",
    "measure": "measure.lab",
    "Breakdown": "measure.params",
}
# Names of the API that are also subpackages (embedlab/report/, embedlab/measure/): the
# package attribute is always the function, whatever was imported before; the subpackage is
# reached by import: `from embedlab.report import views` (not `import embedlab.report.views as
# views`, which reads the attribute).
_SHADOWED = frozenset({"report", "measure"})

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'embedlab' has no attribute {name!r}")
    try:
        module = importlib.import_module(f".{_LAZY[name]}", __name__)
    except ModuleNotFoundError as exc:
        missing = errors.missing_extra(exc, f"embedlab.{name} and its module embedlab.{_LAZY[name]}")
        if missing is None:
            raise
        raise missing from exc
    value = getattr(module, name)
    if name in _SHADOWED:
        globals()[name] = value  # kept: importing the subpackage later must not replace it
    return value


# The lazy modules that need NumPy (the models extra) to import; the others need the standard library only.
_NEED_NUMPY = frozenset({"engine.table", "engine.neighbors.search", "sources.loaders"})


def __dir__() -> list[str]:
    """The public names usable here (those of a missing extra left out, so that help() can read every
    name it lists), the dunders and the subpackages imported so far."""
    numpy = importlib.util.find_spec("numpy") is not None
    public = {name for name, module in _LAZY.items() if numpy or module not in _NEED_NUMPY}
    loaded = {name for name, value in globals().items()
              if isinstance(value, types.ModuleType) and value.__name__.startswith(f"{__name__}.")}
    return sorted({"__version__", *public, *loaded, *(name for name in globals() if name.startswith("__"))})


class _Package(types.ModuleType):
    """The package module: an API function keeps its name when its same-named subpackage is imported."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            return  # the import system binding embedlab.report/measure: sys.modules keeps the subpackage
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
