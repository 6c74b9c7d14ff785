"""Op strategies (compiler/graph/strategy/, search_spaces/strategies.py): a fused
function's anchor scheduled by its template under the dispatch context, its tail in the
same kernel, checked against numpy on odd shapes with the fallback and with sampled
configs; what the kernel's info says; attrs no template covers left to compiler.ops; the
entry point found without importing search_spaces; a broken entry point named; a missing
one warned of, once."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import compiler
import search_spaces
from compiler import graph
from compiler.graph.ir.expr import Call, Function
from compiler.graph.ir.functor import post_order
from compiler.graph.backend.lower import lower_function
from compiler.graph.ir.reference import evaluate
from compiler.graph import strategy
from compiler.graph.strategy.chooser import choose_implementation
from compiler.graph.strategy import (Candidate, NoStrategiesWarning, StrategyError,
                                     register_strategy)
from compiler.ops import OpPattern, default_schedule, relu

pytestmark = pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")
rng = np.random.default_rng(11)


def fused_call(fn: Function) -> Call:
    """The call of the one Primitive function FuseOps makes of `fn`."""
    mod = graph.passes.FuseOps()(graph.IRModule.from_expr(fn))
    calls = [e for e in post_order(mod["main"].body)
             if isinstance(e, Call) and isinstance(e.op, Function)]
    assert len(calls) == 1, "the graph must fuse into one kernel"
    return calls[0]


def run_kernel(fn: Function, inputs: dict) -> dict:
    """Lower `fn`'s one kernel, build and run it on `inputs` (by parameter name), check
    it against the numpy evaluator; returns the kernel's info."""
    call = fused_call(fn)
    sch, tensors, info = lower_function(call.op, "kernel")
    f = compiler.build(sch, tensors)
    want = evaluate(fn, *[inputs[p.name] for p in fn.params])
    got = np.full(want.shape, np.nan, "float32")
    f(*[inputs[a.name] for a in call.args], got)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=str(info))
    return info


def random_inputs(fn: Function) -> dict:
    return {p.name: rng.standard_normal(p.ty.shape).astype("float32") for p in fn.params}


def conv_block(c, k, size, kernel, stride, pad, dilation=1):
    """conv2d + bias + relu + a residual add, every input a parameter."""
    x = graph.var("x", shape=(1, c, size, size))
    w = graph.var("w", shape=(k, c, kernel, kernel))
    b = graph.var("b", shape=(k,))
    y = graph.nn.conv2d(x, w, strides=stride, padding=pad, dilation=dilation)
    y = graph.nn.relu(graph.nn.bias_add(y, b))
    out = graph.passes.InferType()(graph.IRModule.from_expr(graph.Function([x, w, b], y)))
    r = graph.var("r", shape=out["main"].body.ty.shape)
    return graph.Function([x, w, b, r], graph.add(y, r))


CONVS = [(7, 13, 37, 3, 2, 1), (13, 37, 13, 3, 1, 1), (37, 7, 11, 1, 1, 0), (7, 7, 9, 5, 2, 2)]


@pytest.mark.parametrize("c, k, size, kernel, stride, pad", CONVS)
def test_conv2d_with_its_tail_runs_the_template_fallback_and_sampled_configs(
        c, k, size, kernel, stride, pad):
    fn = conv_block(c, k, size, kernel, stride, pad)
    inputs = random_inputs(fn)
    args = (1, c, size, size, k, kernel, kernel, stride, pad)
    space = search_spaces.space("conv2d_nchw", *args)
    info = run_kernel(fn, inputs)
    assert info == {"template": "conv2d_nchw", "workload": f"conv2d_nchw{args!r}",
                    "config": f"#{space.fallback().index}", "fallback": True}
    for cfg in space.sample(3, seed=c * k + size):
        with search_spaces.ApplyConfig(cfg):
            info = run_kernel(fn, inputs)
        assert (info["config"], info["fallback"]) == (f"#{cfg.index}", False)


