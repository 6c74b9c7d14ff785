"""The packed convolution templates (search_spaces/conv2d_nchwc.py): the fallback config
is compiler.ops.schedule_conv2d_nchwc's schedule loop for loop, alone and with an
elementwise tail; every combination of the on/off knobs, with sampled register tiles,
computes what numpy does on odd shapes, alone and with a tail in the packed layout."""
from __future__ import annotations

import itertools
import random
import re

import numpy as np
import pytest

import compiler
import search_spaces
from compiler import ops, te
from compiler.ops.conv2d_nchwc import REGISTER_COLUMNS, schedule_conv2d_nchwc as ops_schedule
from search_spaces.conv2d_nchwc import schedule_conv2d_nchwc

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


def _lowered(s, tensors) -> str:
    # the template splits the rows by tile_oh (by 1 in the fallback), compiler.ops does
    # not: the name of the outer row loop is the one difference the text may show
    return str(compiler.lower(s, tensors)).replace(".outer", "")


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


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_the_fallback_is_compiler_ops_schedule(case):
    name, args = case
    space = search_spaces.space(name, *args)
    s, tensors = search_spaces.instantiate(name, *args, config=space.fallback())
    out = tensors[-1]
    assert _lowered(s, tensors) == _lowered(ops_schedule(out, out), tensors)

    conv, out, tensors = _with_tail(name, args)
    s = te.create_schedule(out.op)
    schedule_conv2d_nchwc(space.fallback(), s, conv, out)
    assert _lowered(s, tensors) == _lowered(ops_schedule(out, conv), tensors)


@pytest.mark.parametrize("ow, inner", [(56, 14), (28, 14), (7, 7), (13, 13), (37, 1), (24, 12)])
def test_the_fallback_register_tile_is_the_widest_that_divides_the_row(ow, inner):
    cfg = search_spaces.space("conv2d_nchwc", 1, 16, 5, ow, 16, 1, 1, 1, 0, 16, 16).fallback()
    assert cfg["tile_ow"].size[-1] == inner == ops.largest_divisor(ow, REGISTER_COLUMNS)
    assert cfg["tile_oh"].size[-1] == 1
    assert (cfg["ic_outer"].val, cfg["unroll_kw"].val, cfg["fuse_parallel"].val,
            cfg["pad_stage"].val) == (1, 0, 3, 1)


def _configs(space, seed):
    """Every combination of the on/off knobs, each with register tiles drawn at random."""
    knobs = list(space.space_map.values())
    splits = [k for k, knob in enumerate(knobs) if knob.name.startswith("tile_")]
    choice = random.Random(seed)
    for flags in itertools.product(*(range(len(knob)) for k, knob in enumerate(knobs)
                                     if k not in splits)):
        flags = iter(flags)
        yield space.get(space.knob2point(
            choice.randrange(len(knob)) if k in splits else next(flags)
            for k, knob in enumerate(knobs)))


def test_the_on_off_knobs_shape_the_loops_as_they_say():
    args = (1, 32, 13, 13, 32, 3, 3, 1, 1, 16, 16)
    for cfg in _configs(search_spaces.space("conv2d_nchwc", *args), seed=0):
        text = str(compiler.lower(*search_spaces.instantiate("conv2d_nchwc", *args,
                                                             config=cfg)))
        assert ("unrolled (rx," in text) == bool(cfg["unroll_kw"].val), cfg
        assert (text.index("for (rco,") < text.index("for (ry,")) == \
            bool(cfg["ic_outer"].val), cfg
        assert ("allocate pad" in text) == bool(cfg["pad_stage"].val), cfg
        parallel = re.findall(r"parallel \([^,]+, 0, (\d+)\)", text)[-1]
        rows = 13 // cfg["tile_oh"].size[-1]
        assert int(parallel) == (2 * rows if cfg["fuse_parallel"].val == 3 else 2), cfg


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
