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
from ...graph.ir.expr import Constant
from ...graph.ir.op import nn, reduce, tensor
from ...graph.ir.op.transform import broadcast_to
from .common import DTYPES, axis, text


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
    """Einsum of any number of operands: an ellipsis as the axes it covers (aligned at
    the right, as numpy broadcasts them), an implicit output as the ellipsis' axes then
    the letters used once, in alphabetical order; a letter repeated in one operand takes
    its diagonal, a letter of one operand alone that the output drops is summed away,
    then the operands are contracted two at a time, each pair as one batched matmul
    between transposes and reshapes (a transformer's "bhid,bhjd->bhij" is one)."""
    equation = text(attrs["equation"]).replace(" ", "")
    ins, arrow, out = equation.partition("->")
    terms = ins.split(",")
    if len(terms) != len(args) or any(t.count("...") > 1 for t in terms + [out]):
        raise ValueError(f"equation={equation!r} does not fit its {len(args)} operands")
    spare = [chr(0x3b1 + k) for k in range(16)]  # letters for the ellipsis' axes
    covered = max([len(ctx.shape(a)) - len(t) + 3 for a, t in zip(args, terms)
                   if "..." in t] or [0])
    ellipsis = spare[:covered]
    terms = [t.replace("...", "".join(ellipsis[covered - (len(ctx.shape(a)) - len(t) + 3):]))
             for a, t in zip(args, terms)]
    if not arrow:
        once = sorted(c for c in set("".join(terms)) if "".join(terms).count(c) == 1
                      and c not in ellipsis)
        out = "".join(ellipsis) + "".join(once)
    out = out.replace("...", "".join(ellipsis))
    dims: dict[str, int] = {}
    for a, t in zip(args, terms):
        if len(t) != len(ctx.shape(a)):
            raise ValueError(f"equation={equation!r}: {t!r} does not fit an operand of shape "
                             f"{ctx.shape(a)}")
        for c, d in zip(t, ctx.shape(a)):
            dims[c] = max(dims.get(c, 1), d)
    if set(out) - set(dims) or len(set(out)) != len(out):
        raise ValueError(f"equation={equation!r}: its output names letters no operand has, "
                         f"or one twice")
    operands = []
    for k, (a, t) in enumerate(zip(args, terms)):
        a, t = _diagonals(ctx, a, t)
        others = set(out).union(*(terms[:k] + terms[k + 1:]))
        alone = [i for i, c in enumerate(t) if c not in others]
        if alone:
            a = reduce.sum(a, tuple(alone))
            t = "".join(c for c in t if c in others)
        operands.append((a, t))
    a, la = operands[0]
    for k, (b, lb) in enumerate(operands[1:], 1):
        later = set(out).union(*(t for _, t in operands[k + 1:]))
        a, la = _contract(ctx, a, la, b, lb, later, dims)
    if la != out:
        a = graph.transpose(a, [la.index(c) for c in out])
    return a


def _diagonals(ctx, x, letters: str):
    """`x` with each letter repeated in `letters` reduced to its diagonal (a mask of the
    identity, then a sum over the repeat), and its letters."""
    while len(set(letters)) != len(letters):
        c = next(c for c in letters if letters.count(c) > 1)
        p, q = letters.index(c), letters.index(c, letters.index(c) + 1)
        shape = ctx.shape(x)
        mask = np.eye(shape[p], dtype=ctx.dtype(x)).reshape(
            [shape[p] if i == p else shape[q] if i == q else 1 for i in range(len(shape))])
        x = reduce.sum(graph.multiply(x, Constant(mask)), (q,))
        letters = letters[:q] + letters[q + 1:]
    return x, letters


