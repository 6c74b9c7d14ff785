"""from_onnx: an ONNX model as a graph function (Relay's relay.frontend.from_onnx).

    mod, params = from_onnx("resnet18.onnx", shape={"input": (1, 3, 224, 224)})

The function's parameters are the model's inputs, then one per initializer (a weight),
named as in the model; `params` maps the initializers' names to their arrays, and
`bind_params` turns those parameters into constants (as Relay's bind_params_by_name),
so that FoldConstant and the build see the weights. Inputs that ONNX feeds as tensors
but that must be known to shape the graph (Reshape's shape, Clip's bounds, Pad's pads)
are read from the initializers or Constant nodes.

Everything that cannot be imported is one FrontendError naming the file and the node
(its name and op type), the input or the opset, and what to do.
"""
from __future__ import annotations

import functools
import os

import numpy as np

from .. import graph
from ..errors import FrontendError
from ..graph.bind import bind_params  # noqa: F401 - exported by compiler.frontend
from ..graph.expr import Constant, Expr, Function, Var

OPSETS = range(7, 23)  # the default-domain opsets whose semantics these converters follow
_DTYPES = {1: "float32", 6: "int32", 7: "int64", 11: "float64"}


def from_onnx(model, shape: dict | None = None) -> tuple:
    """(IRModule with the model as "main", {initializer name: array}); `model` is an
    onnx.ModelProto or a path; `shape` gives a static shape to inputs by name (needed
    for an input with a dynamic dimension)."""
    import onnx
    from onnx import numpy_helper
    where = "<model>"
    if not isinstance(model, onnx.ModelProto):
        where = os.fspath(model)
        if not os.path.exists(where):
            raise FrontendError(f"{where}: no such file")
        try:
            model = onnx.load(where)
        except Exception as err:  # noqa: BLE001 - any parse failure is a bad file
            raise FrontendError(f"{where}: not a readable ONNX model ({type(err).__name__}: "
                                f"{str(err).splitlines()[0] if str(err) else ''})") from None
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset not in OPSETS:
        raise FrontendError(f"{where}: opset {opset} of the default domain is not supported "
                            f"(supported: {OPSETS.start} to {OPSETS.stop - 1}); convert the "
                            f"model with onnx.version_converter")
    g = model.graph
    params = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    shape = dict(shape or {})
    values: dict[str, Expr] = {}
    inputs = []
    for inp in g.input:
        if inp.name in params:
            continue
        values[inp.name] = var = Var(inp.name, _input_type(inp, shape, where))
        inputs.append(var)
    unknown = set(shape) - {v.name for v in inputs}
    if unknown:
        raise FrontendError(f"{where}: shape= names {', '.join(sorted(unknown))}, which "
                            f"are not inputs of the model (its inputs: "
                            f"{', '.join(v.name for v in inputs)})")
    weights = []
    for name, array in params.items():
        values[name] = var = Var(name, graph.TensorType(array.shape, str(array.dtype)))
        weights.append(var)
    context = _Context(params, opset, where)
    for node in g.node:
        what = f"{where}: node {node.name or '(unnamed)'} ({node.op_type})"
        converter = _CONVERTERS.get(node.op_type)
        if converter is None:
            raise FrontendError(f"{what}: op type {node.op_type} is not supported; the "
                                f"supported ones are {', '.join(sorted(_CONVERTERS))}")
        args = []
        for name in node.input:
            if name and name not in values:
                raise FrontendError(f"{what}: input {name!r} is produced by no node, input "
                                    f"or initializer")
            args.append(values[name] if name else None)
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        try:
            out = converter(context, args, attrs, node)
        except FrontendError:
            raise
        except (ValueError, TypeError, KeyError) as err:
            raise FrontendError(f"{what}: {err}") from None
        outs = out if isinstance(out, tuple) else (out,)
        for name, expr in zip(node.output, outs):
            if name:
                values[name] = expr
    results = [values[o.name] for o in g.output]
    body = results[0] if len(results) == 1 else graph.Tuple(results)
    fn = Function([*inputs, *weights], body)
    return graph.IRModule.from_expr(fn), params


