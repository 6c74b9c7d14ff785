"""`autosched compile` and `autosched run` (as `tvmc compile` / `tvmc run`): an ONNX
model built into one file, and that file run on inputs, timed and profiled."""
from __future__ import annotations

import contextlib
import os
import statistics
import time
import warnings

import click
import numpy as np

from compiler import graph, runtime
from compiler.disk_cache import no_cache
from compiler.errors import BuildError, FrontendError
from compiler.frontend import from_onnx
from compiler.runtime.elf_info import read_elf
from compiler.transform.pass_infra import PassContext
from records import ApplyHistoryBest, FallbackWarning, RecordsError

from ..verify import model_inputs
from .common import (BadInput, external_option, format_seconds, json_option, make_console,
                     opt_level_option, print_json, shape_option)


@click.command("compile")
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
              help="The file to write (runs with `autosched run`).")
@click.option("--format", "fmt", type=click.Choice(["shared", "header", "zip"]),
              help="shared: one shared library with a C API and the weights inside, that "
                   "needs only the C runtime (linked by the system C compiler); header: "
                   "that and its header, OUTPUT with .h (the model's inputs and outputs, "
                   "the C API; -o model.h writes model.so beside it); zip: the archive that "
                   "only compiler.runtime.load opens, which `autosched run --profile` "
                   "profiles and which takes cblas parts. [default: shared for a name "
                   "ending in .so, header for .h, else zip]")
@click.option("--target", default="llvm", show_default=True, help="The target to build for.")
@click.option("--db", type=click.Path(dir_okay=False),
              help="A tuning log: each kernel's anchor gets its best logged config.")
@click.option("--no-cache", "fresh", is_flag=True,
              help="Compile every kernel anew, neither reading nor writing the compile "
                   "cache ($AUTOSCHED_CACHE_DIR, else ~/.cache/autosched/kernels), which "
                   "otherwise makes a kernel built before a look-up.")
@shape_option
@opt_level_option
@external_option
@json_option
def compile_model(model, output, target, shapes, opt_level, external, db, fmt, as_json,
                  fresh):
    """Import MODEL (ONNX), optimize and fuse it, build every fused kernel (with the
    best configs of the tuning log --db where it has them), and write one file; prints
    the fused kernels, the blocks of each packed convolution (layout: "NCHW16c ->
    NCHW8c", chosen for the whole model from the log's times) and how each was
    scheduled. With --external, the parts the
    external codegens take are theirs (OpenBLAS calls, C), in the same file.

    Examples: autosched compile resnet18.onnx -o resnet18.so --db tune.db;
    autosched compile resnet18.onnx -o resnet18.zip --external cblas
    """
    fmt = fmt or {".so": "shared", ".h": "header"}.get(os.path.splitext(output)[1], "zip")
    if fmt == "header" and output.endswith(".h"):  # the header named: the library beside it
        output = os.path.splitext(output)[0] + ".so"
    if fmt == "zip" and output.endswith(".so"):
        raise BadInput(f"-o {output}: a file named .so is a shared library (--format shared); "
                       "give the zip form another name, e.g. model.zip")
    start = time.perf_counter()
    try:
        mod, params = from_onnx(model, shape=shapes)
        history = ApplyHistoryBest(db, target=target) if db else contextlib.nullcontext()
        # a workload the log lacks is said in the table ("fallback"), not as warnings
        cache = no_cache() if fresh else contextlib.nullcontext()
        with warnings.catch_warnings(), history, cache, PassContext(opt_level=opt_level):
            warnings.simplefilter("ignore", FallbackWarning)
            lib = graph.build(mod, target=target, params=params, external=external)
    except (FrontendError, BuildError, RecordsError) as err:
        raise BadInput(str(err)) from None
    seconds = time.perf_counter() - start
    header = _header_path(output) if fmt == "header" else None
    try:
        if fmt == "zip":
            lib.export(output)
        else:
            lib.export_library(output, header=header)
    except BuildError as err:
        raise BadInput(f"-o {output}: {err}") from None
    library = _library_summary(lib, output, header) if fmt != "zip" else None
    steps = lib.plan["steps"]
    if as_json:
        return print_json({"output": output, "format": fmt, "library": library,
                           "seconds": seconds, "kernels": len(lib.kernels),
                           "peak_bytes": lib.peak_bytes,
                           "calls": [{"kernel": s["kernel"], "ops": s["ops"],
                                      "info": s.get("info"), "layout": s.get("layout")}
                                     for s in steps]})
    from rich.table import Table
    packed = any("layout" in s for s in steps)  # a column only where convolutions pack
    table = Table("call", "kernel", "fused ops", "output", *(["layout"] if packed else []),
                  "schedule")
    for i, s in enumerate(steps):
        table.add_row(str(i), s["kernel"], " + ".join(s["ops"]), f"{tuple(s['shape'])}",
                      *([s.get("layout", "")] if packed else []), schedule_text(s.get("info")))
    console = make_console()
    console.print(table)
    console.print(f"{model}: {len(steps)} kernel calls, {len(lib.kernels)} distinct kernels, "
                  f"{lib.peak_bytes / 2 ** 20:.1f} MiB of intermediate values (planned, "
                  f"reused), built in {seconds:.1f} s; wrote {output}")
    if library:
        mib = 2 ** 20
        console.print(f"{output}: a shared library of {library['bytes'] / mib:.1f} MiB "
                      f"({library['code_bytes'] / mib:.2f} MiB of code, "
                      f"{library['weights_bytes'] / mib:.1f} MiB of weights); it needs "
                      f"{', '.join(library['needed'])}; its C API is in "
                      f"{header or 'the header that --format header writes'}")


