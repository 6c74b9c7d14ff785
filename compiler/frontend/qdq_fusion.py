"""QDQ groups fused into quantized operators before import, as ONNX Runtime's QDQ
transformer does: a Conv whose data and weights come from DequantizeLinear nodes and
whose only reader is a QuantizeLinear becomes one QLinearConv of the quantized values,

    DequantizeLinear(x_q) ─┐
    DequantizeLinear(w_q) ─┼─ Conv ── QuantizeLinear ──> y_q
    DequantizeLinear(b_q) ─┘
        becomes  QLinearConv(x_q, ..., w_q, ..., b_q) ──> y_q

so that it imports as a qnn.conv2d with its requantize epilogue (onnx_ops/quantize.py)
and runs on int8 kernels. The two compute the same value but round differently: the
float Conv of dequantized values rounds every product and sum to float32, QLinearConv
sums exactly in int32 and rounds once, when it requantizes (which is what ONNX Runtime
computes for such a file). A group fuses only when it means exactly QLinearConv:
scales, zero points, weights and bias are initializers; the data's scale and zero
point and the output's are scalars; the weights' are scalars or one per output channel
(axis 0); the bias is int32 with zero point 0 and the scale x_scale * w_scale; the Conv's
result is read by the QuantizeLinear alone and is no graph output. A DequantizeLinear
left with no reader is dropped.

A MaxPool between a DequantizeLinear and a QuantizeLinear of the same scalar scale
(positive) and zero point pools the quantized values themselves, as ONNX Runtime's QDQ
transformer drops the pair: dequantizing is increasing, so the largest dequantized
value is the dequantized largest one, and quantizing it again with the same scale and
zero point gives back that quantized value exactly (|v - zero point| <= 255, so the
float32 round trip errs by far less than half a step); a window's padding (-inf in
float, the type's least value in the integers) saturates to the same least value. So
the stem's pool reads and writes 8-bit values, a quarter of the bytes.

Every other node is imported as it is: what does not fuse runs in float32 between its
DequantizeLinear and QuantizeLinear nodes, and `in_float` names those operators (the
import warns with QuantizedInFloatWarning, naming also the quantized convolutions that
no int8 kernel takes, such as depthwise ones, which are exact in float32) but for the
elementwise ones, which fuse into a neighbouring kernel whose values between kernels
stay 8-bit.
"""
from __future__ import annotations

import warnings
from collections import defaultdict

import numpy as np

_DEFAULT = ("", "ai.onnx")
_ELEMENTWISE = {"Add", "Sub", "Mul", "Div", "Relu", "Clip", "Sigmoid", "LeakyRelu", "Tanh",
                "HardSigmoid", "HardSwish", "Max", "Min", "Abs", "Neg", "Identity"}


class QuantizedInFloatWarning(UserWarning):
    """Quantized operators of a model that run in float32 (no int8 kernel takes them)."""


def in_float(nodes) -> list[str]:
    """'Op "name"' of each node (after fuse_qdq) that reads a DequantizeLinear and is
    read by a QuantizeLinear, elementwise ones left out (module docstring)."""
    nodes = list(nodes)
    producer, readers = _links(nodes)
    return [f'{n.op_type} "{n.name or n.output[0]}"' for n in nodes
            if n.domain in _DEFAULT and n.op_type not in _ELEMENTWISE
            and not n.op_type.endswith("QuantizeLinear")
            and any(_is(producer.get(i), "DequantizeLinear") for i in n.input)
            and any(_is(r, "QuantizeLinear") for o in n.output for r in readers[o])]


def warn_in_float(nodes, where: str, more: list[str] = ()) -> None:
    """The QuantizedInFloatWarning of a graph's nodes, when `in_float` names any or the
    converters add `more` (a quantized convolution of no int8 kernel: a depthwise one)."""
    names = [*in_float(nodes), *more]
    if names:
        shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        warnings.warn(f"{where}: {len(names)} quantized operator(s) have no int8 kernel and "
                      f"run in float32 (or int32, where named), exactly or between their "
                      f"DequantizeLinear and QuantizeLinear: {shown}",
                      QuantizedInFloatWarning, stacklevel=3)


def fuse_qdq(nodes, arrays: dict, outputs: set) -> list:
    """The nodes of a graph with each fusable DequantizeLinear -> Conv -> QuantizeLinear
    group as one QLinearConv (module docstring); `arrays`: the initializers by name,
    `outputs`: the graph's output names."""
    import onnx
    nodes = list(nodes)
    producer, readers = _links(nodes)
    fused, dropped = {}, set()
    for n in nodes:
        if _is(n, "Conv"):
            op, inputs = "QLinearConv", _group(n, producer, readers, arrays, outputs)
        elif _is(n, "MaxPool") and _passes_quantized(n, producer, readers, arrays, outputs):
            op, inputs = "MaxPool", [producer[n.input[0]].input[0]]
        else:
            continue
        if inputs is None:
            continue
        q = readers[n.output[0]][0]  # the QuantizeLinear the fused node stands for too
        node = onnx.helper.make_node(op, inputs, list(q.output), name=n.name)
        node.attribute.extend(n.attribute)
        fused[id(n)] = node
        dropped.add(id(q))
    kept = [fused.get(id(n), n) for n in nodes if id(n) not in dropped]
    read = {name for n in kept for name in n.input} | outputs
    return [n for n in kept if n.op_type != "DequantizeLinear" or n.domain not in _DEFAULT
            or any(o in read for o in n.output)]


