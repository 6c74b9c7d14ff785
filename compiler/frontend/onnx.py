"""from_onnx: an ONNX model as a graph function (Relay's relay.frontend.from_onnx).

    mod, params = from_onnx("resnet18.onnx", shape={"input": (1, 3, 224, 224)})

The function's parameters are the model's inputs, then one per floating-point
initializer (a weight), named as in the model; `params` maps those initializers' names to
their arrays, and `bind_params` turns the parameters into constants (as Relay's
bind_params_by_name), so that FoldConstant and the build see the weights. Integer and
bool initializers (shapes, indices, axes) are constants from the start.

Each node goes through its op type's converter (onnx_ops/: one module per family), after
the QDQ groups around a Conv are fused into QLinearConv (qdq_fusion.py), and
every call the converter builds on constants alone is folded to the constant it computes
right away (Context.fold), so that with static input shapes the shape subgraphs
exporters emit (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) arrive at Reshape as
constants. Inputs that ONNX feeds as tensors but that must be known to shape the graph
(Reshape's shape, Clip's bounds, Pad's pads, Slice's starts) are read from them.

Everything that cannot be imported is one FrontendError naming the file and the node
(its name and op type), the input or the opset, and what to do.
"""
from __future__ import annotations

import mmap
import os

from .. import graph
from ..errors import FrontendError
from ..graph.ir.bind import bind_params  # noqa: F401 - exported by compiler.frontend
from ..graph.ir.expr import Constant, Function, Var
from ..ir.dtype import is_float
from .onnx_ops import CONVERTERS, DOMAINS
from .onnx_ops.common import COMPILED, DTYPES, Attributes, Context, dtype_name
from .qdq_fusion import fuse_qdq, warn_in_float

OPSETS = range(1, 29)
"""The default-domain opsets whose semantics these converters follow: all of onnx 1.23's.
From 23 to 28 the ops converted here changed only in element types, except for attributes
they read (SpaceToDepth's mode); before 7, the old forms (broadcast=1 with an axis,
consumed_inputs, a Cast's string `to`, Reshape's shape attribute) are attributes no
converter reads, or inputs it does not find, and so refused by name, and the training
mode that is_test=0 meant (BatchNormalization, Dropout) is refused."""

CONVERTER_ERRORS = (ValueError, TypeError, KeyError, IndexError, ArithmeticError)
"""What a converter or a type relation raises on a node it cannot import: each becomes one
FrontendError naming the node."""


class _NotComputed:
    """A node's output that its converter does not compute (an optional output it has no
    use for): an error as soon as a node or the graph's outputs use it."""

    def __init__(self, what: str, index: int, name: str):
        self.message = f"{what}: its output {index} ({name!r}) is not supported"


def from_onnx(model, shape: dict | None = None) -> tuple:
    """(IRModule with the model as "main", {initializer name: array}); `model` is an
    onnx.ModelProto or a path; `shape` gives a static shape to inputs by name (needed
    for an input with a dynamic dimension)."""
    import onnx
    where = "<model>"
    if not isinstance(model, onnx.ModelProto):
        where = os.fspath(model)
        if not os.path.exists(where):
            raise FrontendError(f"{where}: no such file")
        try:
            model = read_model(where)
        except Exception as err:  # noqa: BLE001 - any parse failure is a bad file
            raise FrontendError(f"{where}: not a readable ONNX model ({type(err).__name__}: "
                                f"{str(err).splitlines()[0] if str(err) else ''})") from None
    opset = _default_opset(model, where)
    g = model.graph
    arrays = {t.name: _initializer(t, where) for t in g.initializer}
    params = {k: a for k, a in arrays.items() if is_float(str(a.dtype))}
    shape = dict(shape or {})
    values: dict[str, object] = {k: Constant(a) for k, a in arrays.items() if k not in params}
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
    nodes = fuse_qdq(g.node, arrays, {o.name for o in g.output})
    for node in nodes:
        _convert_node(context, node, values)
    warn_in_float(nodes, where, context.in_float)
    results = [_use(values, o.name, f"{where}: graph output {o.name!r}") for o in g.output]
    for o, result in zip(g.output, results):
        try:
            _check_dtype(context.type_of(result), None)
        except TypeError as err:
            raise FrontendError(f"{where}: graph output {o.name!r}: {err}") from None
    body = results[0] if len(results) == 1 else graph.Tuple(results)
    # the graph's output names, for a model library's API (runtime/export_library.py)
    fn = Function([*inputs, *weights], body,
                  attrs={"output_names": tuple(o.name for o in g.output)})
    return graph.IRModule.from_expr(fn), params


