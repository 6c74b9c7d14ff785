"""The ONNX backend's node tests through autosched and through ONNX Runtime, side by side
(issue 43): every test of the installed onnx, fed exactly as shipped, each held to its
expected outputs with its own tolerance (tests/compiler/onnx_node_check.py says how).
Prints the totals (pass / refused / wrong / crash) of both, per slice ('core',
'run-time shape', 'quantization', 'training', 'out-of-scope type'), the per-operator
table, how the outcomes compare with the checked-in table and, with --before, with an
earlier table; and the issue's measure: of the tests of the operators converted at the
starting commit that ONNX Runtime passes, run-time-shape and out-of-scope-type tests
aside, the share autosched refuses.

    python benchmarks/onnx_conformance.py [--ops Pow,Flatten] [--before OLD.tsv]
    python benchmarks/onnx_conformance.py --write-table   # the table, as measured now
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "compiler"))
sys.path.insert(0, ROOT)

import onnx_node_check as check  # noqa: E402

STARTING_OPS = frozenset(
    "Abs Add And ArgMax ArgMin AveragePool BatchNormalization Cast Ceil Celu Clip Concat "
    "Constant ConstantOfShape Conv ConvTranspose Cos CumSum DepthToSpace Div Dropout "
    "Einsum Elu Equal Erf Exp Expand Flatten Floor Gather GatherElements Gelu Gemm "
    "GlobalAveragePool GlobalMaxPool Greater GreaterOrEqual GroupNormalization HardSigmoid "
    "HardSwish Identity InstanceNormalization LayerNormalization LeakyRelu Less LessOrEqual "
    "Log LogSoftmax MatMul Max MaxPool Mean Min Mish Mul Neg Not Or PRelu Pad Pow Range "
    "Reciprocal ReduceL2 ReduceMax ReduceMean ReduceMin ReduceSum ReduceSumSquare Relu "
    "Reshape Resize ScatterND Selu Shape Sigmoid Sin Size Slice Softmax Softplus "
    "SpaceToDepth Split Sqrt Squeeze Sub Sum Tanh Tile TopK Transpose Trilu Unsqueeze "
    "Upsample Where".split())
"""The op types autosched converted at the starting commit of issue 43 (bce6acf)."""


def run_ort(case) -> check.Outcome:
    """The outcome of one node test through ONNX Runtime (one thread): 'refused' for any
    error it raises."""
    import onnxruntime as ort
    names = check.graph_inputs(case.model)
    try:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(case.model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        for inputs, expected in check.data_sets(case):
            got = session.run(None, dict(zip(names, inputs)))
            if any(w is None or isinstance(w, (list, dict)) for w in expected):
                same = len(got) == len(expected) and all(
                    str(g) == str(w) for g, w in zip(got, expected))
                wrong = "" if same else "a sequence or optional differs"
            else:
                wrong = check.mismatch(got, expected, case.rtol, case.atol)
            if wrong:
                return check.Outcome("wrong", wrong)
    except Exception as err:  # noqa: BLE001 - ONNX Runtime's own errors: it refuses
        return check.Outcome("refused", f"{type(err).__name__}: {str(err)[:160]}")
    return check.Outcome("pass")


def totals(outcomes: dict, slices: dict) -> list[str]:
    rows = []
    for s in ("all", "core", "run-time shape", "quantization", "training",
              "out-of-scope type"):
        names = [n for n in outcomes if s == "all" or slices[n] == s]
        count = collections.Counter(outcomes[n].kind for n in names)
        rows.append(f"  {s:18} {len(names):5}  " + "  ".join(
            f"{k} {count[k]:4}" for k in check.OUTCOMES))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", help="only the tests of these operators (comma-separated)")
    parser.add_argument("--before", help="an earlier table to compare with")
    parser.add_argument("--write-table", action="store_true",
                        help=f"write the outcomes as {os.path.relpath(check.TABLE, ROOT)}")
    parser.add_argument("--no-ort", action="store_true", help="skip ONNX Runtime")
    args = parser.parse_args(argv)
    import onnx
    start = time.perf_counter()
    cases = check.node_cases()
    ops = {n: check.operator_of(n, c.model) for n, c in cases.items()}
    if args.ops:
        wanted = set(args.ops.split(","))
        cases = {n: c for n, c in cases.items() if ops[n] in wanted}
    slices = {n: check.category(c.model) for n, c in cases.items()}
    ours, theirs = {}, {}
    for n, c in cases.items():
        ours[n] = check.run_case(c)
        if not args.no_ort:
            theirs[n] = run_ort(c)
    import onnxruntime
    print(f"{len(cases)} node tests of onnx {onnx.__version__}; ONNX Runtime "
          f"{onnxruntime.__version__}; {time.perf_counter() - start:.0f} s")
    print("autosched:")
    print("\n".join(totals(ours, slices)))
    if theirs:
        print("ONNX Runtime ('refused': it raised an error):")
        print("\n".join(totals(theirs, slices)))
        print_measure(ours, theirs, slices, ops)
    print_operators(ours, theirs, ops)
    for name in sorted(n for n, o in ours.items() if o.kind in ("wrong", "crash")):
        print(f"{ours[name].kind.upper()}: {name}: {ours[name].reason}")
    table = check.read_table() if check.TABLE.exists() else {}
    compare("the checked-in table", table, ours)
    if args.before:
        compare(args.before, check.read_table(args.before), ours)
    if args.write_table:
        check.write_table(ours if not args.ops else {**table, **ours})
        print(f"wrote {check.TABLE}")
    return 0


def print_measure(ours, theirs, slices, ops):
    """The issue's measure: the core and quantization / training tests of the starting
    commit's operators that ONNX Runtime passes, and which autosched refuses."""
    names = [n for n in ours if ops[n] in STARTING_OPS and theirs[n].kind == "pass"
             and slices[n] not in ("run-time shape", "out-of-scope type")]
    refused = [n for n in names if ours[n].kind != "pass"]
    print(f"tests of the starting commit's operators that ONNX Runtime passes "
          f"(run-time shapes and out-of-scope types aside): {len(names)}; autosched "
          f"does not pass {len(refused)} ({100 * len(refused) / max(len(names), 1):.1f}%)")
    for n in refused:
        print(f"  {n}: {ours[n].kind}: {ours[n].reason}")


