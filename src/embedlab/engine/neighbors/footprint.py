"""Memory of a table and of its searches: the resident cost, and the working memory a search plans.

Two kinds of memory, kept apart in name and in the ``--memory`` budget:

- *resident*: what a table holds between searches, whatever the budget: its
  matrix (V, D), its position tables, and what it caches for searches, the
  row lengths (V,) float64, the integer codes (a V x D int16 copy with
  per-row scales, ``codes.RowCodes``) and the bfloat16 rows (a V x D copy at
  2 bytes, ``bf16_screen.bf16_rows``). ``EmbeddingTable.resident()``.
- *working*: what one search allocates and frees again, bounded by the
  budget (``plan.plan_search``: lengths, inverse lengths, per-row terms of
  the bound, blocks). The outputs (N, K) are neither: they are the result.

The front door (``search.Search.memory``) reports both for a measurement's
results (their ``memory`` field), from the plans it made.

Glossary: ``V`` vocabulary size, ``D`` model width, ``N`` queries, ``K`` top-k.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .plan import BlockPlan, PairPlan

__all__ = ["ResidentCost", "SearchMemory", "search_memory"]


@dataclass(frozen=True)
class ResidentCost:
    """Bytes a table holds between searches (not part of any search's budget).

    Attributes
    ----------
    table : int
        The matrix (V, D): ``V * D * itemsize``.
    positions : int
        Position and token-type tables, where the checkpoint has them.
    norms : int
        Cached row lengths (V,) float64; 0 until first used.
    codes : int
        Cached integer codes of the rows (``RowCodes.nbytes``: V x D int16
        packed in tiles of 16 rows, slot ids, scales and residual lengths);
        0 until a search builds them.
    mapped : bool
        Whether the matrix is a memory map: its pages are read from the file
        as they are touched and the system may drop them again.
    bf16 : int
        Cached bfloat16 rows (V x D x 2 bytes) of the bf16 screen; 0 until a
        search builds them.
    load : dict or None
        What reading the table from its file cost (``load_cost.LoadCost.to_dict``),
        where a source recorded it; not counted in ``total``, and left out of
        ``to_dict`` where None.
    """

    table: int
    positions: int
    norms: int
    codes: int
    mapped: bool
    bf16: int = 0
    load: dict[str, Any] | None = None

    @property
    def total(self) -> int:
        """Every count above, in bytes."""
        return self.table + self.positions + self.norms + self.codes + self.bf16

    def to_dict(self) -> dict[str, Any]:
        """The fields and ``total``, JSON-able (``load`` only where recorded)."""
        fields = asdict(self)
        if self.load is None:
            del fields["load"]
        return {**fields, "total": self.total}


@dataclass(frozen=True)
class SearchMemory:
    """What the searches of one measurement hold: the budget, each metric's plan, the table's resident cost.

    Attributes
    ----------
    budget : int
        The working-memory budget of each search, bytes (``--memory``).
    plans : dict of str to dict
        Per metric, the plan's ``bytes`` (at most ``budget``), of which
        ``fixed`` (arrays of size V or N held once), its ``screen`` and
        ``why`` (``capability.reason``, in words), block sizes ``queries`` x
        ``rows`` and ``workers``.
    outputs : int
        Bytes of one search's outputs, ids and scores (N, K): not counted in
        the budget.
    resident : dict
        ``ResidentCost.to_dict()`` after the searches.
    """

    budget: int
    plans: dict[str, dict[str, Any]]
    outputs: int
    resident: dict[str, Any]


def search_memory(budget: int, plans: dict[str, BlockPlan], n_queries: int, k: int,
                  resident: ResidentCost, pairs: dict[str, PairPlan] | None = None, method: str = "",
                  why: str = "") -> SearchMemory:
    """A ``SearchMemory`` from the plans of one measurement's searches (one per metric).

    Where every row's lists came from a self-join, ``pairs`` holds its plan per
    metric (``plan.PairPlan``), ``method`` its name (``every_row.METHODS``) and
    ``why`` the reason it was taken: those describe the metrics then (block
    pairs of ``block`` rows, ``fixed`` the pools), not the per-query plans.

    >>> from embedlab.engine.neighbors.plan import plan_blocks
    >>> plan = plan_blocks(100, 8, 5, 4, 2**20, n_queries=3)
    >>> m = search_memory(2**20, {"dot": plan}, 3, 5, ResidentCost(3200, 0, 800, 0, False))
    >>> m.outputs, m.plans["dot"]["screen"], m.resident["total"]
    (240, 'float', 4000)
    """
    described = {metric: {"bytes": p.bytes, "fixed": p.fixed, "screen": p.screen, "why": p.why,
                          "queries": p.queries, "rows": p.rows, "workers": p.workers} for metric, p in plans.items()}
    for metric, p in (pairs or {}).items():
        described[metric] = {"bytes": p.bytes, "fixed": p.pools, "screen": p.screen, "why": why, "method": method,
                             "queries": p.block, "rows": p.block, "workers": p.workers}
    return SearchMemory(budget=budget, plans=described, outputs=n_queries * k * 16, resident=resident.to_dict())
