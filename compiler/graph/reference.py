"""The numpy meaning of every graph op, and an evaluator of graph functions on it.

What an op computes is said once, here, in numpy: FoldConstant evaluates constant
subgraphs with it, and tests hold built models against it (and against ONNX Runtime).
Each entry takes the argument arrays and the call's attrs and returns an array (a tuple
for batch_norm); results are cast to the arguments' dtype.
"""
from __future__ import annotations

import numpy as np

from .expr import Call, Constant, Expr, Function, GlobalVar, Tuple, TupleGetItem, Var
from .functor import post_order
from .op import Op


def _conv2d(args, attrs):
    data, weight = args
    if weight.ndim == 6:  # OIHW[x]i[x]o: unpack to OIHW
        ob, ib, kh, kw, bi, bo = weight.shape
        weight = weight.transpose(0, 5, 1, 4, 2, 3).reshape(ob * bo, ib * bi, kh, kw)
    if attrs["data_layout"] != "NCHW":  # NCHW[x]c: unpack, convolve, pack
        nchw = _layout_transform([data], {"src_layout": attrs["data_layout"],
                                          "dst_layout": "NCHW"})
        out = _conv2d([nchw, weight], {**attrs, "data_layout": "NCHW"})
        return _layout_transform([out], {"src_layout": "NCHW", "dst_layout":
                                         attrs.get("out_layout") or attrs["data_layout"]})
    (sh, sw), (dh, dw), groups = attrs["strides"], attrs["dilation"], attrs["groups"]
    top, left, bottom, right = attrs["padding"]
    data = np.pad(data, ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, c, h, w = data.shape
    o, cg, kh, kw = weight.shape
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    og = o // groups
    for ky in range(kh):
        for kx in range(kw):
            window = data[:, :, ky * dh:ky * dh + sh * (oh - 1) + 1:sh,
                          kx * dw:kx * dw + sw * (ow - 1) + 1:sw]
            for g in range(groups):
                out[:, g * og:(g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", window[:, g * cg:(g + 1) * cg],
                    weight[g * og:(g + 1) * og, :, ky, kx], optimize=True)
    return out


def _pool2d(args, attrs, kind):
    data, = args
    layout = attrs.get("layout", "NCHW")
    if layout != "NCHW":  # NCHW[x]c: unpack, pool, pack
        nchw = _layout_transform([data], {"src_layout": layout, "dst_layout": "NCHW"})
        out = _pool2d([nchw], {**attrs, "layout": "NCHW"}, kind)
        return _layout_transform([out], {"src_layout": "NCHW", "dst_layout": layout})
    (kh, kw), (sh, sw) = attrs["pool_size"], attrs["strides"]
    top, left, bottom, right = attrs["padding"]
    fill = -np.inf if kind == "max" else 0.0
    padded = np.pad(data.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)),
                    constant_values=fill)
    ones = np.pad(np.ones(data.shape[2:]), ((top, bottom), (left, right)))
    oh, ow = (padded.shape[2] - kh) // sh + 1, (padded.shape[3] - kw) // sw + 1
    windows = [padded[:, :, y:y + sh * (oh - 1) + 1:sh, x:x + sw * (ow - 1) + 1:sw]
               for y in range(kh) for x in range(kw)]
    if kind == "max":
        return np.max(windows, axis=0)
    total = np.sum(windows, axis=0)
    if attrs["count_include_pad"]:
        return total / (kh * kw)
    counts = sum(ones[y:y + sh * (oh - 1) + 1:sh, x:x + sw * (ow - 1) + 1:sw]
                 for y in range(kh) for x in range(kw))
    return total / counts


def _batch_norm(args, attrs):
    data, gamma, beta, mean, var = args
    shape = [1] * data.ndim
    shape[attrs["axis"] % data.ndim] = -1
    scale = gamma / np.sqrt(var + attrs["epsilon"])
    return (data * scale.reshape(shape) + (beta - mean * scale).reshape(shape), mean, var)


def _softmax(args, attrs):
    x, = args
    e = np.exp(x - x.max(axis=attrs["axis"], keepdims=True))
    return e / e.sum(axis=attrs["axis"], keepdims=True)


def _layout_transform(args, attrs):
    x, = args
    src, dst = attrs["src_layout"], attrs["dst_layout"]
    if src == "OIHW":  # -> OIHW[x]i[y]o: (O/y, I/x, KH, KW, x, y)
        bi, bo = (int(b) for b in dst[4:-1].split("i"))
        o, i, kh, kw = x.shape
        return x.reshape(o // bo, bo, i // bi, bi, kh, kw).transpose(0, 2, 4, 5, 3, 1)
    if src == "NCHW":
        block = int(dst[4:-1])
        n, c, h, w = x.shape
        return x.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2)
    n, co, h, w, block = x.shape
    return x.transpose(0, 1, 4, 2, 3).reshape(n, co * block, h, w)


