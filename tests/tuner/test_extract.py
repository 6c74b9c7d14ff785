"""tuner.extract_tasks (tuner/extract.py): the tasks of whole ONNX models and their
weights, taken from the build's own passes without lowering a kernel."""
from __future__ import annotations

import sys

import pytest

pytest.importorskip("onnx")
from resnet_onnx import resnet18  # noqa: E402
from onnx_models import mlp, mobile_block  # noqa: E402

from compiler import Target, graph  # noqa: E402
from compiler.graph.ir.op.layout import channel_blocks  # noqa: E402
from compiler.ops.conv2d_winograd import winograd_tile_size  # noqa: E402
from compiler.frontend import from_onnx  # noqa: E402
from compiler.transform.pass_infra import PassContext  # noqa: E402
from tuner import Task, extract_tasks  # noqa: E402

# ResNet-18's layers on a 64x64 image: (C, H, K, R, stride, padding) and how many of its
# kernels each one is (a 64->64 3x3 layer is 4 kernels, two of them with a residual add)
RESNET18_LAYERS = [((3, 64, 64, 7, 2, 3), 1), ((64, 16, 64, 3, 1, 1), 4),
                   ((64, 16, 128, 3, 2, 1), 1), ((64, 16, 128, 1, 2, 0), 1),
                   ((128, 8, 128, 3, 1, 1), 3), ((128, 8, 256, 3, 2, 1), 1),
                   ((128, 8, 256, 1, 2, 0), 1), ((256, 4, 256, 3, 1, 1), 3),
                   ((256, 4, 512, 3, 2, 1), 1), ((256, 4, 512, 1, 2, 0), 1),
                   ((512, 2, 512, 3, 1, 1), 3)]


@pytest.fixture(scope="module")
def resnet():
    """ResNet-18's ONNX model on a 64x64 image, written once for the module's tests
    (its random weights take a while; every test imports it afresh)."""
    return resnet18(size=64)


def winograd(C, H, K, R, stride, target="llvm") -> int | None:
    """The tile size the layer runs by Winograd with untuned on `target`, or None."""
    out = H // stride
    return winograd_tile_size((R, R), (stride,) * 2, (1, 1), (out, out), (C, K), target)


def packed_task(C, H, K, R, stride, pad, ic, oc, direct=False) -> Task:
    """The task of a packed layer in blocks (ic, oc): by Winograd where it runs so
    untuned (unless `direct`), else the direct kernel's."""
    m = winograd(C, H, K, R, stride)
    if m and not direct:
        return Task("conv2d_winograd_nchwc", (1, C, H, H, K, pad, ic, oc, m))
    return Task("conv2d_nchwc", (1, C, H, H, K, R, R, stride, pad, ic, oc))


def resnet_tasks(packed: bool) -> list[tuple[Task, int]]:
    """The tasks of resnet18(size=64) built for the host, NCHW or `packed` in the host's
    untuned blocks (channel_blocks: 16 on AVX-512, 8 on AVX2; the image's 3 channels
    one block)."""
    out = []
    for (C, H, K, R, stride, pad), n in RESNET18_LAYERS:
        args = (1, C, H, H, K, R, R, stride, pad)
        ic = 3 if C == 3 else channel_blocks(C)[0]
        out.append((packed_task(C, H, K, R, stride, pad, ic, channel_blocks(K)[0]) if packed
                    else Task("conv2d_nchw", args), n))
    # at opt_level 3 the classifier's weights are packed in panels of 40 at build time
    return [*out, (Task("dense_pack", (1, 1000, 512, 40)) if packed
                   else Task("dense", (1, 1000, 512)), 1)]


@pytest.mark.parametrize("opt_level", [2, 3])
def test_resnet18s_tasks_are_its_distinct_layers_weighted_by_their_kernels(resnet, opt_level):
    mod, params = from_onnx(resnet)
    with PassContext(opt_level=opt_level):
        tasks, weights = extract_tasks(mod, params)
    assert list(zip(tasks, weights)) == resnet_tasks(packed=opt_level == 3)
    assert sum(weights) == 21  # 20 convolutions and the classifier


