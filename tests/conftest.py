"""Shared fixtures.

``backend`` runs one case over every backend (the reference, and the array code of
``embedlab.engine``) with the reference's call signatures (tables are lists of
lists, ids are lists of ints), so a test written once checks that every backend
keeps the reference's meanings, as ``measure.backends`` does for the lab.
"""

from __future__ import annotations

import importlib.util
import os
from types import SimpleNamespace

import pytest

from embedlab import embed

HAS_NUMPY = importlib.util.find_spec("numpy") is not None

# OpenMP threads (scikit-learn's t-SNE, faiss) wait for the next parallel region by sleeping, not by spinning.
# libgomp spins by default; on a machine whose cores are busy (2 cores, the suite, a Dask worker, a neighbour's
# job) each of t-SNE's 1,000 gradient steps then waits on a spinning thread, and a 5-row t-SNE took from 5 to
# 65 s instead of 0.1 s. Waiting changes no result. Set before any OpenMP library loads (test modules import
# them after this file), and passed on to the children the tests start; a value already set is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")


def _numpy_backend() -> SimpleNamespace:
    from embedlab.engine.table import EmbeddingTable

    def table(rows):
        return EmbeddingTable.from_rows(rows)

    return SimpleNamespace(
        name="numpy",
        lookup=lambda rows, ids: table(rows).lookup(ids).tolist(),
        lookup_via_one_hot=lambda rows, ids: table(rows).lookup_via_one_hot(ids).tolist(),
        logits=lambda rows, hidden: table(rows).logits(hidden).tolist(),
        nearest_by_cosine=lambda rows, i, k: table(rows).nearest([i], k, "cosine").ids[0].tolist(),
        nearest_by_dot=lambda rows, i, k: table(rows).nearest([i], k, "dot").ids[0].tolist(),
        stretch=lambda rows, i, f: table(rows).stretch(i, f).W_E.tolist(),
        scaled_lookup=lambda rows, ids, dim: table(rows).scaled_lookup(ids).tolist(),
    )


def _reference_backend() -> SimpleNamespace:
    return SimpleNamespace(
        name="reference",
        lookup=embed.lookup,
        lookup_via_one_hot=embed.lookup_via_one_hot,
        logits=embed.logits,
        nearest_by_cosine=embed.nearest_by_cosine,
        nearest_by_dot=embed.nearest_by_dot,
        stretch=embed.stretch,
        scaled_lookup=embed.scaled_lookup,
    )


# Doctests that run for more than a few seconds, by node id: the README's Python section loads minilm and
# glove and draws figures. A doctest has no decorator to carry the marker.
SLOW_DOCTESTS = {"README.md::README.md"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid in SLOW_DOCTESTS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(params=["reference", "numpy"])
def backend(request: pytest.FixtureRequest) -> SimpleNamespace:
    """Every backend behind the reference's function signatures."""
    if request.param == "numpy":
        if not HAS_NUMPY:
            pytest.skip("numpy is not installed")
        return _numpy_backend()
    return _reference_backend()


# -- a tiny word-level tokenizer (tokenizers library), no data package needed --

WORD_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b", "c", "i", "like", "apples", "are", "red"]


@pytest.fixture
def word_tokenizer():
    """A BERT-like tokenizer over ``WORD_VOCAB``: whitespace words, [CLS] text [SEP]."""
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {token: i for i, token in enumerate(WORD_VOCAB)}
    tk = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tk.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tk.post_processor = tokenizers.processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    return tk


# -- tiny checkpoints of many model families, built once per run with transformers --

@pytest.fixture(scope="session")
def hf_families(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """name -> ``families.Truth``: each family of ``families.FAMILIES`` saved once per test process (a few seconds)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import families

    root = tmp_path_factory.mktemp("families")
    return {f.name: families.build(f, root / f.name) for f in families.FAMILIES}


@pytest.fixture(scope="module")
def local_cluster():
    """A Dask ``LocalCluster`` of 2 worker processes, 1 thread each, for the module's tests; closed after.

    Kept cheap: no dashboard, 1 GiB per worker; every port a free one. The workers are new processes that import
    embedlab as this process does (they inherit PYTHONPATH and the working folder).
    """
    distributed = pytest.importorskip("distributed")
    # No dashboard; its HTTP server still starts, on a free port (":0"): the default, 8787, may be taken
    # by another cluster on this machine, and the fallback warns ("Port 8787 is already in use").
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, memory_limit="1GiB",
                                       dashboard_address=None, scheduler_kwargs={"dashboard_address": ":0"})
    try:
        yield cluster
    finally:
        cluster.close()
