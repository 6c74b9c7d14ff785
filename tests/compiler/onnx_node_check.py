"""The ONNX backend's node tests (onnx.backend.test.case.node: one small model per
operator variant, with inputs and the expected outputs of ONNX's reference
implementation), run through autosched as a user would: imported with the shapes of the
test's own inputs, built at opt level 3, run on the inputs exactly as shipped, and held to
the expected outputs with the test's own tolerance (floats by assert_allclose with its
rtol / atol, a 16-bit float within two of its ulps at least, as onnx's own runner holds
bfloat16; integers and bools exactly, shapes and dtypes exactly).

Each test ends in one outcome:
    pass      every output of every data set matched
    refused   the import or the build said no with a FrontendError / BuildError (the reason
              is its message, less the file and the node's name)
    wrong     an output differs: the one unforgivable bug
    crash     any other exception escaped: an error a user cannot read

TABLE is the checked-in expectation, one line a test: `name<TAB>outcome<TAB>reason`.
frontend/test_onnx_node_tests.py holds every test to it; benchmarks/onnx_conformance.py
prints it against ONNX Runtime and writes it anew (--write-table) when an outcome moves
on purpose.
"""
from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from compiler import graph
from compiler.errors import BuildError, FrontendError
from compiler.frontend import from_onnx
from compiler.transform.pass_infra import PassContext

TABLE = Path(__file__).with_name("onnx_node_tests.tsv")
OUTCOMES = ("pass", "refused", "wrong", "crash")


@dataclass(frozen=True)
class Outcome:
    kind: str  # one of OUTCOMES
    reason: str = ""


def node_cases() -> dict:
    """{name: onnx TestCase} of every node test the installed onnx generates (about 6 s:
    the models and data are made in memory, nothing is read from disk)."""
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's overflow warnings while making the data
        return {c.name: c for c in sorted(collect_testcases(None), key=lambda c: c.name)}


def data_sets(case) -> list[tuple[list, list]]:
    """The test's (inputs, expected outputs) pairs, a TensorProto among them as its array
    (as onnx's own runner reads them)."""
    from onnx import TensorProto, numpy_helper

    def array(v):
        return numpy_helper.to_array(v) if isinstance(v, TensorProto) else v
    return [([array(v) for v in ins], [array(v) for v in outs]) for ins, outs in case.data_sets]


def graph_inputs(model) -> list[str]:
    """The names of the inputs a test feeds (the graph's inputs that are no initializer),
    in the order of its data sets."""
    init = {t.name for t in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in init]


def run_case(case) -> Outcome:
    """The outcome of one node test through autosched (the module docstring)."""
    names = graph_inputs(case.model)
    try:
        sets = data_sets(case)
        shape = {n: a.shape for n, a in zip(names, sets[0][0]) if isinstance(a, np.ndarray)}
        mod, params = from_onnx(case.model, shape=shape)
        with PassContext(opt_level=3):
            lib = graph.build(mod, params=params)
        for inputs, expected in sets:
            got = lib.run(**dict(zip(names, inputs)))
            wrong = mismatch(got, expected, case.rtol, case.atol)
            if wrong:
                return Outcome("wrong", wrong)
    except (FrontendError, BuildError) as err:
        return Outcome("refused", reason_of(err))
    except Exception as err:  # noqa: BLE001 - the point: nothing else may escape
        first_line = str(err).splitlines()[0] if str(err) else ""
        return Outcome("crash", f"{type(err).__name__}: {first_line}")
    return Outcome("pass")


def mismatch(got: list, expected: list, rtol: float, atol: float) -> str:
    """'' when `got` matches `expected` (the module docstring's rules), else what
    differs first."""
    if len(got) != len(expected):
        return f"{len(got)} outputs, expected {len(expected)}"
    for k, (g, w) in enumerate(zip(got, expected)):
        if w is None or isinstance(w, (list, dict)):  # an optional or a sequence
            return f"output {k}: expected a {type(w).__name__}"
        g, w = np.asarray(g), np.asarray(w)  # (the reference gives numpy scalars as such)
        if g.dtype != w.dtype or g.shape != w.shape:
            return f"output {k}: {g.dtype}{list(g.shape)}, expected {w.dtype}{list(w.shape)}"
        if w.dtype.kind in "fc" or w.dtype.name == "bfloat16":  # (ml_dtypes' is kind V)
            # a 16-bit float within two of its ulps at least, as onnx's own runner holds
            # bfloat16 (the expected value is rounded once, and a reordering may round
            # the other way: float16's 1e-3 is one ulp)
            tol = max(rtol, _TWO_ULPS.get(w.dtype.name, 0.0))
            try:
                np.testing.assert_allclose(g.astype("float64"), w.astype("float64"),
                                           rtol=tol, atol=atol)
            except AssertionError as err:
                lines = [ln.strip() for ln in str(err).splitlines() if "Mismatch" in ln]
                return f"output {k}: {lines[0] if lines else 'values differ'}"
        elif not np.array_equal(g, w):
            return f"output {k}: {int(np.sum(g != w))} of {w.size} values differ"
    return ""


_TWO_ULPS = {"bfloat16": 2 ** -6, "float16": 2 ** -9}


def reason_of(err: Exception) -> str:
    """An error's message as the table keeps it: its first line, without the file and the
    node's name (the op type stays) and without the list of supported op types, which
    grows with every converter."""
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    text = re.sub(r"^<model>: ", "", text)
    text = re.sub(r"^node .*? \((\w+)\): ", r"\1: ", text)
    return re.sub(r"; the supported ones are .*", "", text)


