"""The views of the commands other than ``report``: params, demo, positions, encode, neighbors, hubs,
compress, graph, audit.

Each takes the result its measurement returned and writes terminal text; JSON is
``formats.to_json(result)`` for every command (``result.to_dict()``). Nothing is
computed here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from ..errors import brief
from ..measure.params import STORED
from .audit import (advice_text, audit_words, finding_text, ids_text, indicator_text, intro_text, resize_text,
                    rule_text, undertrained_text, verdict_text, SHOWN)
from .diff import (alignment_text, changes_text, diff_words, geometry_rows, moved_rows, new_row_cells, new_rows_text,
                   overlap_rows, overlap_text, removed_cells, rows_text, tables_text)
from .formats import (TERMINAL, source_name, cut_text, human, percent, round3, row_label, shape_text,
                      fixed, human_bytes, human_count, number, significant, terminal_table)

if TYPE_CHECKING:  # only for the annotations: these modules need NumPy / torch
    from ..measure.hubs import HubsResult
    from ..measure.encode import Encoding
    from ..measure.neighbors import NeighborsResult, NeighborsStream
    from ..measure.compress import CompressResult
    from ..measure.demo import DemoResult
    from ..measure.dimensions import DimensionPlan
    from ..measure.params import Breakdown, Count, Growth
    from ..measure.positions import PositionComparison

__all__ = ["params_terminal", "demo_terminal", "positions_terminal", "encode_terminal", "neighbors_terminal",
           "neighbors_terminal_stream", "hubs_terminal", "compress_terminal", "graph_terminal", "audit_terminal", "diff_terminal"]


def params_terminal(count: Count, growth: Growth) -> str:
    """Three blocks: where the numbers come from, the breakdown, and the growth side by side.

    Every count and byte size shows in human units (``11.72M``, ``44.71 MiB``)
    with the exact int beside it.
    """
    b = count.breakdown
    facts = [("source", f"{count.source} {count.path}" if count.path else count.source),
             ("table", f"V={b.V:,} x D={b.D:,}" + (f" ({count.tensors['token']})" if "token" in count.tensors else "")),
             ("positions", count.positions + (f", T_max={count.T_max:,}" if count.T_max is not None else "")),
             ("token types", f"{count.type_vocab:,}"),
             ("tied", f"{number(b.tied)}: {count.tie_evidence}")]
    if count.reader:
        facts.append(("read", count.reader))
    facts += [(f"key for {what}", key) for what, key in count.keys.items() if what != "tied"]  # tied: shown above
    facts += [("file counted", name) for name in count.files]
    facts += [("file left out", f"{name}: another copy, which transformers does not load") for name in count.left_out]
    if count.stored_twice:
        facts.append(("stored twice", f"{count.tensors['head']}: counted once"))
    if count.conflict:
        facts.append(("CONFLICT", count.conflict))
    facts += [("buffer", f"{buf.name} {buf.shape} {buf.dtype}: {buf.elements:,} elements, {buf.bytes:,} bytes, "
                         f"{buf.reason}; not a parameter") for buf in count.buffers]
    if count.stored_bytes is not None:
        facts.append(("stored bytes", human(count.stored_bytes, human_bytes) + ": every tensor in the files"))
    blocks = [terminal_table(facts), _parts_table(b, count)]
    if count.plan is not None:
        blocks.append(_plan_tables(count.plan))
    return "\n".join([*blocks, _growth_table(growth)])


_PART_NAMES = {"embedding": "embedding tables", "attention": "attention", "feed_forward": "feed-forward",
               "norms": "norms", "head": "output head", "other": "other"}


def _plan_tables(plan: "DimensionPlan") -> str:
    """The widths D runs through (with the key each came from) and the parameters by part with their shares."""
    widths = [("D (d_model)", plan.D, ""), ("h (attention heads)", plan.heads, plan.keys.get("heads", "")),
              ("d_k (head width)", plan.head_dim, plan.keys.get("head_dim", "")),
              ("h_kv (key/value heads)", plan.kv_heads, plan.keys.get("kv_heads", "")),
              ("d_ff (feed-forward)", plan.d_ff, plan.keys.get("d_ff", "")),
              ("L (layers)", plan.layers, plan.keys.get("layers", ""))]
    rows = [(name, "unknown" if value is None else f"{value:,}", key) for name, value, key in widths]
    text = f"dimension plan: {plan.source}\n" + terminal_table(rows, headers=("width", "value", "from"))
    if plan.parts is None:
        return text + "parameters by part: unknown (the model was not built; install the hf extra)\n"
    shares = plan.shares() or {}
    cells = [(_PART_NAMES.get(part, part), human_count(n), f"{n:,}", percent(shares[part])) for part, n in plan.parts.items()]
    cells.append(("total", human_count(plan.total or 0), f"{plan.total:,}", percent(1.0 if plan.total else 0.0)))
    return text + "\n" + terminal_table(cells, headers=("part of the model", "parameters", "exact", "share"))


def _parts_table(b: Breakdown, count: Count) -> str:
    """Each part's parameters and bytes in ``b.dtype``; for a GGUF file, its bytes as stored too (with the
    type of each part: in the bytes' own column where they are priced as stored)."""
    byte = b.bytes
    head_note = " (tied: the token table)" if b.tied and not b.head else ""
    rows = [("token table", b.token, byte.token), ("position table", b.position, byte.position),
            ("token-type table", b.token_type, byte.token_type), ("output head" + head_note, b.head, byte.head)]
    cells = [(label, human_count(n), f"{n:,}", human_bytes(nb), f"{nb:,}") for label, n, nb in rows]
    if b.other is None:
        cells.append(("other", "unknown", "-", "-", "-"))
    else:
        cells.append(("other", human_count(b.other), f"{b.other:,}", human_bytes(byte.other or 0), f"{byte.other:,}"))
    total = "total" if b.other is not None else "total (tables only)"
    cells.append((total, human_count(b.total), f"{b.total:,}", human_bytes(byte.total), f"{byte.total:,}"))
    headers = ("part", "parameters", "exact", f"bytes ({_dtype_label(b.dtype)})", "exact bytes")
    if count.file_bytes is not None:  # the file's own storage types, beside the named dtype
        stored, types = count.file_bytes, count.file_types
        column = [(stored.token, "token"), (stored.position, "position"), (stored.token_type, "token_type"),
                  (stored.head, "head"), (stored.other, "other"), (stored.total, None)]
        as_stored = b.dtype == STORED  # the bytes column is the file's: the types go beside it, no second column
        cells = [(*(row[:-1] if as_stored else row), f"{n:,}" + (f" ({types[part]})" if part in types else ""))
                 for row, (n, part) in zip(cells, column)]
        headers += () if as_stored else ("bytes in the file",)
    cells.append(("tables' share", percent(b.share), *[""] * (len(headers) - 2)))
    return terminal_table(cells, headers=headers)


