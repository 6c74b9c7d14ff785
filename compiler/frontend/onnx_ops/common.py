"""What every ONNX converter shares: the import's Context (the values known at import,
the static type of any value built so far, folding of calls on constants) and the small
readers of ONNX attributes.

A converter is `convert(ctx, args, attrs, node) -> Expr | tuple of Expr`: `args` are the
node's inputs as graph expressions (None for an omitted optional input), `attrs` its
attributes as onnx.helper.get_attribute_value gives them. A ValueError, TypeError or
KeyError it raises becomes one FrontendError naming the file and the node.
"""
from __future__ import annotations

import numpy as np

from ...graph.ir.expr import Call, Constant, Expr, Tuple, TupleGetItem, Var
from ...graph.ir.op import Op
from ...graph.ir.reference import apply_op
from ...graph.ir.ty import TensorType, TupleType
from ...ir.expr import DTYPES as ir_dtypes

DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32",
          7: "int64", 9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64",
          16: "bfloat16"}
"""ONNX's element types (TensorProto.DataType) with a dtype of the same name (numpy's, and
ml_dtypes' bfloat16)."""

COMPILED = tuple(d for d in DTYPES.values() if d in ir_dtypes)
"""The element types a model's values may have: those the build compiles."""


def dtype_name(code: int) -> str:
    """ONNX's name of element type `code` (TensorProto.DataType), in lower case."""
    from onnx import TensorProto
    return TensorProto.DataType.Name(code).lower() if code in TensorProto.DataType.values() \
        else f"number {code}"


class Attributes(dict):
    """A node's attributes that remember which ones its converter read, so that the
    import refuses an attribute no converter looked at instead of ignoring it."""

    def __init__(self, items: dict):
        super().__init__(items)
        self.read: set[str] = set()

    def __getitem__(self, name):
        self.read.add(name)
        return super().__getitem__(name)

    def get(self, name, default=None):
        self.read.add(name)
        return super().get(name, default)

    def __contains__(self, name):
        self.read.add(name)
        return super().__contains__(name)

    def unread(self, op_type: str, opset: int) -> str:
        """'' when the converter read every attribute given other than its schema's
        default value; else the first such attribute, as name=value."""
        from onnx import defs, helper
        try:
            schema = defs.get_schema(op_type, opset, "").attributes
        except Exception:  # noqa: BLE001 - no schema at this opset: no defaults known
            schema = {}
        for name, value in super().items():
            if name in self.read:
                continue
            default = schema.get(name)
            if default is not None and default.default_value.name and \
                    helper.get_attribute_value(default.default_value) == value:
                continue
            return f"{name}={text(value) if isinstance(value, bytes) else value!r}"
        return ""


