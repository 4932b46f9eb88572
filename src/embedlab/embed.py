"""The lab reference: from the embedding table to the logits, in plain Python.

This file is the definition of every meaning embedlab keeps. It uses the standard
library alone (``math``, ``operator``, ``random``) and imports nothing from its
package, so it can be copied on its own and imported as ``embed``.

Glossary: ``V`` vocabulary size (rows of the table), ``D`` model width (its
columns), a *token id* is an ``int`` with ``0 <= id < V``. A table is a list of
``V`` lists of ``D`` floats, one row per token.

The story the functions tell, in order:

1. ``lookup`` takes rows of the table; ``lookup_via_one_hot`` gets the very same
   numbers by multiplying a one-hot row vector by the table, at a cost of
   ``V * D`` multiplications per token, where a lookup costs none.
2. ``logits`` scores every token by reusing the same table as the output head
   (weight tying), so a tied model stores ``V * D`` parameters, an untied one
   ``2 * V * D``.
3. ``dot`` multiplies in the length of both vectors, ``cosine`` divides it out,
   so ``nearest_by_dot`` and ``nearest_by_cosine`` can rank neighbours
   differently; ``stretch`` makes one row longer to show it.
4. ``scaled_lookup`` multiplies by ``sqrt(D)`` (Vaswani et al. 2017, section
   3.4): size changes, direction does not.

>>> table = make_table(4, 2, seed=0)
>>> shape(table)
(4, 2)
>>> lookup(table, [2]) == lookup_via_one_hot(table, [2])
True
"""

import math
import operator
import random

__all__ = [
    "VOCAB", "DIM", "SEED",
    "make_table", "shape", "param_count",
    "lookup", "one_hot", "row_times_matrix", "lookup_via_one_hot", "one_hot_mults",
    "logits", "tied_params", "untied_params", "vocab_growth",
    "dot", "norm", "cosine", "rms", "stretch",
    "nearest_by_cosine", "nearest_by_dot", "scaled_lookup",
]

VOCAB = 512       # V of the lab's seed table
DIM = 64          # D of the lab's seed table
SEED = 20260917   # seed of its random.Random


# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------

def make_table(vocab, dim, seed):
    """Build a (vocab, dim) table of uniform random floats in [-0.5, 0.5).

    One ``random.Random(seed)`` fills the table row by row, from token 0,
    element 0; each element is one ``random()`` minus 0.5. Same seed, same table.

    Parameters
    ----------
    vocab : int
        V, the number of rows (tokens), ``>= 0``.
    dim : int
        D, the number of columns (model width), ``>= 0``.
    seed : int
        Seed of the single ``random.Random``.

    Returns
    -------
    list of list of float
        ``vocab`` rows of ``dim`` floats.

    Raises
    ------
    TypeError
        If vocab or dim is not an int (bools included).
    ValueError
        If vocab or dim is negative.

    >>> make_table(2, 3, seed=1) == make_table(2, 3, seed=1)
    True
    >>> shape(make_table(2, 3, seed=1))
    (2, 3)
    """
    vocab = _size(vocab, "vocab")
    dim = _size(dim, "dim")
    rng = random.Random(seed)
    return [[rng.random() - 0.5 for _ in range(dim)] for _ in range(vocab)]


def shape(matrix):
    """Return ``(rows, cols)`` of a list-of-lists matrix.

    Parameters
    ----------
    matrix : list of list of float
        A table (V, D) or any other matrix.

    Returns
    -------
    tuple of (int, int)
        ``(len(matrix), len(matrix[0]))``; ``(0, 0)`` for an empty matrix.

    Raises
    ------
    ValueError
        If the rows differ in length (a ragged table); names the first row
        whose length differs from row 0.

    >>> shape([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    (3, 2)
    >>> shape([])
    (0, 0)
    """
    rows = len(matrix)
    if rows == 0:
        return (0, 0)
    cols = len(matrix[0])
    for r, row in enumerate(matrix):
        if len(row) != cols:
            raise ValueError(
                f"ragged table: row {r} has {len(row)} values, row 0 has {cols}"
            )
    return (rows, cols)


def param_count(vocab, dim):
    """Parameters of one (vocab, dim) table: ``vocab * dim`` (an exact int).

    Raises ``TypeError`` for a non-int and ``ValueError`` for a negative size.

    >>> param_count(512, 64)
    32768
    """
    return _size(vocab, "vocab") * _size(dim, "dim")


# --------------------------------------------------------------------------
# Lookup is a one-hot product
# --------------------------------------------------------------------------