def _growth_table(g: Growth) -> str:
    by = f"x{g.factor}" if g.factor is not None else "to target"
    rows = []
    for name, now, bigger, added, added_bytes in (
            ("tied", g.tied_now, g.tied_bigger, g.tied_added, g.tied_added_bytes),
            ("untied", g.untied_now, g.untied_bigger, g.untied_added, g.untied_added_bytes)):
        # Only the tables grow with V, so the tables and the total grow by the same count.
        total = "total" if now.other is not None else "total (tables only)"
        rows += [(f"{name}: tables", human(now.tables), human(bigger.tables), human(added, sign=True)),
                 (f"{name}: {total}", human(now.total), human(bigger.total), human(added, sign=True)),
                 (f"{name}: bytes ({_dtype_label(now.dtype)})", human(now.bytes.total, human_bytes),
                  human(bigger.bytes.total, human_bytes), human(added_bytes, human_bytes, sign=True)),
                 (f"{name}: tables' share", percent(now.share), percent(bigger.share), "")]
    rows.append(("saved by tying", human(g.saved), human(g.bigger_saved), ""))
    return terminal_table(rows, headers=(f"vocabulary {by}", f"V={g.V:,}", f"V={g.bigger_V:,}", "difference"))


def _dtype_label(dtype: str) -> str:
    """What bytes are counted in, as a column names it: ``int8``, or ``as stored`` (each part in its file's type)."""
    return "as stored" if dtype == STORED else dtype


