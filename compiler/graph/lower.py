"""From graph ops to te computes: the compute of every graph op (compiler.ops where it
has the operator, a te.compute here for the shape ops), and a fused Primitive function
lowered to one kernel.

The build (build.py) calls `lower_function` once per fused function; its parameters
become placeholders, its body one te compute per op. When the function has one anchor
op (conv2d, dense: a pattern above BROADCAST) reading the parameters, and after it
only elementwise and broadcast ops, the strategy registered for the anchor
(strategy.py: a template, with the config of the current dispatch context) computes the
anchor and schedules the kernel, its tail inlined. Otherwise (no strategy registered,
or attrs no template covers: a dilated window, unequal strides or paddings, weights not
packed at build time) compiler.ops schedules it: schedule_conv2d_nchwc for a packed
(NCHW[x]c, after AlterOpLayout) conv2d with its tail, schedule_conv2d_nchw for an NCHW
conv2d with an elementwise tail, the default schedule for the rest.
"""
from __future__ import annotations

import math

from .. import ops, te
from ..ops.conv2d_nchwc import conv2d_nchwc, depthwise_conv2d_nchwc, schedule_conv2d_nchwc
from ..ops.conv2d_schedule import schedule_conv2d_nchw
from ..errors import BuildError
from ..ops.pattern import OpPattern
from .expr import Call, Constant, Expr, Function, TupleGetItem, Var
from .functor import post_order
from .strategy import NO_TEMPLATE, select_implementation