def lookup(table, ids):
    """Rows of the table for a list of token ids: the embedding lookup.

    Every id is checked before any row is taken, so a bad id returns nothing.
    Each returned vector is a new list (a copy): changing it never changes
    the table.

    Parameters
    ----------
    table : list of list of float
        The (V, D) embedding table.
    ids : iterable of int
        Token ids, each ``0 <= id < V``. The same id may appear more than once.

    Returns
    -------
    list of list of float
        ``len(ids)`` vectors of length D, in the order of ``ids``.

    Raises
    ------
    TypeError
        If an id is not an int (a bool or a float), or ids is not iterable.
    IndexError
        If an id is outside ``0 <= id < V``; negative ids are out of vocabulary,
        never Python's count from the end.
    ValueError
        If the table is ragged.

    >>> lookup([[1.0, 1.0], [2.0, 2.0]], [1, 0, 1])
    [[2.0, 2.0], [1.0, 1.0], [2.0, 2.0]]
    """
    vocab, _ = shape(table)
    checked = _token_ids(ids, vocab)
    return [list(table[i]) for i in checked]


def one_hot(token_id, vocab):
    """A length-``vocab`` vector of 0.0 with a single 1.0 at ``token_id``.

    Its width is the vocabulary size V, never inferred from a batch.

    Raises ``TypeError`` for a non-int id and ``IndexError`` for an id outside
    ``0 <= id < vocab``.

    >>> one_hot(2, 4)
    [0.0, 0.0, 1.0, 0.0]
    """
    vocab = _size(vocab, "vocab")
    token_id = _token_id(token_id, vocab)
    vec = [0.0] * vocab
    vec[token_id] = 1.0
    return vec


def row_times_matrix(vec, matrix):
    """Row vector (length V) times matrix (V, D) -> vector of length D.

    ``out[c] = sum(vec[r] * matrix[r][c] for r in range(V))``.

    Raises
    ------
    ValueError
        If ``len(vec)`` is not the matrix's number of rows V, or the matrix
        is ragged.

    >>> row_times_matrix([0.0, 1.0], [[1.0, 2.0], [3.0, 4.0]])
    [3.0, 4.0]
    """
    rows, cols = shape(matrix)
    if len(vec) != rows:
        raise ValueError(
            f"vector has length {len(vec)}, expected {rows} (the matrix's rows V)"
        )
    return [sum(vec[r] * matrix[r][c] for r in range(rows)) for c in range(cols)]


def lookup_via_one_hot(table, ids):
    """The same values as ``lookup``, computed as one-hot row times the table.

    Costs ``V * D`` multiplications per id (see ``one_hot_mults``); ``lookup``
    costs none. Same errors as ``lookup``.

    >>> lookup_via_one_hot([[1.0, 1.0], [2.0, 2.0]], [1])
    [[2.0, 2.0]]
    """
    vocab, _ = shape(table)
    checked = _token_ids(ids, vocab)
    return [row_times_matrix(one_hot(i, vocab), table) for i in checked]


def one_hot_mults(vocab, dim, count):
    """Multiplications the one-hot route costs for ``count`` tokens.

    Each token is a (1, V) by (V, D) product: ``V * D`` multiplications, so
    the total is ``vocab * dim * count`` (an exact int). A lookup costs 0.

    >>> one_hot_mults(512, 64, 1)
    32768
    """
    return _size(vocab, "vocab") * _size(dim, "dim") * _size(count, "count")


# --------------------------------------------------------------------------
# The tied output head
# --------------------------------------------------------------------------

def logits(table, hidden):
    """Score every token: ``out[t] = sum(table[t][c] * hidden[c])``.

    The head reuses the very table that ``lookup`` reads (weight tying): no
    second matrix is built, stored or transposed.

    Parameters
    ----------
    table : list of list of float
        The (V, D) embedding table, used as the output head.
    hidden : list of float
        A hidden vector of length D.

    Returns
    -------
    list of float
        V logits, one per token id.

    Raises
    ------
    ValueError
        If ``len(hidden)`` is not D (names both lengths), or the table is ragged.

    >>> logits([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]], [3.0, 4.0])
    [3.0, 8.0, 7.0]
    """
    _, dim = shape(table)
    if len(hidden) != dim:
        raise ValueError(
            f"hidden vector has length {len(hidden)}, expected D={dim} (the table's width)"
        )
    return [dot(row, hidden) for row in table]


def tied_params(vocab, dim):
    """Parameters of the embedding and output head when tied: ``vocab * dim``.

    >>> tied_params(512, 64)
    32768
    """
    return param_count(vocab, dim)