def demo_terminal(result: "DemoResult") -> str:
    """``embedlab demo``: shapes, parameters, cosine by offset, wavelength bands."""
    s = result.settings
    lines = [f"embedlab demo: V={s['vocab_size']}, D={s['d_model']}, T_max={s['max_context_length']}, "
             f"B={s['batch_size']}, T={s['seq_len']}, seed {s['seed']}", "", "shape contract: (B, T) ids -> (B, T, D)"]
    lines.append(terminal_table([(name, shape_text(shape)) for name, shape in result.shapes.items()], ("tensor", "shape")))
    lines.append(f"learned input[b, t] == E[ids[b, t]] + P[t]: max |diff| = {number(result.max_abs_composition_error)}")
    lines += ["", "parameters each module adds"]
    lines.append(terminal_table([(name, f"{count:,}") for name, count in result.parameters.items()],
                                ("module", "parameters")))
    lines.append("mean cosine between positions k apart (neighbour_cosine_curve)")
    rows = [(k, fixed(a, 4, sign=True), fixed(b, 4, sign=True))
            for k, a, b in zip(result.offsets, result.learned_curve, result.sinusoidal_curve)]
    lines.append(terminal_table(rows, ("k", "learned", "sinusoidal")))
    steps = len(result.offsets) - 1
    lines.append(f"decreasing steps: learned {result.learned_decreasing_steps}/{steps} (random rows at "
                 f"initialisation), sinusoidal {result.sinusoidal_decreasing_steps}/{steps}")
    bands = result.wavelengths
    lines += ["", f"sinusoidal wavelength bands (D={s['d_model']}, base {number(s['base'])}): {len(bands)} bands from "
              f"{bands[0]:.4g} to {bands[-1]:.4g} positions; {result.bands_longer_than_context} longer than "
              f"T_max={s['max_context_length']}"]
    lines += _wrapped([f"{w:.4g}" for w in bands])
    lines += ["", f"learned positions stop at T_max: {result.too_long_error}"]
    lines += [f"note: {note}" for note in result.notes]
    return "\n".join(lines) + "\n"


def positions_terminal(result: "PositionComparison") -> str:
    """``embedlab positions``: a learned position table against the sinusoidal one."""
    name = source_name(result.source) if result.source else "learned"
    L, S, v = result.learned, result.sinusoidal, result.verdict
    lines = [f"embedlab positions: {name} position table ({result.T_max}, {result.D}) against the sinusoidal "
             f"table of the same size (base {number(result.base)})", "",
             "adjacent-position cosine, rows p and p+1"]
    rows = [("mean", fixed(L.adjacent_mean, 4), fixed(S.adjacent_mean, 4)),
            ("min (at p)", f"{fixed(L.adjacent_min, 4)} ({L.adjacent_min_position})",
             f"{fixed(S.adjacent_min, 4)} ({S.adjacent_min_position})")]
    rows += [(f"p {a}-{b - 1}", fixed(m, 4), fixed(n, 4)) for (a, b, m), (_, _, n) in zip(L.windows, S.windows)]
    lines.append(terminal_table(rows, ("", name, "sinusoidal")))
    lines.append("mean cosine of rows p and p+k")
    rows = [(k, fixed(a, 4, sign=True), fixed(b, 4, sign=True)) for k, a, b in zip(L.offsets, L.by_offset, S.by_offset)]
    lines.append(terminal_table(rows, ("k", name, "sinusoidal")))
    lines.append(f"decreasing steps: {name} {L.decreasing_steps}/{v.steps}, sinusoidal {S.decreasing_steps}/{v.steps}")
    word = "smooth" if v.smooth else "not smooth"
    lines.append(f"verdict: {word}. Neighbouring positions have mean cosine {fixed(v.adjacent_mean, 4)} (smooth "
                 f"needs >= {number(v.threshold)}; independent random rows: 0 +- {fixed(v.random_spread, 4)}); "
                 f"likeness {'falls' if v.decays else 'does not fall'} from {fixed(L.by_offset[0], 4, sign=True)} at "
                 f"k={L.offsets[0]} to {fixed(L.by_offset[-1], 4, sign=True)} at k={L.offsets[-1]}.")
    lines += [f"note: {note}" for note in result.notes]
    return "\n".join(lines) + "\n"


