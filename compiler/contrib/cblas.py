"""cblas: the external codegen that sends dense, matmul, batch_matmul and 1x1
convolutions to OpenBLAS's `cblas_sgemm` (cblas_module.py runs it).

A function given to "cblas" is a DAG of those ops (MergeCompilerRegions joins one that
feeds another); each becomes one gemm of the module's description, reading the
function's parameters or the buffer of an earlier gemm, and writing a buffer or, for
the function's result, its output. float32 only; matmul on equal batch shapes (no
broadcasting of the batch); a convolution when it is a gemm as it stands (computes).
"""
from __future__ import annotations

import numpy as np

from ..codegen.compile import optimized_text
from ..codegen.packed import add_module_meta
from ..errors import BuildError
from ..graph.strategy.chooser import Choice, choose_implementation
from ..graph.ir.expr import Call, Function, Tuple, Var
from ..graph.ir.functor import post_order
from ..graph.ir.op import Op
from ..graph.ir.op.layout import forms_of
from ..graph.ir.ty import TensorType
from .cblas_module import CblasModule, gemm_module

TARGET = "cblas"
SUPPORTED = ("nn.dense", "matmul", "nn.batch_matmul", "nn.conv2d")


def computes(call: Call) -> bool:
    """Whether cblas can compute `call`: float32; a matmul's batch shapes equal; a
    convolution only where it is a gemm as it stands (1x1, stride 1, no padding, one
    group, NCHW: im2col would copy the data, while the tuned packed kernels run near the
    FMA peak)."""
    types = [call.ty, *(a.ty for a in call.args)]
    if not all(isinstance(t, TensorType) and t.dtype == "float32" for t in types):
        return False
    if call.op.name == "matmul":
        a, b = call.args[0].ty, call.args[1].ty
        return a.ndim == b.ndim and a.shape[:-2] == b.shape[:-2]
    if call.op.name == "nn.conv2d":
        at = call.attrs
        return at["data_layout"] == "NCHW" and at["kernel_layout"] == "OIHW" and \
            at["out_layout"] in ("", "NCHW") and at["groups"] == 1 and \
            tuple(call.args[1].ty.shape[2:]) == (1, 1) and tuple(at["strides"]) == (1, 1) \
            and tuple(at["padding"]) == (0, 0, 0, 0) and tuple(at["dilation"]) == (1, 1)
    return True


def takes(call: Call) -> bool:
    """Whether cblas takes `call` (its `target.cblas` check): it can compute it, and the
    chooser gives it to the library among the candidates of `call` and of its forms
    (op/layout.py forms_of: a dense on constant weights as nn.contrib_dense_pack, a
    convolution in NCHW[x]c), which the build would tune and run instead: the library
    unless the log says a tuned kernel is better (its record is tuning's measurement of
    the library templates, search_spaces/library.py)."""
    return computes(call) and picks_library(choose_implementation(
        call, forms_of(call), libraries=(TARGET,), applies=False))


def picks_library(choice: Choice) -> bool:
    """Whether the chooser's `choice` (asked with the library named) leaves the call to
    the library: it chose the library's candidate, or nothing logged made it choose a
    tuned kernel (an op the library computes with no template of its own)."""
    return choice.candidate.library == TARGET or choice.report is None


def gemm_of(call: Call) -> dict:
    """The gemm of one call: batch, m, n, k, which operand is transposed, and for a 1x1
    convolution (out[n] = weight x data[n]) that its operands swap ("operands": the
    call's argument of A, then of B) and that A, the weight, is the same for every
    batch ("stride_a": 0)."""
    a, b = call.args[0].ty.shape, call.args[1].ty.shape
    if call.op.name == "nn.conv2d":
        n, c, h, w = a
        return {"batch": n, "m": b[0], "n": h * w, "k": c, "trans_a": False,
                "trans_b": False, "operands": [1, 0], "stride_a": 0}
    if call.op.name == "nn.dense":
        # Data of any rank: its leading dimensions are the rows of one gemm.
        return {"batch": 1, "m": int(np.prod(a[:-1], dtype=np.int64)), "n": b[0],
                "k": a[-1], "trans_a": False, "trans_b": True}
    if call.op.name == "nn.batch_matmul":
        return {"batch": a[0], "m": a[1], "n": b[1], "k": a[2], "trans_a": False,
                "trans_b": True}
    return {"batch": int(np.prod(a[:-2], dtype=np.int64)), "m": a[-2], "n": b[-1],
            "k": a[-1], "trans_a": False, "trans_b": False}


def describe(func: Function, symbol: str) -> dict:
    """The CblasModule description of `func` (see cblas_module.py)."""
    outs = list(func.body.fields) if isinstance(func.body, Tuple) else [func.body]
    ref = {id(p): ["arg", k] for k, p in enumerate(func.params)}
    for i, o in enumerate(outs):
        if not isinstance(o, Call) or id(o) in ref:
            raise BuildError(f"{symbol}: an output that is not a gemm of its own")
        ref[id(o)] = ["out", i]
    buffers, gemms = [], []
    for e in post_order(func.body):
        if isinstance(e, (Var, Tuple)):
            continue
        if not (isinstance(e, Call) and isinstance(e.op, Op) and e.op.name in SUPPORTED
                and computes(e)):
            what = e.op.name if isinstance(e, Call) and isinstance(e.op, Op) else \
                type(e).__name__
            raise BuildError(f"{symbol}: the cblas codegen cannot compute {what} "
                             f"(it takes {', '.join(SUPPORTED)} on float32)")
        if id(e) not in ref:
            ref[id(e)] = ["buf", len(buffers)]
            buffers.append(int(np.prod(e.ty.shape, dtype=np.int64)))
        gemm = gemm_of(e)
        first, second = gemm.pop("operands", [0, 1])
        gemms.append({"a": ref[id(e.args[first])], "b": ref[id(e.args[second])],
                      "c": ref[id(e)], **gemm})
    return {"args": [list(p.ty.shape) for p in func.params],
            "outputs": [list(o.ty.shape) for o in outs], "buffers": buffers,
            "gemms": gemms}


def cblas(func: Function, symbol: str) -> CblasModule:
    """The external codegen: `func` as calls of cblas_sgemm."""
    return CblasModule(symbol, describe(func, symbol))


def library_object(symbol: str, gemm: dict, params: list[dict], target) -> bytes:
    """Object code of one gemm as a kernel of its own, `symbol(A, B, C)`, with the
    metadata a runtime Module checks its arguments against (`params`: name, dtype,
    shape, written, in call order): what tuning measures as the library's candidate
    (search_spaces/library.py)."""
    ref, tm = optimized_text(library_ir(symbol, gemm, params, target), target, symbol)
    return tm.emit_object(ref)


def library_ir(symbol: str, gemm: dict, params: list[dict], target) -> str:
    """The LLVM IR text that library_object compiles: the code the library's template
    generates (its version is a fingerprint of it, search_spaces/fingerprint.py)."""
    gemm = dict(gemm)
    first, second = gemm.pop("operands", [0, 1])
    spec = {"args": [p["shape"] for p in params[:2]], "outputs": [params[2]["shape"]],
            "buffers": [], "gemms": [{"a": ["arg", first], "b": ["arg", second],
                                      "c": ["out", 0], **gemm}]}
    module = gemm_module(symbol, spec)
    add_module_meta(module, {"entry": symbol, "target": str(target), "size_vars": [],
                             "params": params})
    return str(module)
