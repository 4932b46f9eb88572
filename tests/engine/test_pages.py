"""Fresh table-sized arrays: plain arrays that own their memory, whether or not small pages can be asked for."""

from __future__ import annotations

import numpy as np
import pytest

from embedlab.engine import pages


@pytest.mark.parametrize("madvise", ["libc", None])
@pytest.mark.parametrize("shape", [(3, 5), (1024, 1025)])  # below and above the 4 MiB where pages are advised
def test_a_fresh_table_is_a_plain_array_that_owns_its_memory(monkeypatch, madvise, shape):
    if madvise is None:
        monkeypatch.setattr(pages, "_madvise", None)
    data = pages.fresh_table(shape, np.dtype("<f4"))
    data[...] = 1.5
    assert data.shape == shape and data.dtype == np.float32 and data.base is None and data.flags.c_contiguous
    assert float(data.sum()) == 1.5 * shape[0] * shape[1]