def encode_terminal(result: "Encoding") -> str:
    """``embedlab encode``: a row per token with the first values and norm of each vector."""
    name = source_name(result.source)
    lines = [f"embedlab encode: {name}, {len(result.texts)} text(s) -> (B, T, D) = {shape_text(result.shape)}",
             "input = " + " + ".join(result.summands)]
    if "projected" in result.summands:
        lines.append("projected = the Linear E -> D of the token vector; the first block sees input")
    if "layer_norm" in result.components:
        lines.append("layer_norm = LayerNorm(input)" + ("" if "projected" in result.components
                                                        else "; the first block sees layer_norm"))
    if "projected" in result.components and "projected" not in result.summands:
        lines.append(f"projected = the Linear E -> D of {result.components[-2]}; the first block sees projected")
    numbered = result.position_offset != 0  # the row of the position table differs from t: show it
    typed = "token_type" in result.components  # a type id means nothing where the family has no token-type table
    headers = ("t", *(("pos id",) if numbered else ()), "token", "id", *(("type",) if typed else ()),
               *(_VECTOR_HEADERS.get(c, c) for c in result.components))
    for b, text in enumerate(result.texts):
        cut = f", cut from {result.original_lengths[b]}" if result.original_lengths[b] != result.lengths[b] else ""
        lines += ["", f"text {b + 1}: {text!r} ({result.lengths[b]} tokens{cut})"]
        rows = [(r.position, *((r.position_id,) if numbered else ()),
                 cut_text(r.token) + (" (pad)" if r.padding else ""), r.id, *((r.type_id,) if typed else ()),
                 *(_vector(r.vectors[c]) for c in result.components)) for r in result.rows if r.sequence == b]
        lines.append(terminal_table(rows, headers).rstrip("\n"))
    if result.same_token:
        lines += ["", "same token, different position"]
        for m in result.same_token:
            lines.append(f"  {brief(m.token)} (id {m.id}): text {m.first[0] + 1} position {m.first[1]} and text "
                         f"{m.second[0] + 1} position {m.second[1]}: token vectors max |diff| "
                         f"{number(m.token_max_abs_diff)}; input vectors max |diff| "
                         f"{fixed(m.input_max_abs_diff, 4)}, "
                         f"cosine {fixed(m.input_cosine, 4)}")
    lines += ["", f"final shape (B, T, D) = {shape_text(result.shape)}"]
    lines += [f"note: {note}" for note in result.notes]
    return "\n".join(lines) + "\n"


def neighbors_terminal(result: NeighborsResult, *, memory: bool = False) -> str:
    """For each query, its lists side by side: rank, row, score, the row's norm.

    Each list's scores, and its norms, with one number of decimals: 4 significant
    digits of the column's largest (``formats.significant``, as the projector page:
    a small dot product reads 0.003812, not 0.0038); the table's median and largest
    row norms in the heading, to read the norms against. The head of a tied
    model is named with "(tied: the token table)", as its JSON says. With ``memory``, the
    search's plan against its budget and the table's resident cost follow
    (``memory_lines``).
    """
    return "".join(_neighbors_pieces(result, [result.queries], lambda: result.memory, memory=memory))


def neighbors_terminal_stream(stream: NeighborsStream, *, memory: bool = False) -> Iterator[str]:
    """``neighbors_terminal`` of a stream's lists, written a block of queries at a time as they come.

    Joined, the pieces are ``neighbors_terminal`` of ``stream.result(every block)``.
    """
    return _neighbors_pieces(stream, stream.blocks, stream.memory, memory=memory)


def _neighbors_pieces(head: Any, blocks: Iterable[Sequence[Any]], searched: Callable[[], Any], *,
                      memory: bool) -> Iterator[str]:
    """The heading, each block's queries, then (``searched()`` read after the blocks) the memory and the notes."""
    tied = " (tied: the token table)" if head.source.get("part") == "head" and head.source.get("tied") else ""
    (median,), (largest,) = significant([head.median_norm]), significant([head.max_norm])  # each on its own
    yield f"{source_name(head.source)}{tied}: k={head.k}; row norms: median {median}, max {largest}\n"
    headers = ["#"] + [h for m in head.metrics for h in (m, "score", "norm")]
    for block in blocks:
        for q in block:
            what = q.query if q.id is None else row_label(q.token, q.id)
            columns = [[str(rank + 1) for rank in range(head.k)]]
            for m in head.metrics:
                listed = q.lists[m][:head.k]
                columns += [[row_label(row.token, row.id) for row in listed], significant([r.score for r in listed]),
                            significant([r.norm for r in listed])]
            rows = list(zip(*columns))
            yield (f"\nquery {what}, norm {significant([q.norm])[0]}\n"
                   + terminal_table(rows, headers).rstrip("\n") + "\n")
        del block  # not held while the next block is searched
    tail = (memory_lines(searched()) if memory else []) + [f"note: {note}" for note in head.notes]
    if tail:  # after a blank line, as every query's table
        yield ("\n" + "\n".join(tail)).rstrip("\n") + "\n"


