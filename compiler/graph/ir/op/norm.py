"""The graph level's normalization (Relay's `nn.layer_norm`, normalizing the trailing
axes from `axis` on, as ONNX's LayerNormalization): registered once with its type
relation, pattern, compute (one kernel: both reductions and the scaling), numpy
reference, layout rule and samples, and its constructor. Instance and group
normalization are layer norms of a reshaped value (the ONNX importer builds them so)."""
from __future__ import annotations

import numpy as np

from .... import ops
from ....ops.pattern import OpPattern
from ..expr import Call, Expr
from ..ty import TensorType
from .registry import GraphTypeError, call, needs_nchw, register_op
from .relations import axis_of, same_dtype, tensor_args


def _layer_norm_rel(types, attrs):
    data, gamma, beta = tensor_args("nn.layer_norm", types, 3)
    axis = axis_of("nn.layer_norm", attrs["axis"], data.ndim)
    trailing = tuple(data.shape[axis:])
    if tuple(gamma.shape) != trailing or tuple(beta.shape) != trailing:
        raise GraphTypeError(f"nn.layer_norm: gamma {gamma.shape} and beta {beta.shape} "
                             f"must have the normalized axes' shape {trailing}")
    same_dtype("nn.layer_norm", [data, gamma, beta])
    return data


def _layer_norm_ref(args, attrs):
    x, gamma, beta = args
    axes = tuple(range(attrs["axis"] % x.ndim, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    return (x - mu) / np.sqrt(var + attrs["epsilon"]) * gamma + beta


def _samples():
    def t(*shape):
        return TensorType(shape, "float32")
    return [([t(7, 37), t(37), t(37)], {"axis": -1, "epsilon": 1e-5}),
            ([t(2, 7, 13), t(7, 13), t(7, 13)], {"axis": 1, "epsilon": 1e-3}),
            ([t(1, 16, 7, 13), t(13), t(13)], {"axis": 3, "epsilon": 1e-5})]


register_op("nn.layer_norm", _layer_norm_rel, OpPattern.OPAQUE,
            {"axis": -1, "epsilon": 1e-5}, 3,
            compute=lambda ins, at, ty: ops.layer_norm(*ins, at["axis"], at["epsilon"]),
            reference=_layer_norm_ref, layout=needs_nchw, samples=_samples)


def layer_norm(data: Expr, gamma: Expr, beta: Expr, axis: int = -1,
               epsilon: float = 1e-5) -> Call:
    """data normalized over its axes from `axis` on, times gamma plus beta."""
    return call("nn.layer_norm", [data, gamma, beta], axis=int(axis), epsilon=float(epsilon))
