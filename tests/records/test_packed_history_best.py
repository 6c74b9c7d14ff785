"""A model built at opt_level 3 inside ApplyHistoryBest: its packed (NCHW[x]c) layers'
workloads are those of the conv2d_nchwc and depthwise_conv2d_nchwc templates, so the
configs logged for the templates schedule them, and the model still computes right."""
import numpy as np

import records
import search_spaces
import tuner
from compiler import graph
from compiler.graph.reference import evaluate
from compiler.transform.pass_infra import PassContext
from records.apply_history_best import ApplyHistoryBest

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
