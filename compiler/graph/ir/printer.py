"""The text form of graph functions, as Relay prints them:

    def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {
      %0 = nn.conv2d(%x, %w, padding=[0, 0, 0, 0]);
      %1 = add(%0, meta[relay.Constant][0]);
      add(%1, %1)
    }

and, after InferType, with `-> Tensor[...]` after the parameters and `/* ty=... */`
after every call and constant.

Every call (and tuple) is bound to `%n` in post-order, once, however many times it is
used (from a work list: a graph thousands of ops deep prints at Python's default
recursion limit); the last expression is the function's result. A constant of rank 0 prints as its
value (`2f`; a float in six digits when they give it back exactly, else in full), any
other as `meta[relay.Constant][k]`, k by first appearance in the
module's text. Types (`/* ty=... */`, `-> ...`) show once InferType has run. An
attribute shows only when it differs from the op's default. A call of a fused function
prints the function inline (`%0 = fn (%p0: ..., Primitive=1) -> ... { ... };`), a call
of a module's function by its name (`@ccompiler_0(%x)`).
"""
from __future__ import annotations

import numpy as np

from .expr import TEXT, Call, Constant, Expr, Function, GlobalVar, Tuple, TupleGetItem, Var
from .functor import post_order
from .op import Op


def function_text(func: Function, name: str) -> str:
    """`def @name(...) -> ty { ... }`."""
    return _Printer().function(func, f"def @{name}", "")


def expr_text(expr: Expr) -> str:
    """An expression on its own: its bindings, then its value."""
    printer = _Printer()
    if isinstance(expr, Function):
        return printer.function(expr, "fn ", "")
    printer._bind_below(expr, "")
    value = printer.value(expr, "")
    return "\n".join([*printer.lines, value])


def _attr_value(value) -> str:
    if isinstance(value, np.ndarray):  # in full: numpy's own text elides long arrays
        value = value.tolist()
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_attr_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float):
        return _exact(value, "float64") + "f"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def _scalar(data: np.ndarray) -> str:
    suffix = {"float32": "f", "float64": "f64", "int32": "", "int64": "i64"}.get(
        str(data.dtype), str(data.dtype))
    value = data.item()
    text = _exact(value, data.dtype) if isinstance(value, float) else str(value)
    return text + suffix


def _exact(value: float, dtype) -> str:
    """`value` short (`%g`) when that reads back as the same `dtype` value, else in full:
    the text is a function's identity (the build compiles one kernel per distinct text),
    so two constants that differ must never print alike (1.5000001 and 1.5000003 both
    read 1.5 in six digits)."""
    short = f"{value:g}"
    same = np.array(float(short)).astype(dtype) == np.array(value).astype(dtype)
    return short if same or value != value else repr(value)


class _Printer:
    def __init__(self):
        self.lines: list[str] = []
        self.names: dict[int, str] = {}   # node id -> %n
        self.constants: dict[int, int] = {}
        self.counter = 0
        self.typed = True  # types show once InferType has run

    def function(self, func: Function, head: str, indent: str) -> str:
        # a nested function's bindings are numbered on from the enclosing ones, as TVM
        # numbers them (the function itself is then bound after its body's names)
        saved = self.lines, self.names, self.typed
        self.lines, self.names = [], {}
        self.typed = func.ret_type is not None
        params = [f"%{p.name}: {p.ty}" for p in func.params]
        params += [f"{k}={_attr_value(v) if not isinstance(v, int) else v}"
                   for k, v in func.attrs.items()]
        ret = f" -> {func.ret_type}" if func.ret_type is not None else ""
        self._bind_below(func.body, indent + "  ")
        result = self.value(func.body, indent + "  ")
        body = [*self.lines, f"{indent}  {result}"]
        self.lines, self.names, self.typed = saved
        return "\n".join([f"{head}({', '.join(params)}){ret} {{", *body, f"{indent}}}"])

    def _bind_below(self, expr: Expr, indent: str) -> None:
        """Bind every operand below `expr` to its `%n` and number its constants, in
        post-order, from a work list: the names, numbers and lines a recursive walk
        makes, without a frame per node (a graph thousands of ops deep prints at Python's
        default recursion limit)."""
        for node in post_order(expr)[:-1]:
            if isinstance(node, Constant):
                self.value(node, indent)
            elif not isinstance(node, (Var, GlobalVar)) and id(node) not in self.names:
                self._operand(node, indent)

    def value(self, expr: Expr, indent: str) -> str:
        """The text of `expr` as an argument: a name, a literal, or (for the result) the
        call itself."""
        if id(expr) in self.names:
            return self.names[id(expr)]
        if isinstance(expr, Var):
            return f"%{expr.name}"
        if isinstance(expr, GlobalVar):
            return f"@{expr.name}"
        if isinstance(expr, Constant):
            if expr.data.ndim == 0:
                return _scalar(expr.data)
            k = self.constants.setdefault(id(expr), len(self.constants))
            return f"meta[relay.Constant][{k}]" + self._ty(expr)
        return self._inline(expr, indent)

    def _ty(self, expr: Expr) -> str:
        return f" /* ty={expr.ty} */" if self.typed and expr.ty is not None else ""

    def _inline(self, expr: Expr, indent: str) -> str:
        """The expression's own text, its operands bound first."""
        if isinstance(expr, Call):
            args = [self._operand(a, indent) for a in expr.args]
            if isinstance(expr.op, Op):
                defaults = expr.op.defaults
                args += [f"{k}={_attr_value(v)}" for k, v in expr.attrs.items()
                         if k not in defaults or defaults[k] != v]
                head = expr.op.name
            else:
                head = self._operand(expr.op, indent)
            return f"{head}({', '.join(args)}){self._ty(expr)}"
        if isinstance(expr, Tuple):
            return f"({', '.join(self._operand(f, indent) for f in expr.fields)})"
        if isinstance(expr, TupleGetItem):
            return f"{self._operand(expr.tuple_value, indent)}.{expr.index}"
        if isinstance(expr, Function):
            return self.function(expr, "fn ", indent)
        raise TypeError(f"cannot print a {type(expr).__name__}")

    def _operand(self, expr: Expr, indent: str) -> str:
        """An operand: bound to `%n` first unless it is a var, a constant or bound."""
        if isinstance(expr, (Var, GlobalVar, Constant)) or id(expr) in self.names:
            return self.value(expr, indent)
        text = self._inline(expr, indent)
        name = f"%{self.counter}"
        self.counter += 1
        self.lines.append(f"{indent}{name} = {text};")
        self.names[id(expr)] = name
        return name


TEXT.update(expr=expr_text, function=function_text)
