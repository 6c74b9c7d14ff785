"""Code generation through LLVM: the machine code of the GEMM kernel, build errors,
targets, and how the PassContext changes what build() produces."""
import numpy as np
import pytest

import compiler
from compiler import te, transform
from compiler.ir.expr import Call
from compiler.ops.gemm import packed_matmul

HAS_AVX512 = "+avx512f" in compiler.Target("llvm").features.split(",")


def _gemm(n=128):
    s, args = packed_matmul(n, n, n)
    f = compiler.build(s, args)
    a = np.random.default_rng(0).random((n, n), dtype="float32")
    b = np.random.default_rng(1).random((n, n), dtype="float32")
    c = np.zeros((n, n), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    return f


@pytest.mark.skipif(not HAS_AVX512, reason="the host has no AVX-512")
def test_gemm_kernel_uses_zmm_fma():
    asm = _gemm().get_source("asm")
    assert any("vfmadd" in line and "zmm" in line for line in asm.splitlines())


def test_gemm_accumulator_stays_in_registers():
    ll = _gemm().get_source("ll")
    # The 8x32 local tile was promoted to registers (LLVM's SROA split it into vector
    # SSA values): no stack slot and no load or store of it is left in the code.
    assert any("C.local" in line and ".sroa." in line for line in ll.splitlines())
    for line in ll.splitlines():
        if "C.local" in line:
            assert not any(op in line for op in ("alloca", " load ", "store ")), line


def test_sources_and_bad_format():
    f = _gemm(64)
    assert "define" in f.get_source("ll")
    assert "parallel" in f.get_source("ir")
    with pytest.raises(ValueError, match="unknown source format 'c'"):
        f.get_source("c")


def test_unknown_intrinsic_is_a_build_error_naming_the_function():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: Call("erfinv", (A[i],), "float32"), name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(compiler.BuildError, match="my_kernel.*erfinv"):
        compiler.build(s, [A, B], name="my_kernel")


def _unrolled_stage():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    _, inner = s[B].split(B.op.axis[0], factor=4)
    s[B].unroll(inner)
    return s, [A, B]


def _check(f, n=64):
    a = np.arange(n, dtype="float32")
    b = np.zeros(n, "float32")
    f(a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_disabled_unroll_pass_changes_the_build():
    default = compiler.build(*_unrolled_stage())
    with transform.PassContext(disabled_pass=["UnrollLoop"]):
        kept = compiler.build(*_unrolled_stage())
    assert "unrolled (" not in default.get_source("ir")
    assert "unrolled (" in kept.get_source("ir")
    _check(default)
    _check(kept)


def test_auto_unroll_config():
    def stage():
        A = te.placeholder((64,), name="A")
        B = te.compute((64,), lambda i: A[i] * 2.0, name="B")
        s = te.create_schedule(B.op)
        s[B].split(B.op.axis[0], factor=4)
        return s, [A, B]
    plain = compiler.build(*stage())
    with transform.PassContext(config={"tir.UnrollLoop.auto_max_step": 4}):
        auto = compiler.build(*stage())
    assert plain.get_source("ir").count("for (") == 2
    assert auto.get_source("ir").count("for (") == 1
    _check(plain)
    _check(auto)


def test_opt_level_zero_skips_loop_partition():
    def stage():
        A = te.placeholder((20,), name="A")
        B = te.compute((20,), lambda i: A[i] * 2.0, name="B")
        s = te.create_schedule(B.op)
        s[B].split(B.op.axis[0], factor=16)
        return s, [A, B]
    with transform.PassContext(opt_level=0):
        guarded = compiler.build(*stage())
    partitioned = compiler.build(*stage())
    assert "if (" in guarded.get_source("ir")
    assert "if (" not in partitioned.get_source("ir")
    _check(guarded, 20)
    _check(partitioned, 20)


def test_timing_instrument_sees_every_build_pass():
    timing = transform.PassTimingInstrument()
    with transform.PassContext(instruments=[timing]):
        compiler.build(*_unrolled_stage())
    names = [name for name, _ in timing.entries]
    for expected in ("StorageFlatten", "LoopPartition", "VectorizeLoop", "UnrollLoop",
                     "RemoveNoOp"):
        assert expected in names
    assert "UnrollLoop" in timing.render()


def test_disable_vectorize_config_keeps_scalar_loops():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    _, inner = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(inner)
    with transform.PassContext(config={"tir.disable_vectorize": True}):
        f = compiler.build(s, [A, B])
    assert "ramp(" not in f.get_source("ir")
    a = np.arange(64, dtype="float32")
    b = np.zeros(64, "float32")
    f(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_unvectorizable_loop_warns_and_stays_correct():
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: te.if_then_else(i < 5, A[i], 0.0), name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    with pytest.warns(transform.VectorizeWarning,
                      match="loop i is not vectorized: the guarded read"):
        f = compiler.build(s, [A, B])
    a = np.arange(16, dtype="float32") + 1
    b = np.zeros(16, "float32")
    f(a, b)
    np.testing.assert_array_equal(b, np.where(np.arange(16) < 5, a, 0))


@pytest.mark.parametrize("spec, message", [
    ("cuda", "unknown target kind 'cuda'"),
    ("llvm -mcpu", "bad target option '-mcpu'"),
    ("llvm -threads=4", "bad target option '-threads=4'"),
    ("llvm -num-cores=0", "-num-cores must be a positive integer"),
    ("", "target must be a string"),
])
def test_bad_targets(spec, message):
    with pytest.raises(ValueError, match=message):
        compiler.Target(spec)


def test_target_strings():
    host = compiler.Target("llvm")
    assert host.num_cores >= 1 and host.mcpu
    t = compiler.Target("llvm -mcpu=znver5 -num-cores=2")
    assert (t.mcpu, t.num_cores, str(t)) == ("znver5", 2, "llvm -mcpu=znver5 -num-cores=2")
    assert compiler.Target(t) == t
    assert compiler.Target("llvm -mattr=+avx512f").vector_bits == 512


def test_with_a_target_it_is_the_current_one_and_blocks_nest():
    assert compiler.Target.current() is None
    outer, inner = compiler.Target("llvm -mcpu=znver4"), compiler.Target("llvm -mcpu=znver5")
    with outer:
        assert compiler.Target.current() is outer
        with inner:
            assert compiler.Target.current() is inner
        assert compiler.Target.current() is outer
    assert compiler.Target.current() is None
    assert outer == compiler.Target("llvm -mcpu=znver4")  # entering it changes no field


def _unoptimized_ir(s, args) -> str:
    from compiler.codegen.llvm import CodeGenLLVM
    cg = CodeGenLLVM(compiler.Target("llvm"))
    cg.add_function(compiler.lower(s, args, "k"))
    return str(cg.module)


def test_an_index_of_a_fused_loop_divides_unsigned_and_an_offset_one_floors():
    """A fused loop's variable is never negative, so its quotient and remainder by the
    extents are one udiv / urem each (no floor fix-up for LLVM to fold); an index that
    may be negative (of a loaded value) keeps the floor's signed division. Both
    compute."""
    A = te.placeholder((7, 6), name="A")
    C = te.compute((6, 7), lambda i, j: A[j, i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    s[C].fuse(*C.op.axis)
    ir_text = _unoptimized_ir(s, [A, C])
    assert "udiv" in ir_text and "urem" in ir_text and "sdiv" not in ir_text
    a = np.random.default_rng(4).random((7, 6), dtype="float32")
    c = np.zeros((6, 7), "float32")
    compiler.build(s, [A, C])(a, c)
    np.testing.assert_array_equal(c, a.T * 2)

    B = te.placeholder((13,), name="B", dtype="int32")
    D = te.compute((13,), lambda i: (B[i] + i) // 4 + (B[i] + i) % 4, name="D")
    s = te.create_schedule(D.op)
    assert "sdiv" in _unoptimized_ir(s, [B, D])
    b = np.random.default_rng(5).integers(-30, 30, 13).astype("int32")
    d = np.zeros(13, "int32")
    compiler.build(s, [B, D])(b, d)
    v = b + np.arange(13)
    np.testing.assert_array_equal(d, v // 4 + v % 4)


def test_an_index_shared_by_copies_is_emitted_once_per_block_and_rebinding_renews_it():
    """Copies of an unrolled body share their index subexpressions by identity; code
    generation emits such a subexpression once per block. A variable bound again (two
    lets of one variable in one block) gives a new value, not the first one's."""
    from compiler.codegen.compile import compile_module
    from compiler.codegen.llvm import CodeGenLLVM
    from compiler.ir import expr as E
    from compiler.ir.module import IRModule
    from compiler.ir.stmt import SERIAL, Buffer, For, LetStmt, PrimFunc, SeqStmt, Store

    out = Buffer("out", "int32", (E.const(64),))
    p, v = E.Var("p"), E.Var("v")
    base = p * 13 + v * 3  # one object, in every store
    copies = SeqStmt(tuple(Store(out, base + k, base * 2 + k) for k in range(3)))
    body = For(p, E.const(0), E.const(2), SERIAL, SeqStmt((
        LetStmt(v, E.const(1), copies), LetStmt(v, E.const(5), Store(out, base + 30, base)))))
    func = PrimFunc("f", (out,), body)
    cg = CodeGenLLVM(compiler.Target("llvm"))
    cg.add_function(func)
    text = str(cg.module)
    assert text.count("mul nsw i32 %\"p\", 13") == 2  # once per let, not once per use
    got = np.zeros(64, "int32")
    compile_module(IRModule.from_func(func), compiler.Target("llvm"), entry="f")(got)
    want = np.zeros(64, "int32")
    for pv in range(2):
        for k in range(3):
            want[pv * 13 + 3 + k] = (pv * 13 + 3) * 2 + k
        want[pv * 13 + 15 + 30] = pv * 13 + 15
    np.testing.assert_array_equal(got, want)
