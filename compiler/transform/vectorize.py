"""VectorizeLoop: a `vectorized` loop of constant extent L becomes vector operations.

The loop variable becomes `ramp(min, 1, L)`; affine index arithmetic keeps ramps as
ramps, so `A[i*1024 + j]` turns into the contiguous load `A[ramp(i*1024, 1, L)]`, and a
scalar meeting a vector is broadcast. Inner loops stay loops around vector statements.

Vectorizing reorders the iterations' statements, so it is done only when that cannot
change the result. Otherwise the loop stays a scalar loop and a VectorizeWarning says
which loop and why (never silently): an extent that is not a constant, a condition or a
loop bound depending on the loop variable, a store whose address does not move with the
lanes (a reduction along the vectorized axis), a buffer written and read at different
places, an allocation inside the loop, a guarded read (padding) under a per-lane condition.
A loop whose extent is not a constant but at most a constant L (a short last tile,
`min(n - i*16, 16)`) is versioned: vector operations when it runs L times, a scalar loop
otherwise.
"""
from __future__ import annotations

import warnings

from ..arith.simplify import const_bound, simplify, skey
from ..ir import expr as E
from ..ir.expr import Broadcast, Load, Ramp
from ..ir.functor import collect, exists, substitute, transform
from ..ir.stmt import (SERIAL, VECTORIZED, Allocate, Evaluate, For, IfThenElse, LetStmt,
                       SeqStmt, Store)


class VectorizeWarning(UserWarning):
    """A loop marked vectorize() was left a scalar loop; the message says why."""


class _Refuse(Exception):
    """This loop body cannot be vectorized; the message is the reason."""


def _lanes(e: E.Expr) -> int:
    return E.lanes(e.dtype)


def _broadcast(e: E.Expr, n: int) -> E.Expr:
    if _lanes(e) == n:
        return e
    if isinstance(e, Ramp):
        raise _Refuse(f"cannot widen {e}")
    return Broadcast(e, n)


def _affine(cls, a: E.Expr, b: E.Expr) -> E.Expr | None:
    """Ramp arithmetic that stays a ramp: ramp + scalar, ramp + ramp, ramp * constant."""
    ra, rb = isinstance(a, Ramp), isinstance(b, Ramp)
    sa = a if _lanes(a) == 1 else None
    sb = b if _lanes(b) == 1 else None
    if cls in (E.Add, E.Sub):
        if ra and rb:
            return Ramp(simplify(cls(a.base, b.base)), simplify(cls(a.stride, b.stride)), a.lanes)
        if ra and sb is not None:
            return Ramp(simplify(cls(a.base, sb)), a.stride, a.lanes)
        if rb and sa is not None:
            stride = (b.stride if cls is E.Add
                      else simplify(E.Sub(E.const(0, b.stride.dtype), b.stride)))
            return Ramp(simplify(cls(sa, b.base)), stride, b.lanes)
    if cls is E.Mul:
        if ra and isinstance(sb, E.IntImm):
            return Ramp(simplify(E.Mul(a.base, sb)), simplify(E.Mul(a.stride, sb)), a.lanes)
        if rb and isinstance(sa, E.IntImm):
            return Ramp(simplify(E.Mul(sa, b.base)), simplify(E.Mul(sa, b.stride)), b.lanes)
    return None