def untied_params(vocab, dim):
    """Parameters of the embedding and a separate output head: ``2 * vocab * dim``.

    >>> untied_params(512, 64)
    65536
    """
    return 2 * param_count(vocab, dim)


def vocab_growth(vocab, dim, factor):
    """Table parameters now and with a vocabulary ``factor`` times bigger.

    Parameters
    ----------
    vocab, dim : int
        V and D today.
    factor : int
        Growth of V, ``>= 1``. A float with an integral value (``2.0``) is
        taken as that int.

    Returns
    -------
    dict
        Exact ints under the keys ``vocab, bigger_vocab, dim, tied,
        bigger_tied, untied, bigger_untied, saved``, where ``saved`` is
        ``untied - tied`` (what tying saves at today's V).

    Raises
    ------
    TypeError
        If a size is not an int or factor is not a whole number.
    ValueError
        If a size is negative or factor is below 1 or not whole.

    >>> vocab_growth(512, 64, 2)["bigger_tied"]
    65536
    """
    vocab = _size(vocab, "vocab")
    dim = _size(dim, "dim")
    factor = _whole_factor(factor)
    bigger = vocab * factor
    return {
        "vocab": vocab,
        "bigger_vocab": bigger,
        "dim": dim,
        "tied": tied_params(vocab, dim),
        "bigger_tied": tied_params(bigger, dim),
        "untied": untied_params(vocab, dim),
        "bigger_untied": untied_params(bigger, dim),
        "saved": untied_params(vocab, dim) - tied_params(vocab, dim),
    }


# --------------------------------------------------------------------------
# Length and direction
# --------------------------------------------------------------------------

def dot(a, b):
    """Dot product ``sum(a[i] * b[i])`` of two vectors of equal length.

    Raises ``ValueError`` naming both lengths when they differ.

    >>> dot([1.0, 2.0], [3.0, 4.0])
    11.0
    """
    if len(a) != len(b):
        raise ValueError(f"vectors have different lengths: {len(a)} and {len(b)}")
    return sum(x * y for x, y in zip(a, b))


def norm(vec):
    """Euclidean length ``sqrt(sum(x * x))``; 0.0 for an empty vector.

    Exact for lengths a float can hold, however long or short the entries:
    see ``_sum_of_squares``.

    >>> norm([3.0, 4.0])
    5.0
    >>> norm([0.0, -1e200])
    1e+200
    """
    scale, total = _sum_of_squares(vec)
    return scale * math.sqrt(total)


def cosine(a, b):
    """Cosine similarity ``dot(a, b) / (norm(a) * norm(b))``, in [-1, 1].

    The cosine of a zero-length vector with anything is 0.0 (never NaN), and
    rounding is clipped so the result never leaves [-1, 1]. The cosine does
    not change when a vector is scaled, so a vector whose squares leave the
    float range (entries beyond about 1e150 or below 1e-140) is first scaled
    by its largest entry (``_sum_of_squares``); it has a cosine like any other.

    Raises ``ValueError`` naming both lengths when they differ, and when a
    vector holds NaN or infinity: then the cosine is undefined, and clipping
    would turn it into a wrong 1.0.

    >>> cosine([2.0, 0.0], [3.0, 0.0])
    1.0
    >>> cosine([0.0, 0.0], [1.0, 0.0])
    0.0
    >>> cosine([1e200, 0.0], [1e-200, 1e-200])
    0.7071067811865475
    """
    if len(a) != len(b):
        raise ValueError(f"vectors have different lengths: {len(a)} and {len(b)}")
    scale_a, total_a = _sum_of_squares(a)
    scale_b, total_b = _sum_of_squares(b)
    both = math.sqrt(total_a) * math.sqrt(total_b)  # norm(a) * norm(b), each divided by its scale
    if both == 0.0:
        return 0.0
    if scale_a == scale_b == 1.0:  # the usual case: the textbook formula as it stands
        value = dot(a, b) / both
    else:
        value = dot([x / scale_a for x in a], [y / scale_b for y in b]) / both
    if math.isnan(value) or math.isinf(both):
        raise ValueError("cosine is undefined for vectors holding NaN or infinity")
    return max(-1.0, min(1.0, value))


def rms(vec):
    """Root mean square ``sqrt(sum(x * x) / n)``; 0.0 for an empty vector.

    Exact for entries of any finite size, as ``norm``.

    >>> rms([3.0, 4.0])
    3.5355339059327378
    >>> rms([1e200, 1e200])
    1e+200
    """
    if len(vec) == 0:
        return 0.0
    scale, total = _sum_of_squares(vec)
    return scale * math.sqrt(total / len(vec))


