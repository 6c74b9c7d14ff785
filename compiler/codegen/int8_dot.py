"""The LLVM instructions of te.dot_u8s8 (the unsigned bytes of one int32 word times the
signed bytes of another, summed in int32) and of an accumulator plus it, for the
target's int8 dot product (Target.int8_dot):

- VNNI (AVX512-VNNI, AVX-VNNI): vpdpbusd, the accumulator and 16, 8 or 4 words of each
  operand in one instruction, exact (it wraps only past int32, which a sum of four
  products of bytes does not reach);
- AVX-512BW and AVX2: vpmaddubsw multiplies byte pairs and adds neighbours into 16 bits,
  saturating: 255 * 127 * 2 = 64770 does not fit. So the unsigned bytes are split into
  their low seven bits and their top bit, x = lo + 128 * hi; lo's pairs stay within
  127 * 128 * 2 = 32512 and hi's within 256, so neither saturates; vpmaddwd with ones
  adds each part's 16-bit pairs into the word's int32, and the result is lo's + hi's *
  128, exact (ONNX Runtime instead asks the user to quantize weights to 7 bits,
  `reduce_range`, for these CPUs);
- otherwise (and for lane counts none of those fits): the bytes widened to int32,
  multiplied and summed, which LLVM turns into vpmaddwd where it can.

The intrinsics exist on the CPUs that have the features; Target.int8_dot says which, as
LLVM aborts the process on an intrinsic its target lacks.
"""
from __future__ import annotations

from llvmlite import ir

from .llvm_ops import I8, I16, I32, declare, splat

_WIDTHS = {"avx512vnni": (16, 8, 4), "avxvnni": (8, 4), "avx512bw": (16, 8, 4), "avx2": (8, 4)}
"""The words per instruction each kind of target computes, widest first."""

_VPDPBUSD = {16: "llvm.x86.avx512.vpdpbusd.512", 8: "llvm.x86.avx512.vpdpbusd.256",
             4: "llvm.x86.avx512.vpdpbusd.128"}
_MADDUBS = {16: ("llvm.x86.avx512.pmaddubs.w.512", "llvm.x86.avx512.pmaddw.d.512"),
            8: ("llvm.x86.avx2.pmadd.ub.sw", "llvm.x86.avx2.pmadd.wd"),
            4: ("llvm.x86.ssse3.pmadd.ub.sw.128", "llvm.x86.sse2.pmadd.wd")}


def _lanes(v: ir.Value) -> int:
    return v.type.count if isinstance(v.type, ir.VectorType) else 1


def _vec(ty: ir.Type, n: int) -> ir.Type:
    return ir.VectorType(ty, n)


def _const(ty: ir.Type, n: int, value: int) -> ir.Constant:
    return ir.Constant(_vec(ty, n), [ir.Constant(ty, value)] * n)


def dot_u8s8(b: ir.IRBuilder, kind: str, acc: ir.Value | None, x: ir.Value,
             y: ir.Value) -> ir.Value:
    """acc + dot_u8s8(x, y) (acc None: the dot alone) on int32 values of equal lanes, by
    the instructions of the int8 dot product `kind` (Target.int8_dot)."""
    n = _lanes(x)
    if n > 1 and _lanes(y) == 1:
        y = splat(b, y, n)
    if acc is not None and n > 1 and _lanes(acc) == 1:
        acc = splat(b, acc, n)
    width = next((w for w in _WIDTHS.get(kind, ()) if n % w == 0), None)
    if width is None:
        out = _widened(b, x, y)
        return out if acc is None else b.add(acc, out)
    if acc is None:
        acc = ir.Constant(x.type, None)
    parts = [_piece(b, kind, width, x, y, acc, lo) for lo in range(0, n, width)]
    return _concat(b, parts)


def _slice(b: ir.IRBuilder, v: ir.Value, lo: int, w: int) -> ir.Value:
    if _lanes(v) == w:
        return v
    mask = ir.Constant(_vec(I32, w), [ir.Constant(I32, lo + k) for k in range(w)])
    return b.shuffle_vector(v, ir.Constant(v.type, None), mask)


def _concat(b: ir.IRBuilder, parts: list) -> ir.Value:
    while len(parts) > 1:
        pairs = []
        for k in range(0, len(parts), 2):
            u, v = parts[k], parts[k + 1]
            n = _lanes(u) * 2
            mask = ir.Constant(_vec(I32, n), [ir.Constant(I32, j) for j in range(n)])
            pairs.append(b.shuffle_vector(u, v, mask))
        parts = pairs
    return parts[0]


def _piece(b: ir.IRBuilder, kind: str, w: int, x, y, acc, lo: int) -> ir.Value:
    """acc + dot of lanes lo .. lo + w of the operands, by one instruction's width."""
    x, y, acc = (_slice(b, v, lo, w) for v in (x, y, acc))
    words = _vec(I32, w)
    if kind in ("avx512vnni", "avxvnni"):
        fn = declare(b.module, _VPDPBUSD[w], words, [words] * 3)
        return b.call(fn, [acc, x, y])
    maddubs_name, maddwd_name = _MADDUBS[w]
    bytes_, shorts = _vec(I8, 4 * w), _vec(I16, 2 * w)
    maddubs = declare(b.module, maddubs_name, shorts, [bytes_, bytes_])
    maddwd = declare(b.module, maddwd_name, words, [shorts, shorts])
    ones = _const(I16, 2 * w, 1)
    yb = b.bitcast(y, bytes_)
    low = b.and_(x, _const(I32, w, 0x7F7F7F7F))
    high = b.and_(b.lshr(x, _const(I32, w, 7)), _const(I32, w, 0x01010101))
    lo_sum = b.call(maddwd, [b.call(maddubs, [b.bitcast(low, bytes_), yb]), ones])
    hi_sum = b.call(maddwd, [b.call(maddubs, [b.bitcast(high, bytes_), yb]), ones])
    return b.add(acc, b.add(lo_sum, b.shl(hi_sum, _const(I32, w, 7))))


def _widened(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """dot_u8s8 of any lanes: the bytes widened to int32, multiplied, each word's four
    products added."""
    n = _lanes(x)
    bytes_, wide = _vec(I8, 4 * n), _vec(I32, 4 * n)
    p = b.mul(b.zext(b.bitcast(x, bytes_), wide), b.sext(b.bitcast(y, bytes_), wide))
    sums = []
    for k in range(4):
        mask = ir.Constant(_vec(I32, n), [ir.Constant(I32, 4 * j + k) for j in range(n)])
        sums.append(b.shuffle_vector(p, ir.Constant(wide, None), mask))
    out = b.add(b.add(sums[0], sums[1]), b.add(sums[2], sums[3]))
    return b.extract_element(out, I32(0)) if n == 1 else out
