"""tuner/verify.py: the checks that the runner and `autosched bench` run on a candidate's
outputs, in this process on real arrays and a real build."""
from __future__ import annotations

import numpy as np
import pytest

import misbehaving_templates  # noqa: F401  (registers test_plain_reference)
from compiler import te
from tuner import Task
from tuner.verify import RTOL, expected_outputs, mismatch, random_inputs, unwritten


def test_random_inputs_are_seeded_and_fit_their_dtype():
    tensors = [te.placeholder((3, 4), dtype=d, name=f"x_{d}")
               for d in ("float32", "float64", "int32", "bool")]
    first, again, other = (random_inputs(tensors), random_inputs(tensors),
                           random_inputs(tensors, seed=1))
    assert [a.shape for a in first] == [(3, 4)] * 4
    assert [a.dtype for a in first] == [np.dtype(d) for d in ("float32", "float64", "int32",
                                                              "bool")]
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    assert not np.array_equal(first[0], other[0])
    assert np.all((-1 <= first[0]) & (first[0] < 1))
    assert np.all((-8 <= first[2]) & (first[2] < 8))


def test_an_unwritten_output_is_wrong_everywhere():
    floats = unwritten(te.placeholder((2, 3), name="f"))
    ints = unwritten(te.placeholder((4,), dtype="int8", name="i"))
    bools = unwritten(te.placeholder((2,), dtype="bool", name="b"))
    assert floats.shape == (2, 3) and floats.dtype == np.float32 and np.isnan(floats).all()
    assert (ints == np.iinfo(np.int8).min).all()
    assert bools.dtype == np.bool_ and bools.all()
    assert mismatch(floats, np.zeros((2, 3), np.float32)) is not None


def test_expected_outputs_come_from_the_reference_or_the_plain_compute():
    matmul = Task("matmul", (8, 4, 6))
    a, b = random_inputs(matmul.tensors()[0])
    want, = expected_outputs(matmul, [a, b])
    np.testing.assert_allclose(want, a.astype("float64") @ b, rtol=1e-6)

    plain = Task("test_plain_reference", (100,))  # no numpy reference: built unscheduled
    x, = random_inputs(plain.tensors()[0])
    got, = expected_outputs(plain, [x])
    np.testing.assert_allclose(got, np.exp(x) + 1, rtol=1e-5)


def test_mismatch_allows_float_rounding_and_names_the_first_difference():
    want = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    assert mismatch(want.copy(), want) is None
    assert mismatch(want * (1 + RTOL / 10), want) is None  # a sum in another order
    got = want.copy()
    got[1, 2] += 1.0
    got[2, 0] += 1.0
    problem = mismatch(got, want)
    assert problem.startswith("2 of 12 elements differ; first at (1, 2)")
    nan = want.copy()
    nan[0, 1] = np.nan  # an element the kernel never wrote
    assert mismatch(nan, want).startswith("1 of 12 elements differ; first at (0, 1)")


def test_mismatch_of_integers_is_exact():
    want = np.arange(5, dtype=np.int32)
    assert mismatch(want.copy(), want) is None
    got = want.copy()
    got[4] = 5
    assert mismatch(got, want) == "1 of 5 elements differ; first at (4,): got 5, expected 4"


@pytest.mark.parametrize("bad", [1e-2, -1e-2])
def test_mismatch_scales_its_tolerance_to_the_largest_expected_value(bad):
    want = np.array([1000.0, 0.0], np.float32)
    assert mismatch(want + np.array([0.5, 0.5], np.float32), want) is None
    assert mismatch(want * (1 + bad), want) is not None
