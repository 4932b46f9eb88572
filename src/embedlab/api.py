"""The Python API: one call per command of the ``embedlab`` program.

Each function takes what the command's flags say, walks source -> measurement
and returns the frozen result the measurement returns (the object the CLI
renders), never text::

    >>> import embedlab
    >>> r = embedlab.report()                      # the seed table: standard library only
    >>> r.probe, r.cos_neighbors
    (137, [489, 85, 209, 4, 276])

A table argument (``table_or_model``) is an ``EmbeddingTable``, a model name
or path (``"seed"``, ``"minilm"``, ``"glove"``, a checkpoint folder, a
``.safetensors``/``.gguf``/``.npy`` file, GloVe/word2vec text or word2vec binary:
``sources.load(..., tensor=, words=, table=)``: ``table="head"`` for the output head),
or a list of V rows of D floats. Tokens are accepted wherever ids are
(``engine.vocabulary.resolve_ids``). Counts left at their default (``k``,
``top``) shrink to fit a small table and the result's ``notes`` say so; a
value you give is never changed, only refused.

This module imports the standard library only; NumPy, PyTorch and the data
packages are imported by the call that needs them, and a missing one is a
``MissingExtraError`` naming the extra to install.
"""

from __future__ import annotations

import inspect
import numbers
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

from . import __version__, embed, errors, sources
from .deprecation import renamed
from .engine.neighbors.defaults import DEFAULT_K, DEFAULT_MEMORY, METRICS
from .engine.vocabulary import resolve_id, respellings
from .measure import lab, model_params, params as param_counts
from .measure.lab import REPORT_K
from .measure.defaults import DEFAULT_TOP, fit_default
from .report import files, run
from .report.formats import shown_source

if TYPE_CHECKING:  # annotations only: these modules need NumPy / torch
    from .report.parquet import GraphFile
    from .engine.table import EmbeddingTable
    from .measure.audit import AuditResult
    from .measure.compress import CompressResult
    from .measure.demo import DemoResult
    from .measure.diff import DiffResult
    from .measure.encode import Encoding
    from .measure.hubs import HubsResult
    from .measure.neighbors import NeighborsResult, NeighborsStream
    from .measure.params import ParamsResult
    from .measure.positions import PositionComparison
    from .measure.projector import ProjectorResult
    from .report.export import Export

__all__ = ["report", "neighbors", "neighbors_stream", "hubs", "graph", "compress", "audit", "diff", "params", "positions", "encode", "demo", "projector", "export",
           "resolve_probe", "default_probe", "PROJECTOR_SAMPLE", "PROJECTOR_K",
           "DEFAULT_PROBE_TOKEN", "DEFAULT_PROBE_ID", "REPORT_K", "DEFAULT_MEMORY",
           "DEFAULT_BASE", "AUDIT_PERCENTILE"]

# The probe when none is given: "king" on a table whose vocabulary holds it (id 137 of
# minilm is '[unused132]', a token that means nothing), else the lab's id 137, which keeps
# the seed report as it was.
DEFAULT_PROBE_TOKEN = "king"
DEFAULT_PROBE_ID = 137
# The engine's defaults, stated here so that importing the API needs no NumPy (a test keeps them equal).
DEFAULT_BASE = 10000.0  # engine.positional.DEFAULT_BASE: the sinusoidal base

Table = Any  # EmbeddingTable | str | os.PathLike | list of rows (annotations stay importable without NumPy)


# -- report --------------------------------------------------------------------------

@renamed(growth="growth_factor")
def report(table_or_model: Table = "seed", *, probe: int | str | None = None, k: int | None = None,
           stretch_factor: float = 4.0, growth_factor: int = 2, tensor: str | None = None,
           words: str | os.PathLike | None = None, figures: bool = False, table: str = "input") -> lab.LabResult:
    """The lab report's measurements on one table (``embedlab report``).

    ``"seed"`` (the default) and a list of rows run on the reference
    (``measure.backends.ReferenceBackend``: standard library only); an
    ``EmbeddingTable`` or any other model name or path on the array code
    (``ArrayBackend``).

    Parameters
    ----------
    table_or_model : EmbeddingTable, str, os.PathLike or list of list of float
        The (V, D) table; see the module docstring.
    probe : int or str, optional
        The token every experiment is about; ``resolve_probe`` picks it when not given.
    k : int, optional
        Neighbours per list, ``1 <= k <= V - 1``; default ``REPORT_K`` (5),
        shrunk to ``V - 1`` on a smaller table with a note.
    stretch_factor : float
        What the stretched row is multiplied by, finite and above 0.
    growth_factor : int
        Vocabulary growth factor of the parameter count, a whole number >= 1 (``growth=``, its old
        name, still works with a ``DeprecationWarning``).
    tensor, words : optional
        For a model path: the tensor name of the table asked for; a ``.npy`` table's word list.
    figures : bool
        Also measure what the HTML report's figures draw (``measure.lab.measure``'s
        ``figures``: needs NumPy and scikit-learn).
    table : {"input", "head"}
        For a model name or path: the token-embedding table (default) or the
        output head (``sources.load``); the seed table is tied, so its head is itself.

    Returns
    -------
    LabResult
        ``notes`` says what was adjusted without being asked (a default probe or k shrunk to fit), that
        the probe was found only as the table's tokenizer spells it (``Vocabulary.respell``: ALBERT's
        vocabulary stores ``표`` decomposed), and that the probe's token string is repeated in the
        vocabulary where it is (``Vocabulary.repeat_note``);
        ``run`` records embedlab's version, the date (``report.run.report_date``) and this call
        (``embedlab.report('minilm', probe='king')``; ``None`` for a table passed as an object).

    Raises
    ------
    ValueError
        ``tensor``/``words`` with ``"seed"``, a list of rows or a table; a
        setting out of range (``LabSettings``; k above V - 1 names k); a
        ragged list of rows; ``SizeError`` for a table of fewer than 2 rows.
    TokenIdError, UnknownTokenError, TypeError
        For a bad probe (``resolve_probe``). Without a probe the default is
        ``default_probe``'s, with a note where it did not fit.
    SourceError, MissingExtraError
        For a model that cannot be loaded.
    """
    call = _report_call(table_or_model, probe=probe, k=k, stretch_factor=stretch_factor, growth_factor=growth_factor,
                        tensor=tensor, words=words, figures=figures, table=table)
    backend, rows, seed, source = _lab_backend(table_or_model, tensor, words, table)
    V = backend.V
    if V < 2:
        raise errors.SizeError(f"the lab needs a table of at least 2 rows (a probe and a neighbour), got V={V}")
    k, k_notes = fit_default(k, REPORT_K, V - 1, "k", "V - 1")
    if not isinstance(k, bool) and isinstance(k, int) and k > V - 1:
        raise errors.SizeError(f"k={k} is out of range: a neighbour list of this table holds at most V - 1 = {V - 1} "
                               "ids", parameter="k", value=k, expected=f"an int in [1, V - 1 = {V - 1}]")
    probe_id, probe_notes = ((resolve_probe(rows, probe), _spelling_notes(rows, [probe])) if probe is not None
                             else default_probe(rows))
    settings = lab.LabSettings(probe=probe_id, k=k, stretch_factor=stretch_factor, growth_factor=growth_factor)
    result = lab.measure(backend, settings, seed=seed, source=source, figures=figures)
    return replace(result, notes=probe_notes + _repeat_note(rows, probe_id) + k_notes, run=run.record(call))


