"""C10: a sum of squares overflows float16."""

import numpy as np

from embedlab import embed
from embedlab.table import EmbeddingTable, rms


def test_rms_of_float16_accumulates_wide():
    assert float(rms(np.array([300, 300, 300, 300], dtype=np.float16))) == 300.0
    assert float(rms(np.array([1000, -1000, 1000, -1000], dtype=np.float16))) == 1000.0


def test_norms_of_a_float16_table():
    table = EmbeddingTable(np.array([[300, 300, 300, 300], [1000, -1000, 1000, -1000]], dtype=np.float16))
    assert table.norms().tolist() == [600.0, 2000.0]


def test_reference_values():
    assert embed.rms([3, 4]) == 3.5355339059327378
    assert embed.rms([1, 2, 3]) == 2.160246899469287
    assert embed.rms([]) == 0.0