class Context:
    """One import's view of its values: the initializers, the opset, the file; the
    static type of every expression built (memoized, from the ops' type relations, so
    that converters may ask for shapes at no cost); and `fold`, which evaluates calls
    whose operands are all constants (each op's numpy reference), as Relay's frontend
    folds shape computations while importing."""

    def __init__(self, params: dict, opset: int, where: str):
        self.params, self.opset, self.where = params, opset, where
        self._types: dict[int, object] = {}
        self._keep: list = []  # the typed expressions: ids key _types
        self._folded: set[int] = set()  # the nodes' outputs: fold stops at them
        self.in_float: list[str] = []  # quantized operators computed in float32 / int32

    def value(self, expr: Expr | None, what: str) -> np.ndarray:
        """The array of an input that must be known when importing (an initializer, a
        Constant node, or a computation on them, folded)."""
        if isinstance(expr, Constant):
            return expr.data
        if isinstance(expr, Var) and expr.name in self.params:
            return self.params[expr.name]
        source = f"the model's input {expr.name!r}" if isinstance(expr, Var) else \
            "values fed at run time"
        raise ValueError(f"its {what} must be a constant (an initializer, a Constant node "
                         f"or computed from them and static shapes), not computed from "
                         f"{source}: shapes decided at run time are not supported")

    def known(self, expr: Expr | None) -> bool:
        """Whether `expr` is known at import (ctx.value would answer)."""
        return isinstance(expr, Constant) or isinstance(expr, Var) and expr.name in self.params

    def optional(self, args: list, i: int, what: str, default=None):
        """The known array of optional input `i`, or `default` when it is omitted."""
        if i >= len(args) or args[i] is None:
            return default
        return self.value(args[i], what)

    def type_of(self, expr: Expr):
        """The static type of `expr` (TensorType or TupleType)."""
        found = self._types.get(id(expr))
        if found is not None:
            return found
        if isinstance(expr, (Var, Constant)):
            ty = expr.ty
        elif isinstance(expr, Tuple):
            ty = TupleType(tuple(self.type_of(f) for f in expr.fields))
        elif isinstance(expr, TupleGetItem):
            ty = self.type_of(expr.tuple_value).fields[expr.index]
        elif isinstance(expr, Call) and isinstance(expr.op, Op):
            ty = expr.op.type_rel([self.type_of(a) for a in expr.args], expr.attrs)
        else:
            raise TypeError(f"no static type for a {type(expr).__name__}")
        self._types[id(expr)] = ty
        self._keep.append(expr)
        return ty

    def shape(self, expr: Expr) -> tuple:
        return tuple(self.type_of(expr).shape)

    def dtype(self, expr: Expr) -> str:
        return self.type_of(expr).dtype

    def fold(self, expr: Expr) -> Expr:
        """`expr` (a node's output) with every call whose operands are all constants (a
        tuple of them counts) replaced by the constant it computes, in the dtype its
        type relation gives; the walk stops at earlier nodes' outputs, so a node costs
        what its converter built, not the graph above it."""
        memo: dict[int, Expr] = {}

        def visit(e):
            if id(e) in self._folded:  # an earlier node's output: folded already
                return e
            if id(e) in memo:
                return memo[id(e)]
            out = e
            if isinstance(e, Tuple):
                fields = tuple(visit(f) for f in e.fields)
                if any(a is not b for a, b in zip(fields, e.fields)):
                    out = Tuple(fields)
            elif isinstance(e, TupleGetItem):
                value = visit(e.tuple_value)
                out = value.fields[e.index] if isinstance(value, Tuple) else \
                    e if value is e.tuple_value else TupleGetItem(value, e.index)
            elif isinstance(e, Call) and isinstance(e.op, Op):
                args = tuple(visit(a) for a in e.args)
                if args and all(_constant(a) for a in args) and e.op.reference is not None:
                    out = _evaluate(e.op, args, e.attrs)
                elif any(a is not b for a, b in zip(args, e.args)):
                    out = Call(e.op, args, e.attrs)
            memo[id(e)] = out
            return out
        out = visit(expr)
        self._folded.add(id(out))
        self._keep.append(out)
        return out


def _constant(expr) -> bool:
    return isinstance(expr, Constant) or isinstance(expr, Tuple) and \
        all(isinstance(f, Constant) for f in expr.fields)


def _evaluate(op: Op, args: tuple, attrs) -> Expr:
    """The constant(s) `op` computes on constant `args` (the evaluator's apply_op: the
    op's reference, in the dtypes its type relation gives)."""
    arrays = [tuple(f.data for f in a.fields) if isinstance(a, Tuple) else a.data
              for a in args]
    value = apply_op(op, arrays, attrs)
    if isinstance(value, tuple):
        return Tuple(tuple(Constant(v) for v in value))
    return Constant(value)


def text(value) -> str:
    """An ONNX string attribute (bytes) as str."""
    return value.decode() if isinstance(value, bytes) else str(value)


def pads(attrs, size=None, kernel=None, strides=None, dilations=None) -> tuple:
    """A window's pads as (begin..., end...) of its axes (2 unless `size` says): explicit,
    or those auto_pad gives (VALID: none; SAME_UPPER / SAME_LOWER: the output is
    ceil(size / stride), the odd pixel at the end / the start), which needs the window's
    geometry (`size`...)."""
    mode = text(attrs.get("auto_pad", "NOTSET"))
    rank = 2 if size is None else len(size)
    if mode == "NOTSET":
        return tuple(attrs.get("pads", [0] * 2 * rank))
    if mode == "VALID":
        return (0,) * 2 * rank
    if mode not in ("SAME_UPPER", "SAME_LOWER") or size is None:
        raise ValueError(f"auto_pad={mode!r} is not supported; export with explicit pads")
    begin, end = zip(*(same_split(max(0, (-(-n // s) - 1) * s + (k - 1) * d + 1 - n), mode)
                       for n, k, s, d in zip(size, kernel, strides, dilations)))
    return begin + end


def same_split(total: int, mode: str) -> tuple[int, int]:
    """`total` padding of one axis as (before, after) by auto_pad `mode`: the odd pixel
    at the end for SAME_UPPER, at the start for SAME_LOWER."""
    small, big = total // 2, total - total // 2
    return (small, big) if mode == "SAME_UPPER" else (big, small)


def axis(value: int, ndim: int, what: str = "axis") -> int:
    """`value` as a non-negative axis of `ndim` (a ValueError naming it when out of range)."""
    if not -ndim <= value < ndim:
        raise ValueError(f"{what} {value} is out of range for {ndim} dimensions")
    return value % ndim


def tensor_type(shape, dtype) -> TensorType:
    return TensorType(tuple(int(d) for d in shape), dtype)