def _report_call(table_or_model: Table, **given: Any) -> str | None:
    """``embedlab.report('minilm', probe='king')``: the call as written (``_call_text``); the seed table, the
    default, is left out too."""
    seed = isinstance(table_or_model, str) and table_or_model == "seed"
    return _call_text(report, [] if seed else [table_or_model], given)


def _call_text(function: Callable[..., Any], positional: list[Any], given: dict[str, Any]) -> str | None:
    """``embedlab.<function>(...)`` as written, keyword arguments left at their default left out; ``None`` where
    one has no literal form (a table passed as an object, a list of rows or ids: ``report.run.call_form``)."""
    defaults = inspect.unwrap(function).__kwdefaults__  # the function itself, under ``renamed``
    changed = {name: value for name, value in given.items() if value != defaults[name]}
    return run.call_form(f"embedlab.{function.__name__}", positional, changed)


def resolve_probe(table: Table, probe: int | str | None = None) -> int:
    """The probe's token id: ``probe`` resolved, else ``"king"`` where the vocabulary holds it, else id 137.

    Parameters
    ----------
    table : EmbeddingTable or list of list of float
        The table the probe is a token of (a list of rows has no vocabulary).
    probe : int or str, optional
        A token id or a token string (``engine.vocabulary.resolve_ids``).

    Raises
    ------
    TokenIdError
        (an ``IndexError``) for an id outside ``[0, V)``, and when no probe is
        given, the vocabulary lacks "king" and V <= 137 (the message asks for a probe).
    UnknownTokenError, TypeError
        For a bad probe, as ``resolve_ids``.

    >>> resolve_probe([[1.0, 0.0], [0.0, 1.0]], "id:1")
    1
    """
    if probe is None:
        return default_probe(table)[0]
    V, vocabulary = _size_and_vocabulary(table)
    return resolve_id(probe, V, vocabulary, parameter="probe")


def default_probe(table: Table) -> tuple[int, tuple[str, ...]]:
    """The probe when none is given, and the note that says so where the default did not fit.

    ``"king"`` where the table's vocabulary holds it (id 137 of minilm is
    ``[unused132]``, a token that means nothing), else the lab's id 137 (the
    seed report's probe), else, on a table of V <= 137 rows, id 0 with a note.

    Raises ``TokenIdError`` for a table without rows.

    >>> default_probe([[1.0, 0.0], [0.0, 1.0]])
    (0, ('probe = 0: the default id 137 is beyond V = 2',))
    """
    V, vocabulary = _size_and_vocabulary(table)
    if vocabulary is not None and DEFAULT_PROBE_TOKEN in vocabulary.token_to_index:
        return vocabulary.token_to_index[DEFAULT_PROBE_TOKEN], ()
    if V > DEFAULT_PROBE_ID:
        return DEFAULT_PROBE_ID, ()
    if V < 1:
        raise errors.TokenIdError("the table has no rows (V=0): there is no token to probe")
    return 0, (f"probe = 0: the default id {DEFAULT_PROBE_ID} is beyond V = {V}",)


def _spelling_notes(table: Table, queries: Sequence[Any]) -> tuple[str, ...]:
    """A note for each typed token found only as the table's tokenizer spells it (``vocabulary.respellings``)."""
    _, vocabulary = _size_and_vocabulary(table)
    return tuple(r.note for r in respellings(queries, vocabulary))


def _repeat_note(table: Table, probe: int) -> tuple[str, ...]:
    """The note that the probe's token string is repeated in the vocabulary, where it is."""
    _, vocabulary = _size_and_vocabulary(table)
    note = None if vocabulary is None else vocabulary.repeat_note(probe)
    return () if note is None else (note,)


def _size_and_vocabulary(table: Table) -> tuple[int, Any]:
    """(V, the vocabulary or None) of an EmbeddingTable or a list of rows."""
    if isinstance(table, (list, tuple)):
        return len(table), None
    return table.V, table.vocabulary


def _lab_backend(source: Table, tensor: Any, words: Any, part: str) -> tuple[Any, Any, int | None, dict[str, Any] | None]:
    """(backend, the table the probe is resolved on, seed, provenance), as ``cli/report.py`` builds them.

    The seed table's head (``part="head"``) is the seed table, loaded as a model: it is tied."""
    seeded = isinstance(source, str) and source == "seed"
    if (seeded and part == "input") or isinstance(source, (list, tuple)):
        if tensor is not None or words is not None:
            raise ValueError("tensor= and words= apply to a model path, not to 'seed' or a list of rows")
        _check_table(source, part)
        seeded = isinstance(source, str)
        rows = embed.make_table(embed.VOCAB, embed.DIM, embed.SEED) if seeded else source
        return lab.ReferenceBackend(rows), rows, embed.SEED if seeded else None, None
    loaded = _table(source, tensor, words, part)
    return lab.ArrayBackend(loaded), loaded, None, loaded.provenance.to_dict()