def pack_dense_weight(weight: np.ndarray, block: int) -> np.ndarray:
    """A dense weight (N, K) in panels of `block` rows: (N / block, K, block), W[p * block
    + c, k] at [p, k, c] (nn.contrib_dense_pack's layout)."""
    n, k = weight.shape
    return np.ascontiguousarray(weight.reshape(n // block, block, k).transpose(0, 2, 1))


def unpack_dense_weight(packed: np.ndarray) -> np.ndarray:
    """The (N, K) weight of pack_dense_weight's result."""
    panels, k, block = packed.shape
    return packed.transpose(0, 2, 1).reshape(panels * block, k)


def _bias_add(args, attrs):
    data, bias = args
    shape = [1] * data.ndim
    shape[attrs["axis"] % data.ndim] = -1
    return data + bias.reshape(shape)


def _reshape(args, attrs):
    x, = args
    shape = [x.shape[i] if d == 0 else d for i, d in enumerate(attrs["newshape"])]
    return x.reshape(shape)


REFERENCE = {
    "add": lambda a, at: a[0] + a[1],
    "subtract": lambda a, at: a[0] - a[1],
    "multiply": lambda a, at: a[0] * a[1],
    "divide": lambda a, at: a[0] / a[1],
    "maximum": lambda a, at: np.maximum(a[0], a[1]),
    "minimum": lambda a, at: np.minimum(a[0], a[1]),
    "sigmoid": lambda a, at: 1 / (1 + np.exp(-a[0])),
    "tanh": lambda a, at: np.tanh(a[0]),
    "exp": lambda a, at: np.exp(a[0]),
    "sqrt": lambda a, at: np.sqrt(a[0]),
    "negative": lambda a, at: -a[0],
    "clip": lambda a, at: np.clip(a[0], at["a_min"], at["a_max"]),
    "nn.relu": lambda a, at: np.maximum(a[0], 0),
    "reshape": _reshape,
    "transpose": lambda a, at: np.transpose(a[0], at["axes"]),
    "concatenate": lambda a, at: np.concatenate(a[0], axis=at["axis"]),
    "matmul": lambda a, at: np.matmul(a[0], a[1]),
    "layout_transform": _layout_transform,
    "mean": lambda a, at: np.mean(a[0], axis=at["axis"], keepdims=at["keepdims"]),
    "sum": lambda a, at: np.sum(a[0], axis=at["axis"], keepdims=at["keepdims"]),
    "nn.conv2d": _conv2d,
    "nn.dense": lambda a, at: a[0] @ a[1].T,
    "nn.contrib_dense_pack": lambda a, at: a[0] @ unpack_dense_weight(a[1]).T,
    "nn.batch_matmul": lambda a, at: a[0] @ a[1].transpose(0, 2, 1),
    "nn.bias_add": _bias_add,
    "nn.softmax": _softmax,
    "nn.batch_norm": _batch_norm,
    "nn.max_pool2d": lambda a, at: _pool2d(a, at, "max"),
    "nn.avg_pool2d": lambda a, at: _pool2d(a, at, "avg"),
    "nn.global_avg_pool2d": lambda a, at: a[0].mean(axis=(2, 3), keepdims=True),
    "nn.batch_flatten": lambda a, at: a[0].reshape(a[0].shape[0], -1),
    "nn.pad": lambda a, at: np.pad(a[0], at["pad_width"], constant_values=at["pad_value"]),
    "annotation.compiler_begin": lambda a, at: a[0],  # BYOC's region marks: the value
    "annotation.compiler_end": lambda a, at: a[0],
}


def apply_op(op: Op, args: list, attrs) -> object:
    """`op` on numpy `args`, in the dtype of the first argument."""
    if op.name not in REFERENCE:
        raise NotImplementedError(f"{op.name}: no numpy reference")
    out = REFERENCE[op.name](args, attrs)
    first = args[0][0] if isinstance(args[0], (list, tuple)) else args[0]
    dtype = np.asarray(first).dtype
    if isinstance(out, tuple):
        return tuple(np.asarray(o, dtype=dtype) for o in out)
    return np.asarray(out, dtype=dtype)


def evaluate(func: Function, *inputs, module=None) -> object:
    """`func` applied to numpy `inputs` (one per parameter), op by op in numpy; a call
    of a module's function by name (a GlobalVar) evaluates that function of `module`."""
    if len(inputs) != len(func.params):
        raise TypeError(f"evaluate: {len(func.params)} parameter(s), {len(inputs)} input(s)")
    values = {id(p): v if isinstance(v, tuple) else np.asarray(v)
              for p, v in zip(func.params, inputs)}
    for expr in post_order(func.body):
        if id(expr) not in values:
            values[id(expr)] = _value(expr, values, module)
    return values[id(func.body)]


def _value(expr: Expr, values: dict, module):
    """The value of `expr`, its operands' values in `values`."""
    if isinstance(expr, Constant):
        return expr.data
    if isinstance(expr, Var):
        raise KeyError(f"evaluate: free variable %{expr.name} has no value")
    if isinstance(expr, Tuple):
        return tuple(values[id(f)] for f in expr.fields)
    if isinstance(expr, TupleGetItem):
        return values[id(expr.tuple_value)][expr.index]
    if isinstance(expr, Call):
        args = [values[id(a)] for a in expr.args]
        if isinstance(expr.op, Function):
            return evaluate(expr.op, *args, module=module)
        if isinstance(expr.op, GlobalVar):
            if module is None or expr.op.name not in module:
                raise KeyError(f"evaluate: a call of @{expr.op.name} and no module "
                               "holding it")
            return evaluate(module[expr.op.name], *args, module=module)
        return apply_op(expr.op, args, expr.attrs)
    raise TypeError(f"evaluate: cannot evaluate a {type(expr).__name__}")