def hubs_terminal(result: HubsResult, *, memory: bool = False) -> str:
    """The most listed rows under each metric, the longest rows, and the correlations.

    With ``memory``, the searches' plans and the resident cost follow (``memory_lines``).
    """
    sample = "every token" if result.seed is None else f"sampled with seed {result.seed}"
    dot, cos = result.metrics["dot"], result.metrics["cosine"]
    lines = [
        f"hubs of {source_name(result.source)}: V={result.V:,}, D={result.D:,}, k={result.k:,}, "
        f"{result.n_queries:,} queries ({sample})",
        f"Spearman correlation of row norm with k-occurrence: dot {number(round3(dot.spearman_norm))}, "
        f"cosine {number(round3(cos.spearman_norm))}",
        "",
    ]
    for m in (dot, cos):
        lines.append(f"{m.metric}: the rows in the most lists (an even share is {result.even_share:.3g}; "
                     f"skewness {number(round3(m.skewness))}, {m.never_listed:,} row{'s' * (m.never_listed != 1)} in no list; "
                     f"{m.seconds:.1f} s)")
        norms = significant([h.norm for h in m.top])
        rows = [[str(r + 1), row_label(h.token, h.id), f"{h.lists[m.metric]:,}", norms[r], str(h.norm_rank)]
                for r, h in enumerate(m.top)]
        lines += [terminal_table(rows, ["rank", "row", "lists", "norm", "norm rank"]).rstrip("\n"), ""]
    lines.append(f"the {len(result.longest)} longest rows and the lists they enter")
    norms = significant([h.norm for h in result.longest])
    rows = [[str(h.norm_rank), row_label(h.token, h.id), norms[r], f"{h.lists['dot']:,}", f"{h.lists['cosine']:,}"]
            for r, h in enumerate(result.longest)]
    lines.append(terminal_table(rows, ["norm rank", "row", "norm", "dot lists", "cosine lists"]).rstrip("\n"))
    lines.append(f"together they enter {dot.longest_rows_lists:,} of {result.n_queries:,} dot lists "
                 f"and {cos.longest_rows_lists:,} cosine lists")
    lines += memory_lines(result.memory) if memory else []
    lines += [f"note: {note}" for note in result.notes]
    return "\n".join(lines) + "\n"


def memory_lines(memory: Any) -> list[str]:
    """Each search's working memory against the budget, and the table's resident cost beside it; a line
    for what reading the table cost where a source recorded it (``load_line``), and one for which screen
    each search runs and why (where its plan says).

    ``memory`` is a ``footprint.SearchMemory`` (or None: no lines).
    """
    if memory is None:
        return []
    plans = ", ".join(f"{m} {human_bytes(p['bytes'])} ({_plan_kind(p)}, {p['queries']:,} x {p['rows']:,} "
                      f"{'block pairs' if p.get('method') else 'blocks'}, "
                      f"{p['workers']} worker{'s' * (p['workers'] != 1)})" for m, p in memory.plans.items())
    r = memory.resident
    parts = [f"table {human_bytes(r['table'])}{' (memory-mapped)' if r['mapped'] else ''}"]
    parts += [f"{name} {human_bytes(r[key])}" for name, key in (("position tables", "positions"),
                                                                   ("lengths", "norms"), ("int16 codes", "codes"),
                                                                   ("bf16 rows", "bf16")) if r.get(key)]
    reasons: dict[str, list[str]] = {}  # why -> the metrics it is said of, each said once
    for m, p in memory.plans.items():
        if p.get("why"):
            reasons.setdefault(p["why"], []).append(m)
    why = "; ".join(f"{' and '.join(ms)}: {text}" for text, ms in reasons.items())
    return [f"working memory of each search, planned at most (budget {human_bytes(memory.budget)}): {plans}; "
            f"outputs {human_bytes(memory.outputs)}, not counted",
            f"resident, outside the budget: {' + '.join(parts)} = {human_bytes(r['total'])}",
            *([load_line(r["load"])] if r.get("load") else []),
            *([f"screen: {why}"] if why else [])]