def test_a_conv2d_without_a_tail_is_the_template_itself():
    x = graph.var("x", shape=(1, 13, 15, 15))
    w = graph.var("w", shape=(7, 13, 3, 3))
    fn = graph.Function([x, w], graph.nn.conv2d(x, w, strides=2))
    assert run_kernel(fn, random_inputs(fn))["template"] == "conv2d_nchw"


def test_depthwise_conv2d_with_clip_runs_its_template():
    c, size = 13, 23
    x = graph.var("x", shape=(1, c, size, size))
    w = graph.var("w", shape=(c, 1, 3, 3))
    fn = graph.Function([x, w], graph.clip(graph.nn.conv2d(x, w, strides=2, padding=1,
                                                           groups=c), 0.0, 6.0))
    inputs = random_inputs(fn)
    args = (1, c, size, size, 3, 3, 2, 1)
    info = run_kernel(fn, inputs)
    assert (info["template"], info["workload"], info["fallback"]) == \
        ("depthwise_conv2d_nchw", f"depthwise_conv2d_nchw{args!r}", True)
    for cfg in search_spaces.space("depthwise_conv2d_nchw", *args).sample(3, seed=2):
        with search_spaces.ApplyConfig(cfg):
            assert run_kernel(fn, inputs)["fallback"] is False


def test_dense_with_bias_and_relu_runs_the_dense_template():
    m, n, k = 7, 13, 37
    x = graph.var("x", shape=(m, k))
    w = graph.var("w", shape=(n, k))
    b = graph.var("b", shape=(n,))
    fn = graph.Function([x, w, b], graph.nn.relu(graph.nn.bias_add(graph.nn.dense(x, w), b)))
    inputs = random_inputs(fn)
    info = run_kernel(fn, inputs)
    assert (info["template"], info["workload"], info["fallback"]) == \
        ("dense", "dense(7, 13, 37)", True)
    for cfg in search_spaces.space("dense", m, n, k).sample(4, seed=3):
        with search_spaces.ApplyConfig(cfg):
            assert run_kernel(fn, inputs)["config"] == f"#{cfg.index}"


@pytest.mark.parametrize("what, conv", [
    ("dilation 2", dict(padding=2, dilation=2)),
    ("asymmetric padding", dict(padding=(0, 1, 1, 0))),
    ("unequal strides", dict(strides=(1, 2), padding=1)),
])
def test_attrs_the_template_does_not_cover_fall_back_to_compiler_ops(what, conv):
    x = graph.var("x", shape=(1, 7, 13, 13))
    w = graph.var("w", shape=(13, 7, 3, 3))
    b = graph.var("b", shape=(13,))
    fn = graph.Function([x, w, b], graph.nn.relu(graph.nn.bias_add(
        graph.nn.conv2d(x, w, **conv), b)))
    info = run_kernel(fn, random_inputs(fn))
    assert info == {"template": None, "workload": None, "config": None, "fallback": None}


def test_a_kernel_without_an_anchor_has_no_template():
    x = graph.var("x", shape=(3, 17))
    y = graph.var("y", shape=(17,))
    fn = graph.Function([x, y], graph.nn.relu(graph.add(x, y)))
    assert run_kernel(fn, random_inputs(fn))["template"] is None


def test_a_config_of_another_space_is_an_error_naming_both():
    fn = conv_block(7, 13, 11, 3, 1, 1)
    other = search_spaces.space("conv2d_nchw", 1, 7, 11, 11, 13, 3, 3, 2, 1).get(0)
    with search_spaces.ApplyConfig(other), pytest.raises(search_spaces.SpaceError,
                                                         match="not of template"):
        lower_function(fused_call(fn).op, "kernel")


