"""Converters of ONNX's network ops: the normalizations, Gemm, MatMul, Einsum, Softmax,
LogSoftmax.

MatMul is built as what the build schedules best: a constant 2-D weight as nn.dense on
rows (the activation's leading axes flattened, so a transformer's (batch, sequence,
hidden) times a weight takes the dense template and its packed weights), two operands
with the same batch axes as a 3-D matmul (attention's (batch, heads, S, D) products,
their batch axes merged, take the batch_matmul template), anything else as the generic
matmul.
"""
from __future__ import annotations

import numpy as np

from ... import graph
from ...graph.expr import Constant
from ...graph.op import nn, reduce
from ...graph.op.transform import broadcast_to
from .common import axis


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


def matmul(ctx, a, b):
    """a @ b with numpy's rules, in the form the build schedules best (the module
    docstring)."""
    sa, sb = ctx.shape(a), ctx.shape(b)
    if len(sa) < 2 or len(sb) < 2:  # a vector operand: numpy's promotion to a matrix
        a2 = graph.reshape(a, (1, sa[0])) if len(sa) == 1 else a
        b2 = graph.reshape(b, (sb[0], 1)) if len(sb) == 1 else b
        out = matmul(ctx, a2, b2)
        shape = list(ctx.shape(out))
        if len(sa) == 1:
            del shape[-2]
        if len(sb) == 1:
            del shape[-1]
        return graph.reshape(out, shape)
    if len(sb) == 2 and (ctx.known(b) or len(sa) > 2):
        rows = int(np.prod(sa[:-1]))
        flat = a if len(sa) == 2 else graph.reshape(a, (rows, sa[-1]))
        out = graph.nn.dense(flat, graph.transpose(b, (1, 0)))
        return out if len(sa) == 2 else graph.reshape(out, (*sa[:-1], sb[-1]))
    if len(sa) > 2 and sa[:-2] == sb[:-2]:
        batch = int(np.prod(sa[:-2]))
        a3 = graph.reshape(a, (batch, *sa[-2:])) if len(sa) > 3 else a
        b3 = graph.reshape(b, (batch, *sb[-2:])) if len(sb) > 3 else b
        out = graph.matmul(a3, b3)  # 3-D, one batch extent: the batch_matmul template
        return out if len(sa) == 3 else graph.reshape(out, (*sa[:-1], sb[-1]))
    return graph.matmul(a, b)


def _einsum(ctx, args, attrs, node):
    """The two-operand contractions a transformer writes ("bhid,bhjd->bhij",
    "bij,jk->bik", ...) as one batched matmul between transposes and reshapes."""
    equation = attrs["equation"]
    equation = equation.decode() if isinstance(equation, bytes) else equation
    if "->" not in equation or "." in equation or len(args) != 2:
        raise ValueError(f"equation={equation!r} is not supported: two operands and an "
                         f"explicit output, no ellipsis")
    ins, out = equation.replace(" ", "").split("->")
    la, lb = ins.split(",")
    a, b = args
    dims = dict(zip(la, ctx.shape(a))) | dict(zip(lb, ctx.shape(b)))
    if len(set(la)) != len(la) or len(set(lb)) != len(lb) or set(out) - set(la + lb):
        raise ValueError(f"equation={equation!r} is not supported (repeated or unknown "
                         f"letters)")
    batch = [c for c in la if c in lb and c in out]
    contract = [c for c in la if c in lb and c not in out]
    free_a = [c for c in la if c not in lb]
    free_b = [c for c in lb if c not in la]
    if any(c not in out for c in free_a + free_b):
        raise ValueError(f"equation={equation!r} sums an axis of one operand; not supported")

    def arrange(x, letters, order, shape):
        x = graph.transpose(x, [letters.index(c) for c in order])
        return graph.reshape(x, shape)

    def size(cs):
        return int(np.prod([dims[c] for c in cs]))
    a3 = arrange(a, la, batch + free_a + contract, (size(batch), size(free_a), size(contract)))
    b3 = arrange(b, lb, batch + contract + free_b, (size(batch), size(contract), size(free_b)))
    prod = graph.matmul(a3, b3)
    order = batch + free_a + free_b
    prod = graph.reshape(prod, [dims[c] for c in order])
    return graph.transpose(prod, [order.index(c) for c in out])


def _softmax(kind):
    def convert(ctx, args, attrs, node):
        x = args[0]
        shape = ctx.shape(x)
        at = axis(attrs.get("axis", -1 if ctx.opset >= 13 else 1), len(shape))
        f = nn.softmax if kind == "softmax" else nn.log_softmax
        if ctx.opset >= 13 or at == len(shape) - 1:
            return f(x, axis=at)
        # before opset 13 the axes from `axis` on are flattened into one
        flat = graph.reshape(x, (int(np.prod(shape[:at])), int(np.prod(shape[at:]))))
        return graph.reshape(f(flat, axis=-1), shape)
    return convert


def _full(ctx, x, shape, value: float):
    """A constant of `shape` filled with `value`, in the dtype of `x`."""
    return Constant(np.full(shape, value, ctx.dtype(x)))


def _per_channel(shape, v):
    """`v` (C,) as (C, 1, ..., 1), to broadcast along axis 1 of data of `shape`."""
    return graph.reshape(v, (shape[1],) + (1,) * (len(shape) - 2))


