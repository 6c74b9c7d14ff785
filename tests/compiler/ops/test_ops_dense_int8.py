"""dense_int8 (uint8 rows by int8 weight words, raw int32 sums) exact against numpy on
odd shapes (rows 7, 13, 128; K 36 to 3072), on the host and haswell's code where this
host runs it; its register tile's rows divide the data's."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import build, te
from compiler.graph.ir.op.qnn import dense_words
from compiler.ops.dense_int8 import dense_int8, dense_tile, schedule_dense_int8
from compiler.runtime.cpu_features import required_features
from compiler.target import Target


def runs_here(target: str) -> bool:
    return set(required_features(Target(target))) <= set(required_features(Target("llvm")))


@pytest.mark.parametrize("target", ["llvm", "llvm -mcpu=haswell"])
@pytest.mark.parametrize("m,k,n", [(7, 36, 32), (13, 100, 48), (128, 3072, 64)])
def test_exact_against_numpy(target, m, k, n):
    if not runs_here(target):
        pytest.skip(f"this host lacks features of {target}")
    y = Target(target).vector_lanes
    rng = np.random.default_rng(m + k)
    x = rng.integers(0, 256, (m, k)).astype(np.uint8)
    w = rng.integers(-128, 128, (n, k)).astype(np.int8)
    x.flat[:3], w.flat[:3] = 255, -128
    data = te.placeholder((m, k), name="data", dtype="uint8")
    words = te.placeholder((n // y, k // 4, y), name="words", dtype="int32")
    out = dense_int8(data, words)
    f = build(schedule_dense_int8(out, out, target), [data, words, out], target=target)
    got = np.zeros((m, n), np.int32)
    f(x, dense_words(w, y), got)
    np.testing.assert_array_equal(got, x.astype(np.int64) @ w.astype(np.int64).T)


def test_the_tile_divides_the_rows():
    for target in ("llvm", "llvm -mcpu=haswell"):
        tile = dense_tile(Target(target), 128, 48, Target(target).vector_lanes)
        assert 128 % tile.cols == 0 and tile.accumulators < Target(target).vector_registers