# -- neighbours and hubs -------------------------------------------------------------

def neighbors(table_or_model: Table, queries: int | str | Sequence[int | str] = (), *, k: int | None = None,
              metrics: Sequence[str] = METRICS, vectors: Any = None, memory: int | None = None,
              device: str | None = None, tensor: str | None = None, words: str | os.PathLike | None = None,
              table: str = "input") -> NeighborsResult:
    """Nearest tokens by cosine and by dot, side by side (``embedlab neighbors``).

    Parameters
    ----------
    table_or_model : EmbeddingTable, str, os.PathLike or list of list of float
    queries : int, str or sequence of them
        Token ids or token strings; one query or many. Each leaves out its own id.
    k : int, optional
        Rows per list; default 10, shrunk to ``V - 1`` (``V`` for vectors only) with a note.
    metrics : sequence of {"cosine", "dot"}
    vectors : array_like (D,) or (N, D), or a path to a ``.npy`` file, optional
        Query vectors; they leave nothing out.
    memory : int, optional
        Working memory of each search, bytes (default ``DEFAULT_MEMORY``, 256 MiB).
    device : str, optional
        A torch device (``"cpu"``, ``"cuda"``) for the searches' screens; the lists do not change.
    tensor, words, table : optional
        For a model name or path, as ``sources.load``: the tensor, a ``.npy`` table's word list, and
        ``"input"`` (the token-embedding table, default) or ``"head"`` (the output head).

    Returns
    -------
    NeighborsResult
        As ``measure.neighbors.neighbor_lists``; it names the errors it raises.

    >>> r = neighbors([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]], 2)
    >>> r.k, r.notes, [x.id for x in r.queries[0].lists["dot"]]
    (2, ('k = 2: the default 10 shrunk to V - 1',), [1, 0])
    """
    with errors.needs_extra("neighbour lists"):
        from .measure import neighbors as measure
    table, items, vectors = _neighbor_queries(table_or_model, queries, vectors, tensor, words, table)
    return measure.neighbor_lists(table, items, k, metrics, vectors=vectors, memory=memory, device=device)


def neighbors_stream(table_or_model: Table, queries: int | str | Sequence[int | str] = (), *, k: int | None = None,
                     metrics: Sequence[str] = METRICS, vectors: Any = None, memory: int | None = None,
                     device: str | None = None, tensor: str | None = None,
                     words: str | os.PathLike | None = None, table: str = "input") -> NeighborsStream:
    """``neighbors``, its lists handed out a block of queries at a time: what ``embedlab neighbors`` writes.

    The same parameters and lists as ``neighbors``; the result is a
    ``measure.neighbors.NeighborsStream`` whose ``blocks`` are searched as
    they are read, so that a renderer writes each block as it comes and
    memory holds one block of lists, whatever the number of queries. Every
    check (k, the queries, the budget) is made by this call, before any list.

    >>> s = neighbors_stream([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]], [0, 1, 2], k=1, metrics=["dot"])
    >>> [q.lists["dot"][0].id for block in s.blocks for q in block]
    [1, 0, 1]
    """
    with errors.needs_extra("neighbour lists"):
        from .measure import neighbors as measure
    loaded, items, vectors = _neighbor_queries(table_or_model, queries, vectors, tensor, words, table)
    return measure.neighbor_stream(loaded, items, k, metrics, vectors=vectors, memory=memory, device=device)


def _neighbor_queries(table_or_model: Table, queries: Any, vectors: Any, tensor: Any,
                      words: Any, table: str) -> tuple[EmbeddingTable, list[Any], Any]:
    """The table (``table``: the input table or the output head), the queries as a list (one query or many)
    and the vectors (a ``.npy`` path read)."""
    loaded = _table(table_or_model, tensor, words, table)
    items = [queries] if isinstance(queries, (str, numbers.Integral)) else list(queries)  # one query or many
    if isinstance(vectors, (str, os.PathLike)):
        vectors = sources.load_vectors(vectors)
    return loaded, items, vectors


def hubs(table_or_model: Table, *, k: int | None = None, queries: int | None = None, seed: int = 0,
         top: int | None = None, memory: int | None = None, progress: Callable[[int], None] | None = None,
         scheduler: Any = None, device: str | None = None,
         tensor: str | None = None, words: str | os.PathLike | None = None, table: str = "input") -> HubsResult:
    """Rows that enter the most neighbour lists, by dot and by cosine (``embedlab hubs``).

    Parameters
    ----------
    table_or_model : EmbeddingTable, str, os.PathLike or list of list of float
    k : int, optional
        Neighbours per list; default 10, shrunk to ``V - 1`` with a note.
    queries : int, optional
        N tokens sampled with ``seed`` as queries; ``None`` (default) takes every token.
    seed : int
        Seed of the sample.
    top : int, optional
        Hubs and longest rows reported; default 10, shrunk to ``V`` with a note.
    memory : int, optional
        Working memory of each search, bytes (default ``DEFAULT_MEMORY``, 256 MiB).
    progress : callable, optional
        Called with the number of queries done (2 * N in all).
    scheduler : str or distributed.Client, optional
        A Dask scheduler (``"tcp://host:8786"``) whose workers run the searches.
    device : str, optional
        A torch device (``"cpu"``, ``"cuda"``) for the searches' screens.
    tensor, words, table : optional
        For a model name or path, as ``sources.load`` (``table``: ``"input"`` or ``"head"``).

    Returns
    -------
    HubsResult
        As ``measure.hubs.measure_hubs``; it names the errors it raises.
    """
    with errors.needs_extra("hub counts"):
        from .measure import hubs as measure
    return measure.measure_hubs(_table(table_or_model, tensor, words, table), k, queries=queries, seed=seed, top=top,
                                memory=memory, progress=progress, scheduler=scheduler, device=device)


