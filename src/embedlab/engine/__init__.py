"""The array engine: the reference's meanings on real-size tables, in NumPy, with no file I/O.

``table`` (``EmbeddingTable``: lookup, logits, norms, stretch, neighbours), with
``provenance`` (where a table came from), ``storage`` (the read-only, finite
matrices it keeps) and ``gather`` (lookup's row copy over the cores);
``neighbors/`` (the k nearest by cosine or dot product, exact, as one wing
behind one front door, ``neighbors.search.Search``: screens, plans, kernels,
the self-join, a device or a Dask cluster; its ``__init__`` is the map);
``lengths`` (row lengths and rms); ``vocabulary`` (token id <-> token string),
``positional`` (sinusoidal tables, rotary angles, ALiBi slopes),
``position_similarity`` (cosine between rows of a position table: adjacent, by offset, every pair),
``input_rule`` (how a family builds the first block's input) and
``compression`` (deployment reductions: PCA, truncation, int8, binary, PQ).
"""
