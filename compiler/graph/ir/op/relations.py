"""Type relations shared by several ops: each takes the argument types and the call's
attrs and returns the result type, or raises GraphTypeError naming the op and shapes."""
from __future__ import annotations

import re

import numpy as np

from .registry import GraphTypeError
from ..ty import TensorType


def tensor_args(name: str, types, n: int | None = None) -> list[TensorType]:
    """`types` checked to be tensor types (and `n` of them)."""
    if n is not None and len(types) != n:
        raise GraphTypeError(f"{name}: takes {n} argument(s), got {len(types)}")
    for i, t in enumerate(types):
        if not isinstance(t, TensorType):
            raise GraphTypeError(f"{name}: argument {i} is {t}, not a tensor")
    return list(types)


def same_dtype(name: str, types) -> str:
    dtypes = {t.dtype for t in types}
    if len(dtypes) > 1:
        raise GraphTypeError(f"{name}: arguments of different dtypes "
                             f"{', '.join(str(t) for t in types)}")
    return types[0].dtype


def broadcast_rel(name: str):
    """Two tensors broadcast as numpy broadcasts them, of one dtype."""
    def rel(types, attrs):
        a, b = tensor_args(name, types, 2)
        try:
            shape = np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            raise GraphTypeError(f"{name}: shapes {a.shape} and {b.shape} do not "
                                 f"broadcast") from None
        return TensorType(shape, same_dtype(name, [a, b]))
    return rel


def identity_rel(name: str):
    """One tensor in, the same type out (relu, sigmoid, clip, softmax, ...)."""
    def rel(types, attrs):
        t, = tensor_args(name, types, 1)
        return t
    return rel


def axis_of(name: str, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise GraphTypeError(f"{name}: axis {axis} is out of range for {ndim} dimensions")
    return axis % ndim


def reduce_rel(name: str):
    """Reduce over `axis` (None: all), keeping the reduced axes when `keepdims`."""
    def rel(types, attrs):
        t, = tensor_args(name, types, 1)
        axes = attrs["axis"]
        axes = range(t.ndim) if axes is None else [axis_of(name, a, t.ndim) for a in axes]
        shape = [1 if i in axes else d for i, d in enumerate(t.shape)
                 if attrs["keepdims"] or i not in axes]
        return TensorType(shape, t.dtype)
    return rel


def kernel_blocks(kernel_layout: str) -> tuple[int, int] | None:
    """(x, y) of a packed kernel layout OIHW[x]i[y]o, None for OIHW (anything else is an
    error naming the layout)."""
    if kernel_layout == "OIHW":
        return None
    found = re.fullmatch(r"OIHW(\d+)i(\d+)o", kernel_layout)
    if found is None:
        raise GraphTypeError(f"kernel_layout {kernel_layout} is neither OIHW nor "
                             f"OIHW[x]i[y]o")
    return int(found[1]), int(found[2])


def pair(value, name: str) -> tuple:
    """(h, w) from an int or two ints."""
    value = (value, value) if isinstance(value, int) else tuple(int(v) for v in value)
    if len(value) != 2:
        raise TypeError(f"{name} must be an int or two ints, got {value!r}")
    return value


def padding4(value) -> tuple:
    """(top, left, bottom, right) from an int, (h, w) or four values, as Relay's."""
    value = (value,) if isinstance(value, int) else tuple(int(v) for v in value)
    if len(value) == 1:
        return value * 4
    if len(value) == 2:
        return (value[0], value[1], value[0], value[1])
    if len(value) == 4:
        return value
    raise TypeError(f"padding must be 1, 2 or 4 ints, got {value!r}")


def window(name, size, kernel, stride, pad_before, pad_after, dilation=1) -> int:
    """The extent of a window's output along one axis (a GraphTypeError when the window
    does not fit)."""
    extent = (size + pad_before + pad_after - dilation * (kernel - 1) - 1) // stride + 1
    if extent < 1:
        raise GraphTypeError(f"{name}: a window of {kernel} (dilation {dilation}) does not "
                             f"fit in {size} with padding {pad_before}, {pad_after}")
    return extent