def _plan_kind(plan: dict[str, Any]) -> str:
    """``"float screen"``, or the self-join that ran (``"bf16 self-join"``) where every row's lists came from one."""
    return plan.get("method") or f"{plan['screen']} screen"


def load_line(load: dict[str, Any]) -> str:
    """One line: what reading the table cost (``load_cost.LoadCost.to_dict()``), seconds and bytes of each step."""
    lengths = ", row lengths in the same pass" if load["lengths"] else ""
    vocabulary = ("" if load.get("vocabulary_seconds") is None
                  else f"; vocabulary {load['vocabulary_seconds']:.2f} s")
    kept = "" if load.get("widened", True) else " (kept as bfloat16, widened to float32 as it is read)"
    threads = f"on {load['threads']} thread{'s' * (load['threads'] != 1)}"
    beside = f"(at most {human_bytes(load['scratch_bytes'])} beside it)"
    if load.get("mapped"):  # nothing read into memory: the pass is the lengths' alone
        return (f"load: {human_bytes(load['file_bytes'])} of {load['dtype']} mapped read-only from the file as the "
                f"table{kept}, nothing copied; row lengths measured in {load['read_seconds']:.2f} s {threads} "
                f"{beside}{vocabulary}")
    return (f"load: {human_bytes(load['file_bytes'])} of {load['dtype']} read into the {human_bytes(load['table_bytes'])} "
            f"table{kept} in {load['read_seconds']:.2f} s {threads}{lengths} {beside}{vocabulary}")


_VECTOR_HEADERS = {"token": "token vector", "position": "position vector", "token_type": "type vector",
                   "input": "input (the sum)", "scaled_token": "scaled token", "layer_norm": "after LayerNorm",
                   "projected": "projected (E -> D)"}


def _vector(summary: dict[str, Any]) -> str:
    """First values and norm of one vector, as ``fixed`` writes them: ``[-0.018 +0.047 +1.00e-200 ...] |1.546|``."""
    return ("[" + " ".join(fixed(x, 3, sign=True) for x in summary["first"])
            + f" ...] |{fixed(summary['norm'], 3)}|")


def _wrapped(cells: Sequence[str], per_line: int = 12) -> list[str]:
    return ["  " + " ".join(cells[i:i + per_line]) for i in range(0, len(cells), per_line)]


def compress_terminal(result: "CompressResult") -> str:
    """``embedlab compress``: one row per method and size, bytes beside recall@k, top-1, rho and rescored recall."""
    name = source_name(result.source) if result.source else "table"
    r = result
    lines = [f"embedlab compress: {name}, V={r.V:,} x D={r.D}, {r.n_queries:,} queries, k={r.k}; exact lists by "
             f"embedlab's exact search, each query leaving itself out"]
    headers = ("method", "size", "bytes/token", "table", f"recall@{r.k} cos", "dot", "top-1 cos", "dot",
               f"rho@{r.spearman_top} cos", "dot", f"rescored@{r.shortlist} cos", "dot")
    cells = [("full", f"{r.D} x {r.dtype}", f"{r.full_bytes_per_token:,}", human_bytes(r.full_table_bytes),
              *(["1.000"] * 6), "-", "-")]
    for row in r.rows:
        cos, dot = row.metrics["cosine"], row.metrics["dot"]
        per_token = f"{row.bytes_per_token:,.0f}" if row.bytes_per_token == int(row.bytes_per_token) \
            else f"{row.bytes_per_token:,.2f}"
        cells.append((row.method, row.size, per_token, human_bytes(row.table_bytes),
                       fixed(cos.recall, 3), fixed(dot.recall, 3), fixed(cos.top1, 3), fixed(dot.top1, 3),
                       "-" if cos.spearman is None else fixed(cos.spearman, 3),
                       "-" if dot.spearman is None else fixed(dot.spearman, 3),
                       "-" if cos.rescored_recall is None else fixed(cos.rescored_recall, 3),
                       "-" if dot.rescored_recall is None else fixed(dot.rescored_recall, 3)))
    lines.append(terminal_table(cells, headers=headers).rstrip("\n"))
    lines += [f"note: {note}" for note in r.notes]
    return "\n".join(lines) + "\n"


