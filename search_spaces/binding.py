"""A template's binding to the graph: the one record, beside the template, of how it
serves a graph op (TVM's strategy registration and its workload inverse in one place).

    @template("conv2d_nchw", ..., binding=Binding(
        "nn.conv2d", workload=..., compute=..., schedule=..., call=...))

A Binding says
- `op`: the graph op (or ops) whose calls the template may implement;
- `workload(call)`: the template's arguments for a typed call it implements, None for
  one it does not (another layout, groups, dtype), so the strategies (strategies.py)
  make it a candidate of exactly those calls;
- `compute(args, cfg, inputs)`: the anchor's te tensor from the te tensors of the call's
  arguments, and `schedule(args, cfg, s, anchor, out)`: the kernel's schedule whose
  final output is `out` (both None for a library's template, which no kernel computes);
- `call(*args)`: `(params, body)`, the graph call the workload implements (the inverse
  of `workload`), which `autosched log best` puts to the build's chooser
  (workload_calls.py); `data_layout(args)`: the layout its data arrives in (a packed
  convolution's block);
- `altered(call, form)`: the template's arguments for the typed call as it stands (in
  NCHW) once AlterOpLayout alters it into `form` (one of its op's forms,
  compiler/graph/ir/op/layout.py FORMS_ATTR: a convolution's pair of blocks, by
  Winograd or not; a dense's packed weights), None for a form it does not implement:
  the candidates of a call's forms, which one question to the chooser weighs with the
  call's own, without building the altered call (a test holds it to `workload` of the
  call AlterOpLayout makes); `forms_of`: the op of the calls it alters from, where that
  is not `op` (dense_pack's: nn.dense);
- `packable`: an NCHW convolution that AlterOpLayout may pack instead, which task
  extraction makes a task of its own on request (tuner.extract_tasks' alternatives).

So strategies, `log best`'s workload calls and task extraction all read the bindings,
and adding a template touches its own file (and the import that registers it). The
helpers below are what several bindings share: the dtype and window tests and the
graph calls of convolutions and products.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from compiler import graph
from compiler.graph.ir.expr import Call


@dataclass(frozen=True)
class Binding:
    """How a template serves a graph op (see the module docstring)."""
    op: str | tuple[str, ...]
    workload: Callable[[Call], tuple | None]
    compute: Callable | None = None
    schedule: Callable | None = None
    call: Callable | None = None
    data_layout: Callable[[tuple], str] = lambda args: "NCHW"
    altered: Callable[[Call, object], tuple | None] | None = None
    forms_of: str | None = None
    packable: bool = False

    @property
    def ops(self) -> tuple[str, ...]:
        """The graph ops it serves."""
        return (self.op,) if isinstance(self.op, str) else tuple(self.op)

    @property
    def alters(self) -> str | None:
        """The op whose calls' forms `altered` takes, None without `altered`."""
        return None if self.altered is None else self.forms_of or self.ops[0]


def float32(call: Call) -> bool:
    """Whether every operand and the result of `call` are float32 (what the templates
    compute)."""
    return all(a.ty.dtype == "float32" for a in call.args) and call.ty.dtype == "float32"


def dense_workload(call: Call) -> tuple | None:
    """(M, N, K) of a float32 nn.dense of 2-D data (the dense templates', ours and the
    library's), else None."""
    data, weight = (a.ty for a in call.args)
    if data.ndim != 2 or not float32(call):
        return None
    return (data.shape[0], weight.shape[0], data.shape[1])


def conv_window(attrs) -> tuple[int, int] | None:
    """(stride, padding) when the convolution templates' two ints can say the call's
    window (equal strides, one padding on all sides, no dilation), else None."""
    (sh, sw), pads = attrs["strides"], tuple(attrs["padding"])
    if sh != sw or len(set(pads)) != 1 or tuple(attrs["dilation"]) != (1, 1):
        return None
    return sh, pads[0]


def conv_call(N, C, H, W, K, R, S, stride, padding, groups=1):
    """An NCHW nn.conv2d of (N, C, H, W) data and constant OIHW weights (of zeros, as a
    model's are constants, so that AlterOpLayout's packed and Winograd forms are among
    its forms)."""
    x = graph.var("data", shape=(N, C, H, W))
    w = graph.const(np.zeros((K, C // groups, R, S), "float32"))
    return [x], graph.nn.conv2d(x, w, stride, padding, groups=groups)


def dense_call(M, N, K):
    """nn.dense of (M, K) data and constant (N, K) weights."""
    x = graph.var("data", shape=(M, K))
    return [x], graph.nn.dense(x, graph.const(np.zeros((N, K), "float32")))


def matmul_call(M, N, K, dtype="float32", batch=()):
    """matmul of (*batch, M, K) and (*batch, K, N) values."""
    a = graph.var("a", shape=(*batch, M, K), dtype=dtype)
    b = graph.var("b", shape=(*batch, K, N), dtype=dtype)
    return [a, b], graph.matmul(a, b)
