"""The fallback config (search_spaces/fallback.py, ConfigSpace.fallback): heuristics
over the shape, the template's fallback= overrides, and that it is a point of the space."""
import pytest

import search_spaces
from compiler import Target
from search_spaces import (ConfigSpace, FallbackConfig, fallback_annotate, fallback_split,
                           nearest_split, template)


# the targets pinned, so both vector widths are checked on any host (nothing is run)
AVX512 = "llvm -mcpu=skylake-avx512"   # 16 float32 lanes
AVX2 = "llvm -mcpu=haswell"             # 8 lanes
NAMES = {AVX512: "avx512", AVX2: "avx2"}

SPLITS = {
    AVX512: [
        (64, 2, (-1, 16)),       # a vector register of float32
        (8, 2, (-1, 8)),         # a short axis asks for itself
        (64, 3, (-1, 4, 16)),    # a small block above the vector
        (32, 3, (-1, 2, 16)),    # capped by what the vector leaves
        (1024, 4, (-1, 4, 4, 16)),
        (1, 3, (-1, 1, 1)),
    ],
    AVX2: [
        (64, 2, (-1, 8)),
        (4, 2, (-1, 4)),         # shorter than the vector
        (64, 3, (-1, 4, 8)),
        (16, 3, (-1, 2, 8)),     # capped by what the vector leaves
        (1024, 4, (-1, 4, 4, 8)),
        (1, 3, (-1, 1, 1)),
    ],
}


@pytest.mark.parametrize("target, extent, num_outputs, want", [
    pytest.param(target, *case, id=f"{NAMES[target]}-{case[0]}-{case[1]}")
    for target, cases in SPLITS.items() for case in cases])
def test_fallback_split_aims_at_a_vector_then_small_blocks(target, extent, num_outputs, want):
    with Target(target) as t:
        assert want[-1] <= t.vector_lanes
        assert fallback_split(extent, num_outputs) == want


@pytest.mark.parametrize("extent, num_outputs", [(64, 2), (8, 2), (32, 3), (1024, 4)])
def test_fallback_split_aims_at_the_vector_of_the_entered_target_else_the_hosts(
        extent, num_outputs):
    lanes = Target.resolve().vector_lanes
    assert fallback_split(extent, num_outputs) == fallback_split(extent, num_outputs, lanes)
    for target in SPLITS:
        with Target(target) as t:
            assert fallback_split(extent, num_outputs) == \
                fallback_split(extent, num_outputs, t.vector_lanes)


def test_nearest_split_measures_in_log_scale_and_keeps_the_first_on_ties():
    assert nearest_split([(-1, 12), (-1, 24)], (-1, 16)) == 0   # 16/12 < 24/16
    assert nearest_split([(-1, 8), (-1, 32)], (-1, 16)) == 0    # a tie


def test_fallback_annotate_vectorizes_the_innermost_only_when_offered():
    assert fallback_annotate((("none", "unroll"), ("none", "unroll", "vec"))) == ("none", "vec")
    assert fallback_annotate((("none", "unroll"), ("none", "unroll"))) == ("none", "none")


@pytest.mark.parametrize("target, tile_j", [(AVX512, [-1, 3, 16]), (AVX2, [-1, 3, 8])],
                         ids=["avx512", "avx2"])
def test_heuristic_fallbacks_differ_from_index_zero(target, tile_j):
    cs = ConfigSpace()
    with Target(target):     # a split knob aims at the vector of the target it is defined on
        cs.define_split("tile_j", 48, num_outputs=3)
    cs.define_reorder("order", ["a", "b", "c"])
    cs.define_annotate("ann", ["a", "b"], policy="try_unroll_vec")
    cs.define_knob("unroll", [0, 1])
    fb = cs.fallback()
    assert isinstance(fb, FallbackConfig) and fb.is_fallback
    assert fb.to_json()["knobs"] == {"tile_j": tile_j, "order": [0, 1, 2],
                                     "ann": ["none", "vec"], "unroll": 0}
    first = cs.get(0).to_json()["knobs"]
    assert first["tile_j"] == [-1, 1, 1] and first["ann"] == ["none", "none"]
    assert fb != cs.get(0) and fb == cs.get(fb.index)


def test_template_fallbacks_override_the_heuristics():
    cs = ConfigSpace()
    cs.define_split("tile", 64, fallback=[-1, 8])
    cs.define_reorder("order", ["a", "b"], fallback=[1, 0])
    cs.define_annotate("ann", ["a", "b"], policy="try_unroll_vec", fallback=["unroll", "none"])
    cs.define_knob("k", [0, 1, 2], fallback=2)
    assert cs.fallback().to_json()["knobs"] == {
        "tile": [-1, 8], "order": [1, 0], "ann": ["unroll", "none"], "k": 2}


def test_reorder_fallback_is_the_first_candidate_without_the_identity():
    cs = ConfigSpace()
    cs.define_reorder("order", ["a", "b", "c"], policy="candidate",
                      candidate=[[2, 0, 1], [0, 2, 1]])
    assert cs.fallback()["order"].perm == (2, 0, 1)


_seen = []


@template("fallback_test_spy")
def spy(cfg, n: int):
    cfg.define_split("tile", n)
    _seen.append(cfg)
    return None, []


def test_instantiate_without_a_context_uses_the_fallback():
    search_spaces.instantiate("fallback_test_spy", 96)
    used = _seen[-1]
    # the host's vector (96 is a multiple of any number of lanes)
    lanes = Target.resolve().vector_lanes
    assert isinstance(used, FallbackConfig) and used["tile"].size == (-1, lanes)
    assert used == search_spaces.space("fallback_test_spy", 96).fallback()
