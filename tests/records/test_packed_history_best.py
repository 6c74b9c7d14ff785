"""A model built at opt_level 3 inside ApplyHistoryBest: its packed (NCHW[x]c) layers'
workloads are those of the conv2d_nchwc and depthwise_conv2d_nchwc templates, so the
configs logged for the templates schedule them, and the model still computes right; a
convolution whose NCHW implementation the log says is faster stays NCHW."""
import warnings

import numpy as np
import pytest

import records
import search_spaces
import tuner
from compiler import graph
from compiler.graph.ir.op.layout import channel_blocks
from compiler.graph.ir.reference import evaluate
from compiler.transform.pass_infra import PassContext
from records.apply_history_best import ApplyHistoryBest, FallbackWarning

TARGET = "llvm -mcpu=skylake-avx512 -mattr=+avx512f -num-cores=4"
CONV = ("conv2d_nchwc", (1, 16, 11, 11, 16, 3, 3, 1, 1, 16, 16))
DEPTHWISE = ("depthwise_conv2d_nchwc", (1, 16, 11, 11, 3, 3, 2, 1, 16))


def model():
    rng = np.random.default_rng(3)
    x = graph.var("x", shape=(1, 16, 11, 11))
    y = graph.nn.relu(graph.nn.conv2d(
        x, graph.const(rng.standard_normal((16, 16, 3, 3)).astype("float32")), padding=1))
    y = graph.nn.conv2d(y, graph.const(rng.standard_normal((16, 1, 3, 3)).astype("float32")),
                        strides=2, padding=1, groups=16)
    return graph.Function([x], graph.clip(y, 0.0, 6.0))


def test_the_logged_best_schedules_the_packed_layers(tmp_path):
    logged = {}
    with records.Database(tmp_path / "tune.db") as db:
        for seed, (name, args) in enumerate([CONV, DEPTHWISE]):
            task = tuner.Task(name, args, target=TARGET)
            fast, slow = search_spaces.space(name, *args).sample(2, seed=seed)
            db.add(task, [tuner.MeasureInput(task, c) for c in (fast, slow)],
                   [tuner.MeasureResult((cost, cost), tuner.MeasureErrorNo.NO_ERROR, "", 0.01,
                                        float(stamp), "testhost")
                    for stamp, cost in enumerate((1e-6, 2e-6))])
            logged[name] = fast
    fn = model()
    with ApplyHistoryBest(tmp_path / "tune.db", target=TARGET), PassContext(opt_level=3):
        lib = graph.build(graph.IRModule.from_expr(fn))
    infos = {s["info"]["template"]: s["info"] for s in lib.plan["steps"]
             if s["info"]["template"]}
    for name, args in (CONV, DEPTHWISE):
        assert infos[name].items() >= {"template": name, "workload": f"{name}{args!r}",
                                       "config": f"#{logged[name].index}",
                                       "fallback": False}.items()
        assert infos[name]["record"] is not None
    data = np.random.default_rng(4).standard_normal((1, 16, 11, 11)).astype("float32")
    np.testing.assert_allclose(lib.run(x=data)[0], evaluate(fn, data), rtol=1e-4, atol=1e-4)


NCHW = ("conv2d_nchw", (1, 16, 11, 11, 16, 3, 3, 1, 1))
NCHW_DEPTHWISE = ("depthwise_conv2d_nchw", (1, 16, 11, 11, 3, 3, 2, 1))


def log(path, times: dict, targets: dict | None = None):
    """A log holding one record of each workload of `times` ({(name, args): seconds}),
    tuned for TARGET unless `targets` ({(name, args): target}) names another."""
    with records.Database(path) as db:
        for (name, args), seconds in times.items():
            task = tuner.Task(name, args, target=(targets or {}).get((name, args), TARGET))
            db.add(task, [tuner.MeasureInput(task, search_spaces.space(name, *args).get(0))],
                   [tuner.MeasureResult((seconds, seconds), tuner.MeasureErrorNo.NO_ERROR, "",
                                        0.01, 1.0, "testhost")])