def test_the_highest_priority_candidate_that_applies_wins():
    """Two strategies of an op of this test's own: the priority 20 one declines calls
    with more than 8 channels, the priority 5 one takes all."""
    probe = graph.register_op("test.strategy_probe", lambda types, attrs: types[0],
                              OpPattern.OUT_ELEMWISE_FUSABLE, {"channels": 1}, 1)

    def make(name, priority):
        return Candidate(name, (name, ()), lambda cfg, ins: relu(ins[0]),
                         lambda cfg, out, anchor: default_schedule(out), lambda: None,
                         lambda cfg: {"template": name}, priority)

    register_strategy(probe.name, lambda call, target, form: [make("any", 5)])
    register_strategy(probe.name, lambda call, target, form: [make("narrow", 20)]
                      if call.attrs["channels"] <= 8 else [])
    x = graph.var("x", shape=(1, 8))
    for channels, chosen in ((8, "narrow"), (9, "any")):
        call = Call(probe, (x,), {"channels": channels})
        assert choose_implementation(call).candidate.name == chosen


def _python(code: str, path_dir=None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if path_dir is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(path_dir), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=120)


FIND_CONV_STRATEGY = """
    import sys
    from compiler import graph
    from compiler.graph.strategy.chooser import choose_implementation
    x = graph.var("x", shape=(1, 8, 14, 14))
    w = graph.var("w", shape=(16, 8, 3, 3))
    fn = graph.Function([x, w], graph.nn.conv2d(x, w, padding=1))
    call = graph.passes.InferType()(graph.IRModule.from_expr(fn))["main"].body
    assert "search_spaces" not in sys.modules
    print(choose_implementation(call).candidate.name)
"""


def test_the_entry_point_brings_the_templates_without_importing_search_spaces():
    done = _python(FIND_CONV_STRATEGY)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["conv2d_nchw"]


def test_a_broken_entry_point_is_an_error_naming_it(tmp_path):
    dist = tmp_path / "broken_strategies-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-strategies\n"
                                   "Version: 1.0\n")
    (dist / "entry_points.txt").write_text("[autosched.strategies]\n"
                                           "broken = no_such_module_here:register\n")
    done = _python(FIND_CONV_STRATEGY, tmp_path)
    assert done.returncode != 0
    assert StrategyError.__name__ in done.stderr
    assert "broken = no_such_module_here:register" in done.stderr


def test_a_build_without_the_entry_point_warns_once_naming_the_group(monkeypatch):
    monkeypatch.setattr(strategy, "entry_points", lambda group: [])
    monkeypatch.setattr(strategy, "_all_loaded", False)
    x = graph.var("x", shape=(4, 8))
    fn = graph.Function([x], graph.nn.relu(graph.nn.dense(x, graph.const(
        rng.standard_normal((5, 8)).astype("float32")))))
    with pytest.warns(NoStrategiesWarning) as caught:
        for _ in range(2):
            graph.build(graph.IRModule.from_expr(fn))
    mine = [w for w in caught if issubclass(w.category, NoStrategiesWarning)]
    assert len(mine) == 1
    assert "no entry point of the group 'autosched.strategies'" in str(mine[0].message)
    assert "every kernel gets compiler.ops' default schedules" in str(mine[0].message)


def test_an_mlp_from_onnx_gets_the_dense_template_for_its_gemm_and_its_matmul_and_softmax():
    from onnx_models import input_and_expected, mlp
    from compiler.frontend import from_onnx
    m = mlp()
    x, want = input_and_expected(m)
    mod, params = from_onnx(m)
    lib = graph.build(mod, params=params)
    # MatMul by a constant weight imports as a dense (frontend/onnx_ops/nn.py: matmul)
    assert [(s["ops"][0], s["info"]["template"]) for s in lib.plan["steps"]] == [
        ("nn.dense", "dense"), ("nn.dense", "dense"), ("nn.softmax", "softmax")]
    np.testing.assert_allclose(lib.run(x=x)[0], want, rtol=1e-4, atol=1e-4)
