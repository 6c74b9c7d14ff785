"""Text form of expressions and loop IR, in the style of the reference documents:
`for (i, 0, 16) {`, `C[((i*16) + j)] = (A[i] + 2f)`, `allocate B[float32 * 4]`.

Importing this module registers `node_str` as the str() of every node (node.py);
compiler/ir/__init__.py does so, so nodes print from the moment they exist.
"""
from __future__ import annotations

import math

from . import expr as E
from . import stmt as S
from .node import register_printer
from .reduce import Reduce

_INFIX = {E.Add: " + ", E.Sub: " - ", E.Mul: "*", E.Div: " / ", E.LT: " < ", E.LE: " <= ",
          E.EQ: " == ", E.NE: " != ", E.And: " && ", E.Or: " || "}
_CALLS = {E.FloorDiv: "floordiv", E.FloorMod: "floormod", E.TruncDiv: "truncdiv",
          E.TruncMod: "truncmod", E.Min: "min", E.Max: "max"}


def _float(v: float, dtype: str) -> str:
    if math.isinf(v) or math.isnan(v):
        return repr(v)
    return f"{v!r}f" if dtype == "float32" else repr(v)


def expr_str(e) -> str:
    """One expression as text, fully parenthesised like TVM's printer."""
    match e:
        case E.IntImm(value=v, dtype="bool"):
            return str(bool(v))
        case E.IntImm(value=v):
            return str(v)
        case E.FloatImm(value=v, dtype=dt):
            return _float(v, dt)
        case E.Var(name=n):
            return n
        case E.Cast(dtype=dt, value=v):
            return f"{dt}({expr_str(v)})"
        case E.Not(a=a):
            return f"!{expr_str(a)}"
        case E.BinaryOp(a=a, b=b) if type(e) in _INFIX:
            return f"({expr_str(a)}{_INFIX[type(e)]}{expr_str(b)})"
        case E.BinaryOp(a=a, b=b):
            return f"{_CALLS[type(e)]}({expr_str(a)}, {expr_str(b)})"
        case E.Select(condition=c, true_value=t, false_value=f):
            return f"if_then_else({expr_str(c)}, {expr_str(t)}, {expr_str(f)})"
        case E.Call(name=n, args=args):
            return f"{n}({', '.join(map(expr_str, args))})"
        case E.Let(var=v, value=val, body=b):
            return f"(let {v.name} = {expr_str(val)} in {expr_str(b)})"
        case E.ProducerLoad(producer=t, indices=idx):
            return f"{t.name}[{', '.join(map(expr_str, idx))}]"
        case E.Load(buffer=b, index=i):
            return f"{b.name}[{expr_str(i)}]"
        case E.Ramp(base=b, stride=st, lanes=n):
            return f"ramp({expr_str(b)}, {expr_str(st)}, {n})"
        case E.Broadcast(value=v, lanes=n):
            return f"x{n}({expr_str(v)})"
        case Reduce(combiner=c, source=src, axis=axis, condition=cond):
            where = f", where={expr_str(cond)}" if cond is not None else ""
            axes = ", ".join(iv.name for iv in axis)
            return f"reduce_{c.name}({expr_str(src)}, axis=[{axes}]{where})"
    raise TypeError(f"cannot print {type(e).__name__}")


_LOOP_WORD = {S.SERIAL: "for", S.PARALLEL: "parallel", S.VECTORIZED: "vectorized",
              S.UNROLLED: "unrolled"}


def _lines(s, ind: str, out: list[str]) -> None:
    match s:
        case S.SeqStmt(seq=items):
            for x in items:
                _lines(x, ind, out)
        case S.For(loop_var=v, min=lo, extent=ext, kind=kind, body=body, pragmas=pragmas):
            for name, value in pragmas:
                out.append(f"{ind}// pragma {name} = {value}")
            out.append(f"{ind}{_LOOP_WORD[kind]} ({v.name}, {expr_str(lo)}, {expr_str(ext)}) {{")
            _lines(body, ind + "  ", out)
            out.append(f"{ind}}}")
        case S.Store(buffer=b, index=i, value=v):
            out.append(f"{ind}{b.name}[{expr_str(i)}] = {expr_str(v)}")
        case S.ProducerStore(producer=t, indices=idx, value=v):
            out.append(f"{ind}{t.name}[{', '.join(map(expr_str, idx))}] = {expr_str(v)}")
        case S.Allocate(buffer=b, body=body):
            out.append(f"{ind}allocate {b.name}[{b.dtype} * {expr_str(b.elements)}]")
            _lines(body, ind, out)
        case S.Realize(producer=t, bounds=bounds, body=body):
            regions = ", ".join(f"[{expr_str(r.min)}, {expr_str(r.extent)}]" for r in bounds)
            out.append(f"{ind}realize {t.name}({regions}) {{")
            _lines(body, ind + "  ", out)
            out.append(f"{ind}}}")
        case S.IfThenElse(condition=c, then_case=t, else_case=f):
            out.append(f"{ind}if ({expr_str(c)}) {{")
            _lines(t, ind + "  ", out)
            if f is not None:
                out.append(f"{ind}}} else {{")
                _lines(f, ind + "  ", out)
            out.append(f"{ind}}}")
        case S.LetStmt(var=v, value=val, body=body):
            out.append(f"{ind}let {v.name} = {expr_str(val)}")
            _lines(body, ind, out)
        case S.Evaluate(value=v):
            out.append(f"{ind}{expr_str(v)}")
        case _:
            raise TypeError(f"cannot print {type(s).__name__}")


def stmt_str(s) -> str:
    """A statement as indented lines, one statement per line."""
    out: list[str] = []
    _lines(s, "", out)
    return "\n".join(out)


def func_str(f) -> str:
    """A PrimFunc: its signature (buffers with dtype and shape), then its body."""
    params = ", ".join(f"{b.name}: {b.dtype}[{', '.join(map(expr_str, b.shape))}]"
                       for b in f.params)
    return f"def {f.name}({params}):\n" + "\n".join(
        "  " + line for line in stmt_str(f.body).splitlines())


def node_str(obj) -> str:
    """The text of an expression, a statement or a PrimFunc."""
    if isinstance(obj, E.Expr):
        return expr_str(obj)
    if isinstance(obj, S.Stmt):
        return stmt_str(obj)
    if isinstance(obj, S.PrimFunc):
        return func_str(obj)
    raise TypeError(f"cannot print {type(obj).__name__}")


register_printer(node_str)