def compress(table_or_model: Table, *, methods: Sequence[str] | None = None, dims: Sequence[int] | None = None,
             queries: int | None = None, k: int | None = None, rescore: int = 4, pq_m: int | None = None,
             seed: int = 0, memory: int | None = None, progress: Callable[[int], None] | None = None,
             tensor: str | None = None, words: str | os.PathLike | None = None,
             table: str = "input") -> "CompressResult":
    """Neighbours kept against bytes saved, for PCA, truncation, int8, binary and pq (``embedlab compress``).

    Parameters
    ----------
    table_or_model : EmbeddingTable, str, os.PathLike or list of list of float
    methods : sequence of str, optional
        Of ``"pca"``, ``"truncate"``, ``"int8"``, ``"binary"``, ``"pq"``; default all (pq where faiss is installed).
    dims : sequence of int, optional
        d' for pca and truncate; default D/2, D/4, D/8.
    queries : int, optional
        N rows sampled with ``seed`` as queries; default 1,000 (V on a smaller table, with a note).
    k : int, optional
        Neighbours compared; default 10 (V - 1 on a smaller table, with a note).
    rescore : int
        int8 and binary rescore a shortlist of ``rescore * k`` exactly.
    pq_m : int, optional
        pq's sub-quantisers (dividing D); default the divisor of D nearest D / 8.
    seed : int
        Seed of the queries, PCA's row sample and pq's k-means.
    memory : int, optional
        Working memory of each search, bytes (default ``DEFAULT_MEMORY``, 256 MiB).
    progress : callable, optional
        Called with the number of searches done.
    tensor, words, table : optional
        For a model name or path, as ``sources.load`` (``table``: ``"input"`` or ``"head"``).

    Returns
    -------
    CompressResult
        As ``measure.compress.compress``; it names the errors it raises.
    """
    with errors.needs_extra("compression measurements"):
        from .measure import compress as measure
    return measure.compress(_table(table_or_model, tensor, words, table), methods=methods, dims=dims, queries=queries,
                            k=k, rescore=rescore, pq_m=pq_m, seed=seed, memory=memory, progress=progress)


# -- parameters ----------------------------------------------------------------------

# The options that belong to one form of params only; beside another form they would be ignored.
_SIZES_ONLY = ("d_model", "tied", "max_context_length", "positions", "type_vocab", "other", "heads", "layers", "d_ff")
_FORMS = {"vocab_size": "a model described by its sizes", "config": "a config.json alone",
          "model": "a safetensors checkpoint or a GGUF file"}


@renamed(V="vocab_size", D="d_model", T_max="max_context_length", factor="growth_factor", target_V="target_vocab_size")
def params(vocab_size: int | None = None, d_model: int | None = None, *,
           config: str | os.PathLike | dict | None = None, model: str | os.PathLike | None = None,
           tied: bool | None = None, max_context_length: int | None = None, positions: str | None = None,
           type_vocab: int | None = None, other: int | None = None, tensor: str | None = None,
           dtype: str | None = None, growth_factor: int | None = None, target_vocab_size: int | None = None,
           heads: int | None = None, layers: int | None = None, d_ff: int | None = None) -> "ParamsResult":
    """Parameters and bytes of the tables, tied and untied, now and at a bigger V (``embedlab params``).

    Three forms, exactly one: sizes (``vocab_size`` V and ``d_model`` D, with
    ``tied`` (default True), ``max_context_length`` (T_max, the rows of a
    learned position table), ``positions``, ``type_vocab``, ``other``, and the
    blocks' ``heads``, ``layers`` and ``d_ff`` for a dimension plan), a Hugging
    Face ``config`` (a config.json, its folder or its dict), or a safetensors
    or GGUF ``model`` (``"minilm"`` or a path; headers or tensor infos only,
    ``tensor`` to name the token table). ``dtype``: fp32 (default; a checkpoint: its own; a GGUF
    file: ``"stored"``, each tensor in its own type), fp16, bf16, int8 or int4. The bigger vocabulary is ``growth_factor`` times V (default
    2) or ``target_vocab_size``. The keywords' old names (``V``, ``D``, ``T_max``,
    ``factor``, ``target_V``) still work, with a ``DeprecationWarning``.

    Returns
    -------
    ParamsResult

    Raises
    ------
    TypeError
        For none or several forms, an option of another form (named), d_model
        missing beside vocab_size, or both growth_factor and target_vocab_size.
    SizeError, ConfigError, SourceError, DtypeError
        As ``measure.params.from_numbers`` and ``growth``, ``measure.model_params.from_config`` and
        ``from_checkpoint``, ``measure.gguf_params.from_gguf``.

    >>> r = params(512, 64)
    >>> r.count.breakdown.total, r.growth.bigger_V, r.growth.saved
    (32768, 1024, 32768)
    """
    given = {"vocab_size": vocab_size, "config": config, "model": model}
    sizes = {"d_model": d_model, "tied": tied, "max_context_length": max_context_length, "positions": positions,
             "type_vocab": type_vocab, "other": other, "heads": heads, "layers": layers, "d_ff": d_ff}
    form = _params_form(given, sizes, tensor)
    if form == "vocab_size":
        count = param_counts.from_numbers(vocab_size, d_model, tied=True if tied is None else tied,
                                      max_context_length=max_context_length, positions=positions,
                                      type_vocab=type_vocab or 0, other=other or 0, dtype=dtype or "fp32",
                                      heads=heads, layers=layers, d_ff=d_ff)
    elif form == "config":
        count = model_params.from_config(config, dtype=dtype or "fp32")
    else:
        path = sources.checkpoint_path(model)
        if path.suffix.lower() == ".gguf":  # llama.cpp: counted from its tensor infos
            with errors.needs_extra("GGUF files"):
                from .measure import gguf_params
            count = gguf_params.from_gguf(path, tensor=tensor, dtype=dtype)
        else:
            count = model_params.from_checkpoint(path, tensor=tensor, dtype=dtype)
    if growth_factor is None and target_vocab_size is None:
        growth_factor = 2
    grown = param_counts.growth(count.breakdown, growth_factor=growth_factor, target_vocab_size=target_vocab_size)
    return param_counts.ParamsResult(count, grown)