def _contract(ctx, a, la: str, b, lb: str, later: set, dims: dict):
    """a x b over their shared letters that `later` (the output and the operands still to
    come) does not need: one batched matmul of (batch, free a, shared) by (batch, shared,
    free b); a letter of extent 1 in one operand is broadcast to the other's."""
    batch = [c for c in la if c in lb and c in later]
    shared = [c for c in la if c in lb and c not in later]
    free_a = [c for c in la if c not in lb]
    free_b = [c for c in lb if c not in la]

    def size(cs):
        return int(np.prod([dims[c] for c in cs]))

    def arrange(x, letters, order, shape):
        full = [dims[c] for c in letters]
        if list(ctx.shape(x)) != full:
            x = broadcast_to(x, full)
        if list(order) != list(letters):
            x = graph.transpose(x, [letters.index(c) for c in order])
        return graph.reshape(x, shape)
    a3 = arrange(a, la, batch + free_a + shared, (size(batch), size(free_a), size(shared)))
    b3 = arrange(b, lb, batch + shared + free_b, (size(batch), size(shared), size(free_b)))
    letters = batch + free_a + free_b
    return graph.reshape(graph.matmul(a3, b3), [dims[c] for c in letters]), "".join(letters)


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
    """LayerNormalization as nn.layer_norm; its Mean and InvStdDev outputs, when the node
    names them, computed apart (in x's type, then cast to stash_type's)."""
    x, scale, bias = (args + [None, None])[:3]
    shape = ctx.shape(x)
    at = axis(attrs.get("axis", -1), len(shape))
    trailing = shape[at:]
    if ctx.shape(scale) != trailing:
        scale = broadcast_to(scale, trailing)
    bias = _full(ctx, x, trailing, 0.0) if bias is None else \
        bias if ctx.shape(bias) == trailing else broadcast_to(bias, trailing)
    epsilon = attrs.get("epsilon", 1e-5)
    y = nn.layer_norm(x, scale, bias, at, epsilon)
    stash = DTYPES.get(attrs.get("stash_type", 1))
    if len([o for o in node.output if o]) == 1:
        return y
    if stash not in ("float32", "float64"):
        raise ValueError(f"stash_type={attrs['stash_type']} is not supported (float32, "
                         f"float64)")
    axes = tuple(range(at, len(shape)))
    mean = reduce.mean(x, axes, keepdims=True)
    centered = graph.subtract(x, mean)
    variance = reduce.mean(graph.multiply(centered, centered), axes, keepdims=True)
    inverse = graph.divide(_full(ctx, x, (), 1.0), graph.sqrt(
        graph.add(variance, _full(ctx, x, (), epsilon))))
    return (y, *(o if ctx.dtype(x) == stash else tensor.cast(o, stash)
                 for o in (mean, inverse)))


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
    if ctx.opset < 7 and not attrs.get("is_test", 0):  # training, then the default
        raise ValueError("is_test=0 (training) is not supported")
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
    """Dropout: the identity and a mask of ones (the input's type before opset 10, bool
    after) in inference. Training (the training_mode input of opset 12 on, a constant or
    fed at run time) keeps each element where a uniform draw in [0, 1) is at least the
    ratio and scales it by 1 / (1 - ratio), as ONNX's reference does: the draws are
    numpy's legacy generator seeded with the seed attribute, taken at compile time for the
    static shape (the ratio may still come at run time). So a seeded Dropout draws the
    same mask on every call, like the reference; without a seed attribute training is
    refused (the spec's auto-generated seed would make every compile differ)."""
    x = args[0]
    seed = attrs.get("seed")
    if ctx.opset < 7 and not attrs.get("is_test", 0):  # training, then the default
        raise ValueError("is_test=0 (training) is not supported")
    if ctx.opset < 12:
        attrs.get("ratio")  # only training reads it
        training = None
    else:
        training = args[2] if len(args) > 2 else None
        if ctx.known(training) and not bool(ctx.value(training, "training_mode")
                                            .reshape(-1)[0]):
            training = None
    shape = ctx.shape(x)
    ones = _full(ctx, x, shape, 1) if ctx.opset < 10 else Constant(np.ones(shape, "bool"))
    if training is None:
        return x, ones
    ratio = args[1] if len(args) > 1 and args[1] is not None else \
        Constant(np.array(0.5, ctx.dtype(x)))
    if ctx.known(ratio) and not ctx.value(ratio, "ratio").any():
        return x, ones  # (a ratio of 0 keeps every element, whatever the draws)
    if seed is None:
        raise ValueError("training_mode may be true and the node has no seed attribute; "
                         "a random mask is drawn only from a seed")
    draws = np.random.RandomState(int(seed) % 2**32).uniform(0, 1.0, shape)
    keep = tensor.greater_equal(Constant(draws), tensor.cast(ratio, "float64"))
    one = _full(ctx, ratio, (), 1.0)
    scale = graph.divide(one, graph.subtract(one, ratio))
    if ctx.dtype(ratio) != ctx.dtype(x):
        scale = tensor.cast(scale, ctx.dtype(x))
    y = tensor.where(keep, graph.multiply(x, scale), _full(ctx, x, (), 0.0))
    if ctx.known(training):
        return y, keep
    training = graph.reshape(training, ())
    return tensor.where(training, y, x), tensor.logical_or(keep, tensor.logical_not(training))


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