class _Vectorizer:
    def __init__(self, var: E.Var, lo: E.Expr, lanes: int):
        self.var, self.n = var, lanes
        self.ramp = Ramp(lo, E.const(1, var.dtype), lanes)
        self.written: dict = {}  # buffer -> structural key of the index it is stored at

    def expr(self, e: E.Expr) -> E.Expr:
        if e is self.var:
            return self.ramp
        if self.var not in collect(e, lambda x: x is self.var):
            return e
        match e:
            case E.BinaryOp(a=a, b=b):
                a, b = self.expr(a), self.expr(b)
                if _lanes(a) == _lanes(b) == 1:
                    return type(e)(a, b)
                folded = _affine(type(e), a, b)
                if folded is not None:
                    return folded
                return type(e)(_broadcast(a, self.n), _broadcast(b, self.n))
            case E.Not(a=a):
                return E.Not(self.expr(a), E.with_lanes("bool", self.n))
            case E.Cast(dtype=dt, value=v):
                v = self.expr(v)
                return E.Cast(E.with_lanes(dt, _lanes(v)), v)
            case E.Select(condition=c, true_value=t, false_value=f):
                c = self.expr(c)
                if _lanes(c) > 1 and e.lazy and collect(E.Select(E.const(True), t, f),
                                                        lambda x: isinstance(x, Load)):
                    raise _Refuse(f"the guarded read in {e} would need a per-lane condition")
                t, f = self.expr(t), self.expr(f)
                if _lanes(c) == 1 and _lanes(t) == _lanes(f) == 1:
                    return E.Select(c, t, f, lazy=e.lazy)
                if _lanes(c) == 1:  # one condition for all lanes: codegen keeps it lazy
                    return E.Select(c, _broadcast(t, self.n), _broadcast(f, self.n),
                                    E.with_lanes(e.dtype, self.n), e.lazy)
                return E.Select(_broadcast(c, self.n), _broadcast(t, self.n),
                                _broadcast(f, self.n), E.with_lanes(e.dtype, self.n), e.lazy)
            case E.Call(name=name, args=args, dtype=dt):
                args = tuple(_broadcast(self.expr(a), self.n) for a in args)
                return E.Call(name, args, E.with_lanes(dt, self.n))
            case E.Let(var=v, value=val, body=body):
                return self.expr(substitute(body, {v: val}))
            case Load(buffer=buf, index=idx):
                idx = self.expr(idx)
                self._check_read(buf, idx)
                return Load(buf, idx, E.with_lanes(buf.dtype, _lanes(idx)))
        raise _Refuse(f"no vector form for {type(e).__name__} {e}")

    def _check_read(self, buf, idx):
        key = self.written.get(buf)
        if key is not None and key != skey(idx):
            raise _Refuse(f"{buf.name} is written and read at different places in the loop")

    def stmt(self, s):
        match s:
            case SeqStmt(seq=items):
                return SeqStmt(tuple(self.stmt(x) for x in items))
            case Store(buffer=buf, index=idx, value=val):
                idx, val = self.expr(idx), self.expr(val)
                if _lanes(idx) == 1:
                    if _lanes(val) > 1:
                        raise _Refuse(f"the store to {buf.name}[{idx}] does not move with "
                                      f"{self.var.name}: a reduction along the vectorized axis")
                    return Store(buf, idx, val)
                stride = simplify(idx.stride) if isinstance(idx, Ramp) else None
                if not isinstance(stride, E.IntImm) or stride.value == 0:
                    raise _Refuse(f"the store index of {buf.name} ({idx}) may repeat across lanes")
                key = self.written.setdefault(buf, skey(idx))
                if key != skey(idx):
                    raise _Refuse(f"{buf.name} is stored at two different places in the loop")
                return Store(buf, idx, _broadcast(val, self.n))
            case For(loop_var=v, min=lo, extent=ext, body=body):
                if self.var in collect(E.Add(lo, ext), lambda x: x is self.var):
                    raise _Refuse(f"the bounds of the inner loop {v.name} depend on "
                                  f"{self.var.name}")
                return For(v, lo, ext, SERIAL if s.kind == VECTORIZED else s.kind,
                           self.stmt(body), s.pragmas)
            case IfThenElse(condition=c, then_case=t, else_case=f):
                c = self.expr(c)
                if _lanes(c) > 1:
                    raise _Refuse(f"the condition {c} differs between lanes")
                return IfThenElse(c, self.stmt(t), None if f is None else self.stmt(f))
            case LetStmt(var=v, value=val, body=body):
                return self.stmt(substitute(body, {v: val}))
            case Allocate(buffer=buf):
                raise _Refuse(f"it allocates {buf.name} inside the loop")
            case Evaluate():
                return s
        raise _Refuse(f"no vector form for {type(s).__name__}")


def _vectorize_loop(loop: For):
    ext = simplify(loop.extent)
    if not isinstance(ext, E.IntImm):
        raise _Refuse(f"its extent {ext} is not a constant")
    if ext.value <= 0:
        return Evaluate(E.const(0))
    if ext.value == 1:
        return substitute(loop.body, {loop.loop_var: loop.min})
    if exists(loop.body, lambda x: isinstance(x, E.Expr) and E.lanes(x.dtype) > 1):
        raise _Refuse("its body is already vectorized (nested vectorized loops)")
    vec = _Vectorizer(loop.loop_var, loop.min, ext.value)
    # Know every buffer the loop writes before looking at any read, so a read that
    # comes before the write in program order is checked too.
    for st in collect(loop.body, lambda x: isinstance(x, Store)):
        if loop.loop_var in collect(st.index, lambda x: x is loop.loop_var):
            vec.written.setdefault(st.buffer, skey(vec.expr(st.index)))
    return vec.stmt(loop.body)


def _full_extent(extent) -> int | None:
    """The constant most iterations of a loop whose extent is not a constant but is
    bounded by one (at least 2), else None."""
    ext = simplify(extent)
    if isinstance(ext, E.IntImm):
        return None
    hi = const_bound(ext)[1]
    return hi if isinstance(hi, int) and hi >= 2 else None


def vectorize_loop(stmt, report=None):
    """Vectorize every `vectorized` loop of `stmt` (innermost first).

    A loop that cannot be vectorized becomes a serial loop; `report(loop, reason)` is
    called for it (default: a VectorizeWarning naming the loop variable and the reason).
    The tail that LoopPartition split off a vectorized loop (same loop variable, an
    extent that is not a constant) stays scalar without a report: the main piece was
    vectorized, which is what the schedule asked for.
    """
    vectorized, refused = set(), []

    def post(s):
        if not (isinstance(s, For) and s.kind == VECTORIZED):
            return None
        scalar = For(s.loop_var, s.min, s.extent, SERIAL, s.body, s.pragmas)
        full = _full_extent(s.extent)
        try:
            if full is None:
                out = _vectorize_loop(s)
            else:
                # At most `full` iterations, often a tile whose last one is short
                # (min(n - i*16, 16)): vectorized when it runs in full, scalar otherwise.
                out = IfThenElse(simplify(E.LE(E.const(full), s.extent)), _vectorize_loop(
                    For(s.loop_var, s.min, E.const(full), VECTORIZED, s.body, s.pragmas)),
                    scalar)
            vectorized.add(s.loop_var)
            return out
        except _Refuse as why:
            refused.append((s, str(why)))
            return scalar

    out = transform(stmt, post)
    for loop, reason in refused:
        if loop.loop_var in vectorized and not isinstance(simplify(loop.extent), E.IntImm):
            continue
        if report is not None:
            report(loop, reason)
        else:
            warnings.warn(f"loop {loop.loop_var.name} is not vectorized: {reason}; "
                          "it runs as a scalar loop", VectorizeWarning, stacklevel=2)
    return out


__all__ = ["vectorize_loop", "VectorizeWarning"]
