"""Conformance of the image ONNX ops (compiler/frontend/onnx_ops/vision.py) against ONNX
Runtime, built at opt level 3 (onnx_cases.check_against_ort: max |ours - ORT| / max |ORT|
<= 1e-4, ORT's shapes): ConvTranspose (strides, pads, output_padding, output_shape,
groups, dilations, pads that crop, weights fed at run time), Conv and the pools in 1-D
and with auto_pad, the pools with ceil_mode and dilations,
GlobalMaxPool, Pad's modes, Resize in every mode and coordinate mode by scales and by
sizes (and Upsample, Resize-10); a U-Net block whose up-sampling meets the packed
convolutions; and the FrontendError of each attribute value that is not supported."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from compiler import graph  # noqa: E402
from compiler.errors import FrontendError  # noqa: E402
from compiler.frontend import from_onnx  # noqa: E402
from compiler.graph.ir.expr import Call, Function  # noqa: E402
from compiler.graph.ir.functor import post_order  # noqa: E402
from compiler.transform.pass_infra import PassContext  # noqa: E402
from onnx_cases import In, check_against_ort, node, node_model  # noqa: E402

rng = np.random.default_rng(11)


def w(*shape):
    return (rng.standard_normal(shape) * 0.3).astype("float32")


def ints(*values):
    return np.array(values, "int64")


def floats(*values):
    return np.array(values, "float32")


CASES = {  # name: (op type, opset, nodes)
    "ConvTranspose": ("ConvTranspose", 17, [
        node(In(1, 7, 5, 6), w(7, 13, 3, 3), w(13), strides=[2, 2], pads=[1, 0, 1, 2],
             output_padding=[1, 0]),
        node(In(1, 6, 5, 7), w(6, 2, 3, 2), strides=[2, 3], group=3, dilations=[2, 1]),
        node(In(1, 13, 7, 7), w(13, 1, 3, 3), group=13, strides=[2, 2], pads=[1, 1, 1, 1],
             output_padding=[1, 1]),
        node(In(1, 4, 7, 5), w(4, 3, 2, 2), strides=[2, 2], pads=[3, 3, 2, 2]),
        node(In(1, 37, 7, 13), w(37, 7, 3, 3), w(7), pads=[1, 1, 1, 1]),
        node(In(1, 16, 7, 13), w(16, 16, 4, 4), w(16), strides=[2, 2], pads=[1, 1, 1, 1]),
        node(In(1, 4, 7, 5), w(4, 3, 3, 3), strides=[2, 2], output_shape=[14, 12]),
        node(In(1, 4, 7, 5), w(4, 3, 3, 3), strides=[2, 2], output_shape=[16, 10]),
        # stride = kernel: the windows over the dilated input do not overlap
        node(In(1, 16, 7, 13), w(16, 13, 2, 2), w(13), strides=[2, 2]),
        node(In(2, 7, 5, 6), w(7, 5, 3, 2), strides=[3, 2]),
        # weights and bias fed at run time; 1-D (as 2-D of a unit height)
        node(In(1, 7, 5, 6), In(7, 4, 3, 3), In(4), strides=[2, 2], pads=[1, 0, 1, 1]),
        node(In(1, 7, 13), w(7, 5, 3), w(5), strides=[2], pads=[1, 2], output_padding=[1]),
        node(In(1, 7, 5, 6), w(7, 4, 3, 3), strides=[2, 2], auto_pad="SAME_UPPER"),
        node(In(1, 7, 5, 6), w(7, 4, 4, 3), strides=[2, 3], auto_pad="SAME_LOWER")]),
    "Conv": ("Conv", 17, [  # 1-D, auto_pad, weights fed at run time
        node(In(1, 7, 37), w(5, 7, 3), w(5), strides=[2], pads=[1, 2], dilations=[2]),
        node(In(2, 6, 13), w(6, 2, 3), group=3, auto_pad="SAME_UPPER", strides=[2]),
        node(In(1, 7, 13, 13), w(5, 7, 3, 3), auto_pad="SAME_LOWER", strides=[2, 2]),
        node(In(1, 7, 13, 12), w(5, 7, 2, 2), auto_pad="SAME_UPPER"),
        node(In(1, 7, 13, 13), w(5, 7, 3, 3), auto_pad="VALID", kernel_shape=[3, 3]),
        node(In(1, 7, 13, 11), In(5, 7, 3, 3), In(5), pads=[1, 1, 1, 1])]),
    "MaxPool": ("MaxPool", 17, [
        node(In(1, 7, 13, 13), kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        node(In(1, 7, 13, 37), kernel_shape=[3, 2], strides=[2, 3], pads=[1, 0, 1, 1],
             dilations=[2, 3], ceil_mode=1),
        node(In(2, 13, 7, 13), kernel_shape=[2, 2], dilations=[2, 2]),
        node(In(1, 16, 13, 7), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
             ceil_mode=1),
        node(In(1, 7, 37), kernel_shape=[3], strides=[2], pads=[1, 1]),
        node(In(1, 7, 13, 13), kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")]),
    "AveragePool": ("AveragePool", 17, [
        node(In(1, 7, 13, 37), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 0, 1],
             ceil_mode=1, count_include_pad=cip) for cip in (0, 1)] + [
        node(In(1, 7, 6, 13), kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1,
             count_include_pad=1),
        node(In(2, 7, 13), kernel_shape=[2], strides=[2], ceil_mode=1),
        node(In(1, 7, 13, 13), kernel_shape=[2, 3], auto_pad="SAME_LOWER")]),
    "AveragePool-19": ("AveragePool", 19, [
        node(In(1, 7, 13, 37), kernel_shape=[2, 3], strides=[3, 2], pads=[1, 2, 1, 0],
             dilations=[2, 3], ceil_mode=1, count_include_pad=cip) for cip in (0, 1)]),
    "GlobalMaxPool": ("GlobalMaxPool", 17, [node(In(1, 37, 7, 13)), node(In(2, 7, 13, 5))]),
    "Pad": ("Pad", 17, [
        node(In(1, 7, 13, 5), ints(0, 0, 2, 1, 0, 0, 3, 4), mode="reflect"),
        node(In(2, 3, 7, 13), ints(0, 1, 6, 0, 1, 0, 0, 12), mode="edge"),
        node(In(7, 13), ints(1, -2, 3, 4), floats(1.5), mode="constant"),
        node(In(7, 13), ints(1, 2, 3, 4), In(), mode="constant"),  # its value fed at run time
        node(In(1, 7, 13, 5), ints(0, 0, -2, 1, 0, 0, 3, -1), mode="reflect")]),
    "Pad-18": ("Pad", 18, [node(In(1, 7, 13, 5), ints(2, 1, 3, 4), None, ints(2, -1),
                                mode=mode) for mode in ("reflect", "edge", "constant")]),
    "Pad-10": ("Pad", 10, [node(In(1, 7, 13, 5), pads=[0, 0, 2, 1, 0, 0, 3, 4],
                                mode="edge"),
                           node(In(1, 7, 13, 5), pads=[0, 0, 2, 1, 0, 0, 3, 4], value=2.0)]),
    "Upsample-9": ("Upsample", 9, [node(In(1, 7, 7, 13), floats(1, 1, 2, 3), mode=mode)
                                   for mode in ("nearest", "linear")]),
    "Upsample-7": ("Upsample", 7, [node(In(1, 7, 7, 13), scales=[1.0, 1.0, 2.0, 1.5])]),
    "Resize-10": ("Resize", 10, [node(In(1, 7, 13, 37), floats(1, 1, s, s), mode=mode)
                                 for s in (0.5, 1.7) for mode in ("nearest", "linear")]),
}

SIZE = (1, 7, 13, 37)
SCALES = [floats(1, 1, 2, 0.5), floats(1, 1, 1.7, 0.63)]  # ties, and ratios with a rest
SIZES = [ints(1, 7, 37, 13), ints(1, 7, 7, 1)]
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _resize_nodes(mode, coordinate_mode):
    """Every nearest_mode (nearest) by each scales and each sizes."""
    nearest = NEAREST if mode == "nearest" else NEAREST[:1]
    attrs = {"mode": mode, "coordinate_transformation_mode": coordinate_mode}
    return [node(In(*SIZE), None, s, nearest_mode=r, **attrs) for s in SCALES
            for r in nearest] + \
        [node(In(*SIZE), None, None, s, nearest_mode=r, **attrs) for s in SIZES
         for r in nearest]


for _mode in ("nearest", "linear"):
    for _coordinates in ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"):
        CASES[f"Resize-{_mode}-{_coordinates}"] = ("Resize", 13,
                                                  _resize_nodes(_mode, _coordinates))
CASES["Resize-19"] = ("Resize", 19, [
    *_resize_nodes("nearest", "half_pixel_symmetric"),
    node(In(*SIZE), None, floats(1.5, 0.5), axes=[2, 3], mode="linear"),
    node(In(*SIZE), None, None, ints(37, 13), axes=[-1, -2])])
CASES["Resize-11"] = ("Resize", 11, [
    node(In(*SIZE), floats(), floats(1, 1, 2, 0.5), mode="linear"),
    node(In(*SIZE), floats(), floats(), ints(1, 7, 37, 13), nearest_mode="floor")])


@pytest.mark.parametrize("name", CASES)
def test_the_op_matches_onnx_runtime(name):
    op_type, opset, nodes = CASES[name]
    check_against_ort(*node_model(op_type, nodes, opset))


def _unet_block(up: str):
    """Conv -> down-sampling Conv -> ConvTranspose or Resize up -> Concat with the skip ->
    Conv, 16 and 32 channels (packed at opt level 3), 13 x 37 images, 7 channels out."""
    if up == "ConvTranspose":
        upsample = helper.make_node("ConvTranspose", ["down", "wt", "bt"], ["up"],
                                    strides=[2, 2], pads=[1, 1, 1, 1])
    else:
        upsample = helper.make_node("Resize", ["down", "", "", "sizes"], ["up"],
                                    mode="linear")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["skip"]),
             helper.make_node("Conv", ["skip", "w2"], ["c2"], pads=[1, 1, 1, 1],
                              strides=[2, 2]),
             helper.make_node("Relu", ["c2"], ["down"]),
             upsample,
             helper.make_node("Concat", ["up", "skip"], ["cat"], axis=1),
             helper.make_node("Conv", ["cat", "w3"], ["y"], pads=[1, 1, 1, 1])]
    up_channels = 16 if up == "ConvTranspose" else 32
    inits = [numpy_helper.from_array(a, n) for n, a in [
        ("w1", w(16, 3, 3, 3)), ("w2", w(32, 16, 3, 3)), ("wt", w(32, 16, 3, 3)),
        ("bt", w(16)), ("sizes", ints(1, 32, 13, 37)),
        ("w3", w(7, up_channels + 16, 3, 3))]]
    g = helper.make_graph(nodes, "unet", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 13, 37])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 7, 13, 37])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return model, {"x": rng.standard_normal((1, 3, 13, 37)).astype("float32")}


def _calls(fn):
    """Every call in `fn`, inside the fused functions too."""
    found = []
    for e in post_order(fn.body):
        if isinstance(e, Call) and isinstance(e.op, Function):
            found += _calls(e.op)
        elif isinstance(e, Call):
            found.append(e)
    return found


@pytest.mark.parametrize("up", ["ConvTranspose", "Resize"])
def test_a_unet_block_up_samples_packed_values_and_matches_onnx_runtime(up):
    model, feeds = _unet_block(up)
    check_against_ort(model, feeds)  # the output's shape is the declared (1, 7, 13, 37)
    mod, params = from_onnx(model)
    with PassContext(opt_level=3):
        fn = graph.optimize(mod, params)
    ups = [c for c in _calls(fn) if c.op.name in ("nn.dilate", "image.resize2d")]
    assert ups and all(len(c.ty.shape) == 5 for c in ups)  # computed packed


def _error(op_type, nodes, opset=19):
    with pytest.raises(FrontendError) as err:
        from_onnx(node_model(op_type, nodes, opset)[0])
    return str(err.value)


@pytest.mark.parametrize("attrs,message", [
    ({"mode": "cubic"}, "mode='cubic' is not supported (nearest, linear)"),
    ({"antialias": 1}, "antialias=1 is not supported"),
    ({"exclude_outside": 1}, "exclude_outside=1 is not supported"),
    ({"keep_aspect_ratio_policy": "not_larger"},
     "keep_aspect_ratio_policy='not_larger' is not supported (stretch)"),
    ({"coordinate_transformation_mode": "tf_crop_and_resize"},
     "coordinate_transformation_mode='tf_crop_and_resize' is not supported"),
    ({"nearest_mode": "round"}, "nearest_mode='round' is not supported"),
])
def test_unsupported_resize_attributes_are_named(attrs, message):
    found = _error("Resize", [node(In(*SIZE), None, floats(1, 1, 2, 2), **attrs)])
    assert "node Resize0 (Resize)" in found and message in found


@pytest.mark.parametrize("op_type,nodes,opset,message", [
    ("Resize", [node(In(*SIZE), None, floats(1, 2, 2, 2))], 19,
     "scales=[1.0, 2.0, 2.0, 2.0] resizes N or C, which is not supported"),
    ("Resize", [node(In(*SIZE), None, None, ints(2, 7, 13, 37))], 19,
     "sizes=[2, 7, 13, 37] resizes N or C"),
    ("Resize", [node(In(1, 7, 13), None, floats(1, 1, 2))], 19,
     "input of shape (1, 7, 13) is not supported (4-D NCHW only)"),
    ("Pad", [node(In(7, 13), ints(1, 1, 1, 1), mode="wrap")], 19,
     "mode='wrap' is not supported (constant, edge, reflect)"),
    ("ConvTranspose", [node(In(1, 7, 5, 5), w(7, 3, 3, 3), auto_pad="SAME")], 17,
     "auto_pad='SAME' is not supported"),
    ("MaxPool", [node(In(1, 2, 5, 5, 5, 5), kernel_shape=[3, 3, 3, 3])], 17,
     "kernel_shape=[3, 3, 3, 3] is not supported (1-D to 3-D pools)"),
    ("Conv", [node(In(1, 7, 5, 5), w(3, 7, 3, 3), kernel_shape=[3, 2])], 17,
     "kernel_shape=[3, 2] differs from the weight's window [3, 3]"),
    ("Upsample", [node(In(*SIZE), floats(1, 1, 2, 0.5))], 9,
     "up-samples one axis and down-samples the other"),
])
def test_unsupported_values_are_named(op_type, nodes, opset, message):
    assert message in _error(op_type, nodes, opset)


def test_max_pool_indices_match_onnx_runtime():
    """MaxPool's Indices: flat NCHW indices (HW swapped with storage_order=1) of each
    window's max, padded, strided, dilated, ceil_mode, 1-D."""
    check_against_ort(*node_model("MaxPool", [
        node(In(2, 7, 13, 13), outputs=2, kernel_shape=[2, 2]),
        node(In(1, 7, 13, 11), outputs=2, kernel_shape=[3, 3], strides=[2, 2],
             pads=[1, 1, 1, 1], ceil_mode=1),
        node(In(1, 5, 13, 11), outputs=2, kernel_shape=[3, 2], dilations=[2, 2],
             storage_order=1),
        node(In(2, 7, 37), outputs=2, kernel_shape=[3], strides=[2])], 12))
    found = _error("MaxPool", [node(In(1, 2, 5, 5, 5), outputs=2, kernel_shape=[2, 2, 2])], 17)
    assert "its Indices output is not supported (1-D and 2-D MaxPool only)" in found

