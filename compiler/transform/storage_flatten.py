"""StorageFlatten: multi-dimensional tensor accesses -> flat buffer Load / Store.

Each Realize becomes an Allocate of a buffer as large as the largest region it can
hold (the constant upper bound of each extent), indexed relative to the region's
start: an element computed at `C[dj, dk]` inside loop dk lands at `C[0]`.
"""
from __future__ import annotations

from ..arith.simplify import const_upper_bound, loop_bounds, simplify
from ..errors import LowerError
from ..ir import expr as E
from ..ir.expr import Load, ProducerLoad
from ..ir.functor import map_children
from ..ir.stmt import Allocate, Buffer, For, ProducerStore, Realize, Store


def _flat_index(indices, mins, shape) -> E.Expr:
    out = None
    for idx, lo, dim in zip(indices, mins, shape):
        rel = idx - lo if not (isinstance(lo, E.IntImm) and lo.value == 0) else idx
        out = rel if out is None else out * dim + rel
    return out if out is not None else E.const(0)


def storage_flatten(stmt, arg_buffers: dict, bounds: dict | None = None):
    """Flatten `stmt`. `arg_buffers` maps the argument tensors to their Buffers."""
    layout = {t: (buf, (E.const(0),) * len(buf.shape)) for t, buf in arg_buffers.items()}
    memo: dict = {}  # simplify()'s, for this walk: the accesses share their index terms

    def access(t, indices, b):
        if t not in layout:
            raise LowerError(f"tensor {t.name} is read but neither computed nor passed in args")
        buf, mins = layout[t]
        return buf, simplify(_flat_index(indices, mins, buf.shape), b, memo)

    def expr(e, b):
        def visit(n):
            n = map_children(n, visit)
            if isinstance(n, ProducerLoad):
                buf, idx = access(n.producer, n.indices, b)
                return Load(buf, idx)
            return n
        return visit(e)

    def stmt_(s, b):
        match s:
            case Realize(producer=t, bounds=region, body=body, scope=scope):
                shape = []
                for r in region:
                    ub = const_upper_bound(r.extent, b)
                    shape.append(E.const(ub) if ub is not None else simplify(r.extent, b))
                buf = Buffer(t.name, t.dtype, tuple(shape), scope)
                layout[t] = (buf, tuple(r.min for r in region))
                return Allocate(buf, stmt_(body, b))
            case ProducerStore(producer=t, indices=idx, value=v):
                buf, flat = access(t, tuple(expr(i, b) for i in idx), b)
                return Store(buf, flat, expr(v, b))
            case For(loop_var=var, min=lo, extent=ext):
                inner = {**b, var: loop_bounds(lo, ext, b)}
                return map_children(s, lambda c: stmt_(c, inner) if not isinstance(c, E.Expr)
                                    else expr(c, b))
        return map_children(s, lambda c: expr(c, b) if isinstance(c, E.Expr) else stmt_(c, b))

    return stmt_(stmt, dict(bounds or {}))