def _params_form(given: dict[str, Any], sizes: dict[str, Any], tensor: Any) -> str:
    """The one form given ("vocab_size", "config" or "model"); a TypeError naming what does not fit it."""
    forms = [name for name, value in given.items() if value is not None]
    if len(forms) != 1:
        raise TypeError(f"give exactly one of vocab_size (with d_model), config or model, got "
                        f"{', '.join(forms) or 'none'}")
    form = forms[0]
    owners = {**{name: "vocab_size" for name in _SIZES_ONLY}, "tensor": "model"}
    stray = [name for name, value in {**sizes, "tensor": tensor}.items() if value is not None and owners[name] != form]
    if stray:
        raise TypeError(f"{', '.join(stray)} {'does' if len(stray) == 1 else 'do'} not apply with {form} "
                        f"({_FORMS[form]}): " + "; ".join(f"{name} belongs with {owners[name]}" for name in stray))
    if form == "vocab_size" and sizes["d_model"] is None:
        raise TypeError("vocab_size needs d_model (the model width)")
    return form


# -- audit ---------------------------------------------------------------------------

AUDIT_PERCENTILE = 2.0  # measure.undertrained.DEFAULT_PERCENTILE, stated here so that importing the API needs no NumPy


def audit(table_or_model: Table = "minilm", *, unused: Sequence[int | range] | range = (),
          percentile: float = AUDIT_PERCENTILE, tensor: str | None = None,
          words: str | os.PathLike | None = None) -> "AuditResult":
    """Does the vocabulary agree with the table and the head? (``embedlab audit``)

    Reads the token table and the output head as stored (rows with NaN or
    infinity kept: ``sources.stored``), and the tokenizer beside them
    (``tokenizer.json`` through the tokenizers library, else the files
    transformers reads; a GGUF file's token list and token types), then
    ``measure.audit.audit``: row accounting, reachability of every token
    (Magikarp's categories), degenerate rows, and under-trained tokens (Land &
    Bartolo 2024). Without a tokenizer (a folder with no tokenizer file, word
    vectors, a GGUF file without a token list) the parts that need none run,
    and ``skipped`` says which did not and why; a tokenizer file that is there
    but cannot be read is an error, not a missing tokenizer.

    Parameters
    ----------
    table_or_model : str, os.PathLike or EmbeddingTable
        ``"minilm"`` (default), a checkpoint folder, a ``.safetensors`` or
        ``.gguf`` file, or a word-vector table.
    unused : sequence of (int or range), or range
        Ids known to be unused, added to the reference set of the under-trained indicators; a ``range``
        (``range(128002, 128256)``) is checked by its ends, never listed id by id before that.
    percentile : float
        Candidates are the reachable tokens at or under this percentile (0 to
        100) of the reachable tokens' main indicator; default 2, Magikarp's.
    tensor : str, optional
        The token table's tensor, for a checkpoint.
    words : str or os.PathLike, optional
        A ``.npy`` table's word list.

    Returns
    -------
    AuditResult
        As ``measure.audit.audit``; it names the errors it raises. ``run`` records embedlab's version, the
        date and this call (``embedlab.audit('path/to/model')``), as the lab report's does.

    Raises
    ------
    SourceError, UnsafeFormatError, MissingExtraError
        For a table that cannot be read, and for a tokenizer file that is there but is refused (not a
        regular file, past its cap, nested too deep, one the library does not load).
    """
    call = _audit_call(table_or_model, unused=unused, percentile=percentile, tensor=tensor, words=words)
    with errors.needs_extra("the audit"):
        from .sources import stored
        from .measure import audit as measure
    if isinstance(table_or_model, (str, os.PathLike)):
        tables = stored.read_stored(table_or_model, tensor=tensor, words=words)
        inventory, reason = stored.read_tokenizer(table_or_model)
    else:
        tables = stored.from_table(_table(table_or_model, tensor, words))
        inventory, reason = None, "a table passed as an object brings no tokenizer"
    given = unused if isinstance(unused, range) else tuple(unused)
    result = measure.audit(tables, inventory, unused=given, percentile=percentile, no_tokenizer=reason)
    return replace(result, run=run.record(call))


def _audit_call(table_or_model: Table, **given: Any) -> str | None:
    """``embedlab.audit('path/to/model', percentile=1.0)``: the call as written (``_call_text``)."""
    return _call_text(audit, [table_or_model], given)


# -- diff ----------------------------------------------------------------------------

