"""The array engine: the reference's meanings on real-size tables, in NumPy, with no file I/O.

``table`` (``EmbeddingTable``: lookup, logits, norms, stretch, neighbours),
``search`` (exact top-k by cosine or dot product, in blocks),
``vocabulary`` (token id <-> token string), ``positional`` (sinusoidal tables,
rotary angles, ALiBi slopes).
"""
