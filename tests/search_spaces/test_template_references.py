"""Template numpy references (Template.reference_outputs): every registered template's
compiled output matches its own reference on sampled configs and odd shapes; a template
without one says so."""
import numpy as np
import pytest

import compiler
import search_spaces
from compiler import te
from search_spaces import SpaceError, template

CASES = [
    ("matmul", (7, 13, 5)),
    ("matmul", (13, 7, 9, "float64")),
    ("dense", (7, 13, 11)),
    ("dense_bias_relu", (7, 13, 11)),
    ("dense_pack", (7, 13, 11, 13)),
    ("dense_pack", (1, 40, 37, 8)),
    ("batch_matmul", (3, 7, 13, 5)),
    ("conv2d_nchw", (1, 3, 7, 7, 4, 3, 3)),
    ("conv2d_nchw", (2, 5, 13, 7, 6, 3, 3, 2, 1)),
    ("conv2d_nchw", (1, 4, 13, 13, 3, 5, 2, 2, 2)),
    ("conv2d_nchw_packed", (2, 6, 13, 7, 8, 3, 3, 2, 1)),
    ("depthwise_conv2d_nchw", (1, 3, 7, 7, 3, 3)),
    ("depthwise_conv2d_nchw", (2, 5, 13, 7, 3, 3, 2, 1)),
    ("conv2d_nchwc", (1, 16, 13, 13, 16, 3, 3, 1, 1, 16, 16)),
    ("conv2d_nchwc", (1, 24, 37, 37, 40, 3, 3, 2, 1, 8, 8)),
    ("conv2d_nchwc", (1, 3, 23, 23, 16, 7, 7, 2, 3, 3, 16)),
    ("conv2d_nchwc", (1, 8, 7, 7, 16, 5, 5, 1, 2, 8, 16)),
    ("conv2d_nchwc", (2, 16, 13, 7, 8, 1, 1, 2, 0, 16, 8)),
    ("depthwise_conv2d_nchwc", (1, 16, 13, 13, 3, 3, 1, 1, 16)),
    ("depthwise_conv2d_nchwc", (1, 24, 37, 37, 3, 3, 2, 1, 8)),
    ("blur", (7, 13)),
    ("blur", (13, 37, False)),
    ("softmax", ((7, 37),)),
    ("softmax", ((2, 13, 1000),)),
    ("log_softmax", ((13, 7, 64),)),
    ("layer_norm", ((7, 13, 37), 2, 1e-5)),
    ("layer_norm", ((2, 7, 13), 1, 1e-3)),
    ("layer_norm", ((37, 768), 1, 1e-5)),
]


@template("test_no_reference_add")
def no_reference_add(cfg, n: int):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    return te.create_schedule(B.op), [A, B]


def _two_outputs_reference(inputs, n):
    (a,) = inputs
    return a + 1, a * 2


@template("test_two_outputs_reference", reference=_two_outputs_reference)
def two_outputs(cfg, n: int):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((n,), lambda i: A[i] * 2.0, name="C")
    return te.create_schedule([B.op, C.op]), [A, B, C]


def _shape(tensor):
    return [d.value for d in tensor.shape]


@pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")
@pytest.mark.parametrize("name,args", CASES, ids=lambda c: str(c).replace(" ", ""))
def test_compiled_output_matches_the_reference(name, args):
    tmpl = search_spaces.get_template(name)
    bound = tmpl.bind(args)
    space = search_spaces.space(name, *args)
    seed = len(name) + sum(a for a in args if isinstance(a, int))
    rng = np.random.default_rng(seed)
    for cfg in [space.fallback()] + space.sample(3, seed=seed):
        s, tensors = search_spaces.instantiate(name, *args, config=cfg)
        f = compiler.build(s, tensors)
        inputs = [rng.uniform(-1, 1, _shape(t)).astype(t.dtype) for t in tensors[:-1]]
        out = np.full(_shape(tensors[-1]), np.nan, tensors[-1].dtype)
        f(*inputs, out)
        (expected,) = tmpl.reference_outputs(bound, inputs)
        assert expected.shape == out.shape and expected.dtype == out.dtype
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4, err_msg=str(cfg))


def test_conv2d_reference_on_a_resnet_layer():
    tmpl = search_spaces.get_template("conv2d_nchw")
    rng = np.random.default_rng(0)
    data = rng.uniform(-1, 1, (1, 64, 56, 56)).astype("float32")
    kernel = rng.uniform(-1, 1, (64, 64, 3, 3)).astype("float32")
    (out,) = tmpl.reference_outputs(tmpl.bind((1, 64, 56, 56, 64, 3, 3, 1, 1)), [data, kernel])
    assert out.shape == (1, 64, 56, 56)
    padded = np.pad(data.astype("float64"), ((0, 0), (0, 0), (1, 1), (1, 1)))
    for k, y, x in [(0, 0, 0), (17, 55, 3), (63, 30, 55)]:
        expected = np.sum(padded[0, :, y:y + 3, x:x + 3] * kernel[k])
        np.testing.assert_allclose(out[0, k, y, x], expected, rtol=1e-4, atol=1e-4)


def test_several_outputs_come_back_as_a_list():
    tmpl = search_spaces.get_template("test_two_outputs_reference")
    a = np.arange(4, dtype="float32")
    b, c = tmpl.reference_outputs(tmpl.bind((4,)), [a])
    np.testing.assert_array_equal(b, a + 1)
    np.testing.assert_array_equal(c, a * 2)


def test_single_output_comes_back_as_a_list_of_one():
    tmpl = search_spaces.get_template("matmul")
    a, b = np.ones((2, 3), "float32"), np.ones((3, 4), "float32")
    outputs = tmpl.reference_outputs(tmpl.bind((2, 4, 3)), [a, b])
    assert isinstance(outputs, list) and len(outputs) == 1
    np.testing.assert_array_equal(outputs[0], np.full((2, 4), 3, "float32"))


def test_a_template_without_a_reference_is_a_space_error():
    tmpl = search_spaces.get_template("test_no_reference_add")
    assert tmpl.reference is None
    with pytest.raises(SpaceError, match="test_no_reference_add"):
        tmpl.reference_outputs(tmpl.bind((4,)), [np.zeros(4, "float32")])


def test_a_reference_that_is_not_callable_is_a_space_error():
    with pytest.raises(SpaceError, match="test_bad_reference.*reference"):
        template("test_bad_reference", reference="numpy.add")


def test_every_registered_operator_template_has_a_reference():
    for name in ("matmul", "dense", "dense_bias_relu", "dense_pack", "batch_matmul",
                 "conv2d_nchw", "conv2d_nchw_packed", "depthwise_conv2d_nchw", "conv2d_nchwc",
                 "depthwise_conv2d_nchwc", "softmax", "log_softmax", "layer_norm"):
        assert callable(search_spaces.get_template(name).reference), name
