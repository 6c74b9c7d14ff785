"""dense, dense_bias_relu, batch_matmul and depthwise_conv2d_nchw: every sampled point builds
and matches numpy (seeded samples, odd shapes included), and the spaces are real."""
import numpy as np
import pytest

import compiler
from compiler.ops import get_const_tuple
import search_spaces


def _run(name, args, seed, samples):
    space = search_spaces.space(name, *args)
    rng = np.random.default_rng(seed)
    for cfg in space.sample(samples, seed=seed) + [space.fallback()]:
        s, tensors = search_spaces.instantiate(name, *args, config=cfg)
        f = compiler.build(s, tensors)
        ins = [rng.uniform(-1, 1, get_const_tuple(t.shape)).astype("float32")
               for t in tensors[:-1]]
        out = np.full(get_const_tuple(tensors[-1].shape), np.nan, "float32")
        f(*ins, out)
        yield cfg, ins, out


@pytest.mark.parametrize("args", [(37, 29, 13), (1, 64, 32)])
def test_dense(args):
    for cfg, (x, w), y in _run("dense", args, sum(args), 10):
        np.testing.assert_allclose(y, x.astype("float64") @ w.T, rtol=1e-4, atol=1e-4,
                                   err_msg=str(cfg))


@pytest.mark.parametrize("args", [(1, 40, 37, 40), (5, 64, 13, 16), (37, 24, 29, 8)])
def test_dense_pack(args):
    M, N, K, block = args
    for cfg, (x, packed), y in _run("dense_pack", args, sum(args), 10):
        w = packed.transpose(0, 2, 1).reshape(N, K)
        np.testing.assert_allclose(y, x.astype("float64") @ w.T, rtol=1e-4, atol=1e-4,
                                   err_msg=str(cfg))


@pytest.mark.parametrize("args", [(37, 29, 13), (8, 64, 32), (7, 13, 100)])
def test_dense_bias_relu(args):
    for cfg, (x, w, b), y in _run("dense_bias_relu", args, sum(args), 10):
        expected = np.maximum(x.astype("float64") @ w.T + b, 0)
        np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4, err_msg=str(cfg))


@pytest.mark.parametrize("args", [(3, 13, 20, 9), (2, 16, 32, 8), (1, 7, 13, 5)])
def test_batch_matmul(args):
    for cfg, (a, b), c in _run("batch_matmul", args, sum(args), 10):
        np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-4, atol=1e-4,
                                   err_msg=str(cfg))


def _depthwise_reference(d, w, stride, pad):
    _, _, H, W = d.shape
    _, _, R, S = w.shape
    dp = np.pad(d.astype("float64"), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    OH, OW = (H + 2 * pad - R) // stride + 1, (W + 2 * pad - S) // stride + 1
    out = np.zeros((d.shape[0], d.shape[1], OH, OW))
    for ry in range(R):
        for rx in range(S):
            out += dp[:, :, ry:ry + stride * OH:stride, rx:rx + stride * OW:stride] \
                * w[None, :, 0, ry, rx, None, None]
    return out


@pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")
@pytest.mark.parametrize("args", [(1, 6, 9, 9, 3, 3, 1, 1), (2, 5, 13, 7, 3, 2, 2, 1),
                                  (1, 16, 12, 12, 5, 5, 2, 2)])
def test_depthwise_conv2d(args):
    *_, stride, pad = args
    for cfg, (d, w), out in _run("depthwise_conv2d_nchw", args, sum(args), 10):
        np.testing.assert_allclose(out, _depthwise_reference(d, w, stride, pad), rtol=1e-4,
                                   atol=1e-4, err_msg=str(cfg))


def test_space_sizes():
    assert len(search_spaces.space("dense_bias_relu", 1024, 1024, 1024)) >= 10 ** 4
    assert len(search_spaces.space("batch_matmul", 8, 256, 256, 256)) >= 10 ** 3
    assert len(search_spaces.space("depthwise_conv2d_nchw", 1, 64, 56, 56, 3, 3, 1, 1)) >= 10 ** 2


def test_registered_templates():
    names = search_spaces.templates()
    for name in ("matmul", "dense", "dense_bias_relu", "batch_matmul", "conv2d_nchw",
                 "conv2d_nchw_packed", "depthwise_conv2d_nchw"):
        assert name in names


@pytest.mark.parametrize("args", [(1, 16, 13, 7, 24, 1, 8, 8, 4), (2, 32, 9, 14, 16, 0, 16, 16, 2)])
def test_conv2d_winograd_nchwc(args):
    """Sampled configs (register tiles, rows of the output tile, the transforms'
    row loops in or out, blocks of tile rows) on odd sizes, against Winograd's formula
    on the same (random) transformed weights;
    tests/compiler/ops/test_ops_conv2d_winograd.py checks the formula against a direct
    convolution."""
    reference = search_spaces.get_template("conv2d_winograd_nchwc").reference
    samples = 2 if args[-1] == 4 else 4  # an F(4x4) kernel takes about 4 s to compile
    for cfg, ins, out in _run("conv2d_winograd_nchwc", args, sum(args), samples):
        want = reference(ins, *args)  # F(4x4) sums terms up to 100x the result: float32's
        np.testing.assert_allclose(out, want, rtol=1e-4,  # error scales with the largest
                                   atol=1e-5 * np.abs(want).max(), err_msg=str(cfg))