def _library_summary(lib, output: str, header: str | None) -> dict:
    """A model library's size, code and weights bytes, and the libraries it needs."""
    elf = read_elf(output)
    return {"bytes": os.path.getsize(output), "code_bytes": elf.sections.get(".text", 0),
            "weights_bytes": sum(v.nbytes for v in lib.constants.values()),
            "needed": elf.needed, "header": header}


def _header_path(output: str) -> str:
    """The header next to a library: model.so -> model.h."""
    return os.path.splitext(output)[0] + ".h"


def schedule_text(info: dict | None) -> str:
    """How a kernel's anchor was scheduled, in a few words: the template and whether its
    config is a logged record or the untuned fallback, else compiler.ops' schedule, or
    the external codegen that compiled it."""
    if info and info.get("external"):
        return f"external codegen {info['external']}"
    if not info or not info.get("template"):
        return "compiler.ops schedule (no template)"
    kind = "fallback config" if info.get("fallback") else "logged config"
    config = f" {info['config']}" if info.get("config") and not info.get("fallback") else ""
    record = ""
    if info.get("record") is not None:
        gflops = info.get("record_gflops")
        record = (f" (record {info['record']}, "
                  f"{'confirmed ' if info.get('confirmed') else ''}"
                  f"{f'{gflops:.1f} GFLOPS' if gflops else 'no time'})")
    return f"{info['template']}: {kind}{config}{record}"


@click.command("run")
@click.argument("module", type=click.Path(exists=True, dir_okay=False))
@click.option("--inputs", type=click.Path(exists=True, dir_okay=False),
              help="An .npz of the inputs by name [default: random].")
@click.option("--outputs", type=click.Path(dir_okay=False),
              help="An .npz to write the outputs to (output_0, output_1, ...).")
@click.option("--repeat", type=click.IntRange(min=1), default=10, show_default=True,
              help="Timed runs; the median counts.")
@click.option("--profile", is_flag=True, help="Time every kernel.")
@json_option
def run_model(module, inputs, outputs, repeat, profile, as_json):
    """Run MODULE (from `autosched compile`) on inputs, time it and optionally profile
    every kernel.

    Examples: autosched run resnet18.so --repeat 20;
    autosched run resnet18.zip --profile (the zip form: a library's kernels are hidden)
    """
    try:
        lib = runtime.load(module)
    except (ValueError, OSError) as err:
        raise BadInput(f"{module}: {err}") from None
    if not isinstance(lib, runtime.GraphExecutor | runtime.ModelLibrary):
        raise BadInput(f"{module} is a single kernel, not a model from autosched compile")
    if profile and isinstance(lib, runtime.ModelLibrary):
        raise BadInput(f"--profile: {module} is a model library, whose kernels are hidden "
                       "symbols; compile the zip form (--format zip) to profile each kernel")
    given = {}
    if inputs:
        with np.load(inputs, allow_pickle=False) as npz:
            given = {k: npz[k] for k in npz.files}
    sampled = model_inputs(lib.plan["inputs"])
    for spec in lib.plan["inputs"]:
        value = given.pop(spec["name"], None)
        if value is None:
            value = sampled[spec["name"]]
        try:
            lib.set_input(spec["name"], value)
        except ValueError as err:
            raise BadInput(f"--inputs {inputs}: {err}") from None
    if given:
        raise BadInput(f"--inputs {inputs}: {', '.join(sorted(given))} are not inputs of the "
                       f"model (its inputs: {', '.join(lib.input_names)})")
    results = lib.run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        lib.run()
        times.append(time.perf_counter() - start)
    if outputs:
        np.savez(outputs, **{f"output_{i}": r for i, r in enumerate(results)})
    rows = lib.profile() if profile else []
    if as_json:
        return print_json({"median_seconds": statistics.median(times), "repeat": repeat,
                           "outputs": [list(r.shape) for r in results], "profile": rows})
    console = make_console()
    console.print(f"{module}: median {format_seconds(statistics.median(times))} over "
                  f"{repeat} runs; outputs {', '.join(str(r.shape) for r in results)}")
    if rows:
        from rich.table import Table
        table = Table("kernel", "fused ops", "schedule", "time", "share")
        for r in rows:
            table.add_row(r["kernel"], " + ".join(r["ops"]), schedule_text(r),
                          format_seconds(r["seconds"]), f"{r['share']:.1%}")
        console.print(table)