def _input_type(inp, shape: dict, where: str):
    t = inp.type.tensor_type
    dtype = _DTYPES.get(t.elem_type)
    if dtype is None:
        raise FrontendError(f"{where}: input {inp.name} has element type {t.elem_type}, "
                            f"not one of float32, float64, int32, int64")
    if inp.name in shape:
        return graph.TensorType(tuple(shape[inp.name]), dtype)
    dims = []
    for d in t.shape.dim:
        if not d.HasField("dim_value"):
            raise FrontendError(f"{where}: input {inp.name} has a dynamic dimension "
                                f"({d.dim_param or '?'}); give its shape, e.g. "
                                f"shape={{'{inp.name}': (1, 3, 224, 224)}} or --shape "
                                f"{inp.name}:1,3,224,224")
        dims.append(d.dim_value)
    return graph.TensorType(dims, dtype)


class _Context:
    def __init__(self, params: dict, opset: int, where: str):
        self.params, self.opset, self.where = params, opset, where

    def value(self, expr: Expr, what: str) -> np.ndarray:
        """The array of an input that must be known when importing."""
        if isinstance(expr, Constant):
            return expr.data
        if isinstance(expr, Var) and expr.name in self.params:
            return self.params[expr.name]
        raise ValueError(f"its {what} must be a constant (an initializer or a Constant "
                         f"node), not computed")


def _pads(attrs, rank: int = 2) -> tuple:
    if attrs.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
        raise ValueError(f"auto_pad={attrs['auto_pad']!r} is not supported; export with "
                         f"explicit pads")
    pads = list(attrs.get("pads", [0] * 2 * rank))
    return tuple(pads[:rank] + pads[rank:])  # (top, left, bottom, right)


def _conv(ctx, args, attrs, node):
    data, weight, bias = (args + [None])[:3]
    out = graph.nn.conv2d(data, weight, strides=attrs.get("strides", (1, 1)),
                          padding=_pads(attrs), dilation=attrs.get("dilations", (1, 1)),
                          groups=attrs.get("group", 1))
    return out if bias is None else graph.nn.bias_add(out, bias)


def _pool(kind):
    def convert(ctx, args, attrs, node):
        if attrs.get("ceil_mode", 0):
            raise ValueError("ceil_mode=1 is not supported")
        common = {"pool_size": attrs["kernel_shape"], "strides": attrs.get("strides", (1, 1)),
                  "padding": _pads(attrs)}
        if kind == "max":
            return graph.nn.max_pool2d(args[0], **common)
        return graph.nn.avg_pool2d(args[0], count_include_pad=bool(
            attrs.get("count_include_pad", 0)), **common)
    return convert


def _clip(ctx, args, attrs, node):
    if ctx.opset < 11:
        low, high = attrs.get("min", -np.inf), attrs.get("max", np.inf)
    else:
        low = ctx.value(args[1], "min") if len(args) > 1 and args[1] is not None else -np.inf
        high = ctx.value(args[2], "max") if len(args) > 2 and args[2] is not None else np.inf
    return graph.clip(args[0], float(low), float(high))


def _shape(expr: Expr) -> tuple:
    """The static shape of an expression built so far (its types inferred)."""
    from ..graph.infer_type import infer_type
    return infer_type(Function([], expr)).ret_type.shape


def _flatten(ctx, args, attrs, node):
    axis = attrs.get("axis", 1)
    if axis == 1:
        return graph.nn.batch_flatten(args[0])
    shape = _shape(args[0])
    return graph.reshape(args[0], (int(np.prod(shape[:axis % len(shape)] if axis else ())),
                                   -1))


def _reshape(ctx, args, attrs, node):
    newshape = [int(d) for d in ctx.value(args[1], "shape")]
    if attrs.get("allowzero", 0) and 0 in newshape:
        raise ValueError("allowzero=1 with a 0 in the shape is not supported")
    return graph.reshape(args[0], newshape)