_NARROWED = {"LayerNormalization": 1}
"""How many leading outputs of these ops have their 16-bit input's type (the rest, a
LayerNormalization's statistics, have stash_type's)."""
_OWN_TYPE = ("Cast", "CastLike")
"""Ops whose result type is their own business, computed as they are."""


def _narrow_type(context, node, args) -> str | None:
    """The 16-bit float type of the node's float inputs, if any: such a node computes in
    float32 and rounds its float results once, at its end (as ONNX Runtime computes
    them, and the reference implementation rounds each op): a reduction inside it
    accumulates in float32, not rounded to 16 bits at every step."""
    if node.op_type in _OWN_TYPE:
        return None
    found = {context.dtype(a) for a in args if a is not None and not isinstance(
        context.type_of(a), graph.TupleType)} & {"float16", "bfloat16"}
    return found.pop() if len(found) == 1 else None


def _cast(context, expr, dtype: str):
    """`expr` as `dtype` where it is a float tensor of another width."""
    if expr is None or not is_float(context.dtype(expr)) or context.dtype(expr) == dtype:
        return expr
    return graph.op.tensor.cast(expr, dtype)


def _convert_node(context: Context, node, values: dict) -> None:
    """Convert one node: its converter on its inputs from `values`, its results folded and
    checked, every attribute it did not read refused; its outputs go into `values`."""
    import onnx
    what = f"{context.where}: node {node.name or '(unnamed)'} ({node.op_type})"
    table = DOMAINS.get(node.domain)
    if table is None:
        raise FrontendError(f"{what}: the operator domain {node.domain!r} is not "
                            f"supported (supported: ONNX's default domain, "
                            f"{', '.join(sorted(d for d in DOMAINS if d not in ('', 'ai.onnx')))})")
    converter = table.get(node.op_type)
    if converter is None:
        domain = f" of domain {node.domain}" if table is not CONVERTERS else ""
        raise FrontendError(f"{what}: op type {node.op_type}{domain} is not supported; the "
                            f"supported ones are {', '.join(sorted(table))}")
    args = [_use(values, name, what) if name else None for name in node.input]
    attrs = Attributes({a.name: onnx.helper.get_attribute_value(a) for a in node.attribute})
    try:
        outs = tuple(context.fold(o) for o in _converted(context, converter, args, attrs, node))
        for o in outs:
            _check_dtype(context.type_of(o), o)  # a shape that does not check fails here
    except FrontendError:
        raise
    except CONVERTER_ERRORS as err:
        raise FrontendError(f"{what}: {err}") from None
    unread = attrs.unread(node.op_type, context.opset)
    if unread:
        raise FrontendError(f"{what}: attribute {unread} is not supported")
    for k, name in enumerate(node.output):
        if name:
            values[name] = outs[k] if k < len(outs) else _NotComputed(what, k, name)


def _converted(context: Context, converter, args: list, attrs, node) -> tuple:
    """The converter's results as a tuple; a node on a 16-bit float type (_narrow_type)
    converts on its inputs cast to float32, and its results are cast back."""
    narrow = _narrow_type(context, node, args)
    if narrow:
        args = [_cast(context, a, "float32") for a in args]
    out = converter(context, args, attrs, node)
    outs = out if isinstance(out, tuple) else (out,)
    if not narrow:
        return outs
    keep = _NARROWED.get(node.op_type, len(outs))
    return tuple(_cast(context, o, narrow) if k < keep else o for k, o in enumerate(outs))


