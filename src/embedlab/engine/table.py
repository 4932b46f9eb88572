"""EmbeddingTable: the token-embedding table of a real model, in NumPy.

The array engine. It keeps every meaning of the reference (``embed.py``) on
tables of real size (V up to ~256k, D up to ~8k): token ids are ints in
``[0, V)``, lookups hand out copies, the output head reuses the very table,
zero-length vectors have cosine 0.0, neighbour lists leave the query out and
order equal scores by the smaller id, stretch returns a new table.

Glossary: ``V`` vocabulary size, ``D`` model width, ``N`` queries, ``K`` top-k,
``T_max`` rows of a position table.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ShapeError, SizeError, TokenIdError
from .bf16_matrix import Bf16Matrix, widen_bf16
from .gather import gather_rows
from .lengths import vector_norms
from .load_cost import LoadCost
from .neighbors.checks import check_vectors
from .neighbors.bf16_screen import Bf16Rows, bf16_rows
from .neighbors.codes import RowCodes, encode_rows
from .neighbors.footprint import ResidentCost
from .neighbors.search import Neighbors, Search
from .pages import file_mapped, fresh_table
from .provenance import Provenance
from .row_blocks import map_row_blocks
from .storage import readonly_matrix
from .vocabulary import Vocabulary, resolve_id, resolve_ids

__all__ = ["EmbeddingTable"]


class EmbeddingTable:
    """A (V, D) token-embedding table with its vocabulary and position tables.

    Parameters
    ----------
    matrix : array_like, shape (V, D), floating, or Bf16Matrix
        One row per token id. A read-only row-major array (a memory map
        opened for reading) is kept as is; anything else is copied once into
        a row-major array and made read-only, so no caller can change the
        table afterwards and every token's row is contiguous (a column-major
        ``.npy`` such as GloVe's would make every lookup a strided gather).
        A ``bf16_matrix.Bf16Matrix`` (a bf16 checkpoint's table as its bits)
        is kept as it is: a float32 table of dtype float32 at 2 bytes an
        entry, widened whole only where ``W_E`` is asked for (``rows``).
    vocabulary : Vocabulary or sequence of str, optional
        Token strings in id order; its length must be V.
    positions : array_like, shape (T_max, D), optional
        A learned position table, where the checkpoint has one.
    token_types : array_like, shape (n_types, D), optional
        A token-type (segment) table, where the checkpoint has one.
    provenance : Provenance, optional
        Where the table came from; ``Provenance("array")`` by default.
    norms : np.ndarray, shape (V,), float64, optional
        The rows' lengths exactly as ``lengths.vector_norms(matrix)`` measures
        them, where the caller has them (a loader measures each block while
        it widens it, ``sources.tensor_data``): kept (copied, read-only) as
        ``norms()`` instead of measured again, and, all finite, they show a
        float16/float32 matrix free of NaN and infinity, so it is not scanned
        again (``storage.readonly_matrix``). A sample of rows is measured and
        compared bit for bit; the rest are taken as given.
    load_cost : LoadCost, optional
        What reading the matrix from its file cost (a loader records it;
        ``resident().load`` reports it).

    Raises
    ------
    ShapeError
        (a ``ValueError``) if the matrix is not 2-D with V >= 1 and D >= 1, or
        the vocabulary or a position table does not fit it.
    TypeError
        If the matrix is not of a floating dtype.
    ValueError
        If a table holds NaN or infinity (names row and column), or a float64
        row whose length overflows or is a nonzero subnormal (names the row);
        if ``norms`` is not (V,) float64 or a sampled row's length differs.

    >>> t = EmbeddingTable([[1.0, 0.0], [0.0, 2.0]], vocabulary=["a", "b"])
    >>> t.V, t.D, t.lookup([1]).tolist()
    (2, 2, [[0.0, 2.0]])
    """

    def __init__(
        self,
        matrix: Any,
        *,
        vocabulary: Vocabulary | Sequence[str | None] | None = None,
        positions: Any = None,
        token_types: Any = None,
        provenance: Provenance | None = None,
        norms: np.ndarray | None = None,
        load_cost: LoadCost | None = None,
    ) -> None:
        self._provenance = provenance or Provenance("array")
        where = _where(self._provenance)
        finite = isinstance(norms, np.ndarray) and norms.dtype == np.float64 and bool(np.isfinite(norms).all())
        self._bf16: np.ndarray | None = None  # the bf16 screen's rows (V, D) uint16, built on first use
        self._widening = threading.Lock()  # a kept bf16 table is widened whole once, on first use of W_E
        if isinstance(matrix, Bf16Matrix):  # a bf16 checkpoint's table, kept as its bits (2 bytes an entry)
            if not finite:
                norms = matrix.lengths()  # (V,) a block at a time, in cache: finite lengths show finite entries
                if not np.isfinite(norms).all():
                    readonly_matrix(matrix.widened(), f"table{where}")  # raises, naming the first NaN or inf
            self._held: Any = matrix
            self._bf16 = matrix.bits.view(Bf16Rows)  # the bf16 screen's rows are the bits themselves
            self._bf16.exact = True
        else:
            self._held = readonly_matrix(matrix, f"table{where}", finite=finite)  # (V, D)
        V, D = self._held.shape
        if vocabulary is not None and not isinstance(vocabulary, Vocabulary):
            vocabulary = Vocabulary(vocabulary)
        if vocabulary is not None and len(vocabulary) != V:
            raise ShapeError(f"vocabulary has {len(vocabulary)} tokens, the table has V={V} rows")
        self._vocabulary = vocabulary
        self._positions = None if positions is None else readonly_matrix(positions, f"position table{where}", D)
        self._token_types = (None if token_types is None
                             else readonly_matrix(token_types, f"token-type table{where}", D))
        self._norms = None if norms is None else _given_norms(self._held, norms)  # (V,) float64, else computed on first use
        self._codes: RowCodes | None = None  # the integer screen's codes, built on first use
        self._load_cost = load_cost

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[float]], **kwargs: Any) -> "EmbeddingTable":
        """Build a float64 table from a list of V rows of D floats (the reference's tables).

        Raises ``ShapeError`` for a ragged or empty list of rows.
        """
        lengths = {len(r) for r in rows}
        if len(lengths) > 1:
            raise ShapeError(f"ragged table: rows have lengths {sorted(lengths)}")
        return cls(np.array(rows, dtype=np.float64), **kwargs)

    # -- what the table is -------------------------------------------------

    @property
    def W_E(self) -> np.ndarray:
        """The table, shape (V, D), read-only (assignment raises ``ValueError``).

        A bf16 checkpoint's table, kept as its bits (``bf16_matrix.Bf16Matrix``),
        is widened to float32 here on first use, once, on every core (4 V D
        bytes more; ``rows`` reads it without widening it whole).
        """
        return self._W

    @property
    def _W(self) -> np.ndarray:
        """The table as one array: the matrix held, or the kept bf16 table widened once (thread-safe). Once
        widened, the float32 array is what the table holds: the bits are let go (the bf16 screens round the
        float32 rows again where they run, exactly: every value is a bfloat16)."""
        if isinstance(self._held, Bf16Matrix):
            with self._widening:
                if isinstance(self._held, Bf16Matrix):
                    self._held, self._bf16 = self._held.widened(), None
        return self._held

    def rows(self) -> Any:
        """The table as held, for a search that reads it a block at a time: ``W_E`` itself, or where a bf16
        checkpoint's table is kept as its bits (until ``W_E`` widens it), the ``bf16_matrix.Bf16Matrix``
        (rows widened as they are read).

        >>> EmbeddingTable(np.eye(2, dtype=np.float32)).rows().shape
        (2, 2)
        """
        return self._held

    @property
    def V(self) -> int:
        """Vocabulary size: rows of the table."""
        return self._held.shape[0]

    @property
    def D(self) -> int:
        """Model width: columns of the table."""
        return self._held.shape[1]

    @property
    def dtype(self) -> np.dtype:
        """The table's NumPy dtype."""
        return self._held.dtype

    @property
    def vocabulary(self) -> Vocabulary | None:
        """Token strings in id order, or ``None`` for a table without one."""
        return self._vocabulary

    @property
    def positions(self) -> np.ndarray | None:
        """The learned position table (T_max, D), read-only, or ``None``."""
        return self._positions

    @property
    def token_types(self) -> np.ndarray | None:
        """The token-type table (n_types, D), read-only, or ``None``."""
        return self._token_types

    @property
    def provenance(self) -> Provenance:
        """Where the table came from."""
        return self._provenance

    @property
    def load_cost(self) -> LoadCost | None:
        """What reading the table from its file cost (seconds and bytes of each step), or None where not recorded."""
        return self._load_cost

    def __repr__(self) -> str:
        return f"EmbeddingTable(V={self.V}, D={self.D}, dtype={self.dtype}, source={self._provenance.source!r})"

    # -- token ids and strings ----------------------------------------------

    def token_id(self, query: int | str) -> int:
        """Resolve a query to a checked token id (``vocabulary.resolve_id``).

        An int (NumPy ints included) is checked against ``[0, V)``. A string is
        looked up in the vocabulary; a string that is not a token but is a
        decimal integer (``"137"``) is taken as an id, which is how a table
        without vocabulary is queried from the command line. ``"id:137"`` is
        always the id, even where ``"137"`` is also a token.

        Raises
        ------
        TokenIdError
            (an ``IndexError``) for an id outside ``[0, V)``.
        UnknownTokenError
            (a ``KeyError``) for a string that is neither a token nor an id;
            the message suggests close entries.
        TypeError
            For a bool, a float or anything else.

        >>> EmbeddingTable([[1.0], [2.0], [3.0]], vocabulary=["a", "b", "7"]).token_id("7")
        2
        """
        return resolve_id(query, self.V, self._vocabulary)

    def token(self, token_id: int) -> str | None:
        """The string of a token id, or ``None`` for a table without vocabulary."""
        token_id = self.token_id(token_id)
        return None if self._vocabulary is None else self._vocabulary.token(token_id)

    def tokens(self, ids: Any) -> list[str] | None:
        """Strings of a flat list of ids, or ``None`` for a table without vocabulary."""
        if self._vocabulary is None:
            return None
        return [self._vocabulary.token(int(i)) for i in self._ids(ids).ravel()]

    # -- lookup is a one-hot product -----------------------------------------

    def lookup(self, ids: Any, *, out: np.ndarray | None = None) -> np.ndarray:
        """Rows for token ids of any shape: (...) -> (..., D), a copy.

        The ids are checked once (their min and max; for an int64 array one
        pass over them as unsigned ints) before any row is taken; the gather
        then skips NumPy's per-id bounds check and its
        buffered copy (``np.take(..., mode="clip")`` writing straight into
        the result; clipping never changes a checked id). A batch of more
        than 4 MiB is copied by one thread per core (NumPy releases the GIL).

        Parameters
        ----------
        ids : array_like of int or str, shape (...)
            Token ids, e.g. a (B, T) batch, or token strings, resolved as
            ``token_id`` resolves them (``["king", "id:7", 3]``).
        out : np.ndarray, shape (..., D), optional
            A C-contiguous array of the table's dtype to write the rows into
            (reuse one across batches to skip allocating); returned.

        Raises
        ------
        TokenIdError
            (an ``IndexError``) naming the smallest or largest id when one is
            outside ``[0, V)``; nothing is written then.
        UnknownTokenError
            (a ``KeyError``) for a string that is neither a token nor an id.
        TypeError
            If the ids are not integers or strings (bools and floats included).
        ShapeError
            (a ``ValueError``) if ``out`` has the wrong shape, dtype or layout.

        >>> t = EmbeddingTable([[1.0, 0.0], [0.0, 2.0]])
        >>> t.lookup([[1, 0]]).tolist()
        [[[0.0, 2.0], [1.0, 0.0]]]
        """
        if type(ids) is np.ndarray and ids.dtype == np.int64 and (ids.size == 0 or ids.view(np.uint64).max() < self.V):
            idx = ids  # (...) checked in one pass: seen as unsigned, a negative id is above V too
        else:
            idx = self._ids(ids)  # (...) checks each kind of bad id and names it
        shape = (*idx.shape, self.D)
        if out is None:
            out = np.empty(shape, dtype=self.dtype)  # (..., D)
        elif out.shape != shape or out.dtype != self.dtype or not out.flags.c_contiguous:
            raise ShapeError(f"out must be a C-contiguous {self.dtype} array of shape {shape}, "
                             f"got {out.dtype} {out.shape}")
        rows = self._held
        if isinstance(rows, Bf16Matrix):  # a kept bf16 table: the rows' bits gathered, then widened
            widen_bf16(rows.bits[idx.reshape(-1)], out=out.reshape(-1, shape[-1]))
        else:
            gather_rows(rows, idx.reshape(-1), out.reshape(-1, shape[-1]))
        return out

    def lookup_via_one_hot(self, ids: Any) -> np.ndarray:
        """The same rows as ``lookup``, computed as one-hot rows times the table.

        ``one_hot(ids) (N, V) @ W_E (V, D) -> (N, D)``: ``V * D`` multiplications
        per id where ``lookup`` needs none. For a demonstration on a few ids.
        """
        checked = self._ids(ids)  # (...)
        idx = checked.ravel()  # (N,)
        out = np.empty((idx.size, self.D), dtype=np.result_type(self.dtype, np.float32))
        block = max(1, 2**24 // max(self.V, 1))  # one-hot rows per product, ~64 MB of float32
        for start in range(0, idx.size, block):
            part = idx[start:start + block]
            one_hot = np.zeros((part.size, self.V), dtype=out.dtype)  # (n, V)
            one_hot[np.arange(part.size), part] = 1.0
            out[start:start + part.size] = self._one_hot_product(one_hot)  # (n, D)
        return out.reshape(*checked.shape, self.D)  # (..., D)

    def _one_hot_product(self, one_hot: np.ndarray) -> np.ndarray:
        """``one_hot (n, V) @ W_E (V, D)``; a kept bf16 table's rows widened a block at a time and the block
        products summed (each entry is one row's value plus zeros, whatever the blocks: the same values)."""
        held = self._held
        if not isinstance(held, Bf16Matrix):
            return one_hot @ held
        product = np.zeros((len(one_hot), self.D), dtype=one_hot.dtype)  # (n, D)
        step = max(1, 2**22 // (4 * self.D))  # rows widened at a time: 4 MiB of float32
        for a in range(0, self.V, step):
            product += one_hot[:, a:a + step] @ held[a:a + step]
        return product

    # -- the tied output head ------------------------------------------------

    def logits(self, hidden: Any) -> np.ndarray:
        """Score every token with the tied head: ``hidden @ W_E.T``.

        (D,) -> (V,) or (N, D) -> (N, V), float32 at least. The very table that
        ``lookup`` reads is the head (weight tying); it is never copied whole.
        Where one hidden vector (D,) is scored in a wider dtype than the
        table's (a float64 vector and a float32 table), the table's rows are
        widened a block of about 2 MiB at a time, the blocks spread over the
        cores (``row_blocks``): a matrix-vector product computes each logit as
        one dot product of length D, whatever the block, so they are the very
        values the whole widened table gives (tested bit for bit). A batch
        (N, D) is scored against the whole widened table, as before: a
        matrix-matrix product's rounding depends on the blocks.

        Raises
        ------
        ShapeError
            (a ``ValueError``) if the last axis of hidden is not D; names both.
        ValueError
            If a logit overflows the result's dtype (names the token), or
            hidden holds NaN or infinity.
        """
        h = np.asarray(hidden)
        if h.ndim not in (1, 2) or h.shape[-1] != self.D:
            raise ShapeError(f"hidden has shape {h.shape}, expected (D,) or (N, D) with D={self.D}")
        if not np.isfinite(h).all():
            raise ValueError("hidden vector holds NaN or infinity")
        dtype = np.result_type(self.dtype, h.dtype, np.float32)
        h = h.astype(dtype, copy=False)  # (D,) or (N, D)
        kept = isinstance(self._held, Bf16Matrix) and h.ndim == 1  # a bf16 table's bits: widened a block at a time
        with np.errstate(over="ignore", invalid="ignore"):  # refused below, with the token named
            if (self.dtype == dtype or h.ndim == 2) and not kept:
                out = h @ self._W.T.astype(dtype, copy=False)  # (V,) or (N, V)
            else:  # a float64 copy of a real table would be twice its size: widened a block at a time
                out = np.empty(self.V, dtype=dtype)  # (V,)
                rows = self._held if kept else self._W
                step = max(64, (2**21 // (8 * self.D)) // 64 * 64)  # rows per block, a multiple of 64
                map_row_blocks(lambda a, b: _widened_product(h, rows[a:b], out[a:b]), self.V, step)
        if not np.isfinite(out).all():
            where = np.argwhere(~np.isfinite(np.atleast_2d(out)))[0]
            raise ValueError(f"logits overflow {np.dtype(dtype).name}: token {int(where[1])} (row length "
                             f"{self.norms()[where[1]]:.3g}) times a hidden vector of length "
                             f"{float(vector_norms(np.atleast_2d(h))[where[0]]):.3g}")
        return out

    # -- length and direction ----------------------------------------------------

    def norms(self) -> np.ndarray:
        """Euclidean length of every row, shape (V,), float64, read-only.

        Accumulated in float64 whatever the table's dtype (a float16 sum of
        squares overflows at 256). Computed once and cached.
        """
        if self._norms is None:
            out = vector_norms(self.rows())  # (V,)
            out.flags.writeable = False
            self._norms = out
        return self._norms

    def codes(self) -> RowCodes:
        """The integer codes of every row (``neighbors.codes.encode_rows``), built once and cached.

        A copy of the table at 2 bytes per entry (``codes().nbytes``): part of
        the table's resident cost, beside ``W_E.nbytes``, not of a search's
        ``memory`` budget. The front door (``neighbors.search.Search``) builds
        them here where the integer screen pays: searches of at least
        ``neighbors.capability.CODED_QUERIES`` queries, or of every row, on a
        CPU that multiplies int16 codes fast.
        """
        if self._codes is None:
            self._codes = encode_rows(self._W, row_norms=self.norms())
        return self._codes

    def bf16_rows(self) -> np.ndarray:
        """The rows rounded to bfloat16 (``neighbors.bf16_screen.bf16_rows``), (V, D) uint16, built once and cached.

        A copy of the table at 2 bytes per entry: part of the table's resident
        cost, like its codes. The front door builds it here where the bf16
        screen runs (``neighbors.capability.bf16_pays``); in NumPy, no torch.
        """
        if self._bf16 is None:
            self._bf16 = bf16_rows(self._W)
        return self._bf16

    def bf16_rows_held(self) -> np.ndarray | None:
        """The cached bfloat16 rows (``bf16_rows``) where built already, else None; never builds them.

        >>> EmbeddingTable(np.zeros((4, 2), dtype=np.float32)).bf16_rows_held() is None
        True
        """
        return self._bf16

    def resident(self) -> ResidentCost:
        """Bytes this table holds between searches: matrix, position tables, cached lengths, codes, bfloat16 rows.

        None of it counts against a search's ``memory`` budget (``neighbors.footprint``).

        >>> EmbeddingTable(np.zeros((4, 2), dtype=np.float32)).resident().total
        32
        """
        extra = sum(t.nbytes for t in (self._positions, self._token_types) if t is not None)
        kept = isinstance(self._held, Bf16Matrix)  # the bits are the table: not counted again as bf16 rows
        return ResidentCost(table=self._held.nbytes, positions=extra,
                            norms=0 if self._norms is None else self._norms.nbytes,
                            codes=0 if self._codes is None else self._codes.nbytes,
                            mapped=self._held.mapped if kept else file_mapped(self._held),
                            bf16=0 if self._bf16 is None or kept else self._bf16.nbytes,
                            load=None if self._load_cost is None else self._load_cost.to_dict())

    def stretch(self, token_id: int | str, factor: float) -> "EmbeddingTable":
        """A new table with one row multiplied by ``factor``; this table is unchanged.

        The copy is made over the cores and kept by the new table as it is;
        its row lengths are this table's, with row ``token_id``'s measured
        again (the rest are unchanged), so nothing is scanned twice.

        Raises ``TokenIdError``/``UnknownTokenError`` for a bad token and
        ``ValueError`` for a factor that is not a finite number or that would
        overflow the table's dtype.
        """
        i = self.token_id(token_id)
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor):
            raise SizeError(f"stretch factor must be a finite number, got {factor!r}", parameter="factor",
                            value=factor, expected="a finite number")
        held = self._held  # a kept bf16 table's bits are widened into the copy: this table stays as it is
        row = held[i].astype(np.float64) * factor  # (D,)
        if np.abs(row).max() > np.finfo(self.dtype).max:
            raise ValueError(f"stretching token {i} by {factor!r} overflows {self.dtype}: its values would be inf")
        W = fresh_table(held.shape, self.dtype)  # (V, D) the new table: copied over the cores, then frozen
        if isinstance(held, Bf16Matrix):
            copy = lambda a, b: widen_bf16(held.bits[a:b], out=W[a:b])  # noqa: E731
        else:
            copy = lambda a, b: np.copyto(W[a:b], held[a:b])  # noqa: E731
        map_row_blocks(copy, self.V, max(1, 2**20 // W[:1].nbytes))
        W[i] = row
        W.flags.writeable = False
        norms = np.array(self.norms())  # (V,) every other row's length is unchanged: measured again for row i only
        norms[i] = vector_norms(W[i:i + 1])[0]
        return EmbeddingTable(
            W, vocabulary=self._vocabulary, positions=self._positions,
            token_types=self._token_types, provenance=self._provenance, norms=norms,
        )

    def scaled_lookup(self, ids: Any) -> np.ndarray:
        """``lookup`` times sqrt(D) (Vaswani et al. 2017, section 3.4): (...) -> (..., D).

        The factor is formed in float64 and the product taken in float64, then
        stored as float32 at least: never rounded to float16/bfloat16 first.

        Raises ``TokenIdError``/``TypeError`` as ``lookup``, and ``ValueError``
        naming the largest entry when a scaled value would overflow the
        result's dtype (float32 for a float32 table).
        """
        out = self.lookup(ids).astype(np.float64) * math.sqrt(self.D)  # (..., D)
        dtype = np.result_type(self.dtype, np.float32)
        if out.size and np.abs(out).max() > np.finfo(dtype).max:
            raise ValueError(f"scaling by sqrt(D) = sqrt({self.D}) overflows {np.dtype(dtype).name}: the largest "
                             f"entry of these rows, {np.abs(out).max() / math.sqrt(self.D):.4g}, would become inf")
        return out.astype(dtype)

    # -- neighbours ----------------------------------------------------------------

    def nearest(self, queries: Any, k: int, metric: str = "cosine", *, memory: int | None = None,
                progress: Callable[[int], None] | None = None, device: str | None = None) -> Neighbors:
        """The k nearest tokens of each query given by id or token string.

        A query by id leaves out exactly its own id, nothing else: a
        duplicate row under another id stays in (with the same score as the
        query's own row would have). Equal scores are ordered by the smaller
        id. The cosine of a zero-length row or query is 0.0. One call of the
        front door (``neighbors.search.Search``); a measurement that searches
        more than once makes a ``Search`` itself.

        Parameters
        ----------
        queries : int, str, sequence of them, or integer array, length N
            Token ids or token strings (resolved like ``token_id``).
        k : int
            ``1 <= k <= V - 1``.
        metric : {"cosine", "dot"}
        memory : int, optional
            Working memory budget in bytes (default ``neighbors.defaults.DEFAULT_MEMORY``, 256 MiB).
        progress : callable, optional
            Called with the number of queries finished after each block of
            queries (they add up to N), e.g. to move a progress bar.
        device : str, optional
            A torch device (``"cpu"``, ``"cuda"``) for the screen
            (``neighbors.torch_screen``); the result does not change.

        Returns
        -------
        Neighbors
            ids (N, K) int64, scores (N, K) float64, tokens where the table has
            a vocabulary.

        Raises
        ------
        ValueError
            For k outside ``[1, V - 1]``, an unknown metric or a budget too
            small for one block.
        TokenIdError, UnknownTokenError, TypeError
            For a bad query (as ``token_id``).

        >>> t = EmbeddingTable([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]])
        >>> t.nearest([0], 2, "cosine").ids.tolist(), t.nearest([0], 2, "dot").ids.tolist()
        ([[1, 2]], [[1, 2]])
        """
        ids = self._ids(queries).reshape(-1)  # (N,) resolved and checked at once
        search = Search(self, k, (metric,), ids=ids, memory=memory, device=device)
        return search.nearest(metric, progress=progress)

    def nearest_to_vector(self, vectors: Any, k: int, metric: str = "cosine", *, memory: int | None = None,
                          device: str | None = None) -> Neighbors:
        """The k nearest tokens of query vectors (D,) or (N, D); nothing is left out.

        Same order and rules as ``nearest`` (``device`` included), but no id
        is left out: a vector equal to a row finds that row first.

        Raises
        ------
        ShapeError
            (a ``ValueError``) for vectors whose width is not D; names both.
        ValueError
            For k outside ``[1, V]``, an unknown metric, or a vector with NaN
            or infinity (names the first such row).

        >>> t = EmbeddingTable([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
        >>> t.nearest_to_vector([1.0, 0.0], 4).ids.tolist()
        [[0, 1, 2, 3]]
        """
        return Search(self, k, (metric,), vectors=vectors, memory=memory, device=device).nearest(metric)

    def query_vectors(self, vectors: Any) -> np.ndarray:
        """Query vectors (D,) or (N, D) as the float64 array (N, D) that ``nearest_to_vector`` searches, checked.

        Raises
        ------
        ShapeError
            (a ``ValueError``) for vectors whose width is not D; names both.
        ValueError
            For a vector with NaN or infinity (names the first such row).

        >>> EmbeddingTable(np.eye(2)).query_vectors([1, 0]).shape
        (1, 2)
        """
        return check_vectors(vectors, self.D)

    # -- checks ------------------------------------------------------------------------

    def _ids(self, ids: Any) -> np.ndarray:
        """Token ids (or token strings) as an int64 array of the same shape, checked against [0, V)."""
        if isinstance(ids, np.ndarray) and ids.dtype.kind not in "OU":
            arr = ids
        else:  # Python ints and strings: NumPy would turn a stray True into 1, so resolve each one
            objs = np.asarray(ids, dtype=object)  # (...)
            flat = resolve_ids(objs.ravel().tolist(), self.V, self._vocabulary)  # also keeps ints beyond int64 out
            arr = np.array(flat, dtype=np.int64).reshape(objs.shape)
        if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"token ids must be ints, got dtype {arr.dtype}")
        if arr.size:
            lo, hi = arr.min(), arr.max()
            if lo < 0 or hi >= self.V:
                bad = lo if lo < 0 else hi
                raise TokenIdError(f"token id {int(bad)} is out of range for V={self.V}")
        return arr.astype(np.int64, copy=False)


def _widened_product(h: np.ndarray, rows: np.ndarray, out: np.ndarray) -> None:
    """``out = h @ rows.T`` with rows (b, D) widened to h's dtype first: (D,) -> (b,).

    Runs on a worker thread: NumPy's error state is not inherited there, so it is set here too.
    """
    with np.errstate(over="ignore", invalid="ignore"):  # the caller refuses non-finite logits, naming the token
        np.matmul(h, rows.astype(h.dtype).T, out=out)


def _given_norms(W: np.ndarray, norms: Any) -> np.ndarray:
    """``norms`` checked against the table W (V, D): (V,) float64, a sample of 64 rows' lengths equal bit for bit
    to ``vector_norms``; returned as a read-only copy (8 V bytes)."""
    if not isinstance(norms, np.ndarray) or norms.dtype != np.float64 or norms.shape != (len(W),):
        shape = getattr(norms, "shape", None)
        raise ShapeError(f"norms must be a float64 array of shape ({len(W)},), the table's V, got "
                         f"{getattr(norms, 'dtype', type(norms).__name__)} {shape}")
    sample = np.unique(np.linspace(0, len(W) - 1, min(64, len(W))).astype(np.int64))  # (s,) first and last included
    wrong = np.flatnonzero(vector_norms(W[sample]).view(np.int64) != norms[sample].view(np.int64))
    if wrong.size:
        r = int(sample[wrong[0]])
        raise ValueError(f"norms[{r}] = {norms[r]!r} is not the length of row {r}, {float(vector_norms(W[r:r + 1])[0])!r}")
    out = np.array(norms)  # (V,) a copy nobody else holds
    out.flags.writeable = False
    return out


def _where(provenance: Provenance) -> str:
    """' (tiny-llama, output head: /path, tensor X)' for error messages: which table, by its display name
    and part (``Provenance.display_name``), then where it was read."""
    if provenance.source == "array" and provenance.path is None and provenance.part == "input":
        return ""
    place = [p for p in (provenance.path, provenance.tensor and f"tensor {provenance.tensor}") if p]
    return f" ({provenance.display_name}{': ' + ', '.join(place) if place else ''})"

