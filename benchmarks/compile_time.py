"""Compile time (issue 44): per model, a fresh process imports the compiler, reads the ONNX
file (from_onnx) and builds it (graph.build at opt level 3 for "llvm -num-cores=2"), each
step timed once; with --again a second fresh process builds the same model once more,
so that only what lies on disk (the compile cache) is shared between the two.

    .venv/bin/python benchmarks/compile_time.py [--models resnet18,bert] [--again]
        [--profile] [--dump DIR]

The models are the zoo's (benchmarks/zoo.py: torchvision's ResNet-18, ResNet-50,
GoogLeNet and DenseNet-121, transformers' BERT-base at sequence length 128) and
models.py's MobileNetV2 ("mobilenet_v2"), exported once with random weights into
--dir (default: ~/.cache/autosched/benchmark-models; exporting needs PyTorch).

--profile: the build runs under cProfile and the top ten functions by own time are
printed, each marked LLVM (llvmlite's calls into LLVM: parsing, verifying, the O3
pipeline, machine code) or Python (llvmlite's IR builder included), with the build's
total split the same way. It sees this process only: a build that forks kernel workers
or runs LLVM on threads shows their work as waiting.
--dump DIR: writes DIR/<model>.plan.json (the executor's plan: steps, kernels, storage)
and DIR/<model>.asm.json (each function's assembly, labels numbered per function), which
tell whether a change altered the generated code: compare two dumps with --compare.
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = ["resnet18", "resnet50", "googlenet", "densenet121", "bert"]
TARGET = "llvm -num-cores=2"
LLVM_CALLS = os.path.join("llvmlite", "binding", "")
"""The files of llvmlite's calls into LLVM; its IR builder (llvmlite.ir) is Python."""


def export_missing(names: list[str], folder: str) -> None:
    """Export every model of `names` whose ONNX file is not in `folder` yet."""
    missing = [n for n in names if not os.path.exists(os.path.join(folder, f"{n}.onnx"))]
    if not missing:
        return
    os.makedirs(folder, exist_ok=True)
    sys.path.insert(0, HERE)
    import zoo  # PyTorch and the model libraries: only to export
    from model_defs import MODELS, export_onnx
    for name in missing:
        path = os.path.join(folder, f"{name}.onnx")
        if name in zoo.ZOO:
            zoo.export(name, path)
        elif name in MODELS:
            export_onnx(name, path)
        else:
            raise SystemExit(f"unknown model {name}: the zoo's or {', '.join(MODELS)}")
        print(f"exported {name} to {path}", flush=True)


def function_asm(asm: str) -> dict[str, str]:
    """{function: its assembly} from a module's assembly text, each function's local
    labels and constant-pool names numbered from 0 in order of appearance (LLVM numbers
    them across the module, so a function's text would change with its neighbours)."""
    out = {}
    for m in re.finditer(r"\.type\t(\S+),@function\n(.*?)\.Lfunc_end", asm, re.S):
        names: dict[str, str] = {}

        def local(label, names=names):
            return names.setdefault(label.group(0), f".L{len(names)}")
        out[m.group(1)] = re.sub(r"\.L(?:BB|CPI|tmp|JTI)\d+_\d+", local, m.group(2))
    return out


def child(path: str, dump: str | None, profile: bool) -> dict:
    """Import, read and build the model at `path` in this (fresh) process."""
    start = time.perf_counter()
    from compiler import graph
    from compiler.frontend import from_onnx
    imported = time.perf_counter()
    mod, params = from_onnx(path)
    read = time.perf_counter()
    prof = cProfile.Profile() if profile else None
    lib = (profiled(graph.build, prof) if prof else graph.build)(mod, target=TARGET,
                                                                 params=params)
    built = time.perf_counter()
    row = {"import_s": imported - start, "onnx_s": read - imported, "build_s": built - read,
           "kernels": len(lib.kernels)}
    if prof:
        row["profile"] = top_ten(prof)
    if dump:
        name = os.path.splitext(os.path.basename(path))[0]
        os.makedirs(dump, exist_ok=True)
        with open(os.path.join(dump, f"{name}.plan.json"), "w") as f:
            json.dump(lib.plan, f, indent=1, sort_keys=True, default=str)
        with open(os.path.join(dump, f"{name}.asm.json"), "w") as f:
            json.dump(function_asm(lib.lib.get_source("asm")), f, indent=1, sort_keys=True)
    return row


def profiled(build, prof: cProfile.Profile):
    """`build` with `prof` enabled while it runs."""
    def run(*args, **kwargs):
        prof.enable()
        try:
            return build(*args, **kwargs)
        finally:
            prof.disable()
    return run


