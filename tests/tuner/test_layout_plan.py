"""The layout planner (compiler/graph/passes/layout_plan.py) under records.ApplyHistoryBest: a
log timing two blocks of each of two adjacent convolutions builds the combination of
least estimated time (the logged times plus a layout transform where two layers meet
in different blocks), with a transform only there; the model still computes right."""
import warnings

import numpy as np
import pytest

import tuner
from compiler import Target, graph
from compiler.graph.passes.layout_plan import transform_seconds
from compiler.graph.strategy.chooser import Chooser
from compiler.graph.ir.reference import evaluate
from compiler.transform.pass_infra import PassContext
from records.apply_history_best import ApplyHistoryBest
from test_log_best_applies import log  # a log of one record per workload, host target

L = Target("llvm").vector_lanes  # the untuned block: the host's float32 lanes
SIZE = 9


def model():
    """x (L channels) -> conv A (to 2L) -> relu -> conv B (to L): A may write blocks of
    L or 2L, B read either."""
    rng = np.random.default_rng(7)
    x = graph.var("x", shape=(1, L, SIZE, SIZE))
    a = graph.const(rng.standard_normal((2 * L, L, 3, 3)).astype("float32") * 0.2)
    b = graph.const(rng.standard_normal((L, 2 * L, 3, 3)).astype("float32") * 0.2)
    y = graph.nn.relu(graph.nn.conv2d(x, a, padding=1))
    return graph.Function([x], graph.nn.conv2d(y, b, padding=1))


def conv_a(ic, oc):
    return ("conv2d_nchwc", (1, L, SIZE, SIZE, 2 * L, 3, 3, 1, 1, ic, oc))


def conv_b(ic, oc):
    return ("conv2d_nchwc", (1, 2 * L, SIZE, SIZE, L, 3, 3, 1, 1, ic, oc))


def build(db):
    with ApplyHistoryBest(db), PassContext(opt_level=3), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return graph.build(graph.IRModule.from_expr(model()))


# the transform of A's output (2L channels) between A and B, the unit of the times
T = transform_seconds(2 * L * SIZE * SIZE * 4)


@pytest.mark.parametrize("a_wide, applied, between", [
    # A is faster writing 2L blocks by half a transform, B reading L blocks by 2: the
    # plan takes A's slower L blocks, so that no transform is needed between them
    (9.5 * T, [conv_a(L, L), conv_b(L, L)], 0),
    # A is faster writing 2L blocks by 2 transforms: worth one transform before B
    (8 * T, [conv_a(L, 2 * L), conv_b(L, L)], 1),
])
def test_the_plan_weighs_the_logged_blocks_against_the_transforms(tmp_path, a_wide, applied,
                                                                 between):
    log(tmp_path / "t.db", {conv_a(L, L): 10 * T, conv_a(L, 2 * L): a_wide,
                            conv_b(L, L): 10 * T, conv_b(2 * L, L): 12 * T})
    lib = build(tmp_path / "t.db")
    steps = lib.plan["steps"]
    convs = [i for i, s in enumerate(steps) if s["ops"][0] == "nn.conv2d"]
    assert [steps[i]["info"]["workload"] for i in convs] == [f"{n}{a!r}" for n, a in applied]
    # the model's input is packed before A, B's output unpacked after it, and between
    # them a transform only where A's blocks are not B's
    assert [s["ops"][0] for s in steps].count("layout_transform") == 2 + between
    assert steps[0]["ops"] == ["layout_transform"] and steps[-1]["ops"] == ["layout_transform"]
    assert convs[1] - convs[0] - 1 == between
    data = np.random.default_rng(8).standard_normal((1, L, SIZE, SIZE)).astype("float32")
    np.testing.assert_allclose(lib.run(x=data)[0], evaluate(model(), data), rtol=1e-4,
                               atol=1e-4)


def test_both_layers_take_the_wider_blocks_when_together_they_are_fastest(tmp_path):
    """B alone is faster reading L blocks, but less so than a transform costs: A's wide
    blocks, B reading them as they are, beat A's wide blocks with a transform to B's
    narrow ones."""
    log(tmp_path / "t.db", {conv_a(L, L): 10 * T, conv_a(L, 2 * L): 8 * T,
                            conv_b(L, L): 10 * T, conv_b(2 * L, L): 10.5 * T})
    steps = build(tmp_path / "t.db").plan["steps"]
    assert [s["info"]["workload"] for s in steps if s["ops"][0] == "nn.conv2d"] == [
        f"{n}{a!r}" for n, a in (conv_a(L, 2 * L), conv_b(2 * L, L))]
    assert [s["ops"][0] for s in steps].count("layout_transform") == 2