def _packed_conv2d(data, weight, at, ty, common):
    """NCHW[x]c data: compiler.ops' packed convolutions. Weights the build did not pack
    (an OIHW weight that is a parameter) are packed inside the kernel."""
    depthwise = at["groups"] != 1
    if len(ty_shape(weight)) == 4:
        o, i, kh, kw = ty_shape(weight)
        bi = 1 if depthwise else ty_shape(data)[4]
        bo = ty.shape[4]
        w = weight
        weight = te.compute((o // bo, i // bi, kh, kw, bi, bo),
                            lambda a, b, y, x, ci, co: w[a * bo + co, b * bi + ci, y, x],
                            name="packed_weight")
    if depthwise:
        return depthwise_conv2d_nchwc(data, weight, **common)
    return conv2d_nchwc(data, weight, **common)


def _conv2d(ins, at, ty):
    data, weight = ins
    groups = at["groups"]
    common = dict(stride=at["strides"], padding=at["padding"], dilation=at["dilation"])
    if at["data_layout"] != "NCHW":
        return _packed_conv2d(data, weight, at, ty, common)
    if groups == 1:
        return ops.conv2d_nchw(data, weight, **common)
    channels = ty_shape(data)[1]
    if groups == channels and ty_shape(weight)[1] == 1:
        # OIHW (C * M, 1, KH, KW) is depthwise's (C, M, KH, KW) read in another order
        o = ty.shape[1]
        mult = o // groups
        kernel = te.compute((groups, mult, *ty_shape(weight)[2:]),
                            lambda c, m, y, x: weight[c * mult + m, 0, y, x],
                            name="depthwise_kernel")
        return ops.depthwise_conv2d_nchw(data, kernel, **common)
    return ops.group_conv2d_nchw(data, weight, groups=groups, **common)


def ty_shape(tensor) -> tuple:
    return ops.get_const_tuple(tensor.shape)


def _reshape(ins, at, ty):
    x, = ins
    src = ty_shape(x)
    strides = [math.prod(ty.shape[i + 1:]) for i in range(len(ty.shape))]
    src_strides = [math.prod(src[i + 1:]) for i in range(len(src))]

    def index(*i):
        flat = sum(a * s for a, s in zip(i, strides))
        return x[tuple(te.floormod(te.floordiv(flat, s), d) if k else te.floordiv(flat, s)
                       for k, (s, d) in enumerate(zip(src_strides, src)))]
    return te.compute(ty.shape, index, name="reshape")


def _transpose(ins, at, ty):
    x, = ins
    axes = at["axes"] or tuple(reversed(range(len(ty.shape))))
    inverse = [axes.index(k) for k in range(len(axes))]
    return te.compute(ty.shape, lambda *i: x[tuple(i[j] for j in inverse)], name="transpose")


def _concatenate(ins, at, ty):
    fields = list(ins)
    axis = at["axis"] % len(ty.shape)
    starts = [0]
    for f in fields:
        starts.append(starts[-1] + ty_shape(f)[axis])

    def value(*i):
        out = None
        for f, start, end in reversed(list(zip(fields, starts, starts[1:]))):
            j = tuple(v - start if k == axis else v for k, v in enumerate(i))
            out = f[j] if out is None else te.if_then_else(i[axis] < end, f[j], out)
        return out
    return te.compute(ty.shape, value, name="concatenate")


def _layout_transform(ins, at, ty):
    x, = ins
    if at["src_layout"] == "OIHW":  # (O/y, I/x, KH, KW, x, y)
        bi, bo = ty.shape[4], ty.shape[5]
        return te.compute(ty.shape, lambda a, b, y, w, ci, co: x[a * bo + co, b * bi + ci, y, w],
                          name="layout_transform")
    if at["src_layout"] == "NCHW":
        block = ty.shape[4]
        return te.compute(ty.shape, lambda n, c, h, w, b: x[n, c * block + b, h, w],
                          name="layout_transform")
    block = ty_shape(x)[4]
    return te.compute(ty.shape, lambda n, c, h, w: x[n, c // block, h, w, c % block],
                      name="layout_transform")


def _pool(kind):
    def compute(ins, at, ty):
        if kind == "max":
            return ops.max_pool2d(ins[0], at["pool_size"], at["strides"], at["padding"])
        return ops.avg_pool2d(ins[0], at["pool_size"], at["strides"], at["padding"],
                              at["count_include_pad"])
    return compute


def _map(name, f):
    return lambda ins, at, ty: te.compute(ty.shape, lambda *i: f(ins[0][i]), name=name)


COMPUTE = {
    "add": lambda ins, at, ty: ops.add(*ins),
    "subtract": lambda ins, at, ty: ops.subtract(*ins),
    "multiply": lambda ins, at, ty: ops.multiply(*ins),
    "divide": lambda ins, at, ty: ops.divide(*ins),
    "nn.relu": lambda ins, at, ty: ops.relu(ins[0]),
    "sigmoid": lambda ins, at, ty: ops.sigmoid(ins[0]),
    "tanh": lambda ins, at, ty: ops.tanh(ins[0]),
    "exp": lambda ins, at, ty: ops.exp(ins[0]),
    "sqrt": _map("sqrt", te.sqrt),
    "negative": _map("negative", lambda v: -v),
    "clip": lambda ins, at, ty: ops.clip(ins[0], at["a_min"], at["a_max"]),
    "nn.bias_add": lambda ins, at, ty: ops.bias_add(ins[0], ins[1], at["axis"]),
    "nn.conv2d": _conv2d,
    "nn.dense": lambda ins, at, ty: ops.dense(ins[0], ins[1]),
    "nn.contrib_dense_pack": lambda ins, at, ty: ops.dense_pack(ins[0], ins[1]),
    "matmul": lambda ins, at, ty: ops.matmul(ins[0], ins[1]),
    "nn.batch_matmul": lambda ins, at, ty: ops.batch_matmul(ins[0], ins[1], transpose_b=True),
    "nn.softmax": lambda ins, at, ty: ops.softmax(ins[0], at["axis"]),
    "nn.max_pool2d": _pool("max"),
    "nn.avg_pool2d": _pool("avg"),
    "nn.global_avg_pool2d": lambda ins, at, ty: ops.mean(ins[0], axis=(2, 3), keepdims=True),
    "mean": lambda ins, at, ty: ops.mean(ins[0], at["axis"], at["keepdims"]),
    "sum": lambda ins, at, ty: ops.sum(ins[0], at["axis"], at["keepdims"]),
    "nn.pad": lambda ins, at, ty: ops.pad(ins[0], [a for a, _ in at["pad_width"]],
                                          [b for _, b in at["pad_width"]], at["pad_value"]),
    "reshape": _reshape,
    "nn.batch_flatten": _reshape,
    "transpose": _transpose,
    "concatenate": _concatenate,
    "layout_transform": _layout_transform,
}


def lower_function(func: Function, name: str):
    """Lower a typed Primitive function to one kernel: `(schedule, tensors, info)`, where
    `tensors` are [placeholders of the parameters..., output] and `info` says how the
    anchor was scheduled (strategy.Implementation.info), or strategy.NO_TEMPLATE (every
    value None) when compiler.ops' schedules did it (see the module docstring)."""
    placeholders = [te.placeholder(p.ty.shape, dtype=p.ty.dtype, name=f"{name}_{p.name}")
                    for p in func.params]
    env = {id(p): t for p, t in zip(func.params, placeholders)}
    anchor = _anchor(func)
    impl = implementation_of(func, anchor)

    def visit(expr: Expr):
        if id(expr) in env:
            return env[id(expr)]
        if isinstance(expr, Constant):
            value = expr.data
            if value.size != 1:
                raise BuildError(f"{name}: a constant of shape {value.shape} inside a fused "
                                 f"function (only scalars are inlined)")
            out = te.compute((1,), lambda i: te.const(value.item(), str(value.dtype)),
                             name="scalar")
        elif isinstance(expr, Call):
            op = expr.op
            if op.name not in COMPUTE:
                raise BuildError(f"{name}: op {op.name} has no compute")
            args = [visit(a) for a in expr.args]
            if op.name == "concatenate":
                args = list(args[0])
            if expr is anchor and impl is not None:
                out = impl.compute(args)
            else:
                out = COMPUTE[op.name](args, expr.attrs, expr.ty)
        elif isinstance(expr, TupleGetItem):
            out = visit(expr.tuple_value)[expr.index]
        elif hasattr(expr, "fields"):
            out = tuple(visit(f) for f in expr.fields)
        elif isinstance(expr, Var):
            raise BuildError(f"{name}: free variable %{expr.name}")
        else:
            raise BuildError(f"{name}: cannot lower a {type(expr).__name__}")
        env[id(expr)] = out
        return out

    out = visit(func.body)
    if isinstance(out, tuple):
        raise BuildError(f"{name}: a fused function with several outputs has no kernel yet")
    tensors = [*placeholders, out]
    if impl is not None:
        return impl.schedule(out), tensors, dict(impl.info)
    if anchor is not None and anchor.op.name == "nn.conv2d" and \
            anchor.attrs["data_layout"] != "NCHW":
        return schedule_conv2d_nchwc(out, env[id(anchor)]), tensors, dict(NO_TEMPLATE)
    if anchor is not None and anchor.op.name == "nn.conv2d" and anchor.attrs["groups"] == 1 \
            and anchor.attrs["data_layout"] == "NCHW":
        return schedule_conv2d_nchw(out, env[id(anchor)]), tensors, dict(NO_TEMPLATE)
    return ops.default_schedule(out), tensors, dict(NO_TEMPLATE)


def implementation_of(func: Function, anchor: Call | None = None):
    """The strategy's Implementation that schedules the kernel of the fused function
    `func` (its anchor's, strategy.select_implementation), or None when compiler.ops'
    schedules do; nothing is lowered. `anchor`: _anchor(func) when known already."""
    anchor = anchor or _anchor(func)
    return select_implementation(anchor) if _template_kernel(func, anchor) else None


def _anchor(func: Function) -> Call | None:
    """The fused function's one op whose pattern is above BROADCAST (its anchor: a
    conv2d, a dense, a reduction) when every other op is elementwise or broadcast, else
    None."""
    calls = [e for e in post_order(func.body) if isinstance(e, Call)]
    heavy = [c for c in calls if c.op.pattern > OpPattern.BROADCAST]
    if len(heavy) != 1 or heavy[0].op.pattern < OpPattern.COMM_REDUCE:
        return None
    return heavy[0]


def _template_kernel(func: Function, anchor: Call | None) -> bool:
    """Whether a strategy may schedule the kernel of `func` around `anchor`: the anchor
    reads the function's parameters (so its inputs are placeholders, as a template's
    are) and the tail after it keeps its shape (the template tiles the output as the
    anchor's)."""
    if anchor is None:
        return False
    params = {id(p) for p in func.params}
    return all(id(a) in params for a in anchor.args) and \
        tuple(func.body.ty.shape) == tuple(anchor.ty.shape)
