"""The library's templates: OpenBLAS's cblas_sgemm as a candidate that tuning measures
beside the tuned kernels (TVM's dense_cblas.x86 implementations, and AutoTVM tasks of
them).

Each is a template with no knobs (one config): its te compute says what it computes
(the inputs the runner makes, the numpy reference its output is checked against, the
FLOPs), and `library` builds the object code of the library's kernel on those tensors
instead of the schedule (tuner/builder.py). Tuning a model with the cblas codegen adds
a task of the matching library template for each dense and matmul the library can
compute (tuner/extract.py); the record it logs is the library's time, and at compile
time the cblas codegen takes a workload unless the chooser (records.ApplyHistoryBest)
finds a tuned kernel's record better (compiler/graph/strategy/chooser.py, through the
candidates registered in strategies.py).
"""
from __future__ import annotations

from compiler import graph, te
from compiler.contrib.cblas import library_ir, library_object

from .conv2d import conv2d_nchw_reference
from .matmul import dense_reference, matmul_reference
from compiler.contrib.cblas import computes

from .binding import Binding, conv_call, dense_call, dense_workload, float32, matmul_call
from .registry import template

LIBRARY = "cblas"


class _GemmLibrary:
    """A template's `library(args, tensors, target)`: the object code of `gemm_of(*args)`
    (the gemm's batch, m, n, k and transposes) on the template's tensors; `source` is
    the LLVM IR it compiles (what the template's version fingerprints)."""

    def __init__(self, gemm_of):
        self.gemm_of = gemm_of

    def _parts(self, args, tensors):
        params = [{"name": t.name, "dtype": t.dtype, "shape": [int(d) for d in t.shape],
                   "written": i == len(tensors) - 1} for i, t in enumerate(tensors)]
        return f"{tensors[-1].name}_{LIBRARY}", self.gemm_of(*args), params

    def source(self, args, tensors, target) -> str:
        return library_ir(*self._parts(args, tensors), target)

    def __call__(self, args, tensors, target) -> bytes:
        return library_object(*self._parts(args, tensors), target)


def _gemm(batch, m, n, k, trans_b):
    return {"batch": batch, "m": m, "n": n, "k": k, "trans_a": False, "trans_b": trans_b}


def _matmul_workload(call) -> tuple | None:
    """A float32 matmul of 2-D operands."""
    a, b = (a.ty for a in call.args)
    if a.ndim != 2 or b.ndim != 2 or not float32(call):
        return None
    return (a.shape[0], b.shape[1], a.shape[1])


def _batch_matmul_workload(call) -> tuple | None:
    """A float32 nn.batch_matmul."""
    if not float32(call):
        return None
    (batch, M, K), N = call.args[0].ty.shape, call.args[1].ty.shape[1]
    return (batch, M, N, K)


def _batch_matmul_call(batch, M, N, K):
    a, b = graph.var("a", shape=(batch, M, K)), graph.var("b", shape=(batch, N, K))
    return [a, b], graph.nn.batch_matmul(a, b)


def _conv2d_1x1_workload(call) -> tuple | None:
    """A 1x1, stride 1, unpadded float32 NCHW nn.conv2d that compiler.contrib.cblas
    computes."""
    if not computes(call):
        return None
    (N, C, H, W), K = call.args[0].ty.shape, call.args[1].ty.shape[0]
    return (N, C, H, W, K)


@template("dense_cblas", reference=dense_reference,
          library=_GemmLibrary(lambda M, N, K: _gemm(1, M, N, K, True)),
          probes=[(7, 13, 37)], binding=Binding("nn.dense", dense_workload, call=dense_call))
def dense_cblas(cfg, M: int, N: int, K: int):
    """Y = X @ W.T by cblas_sgemm; returns the (unused) schedule and [X, W, Y]."""
    X = te.placeholder((M, K), name="X")
    W = te.placeholder((N, K), name="W")
    k = te.reduce_axis((0, K), name="k")
    Y = te.compute((M, N), lambda i, j: te.sum(X[i, k] * W[j, k], axis=k), name="Y")
    return te.create_schedule(Y.op), [X, W, Y]


def _matmul_reference(inputs, M, N, K):
    return matmul_reference(inputs, M, N, K, "float32")


@template("matmul_cblas", reference=_matmul_reference,
          library=_GemmLibrary(lambda M, N, K: _gemm(1, M, N, K, False)),
          probes=[(7, 13, 37)], binding=Binding("matmul", _matmul_workload, call=matmul_call))
def matmul_cblas(cfg, M: int, N: int, K: int):
    """C = A @ B by cblas_sgemm; returns the (unused) schedule and [A, B, C]."""
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_schedule(C.op), [A, B, C]


def batch_matmul_cblas_reference(inputs, batch, M, N, K):
    """numpy nn.batch_matmul: A[b] @ B[b].T for every b."""
    A, B = inputs
    return (A.astype("float64") @ B.transpose(0, 2, 1)).astype("float32")


@template("batch_matmul_cblas", reference=batch_matmul_cblas_reference,
          library=_GemmLibrary(lambda batch, M, N, K: _gemm(batch, M, N, K, True)),
          probes=[(2, 7, 13, 37)],
          binding=Binding("nn.batch_matmul", _batch_matmul_workload, call=_batch_matmul_call))
def batch_matmul_cblas(cfg, batch: int, M: int, N: int, K: int):
    """C[b] = A[b] @ B[b].T (the graph's nn.batch_matmul) by cblas_sgemm; returns the
    (unused) schedule and [A, B, C]."""
    A = te.placeholder((batch, M, K), name="A")
    B = te.placeholder((batch, N, K), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((batch, M, N), lambda b, i, j: te.sum(A[b, i, k] * B[b, j, k], axis=k),
                   name="C")
    return te.create_schedule(C.op), [A, B, C]


def _conv2d_1x1_reference(inputs, N, C, H, W, K):
    return conv2d_nchw_reference(inputs, N, C, H, W, K, 1, 1, 1, 0)


@template("conv2d_1x1_cblas", reference=_conv2d_1x1_reference,
          library=_GemmLibrary(lambda N, C, H, W, K: {
              **_gemm(N, K, H * W, C, False), "operands": [1, 0], "stride_a": 0}),
          probes=[(1, 5, 7, 7, 13)],
          binding=Binding("nn.conv2d", _conv2d_1x1_workload,
                          call=lambda N, C, H, W, K: conv_call(N, C, H, W, K, 1, 1, 1, 0)))
def conv2d_1x1_cblas(cfg, N: int, C: int, H: int, W: int, K: int):
    """A 1x1 convolution, stride 1, no padding (out[n] = weight x data[n]) by
    cblas_sgemm; returns the (unused) schedule and [data, weight, out]."""
    data = te.placeholder((N, C, H, W), name="data")
    weight = te.placeholder((K, C, 1, 1), name="weight")
    c = te.reduce_axis((0, C), name="c")
    out = te.compute((N, K, H, W), lambda n, o, y, x: te.sum(
        data[n, c, y, x] * weight[o, c, 0, 0], axis=c), name="out")
    return te.create_schedule(out.op), [data, weight, out]