def diff(a: Table, b: Table | None = None, *, table: str = "input", table_b: str | None = None,
         top: int | None = None, k: int | None = None, queries: int | None = None, seed: int = 0,
         center: bool = False, scale: bool = False, geometry: bool = True, memory: int | None = None,
         tensor: str | None = None, tensor_b: str | None = None, words: str | os.PathLike | None = None,
         words_b: str | os.PathLike | None = None) -> "DiffResult":
    """What changed between two tables, and did the new rows train? (``embedlab diff``)

    Rows shared by id (and by token string where both have a vocabulary and the ids differ), added and
    removed; per row exact equality, L2 and relative change; added rows against their initialisation
    (the old rows' mean, as transformers' mean resizing, or zero); the orthogonal map that best aligns B
    to A and each row's aligned cosine; for every shared token, the overlap of its k nearest (cosine) in A and
    in B over each whole vocabulary, with the exact search (``measure.diff.measure_diff``).

    Parameters
    ----------
    a, b : EmbeddingTable, str, os.PathLike or list of list of float
        The table before (A) and after (B), anything ``load`` reads. ``b`` left out is ``a`` itself: its
        other table (``table_b``), so ``diff("path/to/model")`` compares the token table with the output head.
    table, table_b : {"input", "head"}
        Which table of A's model, and of B's (default: ``table``, or with ``b`` left out the other one).
    top : int, optional
        Rows listed per ranking; default 10, shrunk to the smaller V with a note.
    k : int, optional
        Neighbours per list of the overlap; default 10, shrunk to the smaller V - 1 with a note; 0 leaves the
        overlap out (it searches both tables whole: the slow part on a big table).
    queries : int, optional
        The overlap of this many shared tokens, sampled with ``seed``; default every shared token.
    seed : int
        Seed of that sample.
    center, scale : bool
        Centre both tables on their mean row, and scale B, before aligning (``measure.procrustes.align``).
    geometry : bool
        Each table's isotropy (``measure.isotropy``): mean cosine of random pairs, first-component share,
        IsoScore, partition-function ratio, the mean row and all-but-the-top's effect on neighbour lists.
    memory : int, optional
        Bytes of working memory of each block of rows and each search (default ``DEFAULT_MEMORY``, 256 MiB).
    tensor, tensor_b, words, words_b : optional
        For A's and B's model path, as ``sources.load``.

    Returns
    -------
    DiffResult
        ``run`` records embedlab's version, the date and this call.

    Raises
    ------
    ChoiceError
        For a ``table`` or ``table_b`` other than "input" or "head".
    ValueError
        ``table_b`` equal to ``table`` with ``b`` left out (a table against itself); ``table="head"`` beside a
        table object or a list of rows.
    SizeError
        For ``top`` below 1.
    SourceError, MissingExtraError
        For a model that cannot be loaded.

    >>> r = diff([[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 2.0], [0.5, 0.5]])
    >>> r.changes.equal.tolist(), r.changes.l2.tolist(), r.match.added.tolist(), r.new.verdicts
    ([True, False], [0.0, 1.0], [2], ('mean',))
    """
    call = _call_text(diff, [a] if b is None else [a, b], dict(table=table, table_b=table_b, top=top, k=k,
                      queries=queries, seed=seed, center=center, geometry=geometry,
                      scale=scale, memory=memory, tensor=tensor, tensor_b=tensor_b, words=words, words_b=words_b))
    with errors.needs_extra("diffs"):
        from .measure import diff as measure
    if table_b is None:
        table_b = table if b is not None else ("head" if table == "input" else "input")
    if b is None and table_b == table:
        raise ValueError(f"table_b={table_b!r} with b left out compares the {table} table with itself: give b, or "
                         "the other table")
    loaded_a = _table(a, tensor, words, table)
    try:
        loaded_b = _table(a if b is None else b, tensor if b is None and tensor_b is None else tensor_b,
                          words if b is None and words_b is None else words_b, table_b)
    except errors.SourceError as exc:
        if b is not None or table_b != "head" or getattr(exc, "parameter", None) != "table":
            raise
        # B left out means "A's head": a table with none gets the fix, not the flag it never typed
        name = os.fspath(a) if isinstance(a, (str, os.PathLike)) else "the table"
        raise errors.SourceError(f"{name} has no output head to compare its table with (B left out means A's "
                                 "head): give a second table B (embedlab diff A B)", parameter="b", value=None,
                                 expected="a second table B: A has no output head to compare with") from None
    top, notes = fit_default(top, DEFAULT_TOP, min(loaded_a.V, loaded_b.V), "top", "the smaller V")
    k, k_notes = fit_default(k, DEFAULT_K, min(loaded_a.V, loaded_b.V) - 1, "k", "the smaller V - 1")
    result = measure.measure_diff(loaded_a, loaded_b, top=top, k=k, queries=queries, seed=seed, center=center,
                                  scale=scale, geometry=geometry, memory=memory, notes=notes + k_notes)
    return replace(result, run=run.record(call))


# -- positions, encode, demo --------------------------------------------------------

def positions(table_or_model: Table, *, base: float = DEFAULT_BASE, tensor: str | None = None,
              words: str | os.PathLike | None = None) -> PositionComparison:
    """A learned position table against the sinusoidal one of its size (``embedlab positions``).

    Returns ``measure.positions.PositionComparison``; raises ``SourceError``
    for a table without a position table (GloVe, the seed table). A
    checkpoint whose family numbers positions from a later row (RoBERTa:
    padding_idx + 1, OPT: 2) is measured on the rows its tokens use.
    """
    with errors.needs_extra("position comparisons"):
        from .measure import positions as measure
    table = _table(table_or_model, tensor, words)
    from_path = isinstance(table_or_model, (str, os.PathLike))
    rule = sources.read_input_rule(table) if from_path else None
    return measure.compare_table_positions(table, base=base, rule=rule)


def encode(model: str | os.PathLike, texts: str | Sequence[str], *, truncate: bool | None = None, show: int = 3,
           tensor: str | None = None) -> Encoding:
    """Text -> tokens -> ids -> vectors -> the (B, T, D) input, step by step (``embedlab encode``).

    Parameters
    ----------
    model : str or os.PathLike
        ``"minilm"`` or a checkpoint with its ``tokenizer.json``.
    texts : str or sequence of str
        One text, or B texts (one sequence each).
    truncate : bool or None
        ``None``: cut at the truncation length saved in tokenizer.json, as the
        tokenizer does; refuse a longer text where none is saved. ``True``:
        cut (at the saved length, else at the usable positions). ``False``:
        never cut; refuse a text longer than the saved length (with none
        saved, than the positions the model can use).
    show : int
        Leading values kept of each vector, >= 0.

    Returns
    -------
    Encoding
        As ``measure.encode.encode``; it names the errors it raises.
    """
    if not isinstance(model, (str, os.PathLike)):
        raise TypeError(f"encode needs a model name or path (its tokenizer.json lies beside the checkpoint), got "
                        f"{type(model).__name__}")
    with errors.needs_extra("input embeddings"):
        from .measure import encode as measure
    tokenizer = sources.load_tokenizer(model)  # first: a file with no tokenizer beside it says so
    table = sources.load(model, tensor=tensor)
    return measure.encode(table, tokenizer, [texts] if isinstance(texts, str) else list(texts),
                          rule=sources.read_input_rule(table), truncate=truncate, show=show)


def demo(**settings: Any) -> DemoResult:
    """The torch modules on one batch (``embedlab demo``).

    ``settings`` are the fields of ``measure.demo.DemoSettings``, each with its
    default: vocab_size=320 (V), d_model=64 (D), max_context_length=128
    (T_max), batch_size=4 (B), seq_len=32 (T), seed=11, max_offset=6,
    base=10000.0; max_offset left out shrinks to T_max - 1 on a shorter position
    table, with a note. Raises ``TypeError`` for another name and ``ValueError``
    for a size below 1; needs PyTorch (``MissingExtraError`` without it).
    """
    with errors.needs_extra("the torch modules"):
        from .measure import demo as measure
    T_max = settings.get("max_context_length", measure.DemoSettings.max_context_length)
    limit = T_max - 1 if isinstance(T_max, int) and not isinstance(T_max, bool) else 0
    max_offset, notes = fit_default(settings.pop("max_offset", None), measure.DemoSettings.max_offset, limit,
                                    "max_offset", "T_max - 1")
    return replace(measure.demo(measure.DemoSettings(max_offset=max_offset, **settings)), notes=notes)


