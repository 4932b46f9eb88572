"""The array engine: the reference's meanings on real-size tables, in NumPy, with no file I/O.

``table`` (``EmbeddingTable``: lookup, logits, norms, stretch, neighbours), with
``provenance`` (where a table came from), ``storage`` (the read-only, finite
matrices it keeps) and ``gather`` (lookup's row copy over the cores);
``search`` (exact top-k by cosine or dot product, in blocks), in stages:
``plan`` (block sizes and workers for a memory budget), ``scan`` (screen,
filter and rescore one block of queries), ``coded_scan`` (the same with the
integer screen: ``codes`` and its certified bound, ``screen_kernel`` and
``simd`` compiled with numba, ``capability`` choosing by CPU), ``rescore``
(the exact float64 rescoring), ``pool`` (the candidate pool),
``precision`` (the GEMM's dtype, its rounding margin, float64's range) and
``threads`` (where blocks of queries run); ``self_join`` (every row as a
query, each block pair of W W^T scored once for both sides) and
``table_scan`` (every row's top-k: the self-join or one query per row); ``lengths`` (row lengths and rms);
``vocabulary`` (token id <-> token string), ``positional`` (sinusoidal tables,
rotary angles, ALiBi slopes).
"""
