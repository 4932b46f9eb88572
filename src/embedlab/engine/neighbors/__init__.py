"""The k nearest: exact top-k neighbours by cosine and by dot product, as one wing with one front door.

Ask the front door, ``search.Search``: made once per measurement, it checks
the input, chooses the screen, plans the memory and settles where the search
runs; then ``nearest(metric)`` gives "these queries' k nearest" and
``every_row(metric)`` "every row's k nearest". Measurements import only
``search`` and ``defaults``; ``EmbeddingTable.nearest`` is a thin call of it.

The rooms, from the door inward:

``search``
    the front door: ``Search``, its result ``Neighbors``, ``ArrayTable``
    (a plain array as a table).
``defaults``
    ``METRICS``, ``DEFAULT_K``, ``DEFAULT_MEMORY``, each written once
    (standard library only: the CLI and the API read them without NumPy).
``checks``
    what the door refuses: metrics, k, query ids, vectors, lengths.
``capability``
    which screen runs here (bf16 on embedlab's own kernels, AMX or
    AVX512-BF16, or on either through torch, for large enough searches and for every row's
    lists of a bf16 table, int16 where the CPU
    has AVX2 and numba), when the table's int16 codes are worth building,
    and why a plan runs its screen.
``plan``
    the budget: block sizes and workers within ``memory`` bytes
    (``BlockPlan`` for queries, ``PairPlan`` for the self-join);
    ``footprint``: what a table holds between searches, and what a
    measurement's searches planned (``SearchMemory``).
Where a search runs:
    ``per_query`` (blocks of queries on threads, ``threads``),
    ``every_row`` (every row as a query: the self-join or one query per
    row), ``self_join`` (each block pair of W W^T scored once),
    ``bf16_join`` (the self-join on bfloat16 products, filtered by the
    compiled ``bf16_filter``),
    ``cluster`` (a Dask cluster: the table scattered once, blocks as tasks),
    ``copies`` (every row's lists of a table with a group of identical rows
    larger than a pool: the table without its copies searched, the lists
    expanded).
The screens, peers behind ``dispatch`` (which sends one block of queries to one):
    ``float_screen`` (a float GEMM and a rounding margin),
    ``int16_screen`` (int16 codes and certified bounds: ``codes``,
    ``int16_kernel`` and ``simd`` compiled with numba),
    ``torch_screen`` (the float screen with torch on a device, TF32 off),
    ``bf16_screen`` (bfloat16 products on the matrix units through torch,
    its certified margin, survivors scored in float64 at once),
    ``amx_screen`` (the bf16 screen on embedlab's own kernels,
    ``amx_kernel`` on AMX tiles or ``avx512_bf16_kernel`` on AVX512-BF16:
    the scores filtered in cache, no torch; its survivors
    scored in float32 by ``pair_scores`` and put into the pool one at a
    time by the compiled ``pool_insert``).
After every screen:
    ``pool`` (each query's candidates), ``rescore`` (the exact float64
    scores, their dot products by ``pair_scores``, ordered by
    ``(-score, id)``), ``precision`` (the GEMM's dtype, its margin,
    float64's range).

No room imports one that imports it back (a test walks the imports), and
nothing here imports the table (``engine/table.py`` imports the door).

Glossary: ``V`` vocabulary size, ``D`` model width, ``N`` queries, ``K`` top-k.
"""
