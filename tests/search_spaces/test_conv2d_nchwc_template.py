"""The packed convolution templates (search_spaces/conv2d_nchwc.py): the fallback config
sets compiler.ops' default choices of the one packed schedule, on an AVX2 and an AVX-512
target, and that untuned schedule computes the convolution with a tail; its register
tile fits the target's registers; configs that take
every value of the on/off knobs, with random register tiles and reduction tiles, compute
what numpy does on odd shapes, alone and with a tail in the packed layout."""
from __future__ import annotations

import itertools
import random
import re

import numpy as np
import pytest

import compiler
import search_spaces
from compiler import Target, te
from compiler.ops.conv2d_nchwc import (DEPTHWISE_PAD_STAGE, default_choices,
                                       schedule_conv2d_nchwc as ops_schedule)
from compiler.ops.register_tile import default_register_tile, register_tiles
from search_spaces.conv2d_nchwc import choices_of, schedule_conv2d_nchwc

CONV = [(1, 16, 13, 13, 16, 3, 3, 1, 1, 16, 16),
        (2, 24, 37, 37, 40, 3, 3, 2, 1, 8, 8),
        (1, 8, 7, 7, 16, 5, 5, 1, 2, 8, 16),
        (1, 16, 13, 7, 8, 1, 1, 2, 0, 16, 8),
        (1, 3, 23, 23, 16, 7, 7, 2, 3, 3, 16)]
DEPTHWISE = [(1, 16, 13, 13, 3, 3, 1, 1, 16),
             (1, 24, 37, 37, 3, 3, 2, 1, 8),
             (2, 8, 7, 13, 5, 5, 1, 2, 8),
             (1, 16, 13, 13, 1, 1, 2, 0, 16)]
CASES = [("conv2d_nchwc", a) for a in CONV] + [("depthwise_conv2d_nchwc", a) for a in DEPTHWISE]


def _ids(case):
    return f"{case[0]}{case[1]}".replace(" ", "")


def _with_tail(name, args):
    """The template's computation and an elementwise tail over it in the packed layout,
    as a graph kernel has it: relu(conv + bias) * 0.5. Returns (conv, out, tensors)."""
    s, (data, kernel, conv) = search_spaces.instantiate(name, *args)
    _, kb, _, _, b = (int(d) for d in conv.shape)
    bias = te.placeholder((1, kb, 1, 1, b), name="bias")
    added = te.compute(conv.shape, lambda n, c, y, x, v: conv[n, c, y, x, v]
                       + bias[0, c, 0, 0, v], name="add")
    out = te.compute(conv.shape, lambda *i: te.max(added[i], 0.0) * 0.5, name="relu")
    return conv, out, [data, kernel, bias, out]


@pytest.mark.parametrize("spec", ["llvm -mcpu=haswell", "llvm -mcpu=skylake-avx512"])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_the_fallback_sets_compiler_ops_default_choices(case, spec):
    """One schedule: the template's fallback config is the untuned kernel's choices."""
    name, args = case
    target = Target(spec)
    space = search_spaces.space(name, *args, target=target)
    with target:
        s, (data, kernel, out) = search_spaces.instantiate(name, *args,
                                                           config=space.fallback())
    window = tuple(args[4:6]) if name.startswith("depthwise") else None
    in_blocks = int(data.shape[1])
    assert choices_of(space.fallback(), window is not None) == \
        default_choices(target, out.shape, in_blocks, window)


@pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")
@pytest.mark.parametrize("case", CASES[::2], ids=_ids)
def test_the_untuned_schedule_computes_the_convolution_and_its_tail(case):
    name, args = case
    tmpl = search_spaces.get_template(name)
    rng = np.random.default_rng(sum(args))
    conv, out, tensors = _with_tail(name, args)
    data, kernel, bias = [rng.uniform(-1, 1, [int(d) for d in t.shape]).astype("float32")
                          for t in tensors[:3]]
    (want_conv,) = tmpl.reference_outputs(tmpl.bind(args), [data, kernel])
    got = np.full(want_conv.shape, np.nan, "float32")
    compiler.build(ops_schedule(out, conv), tensors)(data, kernel, bias, got)
    np.testing.assert_allclose(got, np.maximum(want_conv + bias, 0.0) * 0.5, rtol=1e-4,
                               atol=1e-4)


