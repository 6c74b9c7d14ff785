"""CblasModule: a function made of BLAS calls, run by OpenBLAS's `cblas_sgemm` (the
reference's custom runtime module, ExampleJSON's idea: the codegen writes a small JSON
description, and this module turns it into code when it is made or loaded).

The description (cblas.py writes it):

    {"args": [[M, K], [N, K]], "outputs": [[M, N]], "buffers": [],
     "gemms": [{"a": ["arg", 0], "b": ["arg", 1], "c": ["out", 0], "batch": 1,
                "m": M, "n": N, "k": K, "trans_a": false, "trans_b": true}]}

"args" and "outputs" are the shapes of the function's arguments and outputs, "buffers"
the elements of its intermediate values. Each gemm computes C = op(A) op(B) for each of
`batch` matrices, row-major and packed, the i-th at element i * stride of each operand
("stride_a", "stride_b", "stride_c"; by default the size of one matrix: a 1x1
convolution's weight has stride 0); a value is an argument, an output or a buffer
(buffers are malloc'd for the call and freed after). A gemm of one row (a batch-1
dense) calls cblas_sgemv instead: OpenBLAS's sgemm does not forward it to its gemv,
which is faster there (benchmarks/byoc.py). The module JIT-compiles
`int32 symbol(void *...)` and `symbol_packed` with LLVM, calling OpenBLAS from the
`scipy-openblas32` package (its symbols are prefixed `scipy_`; it is loaded into the
process once). SaveToBinary is
the description; LoadFromBinary makes the code again, so a saved model needs that
package where it runs, and says so when it is missing.
"""
from __future__ import annotations

import ctypes
import functools
import json
import os

import llvmlite.binding as llvm
from llvmlite import ir

from ..codegen.packed import add_packed
from ..errors import BuildError
from ..llvm_target import optimize, target_machine
from ..runtime.external import ExternalModule
from ..target import host_target

SGEMM, SGEMV = "scipy_cblas_sgemm", "scipy_cblas_sgemv"
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112
I32, I64, F32, PTR = ir.IntType(32), ir.IntType(64), ir.FloatType(), ir.PointerType()


def openblas_library(symbol: str) -> str:
    """The path of OpenBLAS from scipy-openblas32, loaded into the process for LLVM to
    link against; a BuildError naming the function when the package is missing."""
    try:
        import scipy_openblas32
    except ImportError:
        raise BuildError(f"{symbol}: the cblas codegen calls OpenBLAS from the "
                         "scipy-openblas32 package, which is not installed "
                         "(pip install scipy-openblas32)") from None
    path = os.path.join(scipy_openblas32.get_lib_dir(),
                        f"lib{scipy_openblas32.get_library()}.so")
    _load_permanently(path)
    return path


@functools.cache
def _load_permanently(path: str) -> None:
    """Load OpenBLAS for LLVM's linker, with as many threads as our kernels use (the
    CPUs this process may run on, as the native runtime's pool counts them), unless
    OPENBLAS_NUM_THREADS says otherwise: OpenBLAS would otherwise follow
    OMP_NUM_THREADS, which Ray sets to 1 in its workers, and a tuning runner would time
    the library on one core while the build runs it on all."""
    llvm.load_library_permanently(path)
    if "OPENBLAS_NUM_THREADS" not in os.environ:
        ctypes.CDLL(path).scipy_openblas_set_num_threads(len(os.sched_getaffinity(0)))