def top_ten(prof: cProfile.Profile) -> dict:
    """The ten functions of most own time, each marked LLVM or Python, and the totals."""
    stats = pstats.Stats(prof).stats
    rows, llvm_s, total = [], 0.0, 0.0
    for (file, line, fn), (_, calls, own, _, _) in stats.items():
        side = "LLVM" if LLVM_CALLS in file else "Python"
        llvm_s += own if side == "LLVM" else 0.0
        total += own
        where = f"{os.path.basename(os.path.dirname(file))}/{os.path.basename(file)}:{line}" \
            if line else file
        rows.append((own, calls, side, f"{fn} ({where})"))
    rows.sort(reverse=True)
    return {"llvm_s": llvm_s, "python_s": total - llvm_s,
            "top": [list(r) for r in rows[:10]]}


def run_child(path: str, dump: str | None, profile: bool) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", path]
    cmd += ["--dump", dump] if dump else []
    cmd += ["--profile"] if profile else []
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=os.path.dirname(HERE))
    if out.returncode:
        return {"failed": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def show(name: str, run: str, row: dict) -> None:
    if "failed" in row:
        print(f"{name:14s} {run:6s} failed: {row['failed']}")
        return
    total = row["import_s"] + row["onnx_s"] + row["build_s"]
    print(f"{name:14s} {run:6s} {row['import_s']:8.2f} {row['onnx_s']:8.2f} "
          f"{row['build_s']:8.2f} {total:8.2f} {row['kernels']:8d}", flush=True)
    prof = row.get("profile")
    if prof:
        print(f"    under cProfile: Python {prof['python_s']:.2f} s, LLVM {prof['llvm_s']:.2f} s;"
              " top ten by own time:")
        for own, calls, side, fn in prof["top"]:
            print(f"    {own:7.2f} s {calls:9d} calls  {side:6s} {fn}")


def outlined_renumbered(functions: dict[str, str]) -> dict[str, str]:
    """`functions` with each kernel's outlined parallel bodies (`<kernel>_par<N>`, N
    counted over the LLVM module) numbered from 0 per kernel, in the order of N: what a
    function is called then no longer depends on which module its kernel was built in."""
    numbers: dict[str, list[int]] = {}
    for name in functions:
        m = re.fullmatch(r"(\w+)_par(\d+)", name)
        if m:
            numbers.setdefault(m.group(1), []).append(int(m.group(2)))
    names = {f"{k}_par{n}": f"{k}_par#{i}" for k, ns in numbers.items()
             for i, n in enumerate(sorted(ns))}

    def rename(text):
        return re.sub(r"\b\w+_par\d+\b", lambda m: names.get(m.group(0), m.group(0)), text)
    return {names.get(k, k): rename(v) for k, v in functions.items()}


def compare(before: str, after: str) -> None:
    """Print which models' plans and functions' assembly differ between two dumps."""
    for file in sorted(os.listdir(before)):
        other = os.path.join(after, file)
        if not os.path.exists(other):
            print(f"{file}: missing from {after}")
            continue
        a, b = (json.load(open(p)) for p in (os.path.join(before, file), other))
        if file.endswith(".asm.json"):
            a, b = outlined_renumbered(a), outlined_renumbered(b)
            differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            kernels = sorted({re.sub(r"_par#\d+$", "", k) for k in differ})
            print(f"{file}: {len(a)} functions before, {len(b)} after, "
                  f"{len(differ)} differ{', in ' + ', '.join(kernels) if differ else ''}")
        else:
            print(f"{file}: {'same' if a == b else 'differs'}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(DEFAULT))
    p.add_argument("--dir", default=os.path.expanduser("~/.cache/autosched/benchmark-models"))
    p.add_argument("--again", action="store_true", help="build once more in a new process")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--dump", help="write each model's plan and assembly here")
    p.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    p.add_argument("--child", help=argparse.SUPPRESS)
    opt = p.parse_args()
    if opt.child:
        print(json.dumps(child(opt.child, opt.dump, opt.profile)))
        return
    if opt.compare:
        compare(*opt.compare)
        return
    names = opt.models.split(",")
    export_missing(names, opt.dir)
    print(f"graph.build at opt level 3 for {TARGET!r}, a fresh process per run, seconds")
    print(f"{'model':14s} {'run':6s} {'import':>8s} {'onnx':>8s} {'build':>8s} {'total':>8s} "
          f"{'kernels':>8s}", flush=True)
    for name in names:
        path = os.path.join(opt.dir, f"{name}.onnx")
        show(name, "first", run_child(path, opt.dump, opt.profile))
        if opt.again:
            show(name, "again", run_child(path, None, opt.profile))


if __name__ == "__main__":
    main()