def _layer_norm(ctx, args, attrs, node):
    if len([o for o in node.output if o]) > 1:
        raise ValueError("the Mean and InvStdDev outputs are not supported (Y only)")
    x, scale, bias = (args + [None, None])[:3]
    shape = ctx.shape(x)
    at = axis(attrs.get("axis", -1), len(shape))
    trailing = shape[at:]
    if ctx.shape(scale) != trailing:
        scale = broadcast_to(scale, trailing)
    bias = _full(ctx, x, trailing, 0.0) if bias is None else \
        bias if ctx.shape(bias) == trailing else broadcast_to(bias, trailing)
    return nn.layer_norm(x, scale, bias, at, attrs.get("epsilon", 1e-5))


def _instance_norm(ctx, args, attrs, node):
    x, scale, bias = args
    shape = ctx.shape(x)
    trailing = shape[2:]
    normed = nn.layer_norm(x, _full(ctx, x, trailing, 1.0), _full(ctx, x, trailing, 0.0), 2,
                           attrs.get("epsilon", 1e-5))
    return graph.add(graph.multiply(normed, _per_channel(shape, scale)),
                     _per_channel(shape, bias))


def _group_norm(ctx, args, attrs, node):
    x, scale, bias = args
    shape = ctx.shape(x)
    groups = attrs["num_groups"]
    n, c = shape[:2]
    if c % groups:
        raise ValueError(f"num_groups={groups} does not divide the {c} channels")
    rest = int(np.prod(shape[2:])) * (c // groups)
    grouped = graph.reshape(x, (n, groups, rest))
    normed = nn.layer_norm(grouped, _full(ctx, x, (rest,), 1.0), _full(ctx, x, (rest,), 0.0), 2,
                           attrs.get("epsilon", 1e-5))
    normed = graph.reshape(normed, shape)
    if ctx.shape(scale) == (groups,) and groups != c:  # opset 18: one scale per group
        def per_group(v):
            return graph.reshape(broadcast_to(graph.reshape(v, (groups, 1)),
                                              (groups, c // groups)), (c,))
        scale, bias = per_group(scale), per_group(bias)
    return graph.add(graph.multiply(normed, _per_channel(shape, scale)),
                     _per_channel(shape, bias))


def _batch_norm(ctx, args, attrs, node):
    """BatchNormalization: inference with the given statistics; training_mode=1 (opset
    14 on) normalizes by the batch's own mean and (population) variance and also
    returns the running statistics updated with momentum."""
    x, scale, bias, mean, var = args[:5]
    epsilon = attrs.get("epsilon", 1e-5)
    momentum = attrs.get("momentum", 0.9)  # only training updates statistics with it
    if not attrs.get("spatial", 1):
        raise ValueError("spatial=0 (statistics per activation) is not supported")
    if not attrs.get("training_mode", 0):
        return graph.nn.batch_norm(x, scale, bias, mean, var, epsilon=epsilon)
    shape = ctx.shape(x)
    axes = tuple(a for a in range(len(shape)) if a != 1)
    batch_mean = reduce.mean(x, axes)
    centered = graph.subtract(x, _per_channel(shape, batch_mean))
    batch_var = reduce.mean(graph.multiply(centered, centered), axes)
    y = graph.nn.batch_norm(x, scale, bias, batch_mean, batch_var, epsilon=epsilon)
    keep, take = _full(ctx, mean, (), momentum), _full(ctx, mean, (), 1 - momentum)
    return (y, graph.add(graph.multiply(mean, keep), graph.multiply(batch_mean, take)),
            graph.add(graph.multiply(var, keep), graph.multiply(batch_var, take)))


def _dropout(ctx, args, attrs, node):
    """Dropout in inference: the identity, and a mask of ones (the input's type before
    opset 10, bool after). Training (the training_mode input of opset 12 on, true with
    a ratio above 0) draws a random mask, which is refused."""
    x = args[0]
    attrs.get("seed")  # only training draws random numbers
    if ctx.opset < 12:
        attrs.get("ratio")  # likewise
    elif len(args) > 2 and args[2] is not None:
        if not ctx.known(args[2]):
            raise ValueError(f"its training_mode {node.input[2]!r} is fed at run time; only "
                             f"a constant training_mode is supported")
        if bool(ctx.value(args[2], "training_mode").reshape(-1)[0]):
            ratio = ctx.optional(args, 1, "ratio", np.array(0.5))
            if float(np.reshape(ratio, -1)[0]) != 0.0:
                raise ValueError("training_mode=True (a random mask) is not supported")
    mask = _full(ctx, x, ctx.shape(x), 1) if ctx.opset < 10 else \
        Constant(np.ones(ctx.shape(x), "bool"))
    return x, mask


CONVERTERS = {
    "BatchNormalization": _batch_norm,
    "LayerNormalization": _layer_norm,
    "InstanceNormalization": _instance_norm,
    "GroupNormalization": _group_norm,
    "Gemm": _gemm,
    "MatMul": lambda c, a, at, n: matmul(c, a[0], a[1]),
    "Einsum": _einsum,
    "Softmax": _softmax("softmax"),
    "LogSoftmax": _softmax("log_softmax"),
    "Dropout": _dropout,
}
