"""compiler.ops.pad against numpy.pad (constant, edge and reflect modes), and its
argument errors."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import ops, te
from build_check import check_build, randn

pytestmark = pytest.mark.filterwarnings("error::compiler.transform.VectorizeWarning")


@pytest.mark.parametrize("shape,before,after,value", [
    ((13, 7), (1, 2), None, 0.0),
    ((2, 3, 1000), (0, 1, 3), (1, 0, 5), -1.5),
])
def test_pad(shape, before, after, value):
    x = te.placeholder(shape, name="x")
    y = ops.pad(x, before, after, value)
    a = randn(1, *shape)
    want = np.pad(a, list(zip(before, after or before)), constant_values=value)
    check_build(ops.default_schedule(y), [x, y], [a], [want], rtol=0, atol=0)


@pytest.mark.parametrize("mode", ["edge", "reflect"])
@pytest.mark.parametrize("shape,before,after", [
    ((13, 7), (1, 6), (12, 0)),
    ((2, 3, 37), (0, 2, 1), (1, 0, 36)),
])
def test_border_modes(mode, shape, before, after):
    x = te.placeholder(shape, name="x")
    y = ops.pad(x, before, after, pad_mode=mode)
    a = randn(1, *shape)
    want = np.pad(a, list(zip(before, after)), mode=mode)
    check_build(ops.default_schedule(y), [x, y], [a], [want], rtol=0, atol=0)


def test_pad_errors():
    x = te.placeholder((4, 5), name="x")
    with pytest.raises(ValueError, match=r"pad: pad_before must be 2 ints >= 0, one per axis of "
                                         r"data of shape \(4, 5\), got \(1,\)"):
        ops.pad(x, (1,))
    with pytest.raises(ValueError, match=r"pad: pad_after must be 2 ints >= 0.*\[0, -1\]"):
        ops.pad(x, (1, 1), [0, -1])
    with pytest.raises(ValueError, match=r"pad: pad_mode 'wrap' is not one of constant, "
                                         r"edge, reflect"):
        ops.pad(x, (1, 1), pad_mode="wrap")
    with pytest.raises(ValueError, match=r"pad: reflect padding \(\(0, 5\), \(0, 0\)\) must "
                                         r"be at most the extent minus one"):
        ops.pad(x, (0, 5), (0, 0), pad_mode="reflect")
