"""The channel blocks come from the target (compiler/graph/ir/op/layout.py channel_blocks,
op/conv2d.py conv2d_blocks): its float32 lanes untuned (16 on AVX-512, 8 on AVX2), and
their multiples as the alternatives a log may time; a model built for
`llvm -mcpu=haswell` packs in blocks of 8 (haswell's code runs on this host too)."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import Target, graph
from compiler.frontend import from_onnx
from compiler.graph.ir.op.conv2d import Conv2dForm, conv2d_forms
from compiler.graph.ir.op.layout import channel_blocks
from compiler.transform.pass_infra import PassContext
from onnx_models import input_and_expected, residual

AVX512 = "llvm -mcpu=skylake-avx512"
HASWELL = "llvm -mcpu=haswell"
SSE = "llvm -mcpu=nehalem"


@pytest.mark.parametrize("target, channels, blocks", [
    (AVX512, 64, [16, 32, 64]), (AVX512, 48, [16]), (AVX512, 24, [8]), (AVX512, 12, []),
    (HASWELL, 64, [8, 16, 32]), (HASWELL, 24, [8]), (HASWELL, 12, [4]), (HASWELL, 6, []),
    (SSE, 16, [4, 8, 16]), (SSE, 6, [2]),
])
def test_the_blocks_are_the_targets_lanes_then_their_multiples(target, channels, blocks):
    assert channel_blocks(channels, Target(target)) == blocks


def _conv(c, k, groups=1, size=9, weight=None):
    x = graph.var("x", shape=(1, c, size, size))
    w = graph.var("w", shape=(k, c // groups, 3, 3)) if weight is None else graph.const(weight)
    fn = graph.Function([x] if weight is not None else [x, w],
                        graph.nn.conv2d(x, w, padding=1, groups=groups))
    return graph.passes.InferType()(graph.IRModule.from_expr(fn))["main"].body


@pytest.mark.parametrize("target, c, k, groups, pairs", [
    (AVX512, 32, 16, 1, [(16, 16), (32, 16)]),
    (HASWELL, 32, 16, 1, [(8, 8), (8, 16), (16, 8), (16, 16), (32, 8), (32, 16)]),
    (HASWELL, 3, 16, 1, [(3, 8), (3, 16)]),            # an image: one block of 3
    (HASWELL, 16, 16, 16, [(8, 8), (16, 16)]),         # depthwise: one block for both
    (AVX512, 16, 13, 1, []),                           # 13 output channels do not pack
])
def test_a_convolutions_forms_are_every_pair_the_untuned_first(target, c, k, groups, pairs):
    with Target(target):
        found = conv2d_forms(_conv(c, k, groups))
    assert found == [Conv2dForm(p) for p in pairs]  # weights no constant: no Winograd


@pytest.mark.parametrize("target, m", [(AVX512, 4), (HASWELL, 2)])
def test_a_3x3_convolution_on_constant_weights_has_a_winograd_form_before_each_direct(
        target, m):
    """winograd_tile_size's m (F(4x4) with 32 vector registers, F(2x2) with 16) on constant
    weights; the data block asked for comes first; a depthwise one has none."""
    weight = np.zeros((32, 16, 3, 3), "float32")
    with Target(target):
        lanes = Target(target).vector_lanes
        found = conv2d_forms(_conv(16, 32, size=28, weight=weight), data_block=16)
        depthwise = conv2d_forms(_conv(16, 16, 16, 28, np.zeros((16, 1, 3, 3), "float32")))
    pairs = list(dict.fromkeys(f.blocks for f in found))
    assert pairs[0][0] == 16 and all(b % lanes == 0 for p in pairs for b in p)
    assert found == [f for p in pairs for f in (Conv2dForm(p, m), Conv2dForm(p))]
    assert depthwise and not any(f.winograd for f in depthwise)


def test_a_residual_block_built_for_haswell_packs_in_blocks_of_8():
    """The AVX2 variant of test_alter_layout_build's residual block: 16 channels, which
    pack by 16 on this AVX-512 host, pack by 8 for haswell, and the model still
    matches ONNX Runtime (haswell's code runs here)."""
    m = residual(16, 13)
    x, want = input_and_expected(m)
    mod, params = from_onnx(m)
    with PassContext(opt_level=3):
        lib = graph.build(mod, target=HASWELL, params=params)
    np.testing.assert_allclose(lib.run(x=x)[0], want, rtol=1e-4, atol=1e-4)
    packed = [s for s in lib.plan["steps"] if s["ops"][0] == "nn.conv2d"][:2]
    assert all(s["shape"] == [1, 2, 13, 13, 8] for s in packed)
    assert all(s["info"]["workload"].endswith(", 8, 8)") for s in packed)


def test_the_channel_block_pass_config_forces_a_block_where_it_divides():
    """relay.AlterOpLayout.channel_block replaces the target's blocks (to compare them):
    16 on haswell, where the target's own are 8; the model still matches."""
    m = residual(16, 13)
    x, want = input_and_expected(m)
    mod, params = from_onnx(m)
    with PassContext(opt_level=3, config={"relay.AlterOpLayout.channel_block": 16}):
        assert channel_blocks(48, HASWELL) == [16] and channel_blocks(24, HASWELL) == [8]
        lib = graph.build(mod, target=HASWELL, params=params)
    np.testing.assert_allclose(lib.run(x=x)[0], want, rtol=1e-4, atol=1e-4)
    packed = [s for s in lib.plan["steps"] if s["ops"][0] == "nn.conv2d"][:2]
    assert all(s["shape"] == [1, 1, 13, 13, 16] for s in packed)
