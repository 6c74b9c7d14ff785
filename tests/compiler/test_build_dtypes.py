"""compiler.build end to end for every dtype: integer arithmetic (floordiv / floormod
with negatives, truncdiv / truncmod), float64, bool results, casts, reduction
identities at the limits of each dtype; compared with numpy."""
from __future__ import annotations


import numpy as np
import pytest

import compiler
from compiler import te
from compiler.ir import expr as E
from build_check import as_f64, check_build, elementwise, randn, run_graph, unwritten
from compiler.ir.dtype import numpy_dtype

pytestmark = pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")


# --------------------------------------------------------------------------- dtypes


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_int_arithmetic(dtype):
    n = 23
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.placeholder((n,), name="B", dtype=dtype)
    C = te.compute((n,), lambda i: A[i] * B[i] - A[i] + 3, name="C")
    Mx = te.compute((n,), lambda i: te.max(A[i], B[i]) - te.min(A[i], B[i]), name="Mx")
    Ab = te.compute((n,), lambda i: te.abs(A[i]), name="Ab")
    s = te.create_schedule([C.op, Mx.op, Ab.op])
    xo, xi = s[C].split(C.op.axis[0], factor=8)
    s[C].vectorize(xi)
    rng = np.random.default_rng(7)
    a = rng.integers(-10, 11, n).astype(dtype)
    b = rng.integers(-10, 11, n).astype(dtype)
    check_build(s, [A, B, C, Mx, Ab], [a, b],
                [a * b - a + 3, np.maximum(a, b) - np.minimum(a, b), np.abs(a)])


