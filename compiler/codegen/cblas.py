"""cblas: the external codegen that sends dense, matmul and batch_matmul to OpenBLAS's
`cblas_sgemm` (runtime/cblas_module.py runs it).

A function given to "cblas" is a DAG of those ops (MergeCompilerRegions joins one that
feeds another); each becomes one gemm of the module's description, reading the
function's parameters or the buffer of an earlier gemm, and writing a buffer or, for
the function's result, its output. float32 only; matmul on equal batch shapes (no
broadcasting of the batch).
"""
from __future__ import annotations

import numpy as np

from ..errors import BuildError
from ..graph.alter_op_layout import alter_dense_pack
from ..graph.expr import Call, Constant, Function, Tuple, Var
from ..graph.functor import post_order
from ..graph.infer_type import infer_type
from ..graph.nn import dense as _nn_registered  # noqa: F401  (the ops the checks
from ..graph.op import Op, register_op_attr                 # hang on)
from ..graph.strategy import library_wins
from ..graph.ty import TensorType
from ..runtime.cblas_module import CblasModule, gemm_module
from .compile import optimized_text
from .llvm import CodeGenLLVM
from .external import register_external

TARGET = "cblas"
SUPPORTED = ("nn.dense", "matmul", "nn.batch_matmul")


def computes(call: Call) -> bool:
    """Whether cblas can compute `call`: float32, and a matmul's batch shapes equal."""
    types = [call.ty, *(a.ty for a in call.args)]
    if not all(isinstance(t, TensorType) and t.dtype == "float32" for t in types):
        return False
    if call.op.name == "matmul":
        a, b = call.args[0].ty, call.args[1].ty
        return a.ndim == b.ndim and a.shape[:-2] == b.shape[:-2]
    return True


def takes(call: Call) -> bool:
    """Whether cblas takes `call` (its `target.cblas` check): it can compute it, and the
    log does not say that a tuned kernel of it is faster (strategy.library_wins; the
    library's record is tuning's measurement of the library templates, search_spaces/
    library.py)."""
    return computes(call) and library_wins(_forms(call), TARGET)


def _forms(call: Call) -> list[Call]:
    """`call`, and for a dense on constant weights the nn.contrib_dense_pack that
    AlterOpLayout would make of it: what the build would tune and run instead."""
    forms = [call]
    if call.op.name == "nn.dense" and isinstance(call.args[1], Constant):
        packed = alter_dense_pack(dict(call.attrs), list(call.args),
                                  [a.ty for a in call.args], call.ty)
        if packed is not None:
            forms.append(infer_type(Function([], packed)).body)
    return forms


for _name in SUPPORTED:
    register_op_attr(_name, f"target.{TARGET}", takes)


def gemm_of(call: Call) -> dict:
    """The gemm of one call: batch, m, n, k and which operand is transposed."""
    a, b = call.args[0].ty.shape, call.args[1].ty.shape
    if call.op.name == "nn.dense":
        return {"batch": 1, "m": a[0], "n": b[0], "k": a[1], "trans_a": False,
                "trans_b": True}
    if call.op.name == "nn.batch_matmul":
        return {"batch": a[0], "m": a[1], "n": b[1], "k": a[2], "trans_a": False,
                "trans_b": True}
    return {"batch": int(np.prod(a[:-2], dtype=np.int64)), "m": a[-2], "n": b[-1],
            "k": a[-1], "trans_a": False, "trans_b": False}


def describe(func: Function, symbol: str) -> dict:
    """The CblasModule description of `func` (see runtime/cblas_module.py)."""
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
        gemms.append({"a": ref[id(e.args[0])], "b": ref[id(e.args[1])], "c": ref[id(e)],
                      **{k: (int(v) if not isinstance(v, bool) else v)
                         for k, v in gemm_of(e).items()}})
    return {"args": [list(p.ty.shape) for p in func.params],
            "outputs": [list(o.ty.shape) for o in outs], "buffers": buffers,
            "gemms": gemms}


def cblas(func: Function, symbol: str) -> CblasModule:
    """The external codegen: `func` as calls of cblas_sgemm."""
    return CblasModule(symbol, describe(func, symbol))


register_external(TARGET, cblas)


def library_object(symbol: str, gemm: dict, params: list[dict], target) -> bytes:
    """Object code of one gemm as a kernel of its own, `symbol(A, B, C)`, with the
    metadata a runtime Module checks its arguments against (`params`: name, dtype,
    shape, written, in call order): what tuning measures as the library's candidate
    (search_spaces/library.py)."""
    spec = {"args": [p["shape"] for p in params[:2]], "outputs": [params[2]["shape"]],
            "buffers": [], "gemms": [{"a": ["arg", 0], "b": ["arg", 1], "c": ["out", 0],
                                      **gemm}]}
    module = gemm_module(symbol, spec)
    CodeGenLLVM.metadata(module, {"entry": symbol, "target": str(target), "size_vars": [],
                                  "params": params})
    ref, tm = optimized_text(str(module), target, symbol)
    return tm.emit_object(ref)