def test_small_models_give_their_depthwise_pointwise_dense_and_softmax_tasks():
    mod, params = from_onnx(mobile_block())  # 13 channels: no block of 8 or 16, NCHW
    with PassContext(opt_level=3):
        tasks, weights = extract_tasks(mod, params)
    assert tasks == [Task("depthwise_conv2d_nchw", (1, 13, 37, 37, 3, 3, 2, 1)),
                     Task("conv2d_nchw", (1, 13, 19, 19, 37, 1, 1, 1, 0))]
    assert weights == [1, 1]
    tasks, weights = extract_tasks(*from_onnx(mlp()))
    # the MatMul by a constant weight imports as a dense
    assert tasks == [Task("dense", (5, 37, 13)), Task("dense", (5, 7, 37)),
                     Task("softmax", ((5, 7),))]
    assert weights == [1, 1, 1]


def test_extraction_lowers_no_kernel(resnet, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("extraction lowered a kernel")
    monkeypatch.setattr(sys.modules["compiler.graph.backend.build"], "lower_function", refuse)
    monkeypatch.setenv("AUTOSCHED_NO_CACHE", "1")  # the build below lowers, not a look-up
    mod, params = from_onnx(resnet)
    tasks, _ = extract_tasks(mod, params)
    assert len(tasks) == 12
    with pytest.raises(AssertionError, match="lowered"):
        graph.build(mod, params=params)  # the build does lower (so the patch is in place)


def test_a_task_of_a_kernel_with_a_tail_is_the_bare_anchors_workload():
    """One record serves every kernel of a workload whatever its tail: the task of a
    conv2d + relu kernel and of a bare conv2d of the same shapes is the same."""
    import numpy as np
    x = graph.var("x", shape=(1, 16, 9, 9))
    w = graph.const(np.ones((16, 16, 3, 3), "float32"))
    y = graph.nn.conv2d(x, w, padding=(1, 1))
    z = graph.nn.relu(graph.nn.conv2d(graph.nn.relu(y), w, padding=(1, 1)))
    with PassContext(opt_level=2):  # NCHW kernels
        tasks, weights = extract_tasks(graph.IRModule.from_expr(graph.Function([x], z)))
    assert tasks == [Task("conv2d_nchw", (1, 16, 9, 9, 16, 3, 3, 1, 1))] and weights == [2]


def test_alternatives_add_the_nchw_implementations_of_the_packed_convolutions(resnet):
    mod, params = from_onnx(resnet)
    with PassContext(opt_level=3):
        tasks, weights = extract_tasks(mod, params, alternatives=True)
    packed, nchw = resnet_tasks(packed=True), resnet_tasks(packed=False)[:-1]
    assert list(zip(tasks, weights)) == packed + nchw  # each NCHW conv as heavy as packed
    with PassContext(opt_level=2):  # nothing packed: no alternatives to add
        assert extract_tasks(mod, params, alternatives=True)[0] == [
            t for t, _ in resnet_tasks(packed=False)]


def test_resnet18s_packed_tasks_for_haswell_are_in_blocks_of_8(resnet):
    """The haswell variant of the first test: AVX2's 8 lanes make every block 8 (the
    image's 3 channels stay one block)."""
    mod, params = from_onnx(resnet)
    with PassContext(opt_level=3):
        tasks, _ = extract_tasks(mod, params, target="llvm -mcpu=haswell")
    assert [t.args[-2:] for t in tasks if t.name == "conv2d_nchwc"] == \
        [(3, 8)] + [(8, 8)] * 9
    assert [t.args[-3:] for t in tasks if t.name == "conv2d_winograd_nchwc"] == [(8, 8, 2)]
    assert all(t.target == Target("llvm -mcpu=haswell") for t in tasks)


def test_blocks_add_every_other_pair_of_blocks_of_the_packed_convolutions(resnet):
    mod, params = from_onnx(resnet)
    with PassContext(opt_level=3):
        tasks, weights = extract_tasks(mod, params, blocks=True)
    plain = resnet_tasks(packed=True)
    assert list(zip(tasks, weights))[:len(plain)] == plain
    lanes = Target("llvm").vector_lanes
    others = {}
    for (C, H, K, R, stride, pad), n in RESNET18_LAYERS:
        ins = [3] if C == 3 else channel_blocks(C)
        for ic, oc in ((i, o) for i in ins for o in channel_blocks(K)):
            forms = {packed_task(C, H, K, R, stride, pad, ic, oc, direct)
                     for direct in (False, True)}  # Winograd's and the direct kernel's
            forms.discard(packed_task(C, H, K, R, stride, pad, ins[0], lanes))
            others.update((task, n) for task in forms)
    assert dict(list(zip(tasks, weights))[len(plain):]) == others
    assert len(others) > 0
