"""A built model as one shared library with a C API (TVM's export_library, without
libtvm_runtime): `GraphExecutor.export_library(path)`, `autosched compile --format shared`.

The library holds every kernel, `graph_run` (the model's native entry: the kernels in
order) and the thread pool of runtime.ll, as one object LLVM emits; the weights, as one
read-only data section; and the C API of model_api.c, compiled with the model's tables
(model_tables.h, written here: its inputs, outputs, intermediate storage, where each
weight lies in the data section, the CPU features the code needs). Its only dynamic
dependencies are the C runtime (libc, libm, libpthread where glibc still has it apart).

- The weights go in through the assembler's `.incbin`, not as constants in LLVM IR: the
  100 MB of ResNet-50 cost a file write and a copy, where IR text would cost minutes.
  Each starts on a 64-byte boundary, as the Python executor's buffers do.
- A version script exports the API alone (model_api.h's functions): the kernels, the
  pool and the tables are local, so two model libraries in one process never bind to
  each other's `fused_3` or pool; and -Bsymbolic binds the API's calls of its own
  functions (autosched_set_input_by_name calls autosched_set_input) inside the library,
  where another model's library loaded first with RTLD_GLOBAL would take them.
- `-z nodelete`: a worker thread of the pool runs the library's code for as long as the
  process lives, so dlclose must not unmap it; the library refuses to unload.
- A kernel's scratch buffers too big for its stack (codegen/llvm.py's STACK_LIMIT) are
  allocated and freed at each call in the JIT-compiled kernels; in the library those
  calls go to model_api.c's workspace instead (WORKSPACE renames them), which keeps
  each thread's freed buffers for the next call (TVM's workspace pool): once a thread
  has run the model, its runs allocate nothing.
- model_api.c is compiled for the baseline of the target's architecture (no -march), so
  its CPU check runs on any CPU of it; the kernels are compiled for the target.
- An external function (BYOC) goes in as the object code its kind gives
  (ExternalModule.link_object: C from the ccompiler codegen does, with libc and libm
  alone), or the export is refused naming the function (cblas calls OpenBLAS from a
  Python package).

A C compiler links it (cc, gcc or clang; $CC first): without one the export is a
BuildError that says so.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ..errors import BuildError
from ..ir.dtype import numpy_dtype
from .cpu_features import CPUID, required_features

HERE = Path(__file__).parent
API_HEADER = HERE / "model_api.h"
API_SOURCE = HERE / "model_api.c"
ALIGN = 64
# The kernels' scratch buffers (those too big for the stack) come from model_api.c's
# per-thread workspace, which keeps them from one run to the next
WORKSPACE = {"aligned_alloc": "autosched_workspace_alloc", "free": "autosched_workspace_free"}


def c_compiler() -> str | None:
    """The C compiler: $CC, else cc, gcc or clang on the PATH; None when there is none."""
    cc = os.environ.get("CC")
    if cc:
        return shutil.which(cc)
    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def api_functions() -> list[str]:
    """The functions of the C API, as model_api.h declares them: what the library exports."""
    return re.findall(r"^[\w ]+[ *](autosched_\w+)\(", API_HEADER.read_text(), re.M)


def export_library(executor, path, header_path=None) -> None:
    """Write `executor`'s model to `path` as a shared library (see the module docstring),
    and its header to `header_path` when given."""
    lib = executor.lib
    if lib._llvm_ir is None:
        raise ValueError("this model was loaded from a file, which keeps no LLVM IR to "
                         "link into a library: build it again (graph.build) to export it")
    cc = c_compiler()
    if cc is None:
        raise BuildError("a model library is linked by a C compiler (cc, gcc or clang on the "
                         "PATH, or $CC) and none was found; without one, export() writes "
                         "the zip form that compiler.runtime.load runs")
    target = lib._target
    with tempfile.TemporaryDirectory(prefix="autosched-library-") as tmp:
        tmp = Path(tmp)
        objects = []
        for module in executor.externals.values():
            objects.append(tmp / f"external_{len(objects)}.o")
            try:
                with target:  # its codegen's flags follow the model's target
                    objects[-1].write_bytes(module.link_object())
            except ValueError as err:
                raise BuildError(str(err)) from None
        objects.append(tmp / "model.o")
        objects[-1].write_bytes(lib.object_code(rename=WORKSPACE))
        offsets = _write_weights(executor.constants, tmp)
        (tmp / "model_tables.h").write_text(_tables(executor, offsets, target))
        (tmp / "exports.map").write_text(
            "{\n  global:\n" + "".join(f"    {f};\n" for f in api_functions()) +
            "  local: *;\n};\n")
        command = [cc, "-shared", "-fPIC", "-O2", "-o", os.fspath(path),
                   f"-I{tmp}", f"-I{HERE}", os.fspath(API_SOURCE), os.fspath(tmp / "weights.S"),
                   *map(os.fspath, objects), f"-Wl,--version-script={tmp / 'exports.map'}",
                   "-Wl,-Bsymbolic", "-Wl,-z,nodelete", "-Wl,-z,noexecstack",
                   "-Wl,--as-needed", "-lm", "-lpthread"]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise BuildError(f"linking the model library {path} with {cc} failed:\n"
                             f"{done.stderr[-3000:]}")
    if header_path is not None:
        Path(header_path).write_text(header_text(executor))


def _write_weights(constants: dict, tmp: Path) -> dict[int, int]:
    """Write the weights, each on an ALIGN boundary, to tmp/weights.bin and the assembly
    that makes it the library's `autosched_weights`; returns {slot: byte offset}."""
    offsets, at = {}, 0
    with open(tmp / "weights.bin", "wb") as f:
        for slot, value in sorted(constants.items()):
            pad = -at % ALIGN
            f.write(b"\0" * pad)
            at += pad
            offsets[slot] = at
            data = np.ascontiguousarray(value)
            f.write(memoryview(data).cast("B") if data.size else b"")
            at += data.nbytes
        if at == 0:
            f.write(b"\0")
    (tmp / "weights.S").write_text(
        '\t.section .rodata.autosched_weights,"a",@progbits\n'
        f"\t.balign {ALIGN}\n"
        "\t.globl autosched_weights\n\t.hidden autosched_weights\n"
        "\t.type autosched_weights,@object\n"
        "autosched_weights:\n"
        f'\t.incbin "{tmp / "weights.bin"}"\n'
        f"\t.size autosched_weights, {max(at, 1)}\n"
        '\t.section .note.GNU-stack,"",@progbits\n')
    return offsets