def _default_opset(model, where: str) -> int:
    """The model's opset of ONNX's default domain, if this importer follows it."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None:
        domains = ", ".join(f"{o.domain} {o.version}" for o in model.opset_import) or "none"
        raise FrontendError(f"{where}: the model imports no opset of ONNX's default domain "
                            f"(its opsets: {domains}); only the default domain's operators "
                            f"are supported")
    if opset not in OPSETS:
        raise FrontendError(f"{where}: opset {opset} of the default domain is not supported "
                            f"(supported: {OPSETS.start} to {OPSETS.stop - 1}); convert the "
                            f"model with onnx.version_converter")
    return opset


def read_model(path: str):
    """onnx.load(path), with a binary file parsed from a memory map of it rather than
    from a copy read into memory first (BERT-base's 440 MB: 0.55-0.60 s to load, 0.25-0.30
    s mapped); external data is loaded from the file's folder, as onnx.load does. A text
    format (onnx.load tells it by the file's extension) goes through onnx.load."""
    import onnx
    from google.protobuf.message import DecodeError
    from onnx.external_data_helper import load_external_data_for_model
    fmt = onnx.serialization.registry.get_format_from_file_extension(os.path.splitext(path)[1])
    size = os.path.getsize(path)
    if fmt not in (None, "protobuf") or size == 0:
        return onnx.load(path)
    model = onnx.ModelProto()
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        with memoryview(mapped) as view:
            decoded = model.ParseFromString(view)  # copies what it keeps: the map closes
    if decoded is not None and decoded != size:
        raise DecodeError(f"Protobuf decoding consumed too few bytes: {decoded} of {size}")
    load_external_data_for_model(model, os.path.dirname(os.path.abspath(path)))
    return model


def _use(values: dict, name: str, what: str):
    """The value named `name` where a node or the graph's outputs use it."""
    found = values.get(name)
    if found is None:
        raise FrontendError(f"{what}: input {name!r} is produced by no node, input or "
                            f"initializer")
    if isinstance(found, _NotComputed):
        raise FrontendError(f"{found.message}, and {what.split(': ', 1)[-1]} uses it")
    return found


def _initializer(tensor, where: str):
    from onnx import numpy_helper
    try:
        return numpy_helper.to_array(tensor)
    except Exception as err:  # noqa: BLE001 - a malformed or exotic tensor: say which
        raise FrontendError(f"{where}: initializer {tensor.name!r} cannot be read "
                            f"({type(err).__name__}: {err})") from None


def _check_dtype(ty, expr) -> None:
    """A TypeError unless every tensor of `ty` has an element type the build compiles
    (a constant may have any: it is folded into its users, or refused there)."""
    if isinstance(expr, Constant):
        return
    fields = ty.fields if hasattr(ty, "fields") else (ty,)
    for t in fields:
        if t.dtype not in COMPILED:
            raise TypeError(f"its result has element type {t.dtype}, which is not compiled "
                            f"(supported: {', '.join(COMPILED)})")


def _input_type(inp, shape: dict, where: str):
    kind = inp.type.WhichOneof("value")
    if kind is None:
        raise FrontendError(f"{where}: input {inp.name} has no type (the model gives neither "
                            f"its element type nor its shape)")
    if kind != "tensor_type":
        raise FrontendError(f"{where}: input {inp.name} is a {kind.removesuffix('_type')}, "
                            f"which is not supported (tensors only)")
    t = inp.type.tensor_type
    dtype = DTYPES.get(t.elem_type)
    if dtype not in COMPILED:
        raise FrontendError(f"{where}: input {inp.name} has element type "
                            f"{dtype_name(t.elem_type)}, which is not supported (supported: "
                            f"{', '.join(COMPILED)})")
    if inp.name in shape:
        return graph.TensorType(tuple(shape[inp.name]), dtype)
    dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
    if None in dims:  # an example of its own rank: its static extents, 1 and 128 for the rest
        open_ = t.shape.dim[dims.index(None)]
        example = tuple(d if d is not None else 128 if i else 1 for i, d in enumerate(dims))
        raise FrontendError(f"{where}: input {inp.name} has a dynamic dimension "
                            f"({open_.dim_param or '?'}); give its shape, e.g. "
                            f"shape={{'{inp.name}': {example}}} or --shape "
                            f"{inp.name}:{','.join(map(str, example))}")
    return graph.TensorType(dims, dtype)
