"""One built model shared by several Python threads (runtime/graph_executor.py): every
thread calls `run` on its own inputs, at the same time as the others, and must get the
outputs a single thread gets for those inputs; the same for the model exported and
loaded back, and for one whose parts run in external modules (BYOC). The kernels have
parallel loops, so two threads launch them on the native pool at once (runtime.ll: the
one that finds the pool taken runs its tasks itself)."""
from __future__ import annotations

import threading
import tracemalloc

import numpy as np
import pytest

from compiler import graph, runtime
from compiler.transform.pass_infra import PassContext

THREADS, RUNS = 4, 100  # runs per thread
rng = np.random.default_rng(11)


def weight(*shape):
    return graph.const((rng.standard_normal(shape) * 0.3).astype("float32"))


def small_cnn():
    """A stem convolution, a residual block (conv-relu, conv, + shortcut, relu), a pool and
    a dense head: several fused kernels whose intermediate values share storage."""
    x = graph.var("x", shape=(1, 3, 16, 16))
    stem = graph.nn.relu(graph.nn.bias_add(
        graph.nn.conv2d(x, weight(16, 3, 3, 3), padding=(1, 1)), weight(16)))
    h = graph.nn.relu(graph.nn.conv2d(stem, weight(16, 16, 3, 3), padding=(1, 1)))
    h = graph.nn.conv2d(h, weight(16, 16, 3, 3), padding=(1, 1))
    h = graph.nn.relu(graph.add(h, stem))
    h = graph.nn.max_pool2d(h, pool_size=(2, 2), strides=(2, 2))
    h = graph.nn.batch_flatten(graph.nn.global_avg_pool2d(h))
    out = graph.nn.bias_add(graph.nn.dense(h, weight(10, 16)), weight(10))
    return graph.IRModule.from_expr(graph.Function([x], out))


def built(external=()):
    with PassContext(opt_level=3):
        return graph.build(small_cnn(), external=list(external))


@pytest.fixture(scope="module")
def lib():
    return built()


def inputs(n: int) -> list[np.ndarray]:
    return [rng.standard_normal((1, 3, 16, 16)).astype("float32") for _ in range(n)]


def wrong_runs_when_shared(lib) -> list[str]:
    """Run `lib` from THREADS threads at once, RUNS times each, each thread cycling
    through inputs of its own; one line per thread that got any output other than the
    single-threaded answer for its input."""
    data = [inputs(3) for _ in range(THREADS)]
    want = [[lib.run(x=x)[0] for x in mine] for mine in data]
    start = threading.Barrier(THREADS)
    wrong = [0] * THREADS
    errors = []

    def work(t: int) -> None:
        try:
            start.wait()
            for r in range(RUNS):
                k = r % len(data[t])
                got, = lib.run(x=data[t][k])
                wrong[t] += not np.array_equal(got, want[t][k])
        except Exception as err:  # noqa: BLE001  (reported below, with its thread)
            errors.append(f"thread {t}: {err!r}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return errors + [f"thread {t}: {n} of {RUNS} runs wrong" for t, n in enumerate(wrong) if n]


def test_the_model_has_parallel_loops_fused_kernels_and_shared_storage(lib):
    assert "autosched_parallel_for" in lib.lib.get_source("ll")
    steps = lib.plan["steps"]
    assert len(steps) >= 4
    assert len(lib.plan["storage"]) < len(steps)  # intermediate values reuse storage


def test_threads_sharing_a_built_model_each_get_their_own_outputs(lib):
    wrong = wrong_runs_when_shared(lib)
    assert not wrong, "\n".join(wrong)


def test_threads_sharing_an_exported_and_loaded_model_each_get_their_own_outputs(lib, tmp_path):
    lib.export(tmp_path / "cnn.zip")
    wrong = wrong_runs_when_shared(runtime.load(tmp_path / "cnn.zip"))
    assert not wrong, "\n".join(wrong)


def test_threads_sharing_a_model_with_external_functions_each_get_their_own_outputs():
    lib = built(external=["cblas", "ccompiler"])
    assert {s.get("external") for s in lib.plan["steps"]} >= {"cblas", "c"}
    wrong = wrong_runs_when_shared(lib)
    assert not wrong, "\n".join(wrong)


def test_a_thread_gets_outputs_that_are_a_weight_or_the_input_itself():
    x = graph.var("x", shape=(2, 3))
    w = rng.standard_normal((2, 3)).astype("float32")
    lib = graph.build(graph.IRModule.from_expr(
        graph.Function([x], graph.Tuple([graph.nn.relu(x), graph.const(w), x]))))
    data = rng.standard_normal((2, 3)).astype("float32")
    seen = []
    thread = threading.Thread(target=lambda: seen.append(lib.run(x=data)))
    thread.start()
    thread.join()
    assert len(seen) == 1
    for got in (lib.run(x=data), *seen):
        for array, want in zip(got, (np.maximum(data, 0), w, data)):
            np.testing.assert_array_equal(array, want)


def test_set_input_and_get_output_belong_to_the_calling_thread(lib):
    mine, theirs = inputs(2)
    want_mine, = lib.run(x=mine)
    want_theirs, = lib.run(x=theirs)
    lib.set_input("x", mine)
    seen = {}

    def other() -> None:
        with pytest.raises(KeyError, match="no value for input.s. x in this thread"):
            lib.run()  # this thread never set x: the main thread's input is not its own
        lib.set_input("x", theirs)
        seen["run"], = lib.run()
        seen["output"] = lib.get_output(0)
        seen["timed"] = lib.time_evaluator(number=1, repeat=1)().mean

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    np.testing.assert_array_equal(seen["run"], want_theirs)
    assert seen["output"] is seen["run"] and seen["timed"] > 0
    got, = lib.run()  # the main thread's input is still its own
    np.testing.assert_array_equal(got, want_mine)
    np.testing.assert_array_equal(lib.get_output(0), want_mine)


def test_a_thread_allocates_the_planned_storage_the_inputs_and_a_slot_table_once(lib):
    """What sharing costs: each thread that uses the model allocates workspace_bytes (and
    a little for the Python objects around them), on its first set_input or run."""
    planned = lib.peak_bytes + 1 * 3 * 16 * 16 * 4 + 8 * lib.plan["num_slots"]
    assert lib.workspace_bytes == planned
    x, = inputs(1)
    grown = []

    def first_use() -> None:
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            lib.set_input("x", x)
            grown.append(tracemalloc.get_traced_memory()[0] - before)
            lib.set_input("x", x)
            grown.append(tracemalloc.get_traced_memory()[0] - before)
        finally:
            tracemalloc.stop()

    thread = threading.Thread(target=first_use)
    thread.start()
    thread.join()
    assert planned <= grown[0] < planned + 16384
    assert grown[1] - grown[0] < 1024  # the second use allocates nothing new
