"""`autosched compile` and `autosched run`: an ONNX model compiled to one file, run on
given inputs with the outputs written and checked against ONNX Runtime, profiled; bad
models and options are one line on stderr and exit 2; a model tuned, compiled with the
log and benchmarked. The compiled file is run by the console script in a fresh process,
and a missing log and a bad `run` are exit statuses of the console script; the rest runs
in this process (cli_check.invoke), tuning on the session's Ray."""
from __future__ import annotations

import json

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx_models import mobile_block, pads_and_concat  # noqa: E402

from cli_check import autosched, invoke  # noqa: E402

from compiler.runtime.export_library import c_compiler  # noqa: E402

pytestmark = pytest.mark.slow


def test_compile_then_run_matches_onnx_runtime(tmp_path):
    m = mobile_block()
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    onnx.save(m, tmp_path / "block.onnx")
    compiled = invoke("compile", "block.onnx", "-o", "block.zip", "--shape", "x:1,13,37,37",
                      "--json", cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    report = json.loads(compiled.stdout)
    assert [c["ops"][0] for c in report["calls"]][:2] == ["nn.conv2d", "nn.conv2d"]
    x = np.random.default_rng(1).standard_normal((1, 13, 37, 37)).astype("float32")
    np.savez(tmp_path / "in.npz", x=x)
    ran = autosched("run", "block.zip", "--inputs", "in.npz", "--outputs", "out.npz", "--repeat", 3,
                    "--profile", "--json", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["outputs"] == [[1, 37]] and len(result["profile"]) == len(report["calls"])
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1
    want, = ort.InferenceSession(m.SerializeToString(),
                                 providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["output_0"], want, rtol=1e-4,
                               atol=1e-4)
    table = invoke("run", "block.zip", "--repeat", 2, "--profile", cwd=tmp_path)
    assert table.returncode == 0 and "nn.conv2d" in table.stdout and "median" in table.stdout


def test_bad_models_and_options_are_one_line_and_exit_code_2(tmp_path):
    m = mobile_block()
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    onnx.save(m, tmp_path / "dynamic.onnx")
    onnx.save(pads_and_concat(), tmp_path / "no_anchor.onnx")
    for args, words in [
        (("tune", "dynamic.onnx", "--db", "t.db"), "input x has a dynamic dimension"),
        (("tune", "no_anchor.onnx", "--db", "t.db"), "there is nothing to tune"),
        (("tune", "matmul", 16, 16, 16, "--shape", "x:1,2", "--db", "t.db"),
         "--shape is for a model"),
        (("tune", "matmul", 16, 16, 16, "--alternatives", "--db", "t.db"),
         "--alternatives is for a model"),
        (("bench", "dynamic.onnx", "3"), "a model takes no arguments"),
        (("compile", "dynamic.onnx", "-o", "d.zip"), "input x has a dynamic dimension"),
        (("compile", "missing.onnx", "-o", "d.zip"), "missing.onnx: no such file"),
        (("compile", "dynamic.onnx", "-o", "d.zip", "--shape", "x=1,2"), "NAME:D1,D2"),
        (("run", "dynamic.onnx"), "dynamic.onnx"),
    ]:
        call = autosched if args[0] == "run" else invoke  # `run`'s exit status, for real
        done = call(*args, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stderr)
        assert words in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "t.db").exists()  # bad input creates no log


def test_compile_with_a_log_applies_the_logged_config_and_says_so(tmp_path):
    import records
    import search_spaces
    import tuner
    onnx.save(mobile_block(), tmp_path / "block.onnx")
    # the block's pointwise convolution: 13 -> 37 channels, 1x1, on the 19x19 output of
    # the stride-2 depthwise one (13 and 37 channels do not pack, so it stays NCHW)
    args = (1, 13, 19, 19, 37, 1, 1, 1, 0)
    task = tuner.Task("conv2d_nchw", args, target="llvm")
    logged = search_spaces.space("conv2d_nchw", *args).get(5)
    with records.Database(tmp_path / "tune.db") as db:
        db.add(task, [tuner.MeasureInput(task, logged)],
               [tuner.MeasureResult((1e-6, 1e-6), tuner.MeasureErrorNo.NO_ERROR, "", 0.01,
                                    1.0, "testhost")])
    compiled = invoke("compile", "block.onnx", "-o", "block.zip", "--db", "tune.db", "--json",
                      cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    infos = [c["info"] for c in json.loads(compiled.stdout)["calls"]]
    assert infos[0]["template"] == "depthwise_conv2d_nchw" and infos[0]["fallback"] is True
    record = infos[1].pop("record")
    assert infos[1] == {"template": "conv2d_nchw", "workload": f"conv2d_nchw{args!r}",
                        "config": "#5", "fallback": False, "record_seconds": 1e-6,
                        "record_gflops": pytest.approx(task.flop / 1e-6 / 1e9),
                        "confirmed": False, "tier": "target"}
    assert isinstance(record, int)
    table = invoke("compile", "block.onnx", "-o", "block.zip", "--db", "tune.db", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert "conv2d_nchw: logged config #5 (record" in table.stdout  # N, its GFLOPS)
    assert f"{record}, {task.flop / 1e-6 / 1e9:.1f} GFLOPS)" in table.stdout
    assert "depthwise_conv2d_nchw: fallback config" in table.stdout
    missing = autosched("compile", "block.onnx", "-o", "block.zip", "--db", "nope.db", cwd=tmp_path)
    assert missing.returncode == 2 and "nope.db: no tuning log there" in missing.stderr
    ran = invoke("run", "block.zip", "--repeat", 2, "--profile", "--json", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["profile"][1]["config"] == "#5"


def test_tune_a_model_then_compile_run_and_bench_it_with_the_log(local_ray, tmp_path):
    """The product's promise on a small model: `tune MODEL.onnx` extracts its tasks (the
    block's depthwise and pointwise convolutions, weight 1 each), tunes them with the
    model's estimated latency in its progress lines, resumes without measuring a config
    twice; `compile --db` applies both tasks' records; `bench MODEL --db` times untuned,
    tuned and ONNX Runtime with every output matching."""
    import records
    import tuner
    onnx.save(mobile_block(), tmp_path / "block.onnx")
    tuned = invoke("tune", "block.onnx", "--trials", 16, "--batch-size", 8, "--db", "tune.db",
                   "--seed", 0, cwd=tmp_path)
    assert tuned.returncode == 0, tuned.stderr
    out = tuned.stdout
    assert "block.onnx: 2 tasks for 2 kernel calls" in out
    assert "depthwise_conv2d_nchw(1, 13, 37, 37, 3, 3, 2, 1)" in out
    assert "model est." in out and "x untuned)" in out
    assert "autosched compile block.onnx -o block.so --db tune.db" in out
    again = invoke("tune", "block.onnx", "--trials", 8, "--batch-size", 8, "--db", "tune.db",
                   cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    tasks = [tuner.Task("depthwise_conv2d_nchw", (1, 13, 37, 37, 3, 3, 2, 1)),
             tuner.Task("conv2d_nchw", (1, 13, 19, 19, 37, 1, 1, 1, 0))]
    with records.Database(tmp_path / "tune.db") as db:
        trials = [[r.config_index for r in db.records(t) if r.role != "control"]
                  for t in tasks]
        assert all(len(t) == len(set(t)) for t in trials)  # nothing measured twice
        assert sum(map(len, trials)) == 16 + 8 + 2  # the trials and the two fallbacks
        assert all(db.confirmation(t) is not None for t in tasks)
    compiled = invoke("compile", "block.onnx", "-o", "block.zip", "--db", "tune.db", "--json",
                      cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    infos = [c["info"] for c in json.loads(compiled.stdout)["calls"]][:2]
    assert [i["template"] for i in infos] == ["depthwise_conv2d_nchw", "conv2d_nchw"]
    assert all(i["record"] is not None and i["confirmed"] and i["record_gflops"] > 0
               for i in infos)
    bench = invoke("bench", "block.onnx", "--db", "tune.db", "--repeat", 3, "--json",
                   cwd=tmp_path)
    assert bench.returncode == 0, bench.stderr
    rows = json.loads(bench.stdout)["rows"]
    assert [r["name"].split(" (")[0] for r in rows] == [
        "autosched untuned", "autosched tuned", "ONNX Runtime"]
    assert "2 of 4 kernels from the log" in rows[1]["name"]
    assert all(r["correct"] and r["seconds"] > 0 for r in rows)


def _token_model():
    """Token ids (int64) and an attention mask (bool), both of a dynamic sequence
    length: embeddings gathered, masked, averaged over the sequence."""
    from onnx import TensorProto, helper, numpy_helper
    nodes = [helper.make_node("Gather", ["embedding", "ids"], ["e"]),
             helper.make_node("Cast", ["mask"], ["m"], to=TensorProto.FLOAT),
             helper.make_node("Unsqueeze", ["m", "last"], ["m3"]),
             helper.make_node("Mul", ["e", "m3"], ["em"]),
             helper.make_node("ReduceMean", ["em"], ["y"], axes=[1], keepdims=0)]
    inits = [numpy_helper.from_array(np.random.default_rng(2).standard_normal(
        (37, 13)).astype("float32"), "embedding"),
        numpy_helper.from_array(np.array([-1], "int64"), "last")]
    g = helper.make_graph(nodes, "tokens", [
        helper.make_tensor_value_info("ids", TensorProto.INT64, [1, "seq"]),
        helper.make_tensor_value_info("mask", TensorProto.BOOL, [1, "seq"])],
        [helper.make_empty_tensor_value_info("y")], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _run_tokens(tmp_path, compiled: str) -> None:
    """Run the compiled token model by the console script (a fresh process) on given ids
    and mask; its output matches ONNX Runtime's."""
    ids = np.array([[3, 0, 36, 5, 5, 1, 2]], "int64")
    mask = np.array([[1, 1, 1, 0, 1, 0, 1]], bool)
    np.savez(tmp_path / "in.npz", ids=ids, mask=mask)
    ran = autosched("run", compiled, "--inputs", "in.npz", "--outputs", "out.npz",
                    "--repeat", 2, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    want, = ort.InferenceSession(str(tmp_path / "tokens.onnx"), providers=[
        "CPUExecutionProvider"]).run(None, {"ids": ids, "mask": mask})
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["output_0"], want, rtol=1e-5)


def test_a_model_of_int64_and_bool_inputs_with_a_dynamic_length_compiles_runs_and_benches(
        tmp_path):
    onnx.save(_token_model(), tmp_path / "tokens.onnx")
    shapes = ["--shape", "ids:1,7", "--shape", "mask:1,7"]
    compiled = invoke("compile", "tokens.onnx", "-o", "tokens.zip", *shapes, cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    _run_tokens(tmp_path, "tokens.zip")
    bench = invoke("bench", "tokens.onnx", *shapes, "--repeat", 2, "--json", cwd=tmp_path)
    assert bench.returncode == 0, bench.stderr
    rows = json.loads(bench.stdout)["rows"]
    assert all(r["correct"] for r in rows) and rows[-1]["name"].startswith("ONNX Runtime")


@pytest.mark.skipif(c_compiler() is None, reason="no C compiler to link a model library")
def test_compile_writes_a_shared_library_and_its_header_that_run_opens(tmp_path):
    """-o NAME.so is a shared library with a C API (runtime/export_library.py): int64 and
    bool inputs, run by the console script through ctypes and the C API."""
    onnx.save(_token_model(), tmp_path / "tokens.onnx")
    shapes = ["--shape", "ids:1,7", "--shape", "mask:1,7"]
    compiled = invoke("compile", "tokens.onnx", "-o", "tokens.so", "--format", "header",
                      *shapes, "--json", cwd=tmp_path)
    assert compiled.returncode == 0, compiled.stderr
    library = json.loads(compiled.stdout)["library"]
    assert library["needed"] and library["code_bytes"] > 0 and library["weights_bytes"] > 0
    assert (tmp_path / "tokens.so").read_bytes()[:4] == b"\x7fELF"
    header = (tmp_path / "tokens.h").read_text()
    assert " *   0: ids  int64[1, 7]" in header and " *   1: mask  bool[1, 7]" in header
    _run_tokens(tmp_path, "tokens.so")
    named = invoke("compile", "tokens.onnx", "-o", "named.h", *shapes, "--json", cwd=tmp_path)
    assert named.returncode == 0, named.stderr  # the header's name: the library beside it
    assert json.loads(named.stdout)["output"] == "named.so"
    assert (tmp_path / "named.so").read_bytes()[:4] == b"\x7fELF"
    assert " *   0: ids  int64[1, 7]" in (tmp_path / "named.h").read_text()
    bench = invoke("bench", "tokens.onnx", *shapes, "--library", "--repeat", 2, "--json",
                   cwd=tmp_path)
    assert bench.returncode == 0, bench.stderr
    rows = {r["name"]: r for r in json.loads(bench.stdout)["rows"]}
    assert rows["autosched untuned, as a model library (C API)"]["correct"]
    for args, words in [(("run", "tokens.so", "--profile"), "compile the zip form"),
                        (("bench", "matmul", 8, 8, 8, "--library"), "--library is for a model"),
                        (("compile", "tokens.onnx", "-o", "t.so", "--format", "zip", *shapes),
                         "a file named .so is a shared library")]:
        bad = invoke(*args, cwd=tmp_path)
        assert bad.returncode == 2 and words in bad.stderr, bad.stderr


def test_compile_keeps_its_kernels_in_the_compile_cache_unless_no_cache(tmp_path):
    onnx.save(mobile_block(), tmp_path / "block.onnx")
    cache = tmp_path / "cache"
    env = {"AUTOSCHED_NO_CACHE": None, "AUTOSCHED_CACHE_DIR": str(cache)}
    fresh = invoke("compile", "block.onnx", "-o", "a.zip", "--no-cache", cwd=tmp_path, env=env)
    assert fresh.returncode == 0, fresh.stderr
    assert not cache.exists()
    kept = invoke("compile", "block.onnx", "-o", "b.zip", cwd=tmp_path, env=env)
    assert kept.returncode == 0, kept.stderr
    assert [p for p in cache.rglob("*") if p.is_file()]
