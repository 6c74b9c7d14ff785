"""Configs of a tunable matmul template build to native code that matches numpy: every
knob kind (divisor, power-of-two and candidate splits with tails, reorder, annotate,
plain knob) applied the way a real template applies them."""
import numpy as np
import pytest

import compiler
import search_spaces
from compiler import te
from search_spaces import ApplyConfig, instantiate, template

SHAPE = (64, 48, 32)  # M, N, K


@template("build_test_matmul")
def matmul(cfg, M: int, N: int, K: int):
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    cfg.define_split("tile_i", i, max_factor=16)
    cfg.define_split("tile_j", j, policy="power2", max_factor=32)
    cfg.define_split("tile_k", k, policy="candidate",
                     candidate=[[-1, 1], [-1, 4], [-1, 6], [-1, 8]])
    io, ii = cfg["tile_i"].apply(s, C, i)
    jo, ji = cfg["tile_j"].apply(s, C, j)
    ko, ki = cfg["tile_k"].apply(s, C, k)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    cfg.define_reorder("order", [ko, ii, ki])
    cfg["order"].apply(s, C, [ko, ii, ki])
    cfg.define_annotate("ann", [ii, ji], policy="try_unroll_vec")
    cfg["ann"].apply(s, C, [ii, ji])
    cfg.define_knob("parallel", [False, True])
    if cfg["parallel"].val:
        s[C].parallel(io)
    return s, [A, B, C]


def check(s, args):
    M, N, K = SHAPE
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    c = np.zeros((M, N), dtype=np.float32)
    compiler.build(s, args)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_the_space_has_every_kind_of_knob():
    sp = search_spaces.space("build_test_matmul", *SHAPE)
    assert [len(k) for k in sp.space_map.values()] == [5, 6, 4, 6, 6, 2]


@pytest.mark.slow
@pytest.mark.parametrize("config", search_spaces.space("build_test_matmul", *SHAPE)
                         .sample(30, seed=2024), ids=lambda c: f"#{c.index}")
def test_sampled_configs_build_and_match_numpy(config):
    check(*instantiate("build_test_matmul", *SHAPE, config=config))


def test_the_fallback_builds_and_matches_numpy():
    fb = search_spaces.space("build_test_matmul", *SHAPE).fallback()
    # one vector of the host's (it runs the kernel): a power of two under 32, as tile_j's
    lanes = compiler.Target.resolve().vector_lanes
    assert fb.to_json()["knobs"]["tile_j"] == [-1, lanes]
    check(*instantiate("build_test_matmul", *SHAPE))


def test_a_config_applied_by_context_builds_and_matches_numpy():
    sp = search_spaces.space("build_test_matmul", *SHAPE)
    with ApplyConfig(sp.get(len(sp) - 1)):
        check(*instantiate("build_test_matmul", *SHAPE))