@pytest.mark.parametrize("spec, registers", [("llvm -mcpu=haswell", 16),
                                             ("llvm -mcpu=skylake-avx512", 32)])
@pytest.mark.parametrize("out_shape", [(1, 4, 56, 56, 16), (1, 32, 7, 7, 16), (1, 8, 28, 28, 8),
                                       (1, 3, 13, 37, 16), (1, 1, 7, 1, 8)])
def test_register_tiles_fit_the_target_and_the_fallback_divides_the_rows(spec, registers,
                                                                       out_shape):
    target = Target(spec)
    _, blocks, oh, ow, block = out_shape
    vectors = -(-block // target.vector_lanes)
    for window in (None, (3, 3)):
        tiles = register_tiles(target, out_shape, window)
        assert tiles and all(t.vectors == vectors for t in tiles)
        held = 1 if window is None else 9  # weight vectors of a block kept in registers
        # and every tile that fits is there, rows, then columns, then blocks
        operands = 1 if window is None else 3
        every = [(r, c, b) for r in range(1, min(oh, 4) + 1) for c in range(1, ow + 1)
                 for b in ([1] if window else [d for d in range(1, blocks + 1) if blocks % d == 0])
                 if r * c * b * vectors + b * vectors * held + operands <= registers]
        assert [(t.rows, t.cols, t.blocks) for t in tiles] == (every or [(1, 1, 1)])
        fits = [t.rows * t.cols * t.blocks * vectors + t.blocks * vectors * held + 1
                <= registers and blocks % t.blocks == 0 for t in tiles]
        # a 3x3 depthwise window of two-vector blocks cannot fit 16 registers
        assert all(fits) or (window and vectors * 9 + 2 > registers and len(tiles) == 1)
        assert window is None or {t.blocks for t in tiles} == {1}
        best = default_register_tile(target, out_shape, window,
                                     pad_stage=window is None or DEPTHWISE_PAD_STAGE)
        assert best in tiles and oh % best.rows == 0
        assert window is None or ow % best.cols == 0
        # two weight vectors per broadcast, or the nearest the channels allow
        assert abs(best.blocks * best.vectors - 2) == min(abs(t.blocks * t.vectors - 2)
                                                           for t in tiles)
        cfg = search_spaces.space("depthwise_conv2d_nchwc" if window else "conv2d_nchwc",
                                  *_args_of(out_shape, window), target=target).fallback()
        assert cfg["register_tile"].val == f"{best.rows}x{best.cols}x{best.blocks}"


def _args_of(out_shape, window):
    """Template arguments of a 1x1 convolution, or a depthwise `window` one padded to
    keep its size, with output `out_shape`."""
    n, blocks, oh, ow, block = out_shape
    if window:
        return (n, blocks * block, oh, ow, *window, 1, window[0] // 2, block)
    return (n, 16, oh, ow, blocks * block, 1, 1, 1, 0, 16, block)


def test_on_avx2_one_broadcast_feeds_several_channel_blocks():
    """16 ymm registers: 14 columns of one block would leave no room; the fallback holds
    fewer columns of several blocks, as MLAS's AVX2 kernels do."""
    tile = default_register_tile(Target("llvm -mcpu=haswell"), (1, 4, 56, 56, 8))
    assert tile.blocks > 1 and tile.registers <= 16


@pytest.mark.parametrize("target, registers", [("llvm -mcpu=haswell", 16),
                                               ("llvm -mcpu=skylake-avx512", 32)])
def test_of_one_or_three_blocks_the_fallback_takes_three(target, registers):
    """24 channels in blocks of 8 (MobileNetV2's): one block and three are equally far
    from two weight vectors; three measured faster (WEIGHT_VECTORS)."""
    for out_shape in [(1, 3, 56, 56, 8), (1, 9, 56, 56, 8)]:
        tile = default_register_tile(Target(target), out_shape)
        assert tile.blocks == 3 and tile.registers <= registers


def _configs(space, seed, count=6):
    """`count` configs that give every on/off knob each of its values (the k-th config
    sets the j-th such knob to value (k + j) mod its length), each with the register
    tile and the reduction tile drawn at random."""
    knobs = list(space.space_map.values())
    drawn = {"register_tile", "tile_ic"}
    choice = random.Random(seed)
    for k in range(count):
        flags = itertools.count()
        yield space.get(space.knob2point(
            choice.randrange(len(knob)) if knob.name in drawn else (k + next(flags)) % len(knob)
            for knob in knobs))


def test_the_on_off_knobs_shape_the_loops_as_they_say():
    args = (1, 32, 13, 13, 32, 3, 3, 1, 1, 16, 16)
    for cfg in _configs(search_spaces.space("conv2d_nchwc", *args), seed=0, count=64):
        text = str(compiler.lower(*search_spaces.instantiate("conv2d_nchwc", *args,
                                                             config=cfg)))
        assert ("unrolled (rx," in text) == bool(cfg["unroll_kw"].val), cfg
        # a channel loop of one iteration is no loop: order 2 then starts at the window
        order, outer_ic = cfg["reduction_order"].val, 2 // cfg["tile_ic"].size[-1]
        window_first = text.index("for (ry,") < text.index("for (rco")
        assert window_first == (order == 1 or (order == 2 and outer_ic == 1)), cfg
        assert ("allocate pad" in text) == bool(cfg["pad_stage"].val), cfg
        rows, _, blocks = (int(v) for v in cfg["register_tile"].val.split("x"))
        row_tiles, block_tiles = -(-13 // rows), 2 // blocks
        found = re.findall(r"parallel \(b\.[^,]+, 0, (\d+)\)", text)  # the output's
        parallel = int(found[-1]) if found else 1  # a loop of one iteration is no loop
        outer = row_tiles if cfg["rows_outer"].val else block_tiles
        assert parallel == (row_tiles * block_tiles if cfg["fuse_parallel"].val == 3
                            else outer), cfg


@pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_every_knob_combination_computes_the_convolution_and_its_tail(case):
    name, args = case
    tmpl = search_spaces.get_template(name)
    space = search_spaces.space(name, *args)
    rng = np.random.default_rng(sum(args))
    conv, out, tensors = _with_tail(name, args)
    data, kernel, bias = [rng.uniform(-1, 1, [int(d) for d in t.shape]).astype("float32")
                          for t in tensors[:3]]
    (want_conv,) = tmpl.reference_outputs(tmpl.bind(args), [data, kernel])
    want = np.maximum(want_conv + bias, 0.0) * 0.5
    for cfg in _configs(space, seed=sum(args)):
        s, alone = search_spaces.instantiate(name, *args, config=cfg)
        got = np.full(want.shape, np.nan, "float32")
        compiler.build(s, alone)(data, kernel, got)
        np.testing.assert_allclose(got, want_conv, rtol=1e-4, atol=1e-4, err_msg=str(cfg))

        s = te.create_schedule(out.op)
        schedule_conv2d_nchwc(cfg, s, conv, out)
        got = np.full(want.shape, np.nan, "float32")
        compiler.build(s, tensors)(data, kernel, bias, got)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=str(cfg))


def test_blocks_that_do_not_divide_the_channels_are_a_clear_error():
    with pytest.raises(ValueError, match="24 input channels in blocks of 16"):
        search_spaces.space("conv2d_nchwc", 1, 24, 7, 7, 16, 3, 3, 1, 1, 16, 16)
    with pytest.raises(ValueError, match="24 channels do not split into blocks of 16"):
        search_spaces.space("depthwise_conv2d_nchwc", 1, 24, 7, 7, 3, 3, 1, 1, 16)
