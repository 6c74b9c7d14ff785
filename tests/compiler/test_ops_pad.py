"""compiler.ops.pad against numpy.pad (constant mode), and its argument errors."""
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


def test_pad_errors():
    x = te.placeholder((4, 5), name="x")
    with pytest.raises(ValueError, match=r"pad: pad_before must be 2 ints >= 0, one per axis of "
                                         r"data of shape \(4, 5\), got \(1,\)"):
        ops.pad(x, (1,))
    with pytest.raises(ValueError, match=r"pad: pad_after must be 2 ints >= 0.*\[0, -1\]"):
        ops.pad(x, (1, 1), [0, -1])
