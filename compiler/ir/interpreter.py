"""Run a lowered PrimFunc on numpy arrays by translating it to Python source.

A reference executor for tests: slow, but independent of LLVM, so the loop IR can be
checked against numpy before (and alongside) native code generation.
"""
from __future__ import annotations

import math

import numpy as np

from . import expr as E
from . import stmt as S

_OPS = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.Div: "/", E.FloorDiv: "//", E.FloorMod: "%",
        E.LT: "<", E.LE: "<=", E.EQ: "==", E.NE: "!=", E.And: "and", E.Or: "or"}


def _truncdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _cast(x, dtype):
    if dtype == "bool":
        return bool(x)
    if not E.is_float(dtype):
        return int(x)  # truncates toward zero, like C, for Python and numpy scalars
    return float(x)


def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x)) if x >= -700 else 0.0


def _round(x):
    """Halves to even, as LLVM's roundeven; infinities and NaN as they are."""
    return float(round(x)) if math.isfinite(x) else x


def _dot_u8s8(x, y):
    """te.dot_u8s8 of two int32 words: x's unsigned bytes times y's signed ones."""
    xs = int(x).to_bytes(4, "little", signed=True)
    ys = int(y).to_bytes(4, "little", signed=True)
    return sum(a * (b - 256 if b > 127 else b) for a, b in zip(xs, ys))


def _exp(x):
    return math.exp(x) if x < 700 else math.inf


_FUNCS = {"exp": "_exp", "log": "math.log", "sqrt": "math.sqrt", "tanh": "math.tanh",
          "sigmoid": "_sigmoid", "erf": "math.erf", "floor": "math.floor", "ceil": "math.ceil",
          "round": "_round", "dot_u8s8": "_dot_u8s8",
          "abs": "abs", "pow": "math.pow", "sin": "math.sin", "cos": "math.cos"}


class _Emitter:
    def __init__(self):
        self.names: dict = {}
        self.lines: list[str] = []

    def name(self, obj, hint: str) -> str:
        if obj not in self.names:
            clean = "".join(c if c.isalnum() else "_" for c in hint)
            self.names[obj] = f"{clean}_{len(self.names)}"
        return self.names[obj]

    def expr(self, e) -> str:
        match e:
            case E.IntImm(value=v, dtype="bool"):
                return str(bool(v))
            case E.FloatImm(value=v) if not math.isfinite(v):
                return f"float({str(v)!r})"
            case E.IntImm(value=v) | E.FloatImm(value=v):
                return repr(v)
            case E.Var():
                return self.name(e, e.name)
            case E.Cast(dtype=dt, value=v):
                return f"_cast({self.expr(v)}, {dt!r})"
            case E.Not(a=a):
                return f"(not {self.expr(a)})"
            case E.Min(a=a, b=b):
                return f"min({self.expr(a)}, {self.expr(b)})"
            case E.Max(a=a, b=b):
                return f"max({self.expr(a)}, {self.expr(b)})"
            case E.TruncDiv(a=a, b=b):
                return f"_truncdiv({self.expr(a)}, {self.expr(b)})"
            case E.TruncMod(a=a, b=b):
                x, y = self.expr(a), self.expr(b)
                return f"({x} - _truncdiv({x}, {y}) * {y})"
            case E.BinaryOp(a=a, b=b):
                return f"({self.expr(a)} {_OPS[type(e)]} {self.expr(b)})"
            case E.Select(condition=c, true_value=t, false_value=f):
                return f"({self.expr(t)} if {self.expr(c)} else {self.expr(f)})"
            case E.Call(name=n, args=args):
                return f"{_FUNCS[n]}({', '.join(self.expr(a) for a in args)})"
            case E.Let(var=v, value=val, body=b):
                return f"(lambda {self.expr(v)}: {self.expr(b)})({self.expr(val)})"
            case E.Load(buffer=b, index=i):
                return f"{self.name(b, b.name)}[{self.expr(i)}]"
            case E.ProducerLoad():
                raise ValueError("the interpreter runs flattened IR (after lower())")
        raise TypeError(f"interpreter: no rule for {type(e).__name__}")

    def stmt(self, s, ind: str):
        match s:
            case S.SeqStmt(seq=items):
                for x in items:
                    self.stmt(x, ind)
            case S.For(loop_var=v, min=lo, extent=ext, body=body):
                lo_s = self.expr(lo)
                self.lines.append(
                    f"{ind}for {self.expr(v)} in range({lo_s}, {lo_s} + {self.expr(ext)}):")
                self.stmt(body, ind + "    ")
                self.lines.append(f"{ind}    pass")
            case S.Store(buffer=b, index=i, value=v):
                self.lines.append(f"{ind}{self.name(b, b.name)}[{self.expr(i)}] = {self.expr(v)}")
            case S.Allocate(buffer=b, body=body):
                self.lines.append(f"{ind}{self.name(b, b.name)} = np.zeros("
                                  f"int({self.expr(b.elements)}), dtype={b.dtype!r})")
                self.stmt(body, ind)
            case S.IfThenElse(condition=c, then_case=t, else_case=f):
                self.lines.append(f"{ind}if {self.expr(c)}:")
                self.stmt(t, ind + "    ")
                self.lines.append(f"{ind}    pass")
                if f is not None:
                    self.lines.append(f"{ind}else:")
                    self.stmt(f, ind + "    ")
                    self.lines.append(f"{ind}    pass")
            case S.LetStmt(var=v, value=val, body=body):
                self.lines.append(f"{ind}{self.expr(v)} = {self.expr(val)}")
                self.stmt(body, ind)
            case S.Evaluate(value=v):
                self.lines.append(f"{ind}{self.expr(v)}")
            case _:
                raise TypeError(f"interpreter: no rule for {type(s).__name__}")


def run(func: S.PrimFunc, *arrays: np.ndarray) -> None:
    """Execute `func` on `arrays` (one per parameter, in order); outputs are written
    in place. Symbolic sizes are taken from the arrays' shapes."""
    if len(arrays) != len(func.params):
        raise ValueError(f"{func.name} takes {len(func.params)} arrays, got {len(arrays)}")
    em = _Emitter()
    sizes = {}
    for buf, arr in zip(func.params, arrays):
        for dim, n in zip(buf.shape, arr.shape):
            if isinstance(dim, E.Var):
                sizes[dim] = n
    params = [em.name(b, b.name) for b in func.params]
    size_names = [em.name(v, v.name) for v in sizes]
    em.stmt(func.body, "    ")
    src = f"def _f({', '.join(params + size_names)}):\n" + "\n".join(em.lines) + "\n"
    scope = {"np": np, "math": math, "_cast": _cast, "_truncdiv": _truncdiv,
             "_sigmoid": _sigmoid, "_exp": _exp, "_dot_u8s8": _dot_u8s8}
    exec(compile(src, f"<{func.name}>", "exec"), scope)
    flat = [a.reshape(-1) for a in arrays]
    for a, f in zip(arrays, flat):
        if not np.shares_memory(a, f):
            raise ValueError("interpreter needs contiguous arrays")
    scope["_f"](*flat, *sizes.values())