def graph_terminal(result: Any, *, memory: bool = False) -> str:
    """One line: the file written, its rows, and the graph's shape (``report.parquet.GraphFile``); with ``memory``,
    the search's plans and the resident cost follow (``memory_lines``: which screen ran and why)."""
    lines = [f"wrote {result.file}: {result.rows:,} rows (query_id, rank, neighbor_id, score, metric); "
             f"{source_name(result.source)}, V={result.V:,}, D={result.D}, k={result.k}, "
             f"{', '.join(result.metrics)}"]
    lines += [f"note: {note}" for note in result.notes]
    lines += memory_lines(getattr(result, "memory", None)) if memory else []
    return "\n".join(lines) + "\n"


def audit_terminal(result: Any, *, show: int = SHOWN) -> str:
    """``embedlab audit``'s summary, read in ten seconds: what is wrong (fatal first), how many, what to do;
    then each part in a few lines. English (``locales.AUDIT_WORDS["en"]``); lists show their first ``show``
    ids with their tokens (``--json`` holds them all)."""
    w = audit_words("en")
    lines = [f"embedlab audit: {intro_text(result, w, TERMINAL)}", verdict_text(result, w)]
    lines += [""] if result.findings else []  # the findings stand apart from the verdict; the parts follow one blank
    for f in result.findings:
        lines.append(f"{w['severity'][f.severity]:<8} {finding_text(f, result, w)}")
        if f.ids and show:
            lines.append(f"{'':<8} {w['ids']}: {ids_text(f.ids, result, TERMINAL, w, show)}")
        lines.append(f"{'':<8} {w['todo'].lower()}: {advice_text(f, w)}")
    blocks = ["\n".join(lines) + "\n", _audit_accounting(result, w), _audit_reachability(result, w),
              _audit_degenerate(result, w), _audit_undertrained(result, w, show)]
    tail = [f"skipped: {w['skipped_parts'][s.part]}: {s.reason}" for s in result.skipped]
    tail += [f"note: {note}" for note in result.notes]
    return "\n".join(block for block in blocks if block) + ("\n" + "\n".join(tail) + "\n" if tail else "")


def _audit_accounting(result: Any, w: dict[str, Any]) -> str:
    a, words = result.accounting, w["accounting"]
    known = (lambda x: words["unknown"] if x is None else f"{x:,}")
    counted = (lambda ids: known(None if ids is None else len(ids)))
    rows = [(words["vocab_size"], known(a.vocab_size) + (f" ({a.vocab_size_key})" if a.vocab_size_key else "")),
            (words["table_rows"], f"{a.table_rows:,}"),
            (words["head_rows"], words["tied_head"] if result.tied and a.head_rows is None else known(a.head_rows)),
            (words["tokenizer_length"], known(a.tokenizer_length)), (words["base_vocabulary"], known(a.base_vocabulary)),
            (words["id_span"], known(a.id_span)), (words["holes"], counted(a.holes)),
            (words["past_table"], counted(a.past_table)), (words["past_head"], counted(a.past_head)),
            (words["padding"], counted(a.padding)), (words["listed"], counted(a.listed)),
            (words["resize"], resize_text(result, w))]
    rule = f"rule: {rule_text(a.resize.rule, w)}\n" if a.resize is not None and a.resize.dropped else ""
    return f"{w['headings']['accounting'].lower()}\n" + terminal_table(rows) + rule


def _audit_reachability(result: Any, w: dict[str, Any]) -> str:
    r = result.reachability
    if r is None:
        return ""
    rows = [(name, f"{n:,}", w["categories"][name]) for name, n in r.counts.items()]
    return (f"{w['headings']['reachability'].lower()} (Magikarp's categories)\n"
            + terminal_table(rows, headers=w["columns"]["categories"]))


