"""compiler.ops conv2d (NCHW, NHWC) and depthwise_conv2d (NCHW) with padding, stride and
dilation, built with the default schedule and compared with a numpy convolution; bad
shapes and parameters name the operator and the shapes."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import ops, te
from build_check import check_build, randn

pytestmark = pytest.mark.filterwarnings("error::compiler.transform.VectorizeWarning")


def windows(x, kh, kw, stride, padding, dilation):
    """For each kernel offset (ky, kx): the (N, C, OH, OW) input values it multiplies."""
    (sh, sw), (dh, dw), (top, left, bottom, right) = stride, dilation, padding
    x = np.pad(x.astype("float64"), ((0, 0), (0, 0), (top, bottom), (left, right)))
    oh = (x.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (x.shape[3] - dw * (kw - 1) - 1) // sw + 1
    for ky in range(kh):
        for kx in range(kw):
            yield ky, kx, x[:, :, ky * dh:ky * dh + sh * (oh - 1) + 1:sh,
                            kx * dw:kx * dw + sw * (ow - 1) + 1:sw]


def conv_ref(x, w, stride, padding, dilation):
    """NCHW data, OIHW kernel."""
    return sum(np.einsum("ncyx,fc->nfyx", patch, w[:, :, ky, kx])
               for ky, kx, patch in windows(x, *w.shape[2:], stride, padding, dilation))


def depthwise_ref(x, w, stride, padding, dilation):
    """NCHW data, (C, multiplier, KH, KW) kernel."""
    c, m = w.shape[:2]
    out = sum(patch[:, :, None] * w[None, :, :, ky, kx, None, None]
              for ky, kx, patch in windows(x, *w.shape[2:], stride, padding, dilation))
    return out.reshape(x.shape[0], c * m, *out.shape[3:])


# (data shape NCHW, kernel shape OIHW, stride, padding, dilation, and the padding as
# (top, left, bottom, right) for the reference)
CONV_CASES = [
    ((1, 3, 9, 9), (4, 3, 3, 3), 1, 1, 1, (1, 1, 1, 1)),
    ((2, 2, 13, 7), (3, 2, 3, 2), 2, (1, 0), 1, (1, 0, 1, 0)),
    ((1, 3, 13, 17), (2, 3, 3, 3), (1, 2), (2, 1, 0, 3), 2, (2, 1, 0, 3)),
    ((1, 1, 7, 1000), (2, 1, 3, 3), 1, 1, (1, 3), (1, 1, 1, 1)),
    ((1, 3, 8, 8), (5, 3, 1, 1), 1, 0, 1, (0, 0, 0, 0)),
]
# the same for depthwise convolution: kernel (C, multiplier, KH, KW)
DEPTHWISE_CASES = [
    ((1, 3, 13, 17), (3, 1, 3, 3), 1, 1, 1, (1, 1, 1, 1)),
    ((2, 2, 9, 7), (2, 3, 3, 2), 2, (0, 1), 1, (0, 1, 0, 1)),
    ((1, 4, 11, 1000), (4, 1, 3, 3), (1, 3), 2, 2, (2, 2, 2, 2)),
]


def pairs(v):
    return tuple(v) if isinstance(v, tuple) else (v, v)


@pytest.mark.parametrize("op,ref,dshape,kshape,stride,padding,dilation,pads",
                         [(ops.conv2d_nchw, conv_ref, *case) for case in CONV_CASES]
                         + [(ops.depthwise_conv2d_nchw, depthwise_ref, *case)
                            for case in DEPTHWISE_CASES])
def test_conv2d_nchw(op, ref, dshape, kshape, stride, padding, dilation, pads):
    d, k = te.placeholder(dshape, name="d"), te.placeholder(kshape, name="k")
    y = op(d, k, stride, padding, dilation)
    x, w = randn(1, *dshape), randn(2, *kshape)
    want = ref(x, w, pairs(stride), pads, pairs(dilation))
    check_build(ops.default_schedule(y), [d, k, y], [x, w], [want], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dshape,kshape,stride,padding,dilation,pads", CONV_CASES[1:3])
def test_conv2d_nhwc(dshape, kshape, stride, padding, dilation, pads):
    n, c, h, w_ = dshape
    f, _, kh, kw = kshape
    d, k = te.placeholder((n, h, w_, c), name="d"), te.placeholder((kh, kw, c, f), name="k")
    y = ops.conv2d_nhwc(d, k, stride, padding, dilation)
    x, w = randn(3, n, h, w_, c), randn(4, kh, kw, c, f)
    want = conv_ref(x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1), pairs(stride), pads,
                    pairs(dilation)).transpose(0, 2, 3, 1)
    check_build(ops.default_schedule(y), [d, k, y], [x, w], [want], rtol=1e-4, atol=1e-4)


def test_conv2d_bias_relu_fused_and_padding_computed_once():
    d, k, b = (te.placeholder((1, 2, 7, 13), name="d"), te.placeholder((3, 2, 3, 3), name="k"),
               te.placeholder((3,), name="b"))
    y = ops.relu(ops.bias_add(ops.conv2d_nchw(d, k, padding=1), b))
    s = ops.default_schedule(y)
    assert {st.name: st.attach_type for st in s.stages} == {
        "pad": "root", "conv2d_nchw": "root", "bias_add": "inline", "relu": "root"}
    x, w, bias = randn(7, 1, 2, 7, 13), randn(8, 3, 2, 3, 3), randn(9, 3)
    want = np.maximum(conv_ref(x, w, (1, 1), (1, 1, 1, 1), (1, 1)) + bias[:, None, None], 0)
    check_build(s, [d, k, b, y], [x, w, bias], [want], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", [ops.conv2d_nchw, ops.depthwise_conv2d_nchw])
def test_errors(op):
    name = op.__name__
    d = te.placeholder((1, 3, 5, 5), name="d")
    k = te.placeholder((3, 1, 3, 3) if "depthwise" in name else (2, 3, 3, 3), name="k")
    with pytest.raises(ValueError, match=rf"{name}: the output would be empty.*kernel 3, "
                                         rf"dilation 3.*data of shape \(1, 3, 5, 5\), kernel"):
        op(d, k, dilation=3)
    with pytest.raises(ValueError, match=rf"{name}: .*\(1, 4, 5, 5\) has 4"):
        op(te.placeholder((1, 4, 5, 5)), k)
    with pytest.raises(ValueError, match=rf"{name}: stride must be an int or a pair of ints >= 1"):
        op(d, k, stride=0)
    with pytest.raises(ValueError, match=rf"{name}: padding must be"):
        op(d, k, padding=(1, -1))
    with pytest.raises(ValueError, match=rf"{name}: data must have 4 dimensions, got shape "
                                         rf"\(3, 5, 5\)"):
        op(te.placeholder((3, 5, 5)), k)
    with pytest.raises(ValueError, match=rf"{name}: data must have a constant shape"):
        op(te.placeholder((1, 3, te.var("h"), 5)), k)


def test_nhwc_channel_mismatch():
    with pytest.raises(ValueError, match=r"conv2d_nhwc: kernel of shape \(3, 3, 4, 2\) takes 4 "
                                         r"input channels but data of shape \(1, 5, 5, 3\) has 3"):
        ops.conv2d_nhwc(te.placeholder((1, 5, 5, 3)), te.placeholder((3, 3, 4, 2)))
