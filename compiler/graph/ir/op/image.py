"""The up-sampling ops of images (Relay's `image.resize2d` and `nn.dilate`), registered
once with their type relations, computes, numpy references, layout rules (both work on H
and W alone, so they compute in whatever layout their data is in: NCHW, or NCHW[x]c)
and samples; and their constructors.

image.resize2d resizes H and W of NCHW data by ONNX's Resize rules (compiler.ops.resize:
the source coordinate of each output element, nearest or linear); its attrs are Relay's
`size`, `method`, `coordinate_transformation_mode`, `rounding_method`, `layout`, and
`scales`, the (h, w) scales the size was computed from (ONNX's `scales` input), () when
the size was given (scale = size / input, as ONNX Runtime takes it).

nn.dilate puts `strides[i] - 1` elements of `dilation_value` between neighbours on each
axis i: a transposed convolution is an ordinary one on its dilated input (the ONNX
importer's ConvTranspose).
"""
from __future__ import annotations

import numpy as np

from .... import ops
from ....ops.pattern import OpPattern
from ....ops.resize import COORDINATE_MODES, METHODS, ROUNDING_METHODS, resize_scale, \
    source_coordinate
from ..expr import Call, Expr
from ..ty import TensorType
from .layout import is_packed, keeps_layout, transform_array
from .layout_rules import window as window_rule
from .registry import GraphTypeError, call, register_op
from .relations import pair, tensor_args


def _resize_rel(types, attrs):
    data, = tensor_args("image.resize2d", types, 1)
    layout = attrs["layout"]
    packed = layout != "NCHW"
    if data.ndim != (5 if packed else 4) or packed and f"NCHW{data.shape[-1]}c" != layout:
        raise GraphTypeError(f"image.resize2d: data {data.shape} is not {layout}")
    for what, known in (("method", METHODS),
                        ("coordinate_transformation_mode", COORDINATE_MODES),
                        ("rounding_method", ROUNDING_METHODS)):
        if attrs[what] not in known:
            raise GraphTypeError(f"image.resize2d: {what} {attrs[what]!r} is not one of "
                                 f"{', '.join(known)}")
    if len(attrs["size"]) != 2 or min(attrs["size"]) < 1:
        raise GraphTypeError(f"image.resize2d: size {attrs['size']} is not two extents >= 1")
    if attrs["method"] == "linear" and data.dtype not in ("float32", "float64"):
        raise GraphTypeError(f"image.resize2d: linear interpolation of {data.dtype} data "
                             f"(float only)")
    return TensorType((*data.shape[:2], *attrs["size"], *data.shape[4:]), data.dtype)


def _resize_compute(ins, at, ty):
    return ops.resize2d(ins[0], tuple(at["size"]), tuple(at["scales"]), at["method"],
                        at["coordinate_transformation_mode"], at["rounding_method"])


def _source(size: int, out: int, scale, attrs) -> np.ndarray:
    """The clamped float32 source coordinate of each output element of an axis."""
    at = source_coordinate(np.arange(out, dtype=np.float32),
                           lambda v, dtype="float32": np.dtype(dtype).type(v),
                           attrs["coordinate_transformation_mode"], size, out,
                           resize_scale(size, out, scale))
    return np.clip(at, np.float32(0), np.float32(size - 1))


def _nearest(at: np.ndarray, size: int, rounding: str) -> np.ndarray:
    low = np.floor(at)
    frac = at - low
    up = {"round_prefer_floor": frac > 0.5, "round_prefer_ceil": frac >= 0.5,
          "floor": np.zeros_like(frac, bool), "ceil": frac > 0}[rounding]
    return np.minimum(low.astype(int) + up, size - 1)


def _resize_nchw(data, attrs):
    h, w = data.shape[2:]
    scales = attrs["scales"] or (None, None)
    ys, xs = (_source(n, out, s, attrs) for n, out, s in zip((h, w), attrs["size"], scales))
    if attrs["method"] == "nearest_neighbor":
        rounding = attrs["rounding_method"]
        return data[:, :, _nearest(ys, h, rounding)][:, :, :, _nearest(xs, w, rounding)]
    y0, x0 = ys.astype(int), xs.astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    wy, wx = (ys - y0)[:, None], xs - x0
    d = data.astype(np.float64)
    top = d[:, :, y0][..., x0] * (1 - wx) + d[:, :, y0][..., x1] * wx
    bottom = d[:, :, y1][..., x0] * (1 - wx) + d[:, :, y1][..., x1] * wx
    return top * (1 - wy) + bottom * wy