def _audit_degenerate(result: Any, w: dict[str, Any]) -> str:
    rows = [(w["parts"][d.part], f"{len(d.zero):,}", f"{len(d.nonfinite):,}",
             f"{sum(len(g) for g in d.duplicates):,} ({len(d.duplicates):,})") for d in result.degenerate]
    return f"{w['headings']['degenerate'].lower()}\n" + terminal_table(rows, headers=w["columns"]["degenerate"])


def _audit_undertrained(result: Any, w: dict[str, Any], show: int) -> str:
    u = result.undertrained
    if u is None:
        return ""
    intro = undertrained_text(result, w, TERMINAL, show)
    categories = result.reachability.category_of() if result.reachability is not None else {}
    reference = set(u.reference)
    rows = [(str(i), TERMINAL.code(t) if (t := result.token(i)) is not None else "-", categories.get(i, "-"),
             "yes" if i in reference else "no",
             *(indicator_text(u.values[name][i]) if name in u.values else "-"
               for name in (u.main, "cosine_distance", "l2_distance"))) for i in u.candidates[:show]]
    table = terminal_table(rows, headers=w["columns"]["candidates"]) if rows else ""
    more = len(u.candidates) - show
    return (f"{w['headings']['undertrained'].lower()}\n{intro}\n" + table
            + (w["more"].format(count=f"{more:,}") + "\n" if more > 0 and rows else ""))


def diff_terminal(result: Any, *, show: int | None = None) -> str:
    """``embedlab diff``'s summary: the two tables, what is shared, added and removed, how far rows moved, the
    added rows against their initialisation, the alignment; then each ranking's first ``show`` rows (default the
    result's ``top``; ``--json`` holds every row). English (``locales.DIFF_WORDS["en"]``)."""
    w = diff_words("en")
    show = result.top if show is None else show
    sentences = [rows_text(result, w), changes_text(result, w), new_rows_text(result, w), alignment_text(result, w),
                 overlap_text(result, w)]
    blocks = [f"embedlab diff: {tables_text(result, w, TERMINAL)}\n" + "".join(f"{s}\n" for s in sentences if s)]
    c, headers = result.changes, w["columns"]["moved"]
    if c is not None and (~c.equal).any():
        blocks.append(_titled(w["headings"]["most_moved"], moved_rows(result, c.most(show), w, TERMINAL), headers))
        if (~c.equal).sum() > show:  # fewer moved rows than a ranking shows: the least moved are the most moved
            blocks.append(_titled(w["headings"]["least_moved"], moved_rows(result, c.least(show), w, TERMINAL),
                                  headers))
    if result.new is not None:
        cells = new_row_cells(result, w, TERMINAL, show)
        blocks.append(_titled(f"{w['headings']['new_rows']} ({w['new_columns_note']})", cells, w["columns"]["new_rows"],
                              more=len(result.new.ids) - show, words=w))
    if result.alignment is not None:
        blocks.append(_titled(w["headings"]["drifted"], moved_rows(result, result.most_drifted(show), w, TERMINAL),
                              headers))
    if result.overlap is not None:
        blocks.append(_titled(w["headings"]["lowest_overlap"], overlap_rows(result, result.lowest_overlap(show),
                                                                            TERMINAL), w["columns"]["overlap"]))
    if result.geometry:
        blocks.append(_titled(w["geometry"]["heading"], geometry_rows(result, w), w["geometry"]["columns"]))
    if len(result.match.removed):
        blocks.append(_titled(w["headings"]["removed"], removed_cells(result, TERMINAL, show), w["columns"]["removed"],
                              more=len(result.match.removed) - show, words=w))
    tail = [f"skipped: {w['skipped_parts'][s.part]}: {s.reason}" for s in result.skipped]
    tail += [f"note: {note}" for note in result.notes]
    return "\n".join(blocks) + ("\n" + "\n".join(tail) + "\n" if tail else "")


def _titled(title: str, rows: Sequence[Sequence[str]], headers: Sequence[str], *, more: int = 0,
            words: dict[str, Any] | None = None) -> str:
    """A lower-case title line, the table, and how many rows more where some were left out."""
    text = f"{title[0].lower()}{title[1:]}\n" + terminal_table(rows, headers=headers)
    return text + (words["more"].format(count=f"{more:,}") + "\n" if more > 0 and words is not None else "")