# -- projector and export ------------------------------------------------------------

PROJECTOR_SAMPLE = 2000  # points of a projector page when neither tokens nor sample is given (V on a smaller table)
PROJECTOR_K = DEFAULT_K  # neighbours per list on the projector page: the search's default (V - 1 on a smaller table)


def projector(table_or_model: Table = "seed", *, tokens: Sequence[int | str] | None = None,
              sample: int | None = None, probe: int | str | None = None, method: str = "pca", dims: int = 2,
              k: int | None = None, seed: int = 0, metric: str | None = None, memory: int | None = None,
              progress: Callable[[int], None] | None = None, tensor: str | None = None,
              words: str | os.PathLike | None = None, table: str = "input",
              keep_degenerate: bool = False) -> ProjectorResult:
    """What the offline projector page shows (``embedlab projector``): rows, coordinates, exact neighbours.

    Render it with ``embedlab.report.projector.projector_html`` (needs plotly, the ``plots`` extra).

    Parameters
    ----------
    table_or_model : EmbeddingTable, str, os.PathLike or list of list of float
    tokens : sequence of int or str, optional
        The rows to project, instead of a sample (the probe is added where one is given).
    sample : int, optional
        Points in all: the probe, its k cosine and k dot neighbours, then rows
        drawn with ``seed``; from 2k + 1 to V. Default ``PROJECTOR_SAMPLE``
        (2,000) when no tokens are given, shrunk to V with a note.
    probe : int or str, optional
        The token the sample is drawn around and the page selects first;
        default as ``resolve_probe`` (none with ``tokens``).
    method : {"pca", "tsne", "umap"}
    dims : {2, 3}
        Coordinates per point; 3 draws a 3-D scatter.
    k : int, optional
        Neighbours per list, over the whole table; default ``PROJECTOR_K`` (10), shrunk to V - 1 with a note.
    seed : int
        Seed of the sample, t-SNE and UMAP.
    metric : {"cosine", "euclidean"}, optional
        The distance t-SNE and UMAP keep (default cosine, as the neighbour lists);
        PCA takes none (``ValueError``: it keeps euclidean variance).
    memory : int, optional
        Working memory of each search, bytes (default ``DEFAULT_MEMORY``, 256 MiB).
    progress : callable, optional
        Called with the number of rows whose lists are done (2 * n in all).
    tensor, words, table : optional
        For a model name or path, as ``sources.load`` (``table``: ``"input"`` or ``"head"``).
    keep_degenerate : bool
        Keep degenerate rows (all-zero, copies, far longer than the rest) in the
        fit and the points; by default they are left out, the probe never, and
        a note names them (``measure.projector.measure_projector``).

    Returns
    -------
    ProjectorResult
        As ``measure.projector.measure_projector``; it names the errors it raises.

    Raises
    ------
    TypeError
        For both tokens and sample.

    >>> r = projector([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [-1.0, 0.2]], probe=0)
    >>> r.ids.tolist(), r.neighbor_ids["cosine"][0].tolist(), r.notes
    ([0, 1, 2, 3], [1, 2, 3], ('k = 3: the default 10 shrunk to V - 1', 'sample = 4: the default 2000 shrunk to V'))
    """
    with errors.needs_extra("projector pages"):
        from .measure import projector as measure
    loaded = _table(table_or_model, tensor, words, table)
    if tokens is not None and sample is not None:
        raise TypeError("give tokens (the rows to project) or sample (points in all), not both")
    k, notes = fit_default(k, PROJECTOR_K, loaded.V - 1, "k", "V - 1")
    typed = ([] if probe is None else [probe]) + ([] if tokens is None else list(tokens))
    if tokens is not None:
        probe_id = None if probe is None else resolve_probe(loaded, probe)
        notes = _spelling_notes(loaded, typed) + notes
    else:
        sample, sample_notes = fit_default(sample, PROJECTOR_SAMPLE, loaded.V, "sample", "V")
        probe_id, probe_notes = (resolve_probe(loaded, probe), ()) if probe is not None else default_probe(loaded)
        notes = probe_notes + _spelling_notes(loaded, typed) + _repeat_note(loaded, probe_id) + notes + sample_notes
    return measure.measure_projector(loaded, probe=probe_id, tokens=None if tokens is None else list(tokens),
                                     sample=sample, method=method, dims=dims, k=k, seed=seed, metric=metric, memory=memory,
                                     progress=progress, notes=notes, keep_degenerate=keep_degenerate)


def export(table_or_model: Table, out: str | os.PathLike, *, format: str = "projector", limit: int | None = None,
           metadata: Sequence[str] | None = None, tensor: str | None = None,
           words: str | os.PathLike | None = None, table: str = "input") -> Export:
    """Write the table in another tool's format (``embedlab export``); both files or none.

    ``format="projector"``: ``vectors.tsv`` and ``metadata.tsv`` in ``out``, as the
    TensorBoard Embedding Projector loads them (``report.export``).

    Parameters
    ----------
    table_or_model : EmbeddingTable, str, os.PathLike or list of list of float
    out : str or os.PathLike
        The folder to write into (made where missing).
    format : {"projector"}
    limit : int, optional
        Export the first ``limit`` rows (ids 0 .. limit - 1), 1 <= limit <= V; all by default.
    metadata : sequence of {"token", "id"}, optional
        The columns of metadata.tsv; default ``("token",)``, or ``("id",)``
        for a table without vocabulary.
    tensor, words, table : optional
        For a model name or path, as ``sources.load`` (``table``: ``"input"`` or ``"head"``).

    Returns
    -------
    Export
        The files written, the rows and columns, and notes (tokens escaped).

    Raises
    ------
    ChoiceError, SizeError, ValueError, OSError
        As ``report.export.write_projector`` and ``report.files.write_atomic``;
        an ``out`` they cannot be written in (``report.files.check_writable``)
        before the table is read.
    """
    with errors.needs_extra("exports"):
        from .report import export as writer
    if format not in writer.FORMATS:
        raise errors.ChoiceError(f"unknown export format {format!r}: expected one of {', '.join(writer.FORMATS)}",
                                 parameter="format", value=format, expected=f"one of {', '.join(writer.FORMATS)}")
    files.check_writable(writer.projector_paths(out))  # a folder that cannot take them is refused before the table loads
    loaded = _table(table_or_model, tensor, words, table)
    return writer.write_projector(loaded, out, limit=limit, metadata=metadata)


