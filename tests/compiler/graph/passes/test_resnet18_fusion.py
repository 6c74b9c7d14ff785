"""Issue 17's acceptance on ResNet-18 itself (tests/compiler/resnet_onnx.py, the layer
structure of torchvision's, on a 64x64 image): built untuned at opt_level 2 and 3 it
matches ONNX Runtime, and its profile shows each of its 20 convolutions as one kernel
with its batch norm (a multiply and an add, or only the add once FoldScaleAxis folded
the scale into the weights), its relu and its residual add."""
from __future__ import annotations

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

from resnet_onnx import resnet18  # noqa: E402

from compiler import graph  # noqa: E402
from compiler.frontend import from_onnx  # noqa: E402
from compiler.transform.pass_infra import PassContext  # noqa: E402

# Each convolution's kernel in order: (residual add, relu) of the stem, then per stage
# the blocks' convolutions (conv1: relu; the 1x1 shortcut: bn only; conv2: add + relu).
STEM = [(False, True)]
FIRST_BLOCK = [(False, True), (True, True)]
DOWN_BLOCK = [(False, True), (False, False), (True, True)]
EXPECTED = STEM + FIRST_BLOCK * 2 + (DOWN_BLOCK + FIRST_BLOCK) * 3


@pytest.fixture(scope="module")
def model_and_expected():
    """The model, an input and ONNX Runtime's output, made once for both opt levels."""
    m = resnet18(size=64)
    x = np.random.default_rng(0).standard_normal((1, 3, 64, 64)).astype("float32")
    want, = ort.InferenceSession(m.SerializeToString(),
                                 providers=["CPUExecutionProvider"]).run(None, {"input": x})
    return m, x, want


@pytest.mark.parametrize("opt_level", [2, 3])
def test_each_of_resnet18s_20_convolutions_is_one_kernel_with_its_bn_relu_and_add(
        model_and_expected, opt_level):
    m, x, want = model_and_expected
    mod, params = from_onnx(m)
    with PassContext(opt_level=opt_level):
        lib = graph.build(mod, params=params)
    got, = lib.run(input=x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
    profile = lib.profile(repeat=1)
    rows = [r for r in profile if "nn.conv2d" in r["ops"]]
    assert len(rows) == 20 == len(EXPECTED)
    bn = ["multiply", "add"] if opt_level == 2 else ["add"]  # scale folded at opt_level 3
    for row, (residual, relu) in zip(rows, EXPECTED):
        assert row["ops"] == ["nn.conv2d", *bn, *(["add"] if residual else []),
                              *(["nn.relu"] if relu else [])], row
        assert row["template"] and row["seconds"] > 0
    assert sum(r["ops"].count("nn.conv2d") for r in profile) == 20  # no kernel holds two
