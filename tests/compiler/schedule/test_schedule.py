"""Stage primitives keep the IterVar graph of the reference: all_iter_vars,
leaf_iter_vars and Split / Fuse / Rebase relations (compiler/schedule)."""
import numpy as np

import compiler
from compiler import te
from compiler.ir.interpreter import run
from compiler.schedule.relations import Fuse, Rebase, Split


def matmul(M=8, N=8, K=8):
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C, k


def test_split_and_fuse_record_relations_and_leaves():
    _, _, C, k = matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    io, ii = s[C].split(i, factor=4)
    f = s[C].fuse(ii, j)
    st = s[C]
    assert st.leaf_iter_vars == [io, f, k]
    assert st.all_iter_vars == [i, j, k, io, ii, f]
    split, fuse = st.relations
    assert isinstance(split, Split) and (split.parent, split.outer, split.inner) == (i, io, ii)
    assert isinstance(fuse, Fuse) and (fuse.outer, fuse.inner, fuse.fused) == (ii, j, f)
    assert f.name == "i.inner.j.fused"


def test_tile_returns_outer_outer_inner_inner():
    _, _, C, k = matmul()
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 2)
    assert s[C].leaf_iter_vars == [xo, yo, xi, yi, k]


def test_reorder_permutes_only_the_named_loops():
    _, _, C, k = matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].reorder(k, i)
    assert s[C].leaf_iter_vars == [k, j, i]


def test_normalize_rebases_loops_that_do_not_start_at_zero():
    A = te.placeholder((10,), name="A")
    k = te.reduce_axis((2, 7), name="k")
    S = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="S")
    s = te.create_schedule(S.op)
    f = compiler.lower(s, [A, S])
    rebase = s[S].relations[-1]
    assert isinstance(rebase, Rebase) and rebase.parent is k
    assert "for (k, 0, 5)" in str(f)
    a = np.arange(10, dtype="float32")
    out = np.zeros(1, dtype="float32")
    run(f, a, out)
    assert out[0] == a[2:7].sum()


def test_reduction_init_goes_before_the_first_reduction_loop():
    _, _, C, k = matmul(4, 4, 4)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].reorder(i, k, j)
    text = str(compiler.lower(s, list(matmul_args(C))))
    assert text.splitlines()[1:] == [
        "  for (i, 0, 4) {",
        "    for (j, 0, 4) {",
        "      C[((i*4) + j)] = 0.0f",
        "    }",
        "    for (k, 0, 4) {",
        "      for (j, 0, 4) {",
        "        C[((i*4) + j)] = (C[((i*4) + j)] + (A[((i*4) + k)]*B[((k*4) + j)]))",
        "      }",
        "    }",
        "  }",
    ]


def matmul_args(C):
    A, B = C.op.input_tensors()
    return A, B, C


def test_cache_write_and_cache_read_keep_the_users_tensor_handles():
    A, B, C, k = matmul(8, 8, 8)
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    AA = s.cache_read(A, "local", [CC])
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 4)
    s[CC].compute_at(s[C], jo)
    ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=2)
    s[AA].compute_at(s[CC], ko)
    f = compiler.lower(s, [A, B, C])
    text = str(f)
    assert "allocate C.local[float32 * 16]" in text
    # A.local is computed inside loop i.c, so one row of the k.outer chunk: 2 elements.
    assert "allocate A.local[float32 * 2]" in text
    assert "C.local[((i.c*4) + j.c)] = 0.0f" in text
    rng = np.random.default_rng(1)
    a, b = rng.random((8, 8), dtype="float32"), rng.random((8, 8), dtype="float32")
    c = np.zeros((8, 8), dtype="float32")
    run(f, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_annotations_and_pragmas_print_on_their_loops():
    _, _, C, k = matmul(8, 8, 8)
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].parallel(i)
    s[C].unroll(k)
    s[C].reorder(i, k, j)
    s[C].vectorize(j)
    s[C].pragma(i, "auto_unroll_max_step", 16)
    text = str(compiler.lower(s, list(matmul_args(C))))
    assert "// pragma auto_unroll_max_step = 16\n  parallel (i, 0, 8) {" in text
    assert "unrolled (k, 0, 8) {" in text and "vectorized (j, 0, 8) {" in text


def test_compute_inline_substitutes_the_expression():
    A = te.placeholder((6,), name="A")
    B = te.compute((6,), lambda i: A[i] + 1, name="B")
    C = te.compute((6,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    f = compiler.lower(s, [A, C])
    assert str(f.body) == "for (i, 0, 6) {\n  C[i] = ((A[i] + 1.0f)*2.0f)\n}"