@pytest.mark.parametrize("times, nchw", [
    ({CONV: 1e-6, NCHW: 2e-6}, []),                       # packed logged faster
    ({CONV: 2e-6, NCHW: 1e-6}, ["conv2d_nchw"]),          # NCHW logged faster
    ({NCHW_DEPTHWISE: 1e-6}, ["depthwise_conv2d_nchw"]),  # only NCHW logged
    ({DEPTHWISE: 1e-6, CONV: 1e-6}, []),                  # only packed logged
])
def test_the_build_takes_the_faster_logged_implementation_of_a_convolution(tmp_path, times,
                                                                          nchw):
    """conv2d_nchw and conv2d_nchwc (and their depthwise forms) compute one op: at
    opt_level 3 a convolution is packed unless the log says its NCHW implementation is
    faster (or only it is logged); the model computes right either way."""
    log(tmp_path / "tune.db", times)
    fn = model()
    lib = build_logged(tmp_path / "tune.db", fn)
    templates = [s["info"]["template"] for s in lib.plan["steps"] if s["info"]["template"]]
    assert [t for t in templates if t in NCHW_TEMPLATES] == nchw
    assert len(templates) == 2
    data = np.random.default_rng(4).standard_normal((1, 16, 11, 11)).astype("float32")
    np.testing.assert_allclose(lib.run(x=data)[0], evaluate(fn, data), rtol=1e-4, atol=1e-4)


NCHW_TEMPLATES = ("conv2d_nchw", "depthwise_conv2d_nchw")


def build_logged(path, fn):
    """`fn` built at opt_level 3 inside ApplyHistoryBest of the log at `path` (for
    TARGET), the warnings of workloads it does not log silenced."""
    with ApplyHistoryBest(path, target=TARGET), PassContext(opt_level=3), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        return graph.build(graph.IRModule.from_expr(fn))


SAME_CPU = "llvm -mcpu=skylake-avx512 -mattr=+avx512f -num-cores=2"  # TARGET's CPU


@pytest.mark.parametrize("elsewhere, nchw", [
    (NCHW, []),                # a faster NCHW record of another target of the CPU
    (CONV, ["conv2d_nchw"]),  # a faster packed one of another target of the CPU
])
def test_only_records_of_one_tier_are_compared_by_time(tmp_path, elsewhere, nchw):
    """The record tuned for the build's own target says more than a faster one tuned
    for another target of its CPU: the nearer implementation is taken, as
    ApplyHistoryBest takes the nearer record of one workload."""
    log(tmp_path / "tune.db", {CONV: 2e-6, NCHW: 2e-6} | {elsewhere: 1e-6},
        targets={elsewhere: SAME_CPU})
    with ApplyHistoryBest(tmp_path / "tune.db", target=TARGET), PassContext(opt_level=3), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        lib = graph.build(graph.IRModule.from_expr(model()))
    templates = [s["info"]["template"] for s in lib.plan["steps"] if s["info"]["template"]]
    assert [t for t in templates if t == "conv2d_nchw"] == nchw


def test_probing_the_nchw_implementation_neither_warns_nor_hides_a_later_warning(tmp_path):
    """At opt_level 3 the NCHW workloads are only probed: the FallbackWarnings name the
    packed workloads the build schedules; a later opt_level 2 build in the same context
    schedules the NCHW ones and warns of them (the probe remembered nothing)."""
    log(tmp_path / "tune.db", {("conv2d_nchw", (1, 8, 7, 7, 8, 3, 3, 1, 1)): 1e-6})
    # no packed record: the layers take the untuned block of the target built for (the
    # host's lanes; 16 on AVX-512, 8 on AVX2), whatever target the records are for
    block = channel_blocks(16)[0]
    packed = {(CONV[0], CONV[1][:-2] + (block, block)),
              (DEPTHWISE[0], DEPTHWISE[1][:-1] + (block,))}
    with ApplyHistoryBest(tmp_path / "tune.db", target=TARGET) as ctx:
        for level, expected in ((3, packed), (2, {NCHW, NCHW_DEPTHWISE})):
            with PassContext(opt_level=level), warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                graph.build(graph.IRModule.from_expr(model()))
            warned = [str(w.message) for w in caught if w.category is FallbackWarning]
            assert len(warned) == len(expected), warned
            assert all(any(m.startswith(f"{n}{a}") for n, a in expected) for m in warned)
            assert not ctx.describe(NCHW) and not any(map(ctx.describe, packed))


def test_a_convolution_that_is_never_built_is_never_warned_of(tmp_path):
    """AlterOpLayout's choice between forms applies nothing: a dead convolution (a field
    of a tuple no one reads), which DeadCodeElimination drops, gets no FallbackWarning."""
    log(tmp_path / "tune.db", {NCHW: 1e-6})
    x = graph.var("x", shape=(1, 16, 8, 8))
    w = graph.const(np.ones((16, 16, 1, 1), "float32"))
    dead = graph.Tuple([graph.nn.relu(x), graph.nn.conv2d(x, w)])
    fn = graph.Function([x], graph.TupleGetItem(dead, 0))
    with ApplyHistoryBest(tmp_path / "tune.db", target=TARGET), PassContext(opt_level=3), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph.build(graph.IRModule.from_expr(fn))
    assert [w for w in caught if w.category is FallbackWarning] == []
