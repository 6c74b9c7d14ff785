"""Bound inference reproduces the reference's worked examples Ex.1-Ex.6 (inferbound-doc),
and does better than the reference on fuse-then-split and on splits that do not divide."""
import re
import textwrap

import numpy as np
import pytest

import compiler
from compiler import te
from compiler.ir.interpreter import run


def allocations(func) -> dict:
    """{buffer name: element count} from the printed IR's `allocate B[float32 * 4]` lines."""
    return {m[1]: int(m[2]) for m in re.finditer(r"allocate (\S+)\[\w+ \* (\d+)\]", str(func))}


def loops(func) -> str:
    return str(func.body)


def expect(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def run_int(func, shape):
    out = np.zeros(shape, dtype="int32")
    run(func, out)
    return out


def make_cd():
    C = te.compute((5, 16), lambda i, j: te.const(5, "int32"), name="C")
    D = te.compute((5, 16), lambda i, j: C[i, j] * 2, name="D")
    return C, D


def make_cde():
    C = te.compute((5, 16), lambda ci, cj: te.const(5, "int32"), name="C")
    D = te.compute((5, 16), lambda di, dj: C[di, dj] * 2, name="D")
    E = te.compute((5, 16), lambda ei, ej: D[ei, ej] * 4, name="E")
    return C, D, E


def test_ex1_no_attachment_computes_all_of_c():
    C, D = make_cd()
    s = te.create_schedule(D.op)
    f = compiler.lower(s, [D])
    assert loops(f) == expect("""
        allocate C[int32 * 80]
        for (i, 0, 5) {
          for (j, 0, 16) {
            C[((i*16) + j)] = 5
          }
        }
        for (i, 0, 5) {
          for (j, 0, 16) {
            D[((i*16) + j)] = (C[((i*16) + j)]*2)
          }
        }""")
    bounds = compiler.infer_bound(s)
    assert [bounds[iv].extent.value for iv in C.op.axis] == [5, 16]
    assert (run_int(f, (5, 16)) == 10).all()


def test_ex2_attach_at_j_needs_one_element():
    C, D = make_cd()
    s = te.create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[1])
    f = compiler.lower(s, [D])
    assert loops(f) == expect("""
        for (i, 0, 5) {
          for (j, 0, 16) {
            allocate C[int32 * 1]
            C[0] = 5
            D[((i*16) + j)] = (C[0]*2)
          }
        }""")
    assert (run_int(f, (5, 16)) == 10).all()


def test_ex3_attach_at_i_needs_a_row_of_16():
    C, D = make_cd()
    s = te.create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[0])
    f = compiler.lower(s, [D])
    assert loops(f) == expect("""
        for (i, 0, 5) {
          allocate C[int32 * 16]
          for (j, 0, 16) {
            C[j] = 5
          }
          for (j, 0, 16) {
            D[((i*16) + j)] = (C[j]*2)
          }
        }""")
    bounds = compiler.infer_bound(s)
    ci, cj = C.op.axis
    assert str(bounds[ci].min) == "i" and bounds[ci].extent.value == 1
    assert bounds[cj].extent.value == 16
    assert (run_int(f, (5, 16)) == 10).all()


def test_ex4_attach_path_includes_unused_outer_loop():
    C = te.compute((5, 16), lambda i, j: te.const(5, "int32"), name="C")
    D = te.compute((4, 5, 16), lambda di, dj, dk: C[dj, dk] * 2, name="D")
    s = te.create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[2])
    bounds = compiler.infer_bound(s)
    # realize C([dj, 1], [dk, 1])
    assert [(str(bounds[iv].min), bounds[iv].extent.value) for iv in C.op.axis] == \
        [("dj", 1), ("dk", 1)]
    f = compiler.lower(s, [D])
    assert loops(f) == expect("""
        for (di, 0, 4) {
          for (dj, 0, 5) {
            for (dk, 0, 16) {
              allocate C[int32 * 1]
              C[0] = 5
              D[(((di*80) + (dj*16)) + dk)] = (C[0]*2)
            }
          }
        }""")
    assert (run_int(f, (4, 5, 16)) == 10).all()


def test_ex5_attach_after_split():
    C, D = make_cd()
    s = te.create_schedule(D.op)
    _, d_i = s[D].split(D.op.axis[1], factor=8)
    s[C].compute_at(s[D], d_i)
    f = compiler.lower(s, [D])
    assert loops(f) == expect("""
        for (i, 0, 5) {
          for (j.outer, 0, 2) {
            for (j.inner, 0, 8) {
              allocate C[int32 * 1]
              C[0] = 5
              D[(((i*16) + (j.outer*8)) + j.inner)] = (C[0]*2)
            }
          }
        }""")
    assert (run_int(f, (5, 16)) == 10).all()


def test_chained_attach_c_in_d_in_e():
    C, D, E = make_cde()
    s = te.create_schedule(E.op)
    s[C].compute_at(s[D], D.op.axis[1])
    s[D].compute_at(s[E], E.op.axis[1])
    f = compiler.lower(s, [E])
    assert loops(f) == expect("""
        for (ei, 0, 5) {
          for (ej, 0, 16) {
            allocate D[int32 * 1]
            allocate C[int32 * 1]
            C[0] = 5
            D[0] = (C[0]*2)
            E[((ei*16) + ej)] = (D[0]*4)
          }
        }""")
    assert (run_int(f, (5, 16)) == 40).all()


