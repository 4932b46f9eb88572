"""Scans over blocks of rows on the cores: results in block order, the first error in block order, nesting safe."""

from __future__ import annotations

import threading

import pytest

from embedlab.engine import row_blocks
from embedlab.engine.row_blocks import map_row_blocks, row_edges


def test_blocks_cover_every_row_once_and_in_order():
    assert row_edges(0, 3) == []
    assert row_edges(7, 3) == [(0, 3), (3, 6), (6, 7)]
    assert row_edges(2, 0) == [(0, 1), (1, 2)]  # at least one row per block


@pytest.mark.parametrize("parallel", [False, True])
def test_results_come_back_in_block_order(parallel):
    assert map_row_blocks(lambda a, b: list(range(a, b)), 10, 3, parallel=parallel) == [
        [0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]


def test_blocks_run_on_other_threads_when_the_machine_has_several_cores(monkeypatch):
    monkeypatch.setattr(row_blocks, "CORES", 2)
    names = map_row_blocks(lambda a, b: threading.current_thread().name, 6, 1)
    assert all(name.startswith("embedlab-rows") for name in names)
    assert map_row_blocks(lambda a, b: threading.current_thread().name, 6, 1, parallel=False) == [
        threading.current_thread().name] * 6


def test_the_first_error_in_block_order_is_raised(monkeypatch):
    monkeypatch.setattr(row_blocks, "CORES", 2)

    def work(a, b):
        if a in (2, 5):
            raise ValueError(f"block at {a}")
        return a

    with pytest.raises(ValueError, match="block at 2"):
        map_row_blocks(work, 8, 1)


def test_a_scan_inside_a_block_runs_on_that_blocks_thread(monkeypatch):
    monkeypatch.setattr(row_blocks, "CORES", 2)

    def outer(a, b):  # every pool thread busy with an outer block: an inner submit would wait for itself
        here = threading.current_thread().name
        return map_row_blocks(lambda c, d: threading.current_thread().name == here, 4, 1)

    assert map_row_blocks(outer, 8, 1) == [[True] * 4] * 8


def test_a_forked_child_scans_on_threads_of_its_own(monkeypatch):
    import multiprocessing

    monkeypatch.setattr(row_blocks, "CORES", 2)
    map_row_blocks(lambda a, b: a, 4, 1)  # the parent's pool is running
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        assert pool.apply_async(_scan_in_child).get(timeout=60) == [0, 1, 2, 3]  # a pool forgotten: a hang


def _scan_in_child():
    row_blocks.CORES = 2
    return map_row_blocks(lambda a, b: a, 4, 1)