class Decisions(Chooser):
    """Entered innermost, it answers nothing and counts the decisions among a call's
    implementations: the questions whose candidates are of more than one form of the
    call (the call as it stands counts as one), not a form's own record looked up, nor
    lowering's config of the call AlterOpLayout made."""

    def __init__(self):
        self.asked = 0

    def choose(self, candidates, target, applies=True):
        self.asked += len({c.form for c in candidates}) > 1
        return None


@pytest.mark.parametrize("logged", [False, True])
def test_each_convolution_is_decided_in_one_question(tmp_path, logged):
    """Each of the model's two convolutions is decided once: without a log by its layout
    rule (among its untuned forms and the call as it stands), with one by the layout
    planner (among all its forms), which AlterOpLayout then applies without asking."""
    log(tmp_path / "t.db", {conv_a(L, L): 10 * T, conv_b(L, L): 10 * T} if logged else {})
    decisions = Decisions()
    with ApplyHistoryBest(tmp_path / "t.db"), decisions, PassContext(opt_level=3), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lib = graph.build(graph.IRModule.from_expr(model()))
    assert decisions.asked == 2
    assert [s["info"].get("record") is not None for s in lib.plan["steps"]
            if s["ops"][0] == "nn.conv2d"] == [logged, logged]


def test_resnet18_with_every_block_logged_needs_no_transform_between_its_layers(tmp_path):
    """Every block of every convolution of ResNet-18 logged (tuner.extract_tasks with
    blocks=True), at times that differ by less than any transform costs: the plan,
    residual adds included (their inputs share one layout class), moves no value
    between blocks, so the only transforms are the image's into its block and the last
    feature map's out before the flatten; every convolution runs a logged record and
    the model matches ONNX Runtime."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from resnet_onnx import resnet18

    from compiler.frontend import from_onnx
    m = resnet18(size=32)
    mod, params = from_onnx(m)
    with PassContext(opt_level=3):
        tasks, _ = tuner.extract_tasks(mod, params, blocks=True)
    rng = np.random.default_rng(9)
    log(tmp_path / "t.db", {t.workload: float(rng.uniform(1e-6, 1.1e-6)) for t in tasks
                            if t.name == "conv2d_nchwc"})
    with ApplyHistoryBest(tmp_path / "t.db"), PassContext(opt_level=3), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lib = graph.build(mod, params=params)
    steps = lib.plan["steps"]
    assert [s["ops"][0] for s in steps].count("layout_transform") == 2
    convs = [s for s in steps if s["ops"][0] == "nn.conv2d"]
    assert len(convs) == 20 and all(s["info"]["record"] is not None for s in convs)
    x = rng.standard_normal((1, 3, 32, 32)).astype("float32")
    want, = ort.InferenceSession(m.SerializeToString(),
                                 providers=["CPUExecutionProvider"]).run(None, {"input": x})
    np.testing.assert_allclose(lib.run(input=x)[0], want, rtol=1e-4,
                               atol=1e-4 * float(np.abs(want).max()))


def test_a_mobilenet_block_with_every_block_logged_matches_numpy(tmp_path):
    """Pointwise 4L -> 8L, depthwise 8L (one block for its data and result), pointwise
    back to 4L plus the block's input: every block of each logged at random times, the
    planned model computes what numpy does, each convolution with a logged record."""
    rng = np.random.default_rng(11)
    x = graph.var("x", shape=(1, 4 * L, 9, 9))

    def const(*shape):
        return graph.const((rng.standard_normal(shape) * 0.3).astype("float32"))
    y = graph.clip(graph.nn.conv2d(x, const(8 * L, 4 * L, 1, 1)), 0.0, 6.0)
    y = graph.clip(graph.nn.conv2d(y, const(8 * L, 1, 3, 3), padding=1, groups=8 * L),
                   0.0, 6.0)
    fn = graph.Function([x], graph.add(graph.nn.conv2d(y, const(4 * L, 8 * L, 1, 1)), x))
    mod = graph.IRModule.from_expr(fn)
    with PassContext(opt_level=3):
        tasks, _ = tuner.extract_tasks(mod, blocks=True)
    assert any(t.name == "depthwise_conv2d_nchwc" and t.args[-1] == 2 * L for t in tasks)
    log(tmp_path / "t.db", {t.workload: float(rng.uniform(1e-6, 4e-6)) for t in tasks})
    with ApplyHistoryBest(tmp_path / "t.db"), PassContext(opt_level=3), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lib = graph.build(mod)
    convs = [s for s in lib.plan["steps"] if s["ops"][0] == "nn.conv2d"]
    assert len(convs) == 3 and all(s["info"]["record"] is not None for s in convs)
    data = rng.standard_normal((1, 4 * L, 9, 9)).astype("float32")
    np.testing.assert_allclose(lib.run(x=data)[0], evaluate(fn, data), rtol=1e-4, atol=1e-4)
