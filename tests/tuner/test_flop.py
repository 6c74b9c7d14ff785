"""compute_flop (tuner/flop.py): float operations per operator, counted from the tensor
expressions, independent of the schedule."""
import pytest

import search_spaces
from compiler import ops, te
from tuner.flop import compute_flop, work_unit


def _template_tensors(name, *args):
    _, tensors = search_spaces.instantiate(name, *args)
    return tensors


def test_plain_matmul_is_two_m_n_k():
    M, N, K = 13, 7, 29
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    assert compute_flop([C]) == 2 * M * N * K


@pytest.mark.parametrize("config", ["fallback", "sampled"])
def test_matmul_template_is_two_m_n_k_whatever_the_config(config):
    M, N, K = 64, 48, 32
    space = search_spaces.space("matmul", M, N, K)
    cfg = space.fallback() if config == "fallback" else space.sample(1, seed=3)[0]
    _, tensors = search_spaces.instantiate("matmul", M, N, K, config=cfg)
    assert compute_flop(tensors[-1:]) == 2 * M * N * K
    assert compute_flop(tensors) == 2 * M * N * K  # placeholders count 0


def test_batch_matmul_template():
    assert compute_flop(_template_tensors("batch_matmul", 3, 16, 8, 4)[-1:]) == 2 * 3 * 16 * 8 * 4


def test_dense_bias_relu_adds_the_bias_and_the_relu_per_element():
    M, N, K = 16, 8, 32
    tensors = _template_tensors("dense_bias_relu", M, N, K)
    assert compute_flop(tensors[-1:]) == 2 * M * N * K + 2 * M * N


def test_conv2d_template_counts_nothing_for_the_padding():
    tensors = _template_tensors("conv2d_nchw", 1, 64, 56, 56, 64, 3, 3, 1, 1)
    assert compute_flop(tensors[-1:]) == 2 * 64 * 56 * 56 * 64 * 9


def test_strided_conv2d_counts_its_output_elements():
    data = te.placeholder((2, 3, 13, 13), name="data")
    kernel = te.placeholder((5, 3, 3, 3), name="kernel")
    out = ops.conv2d_nchw(data, kernel, stride=2, padding=1)  # 7 x 7 output
    assert compute_flop([out]) == 2 * 2 * 5 * 7 * 7 * 3 * 9


def test_depthwise_conv2d_template():
    tensors = _template_tensors("depthwise_conv2d_nchw", 1, 32, 14, 14, 3, 3, 1, 1)
    assert compute_flop(tensors[-1:]) == 2 * 32 * 14 * 14 * 9


def test_elementwise_exp_is_one_per_element():
    A = te.placeholder((7, 13), name="A")
    B = te.compute((7, 13), lambda i, j: te.exp(A[i, j]), name="B")
    assert compute_flop([B]) == 7 * 13


def test_a_chain_counts_each_stage_once():
    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] * 2.0 + 1.0, name="B")  # 2 per element
    C = te.compute((10,), lambda i: B[i] - B[i] / 3.0, name="C")  # 2 per element
    D = te.compute((10,), lambda i: te.exp(C[i]) + B[i], name="D")  # 2 per element
    assert compute_flop([D, C]) == 60


def test_integer_arithmetic_and_casts_count_nothing():
    A = te.placeholder((8,), name="A", dtype="int32")
    B = te.compute((8,), lambda i: A[i] * 3 + i, name="B")
    C = te.compute((8,), lambda i: B[i].astype("float32"), name="C")
    assert compute_flop([C]) == 0


def test_select_counts_float_comparisons_and_the_costlier_branch():
    A = te.placeholder((6,), name="A")
    B = te.compute((6,), lambda i: te.if_then_else(A[i] > 0.0, A[i] * A[i] + 1.0, A[i]),
                   name="B")
    assert compute_flop([B]) == 6 * (1 + 2)


def test_max_reduction_counts_one_combine_per_point():
    A = te.placeholder((4, 9), name="A")
    k = te.reduce_axis((0, 9), name="k")
    B = te.compute((4,), lambda i: te.max(A[i, k], axis=k), name="B")
    assert compute_flop([B]) == 4 * 9


def test_a_symbolic_shape_is_a_value_error_naming_the_tensor():
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    B = te.compute((n, 4), lambda i, j: A[i, j] + 1.0, name="B_symbolic")
    with pytest.raises(ValueError, match="B_symbolic"):
        compute_flop([B])


def test_a_symbolic_reduce_extent_is_a_value_error_naming_the_tensor():
    n = te.var("n")
    A = te.placeholder((4, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="B_rowsum")
    with pytest.raises(ValueError, match="B_rowsum"):
        compute_flop([B])


def test_int8_kernels_count_two_operations_per_multiply_add():
    """te.dot_u8s8 is four multiply-adds: an int8 convolution and dense count as the
    float ones of their shapes do, the padding stage and the word assembly nothing."""
    from compiler.ops.conv2d_nchwc_int8 import conv2d_nchwc_int8
    from compiler.ops.dense_int8 import dense_int8
    data = te.placeholder((1, 2, 13, 13, 16), name="data", dtype="uint8")
    kernel = te.placeholder((3, 2, 3, 3, 4, 16), name="kernel", dtype="int32")
    out = conv2d_nchwc_int8(data, kernel, 2, 1)
    assert compute_flop([out]) == 2 * (3 * 16) * 7 * 7 * 32 * 9
    rows = te.placeholder((7, 36), name="rows", dtype="uint8")
    words = te.placeholder((2, 9, 16), name="words", dtype="int32")
    assert compute_flop([dense_int8(rows, words)]) == 2 * 7 * 32 * 36


def test_int8_kernels_are_rated_in_gops_and_float_ones_in_gflops():
    from compiler.ops.conv2d_nchwc_int8 import (conv2d_nchwc_int8,
                                              depthwise_conv2d_nchwc_int8)
    data = te.placeholder((1, 2, 13, 13, 16), name="data", dtype="uint8")
    kernel = te.placeholder((3, 2, 3, 3, 4, 16), name="kernel", dtype="int32")
    assert work_unit([conv2d_nchwc_int8(data, kernel, 2, 1)]) == "GOPS"
    weights = te.placeholder((2, 1, 3, 3, 1, 16), name="weights", dtype="int8")
    depthwise = depthwise_conv2d_nchwc_int8(data, weights, 1, 1, 1, 7)
    assert work_unit([depthwise]) == "GOPS"
    assert compute_flop([depthwise]) == 2 * 32 * 13 * 13 * 9
    a = te.placeholder((7, 13), name="a")
    b = te.placeholder((13, 37), name="b")
    k = te.reduce_axis((0, 13), name="k")
    c = te.compute((7, 37), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="c")
    assert work_unit([c]) == "GFLOPS"