def graph(table_or_model: Table, out: str | os.PathLike, *, k: int | None = None,
          metrics: Sequence[str] = METRICS, memory: int | None = None,
          progress: Callable[[int], None] | None = None, scheduler: Any = None, device: str | None = None,
          tensor: str | None = None, words: str | os.PathLike | None = None, table: str = "input") -> "GraphFile":
    """Every token's k nearest tokens, by cosine and by dot, written as one Parquet file (``embedlab graph``).

    Columns query_id (int64), rank (int32, 1 = nearest), neighbor_id (int64),
    score (float64), metric (dictionary of strings); V k rows per metric
    (``report.parquet``). The lists are ``EmbeddingTable.nearest``'s, exact;
    the file appears only once complete (Ctrl-C or an error leaves none).

    Parameters
    ----------
    table_or_model : EmbeddingTable, str, os.PathLike or list of list of float
    out : str or os.PathLike
        A ``.parquet`` file name in an existing folder.
    k : int, optional
        Neighbours per token; default 10, shrunk to ``V - 1`` with a note.
    metrics : sequence of {"cosine", "dot"}
        Default both, cosine first.
    memory : int, optional
        Working memory of the search, bytes (its O(V K) pools included; default ``DEFAULT_MEMORY``, 256 MiB).
    progress : callable, optional
        Called with the number of query rows done (V per metric).
    scheduler : str or distributed.Client, optional
        A Dask scheduler's address or client: the search runs on its workers
        (``measure.graph.measure_graph``); the file is the same.
    device : str, optional
        A torch device for the screens; the file is the same.
    tensor, words, table : optional
        For a model name or path, as ``sources.load`` (``table``: ``"input"`` or ``"head"``).

    Returns
    -------
    GraphFile

    Raises
    ------
    OutputPathError
        (a ``ValueError``) for an ``out`` that does not end in .parquet or whose folder does not exist.
    ChoiceError, SizeError
        As ``measure.graph.measure_graph``.
    """
    path = graph_path(out)
    with errors.needs_extra("the neighbour graph"):
        from .measure import graph as measure
    with errors.needs_extra("Parquet output"):
        from .report import parquet as writer
    loaded = _table(table_or_model, tensor, words, table)
    result = measure.measure_graph(loaded, k, metrics=metrics, memory=memory, progress=progress,
                                   scheduler=scheduler, device=device)
    metadata = {"k": str(result.k), "V": str(result.V), "D": str(result.D), "metrics": ",".join(result.metrics),
                # as the JSON and Markdown reports show it: never an absolute local path
                "source": None if result.source is None else shown_source(result.source), "version": __version__}
    rows = writer.write_graph(path, result.blocks, metadata=metadata)
    return writer.GraphFile(file=os.fspath(out), rows=rows, V=result.V, D=result.D, k=result.k,
                            metrics=result.metrics, source=result.source, notes=result.notes,
                            memory=None if result.memory is None else result.memory())  # as it stood at the end


def graph_path(out: str | os.PathLike) -> str:
    """``out`` checked for ``graph``: a name ending in .parquet, in a folder that exists, that may be written there.

    Raises ``OutputPathError`` (a ``ValueError``) naming the path and what was
    expected; ``OSError`` (``report.files.check_writable``) for a folder of
    that name, or a folder this process may not write in.
    """
    path = os.fspath(out)
    if not path.lower().endswith(".parquet") or os.path.basename(path) == ".parquet":
        raise errors.OutputPathError(f"{path!r} is not a .parquet file name", parameter="out", value=path,
                                     expected="a file name ending in .parquet")
    folder = os.path.dirname(path) or "."
    files.check_writable([path])  # a folder of that name, a file on its way, a folder it may not write in
    if not os.path.isdir(folder):
        raise errors.OutputPathError(f"{path!r}: folder {folder!r} does not exist", parameter="out", value=path,
                                     expected=f"a .parquet file in an existing folder ({folder!r} does not exist)")
    return path


# -- helpers -------------------------------------------------------------------------

def _table(source: Table, tensor: Any, words: Any, part: str = "input") -> EmbeddingTable:
    """An ``EmbeddingTable`` from a table, a model name or path, or a list of rows; ``part`` is the
    ``table`` argument ("input" or "head"), which only a model name or path can choose."""
    if isinstance(source, (str, os.PathLike)):
        return sources.load(source, tensor=tensor, words=words, table=part)
    if tensor is not None or words is not None:
        raise ValueError("tensor and words apply to a model name or path, not to a table")
    _check_table(source, part)
    with errors.needs_extra("real tables"):
        from .engine import table as engine
    if isinstance(source, (list, tuple)):
        return engine.EmbeddingTable.from_rows(source)
    if not isinstance(source, engine.EmbeddingTable):
        raise TypeError(f"expected an EmbeddingTable, a model name or path, or a list of rows, got "
                        f"{type(source).__name__}")
    return source


def _check_table(source: Table, part: str) -> None:
    """Refuse ``table`` other than "input" beside a table object or a list of rows: it is the table it is."""
    if part == "input":
        return
    if part != "head":  # the same words as sources.load's check, without importing NumPy
        raise errors.ChoiceError(f"unknown table {errors.brief(part)}: expected 'input' (the token-embedding table) "
                                 "or 'head' (the output head)", parameter="table", value=part,
                                 expected="input (the token-embedding table) or head (the output head)")
    raise ValueError(f"table={part!r} applies to a model name or path, not to a table object or a list of rows: "
                     "load the head with embedlab.load(model, table='head') and pass that table")


