"""A transformer layer's tasks (tuner.extract_tasks): its dense and batch_matmul
products, and its layer norms and softmax by their templates (search_spaces/row_ops.py);
a log's records for those schedule the build's kernels (records.ApplyHistoryBest), and
the model still matches ONNX Runtime."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper  # noqa: E402
from onnx_cases import check_against_ort  # noqa: E402
from onnx_graph import Graph, attention_layer  # noqa: E402

import records  # noqa: E402
import search_spaces  # noqa: E402
import tuner  # noqa: E402
from compiler import Target  # noqa: E402
from compiler.frontend import from_onnx  # noqa: E402
from compiler.transform.pass_infra import PassContext  # noqa: E402
from records import ApplyHistoryBest  # noqa: E402

SEQ, HIDDEN, HEADS = 13, 74, 2


def encoder_layer():
    g = Graph()
    y = attention_layer(g, "x", SEQ, HIDDEN, HEADS, pre_norm=False)
    return g.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, SEQ, HIDDEN])],
                   [y], opset=20)


def feeds():
    return {"x": np.random.default_rng(5).standard_normal((1, SEQ, HIDDEN)).astype("float32")}


def row_steps(lib) -> dict:
    """template -> the info of the plan's steps that the row templates schedule."""
    return {s["info"]["template"]: s["info"] for s in lib.plan["steps"]
            if s["info"] and s["info"]["template"] in ("softmax", "layer_norm")}


def test_the_layers_tasks_include_its_layer_norms_and_softmax():
    with PassContext(opt_level=3):
        tasks, weights = tuner.extract_tasks(*from_onnx(encoder_layer()))
    found = dict(zip([(t.name, t.args) for t in tasks], weights))
    assert found[("softmax", ((HEADS, SEQ, SEQ),))] == 1
    norms = {args: n for (name, args), n in found.items() if name == "layer_norm"}
    assert [(args[:2], n) for args, n in norms.items()] == [(((1, SEQ, HIDDEN), 2), 2)]
    assert next(iter(norms))[2] == pytest.approx(1e-5)
    assert {t.name for t in tasks} >= {"dense_pack", "batch_matmul"}


def test_untuned_the_templates_fallbacks_run_and_a_logged_config_is_applied(tmp_path):
    model = encoder_layer()
    with PassContext(opt_level=3):
        untuned = check_against_ort(model, feeds())
    assert {name: info["fallback"] for name, info in row_steps(untuned).items()} == \
        {"softmax": True, "layer_norm": True}
    with PassContext(opt_level=3):
        tasks, _ = tuner.extract_tasks(*from_onnx(model))
    logged = {}
    with records.Database(tmp_path / "t.db") as db:
        for task in tasks:
            if task.name not in ("softmax", "layer_norm"):
                continue
            space = search_spaces.space(task.name, *task.args)
            cfg = next(c for c in space.sample(8, seed=1) if c.index != space.fallback().index)
            db.add(task, [tuner.MeasureInput(task, cfg)],
                   [tuner.MeasureResult((1e-6,), tuner.MeasureErrorNo.NO_ERROR, "", 0.01, 1.0,
                                        "testhost")])
            logged[task.name] = f"#{cfg.index}"
    with ApplyHistoryBest(tmp_path / "t.db", target=str(Target("llvm"))), \
            PassContext(opt_level=3), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the dense tasks have no record
        tuned = check_against_ort(model, feeds())
    steps = row_steps(tuned)
    assert {name: info["config"] for name, info in steps.items()} == logged
    assert all(not info["fallback"] and info["record"] is not None for info in steps.values())
