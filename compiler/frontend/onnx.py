"""from_onnx: an ONNX model as a graph function (Relay's relay.frontend.from_onnx).

    mod, params = from_onnx("resnet18.onnx", shape={"input": (1, 3, 224, 224)})

The function's parameters are the model's inputs, then one per floating-point
initializer (a weight), named as in the model; `params` maps those initializers' names to
their arrays, and `bind_params` turns the parameters into constants (as Relay's
bind_params_by_name), so that FoldConstant and the build see the weights. Integer and
bool initializers (shapes, indices, axes) are constants from the start.

Each node goes through its op type's converter (onnx_ops/: one module per family), and
every call the converter builds on constants alone is folded to the constant it computes
right away (Context.fold), so that with static input shapes the shape subgraphs
exporters emit (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) arrive at Reshape as
constants. Inputs that ONNX feeds as tensors but that must be known to shape the graph
(Reshape's shape, Clip's bounds, Pad's pads, Slice's starts) are read from them.

Everything that cannot be imported is one FrontendError naming the file and the node
(its name and op type), the input or the opset, and what to do.
"""
from __future__ import annotations

import os

from .. import graph
from ..errors import FrontendError
from ..graph.bind import bind_params  # noqa: F401 - exported by compiler.frontend
from ..graph.expr import Constant, Expr, Function, Var
from .onnx_ops import CONVERTERS
from .onnx_ops.common import DTYPES, Context

OPSETS = range(7, 23)  # the default-domain opsets whose semantics these converters follow


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
    arrays = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    params = {k: a for k, a in arrays.items() if a.dtype.kind == "f"}
    shape = dict(shape or {})
    values: dict[str, Expr] = {k: Constant(a) for k, a in arrays.items() if k not in params}
    inputs = []
    for inp in g.input:
        if inp.name in arrays:
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
    context = Context(params, opset, where)
    for node in g.node:
        what = f"{where}: node {node.name or '(unnamed)'} ({node.op_type})"
        if node.domain not in ("", "ai.onnx"):
            raise FrontendError(f"{what}: the operator domain {node.domain!r} is not "
                                f"supported (only ONNX's default domain)")
        converter = CONVERTERS.get(node.op_type)
        if converter is None:
            raise FrontendError(f"{what}: op type {node.op_type} is not supported; the "
                                f"supported ones are {', '.join(sorted(CONVERTERS))}")
        args = []
        for name in node.input:
            if name and name not in values:
                raise FrontendError(f"{what}: input {name!r} is produced by no node, input "
                                    f"or initializer")
            args.append(values[name] if name else None)
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        try:
            out = converter(context, args, attrs, node)
            outs = out if isinstance(out, tuple) else (out,)
            outs = tuple(context.fold(o) for o in outs)
            for o in outs:
                context.type_of(o)  # a shape that does not check fails at its node
        except FrontendError:
            raise
        except (ValueError, TypeError, KeyError, IndexError) as err:
            raise FrontendError(f"{what}: {err}") from None
        for name, expr in zip(node.output, outs):
            if name:
                values[name] = expr
    results = [values[o.name] for o in g.output]
    body = results[0] if len(results) == 1 else graph.Tuple(results)
    # the graph's output names, for a model library's API (runtime/export_library.py)
    fn = Function([*inputs, *weights], body,
                  attrs={"output_names": tuple(o.name for o in g.output)})
    return graph.IRModule.from_expr(fn), params


def _input_type(inp, shape: dict, where: str):
    t = inp.type.tensor_type
    dtype = DTYPES.get(t.elem_type)
    if dtype is None:
        raise FrontendError(f"{where}: input {inp.name} has element type {t.elem_type}, "
                            f"not one of {', '.join(DTYPES.values())}")
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
