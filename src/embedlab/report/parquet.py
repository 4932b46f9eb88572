"""The neighbour graph as a Parquet file, streamed block by block, all or nothing.

One row per list entry (an edge of the graph):

=============  ===============================  ===========================================
column         type                             meaning
=============  ===============================  ===========================================
query_id       int64                            the token whose list it is
rank           int32                            1 for its nearest neighbour .. k
neighbor_id    int64                            the listed token
score          float64                          cosine similarity or dot product
metric         dictionary<int8, string>         ``"cosine"`` or ``"dot"``
=============  ===============================  ===========================================

Rows come in the order the blocks do: by metric, then query id, then rank.
The file's key-value metadata records ``embedlab.k``, ``embedlab.V``,
``embedlab.D``, ``embedlab.metrics``, ``embedlab.source`` (the table's
provenance, JSON) and ``embedlab.version``.

Blocks go to a temporary file beside the target (one Parquet row group per
block, so memory stays at one block) and the file is renamed into place when
the last block is written. On any error, or Ctrl-C, the temporary file is
removed: no partial Parquet file is ever left under the target's name.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .files import write_error

__all__ = ["write_graph", "GraphFile", "COLUMNS"]

COLUMNS = ("query_id", "rank", "neighbor_id", "score", "metric")


@dataclass(frozen=True)
class GraphFile:
    """What ``embedlab graph`` wrote.

    Attributes
    ----------
    file : str
        The Parquet file written, as given.
    rows : int
        Rows written: ``V * k`` per metric.
    V, D, k : int
        Table shape and neighbours per token.
    metrics : tuple of str
        The metrics, in the order of their rows.
    source : dict or None
        The table's provenance.
    notes : tuple of str
        What was adjusted without being asked (a default k shrunk).
    memory : SearchMemory or None
        The search's budget, each metric's plan (the screen it ran and why)
        and the table's resident cost (``engine.neighbors.search.SearchMemory``); None
        where the lists came from a scan of the caller's.
    """

    file: str
    rows: int
    V: int
    D: int
    k: int
    metrics: tuple[str, ...]
    source: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()
    memory: Any = None  # a SearchMemory: the report layer names nothing of the search's wing (test_package)

    def to_dict(self) -> dict[str, Any]:
        """Every field, as a JSON-able dict."""
        return {"file": self.file, "rows": self.rows, "V": self.V, "D": self.D, "k": self.k,
                "metrics": list(self.metrics), "columns": list(COLUMNS), "source": self.source,
                "notes": list(self.notes), "memory": None if self.memory is None else asdict(self.memory)}


def write_graph(path: str | os.PathLike, blocks: Iterable[Any], *, metadata: dict[str, Any],
                on_block: Callable[[int], None] | None = None) -> int:
    """Stream blocks of lists into the Parquet file ``path``; return the rows written.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write; its folder must exist. An existing file is
        replaced only once the new one is complete.
    blocks : iterable
        Objects with ``metric`` (str), ``start`` (int), ``ids`` (n, K) int64
        and ``scores`` (n, K) float64, as ``measure.graph.GraphBlock``.
    metadata : dict
        Written as the file's key-value metadata, each key prefixed with
        ``embedlab.``, values as JSON unless already str.
    on_block : callable, optional
        Called with the rows of each block once it is written.

    Returns
    -------
    int
        Rows (list entries) written.

    Raises
    ------
    OSError
        If the folder is missing or not writable.
    """
    target = Path(path)
    metric_type = pa.dictionary(pa.int8(), pa.string())
    schema = pa.schema([("query_id", pa.int64()), ("rank", pa.int32()), ("neighbor_id", pa.int64()),
                        ("score", pa.float64()), ("metric", metric_type)],
                       metadata={f"embedlab.{key}": value if isinstance(value, str) else json.dumps(value)
                                 for key, value in metadata.items()})
    # The folder as the system resolves it: mkstemp reads "link/.." lexically, which may be another folder.
    fd, tmp = tempfile.mkstemp(dir=os.path.realpath(target.parent), prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    rows = 0
    try:
        with pq.ParquetWriter(tmp, schema) as writer:
            for block in blocks:
                n, k = block.ids.shape
                query_id = np.repeat(np.arange(block.start, block.start + n, dtype=np.int64), k)  # (n K,)
                rank = np.tile(np.arange(1, k + 1, dtype=np.int32), n)  # (n K,)
                metric = pa.DictionaryArray.from_arrays(np.zeros(n * k, dtype=np.int8), [block.metric])
                writer.write_table(pa.table([query_id, rank, block.ids.reshape(-1), block.scores.reshape(-1),
                                             metric], schema=schema))
                rows += n * k
                if on_block is not None:
                    on_block(n * k)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, target)
    except BaseException as exc:  # an error or Ctrl-C: no partial file, under any name
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and (exc.filename in (tmp, str(target)) or tmp in str(exc)):
            raise write_error(exc, Path(path)) from None  # the file as given, never the temporary's name
        raise  # the blocks' own errors (a scheduler that does not answer) as they are
    return rows


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
