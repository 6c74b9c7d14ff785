"""compiler.ops.conv2d_winograd: F(2x2, 3x3) and F(4x4, 3x3) in NCHW[x]c against a numpy
direct convolution, on odd sizes (tiles cut by the edge), asymmetric padding, several
images, blocks of 8 and 16 that differ between input and output, with its default
schedule (built for the host and compiled for haswell and skylake-avx512) and an
elementwise tail, and with each stage whole or by blocks of tile rows; the numpy
Winograd formula agrees; bad weights name the operator."""
from __future__ import annotations

import numpy as np
import pytest

import compiler
from compiler import te
from compiler.ops import OpError
from compiler.ops.conv2d_winograd import (conv2d_winograd_nchwc, schedule_conv2d_winograd_nchwc,
                                          schedule_winograd, winograd_conv2d_reference,
                                          winograd_tile_size, winograd_weight_transform)
from test_ops_conv2d import conv_ref

rng = np.random.default_rng(11)


def pack(x, block):
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2))


def unpack(x):
    n, cb, h, w, b = x.shape
    return x.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w)


def build(n, c, h, w, k, m, padding, x, y, target="llvm", tail=False):
    data = te.placeholder((n, c // x, h, w, x), name="data")
    weight = te.placeholder((m + 2, m + 2, k // y, c, y), name="weight")
    conv = conv2d_winograd_nchwc(data, weight, m, padding)
    out = te.compute(conv.shape, lambda *i: te.max(conv[i] * 0.5, 0.0), name="tail") \
        if tail else conv
    s = schedule_conv2d_winograd_nchwc(out, conv, target)
    return compiler.build(s, [data, weight, out], target=target), conv.shape


CASES = [  # n, c, h, w, k, m, padding, x, y
    (1, 16, 7, 13, 16, 2, (1, 1, 1, 1), 16, 16),
    (2, 16, 13, 7, 24, 4, (1, 0, 2, 1), 8, 8),
    (1, 32, 37, 37, 16, 4, (1, 1, 1, 1), 16, 8),
    (1, 8, 9, 14, 32, 2, (0, 0, 0, 0), 8, 16),
    (1, 16, 3, 3, 16, 4, (0, 0, 0, 0), 16, 16),  # one output: a tile mostly cut away
]


@pytest.mark.parametrize("n, c, h, w, k, m, padding, x, y, tail",
                         [(*case, i % 2 == 1) for i, case in enumerate(CASES)])
def test_winograd_matches_the_direct_convolution(n, c, h, w, k, m, padding, x, y, tail):
    f, shape = build(n, c, h, w, k, m, padding, x, y, tail=tail)
    data = rng.standard_normal((n, c, h, w))
    weight = rng.standard_normal((k, c, 3, 3))
    u = winograd_weight_transform(weight, m, y)
    out = np.zeros([int(d) for d in shape], "float32")
    f(pack(data.astype("float32"), x), u, out)
    want = conv_ref(data, weight, (1, 1), padding, (1, 1))
    if tail:
        want = np.maximum(want * 0.5, 0)
    np.testing.assert_allclose(unpack(out), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    formula = winograd_conv2d_reference(data, u, m, padding)
    np.testing.assert_allclose(formula, conv_ref(data, weight, (1, 1), padding, (1, 1)),
                               rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.parametrize("rows_outer, block_rows", [(False, 2), (True, 3)])
def test_blocks_of_tile_rows_compute_the_convolution(rows_outer, block_rows):
    # 13 output rows: 7 rows of tiles of 2, the last cut by the edge, in blocks of 2 or 3
    # rows (the last block of one row); F(2x2): F(4x4) takes seconds more to compile
    n, c, h, w, k, m = 1, 16, 13, 11, 32, 2
    data = te.placeholder((n, c // 8, h, w, 8), name="data")
    weight = te.placeholder((m + 2, m + 2, k // 16, c, 16), name="weight")
    conv = conv2d_winograd_nchwc(data, weight, m, (1, 1, 1, 1))
    s = te.create_schedule(conv.op)
    schedule_winograd(s, conv, conv, 3, 1, 1, rows_outer, block_rows)
    f = compiler.build(s, [data, weight, conv])
    x, g = rng.standard_normal((n, c, h, w)), rng.standard_normal((k, c, 3, 3))
    out = np.zeros([int(d) for d in conv.shape], "float32")
    f(pack(x.astype("float32"), 8), winograd_weight_transform(g, m, 16), out)
    want = conv_ref(x, g, (1, 1), (1, 1, 1, 1), (1, 1))
    np.testing.assert_allclose(unpack(out), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@pytest.mark.parametrize("target", ["llvm -mcpu=haswell", "llvm -mcpu=skylake-avx512"])
def test_it_compiles_for_other_x86_cpus(target):
    lanes = compiler.Target(target).vector_lanes
    m = winograd_tile_size((3, 3), (1, 1), (1, 1), (28, 28), (32, 32), target)
    assert m == (4 if lanes == 16 else 2)  # F(4x4)'s transform needs AVX-512's registers
    f, _ = build(1, 32, 28, 28, 32, m, (1, 1, 1, 1), lanes, lanes, target=target)
    assert "vfmadd" in f.get_source("asm")
    # the transforms' zero entries add nothing: no product by 0 (nor by 1) is left
    ir = f.get_source("ir")
    assert f"*x{lanes}(0.0f)" not in ir and f"*x{lanes}(1.0f)" not in ir
    assert f"x{lanes}(-0.0f)" not in ir


def test_the_rule_runs_3x3_stride_1_layers_by_winograd_from_14x14_up():
    def m(kernel=(3, 3), stride=(1, 1), out=(56, 56), channels=(64, 64)):
        return winograd_tile_size(kernel, stride, (1, 1), out, channels,
                                  "llvm -mcpu=skylake-avx512")
    assert (m(), m(out=(28, 28)), m(out=(14, 14)), m(out=(7, 7))) == (4, 4, 2, None)
    assert m(kernel=(1, 1)) is None and m(stride=(2, 2)) is None
    assert m(channels=(3, 64)) is None  # an image's channels: the transforms would dominate


def test_bad_weights_name_the_operator_and_the_shapes():
    data = te.placeholder((1, 2, 9, 9, 8), name="data")
    with pytest.raises(OpError, match=r"conv2d_winograd: weight of shape \(4, 4, 2, 8, 8\)"):
        conv2d_winograd_nchwc(data, te.placeholder((4, 4, 2, 8, 8), name="w"), 2)
    with pytest.raises(OpError, match="tile_size must be one of"):
        conv2d_winograd_nchwc(data, te.placeholder((5, 5, 2, 16, 8), name="w"), 3)
