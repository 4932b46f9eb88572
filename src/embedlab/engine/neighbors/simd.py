"""SIMD integer vectors for numba: the four operations the integer screen's kernel needs.

numba compiles loops over scalars; its auto-vectoriser does not find the
multiply-add of int16 pairs that makes integer scores cheap. These intrinsics
hand LLVM the vectors themselves, as portable LLVM IR (no x86 intrinsic by
name): ``madd`` is written as sign-extend, multiply, add even and odd lanes,
the pattern LLVM's x86 back end turns into one ``vpmaddwd`` on AVX2 (and into
slower but correct instructions on any other CPU).

Types: ``I16x16`` (16 int16 lanes, one AVX2 register), ``I32x8`` (8 int32 lanes).
Needs numba (the ``models`` extra); imported only when the integer screen runs.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic, models, register_model

__all__ = ["zeros8", "load16", "broadcast_pair", "madd", "add8", "store8"]

_I16x16 = ir.VectorType(ir.IntType(16), 16)
_I32x8 = ir.VectorType(ir.IntType(32), 8)
_I32x16 = ir.VectorType(ir.IntType(32), 16)


class I16x16(types.Type):
    """16 int16 lanes (an AVX2 register)."""

    def __init__(self) -> None:
        super().__init__(name="I16x16")


class I32x8(types.Type):
    """8 int32 lanes (an AVX2 register)."""

    def __init__(self) -> None:
        super().__init__(name="I32x8")


i16x16, i32x8 = I16x16(), I32x8()


@register_model(I16x16)
class _I16x16Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _I16x16)


@register_model(I32x8)
class _I32x8Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _I32x8)


def _address(context, builder, array_type, array, index):
    """Pointer to element ``index`` of a contiguous 1-D array (no bounds check: the caller's loops keep in range)."""
    data = context.make_array(array_type)(context, builder, array).data
    return builder.gep(data, [index])


@intrinsic
def zeros8(typingctx):
    """() -> I32x8 of zeros."""
    return i32x8(), lambda context, builder, sig, args: ir.Constant(_I32x8, None)


@intrinsic
def load16(typingctx, array, index):
    """(int16 array (n,), i) -> I16x16: elements i .. i + 15, unaligned."""
    def codegen(context, builder, sig, args):
        where = _address(context, builder, sig.args[0], args[0], args[1])
        return builder.load(builder.bitcast(where, _I16x16.as_pointer()), align=2)
    return i16x16(array, index), codegen


@intrinsic
def broadcast_pair(typingctx, array, index):
    """(int16 array (n,), i) -> I16x16: elements (i, i + 1) repeated eight times; i even."""
    def codegen(context, builder, sig, args):
        where = _address(context, builder, sig.args[0], args[0], args[1])
        pair = builder.load(builder.bitcast(where, ir.IntType(32).as_pointer()), align=4)
        one = builder.insert_element(ir.Constant(_I32x8, None), pair, ir.Constant(ir.IntType(32), 0))
        return builder.bitcast(builder.shuffle_vector(one, one, ir.Constant(_I32x8, None)), _I16x16)
    return i16x16(array, index), codegen


@intrinsic
def madd(typingctx, x, y):
    """(I16x16, I16x16) -> I32x8: lane j is ``x[2j] y[2j] + x[2j+1] y[2j+1]``, exact while it fits int32."""
    def codegen(context, builder, sig, args):
        product = builder.mul(builder.sext(args[0], _I32x16), builder.sext(args[1], _I32x16))
        even = builder.shuffle_vector(product, product, ir.Constant(_I32x8, list(range(0, 16, 2))))
        odd = builder.shuffle_vector(product, product, ir.Constant(_I32x8, list(range(1, 16, 2))))
        return builder.add(even, odd)
    return i32x8(x, y), codegen


@intrinsic
def add8(typingctx, x, y):
    """(I32x8, I32x8) -> I32x8, lane by lane."""
    return i32x8(x, y), lambda context, builder, sig, args: builder.add(args[0], args[1])


@intrinsic
def store8(typingctx, array, index, x):
    """(int32 array (n,), i, I32x8) -> None: writes elements i .. i + 7."""
    def codegen(context, builder, sig, args):
        where = _address(context, builder, sig.args[0], args[0], args[1])
        builder.store(args[2], builder.bitcast(where, _I32x8.as_pointer()), align=4)
        return context.get_dummy_value()
    return types.none(array, index, x), codegen
