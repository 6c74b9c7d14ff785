"""The register rule (compiler/ops/register_tile.py) in every template's space and
fallback (compiler/ops/register_tile.py): on an AVX2 and an AVX-512 target, no
register tile of a space breaks the rule, and the fallbacks made for either target
compute numpy's answer on the host, odd shapes and splits that leave tails included."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import compiler
import search_spaces
from compiler import ops
from compiler.ops import get_const_tuple
from compiler.ops.register_tile import register_bounds

HASWELL, SKYLAKE = "llvm -mcpu=haswell", "llvm -mcpu=skylake-avx512"
TARGETS = [HASWELL, SKYLAKE]


def _gemm(k):
    return k["tile_x"], k["tile_y"]


def _convolution(rows_knob):
    def tile(k):
        rows = k[rows_knob] * (k["tile_y"] if k["acc_at"] == 1 else 1)
        return rows, k["tile_x"]
    return tile


REGISTER_TILES = {
    "matmul": _gemm, "dense": _gemm, "dense_bias_relu": _gemm, "dense_pack": _gemm,
    "batch_matmul": _gemm,
    "conv2d_nchw": _convolution("tile_f"),
    "depthwise_conv2d_nchw": _convolution("tile_c"),
    "conv2d_nchw_packed": lambda k: (k["tile_ow"], k["tile_oc"]),
    "blur": lambda k: (k["unroll_x"], k["tile_x"]),
}
"""template -> its register tile `(rows, columns)` from the knobs that size it (the inner
part of a split, a plain knob's value)."""

ODD = [
    ("matmul", (37, 29, 13)), ("matmul", (7, 13, 37)), ("matmul", (96, 40, 13)),
    ("dense", (37, 13, 7)), ("dense", (1, 1000, 13)),
    ("dense_bias_relu", (13, 37, 7)),
    ("dense_pack", (37, 40, 13, 40)), ("dense_pack", (13, 48, 7, 16)),
    ("batch_matmul", (3, 13, 37, 7)),
    ("conv2d_nchw", (1, 7, 13, 13, 13, 3, 3, 1, 1)), ("conv2d_nchw", (1, 13, 37, 7, 7, 3, 3, 2, 1)),
    ("depthwise_conv2d_nchw", (1, 13, 37, 13, 3, 3, 1, 1)),
    ("conv2d_nchw_packed", (1, 7, 13, 37, 13, 3, 3, 1, 1)),
    ("conv2d_nchw_packed", (1, 8, 13, 14, 48, 3, 3, 1, 1)),
    ("conv2d_nchw_packed", (1, 4, 9, 9, 67, 3, 3, 1, 1)),  # 67: 9 ymm for one row
    ("blur", (13, 37)),
]


def _values(knob) -> list:
    return [e.size[-1] if hasattr(e, "size") else e.val for e in knob.entities]


def _register_knobs(space) -> dict:
    """The values the knobs that size the register tile may take."""
    names = {"tile_x", "tile_y", "tile_f", "tile_c", "acc_at", "tile_ow", "tile_oc", "unroll_x"}
    return {name: _values(knob) for name, knob in space.space_map.items() if name in names}


@pytest.mark.parametrize("target", TARGETS, ids=["avx2", "avx512"])
@pytest.mark.parametrize("name, args", ODD, ids=[f"{n}{a}" for n, a in ODD])
def test_every_register_tile_of_the_space_fits(name, args, target):
    space = search_spaces.space(name, *args, target=target)
    knobs = _register_knobs(space)
    for values in itertools.product(*knobs.values()):
        rows, columns = REGISTER_TILES[name](dict(zip(knobs, values)))
        if name == "dense_pack" and rows == 1:
            continue  # the panel is the weights' layout: one row of it is all there is
        assert ops.fits(rows, columns, target), (rows, columns)


@pytest.mark.parametrize("target", TARGETS, ids=["avx2", "avx512"])
@pytest.mark.parametrize("name, args", ODD, ids=[f"{n}{a}" for n, a in ODD])
def test_the_fallbacks_made_for_either_target_match_numpy_on_the_host(name, args, target):
    template = search_spaces.get_template(name)
    fallback = search_spaces.space(name, *args, target=target).fallback()
    rows, columns = REGISTER_TILES[name]({k: (v.size[-1] if hasattr(v, "size") else v.val)
                                          for k, v in fallback.entity_map.items()})
    assert ops.fits(rows, columns, target)
    s, tensors = search_spaces.instantiate(name, *args, config=fallback, target=target)
    f = compiler.build(s, tensors)  # the host's code, whatever target sized the tiles
    rng = np.random.default_rng(sum(args))
    inputs = [rng.uniform(-1, 1, get_const_tuple(t.shape)).astype("float32")
              for t in tensors[:-1]]
    out = np.full(get_const_tuple(tensors[-1].shape), np.nan, "float32")
    f(*inputs, out)
    expected, = template.reference_outputs(template.bind(args), inputs)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target, rows, columns, fits", [
    (HASWELL, 16, 16, False),   # 16 x 2 ymm accumulators: 35 registers of 16
    (HASWELL, 4, 16, True),     # 4 x 2 + 2 + 1 = 11
    (HASWELL, 6, 16, True),     # MLAS's 6 x 2: 15
    (HASWELL, 4, 24, True),     # MLAS's 4 x 3: 16
    (SKYLAKE, 16, 16, True),    # 16 x 1 zmm: 18 of 32
    (SKYLAKE, 6, 64, True),     # 6 x 4: 29
    (SKYLAKE, 7, 64, False),    # 33
    (SKYLAKE, 4, 40, True),     # 40 floats: 5 vectors of 8, 4 x 5 + 5 + 1 = 26
    (SKYLAKE, 6, 40, False),    # 36
])
def test_the_register_rule(target, rows, columns, fits):
    assert ops.fits(rows, columns, target) is fits


def test_vector_width_cuts_a_row_into_vectors_llvm_handles():
    assert [ops.vector_width(c, 16) for c in (14, 16, 32, 64, 40, 48, 20, 29, 125)] == \
        [14, 16, 32, 64, 8, 16, 4, 29, 125]
    assert [ops.vectors(c, 16) for c in (14, 16, 64, 40, 48, 29)] == [1, 1, 4, 5, 3, 2]


@pytest.mark.parametrize("target, tile", [(SKYLAKE, (4, 64)), (HASWELL, (4, 16))])
def test_register_tile_takes_half_the_registers_in_a_square_tile(target, tile):
    assert ops.register_tile(ops.divisors(1024), ops.divisors(1024), target) == tile


@pytest.mark.parametrize("target", TARGETS, ids=["avx2", "avx512"])
@pytest.mark.parametrize("rows, columns", [(1024, 1024), (1, 1000), (56, 64), (37, 29)])
def test_register_bounds_hold_the_fallback_and_only_tiles_that_fit(target, rows, columns):
    bounds = register_bounds(ops.divisors(rows), ops.divisors(columns), target)
    r, c = bounds.fallback
    assert r <= bounds.rows and ops.fits(bounds.rows, c, target)
    assert ops.fits(bounds.rows, 1, target)  # a space keeps at least one column size


def test_a_space_keeps_the_lanes_of_its_target_for_its_heuristic_fallbacks():
    """The heuristic fallback of a split is asked for after the template ran, outside its
    target: it aims at the lanes of the target the space was built for, not the host's."""
    assert search_spaces.space("blur", 64, 64, target=HASWELL).fallback()["tile_x"].size[-1] == 8
    assert search_spaces.space("blur", 64, 64, target=SKYLAKE).fallback()["tile_x"].size[-1] == 16