class CblasModule(ExternalModule):
    """A function of gemms, from its description, JIT-compiled into calls of OpenBLAS
    (see the module docstring)."""
    type_key = "cblas"

    def __init__(self, symbol: str, spec: dict):
        super().__init__(symbol)
        self.spec = spec
        openblas_library(symbol)
        tm = target_machine(host_target())
        ref = llvm.parse_assembly(str(gemm_module(symbol, spec)))
        ref.verify()
        optimize(ref, tm)
        self._engine = llvm.create_mcjit_compiler(ref, tm)
        self._engine.finalize_object()
        self._ref = ref

    def function_address(self) -> int:
        return self._engine.get_function_address(self.symbol)

    def packed_address(self) -> int:
        return self._engine.get_function_address(self.symbol + "_packed")

    def link_object(self) -> bytes:
        raise ValueError(f"external function {self.symbol} (cblas) calls OpenBLAS from the "
                         "scipy-openblas32 Python package, which a model library cannot "
                         "take along: build without --external cblas for a library, or "
                         "write the zip form (--format zip)")

    def get_source(self, fmt: str = "json") -> str:
        if fmt == "json":
            return json.dumps(self.spec, indent=1)
        if fmt == "ll":
            return str(self._ref)
        raise ValueError(f"{self.symbol}: a cblas module shows 'json' or 'll', not {fmt!r}")

    def save(self) -> bytes:
        return json.dumps(self.spec).encode()

    @classmethod
    def load(cls, symbol: str, data: bytes) -> CblasModule:
        return cls(symbol, json.loads(data))


def gemm_module(symbol: str, spec: dict) -> ir.Module:
    """The LLVM IR of the function and its packed form (see the module docstring)."""
    module = ir.Module(name=symbol)
    sgemm = ir.Function(module, ir.FunctionType(ir.VoidType(), [
        I32, I32, I32, I32, I32, I32, F32, PTR, I32, PTR, I32, F32, PTR, I32]), name=SGEMM)
    sgemv = ir.Function(module, ir.FunctionType(ir.VoidType(), [
        I32, I32, I32, I32, F32, PTR, I32, PTR, I32, F32, PTR, I32]), name=SGEMV)
    malloc = ir.Function(module, ir.FunctionType(PTR, [I64]), name="malloc")
    free = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), name="free")
    count = len(spec["args"]) + len(spec["outputs"])
    fn = ir.Function(module, ir.FunctionType(I32, [PTR] * count), name=symbol)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    values = {"arg": fn.args[:len(spec["args"])], "out": fn.args[len(spec["args"]):]}
    values["buf"] = [b.call(malloc, [I64(4 * size)]) for size in spec["buffers"]]
    failed = fn.append_basic_block("out_of_memory")
    for buf in values["buf"]:
        ok = fn.append_basic_block("allocated")
        b.cbranch(b.icmp_unsigned("==", buf, ir.Constant(PTR, None)), failed, ok)
        b.position_at_end(ok)
    for g in spec["gemms"]:
        a, bb, c = (values[kind][k] for kind, k in (g["a"], g["b"], g["c"]))
        m, n, k = g["m"], g["n"], g["k"]
        lda = m if g["trans_a"] else k
        ldb = k if g["trans_b"] else n
        strides = [g.get("stride_a", m * k), g.get("stride_b", k * n), g.get("stride_c", m * n)]
        for i in range(g["batch"]):
            def at(p, stride, i=i):
                return b.gep(p, [I64(i * stride)], inbounds=True, source_etype=F32)
            if m == 1 and not g["trans_a"]:  # a row times a matrix: OpenBLAS's gemv
                # c = op(B)^T a: B (N, K) as it is for a dense, (K, N) transposed otherwise
                rows, cols = (n, k) if g["trans_b"] else (k, n)
                b.call(sgemv, [I32(ROW_MAJOR), I32(NO_TRANS if g["trans_b"] else TRANS),
                               I32(rows), I32(cols), F32(1.0), at(bb, strides[1]),
                               I32(cols), at(a, strides[0]), I32(1), F32(0.0),
                               at(c, strides[2]), I32(1)])
                continue
            b.call(sgemm, [I32(ROW_MAJOR), I32(TRANS if g["trans_a"] else NO_TRANS),
                           I32(TRANS if g["trans_b"] else NO_TRANS), I32(m), I32(n), I32(k),
                           F32(1.0), at(a, strides[0]), I32(lda), at(bb, strides[1]),
                           I32(ldb), F32(0.0), at(c, strides[2]), I32(n)])
    for buf in values["buf"]:
        b.call(free, [buf])
    b.ret(I32(0))
    b.position_at_end(failed)
    for buf in values["buf"]:
        b.call(free, [buf])  # free(NULL) is harmless
    b.ret(I32(-1))

    add_packed(module, fn)
    return module
