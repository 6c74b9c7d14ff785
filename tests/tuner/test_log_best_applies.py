"""One chooser (compiler/graph/strategy/chooser.py, records.ApplyHistoryBest): for a log holding
NCHW, packed and cblas records of one 1x1 convolution, `autosched log best` names the
implementation the build applies, without and with `--external cblas`, whichever is
fastest; the build's plan agrees."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from click.testing import CliRunner

import records
import search_spaces
import tuner
from compiler import Target, graph
from compiler.transform.pass_infra import PassContext
from records import ApplyHistoryBest
from tuner.cli import cli

TARGET = str(Target("llvm"))
NCHW = ("conv2d_nchw", (1, 16, 7, 7, 32, 1, 1, 1, 0))
PACKED = ("conv2d_nchwc", (1, 16, 7, 7, 32, 1, 1, 1, 0, 16, 16))
CBLAS = ("conv2d_1x1_cblas", (1, 16, 7, 7, 32))


def log(path, times: dict):
    """A log holding one record of each workload of `times` ({(name, args): seconds})."""
    with records.Database(path) as db:
        for (name, args), seconds in times.items():
            task = tuner.Task(name, args, target=TARGET)
            db.add(task, [tuner.MeasureInput(task, search_spaces.space(name, *args).get(0))],
                   [tuner.MeasureResult((seconds, seconds), tuner.MeasureErrorNo.NO_ERROR, "",
                                        0.01, 1.0, "testhost")])


def model():
    x = graph.var("x", shape=(1, 16, 7, 7))
    w = graph.const(np.random.default_rng(2).standard_normal((32, 16, 1, 1)).astype("float32"))
    return graph.IRModule.from_expr(graph.Function([x], graph.nn.conv2d(x, w)))


def best(db, name: str, *words: str) -> dict:
    """What `autosched log best NAME WORDS... --db DB --json` says (it exits 0)."""
    shown = CliRunner().invoke(cli, ["log", "best", name, *words, "--db", str(db), "--json"])
    assert shown.exit_code == 0, shown.output
    return json.loads(shown.output)


def built(db, external=None) -> list:
    """The template (or external codegen) of each step of the model built with `db`."""
    with ApplyHistoryBest(db), PassContext(opt_level=3), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lib = graph.build(model(), external=external)
    return [s.get("external") or s["info"]["template"] for s in lib.plan["steps"]
            if s.get("external") or s["info"]["template"]]


@pytest.mark.parametrize("times, applies, picks", [
    ({NCHW: 1e-6, PACKED: 2e-6, CBLAS: 3e-6}, "conv2d_nchw", "conv2d_nchw"),
    ({NCHW: 2e-6, PACKED: 1e-6, CBLAS: 3e-6}, "conv2d_nchwc", "conv2d_nchwc"),
    ({NCHW: 2e-6, PACKED: 3e-6, CBLAS: 1e-6}, "conv2d_nchw", "cblas"),
])
def test_log_best_names_what_the_build_applies(tmp_path, times, applies, picks):
    db = tmp_path / "t.db"
    log(db, times)
    for name, args in times:
        shown = CliRunner().invoke(cli, ["log", "best", name, *map(str, args), "--db", str(db),
                                          "--json"])
        assert shown.exit_code == 0, shown.output
        said = json.loads(shown.output)
        assert said["build_applies"].startswith(applies + "(")
        assert said["build_picks"] == picks or said["build_picks"].startswith(picks + "(")
    assert built(db) == [applies]
    assert built(db, ["cblas"]) == [picks]


def test_a_tie_between_the_library_and_a_tuned_kernel_keeps_the_tuned_kernel(tmp_path):
    db = tmp_path / "t.db"
    log(db, {NCHW: 1e-6, CBLAS: 1e-6})
    assert built(db, ["cblas"]) == ["conv2d_nchw"]


DENSE = ("dense", (1, 64, 32))


def dense_model():
    x = graph.var("x", shape=(1, 32))
    w = graph.const(np.random.default_rng(3).standard_normal((64, 32)).astype("float32"))
    return graph.IRModule.from_expr(graph.Function([x], graph.nn.dense(x, w)))


def test_a_dense_logged_unpacked_is_built_unpacked_as_log_best_says(tmp_path):
    """A dense on constant weights is packed (dense_pack) unless the chooser prefers the
    dense as it stands: its record is the only one here, so the build runs it, tuned,
    and log best names it."""
    db = tmp_path / "t.db"
    log(db, {DENSE: 1e-6})
    said = json.loads(CliRunner().invoke(cli, ["log", "best", "dense", "1", "64", "32",
                                               "--db", str(db), "--json"]).output)
    assert said["build_applies"] == "dense(1, 64, 32)"
    with ApplyHistoryBest(db), PassContext(opt_level=3), warnings.catch_warnings():
        warnings.simplefilter("error")  # no FallbackWarning: the logged record is applied
        lib = graph.build(dense_model())
    assert [s["info"]["workload"] for s in lib.plan["steps"]] == ["dense(1, 64, 32)"]


def test_log_best_of_a_library_template_without_a_tuned_rival(tmp_path):
    db = tmp_path / "t.db"
    log(db, {("batch_matmul_cblas", (2, 8, 8, 8)): 1e-6})
    assert best(db, "batch_matmul_cblas", "2", "8", "8", "8")["build_picks"] == "cblas"


L = Target("llvm").vector_lanes  # the untuned block on this host


def test_log_best_and_the_compile_table_show_a_packed_layers_blocks(tmp_path):
    """A residual block of 2L channels whose two 3x3 convolutions (one workload) the log
    times in L-in, 2L-out and in 2L-in, L-out blocks: `log best` names a workload's
    layout among the layer's logged blocks, and the compile table shows each packed
    convolution's blocks: one writes 2L blocks and the other L blocks, the second reading
    the first's as they are (no transform between them; which of the two widens is a
    tie, as they are one workload, and the residual add computes in either block)."""
    onnx = pytest.importorskip("onnx")
    from onnx_models import residual
    onnx.save(residual(2 * L, 13), tmp_path / "block.onnx")
    layer = (1, 2 * L, 13, 13, 2 * L, 3, 3, 1, 1)
    widen, narrow = ("conv2d_nchwc", (*layer, L, 2 * L)), ("conv2d_nchwc", (*layer, 2 * L, L))
    db = tmp_path / "t.db"
    log(db, {widen: 1e-6, narrow: 2e-6})
    shown = CliRunner().invoke(cli, ["log", "best", widen[0], *map(str, widen[1]), "--db",
                                     str(db), "--json"])
    said = json.loads(shown.output)
    wide, back = f"NCHW{L}c -> NCHW{2 * L}c", f"NCHW{2 * L}c -> NCHW{L}c"
    assert said["layout"] == wide and said["blocks"] == {wide: 1e-6, back: 2e-6}
    assert said["build_applies"].endswith(f"({wide})")
    table = CliRunner().invoke(cli, ["compile", str(tmp_path / "block.onnx"), "-o",
                                     str(tmp_path / "block.zip"), "--db", str(db), "--json"])
    assert table.exit_code == 0, table.output
    calls = json.loads(table.output)["calls"]
    assert [c["layout"] for c in calls if c["layout"]] in ([wide, back], [back, wide])
    first, second = (i for i, c in enumerate(calls) if c["layout"])
    assert second == first + 1  # no transform between them
    text = CliRunner().invoke(cli, ["compile", str(tmp_path / "block.onnx"), "-o",
                                    str(tmp_path / "block.zip"), "--db", str(db)]).output
    assert wide in text and back in text and "layout" in text


@pytest.mark.parametrize("shape", ["(2, 13, 13)", "2,13,13", "2x13x13"])
def test_log_best_takes_a_shape_argument_and_names_the_row_template_applied(tmp_path, shape):
    """A template whose argument is a shape (softmax's) takes it as one word; the build
    applies the logged softmax to the graph's nn.softmax of that shape."""
    db = tmp_path / "t.db"
    log(db, {("softmax", ((2, 13, 13),)): 1e-6})
    assert best(db, "softmax", shape)["build_applies"] == "softmax((2, 13, 13))"
    bad = CliRunner().invoke(cli, ["log", "best", "softmax", "2,a", "--db", str(db)])
    assert bad.exit_code == 2 and "argument shape must be tuple" in bad.output


def test_log_best_names_the_build_of_an_attention_product(tmp_path):
    """batch_matmul's workload is the 3-D matmul the ONNX importer writes for
    attention (search_spaces/workload_calls.py), so log best names what the build
    applies to it."""
    db = tmp_path / "t.db"
    log(db, {("batch_matmul", (2, 16, 16, 8)): 1e-6})
    assert best(db, "batch_matmul", "2", "16", "16", "8")["build_applies"] == \
        "batch_matmul(2, 16, 16, 8)"


def test_log_best_names_the_int8_convolution_the_build_applies(tmp_path):
    """A quantized convolution (qnn.conv2d, packed in the target's blocks) logged as
    conv2d_nchwc_int8: log best names it, and the build's step applies that record."""
    args = (1, 16, 7, 7, 32, 3, 3, 1, 1, L, L, 3)
    db = tmp_path / "t.db"
    log(db, {("conv2d_nchwc_int8", args): 1e-6})
    said = best(db, "conv2d_nchwc_int8", *map(str, args))
    assert said["build_applies"].startswith("conv2d_nchwc_int8(1, 16, 7, 7, 32")
    text = CliRunner().invoke(cli, ["log", "best", "conv2d_nchwc_int8", *map(str, args),
                                    "--db", str(db)]).output
    assert " GOPS, " in text and "GFLOPS" not in text  # integer multiply-adds: GOPS
    top = CliRunner().invoke(cli, ["log", "top", "conv2d_nchwc_int8", *map(str, args),
                                   "--db", str(db)]).output
    assert "logged GOPS" in top and "GFLOPS" not in top
    tasks = CliRunner().invoke(cli, ["log", "tasks", "--db", str(db)]).output
    assert " GOPS" in tasks
    from compiler.graph.ir.op.qnn import qnn_conv2d
    x = graph.var("x", shape=(1, 16, 7, 7), dtype="uint8")
    w = graph.const(np.random.default_rng(4).integers(-128, 128, (32, 16, 3, 3)).astype("int8"))
    mod = graph.IRModule.from_expr(graph.Function([x], qnn_conv2d(x, w, padding=1,
                                                                  input_zero_point=3)))
    with ApplyHistoryBest(db), PassContext(opt_level=3), warnings.catch_warnings():
        warnings.simplefilter("error")  # no FallbackWarning: the logged record is applied
        lib = graph.build(mod)
    templates = [s["info"]["template"] for s in lib.plan["steps"] if s["info"]["template"]]
    assert templates == ["conv2d_nchwc_int8"]