def read_table(path: Path = TABLE) -> dict[str, Outcome]:
    """{test name: expected Outcome} as checked in."""
    table = {}
    for line in Path(path).read_text().splitlines():
        if line and not line.startswith("#"):
            name, kind, reason = (line.split("\t") + [""])[:3]
            table[name] = Outcome(kind, reason)
    return table


def write_table(outcomes: dict[str, Outcome], path: Path = TABLE) -> None:
    """Write `outcomes` as the table, sorted by test name."""
    head = ("# The expected outcome of every ONNX backend node test through autosched "
            "(tests/compiler/onnx_node_check.py);\n# written by benchmarks/"
            "onnx_conformance.py --write-table. name<TAB>outcome<TAB>reason\n")
    rows = (f"{name}\t{o.kind}\t{o.reason}".rstrip("\t") for name, o in sorted(outcomes.items()))
    path.write_text(head + "\n".join(rows) + "\n")


# -- what a test needs: the slices benchmarks/onnx_conformance.py counts apart --

SHAPE_INPUTS = {
    "Reshape": (1,), "Expand": (1,), "Tile": (1,), "Slice": (1, 2, 3, 4), "Pad": (1, 3),
    "Resize": (2, 3), "Upsample": (1,), "ConstantOfShape": (0,), "Range": (0, 1, 2),
    "TopK": (1,), "OneHot": (1,), "Split": (1,), "Squeeze": (1,), "Unsqueeze": (1,),
    "CumSum": (1,), "CenterCropPad": (1,), "Col2Im": (1, 2), "DFT": (1, 2),
    "STFT": (1, 3), "AffineGrid": (1,), "HannWindow": (0,), "HammingWindow": (0,),
    "BlackmanWindow": (0,), "MelWeightMatrix": (0, 1),
    **{f"Reduce{k}": (1,) for k in ("Sum", "Mean", "Max", "Min", "Prod", "L1", "L2",
                                     "LogSum", "LogSumExp", "SumSquare")},
}
"""Op type -> the positions of its inputs whose values decide an output's shape."""

DYNAMIC_OPS = {"NonZero", "Unique", "NonMaxSuppression", "Compress", "If", "Loop", "Scan"}
"""Ops whose output shape depends on data (or that hold subgraphs)."""

QUANTIZATION_OPS = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
                    "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger"}
TRAINING_OPS = {"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss", "Gradient",
                "Adagrad", "Adam", "Momentum"}
OUT_OF_SCOPE_TYPES = ("STRING", "FLOAT8", "FLOAT4", "FLOAT6", "INT4", "UINT4", "INT2",
                      "UINT2")
"""Element types (TensorProto names, by prefix) that stay refused by name: strings,
float8 / float6 / float4 and the sub-byte integers."""


def runtime_shape_input(model) -> str:
    """'' unless the test needs shapes known only at run time: a graph input reaches,
    through any ops but Shape and Size, an input that decides a shape (SHAPE_INPUTS), or
    the graph uses DYNAMIC_OPS, sequences or optionals; else what needs them."""
    live = set(graph_inputs(model))
    for node in model.graph.node:
        if node.op_type in DYNAMIC_OPS or "Sequence" in node.op_type or \
                "Optional" in node.op_type:
            return f"{node.op_type} (its output's shape depends on data)"
        for k in SHAPE_INPUTS.get(node.op_type, ()):
            if k < len(node.input) and node.input[k] in live:
                return f"{node.op_type}'s input {k} ({node.input[k]!r}) comes from a graph input"
        if node.op_type not in ("Shape", "Size") and any(i in live for i in node.input):
            live.update(o for o in node.output if o)
    for value in (*model.graph.input, *model.graph.output):
        if value.type.WhichOneof("value") in ("sequence_type", "optional_type", "map_type"):
            return f"{value.name} is a {value.type.WhichOneof('value').split('_')[0]}"
    return ""


def out_of_scope_type(model) -> str:
    """The first element type of OUT_OF_SCOPE_TYPES the model uses ('' if none): in its
    inputs, outputs, initializers, constants or a Cast's target."""
    from onnx import TensorProto
    found = [v.type.tensor_type.elem_type for v in (*model.graph.input, *model.graph.output)
             if v.type.HasField("tensor_type")]
    found += [t.data_type for t in model.graph.initializer]
    for node in model.graph.node:
        for a in node.attribute:
            if a.name in ("to", "output_dtype", "dtype") and a.type == a.INT:
                found.append(a.i)
            elif a.type == a.TENSOR:
                found.append(a.t.data_type)
    for t in found:
        name = TensorProto.DataType.Name(t) if t in TensorProto.DataType.values() else str(t)
        if name.startswith(OUT_OF_SCOPE_TYPES):
            return name.lower()
    return ""


def category(model) -> str:
    """Which slice a test belongs to: 'out-of-scope type', 'run-time shape',
    'quantization', 'training', or 'core'."""
    ops = {n.op_type for n in model.graph.node}
    if out_of_scope_type(model):
        return "out-of-scope type"
    if runtime_shape_input(model):
        return "run-time shape"
    if ops & QUANTIZATION_OPS:
        return "quantization"
    if ops & TRAINING_OPS or any(n.domain == "ai.onnx.preview.training"
                                 for n in model.graph.node):
        return "training"
    return "core"


def operator_of(name: str, model) -> str:
    """The operator a test is about: its one op type besides Constant, else (an expanded
    function body) the longest op type its name starts with, spelled as in the name."""
    ops = {n.op_type for n in model.graph.node} - {"Constant"}
    if len(ops) == 1:
        return ops.pop()
    from onnx import defs
    flat = name.removeprefix("test_").replace("_", "").lower()
    names = sorted({s.name for s in defs.get_all_schemas()}, key=len, reverse=True)
    return next((op for op in names if flat.startswith(op.lower())), "(several)")