def _resize_ref(args, attrs):
    layout = attrs["layout"]
    if layout == "NCHW":
        return _resize_nchw(args[0], attrs)
    out = _resize_nchw(transform_array(args[0], layout, "NCHW"), attrs)
    return transform_array(out, "NCHW", layout)


def _resize_samples():
    def sample(shape, size, method, mode, **more):
        return ([TensorType(shape, "float32")],
                {"size": size, "method": method, "coordinate_transformation_mode": mode,
                 **more})
    found = [sample((1, 3, 7, 13), (13, 37), method, mode)
             for method in METHODS for mode in COORDINATE_MODES]
    found += [sample((2, 3, 13, 7), (7, 13), "nearest_neighbor", "asymmetric",
                     rounding_method=r) for r in ROUNDING_METHODS]
    found += [sample((1, 3, 13, 7), (26, 14), "nearest_neighbor", "half_pixel",
                     scales=(2.0, 2.0), rounding_method="ceil"),
              # a column of one element reads the middle of 37, at exactly 18.0 in float32
              sample((1, 3, 13, 37), (7, 1), "nearest_neighbor", "half_pixel",
                     rounding_method="floor"),
              sample((1, 2, 7, 13), (11, 37), "linear", "half_pixel", scales=(1.7, 2.9)),
              sample((1, 16, 7, 13), (13, 26), "linear", "half_pixel"),
              sample((1, 16, 7, 13), (14, 26), "nearest_neighbor", "asymmetric"),
              sample((1, 2, 7, 13, 8), (13, 7), "linear", "align_corners",
                     layout="NCHW8c")]
    return found


def _dilate_rel(types, attrs):
    data, = tensor_args("nn.dilate", types, 1)
    strides = attrs["strides"]
    if len(strides) != data.ndim or min(strides, default=1) < 1:
        raise GraphTypeError(f"nn.dilate: strides {strides} need one int >= 1 per axis of "
                             f"{data.shape}")
    return TensorType([(d - 1) * s + 1 for d, s in zip(data.shape, strides)], data.dtype)


def _dilate_ref(args, attrs):
    data, strides = args[0], attrs["strides"]
    out = np.full([(d - 1) * s + 1 for d, s in zip(data.shape, strides)],
                  attrs["dilation_value"], data.dtype)
    out[tuple(slice(None, None, s) for s in strides)] = data
    return out


@keeps_layout
def _dilate_layout(ctx, call: Call) -> Expr | None:
    """Dilating H and W of an image computes in its packed layout (one more axis, the
    channels' block, undilated)."""
    layout = ctx.layout_of(call.args[0])
    strides = call.attrs["strides"]
    if not is_packed(layout) or len(strides) != 4 or tuple(strides[:2]) != (1, 1):
        return None
    return ctx.mark(Call(call.op, call.args, {**call.attrs, "strides": (*strides, 1)}),
                    layout)


register_op("image.resize2d", _resize_rel, OpPattern.INJECTIVE,
            {"size": (1, 1), "scales": (), "method": "nearest_neighbor",
             "coordinate_transformation_mode": "half_pixel",
             "rounding_method": "round_prefer_floor", "layout": "NCHW"}, 1,
            compute=_resize_compute, reference=_resize_ref, layout=window_rule,
            samples=_resize_samples)
register_op("nn.dilate", _dilate_rel, OpPattern.INJECTIVE,
            {"strides": (), "dilation_value": 0.0}, 1,
            compute=lambda ins, at, ty: ops.dilate(ins[0], tuple(at["strides"]),
                                                   at["dilation_value"]),
            reference=_dilate_ref, layout=_dilate_layout,
            samples=lambda: [([TensorType((7, 13), "float32")], {"strides": (2, 3)}),
                             ([TensorType((1, 3, 7, 13), "float32")],
                              {"strides": (1, 1, 2, 2), "dilation_value": 0.5}),
                             ([TensorType((1, 16, 7, 13), "float32")],
                              {"strides": (1, 1, 3, 2)})])


def resize2d(data: Expr, size, scales=(), method: str = "nearest_neighbor",
             coordinate_transformation_mode: str = "half_pixel",
             rounding_method: str = "round_prefer_floor") -> Call:
    """`data` (NCHW) resized to `size` (h, w) on H and W (the module docstring)."""
    return call("image.resize2d", [data], size=pair(size, "size"),
                scales=tuple(float(s) for s in scales), method=method,
                coordinate_transformation_mode=coordinate_transformation_mode,
                rounding_method=rounding_method)


def dilate(data: Expr, strides, dilation_value: float = 0.0) -> Call:
    """`data` with strides[i] - 1 elements of `dilation_value` between neighbours on axis
    i."""
    return call("nn.dilate", [data], strides=tuple(int(s) for s in strides),
                dilation_value=float(dilation_value))