def test_int64_values_beyond_32_bits():
    A = te.placeholder((5,), name="A", dtype="int64")
    C = te.compute((5,), lambda i: A[i] * 3 + (A[i] // 7), name="C")
    s = te.create_schedule(C.op)
    a = np.array([2 ** 40, -(2 ** 40) - 3, 2 ** 33 + 1, -1, 0], dtype="int64")
    check_build(s, [A, C], [a], [a * 3 + a // 7])


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
@pytest.mark.parametrize("vectorize", [False, True])
def test_floordiv_floormod_negative(dtype, vectorize):
    n = 24
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.placeholder((n,), name="B", dtype=dtype)
    D = te.compute((n,), lambda i: te.floordiv(A[i], B[i]), name="D")
    M = te.compute((n,), lambda i: te.floormod(A[i], B[i]), name="M")
    Dc = te.compute((n,), lambda i: A[i] // 3 + A[i] // -4, name="Dc")
    Mc = te.compute((n,), lambda i: A[i] % 3 + A[i] % -4, name="Mc")
    outs = [D, M, Dc, Mc]
    s = te.create_schedule([o.op for o in outs])
    if vectorize:
        for o in outs:
            xo, xi = s[o].split(o.op.axis[0], factor=8)
            s[o].vectorize(xi)
    rng = np.random.default_rng(8)
    a = rng.integers(-50, 51, n).astype(dtype)
    a[:4] = [-9, -8, 9, 0]
    b = rng.choice([-7, -4, -3, -2, -1, 1, 2, 3, 5], n).astype(dtype)
    check_build(s, [A, B, *outs], [a, b], [a // b, a % b, a // 3 + a // -4, a % 3 + a % -4])


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_truncdiv_truncmod_negative(dtype):
    n = 24
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.placeholder((n,), name="B", dtype=dtype)
    D = te.compute((n,), lambda i: te.truncdiv(A[i], B[i]), name="D")
    M = te.compute((n,), lambda i: te.truncmod(A[i], B[i]), name="M")
    Dc = te.compute((n,), lambda i: te.truncdiv(A[i], -3), name="Dc")
    Mc = te.compute((n,), lambda i: te.truncmod(A[i], -3), name="Mc")
    outs = [D, M, Dc, Mc]
    s = te.create_schedule([o.op for o in outs])
    rng = np.random.default_rng(9)
    a = rng.integers(-100, 101, n).astype(dtype)
    b = rng.choice([-7, -4, -3, -2, -1, 1, 2, 3, 5], n).astype(dtype)
    q = np.fix(a / b).astype(dtype)
    qc = np.fix(a / -3).astype(dtype)
    check_build(s, [A, B, *outs], [a, b], [q, a - q * b, qc, a - qc * -3])


def test_index_floordiv_floormod_negative_offsets():
    # C[i] = A[(i - 5) floordiv 4 + 2, (i - 5) floormod 4]: the index arithmetic itself
    # meets negative operands, which truncating division would get wrong
    A = te.placeholder((5, 4), name="A")
    C = te.compute((13,), lambda i: A[(i - 5) // 4 + 2, (i - 5) % 4], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    a = randn(10, 5, 4)
    idx = np.arange(13) - 5
    check_build(s, [A, C], [a], [a[idx // 4 + 2, idx % 4]], rtol=0, atol=0)


@pytest.mark.parametrize("vectorize", [False, True])
def test_float64_arithmetic_and_sum(vectorize):
    n, m = 9, 33
    A = te.placeholder((n, m), name="A", dtype="float64")
    B = te.placeholder((m,), name="B", dtype="float64")
    C = te.compute((n, m), lambda i, j: A[i, j] * B[j] - A[i, j] / 3.0, name="C")
    k = te.reduce_axis((0, m), name="k")
    S = te.compute((n,), lambda i: te.sum(A[i, k] * B[k], axis=k), name="S")
    s = te.create_schedule([C.op, S.op])
    if vectorize:
        jo, ji = s[C].split(C.op.axis[1], factor=4)
        s[C].vectorize(ji)
    a, b = randn(11, n, m, dtype="float64"), randn(12, m, dtype="float64")
    check_build(s, [A, B, C, S], [a, b], [a * b - a / 3.0, a @ b], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("vectorize", [False, True])
def test_bool_outputs_from_comparisons(vectorize):
    n = 21
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    I = te.placeholder((n,), name="I", dtype="int32")
    Lt = te.compute((n,), lambda i: A[i] < B[i], name="Lt")
    Ge = te.compute((n,), lambda i: A[i] >= B[i], name="Ge")
    Eq = te.compute((n,), lambda i: I[i] == 2, name="Eq")
    Both = te.compute((n,), lambda i: (A[i] > 0.0) & (I[i] != 0), name="Both")
    Neither = te.compute((n,), lambda i: ~((A[i] > 0.0) | (I[i] < 0)), name="Neither")
    outs = [Lt, Ge, Eq, Both, Neither]
    s = te.create_schedule([o.op for o in outs])
    if vectorize:
        for o in outs:
            xo, xi = s[o].split(o.op.axis[0], factor=8)
            s[o].vectorize(xi)
    a, b = randn(13, n), randn(14, n)
    b[:3] = a[:3]  # equal elements: < and >= both decided on them
    i = np.random.default_rng(15).integers(-2, 4, n).astype("int32")
    check_build(s, [A, B, I, *outs], [a, b, i],
                [a < b, a >= b, i == 2, (a > 0) & (i != 0), ~((a > 0) | (i < 0))])


def test_bool_input_read_back():
    A = te.placeholder((10,), name="A", dtype="bool")
    B = te.placeholder((10,), name="B", dtype="int32")
    C = te.compute((10,), lambda i: te.if_then_else(A[i], B[i], -B[i]), name="C")
    N = te.compute((10,), lambda i: A[i].astype("int32") + 1, name="N")
    s = te.create_schedule([C.op, N.op])
    a = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 0], dtype=bool)
    b = np.arange(10, dtype="int32")
    check_build(s, [A, B, C, N], [a, b], [np.where(a, b, -b), a.astype("int32") + 1])


def test_int32_literal_out_of_range_is_rejected():
    # accepted, it would wrap: A[i] + 3000000000 would compute A[i] - 1294967296
    A = te.placeholder((3,), name="A", dtype="int32")
    with pytest.raises((TypeError, ValueError)):
        te.compute((3,), lambda i: A[i] + 3000000000, name="C")


@pytest.mark.parametrize("schedule", ["plain", "split_vectorize", "parallel"])
def test_int64_size_var(schedule):
    # int32 loop variables meet an int64 extent in every one of these loops
    n = te.var("n", "int64")
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] * 2, name="C")
    s = te.create_schedule(C.op)
    if schedule == "split_vectorize":
        xo, xi = s[C].split(C.op.axis[0], factor=4)
        s[C].vectorize(xi)
    elif schedule == "parallel":
        s[C].parallel(C.op.axis[0])
    f = compiler.build(s, [A, C])
    for size in (1, 13):
        a = randn(48, size)
        c = unwritten(a)
        f(a, c)
        np.testing.assert_array_equal(c, a * 2)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_cast_float_to_int_truncates(dtype):
    A = te.placeholder((10,), name="A")
    C = te.compute((10,), lambda i: A[i].astype(dtype), name="C")
    s = te.create_schedule(C.op)
    a = np.array([-2.7, -1.5, -0.9, -0.2, 0.0, 0.2, 0.9, 1.5, 2.7, 99.99], "float32")
    check_build(s, [A, C], [a], [np.trunc(a).astype(dtype)])


def test_casts_between_float_int_and_bool():
    A = te.placeholder((6,), name="A", dtype="float64")
    I = te.placeholder((6,), name="I", dtype="int8")
    F32 = te.compute((6,), lambda i: A[i].astype("float32"), name="F32")
    Wide = te.compute((6,), lambda i: I[i].astype("int64") * 1000000000, name="Wide")
    Fl = te.compute((6,), lambda i: I[i].astype("float64") / 4.0, name="Fl")
    Nz = te.compute((6,), lambda i: A[i].astype("bool"), name="Nz")
    outs = [F32, Wide, Fl, Nz]
    s = te.create_schedule([o.op for o in outs])
    a = np.array([-1.25, 0.0, 3.5, 1e-30, -0.0, 7.0])
    i = np.array([-128, -1, 0, 1, 5, 127], dtype="int8")
    check_build(s, [A, I, *outs], [a, i],
                [a.astype("float32"), i.astype("int64") * 1000000000, i / 4.0,
                 a.astype(bool)], rtol=0, atol=0)


# ------------------------------------------------ int16 and the unsigned integers

NEW_INTS = ["int16", "uint8", "uint16", "uint32", "uint64"]
# a value above the signed range of each unsigned type: read as signed it is negative
ABOVE_SIGNED = {"uint8": 200, "uint16": 40000, "uint32": 3_000_000_000, "uint64": 2 ** 63 + 5}


def _ints(dtype: str, n: int, seed: int) -> np.ndarray:
    """`n` values of `dtype`: over the whole range of an unsigned type (a third of them
    above the signed range, and its greatest value), small ones for int16 (whose
    overflow LLVM may assume away, as C does)."""
    rng = np.random.default_rng(seed)
    if dtype == "int16":
        return rng.integers(-180, 181, n).astype(dtype)
    hi = np.iinfo(dtype).max
    a = rng.integers(0, hi, n, dtype=dtype, endpoint=True)
    a[::3] = ABOVE_SIGNED[dtype] + rng.integers(0, 5, len(a[::3])).astype(dtype)
    a[1] = hi
    return a


@pytest.mark.parametrize("dtype", NEW_INTS)
@pytest.mark.parametrize("n, vectorize", [(7, False), (13, True), (37, True)])
def test_new_int_elementwise(dtype, n, vectorize):
    # unsigned: wrapping + - *, udiv / urem, unsigned compare, min / max, zext to wider
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.placeholder((n,), name="B", dtype=dtype)
    wide = "uint64" if dtype.startswith("u") else "int64"
    exprs = {"add": lambda i: A[i] + B[i], "sub": lambda i: A[i] - B[i],
             "mul": lambda i: A[i] * B[i], "floordiv": lambda i: A[i] // B[i],
             "floormod": lambda i: A[i] % B[i], "max": lambda i: te.max(A[i], B[i]),
             "min": lambda i: te.min(A[i], B[i]), "lt": lambda i: A[i] < B[i],
             "ge": lambda i: A[i] >= B[i], "eq": lambda i: A[i] == B[i],
             "wide": lambda i: A[i].astype(wide), "f64": lambda i: A[i].astype("float64"),
             "abs": lambda i: te.abs(A[i])}
    s, outs = elementwise(exprs, n, vectorize)
    a, b = _ints(dtype, n, 1), _ints(dtype, n, 2)
    b[b == 0] = 3
    b[2] = a[2]  # equal operands: == and >= decided on them
    with np.errstate(over="ignore"):
        want = [a + b, a - b, a * b, a // b, a % b, np.maximum(a, b), np.minimum(a, b),
                a < b, a >= b, a == b, a.astype(wide), a.astype("float64"), np.abs(a)]
    check_build(s, [A, B, *outs], [a, b], want, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["uint8", "uint32", "uint64"])
def test_unsigned_reductions_and_constants_above_the_signed_range(dtype):
    n, m = 7, 13
    big = ABOVE_SIGNED[dtype]
    A = te.placeholder((n, m), name="A", dtype=dtype)
    k = te.reduce_axis((0, m), name="k")
    Mx = te.compute((n,), lambda i: te.max(A[i, k], axis=k), name="Mx")
    k2 = te.reduce_axis((0, m), name="k2")
    Mn = te.compute((n,), lambda i: te.min(A[i, k2], axis=k2), name="Mn")
    C = te.compute((n, m), lambda i, j: te.max(A[i, j], big) + 1, name="C")
    s = te.create_schedule([Mx.op, Mn.op, C.op])
    a = _ints(dtype, n * m, 3).reshape(n, m)
    with np.errstate(over="ignore"):
        want = [a.max(1), a.min(1), np.maximum(a, np.array(big, dtype)) + np.array(1, dtype)]
    check_build(s, [A, Mx, Mn, C], [a], want)


def test_uint64_constant_beyond_int64():
    c = te.const(2 ** 63 + 5)
    assert c.dtype == "uint64" and int(c) == 2 ** 63 + 5
    with pytest.raises(ValueError, match="does not fit in uint8"):
        te.const(256, "uint8")
    with pytest.raises(ValueError, match="does not fit in uint32"):
        te.const(-1, "uint32")


@pytest.mark.parametrize("a, b, want", [("uint8", "int8", "int16"), ("uint8", "int16", "int16"),
                                        ("uint16", "int32", "int32"), ("uint32", "int8", "int64"),
                                        ("uint8", "uint32", "uint32"), ("uint16", "float32",
                                                                        "float32"),
                                        ("bool", "uint8", "uint8")])
def test_mixed_dtypes_promote_as_numpy(a, b, want):
    x, y = te.var("x", a), te.var("y", b)
    assert (x + y).dtype == want == np.promote_types(a, b).name


def test_uint64_with_a_signed_int_is_refused_naming_both():
    with pytest.raises(TypeError, match="uint64 and int64"):
        te.var("x", "uint64") + te.var("y", "int64")


def test_mixed_sign_operands_compute_in_the_promoted_type():
    # 200 (uint8) against -1 (int8): compared in int16, not as the bytes 0xc8 and 0xff
    A = te.placeholder((4,), name="A", dtype="uint8")
    B = te.placeholder((4,), name="B", dtype="int8")
    Lt = te.compute((4,), lambda i: A[i] < B[i], name="Lt")
    S = te.compute((4,), lambda i: A[i] + B[i], name="S")
    s = te.create_schedule([Lt.op, S.op])
    a = np.array([200, 0, 255, 7], "uint8")
    b = np.array([-1, -128, 127, 7], "int8")
    check_build(s, [A, B, Lt, S], [a, b], [a < b, a.astype("int16") + b])


@pytest.mark.parametrize("dtype", NEW_INTS)
def test_new_ints_through_the_graph_level(dtype):
    from compiler import graph
    from compiler.graph.ir.op.registry import call
    a, b = _ints(dtype, 7 * 13, 4).reshape(7, 13), _ints(dtype, 13, 5)
    b[b == 0] = 3
    outs, got, want = run_graph(dtype, lambda x, y: [
        graph.add(x, y), graph.subtract(x, y), graph.multiply(x, y), graph.divide(x, y),
        graph.maximum(x, y), graph.minimum(x, y), call("less", [x, y]),
        call("greater_equal", [x, y]), call("cast", [x], dtype="float64")], a, b)
    for g, w, o in zip(got, want, outs):
        assert g.dtype == w.dtype, o.op.name
        np.testing.assert_array_equal(g, w, err_msg=o.op.name)


# ------------------------------------------------------- casts between every dtype

def _cast_sources(src: str) -> np.ndarray:
    """Values of `src` that every cast must get right: signs, fractions (truncated toward
    zero), values above the signed ranges, ties of float16 and bfloat16, zeros and NaN."""
    if src == "bool":
        return np.array([True, False, True, False])
    if E.is_float(src):
        # 2049 + 2**-20: float32 rounds it to the float16 tie 2049, so float64 -> float16
        # through float32 would give 2048, not 2050
        vals = [-2.7, -1.5, -0.5, -0.0, 0.0, 1e-30, 0.2, 1.5, 2.5, 99.99, 127.9, 200.5,
                2049 + 2 ** -20, 40000.5, 3e9, 257.0, float("nan")]
        return np.array(vals).astype(numpy_dtype(src))
    vals = [0, 1, -1, 2, 127, 128, 200, 255, 256, 2049, 40000, 3_000_000_000, 2 ** 63 + 5,
            -(2 ** 31), 2 ** 64 - 1]
    return np.array([v % 2 ** 64 for v in vals], "uint64").astype(src)


def _defined(a: np.ndarray, dst: str) -> np.ndarray:
    """Where ONNX defines the cast of `a` to `dst`: everywhere, but from a float to an
    integer only where the value truncated fits."""
    if not (E.is_float(str(a.dtype)) and (E.is_int(dst) or E.is_uint(dst))):
        return np.ones(a.shape, bool)
    lo, hi = E.int_range(dst)
    x = as_f64(a)
    with np.errstate(invalid="ignore"):
        return np.isfinite(x) & (np.trunc(x) >= lo) & (np.trunc(x) <= hi)


@pytest.mark.parametrize("src", E.DTYPES)
def test_cast_to_every_dtype_as_onnx(src):
    # float -> int truncates toward zero, -> float16 / bfloat16 rounds to nearest even,
    # -> bool is nonzero (NaN too), ints wrap, bool gives 0 / 1: numpy's astype does all
    # of these, where ONNX defines them
    a = _cast_sources(src)
    n = len(a)
    A = te.placeholder((n,), name="A", dtype=src)
    outs = [te.compute((n,), (lambda d: lambda i: A[i].astype(d))(dst), name=f"to_{dst}")
            for dst in E.DTYPES]
    s = te.create_schedule([o.op for o in outs])
    for o in outs[::2]:  # every other one vectorized
        xo, xi = s[o].split(o.op.axis[0], factor=8)
        s[o].vectorize(xi)
    f = compiler.build(s, [A, *outs])
    got = [np.zeros(n, numpy_dtype(dst)) for dst in E.DTYPES]
    f(a, *got)
    for dst, g in zip(E.DTYPES, got):
        with np.errstate(invalid="ignore", over="ignore"):
            want = a.astype(numpy_dtype(dst))
        ok = _defined(a, dst)
        if dst == "bool" or not E.is_float(dst):
            np.testing.assert_array_equal(g[ok], want[ok], err_msg=f"{src} -> {dst}")
        else:
            np.testing.assert_array_equal(as_f64(g[ok]), as_f64(want[ok]),
                                          err_msg=f"{src} -> {dst}")


@pytest.mark.parametrize("src, dst", [("float32", "uint8"), ("float16", "int32"),
                                      ("uint32", "float16"), ("float64", "bfloat16"),
                                      ("int64", "bool"), ("float32", "bool"),
                                      ("bool", "float16"), ("uint64", "int8")])
def test_graph_cast_compiled_and_folded(src, dst):
    # the compiled cast and FoldConstant's (the numpy reference) agree
    from compiler import graph
    from compiler.graph.ir.op.registry import call
    a = _cast_sources(src)
    a = a[_defined(a, dst)]
    x = graph.var("x", shape=a.shape, dtype=src)
    fn = graph.Function([x], graph.Tuple([call("cast", [x], dtype=dst),
                                          call("cast", [graph.const(a)], dtype=dst)]))
    lib = graph.build(graph.IRModule.from_expr(fn))
    compiled, folded = lib.run(x=a)
    assert compiled.dtype == folded.dtype == numpy_dtype(dst)
    np.testing.assert_array_equal(as_f64(compiled), as_f64(folded))