# A sum of squares in this range lost nothing to overflow or underflow.
_SQUARES_LOW, _SQUARES_HIGH = 1e-280, 1e300


def _sum_of_squares(vec):
    """``(scale, total)`` with ``sum(x * x for x in vec) == scale ** 2 * total``.

    Usually ``scale`` is 1.0 and ``total`` the plain sum of squares. But a
    square overflows to infinity beyond about 1e154 and underflows to 0.0
    below about 1e-154, so when the plain sum leaves ``_SQUARES_LOW`` ..
    ``_SQUARES_HIGH`` the vector is divided by its largest entry first (the
    classic rescaling of LAPACK's ``dnrm2``): then every entry lies in [-1, 1]
    and the sum of squares is at least 1. A vector holding NaN or infinity
    keeps scale 1.0 and its NaN or infinite sum.
    """
    total = dot(vec, vec)
    if math.isnan(total) or _SQUARES_LOW <= total <= _SQUARES_HIGH:
        return 1.0, total  # the usual case (or NaN: undefined whatever the scale)
    largest = max((abs(x) for x in vec), default=0.0)
    if largest == 0.0 or math.isinf(largest):
        return 1.0, total  # a zero vector, or one holding infinity
    return largest, sum((x / largest) ** 2 for x in vec)


def stretch(table, token_id, factor):
    """A NEW table with row ``token_id`` multiplied by ``factor``.

    The input table and its rows are never changed; the result shares no
    row list with the input. A longer row keeps its direction (cosine
    neighbours unchanged) but climbs dot-product lists.

    Raises ``TypeError``/``IndexError`` for a bad token id (as ``lookup``)
    or a factor that is not a number, and ``ValueError`` for a ragged table,
    a factor that is NaN or infinite, or a stretched value that overflows.

    >>> t = [[1.0, 2.0], [3.0, 4.0]]
    >>> stretch(t, 0, 2.0), t
    ([[2.0, 4.0], [3.0, 4.0]], [[1.0, 2.0], [3.0, 4.0]])
    """
    vocab, _ = shape(table)
    token_id = _token_id(token_id, vocab)
    if isinstance(factor, bool) or not isinstance(factor, (int, float)):
        raise TypeError(f"stretch factor must be a number, got {factor!r}")
    if not math.isfinite(factor):
        raise ValueError(f"stretch factor must be finite, got {factor!r}")
    out = [list(row) for row in table]
    out[token_id] = [x * factor for x in table[token_id]]
    if any(math.isinf(x) for x in out[token_id]):
        raise ValueError(f"stretching token {token_id} by {factor!r} overflows to infinity")
    return out


# --------------------------------------------------------------------------
# Neighbours
# --------------------------------------------------------------------------

def nearest_by_cosine(table, token_id, k):
    """The k token ids whose rows have the largest cosine with row ``token_id``.

    The query itself is left out; equal scores are ordered by the smaller id
    first. Zero-length rows score 0.0.

    Parameters
    ----------
    table : list of list of float
        The (V, D) table.
    token_id : int
        The query, ``0 <= token_id < V``.
    k : int
        How many neighbours, ``1 <= k <= V - 1``.

    Returns
    -------
    list of int
        k token ids, best first.

    Raises
    ------
    TypeError
        If token_id or k is not an int.
    IndexError
        If token_id is outside ``0 <= id < V``.
    ValueError
        If k is outside ``1 <= k <= V - 1``, or the table is ragged.

    >>> nearest_by_cosine([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]], 2, 2)
    [1, 0]
    """
    return _nearest(table, token_id, k, cosine)


def nearest_by_dot(table, token_id, k):
    """The k token ids whose rows have the largest dot product with row ``token_id``.

    Same rules and errors as ``nearest_by_cosine``: query left out, equal
    scores by smaller id. A long row climbs this list whatever its direction.

    >>> nearest_by_dot([[1.0, 0.0], [10.0, 1.0], [0.0, 1.0]], 2, 2)
    [1, 0]
    """
    return _nearest(table, token_id, k, dot)


