"""The torch screen (engine.neighbors.torch_screen) on device="cpu": the same lists as the NumPy screen, id for id.

The CUDA path is the same code on another device; it is checked on a machine with a GPU.
Expected lists come from a float64 full sort written here (exact on dyadic tables) and
from the front door's NumPy float screen, never from the torch screen itself.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from embedlab.engine.neighbors.torch_screen import resolve_device
from embedlab.errors import ChoiceError, MissingExtraError
from full_sort import full_sort
from searching import search
from strategies import draw_queries, dyadic_tables

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


@settings(max_examples=120, deadline=None)
@given(W=dyadic_tables(dtypes=(np.float64, np.float32, np.float16)), data=st.data())
def test_torch_screen_on_cpu_lists_what_numpy_lists(W, data):
    metric = data.draw(st.sampled_from(["cosine", "dot"]))
    memory = data.draw(st.sampled_from([2**16, 2**20, 256 * 2**20]))  # many blocks of rows, or one
    Q, exclude, k = draw_queries(data, W)
    before = np.array(W, copy=True)
    ids_t, scores_t = search(W, Q, k, metric, exclude=exclude, memory=memory, device="cpu")
    ids_n, scores_n = search(W, Q, k, metric, exclude=exclude, memory=memory, screen="float")
    assert np.array_equal(W, before)  # never mutates the table
    assert ids_t.tolist() == ids_n.tolist()
    assert np.array_equal(scores_t, scores_n)  # the same float64 rescoring, bit for bit
    assert ids_t.tolist() == full_sort(W, W[exclude] if Q is None else Q, k, metric, exclude)[0].tolist()


@pytest.mark.parametrize("metric", ["cosine", "dot"])
def test_many_exact_ties_and_many_blocks(metric):
    # Integer rows, a row repeated 30 times, zero rows: more exact ties than the pool's slots.
    rng = np.random.default_rng(4)
    W = rng.integers(-2, 3, size=(3000, 8)).astype(np.float32)
    W[rng.integers(0, 3000, size=30)] = W[11]
    W[rng.integers(0, 3000, size=20)] = 0.0
    queries = np.arange(0, 3000, 13)
    got = search(W, None, 25, metric, exclude=queries, memory=2**20, device="cpu")[0]
    assert got.tolist() == full_sort(W, W[queries], 25, metric, queries)[0].tolist()


def test_float32_products_are_exact_during_the_call_and_settings_come_back():
    from embedlab.engine.neighbors.torch_screen import exact_matmul

    tf32, precision = torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")
    try:
        with exact_matmul():
            assert torch.get_float32_matmul_precision() == "highest"
            assert torch.backends.cuda.matmul.allow_tf32 is False
        assert torch.get_float32_matmul_precision() == "medium"
    finally:
        torch.set_float32_matmul_precision(precision)
        torch.backends.cuda.matmul.allow_tf32 = tf32


def test_unknown_devices_and_missing_gpus_are_named():
    W = np.eye(3)
    with pytest.raises(ChoiceError, match="unknown device 'gpu'"):
        search(W, None, 1, "dot", exclude=np.array([0]), device="gpu")
    with pytest.raises(ChoiceError, match="device must be a name"):
        search(W, None, 1, "dot", exclude=np.array([0]), device=0)
    with pytest.raises(ChoiceError, match="screen='int16'"):
        search(W, None, 1, "dot", exclude=np.array([0]), device="cpu", screen="int16")
    if not torch.cuda.is_available():  # what torch reports is in the message
        with pytest.raises(ChoiceError, match=r"not available: torch .* sees 0 GPU\(s\)"):
            search(W, None, 1, "dot", exclude=np.array([0]), device="cuda")


@pytest.mark.parametrize("cuda, said", [(None, "(a CPU-only build)"), ("12.4", "(built for CUDA 12.4)")])
def test_a_missing_gpu_names_the_build_of_torch(cuda, said, monkeypatch):
    monkeypatch.setattr(torch.version, "cuda", cuda)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ChoiceError, match=r"device 'cuda:1' is not available") as info:
        resolve_device("cuda:1")
    assert said in str(info.value) and "CUDA None" not in str(info.value)


def test_a_device_without_torch_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    with pytest.raises(MissingExtraError, match=r"\.\[torch\]") as info:
        search(np.eye(3), None, 1, "dot", exclude=np.array([0]), device="cpu")
    assert info.value.extras == ("torch",)
