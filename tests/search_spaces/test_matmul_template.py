"""The `matmul` template: every sampled point builds and matches numpy; the space is big
enough to tune; the fallback is a sensible point."""
import numpy as np
import pytest

import compiler
import search_spaces

SHAPES = [(37, 29, 13), (64, 48, 32), (7, 13, 1000), (16, 128, 9)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_sampled_configs_match_numpy(shape):
    M, N, K = shape
    space = search_spaces.space("matmul", M, N, K)
    rng = np.random.default_rng(sum(shape))
    a = rng.random((M, K), dtype="float32")
    b = rng.random((K, N), dtype="float32")
    expected = a.astype("float64") @ b
    configs = space.sample(8, seed=sum(shape)) + [space.fallback()]
    for cfg in configs:
        s, args = search_spaces.instantiate("matmul", M, N, K, config=cfg)
        f = compiler.build(s, args)
        c = np.full((M, N), np.nan, "float32")
        f(a, b, c)
        np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-4, err_msg=str(cfg))


def test_space_size_for_1024_cubed():
    assert len(search_spaces.space("matmul", 1024, 1024, 1024)) >= 10 ** 4


@pytest.mark.parametrize("target, rows, columns", [
    ("llvm -mcpu=skylake-avx512", 4, 64),  # 4 x 4 zmm: 16 of the 32 registers
    ("llvm -mcpu=haswell", 4, 16),         # 4 x 2 ymm: 8 of the 16
])
def test_fallback_uses_register_tiles(target, rows, columns):
    """The fallback's register tile is the target's (compiler.ops.register_tile: the
    fastest measured, half the registers in accumulators, square)."""
    cfg = search_spaces.space("matmul", 1024, 1024, 1024, target=target).fallback()
    assert cfg["tile_y"].size[-1] == columns and cfg["tile_x"].size[-1] == rows
    assert cfg["pack_b"].val == 1 and cfg["fuse_parallel"].val == 2


def test_default_context_gives_the_fallback():
    s, args = search_spaces.instantiate("matmul", 64, 64, 64)
    assert [t.name for t in args] == ["A", "B", "C"]