def _nearest(table, token_id, k, score):
    vocab, _ = shape(table)
    token_id = _token_id(token_id, vocab)
    k = _k(k, vocab)
    query = table[token_id]
    if score is dot:
        _check_dot_underflow(table, token_id, query)
    scored = [(-score(query, row), i) for i, row in enumerate(table) if i != token_id]
    for minus, i in scored:
        if math.isnan(minus):
            raise ValueError(f"row {i} scores NaN against token {token_id}: the table holds NaN or infinity")
        if math.isinf(minus):
            raise ValueError(f"row {i} scores {-minus} against token {token_id}: the dot product overflows "
                             f"a float (or the table holds infinity)")
    # Sort by (-score, id): largest score first, the smaller id wins a tie.
    return [i for _, i in sorted(scored)[:k]]


def _check_dot_underflow(table, token_id, query):
    """Refuse dot products too small for a float to rank.

    ``|dot(q, w)| <= norm(q) * norm(w)``; below about 1e-280 (``_SQUARES_LOW``)
    the products underflow and lose their digits, and with them their order.
    """
    query_length = norm(query)
    for i, row in enumerate(table):
        row_length = norm(row)
        if i != token_id and query_length > 0 and row_length > 0 and query_length * row_length < _SQUARES_LOW:
            raise ValueError(f"dot products underflow: token {token_id} (length {query_length:.3g}) times row {i} "
                             f"(length {row_length:.3g}) is below {_SQUARES_LOW:g}, too small to rank")


# --------------------------------------------------------------------------
# Scaling by sqrt(d)
# --------------------------------------------------------------------------

def scaled_lookup(table, ids, dim):
    """``lookup`` times ``math.sqrt(dim)`` (Vaswani et al. 2017, section 3.4).

    The transformer multiplies embeddings by sqrt(d_model) so they are not
    drowned by the positional signal added next: each vector grows by
    sqrt(dim) in length (and rms) while its direction, hence every cosine,
    stays the same. The factor is a Python float (float64), never rounded to
    a lower precision first.

    Parameters
    ----------
    table : list of list of float
        The (V, D) table.
    ids : iterable of int
        Token ids, as for ``lookup``.
    dim : int or float
        The width whose square root scales the vectors, ``> 0`` (normally D).

    Returns
    -------
    list of list of float
        ``len(ids)`` scaled copies of rows.

    Raises
    ------
    TypeError, IndexError
        As ``lookup``; TypeError also if dim is not a number.
    ValueError
        If dim is not positive, or a scaled entry overflows to infinity.

    >>> scaled_lookup([[1.0, 1.0]], [0], 4)
    [[2.0, 2.0]]
    """
    if isinstance(dim, bool) or not isinstance(dim, (int, float)):
        raise TypeError(f"dim must be a number, got {dim!r}")
    if not dim > 0:
        raise ValueError(f"dim must be positive, got {dim!r}")
    factor = math.sqrt(dim)
    rows = lookup(table, ids)
    out = [[x * factor for x in row] for row in rows]
    for row, vec in zip(rows, out):
        if any(math.isinf(x) for x in vec):
            raise ValueError(f"scaling by sqrt({dim!r}) = {factor!r} overflows to infinity: the row's largest "
                             f"entry is {max(abs(x) for x in row)!r}")
    return out


# --------------------------------------------------------------------------
# Checks on arguments
# --------------------------------------------------------------------------

def _integer(value, what):
    """``value`` as an int; bools, floats and other non-integers are a TypeError."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an int, got the bool {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"{what} must be an int, got {value!r} ({type(value).__name__})"
        ) from None


def _size(value, what):
    value = _integer(value, what)
    if value < 0:
        raise ValueError(f"{what} must be >= 0, got {value}")
    return value


def _token_id(token_id, vocab):
    token_id = _integer(token_id, "token id")
    if not 0 <= token_id < vocab:
        raise IndexError(f"token id {token_id} is out of range for V={vocab}")
    return token_id


def _token_ids(ids, vocab):
    if isinstance(ids, (str, bytes)) or not hasattr(ids, "__iter__"):
        raise TypeError(f"ids must be a list of token ids, got {ids!r}")
    return [_token_id(i, vocab) for i in ids]


def _k(k, vocab):
    k = _integer(k, "k")
    if not 1 <= k <= vocab - 1:
        raise ValueError(
            f"k={k} is out of range: expected 1 <= k <= V-1 = {vocab - 1} "
            f"(the query itself is left out)"
        )
    return k


def _whole_factor(factor):
    if isinstance(factor, float):
        if not factor.is_integer():
            raise ValueError(f"factor must be a whole number >= 1, got {factor!r}")
        factor = int(factor)
    factor = _integer(factor, "factor")
    if factor < 1:
        raise ValueError(f"factor must be a whole number >= 1, got {factor}")
    return factor
