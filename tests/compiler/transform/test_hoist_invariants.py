"""hoist_invariants / inline_invariants (compiler/transform/hoist_invariants.py): what an
unrolled region binds ahead of itself, what it must not, and that the build pipeline's
loop IR is what it was without the lets."""
from __future__ import annotations

import numpy as np

from compiler import lower, te
from compiler.ir import expr as E
from compiler.ir.expr import Load
from compiler.ir.functor import collect, free_vars
from compiler.ir.interpreter import run
from compiler.ir.module import IRModule
from compiler.ir.stmt import PARALLEL, SERIAL, UNROLLED, Buffer, For, LetStmt, PrimFunc, Store
from compiler.transform import passes, unroll
from compiler.transform.hoist_invariants import InvariantVar, inline_invariants
from compiler.transform.pass_infra import PassContext, Sequential
from compiler.transform.simplify import simplify_stmt
from compiler.transform.unroll import unroll_loop
from pass_check import assert_same_results, vec

A = Buffer("A", "int32", (E.const(4096),))
B = Buffer("B", "int32", (E.const(64),))
p, q, r, n = E.Var("p"), E.Var("q"), E.Var("r"), E.Var("n")


def loop(var, extent, body, kind=SERIAL):
    return For(var, E.const(0), E.const(extent), kind, body)


def lets(stmt) -> list[LetStmt]:
    return collect(stmt, lambda s: isinstance(s, LetStmt) and isinstance(s.var, InvariantVar))


def test_a_tile_base_is_bound_once_ahead_of_the_copies():
    # A[(p // 4) * 256 + (p % 4) * 16 + r * 4]: the tile's base is the same in every copy
    body = loop(p, 16, loop(r, 4, Store(A, E.FloorDiv(p, E.const(4)) * 256
                                        + E.FloorMod(p, E.const(4)) * 16 + r * 4, r),
                            UNROLLED), PARALLEL)
    got = unroll_loop(body)
    (let,) = lets(got)
    assert free_vars(let.value) == {p}
    stores = collect(got, lambda s: isinstance(s, Store))
    assert [str(s.index) for s in stores] == [
        f"{let.var.name}", f"({let.var.name} + 4)", f"({let.var.name} + 8)",
        f"({let.var.name} + 12)"]
    func = PrimFunc("f", (A,), body)
    assert_same_results(func, got, [np.zeros(4096, "int32")])
    assert_same_results(func, inline_invariants(got), [np.zeros(4096, "int32")])


def test_nothing_that_reads_memory_or_may_trap_is_bound():
    # a loaded index, and a division by a variable (n may be 0 where the branch is not
    # taken), stay in the copies
    index = Load(B, p) * 3 + r
    quotient = E.FloorDiv(p * 7, n) + r
    body = loop(p, 4, loop(r, 2, Store(A, index + quotient, r), UNROLLED), PARALLEL)
    got = unroll_loop(body)
    for let in lets(got):
        assert not collect(let.value, lambda x: isinstance(x, (Load, E.FloorDiv)))
    assert len(collect(got, lambda x: isinstance(x, Load))) == 2


def test_a_loop_that_stays_inside_an_unrolled_loop_starts_a_region_of_its_own():
    # unrolled rows around a parallel loop (Winograd's transforms): the lets of the
    # inner region are inside the parallel loop, and none holds the row variable, which
    # the copies bind to constants
    inner = loop(r, 4, Store(A, q * 1024 + E.FloorMod(p, E.const(8)) * 64
                             + E.FloorDiv(p, E.const(8)) * 16 + r, r), UNROLLED)
    body = loop(q, 3, loop(p, 32, inner, PARALLEL), UNROLLED)
    got = unroll_loop(body)
    parallel = collect(got, lambda s: isinstance(s, For) and s.kind == PARALLEL)
    assert len(parallel) == 3
    for par in parallel:
        (let,) = lets(par.body)
        assert free_vars(let.value) == {p}
    func = PrimFunc("f", (A,), body)
    assert_same_results(func, got, [np.zeros(4096, "int32")])


def test_simplify_knows_a_lets_bounds():
    # a hoisted padding test stays decided: idx in [0, 12] makes idx + 3 < 16 true
    idx = InvariantVar("idx", "int32")
    body = loop(p, 16, LetStmt(idx, E.FloorMod(p, E.const(4)) * 4,
                               Store(A, E.Select(idx + 3 < 16, idx, E.const(-1)), p)))
    assert "if_then_else" not in str(simplify_stmt(body))


def _padded_tiles():
    """A 3x3 window over a zero-padded input, tiled and unrolled in registers: the
    loads are guarded by padding tests, the indices carry a fused tile base."""
    X = te.placeholder((2, 30, 31), name="X")
    pad = te.compute((2, 32, 33), lambda c, y, x: te.if_then_else(
        (y >= 1) & (y < 31) & (x >= 1) & (x < 32), X[c, y - 1, x - 1], 0.0), name="pad")
    ry, rx = te.reduce_axis((0, 3), "ry"), te.reduce_axis((0, 3), "rx")
    Y = te.compute((2, 30, 31), lambda c, y, x: te.sum(pad[c, y + ry, x + rx],
                                                       axis=[ry, rx]), name="Y")
    s = te.create_schedule(Y.op)
    s[pad].compute_inline()
    c, y, x = Y.op.axis
    xo, xi = s[Y].split(x, factor=8)  # 31: a partial last tile
    s[Y].reorder(c, y, xo, *Y.op.reduce_axis, xi)
    s[Y].parallel(s[Y].fuse(c, y))
    for axis in (*Y.op.reduce_axis, xi):
        s[Y].unroll(axis)
    return lower(s, [X, Y]), X, Y


def test_the_build_pipeline_leaves_no_let_and_the_loop_ir_of_before(monkeypatch):
    func, _, _ = _padded_tiles()
    mod = IRModule.from_func(PrimFunc("main", func.params, func.body))
    with PassContext(opt_level=3):
        built = passes.build_pipeline()(mod)["main"]
        unrolled = Sequential([passes.LoopPartition(), passes.Simplify(),
                               passes.VectorizeLoop(), passes.UnrollLoop()])(mod)["main"]
        monkeypatch.setattr(unroll, "hoist_invariants", lambda stmt, loops: stmt)
        before = passes.build_pipeline()(mod)["main"]
    assert lets(unrolled.body)  # the unroll did bind something here
    assert not lets(built.body) and str(built) == str(before)
    x = vec(2, 30, 31)
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1)))
    want = sum(padded[:, dy:dy + 30, dx:dx + 31] for dy in range(3) for dx in range(3))
    for f in (built, unrolled):
        out = np.full((2, 30, 31), np.nan, "float32")
        run(f, x, out)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