def print_operators(ours, theirs, ops):
    by_op = collections.defaultdict(list)
    for n in ours:
        by_op[ops[n]].append(n)
    print(f"{'operator':28} {'tests':>5} {'pass':>5} {'refused':>7} {'wrong':>5} "
          f"{'crash':>5} {'ORT pass':>8}")
    for op in sorted(by_op):
        count = collections.Counter(ours[n].kind for n in by_op[op])
        ort_pass = sum(theirs[n].kind == "pass" for n in by_op[op]) if theirs else "-"
        print(f"{op:28} {len(by_op[op]):5} {count['pass']:5} {count['refused']:7} "
              f"{count['wrong']:5} {count['crash']:5} {ort_pass:>8}")


def compare(what, table, ours):
    """How the outcomes moved against `table`: passes lost are listed by name."""
    if not table:
        return
    moves = collections.Counter((table[n].kind, o.kind) for n, o in ours.items()
                                if n in table and table[n].kind != o.kind)
    lost = sorted(n for n, o in ours.items()
                  if n in table and table[n].kind == "pass" and o.kind != "pass")
    print(f"against {what}: " + (", ".join(f"{a} -> {b}: {k}" for (a, b), k in
                                            sorted(moves.items())) or "no outcome moved"))
    for n in lost:
        print(f"  LOST: {n}: {ours[n].kind}: {ours[n].reason}")


if __name__ == "__main__":
    sys.exit(main())
