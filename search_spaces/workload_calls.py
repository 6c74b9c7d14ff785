"""The graph call a template's workload implements (the inverse of strategies.py): what
`autosched log best` puts to the chooser, so that it names the implementation the build
applies to that call, among every candidate of the call and of the forms the build may
turn it into, exactly as the build decides.

    call_of("conv2d_nchwc", (1, 64, 56, 56, 64, 3, 3, 1, 1, 16, 16))
    # nn.conv2d of a (1, 64, 56, 56) NCHW value and (64, 64, 3, 3) OIHW weights

A packed convolution's workload gives the NCHW call it was made of, and forms_of the
packed form with the workload's own data block (the block its producer packed it in)
first, then its forms in its other blocks (the workload's own among them);
a dense's and a convolution's weight is a constant (of zeros), as a model's is, so that
AlterOpLayout's packed (and Winograd) forms are among its forms.
"""
from __future__ import annotations

import numpy as np

from compiler import graph
from compiler.graph.alter_op_layout import implementation_forms
from compiler.graph.expr import Call


def _conv(N, C, H, W, K, R, S, stride, padding, groups=1):
    x = graph.var("data", shape=(N, C, H, W))
    w = graph.const(np.zeros((K, C // groups, R, S), "float32"))
    return [x], graph.nn.conv2d(x, w, stride, padding, groups=groups)


def _dense(M, N, K):
    x = graph.var("data", shape=(M, K))
    return [x], graph.nn.dense(x, graph.const(np.zeros((N, K), "float32")))


def _matmul(M, N, K, dtype="float32", batch=()):
    a = graph.var("a", shape=(*batch, M, K), dtype=dtype)
    b = graph.var("b", shape=(*batch, K, N), dtype=dtype)
    return [a, b], graph.matmul(a, b)


def _batch_matmul(batch, M, N, K):
    a, b = graph.var("a", shape=(batch, M, K)), graph.var("b", shape=(batch, N, K))
    return [a, b], graph.nn.batch_matmul(a, b)


def _softmax(op, shape):
    x = graph.var("data", shape=shape)
    return [x], op(x)


def _layer_norm(shape, axis, epsilon):
    x = graph.var("data", shape=shape)
    gamma, beta = (graph.const(np.zeros(shape[axis:], "float32")) for _ in range(2))
    return [x], graph.nn.layer_norm(x, gamma, beta, axis, epsilon)


_CALLS = {
    "conv2d_nchw": lambda *a: _conv(*a),
    "conv2d_nchwc": lambda *a: _conv(*a[:9]),
    "depthwise_conv2d_nchw": lambda N, C, H, W, R, S, st, p: _conv(N, C, H, W, C, R, S, st,
                                                                   p, C),
    "depthwise_conv2d_nchwc": lambda N, C, H, W, R, S, st, p, b: _conv(N, C, H, W, C, R, S,
                                                                       st, p, C),
    "conv2d_winograd_nchwc": lambda N, C, H, W, K, p, bi, bo, m: _conv(N, C, H, W, K, 3, 3, 1,
                                                                      p),
    "conv2d_1x1_cblas": lambda N, C, H, W, K: _conv(N, C, H, W, K, 1, 1, 1, 0),
    "dense": _dense,
    "dense_pack": lambda M, N, K, block: _dense(M, N, K),
    "dense_cblas": _dense,
    "matmul": _matmul,
    "matmul_cblas": _matmul,
    # a 3-D matmul, as the ONNX importer writes attention's products
    "batch_matmul": lambda batch, M, N, K: _matmul(M, N, K, batch=(batch,)),
    "batch_matmul_cblas": _batch_matmul,
    "softmax": lambda shape: _softmax(graph.nn.softmax, shape),
    "log_softmax": lambda shape: _softmax(graph.nn.log_softmax, shape),
    "layer_norm": _layer_norm,
}


def call_of(name: str, args: tuple) -> Call | None:
    """The typed graph call that template `name`'s workload `args` implements, or None
    for a template no graph op uses (a plain operator template, the blur)."""
    if name not in _CALLS:
        return None
    params, body = _CALLS[name](*args)
    return graph.transform.InferType()(graph.IRModule.from_expr(
        graph.Function(params, body)))["main"].body


def forms_of(name: str, args: tuple) -> list[Call]:
    """The typed forms the build may run the call of template `name`'s workload `args`
    in (alter_op_layout.implementation_forms, a packed convolution's data in the
    workload's own block), or [] for a template no graph op uses."""
    call = call_of(name, args)
    if call is None:
        return []
    block = {"conv2d_nchwc": lambda: args[9], "depthwise_conv2d_nchwc": lambda: args[8],
             "conv2d_winograd_nchwc": lambda: args[6]}
    layout = f"NCHW{block[name]()}c" if name in block else "NCHW"
    return implementation_forms(call, layout)