def test_c_not_attached_but_consumer_d_attached_to_e():
    C, D, E = make_cde()
    s = te.create_schedule(E.op)
    s[D].compute_at(s[E], E.op.axis[1])
    f = compiler.lower(s, [E])
    # D's attach path {ej, ei} is relaxed when asking how much of C is needed: all 5x16.
    assert allocations(f) == {"C": 80, "D": 1}
    assert loops(f) == expect("""
        allocate C[int32 * 80]
        for (ci, 0, 5) {
          for (cj, 0, 16) {
            C[((ci*16) + cj)] = 5
          }
        }
        for (ei, 0, 5) {
          for (ej, 0, 16) {
            allocate D[int32 * 1]
            D[0] = (C[((ei*16) + ej)]*2)
            E[((ei*16) + ej)] = (D[0]*4)
          }
        }""")
    assert (run_int(f, (5, 16)) == 40).all()


def fuse_then_split(factor, n=4, m=4):
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda bi, bj: A[bi, bj] + 2, name="B")
    C = te.compute((n, m), lambda ci, cj: B[ci, cj] * 3, name="C")
    s = te.create_schedule(C.op)
    fused = s[C].fuse(C.op.axis[0], C.op.axis[1])
    xo, _ = s[C].split(fused, factor)
    s[B].compute_at(s[C], xo)
    return s, A, B, C


def check_numbers(func, shape):
    a = np.random.default_rng(0).random(shape, dtype="float32")
    c = np.zeros(shape, dtype="float32")
    run(func, a, c)
    np.testing.assert_allclose(c, (a + 2) * 3, rtol=1e-6)


def test_ex6_fuse_then_split_by_4_computes_one_row_not_sixteen():
    """The reference allocates B[float32 * 16] here; the split undoes the fuse, so 4."""
    s, A, B, C = fuse_then_split(4)
    f = compiler.lower(s, [A, C])
    assert allocations(f) == {"B": 4}
    assert loops(f) == expect("""
        for (ci.cj.fused.outer, 0, 4) {
          allocate B[float32 * 4]
          for (bj, 0, 4) {
            B[bj] = (A[((ci.cj.fused.outer*4) + bj)] + 2.0f)
          }
          for (ci.cj.fused.inner, 0, 4) {
            C[((ci.cj.fused.outer*4) + ci.cj.fused.inner)] = (B[ci.cj.fused.inner]*3.0f)
          }
        }""")
    check_numbers(f, (4, 4))


def test_ex6_fuse_then_split_by_3_uses_smallest_covering_rectangle():
    """Runs of 3 in rows of 4 are not rectangles; the smallest rectangle covering any
    run is 2 rows x 4 columns."""
    s, A, B, C = fuse_then_split(3)
    f = compiler.lower(s, [A, C])
    assert allocations(f) == {"B": 8}
    check_numbers(f, (4, 4))


@pytest.mark.parametrize("n,m,factor", [(4, 4, 8), (4, 4, 2), (6, 5, 4), (5, 7, 3), (3, 3, 9)])
def test_fuse_then_split_other_shapes_are_correct(n, m, factor):
    s, A, B, C = fuse_then_split(factor, n, m)
    f = compiler.lower(s, [A, C])
    assert allocations(f)["B"] <= n * m
    check_numbers(f, (n, m))


def test_fuse_then_split_by_2_stays_inside_a_row():
    s, A, B, C = fuse_then_split(2)
    assert allocations(compiler.lower(s, [A, C])) == {"B": 2}


def test_split_that_does_not_divide_runs_only_the_tail():
    """Extent 20, factor 16: the last outer iteration computes 4 elements, not 16."""
    A = te.placeholder((20,), name="A")
    B = te.compute((20,), lambda i: A[i] + 1, name="B")
    C = te.compute((20,), lambda i: B[i] * 2, name="C")
    s = te.create_schedule(C.op)
    outer, _ = s[C].split(C.op.axis[0], factor=16)
    s[B].compute_at(s[C], outer)
    f = compiler.lower(s, [A, C])
    assert loops(f) == expect("""
        for (i.outer, 0, 2) {
          allocate B[float32 * 16]
          for (i, 0, min(16, (20 - (i.outer*16)))) {
            B[i] = (A[((i.outer*16) + i)] + 1.0f)
          }
          for (i.inner, 0, 16) {
            if ((((i.outer*16) + i.inner) < 20)) {
              C[((i.outer*16) + i.inner)] = (B[i.inner]*2.0f)
            }
          }
        }""")
    a = np.arange(20, dtype="float32")
    c = np.zeros(20, dtype="float32")
    run(f, a, c)
    np.testing.assert_array_equal(c, (a + 1) * 2)


def test_symbolic_sizes_flow_through_bounds_and_lowering():
    n = te.var("n")
    A = te.placeholder((n, 8), name="A")
    B = te.compute((n, 8), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((n, 8), lambda i, j: B[i, j] + 1, name="C")
    s = te.create_schedule(C.op)
    io, _ = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], io)
    f = compiler.lower(s, [A, C])
    assert "allocate B[float32 * 32]" in str(f)
    for size in (1, 7, 13):
        a = np.random.default_rng(size).random((size, 8), dtype="float32")
        c = np.zeros((size, 8), dtype="float32")
        run(f, a, c)
        np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)
