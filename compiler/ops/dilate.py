"""Zero-stuffing (TOPI's nn.dilate), pattern INJECTIVE: the input of a transposed
convolution computed as an ordinary one (ONNX's ConvTranspose)."""
from __future__ import annotations

from .. import te
from .pattern import OpPattern, register_pattern
from .shape import OpError, check_tensor, get_const_tuple, shape_str


@register_pattern(OpPattern.INJECTIVE)
def dilate(data, strides, dilation_value=0.0):
    """`data` with `strides[i] - 1` elements of `dilation_value` between neighbours along
    axis i (one int >= 1 per axis): extent (d - 1) * s + 1."""
    check_tensor("dilate", "data", data)
    if len(strides) != data.ndim or not all(isinstance(s, int) and s >= 1 for s in strides):
        raise OpError(f"dilate: strides must be {data.ndim} ints >= 1, one per axis of data "
                      f"of shape {shape_str(data.shape)}, got {strides!r}")
    shape = get_const_tuple(data.shape)
    value = te.const(dilation_value, data.dtype)

    def fcompute(*index):
        on = [i % s == 0 for i, s in zip(index, strides) if s > 1]
        read = data[tuple(i // s if s > 1 else i for i, s in zip(index, strides))]
        return te.select(te.all(*on), read, value) if on else read
    return te.compute(tuple((d - 1) * s + 1 for d, s in zip(shape, strides)), fcompute,
                      name="dilate")
