"""The block reader: a tensor read over the cores equals the file's bytes read plainly, bit for bit.

Files are written by hand (``safetensors_writer``); each expected array is
computed from the bytes the test wrote, by NumPy on the whole buffer at once
(bfloat16: the 16 bits moved to the top of a float32), by torch's own bfloat16
where installed, and by the safetensors library for the dtypes NumPy has.
"""

from __future__ import annotations

import gc
import mmap
import os
import tracemalloc

import numpy as np
import pytest

from embedlab.engine.lengths import vector_norms
from embedlab.engine.table import EmbeddingTable
from embedlab.errors import SourceError
from embedlab.sources import loaders, safetensors, tensor_data
from safetensors_writer import write_safetensors

# Shapes whose rows do not divide into blocks: one row, one column, a prime count, a row wider than a block.
SHAPES = [(1, 1), (7, 3), (101, 13), (3, 5003), (257, 64)]


def _bf16_bits(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Random finite bfloat16 bit patterns (every exponent but the all-ones one, both signs, subnormals too)."""
    bits = rng.integers(0, 1 << 16, size=shape, dtype=np.uint16)
    exponent_all_ones = (bits & 0x7F80) == 0x7F80
    return np.where(exponent_all_ones, bits & 0xBFFF, bits).astype("<u2")  # (shape) NaN/inf made finite


def _widen(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bits -> float32, the whole array at once: the 16 bits on top, zeros below."""
    return (bits.astype("<u4") << 16).view("<f4")


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 64 bytes: every tensor below is read in many blocks, the last one short."""
    monkeypatch.setattr(tensor_data, "BLOCK_BYTES", 64)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("parallel", [False, True])
def test_bf16_read_over_the_cores_equals_the_whole_buffer_widened_bit_for_bit(tmp_path, small_blocks, shape, parallel):
    bits = _bf16_bits(np.random.default_rng(sum(shape)), shape)
    path = write_safetensors(tmp_path / "t.safetensors", {"w": ("BF16", shape, bits.tobytes())})
    data, norms = tensor_data.read_data(safetensors.tensor_infos(path)["w"], parallel=parallel)
    assert data.dtype == np.float32 and data.shape == shape and data.base is None and norms is None
    assert np.array_equal(data.view(np.uint32), _widen(bits).view(np.uint32))


def test_bf16_read_equals_torch_bfloat16_widened(tmp_path, small_blocks):
    torch = pytest.importorskip("torch")
    bits = _bf16_bits(np.random.default_rng(3), (211, 17))
    path = write_safetensors(tmp_path / "t.safetensors", {"w": ("BF16", bits.shape, bits.tobytes())})
    data = safetensors.read_tensor(safetensors.tensor_infos(path)["w"])
    expected = torch.frombuffer(bytearray(bits.tobytes()), dtype=torch.bfloat16).float().numpy().reshape(bits.shape)
    assert np.array_equal(data.view(np.uint32), expected.view(np.uint32))


def test_nan_and_infinity_bits_are_kept_as_they_are(tmp_path, small_blocks):
    bits = np.array([[0x7FC0, 0x7F80], [0xFF80, 0x7FC1]], dtype="<u2")  # NaN, inf, -inf, a NaN with a payload
    path = write_safetensors(tmp_path / "t.safetensors", {"w": ("BF16", (2, 2), bits.tobytes())})
    data = safetensors.read_tensor(safetensors.tensor_infos(path)["w"])
    assert data.view(np.uint32).tolist() == [[0x7FC00000, 0x7F800000], [0xFF800000, 0x7FC10000]]


@pytest.mark.parametrize("dtype, numpy_dtype", [("F16", "<f2"), ("F32", "<f4"), ("F64", "<f8")])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("pad, mapped, maps", [(b"abc", False, False),  # read into memory
                                                (b"abc", True, False),  # an offset the dtype's size does not divide
                                                (b"abcdefgh", True, True)])  # 8 bytes in: every dtype aligned, mapped
def test_float_tensors_are_read_as_the_file_holds_them(tmp_path, small_blocks, dtype, numpy_dtype, shape, pad, mapped,
                                                       maps):
    values = np.random.default_rng(7).standard_normal(shape).astype(numpy_dtype)  # (shape)
    path = write_safetensors(tmp_path / "t.safetensors",
                             {"pad": ("I8", (len(pad),), pad), "w": (dtype, shape, values.tobytes())})
    data, norms = tensor_data.read_data(safetensors.tensor_infos(path)["w"], mapped=mapped, lengths=len(shape) == 2)
    assert data.dtype == np.dtype(numpy_dtype) and data.shape == shape and data.flags.c_contiguous
    assert _maps(data) == maps and (data.base is None) == (not maps) and data.flags.writeable == (not maps)
    assert data.tobytes() == values.tobytes()
    assert np.array_equal(norms.view(np.int64), vector_norms(values, parallel=False).view(np.int64))
    from safetensors.numpy import load_file  # the format's own reader
    assert load_file(str(path))["w"].tobytes() == values.tobytes()


@pytest.mark.parametrize("dtype, shape", [("BF16", (101, 13)), ("BF16", (3, 5003)), ("F32", (257, 64)), ("F16", (7, 3)),
                                          ("F64", (50, 9))])
@pytest.mark.parametrize("mapped", [False, True])
def test_lengths_measured_while_reading_equal_vector_norms_bit_for_bit(tmp_path, small_blocks, dtype, shape, mapped):
    rng = np.random.default_rng(11)
    if dtype == "BF16":
        raw = _bf16_bits(rng, shape).tobytes()
    else:
        raw = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, size=(shape[0], 1))).astype(
            {"F32": "<f4", "F16": "<f2", "F64": "<f8"}[dtype]).tobytes()
    path = write_safetensors(tmp_path / "t.safetensors", {"w": (dtype, shape, raw)})
    data, norms = tensor_data.read_data(safetensors.tensor_infos(path)["w"], lengths=True, mapped=mapped)
    assert norms.dtype == np.float64 and norms.shape == (shape[0],) and _maps(data) == (mapped and dtype != "BF16")
    whole = vector_norms(data, parallel=False)  # the whole table on one thread, as the table measures it
    assert np.array_equal(norms.view(np.int64), whole.view(np.int64))
    assert np.allclose(norms, np.linalg.norm(data.astype(np.float64), axis=1), rtol=1e-14, atol=0)


def test_a_file_that_shrank_after_its_header_was_read_is_refused_as_truncated(tmp_path, small_blocks):
    bits = _bf16_bits(np.random.default_rng(5), (64, 8))
    path = write_safetensors(tmp_path / "t.safetensors", {"w": ("BF16", (64, 8), bits.tobytes())})
    info = safetensors.tensor_infos(path)["w"]
    size = os.path.getsize(path)  # the tensor is the file's last bytes: its data ends where the file did
    os.truncate(path, size - 100)
    with pytest.raises(SourceError, match=rf"truncated: tensor 'w' ends at byte {size:,} of the file, but the file now "
                                          rf"ends at byte {size - 100:,} \(it shrank after its header was read\)"):
        tensor_data.read_data(info)


def test_only_a_regular_file_is_read(tmp_path):
    bits = _bf16_bits(np.random.default_rng(5), (4, 2))
    path = write_safetensors(tmp_path / "t.safetensors", {"w": ("BF16", (4, 2), bits.tobytes())})
    info = safetensors.tensor_infos(path)["w"]
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(SourceError, match="fifo"):
        tensor_data.read_data(safetensors.TensorInfo("w", info.shape, "BF16", fifo, info.span))


def test_lengths_need_a_table(tmp_path):
    path = write_safetensors(tmp_path / "t.safetensors", {"w": ("F32", (4,), np.ones(4, "<f4").tobytes())})
    with pytest.raises(ValueError, match="2-D"):
        tensor_data.read_data(safetensors.tensor_infos(path)["w"], lengths=True)


def test_an_empty_tensor_is_an_empty_array(tmp_path):
    path = write_safetensors(tmp_path / "t.safetensors", {"w": ("BF16", (0, 4), b"")})
    data, norms = tensor_data.read_data(safetensors.tensor_infos(path)["w"], lengths=True)
    assert data.shape == (0, 4) and norms.shape == (0,)


@pytest.mark.parametrize("bad, shown", [(0x7FC0, "nan"), (0xFF80, "-inf")])
def test_a_bf16_table_holding_nan_or_infinity_is_refused_naming_row_and_column(tmp_path, small_blocks, bad, shown):
    bits = _bf16_bits(np.random.default_rng(9), (40, 6))
    bits[29, 4] = bad
    write_safetensors(tmp_path / "model.safetensors", {"embed_tokens.weight": ("BF16", (40, 6), bits.tobytes())})
    with pytest.raises(ValueError, match=rf"holds {shown} at row 29, column 4"):
        loaders.load(str(tmp_path / "model.safetensors"))


def test_the_loaded_table_is_the_array_read_not_a_copy_and_keeps_the_lengths_read(tmp_path, monkeypatch):
    read = []

    def recording(info, **options):
        data, norms = real(info, **options)
        read.append((data, norms))
        return data, norms

    real = tensor_data.read_data
    monkeypatch.setattr(tensor_data, "read_data", recording)
    values = np.random.default_rng(1).standard_normal((300, 16)).astype("<f4")
    write_safetensors(tmp_path / "model.safetensors", {"embed_tokens.weight": ("F32", (300, 16), values.tobytes())})
    table = loaders.load(str(tmp_path / "model.safetensors"))
    (data, norms), = read
    assert table.W_E is data and not table.W_E.flags.writeable
    assert np.array_equal(table.norms().view(np.int64), norms.view(np.int64))
    assert np.array_equal(table.norms().view(np.int64), vector_norms(values, parallel=False).view(np.int64))


def _maps(array: np.ndarray) -> bool:
    """Whether the array is a view of an mmap (np.frombuffer keeps a memoryview of it)."""
    base = array.base
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(getattr(base, "obj", None), mmap.mmap)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("pad, mapped, maps", [(b"abcd", True, True),  # an even offset: the file's map
                                                (b"abc", True, False),  # an odd one: a uint16 view would be misaligned
                                                (b"abcd", False, False)])  # read into memory, as asked
def test_bf16_bits_are_read_as_the_file_holds_them_with_the_widened_tables_lengths(tmp_path, small_blocks, shape,
                                                                                  parallel, pad, mapped, maps):
    bits = _bf16_bits(np.random.default_rng(sum(shape) + 1), shape)
    path = write_safetensors(tmp_path / "t.safetensors",
                             {"pad": ("I8", (len(pad),), pad), "w": ("BF16", shape, bits.tobytes())})
    info = safetensors.tensor_infos(path)["w"]
    assert info.span[0] % 2 == len(pad) % 2  # the header is padded to 8 bytes: the pad sets the offset's parity
    got, norms = tensor_data.read_bf16_bits(info, parallel=parallel, mapped=mapped)
    assert got.dtype == np.uint16 and got.shape == shape and got.tobytes() == bits.tobytes()
    assert not got.flags.writeable and _maps(got) == maps and (got.base is None) == (not maps)
    whole = vector_norms(_widen(bits), parallel=False)  # the widened table's lengths, measured whole
    assert np.array_equal(norms.view(np.int64), whole.view(np.int64))


def test_a_file_the_system_will_not_map_is_read_instead(tmp_path, monkeypatch):
    bits = _bf16_bits(np.random.default_rng(2), (40, 6))
    path = write_safetensors(tmp_path / "t.safetensors", {"w": ("BF16", (40, 6), bits.tobytes())})

    def refuse(*args, **kwargs):
        raise OSError(19, "No such device")  # ENODEV: what mmap says of a file system without maps

    monkeypatch.setattr(tensor_data.mmap, "mmap", refuse)
    got, norms = tensor_data.read_bf16_bits(safetensors.tensor_infos(path)["w"])
    assert got.base is None and got.tobytes() == bits.tobytes()
    assert np.array_equal(norms.view(np.int64), vector_norms(_widen(bits), parallel=False).view(np.int64))


@pytest.mark.parametrize("mapped", [True, False])
def test_bf16_bits_of_a_table_shorter_than_a_block_hold_no_more_scratch_than_said(tmp_path, mapped):
    # 50 rows of 8: one block (BLOCK_BYTES of the file is 32,768 rows), one thread; the scratch is that
    # block widened to float32 (1,600 bytes) and what its lengths take, not a whole block's 1 MiB buffer
    bits = _bf16_bits(np.random.default_rng(3), (50, 8))
    path = write_safetensors(tmp_path / "t.safetensors", {"w": ("BF16", (50, 8), bits.tobytes())})
    info = safetensors.tensor_infos(path)["w"]
    tensor_data.read_bf16_bits(info, parallel=False, mapped=mapped)  # once untraced: first-call caches
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        got, norms = tensor_data.read_bf16_bits(info, parallel=False, mapped=mapped)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    beside = peak - norms.nbytes - (0 if mapped else got.nbytes)  # what the read held beside its outputs
    # 16 KiB for the interpreter's own small objects while reading (the open file, the threads' locals)
    assert beside <= tensor_data.scratch_bytes(info, lengths=True, bits=True) + 16 * 1024


@pytest.mark.parametrize("dtype", ["BF16", "F16", "F32", "F64"])
def test_a_file_that_shrank_before_it_is_mapped_is_refused_as_truncated(tmp_path, monkeypatch, dtype):
    raw = np.random.default_rng(5).integers(0, 0x3F00, size=64 * 8 * 4, dtype=np.uint16).tobytes()  # finite in all
    raw = raw[:64 * 8 * {"BF16": 2, "F16": 2, "F32": 4, "F64": 8}[dtype]]
    path = write_safetensors(tmp_path / "t.safetensors", {"w": (dtype, (64, 8), raw)})
    info = safetensors.tensor_infos(path)["w"]
    size = os.path.getsize(path)  # the tensor is the file's last bytes: its data ends where the file did
    os.truncate(path, size - 1)  # one byte short: within the map's last page, zeros the map would show silently
    message = (rf"truncated: tensor 'w' ends at byte {size:,} of the file, but the file now ends at byte {size - 1:,} "
               r"\(it shrank after its header was read\)")

    def never(*args, **kwargs):  # refused before any map is made (CPython's own refusal would fall back to reading)
        raise AssertionError("a file shorter than the span was mapped")

    monkeypatch.setattr(tensor_data.mmap, "mmap", never)
    with pytest.raises(SourceError, match=message):
        if dtype == "BF16":
            tensor_data.read_bf16_bits(info)
        else:
            tensor_data.read_data(info, mapped=True)


def test_a_float_checkpoints_table_is_its_files_map_and_answers_as_the_array_read(tmp_path):
    values = np.random.default_rng(8).standard_normal((300, 16)).astype("<f2")
    write_safetensors(tmp_path / "model.safetensors", {"embed_tokens.weight": ("F16", (300, 16), values.tobytes())})
    table = loaders.load(str(tmp_path / "model.safetensors"))
    assert _maps(table.W_E) and table.resident().mapped and table.load_cost.mapped and not table.W_E.flags.writeable
    plain = EmbeddingTable(values.copy())  # the same values in memory of its own
    assert np.array_equal(table.norms().view(np.int64), plain.norms().view(np.int64))
    for metric in ("cosine", "dot"):
        got, want = table.nearest([5, 17], 7, metric), plain.nearest([5, 17], 7, metric)
        assert np.array_equal(got.ids, want.ids) and np.array_equal(got.scores, want.scores)


def test_a_mapped_table_outlives_its_file_handle_and_is_let_go_with_its_table(tmp_path):
    bits = _bf16_bits(np.random.default_rng(6), (300, 16))
    write_safetensors(tmp_path / "model.safetensors", {"embed_tokens.weight": ("BF16", (300, 16), bits.tobytes())})
    table = loaders.load(str(tmp_path / "model.safetensors"))
    assert table.rows().mapped and table.resident().mapped and table.load_cost.mapped
    assert np.array_equal(table.lookup(np.arange(300)).view(np.uint32), _widen(bits).view(np.uint32))
    assert np.array_equal(table.W_E.view(np.uint32), _widen(bits).view(np.uint32))  # widened: the map let go
    assert not table.resident().mapped and table.resident().table == 300 * 16 * 4


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="maps and descriptors are read from /proc")
@pytest.mark.parametrize("dtype", ["BF16", "F16"])
def test_each_mapped_table_holds_one_map_and_one_descriptor_until_it_is_dropped_or_widened(tmp_path, dtype):
    rng = np.random.default_rng(9)
    raw = (_bf16_bits(rng, (300, 16)) if dtype == "BF16" else rng.standard_normal((300, 16)).astype("<f2")).tobytes()
    path = write_safetensors(tmp_path / "model.safetensors", {"embed_tokens.weight": (dtype, (300, 16), raw)})
    where = str(path.resolve())

    def maps() -> int:  # the process's maps of the file (/proc/self/maps names the file at the end of its line)
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as lines:
            return sum(line.rstrip("\n").endswith(where) for line in lines)

    def descriptors() -> int:
        return len(os.listdir("/proc/self/fd"))

    gc.collect()
    before = (maps(), descriptors())
    tables = [loaders.load(str(path)) for _ in range(10)]
    assert (maps(), descriptors()) == (before[0] + 10, before[1] + 10)  # the map keeps a descriptor of its own
    if dtype == "BF16":
        tables[0].W_E  # widened whole: the bits, and their map, are let go
        gc.collect()
        assert maps() == before[0] + 9
    del tables
    gc.collect()
    assert (maps(), descriptors()) == before


@pytest.mark.parametrize("dtype, shape", [("F32", (4, 2)), ("BF16", (8,)), ("BF16", (0, 3))])
def test_bf16_bits_need_a_bf16_table(tmp_path, dtype, shape):
    raw = b"\0" * (int(np.prod(shape)) * (4 if dtype == "F32" else 2))
    path = write_safetensors(tmp_path / "t.safetensors", {"w": (dtype, shape, raw)})
    with pytest.raises(ValueError, match=rf"2-D BF16 tensor.*'w' is {dtype}"):
        tensor_data.read_bf16_bits(safetensors.tensor_infos(path)["w"])


def test_a_bf16_checkpoint_table_is_kept_as_the_bits_read_and_widened_only_when_asked(tmp_path, monkeypatch):
    read = []

    def recording(info, **options):
        bits, norms = real(info, **options)
        read.append((bits, norms))
        return bits, norms

    real = tensor_data.read_bf16_bits
    monkeypatch.setattr(tensor_data, "read_bf16_bits", recording)
    bits = _bf16_bits(np.random.default_rng(1), (300, 16))
    write_safetensors(tmp_path / "model.safetensors", {"embed_tokens.weight": ("BF16", (300, 16), bits.tobytes())})
    table = loaders.load(str(tmp_path / "model.safetensors"))
    (held, norms), = read
    assert table.rows().bits is held and not held.flags.writeable  # no copy
    assert table.resident().table == 300 * 16 * 2 and table.dtype == np.float32
    assert np.array_equal(table.norms().view(np.int64), norms.view(np.int64))
    assert np.array_equal(table.norms().view(np.int64), vector_norms(_widen(bits), parallel=False).view(np.int64))
    assert np.array_equal(table.W_E.view(np.uint32), _widen(bits).view(np.uint32))  # widened on first use
    assert table.rows() is table.W_E and table.resident().table == 300 * 16 * 4  # the bits let go