def _links(nodes) -> tuple[dict, dict]:
    """(the node that writes each value, the nodes that read each value) of `nodes`."""
    producer = {o: n for n in nodes for o in n.output}
    readers = defaultdict(list)
    for n in nodes:
        for name in n.input:
            readers[name].append(n)
    return producer, readers


def _group(conv, producer, readers, arrays, outputs) -> list | None:
    """QLinearConv's inputs for the group around `conv`, None where it does not fuse."""
    if len(conv.input) < 2 or conv.output[0] in outputs:
        return None
    dq_x, dq_w = (producer.get(name) for name in conv.input[:2])
    q = readers[conv.output[0]]
    if len(q) != 1 or not _is(q[0], "QuantizeLinear") or not _is(dq_x, "DequantizeLinear") \
            or not _is(dq_w, "DequantizeLinear"):
        return None
    q = q[0]
    x = _quantized(dq_x, arrays, per_channel=False, data=True)
    w = _quantized(dq_w, arrays, per_channel=True, data=False)
    y = _quantized(q, arrays, per_channel=False, data=True)
    if x is None or w is None or y is None:
        return None
    bias = []
    if len(conv.input) > 2 and conv.input[2]:
        b = _bias(producer.get(conv.input[2]), arrays, x[1], w[1])
        if b is None:
            return None
        bias = [b]
    return [*x, *w, *y[1:], *bias]


def _passes_quantized(pool, producer, readers, arrays, outputs) -> bool:
    """Whether `pool` (a MaxPool) reads a DequantizeLinear and is read by a QuantizeLinear
    alone with the same scalar positive scale and zero point (module docstring), with no
    Indices output and no graph output of its own."""
    dq, q = producer.get(pool.input[0]), readers[pool.output[0]]
    if len(pool.output) != 1 or pool.output[0] in outputs or len(q) != 1 or \
            not _is(q[0], "QuantizeLinear") or not _is(dq, "DequantizeLinear"):
        return False
    x = _quantized(dq, arrays, per_channel=False, data=True)
    y = _quantized(q[0], arrays, per_channel=False, data=True)
    if x is None or y is None:
        return False
    (xs, xz), (ys, yz) = ((arrays[n] for n in names[1:]) for names in (x, y))
    return xz.dtype == yz.dtype and np.array_equal(xz, yz) and np.array_equal(xs, ys) and \
        bool(np.all(xs > 0))


def _is(node, op_type: str) -> bool:
    return node is not None and node.op_type == op_type and node.domain in _DEFAULT


def _attributes(node) -> dict:
    import onnx
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _quantized(node, arrays, per_channel: bool, data: bool) -> list | None:
    """[value, scale, zero point] names of a Dequantize/QuantizeLinear `node` that means
    what QLinearConv's operand does: float32 scale and 8-bit zero point initializers,
    scalars (or, `per_channel`, one per output channel, axis 0); the value itself an
    initializer unless `data`."""
    if len(node.input) != 3 or not all(name in arrays for name in node.input[1:]):
        return None
    if not data and node.input[0] not in arrays:
        return None
    attrs = _attributes(node)
    if set(attrs) - {"axis", "saturate"} or attrs.get("saturate", 1) != 1:
        return None
    scale, zero = arrays[node.input[1]], arrays[node.input[2]]
    if scale.dtype != np.float32 or zero.dtype not in (np.int8, np.uint8) or \
            scale.shape != zero.shape:
        return None
    if scale.size != 1 and not (per_channel and scale.ndim == 1 and attrs.get("axis", 1) == 0):
        return None
    return list(node.input)


def _bias(node, arrays, x_scale: str, w_scale: str) -> str | None:
    """The int32 bias initializer a DequantizeLinear `node` reads, where its zero point
    is 0 and its scale is x_scale * w_scale (as float32 computes it)."""
    if not _is(node, "DequantizeLinear") or not 2 <= len(node.input) <= 3 or \
            not all(name in arrays for name in node.input):
        return None
    attrs = _attributes(node)
    if set(attrs) - {"axis"}:
        return None
    b, scale = arrays[node.input[0]], arrays[node.input[1]]
    zero = arrays[node.input[2]] if len(node.input) == 3 else np.zeros(1, np.int32)
    expected = (arrays[x_scale] * arrays[w_scale]).astype(np.float32)
    if b.dtype != np.int32 or b.ndim != 1 or np.any(zero) or scale.dtype != np.float32:
        return None
    if scale.size != 1 and attrs.get("axis", 1) != 0:
        return None
    if not np.array_equal(np.broadcast_to(scale, b.shape), np.broadcast_to(expected, b.shape)):
        return None
    return node.input[0]