def model_values(executor) -> tuple[list[dict], list[dict]]:
    """The model's inputs and outputs: name, slot, shape, dtype (the outputs by the ONNX
    graph's names; a graph built in Python has none: output_0, output_1, ...)."""
    plan = executor.plan
    specs = {i["slot"]: i for i in plan["inputs"]}
    for step in plan["steps"]:
        for out in [step, *step.get("more_outs", [])]:
            specs[out["out"]] = {"shape": out["shape"], "dtype": out["dtype"]}
    for slot, value in executor.constants.items():
        specs[slot] = {"shape": list(value.shape), "dtype": str(value.dtype)}
    inputs = [{"name": i["name"], "slot": i["slot"], "shape": list(i["shape"]),
               "dtype": i["dtype"]} for i in plan["inputs"]]
    names = plan.get("output_names") or [f"output_{k}" for k in range(len(plan["outputs"]))]
    outputs = [{"name": names[k], "slot": slot, "shape": list(specs[slot]["shape"]),
                "dtype": specs[slot]["dtype"]} for k, slot in enumerate(plan["outputs"])]
    return inputs, outputs


def _c_string(text: str) -> str:
    """`text` as a C string literal (UTF-8, anything unusual as an octal escape)."""
    out = []
    for byte in text.encode():
        ch = chr(byte)
        out.append(ch if 32 <= byte < 127 and ch not in '"\\?' else f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _tensor_table(name: str, values: list[dict]) -> str:
    lines = []
    for k, v in enumerate(values):
        dims = ", ".join(str(int(d)) for d in v["shape"]) or "0"
        lines.append(f"static const int64_t {name}_shape_{k}[] = {{{dims}}};")
    rows = []
    for k, v in enumerate(values):
        itemsize = numpy_dtype(v["dtype"]).itemsize
        nbytes = int(np.prod(v["shape"], dtype=np.int64)) * itemsize
        rows.append(f"  {{{_c_string(v['name'])}, {_c_string(v['dtype'])}, {len(v['shape'])}, "
                    f"{name}_shape_{k}, {nbytes}u, {itemsize}u, {v['slot']}}},")
    return "\n".join(lines) + _array("tensor_info", name, rows)


def _array(ctype: str, name: str, rows: list[str]) -> str:
    """A C array definition; a C array may not be empty, so an empty one gets one row that
    its count (NUM_...) leaves unread."""
    body = "\n".join(rows) if rows else "  {0},"
    return f"\nstatic const {ctype} {name}[] = {{\n{body}\n}};\n"


def _tables(executor, offsets: dict[int, int], target) -> str:
    """model_tables.h: what model_api.c needs to know of this model."""
    plan = executor.plan
    inputs, outputs = model_values(executor)
    values = [(out["out"], out["storage"]) for step in plan["steps"]
              for out in [step, *step.get("more_outs", [])]]
    externals = [(step["fn_slot"], step["kernel"]) for step in plan["steps"]
                 if "fn_slot" in step]
    features = required_features(target)
    parts = ["/* Written by compiler/runtime/export_library.py for one model. */",
             f"#define NUM_SLOTS {plan['num_slots']}",
             f"#define NUM_INPUTS {len(inputs)}", f"#define NUM_OUTPUTS {len(outputs)}",
             f"#define NUM_STORAGE {len(plan['storage'])}", f"#define NUM_VALUES {len(values)}",
             f"#define NUM_CONSTANTS {len(offsets)}", f"#define NUM_EXTERNALS {len(externals)}",
             f"#define NUM_FEATURES {len(features)}",
             f"static const char model_target[] = {_c_string(str(target))};",
             *(f"extern int32_t {symbol}();" for _, symbol in sorted(set(externals))),
             _tensor_table("model_inputs", inputs), _tensor_table("model_outputs", outputs),
             _array("int64_t", "model_storage", [f"  {n}," for n in plan["storage"]]),
             _array("value_storage", "model_values", [f"  {{{s}, {i}}}," for s, i in values]),
             _array("constant_data", "model_constants",
                    [f"  {{{s}, {o}}}," for s, o in sorted(offsets.items())]),
             _array("external_function", "model_externals",
                    [f"  {{{s}, (const void *)&{sym}}}," for s, sym in externals]),
             _array("cpu_feature", "model_features",
                    [f"  {{{_c_string(f)}, {CPUID[f][0]:#x}u, {CPUID[f][1]}u, {CPUID[f][2]}, "
                     f"{CPUID[f][3]}, {CPUID[f][4]:#x}u}}," for f in features])]
    return "\n".join(parts) + "\n"


def header_text(executor) -> str:
    """The model's header: its inputs and outputs as a comment, then the C API."""
    inputs, outputs = model_values(executor)

    def line(k: int, v: dict) -> str:
        name = v["name"].replace("*/", "* /")
        return f" *   {k}: {name}  {v['dtype']}[{', '.join(str(d) for d in v['shape'])}]"
    doc = ["/* A model compiled by autosched for the target", f" *   {executor.lib._target}",
           " * Inputs (autosched_set_input: index, or autosched_set_input_by_name: name):",
           *(line(k, v) for k, v in enumerate(inputs)),
           " * Outputs (autosched_get_output: index):",
           *(line(k, v) for k, v in enumerate(outputs)),
           " * Arrays are C-contiguous, in the byte order of the CPU.", " */", ""]
    return "\n".join(doc) + API_HEADER.read_text()