def _gemm(ctx, args, attrs, node):
    a, b, c = (args + [None])[:3]
    if attrs.get("transA", 0):
        a = graph.transpose(a, (1, 0))
    if not attrs.get("transB", 0):
        b = graph.transpose(b, (1, 0))
    out = graph.nn.dense(a, b)
    if attrs.get("alpha", 1.0) != 1.0:
        out = graph.multiply(out, graph.const(float(attrs["alpha"])))
    if c is not None:
        if attrs.get("beta", 1.0) != 1.0:
            c = graph.multiply(c, graph.const(float(attrs["beta"])))
        out = graph.add(out, c)
    return out


def _softmax(ctx, args, attrs, node):
    axis = attrs.get("axis", -1 if ctx.opset >= 13 else 1)
    if ctx.opset < 13 and axis % len(_shape(args[0])) != len(_shape(args[0])) - 1:
        raise ValueError(f"opset {ctx.opset} Softmax over axis {axis} flattens the trailing "
                         f"axes; only the last axis is supported")
    return graph.nn.softmax(args[0], axis=axis)


def _pad(ctx, args, attrs, node):
    mode = attrs.get("mode", b"constant")
    if mode not in (b"constant", "constant"):
        raise ValueError(f"mode={mode!r} is not supported (constant only)")
    if ctx.opset >= 11:
        pads = [int(p) for p in ctx.value(args[1], "pads")]
        value = float(ctx.value(args[2], "constant_value")) \
            if len(args) > 2 and args[2] is not None else 0.0
    else:
        pads, value = list(attrs["pads"]), float(attrs.get("value", 0.0))
    n = len(pads) // 2
    return graph.nn.pad(args[0], list(zip(pads[:n], pads[n:])), value)


def _constant(ctx, args, attrs, node):
    from onnx import numpy_helper
    if "value" not in attrs:
        raise ValueError("only a Constant with a tensor `value` is supported")
    return Constant(numpy_helper.to_array(attrs["value"]))


_CONVERTERS = {
    "Conv": _conv,
    "BatchNormalization": lambda c, a, at, n: graph.nn.batch_norm(
        *a[:5], epsilon=at.get("epsilon", 1e-5)),
    "Relu": lambda c, a, at, n: graph.nn.relu(a[0]),
    "Clip": _clip,
    "Add": lambda c, a, at, n: graph.add(a[0], a[1]),
    "Sub": lambda c, a, at, n: graph.subtract(a[0], a[1]),
    "Mul": lambda c, a, at, n: graph.multiply(a[0], a[1]),
    "Div": lambda c, a, at, n: graph.divide(a[0], a[1]),
    "Max": lambda c, a, at, n: functools.reduce(graph.maximum, a),
    "Min": lambda c, a, at, n: functools.reduce(graph.minimum, a),
    "Sigmoid": lambda c, a, at, n: graph.sigmoid(a[0]),
    "Tanh": lambda c, a, at, n: graph.tanh(a[0]),
    "Exp": lambda c, a, at, n: graph.exp(a[0]),
    "MaxPool": _pool("max"),
    "AveragePool": _pool("avg"),
    "GlobalAveragePool": lambda c, a, at, n: graph.nn.global_avg_pool2d(a[0]),
    "Flatten": _flatten,
    "Reshape": _reshape,
    "Gemm": _gemm,
    "MatMul": lambda c, a, at, n: graph.matmul(a[0], a[1]),
    "Concat": lambda c, a, at, n: graph.concatenate(a, axis=at["axis"]),
    "Softmax": _softmax,
    "Transpose": lambda c, a, at, n: graph.transpose(a[0], at.get("perm")),
    "Pad": _pad,
    "Identity": lambda c, a, at, n: a[0],
    "Dropout": lambda c, a, at, n: a[0],  # inference: the identity
    "Constant": _constant,
}
