"""contiguous (compiler/contiguous.py): the same values in C order, whichever way the
copy is split among threads."""
from __future__ import annotations

import numpy as np
import pytest

from compiler.contiguous import PARALLEL_BYTES, contiguous


@pytest.mark.parametrize("shape, axes", [
    ((37, 1000, 16), (1, 0, 2)),     # a dense weight's panels: 2.4 MB, split
    ((7, 13, 3, 3, 16, 16), (0, 2, 4, 5, 3, 1)),  # a small convolution's blocks
    ((1000, 1000), (1, 0)),          # a transpose, 4 MB
    ((700000, 3), (1, 0)),           # an outer axis of 3 rows, 8.4 MB
])
def test_a_strided_array_is_copied_in_c_order_with_its_values(shape, axes):
    base = np.random.default_rng(0).standard_normal(shape).astype("float32")
    view = base.transpose(axes)
    got = contiguous(view)
    assert got.flags.c_contiguous and got.shape == view.shape and got.dtype == view.dtype
    assert not np.shares_memory(got, base)
    np.testing.assert_array_equal(got, view)


def test_a_contiguous_array_and_a_scalar_come_back_as_they_are():
    a = np.arange(PARALLEL_BYTES, dtype="float32")
    assert contiguous(a) is a
    scalar = contiguous(np.float32(2.5))
    assert scalar.shape == () and scalar == np.float32(2.5)
    fortran = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(contiguous(fortran), fortran)
    assert contiguous(fortran).flags.c_contiguous


def test_a_large_copy_leaves_numpys_huge_page_hint_as_it_was():
    from numpy._core import multiarray
    view = np.zeros((1000, 2000), "float32").T  # 8 MB: numpy would hint it
    for setting in (True, False):
        was = multiarray._set_madvise_hugepage(setting)
        try:
            np.testing.assert_array_equal(contiguous(view), view)
            assert multiarray._set_madvise_hugepage(setting) is setting
        finally:
            multiarray._set_madvise_hugepage(was)
