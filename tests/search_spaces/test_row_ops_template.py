"""The row kernels' templates (search_spaces/row_ops.py): softmax, log_softmax and
layer norm with their stages inside the output's row blocks, for the target they are
built for; the graph's nn.softmax / nn.layer_norm calls are scheduled by them untuned.
(Their outputs on sampled configs: test_template_references.py.)"""
from __future__ import annotations

import re

import numpy as np
import pytest

import compiler
import search_spaces
from compiler import Target, graph
from compiler.graph.ir.reference import evaluate
from compiler.transform.pass_infra import PassContext

HASWELL, SKYLAKE = "llvm -mcpu=haswell", "llvm -mcpu=skylake-avx512"


def _config(name, args, **knobs):
    space = search_spaces.space(name, *args)
    return next(c for c in (space.get(i) for i in range(len(space)))
                if all((c[k].size[-1] if k == "tile_rows" else c[k].val) == v
                       for k, v in knobs.items()))


def test_a_block_computes_exactly_its_rows():
    """Rows blocked along the last row axis and fused with the axes before it: the
    stages inside a block of 4 rows of 37 hold 4 x 37 values (a block of rows fused
    across two outer indices would be relaxed to every row of both)."""
    args = ((2, 12, 37),)
    cfg = _config("softmax", args, tile_rows=4, compute_at="block", parallel=1)
    s, tensors = search_spaces.instantiate("softmax", *args, config=cfg)
    text = str(compiler.lower(s, tensors))
    assert "allocate exp[float32 * 148]" in text
    assert "parallel" in text


@pytest.mark.parametrize("spec", [HASWELL, SKYLAKE])
def test_the_kernel_takes_its_vectors_from_the_target(spec):
    """The reductions' partial accumulators and the vector loops are the target's lanes
    (8 on AVX2, 16 on AVX-512); the code for either builds on any x86 host and the
    Haswell one runs on it."""
    args = ((7, 13, 64), 2, 1e-5)
    with Target(spec):
        lanes = Target.resolve().vector_lanes
        space = search_spaces.space("layer_norm", *args)
        for cfg in [space.fallback(), *space.sample(3, seed=2)]:
            s, tensors = search_spaces.instantiate("layer_norm", *args, config=cfg)
            text = str(compiler.lower(s, tensors))
            held = int(re.search(r"allocate mean\.partial\[float32 \* (\d+)\]", text)[1])
            assert held == cfg["tile_rows"].size[-1] * lanes or held == lanes, text
            assert set(re.findall(r"vectorized \(\S+, 0, (\d+)\)", text)) == {str(lanes)}
            f = compiler.build(s, tensors, target=spec)
            if spec == HASWELL:
                rng = np.random.default_rng(0)
                ins = [rng.standard_normal([d.value for d in t.shape]).astype("float32")
                       for t in tensors[:-1]]
                out = np.empty((7, 13, 64), "float32")
                f(*ins, out)
                want, = search_spaces.get_template("layer_norm").reference_outputs(args, ins)
                np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)


def test_the_graphs_row_ops_run_on_the_templates_untuned():
    x = graph.var("x", shape=(7, 37))
    g, b = (graph.const(np.linspace(-1, 1, 37, dtype="float32")) for _ in range(2))
    y = graph.nn.log_softmax(graph.nn.softmax(graph.nn.layer_norm(x, g, b)))
    fn = graph.Function([x], y)
    with PassContext(opt_level=3):
        lib = graph.build(graph.IRModule.from_expr(fn))
    assert [(s["info"]["template"], s["info"]["fallback"]) for s in lib.plan["steps"]] == \
        [("layer_norm", True), ("softmax", True), ("log_softmax", True)]
    data = np.random.default_rng(1).standard_normal((7, 37)).astype("float32")
    np.testing.assert_allclose(lib.run(x=data)[0], evaluate(fn, data), rtol=1e-4, atol=1e-4)
