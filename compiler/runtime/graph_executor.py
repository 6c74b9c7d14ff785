"""GraphExecutor: runs a built model (TVM's graph executor, run from native code), and
its file: `export(path)` writes one file that `compiler.runtime.load(path)` runs in a
fresh process without the model.

A model is one runtime Module (every kernel, and `graph_run`, the native entry function
that calls them in order: codegen/graph_entry.py), a plan (JSON data only: its inputs
(name, value slot, shape, dtype), its steps (kernel, argument slots, output slot, output
shape and dtype, the storage it writes, the ops the kernel fused, how its anchor was
scheduled), its outputs (slots), its storage (bytes of each: intermediate values share
one when their lifetimes do not overlap)), and its constants (the weights), by slot.

The weights are held once, here, and every thread that uses the model gets a workspace
of its own the first time it does (set_input or run): one buffer per input, one per
storage, and a slot table holding their addresses and the weights' (workspace_bytes:
the storage, the inputs and the table; freed when the thread ends). A run is: copy the
inputs into the calling thread's buffers, one native call of `graph_run` on its table
(no lock held: the GIL is released for it), copy the outputs out. So one model is safe
to share between threads, as ONNX Runtime's InferenceSession is: concurrent `run` calls
each get the outputs of their own inputs, and the weights are only read. State is per
thread: a thread's set_input feeds that thread's next run, time_evaluator and profile,
get_output is that thread's last run. The kernels keep no state between calls (their
own buffers are on the stack or malloc'd per call), nor do the external modules (C with
only static const data and per-call mallocs; OpenBLAS's threaded build, which is safe
to call from several threads and serializes concurrent level-3 calls itself). A
parallel loop launched while another thread's launch holds the native pool runs its
tasks serially on its own thread (runtime.ll): threads never wait for each other there.

The exported file is a zip archive of the plan (`autosched-graph.json`), the constants
(`constants.npz`, read without pickle) and the module as `Module.export` writes it, and
each external module (BYOC) as its kind saves it (`external/<name>`, its kind in the
plan's "externals"), loaded by the loader its kind registered (runtime/external.py);
nothing in it is evaluated or unpickled.
"""
from __future__ import annotations

import io
import json
import os
import tempfile
import threading
import zipfile

import numpy as np

from ..contiguous import contiguous
from ..ir.dtype import numpy_dtype
from . import native
from .external import load_external
from .profile_result import ProfileResult

PLAN = "autosched-graph.json"
LIBRARY = "model.lib"
FORMAT = 3  # 3: external modules (2 had none, and still loads)
READS = (2, 3)
ALIGN = 64  # bytes: every buffer starts on a cache line (and an AVX-512 vector)


def _aligned(nbytes: int) -> np.ndarray:
    """`nbytes` uninitialized bytes starting on an ALIGN boundary."""
    raw = np.empty(nbytes + ALIGN, np.uint8)
    skip = (-raw.ctypes.data) % ALIGN
    return raw[skip:skip + nbytes]


def _view(buffer: np.ndarray, shape, dtype) -> np.ndarray:
    dtype = numpy_dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    return buffer[:n * dtype.itemsize].view(dtype).reshape(shape)


class _Workspace:
    """One thread's buffers for a model: its inputs, the intermediate values' storage
    (as planned: values whose lifetimes do not overlap share one) and the slot table
    that points at them and at the model's shared weights; which inputs the thread set
    and the outputs of its last run. A run writes all of them, so threads never share one."""

    def __init__(self, plan: dict, constants: dict, shared_slots: np.ndarray):
        self.inputs: dict[str, np.ndarray] = {}
        # slot -> its buffer: the shared weights (a model may output one), then this
        # thread's own buffers (kept alive here)
        self.arrays: dict[int, np.ndarray] = dict(constants)
        for spec in plan["inputs"]:
            self.inputs[spec["name"]] = self.arrays[spec["slot"]] = _view(
                _aligned(_nbytes(spec)), spec["shape"], spec["dtype"])
        storage = [_aligned(n) for n in plan["storage"]]
        for step in plan["steps"]:
            for out in [step, *step.get("more_outs", [])]:
                self.arrays[out["out"]] = _view(storage[out["storage"]], out["shape"],
                                                out["dtype"])
        self.slots = shared_slots.copy()
        for slot, array in self.arrays.items():
            self.slots[slot] = array.ctypes.data
        self.set: set[str] = set()
        self.outputs: list[np.ndarray] = []


class GraphExecutor:
    """`run(**inputs)` -> the list of outputs; safe to share between threads (see the
    module docstring)."""

    def __init__(self, lib, plan: dict, constants: dict, externals: dict | None = None):
        self.lib, self.plan = lib, plan
        self.externals = dict(externals or {})  # name -> its external runtime module
        self.input_names = [i["name"] for i in plan["inputs"]]
        self.constants = {int(slot): contiguous(value)  # 0-d stays 0-d
                          for slot, value in constants.items()}
        # What every thread's slot table starts from: the weights' addresses and the
        # external functions' (both read-only while the model runs).
        self._shared_slots = np.zeros(plan["num_slots"], np.int64)
        for slot, array in self.constants.items():
            self._shared_slots[slot] = array.ctypes.data
        for step in plan["steps"]:
            if "fn_slot" in step:
                self._shared_slots[step["fn_slot"]] = self.externals[step["kernel"]]\
                    .function_address()
        self._local = threading.local()

    def _workspace(self) -> _Workspace:
        """The calling thread's workspace, made on its first use (freed with the thread)."""
        workspace = getattr(self._local, "workspace", None)
        if workspace is None:
            workspace = _Workspace(self.plan, self.constants, self._shared_slots)
            self._local.workspace = workspace
        return workspace

    @property
    def workspace_bytes(self) -> int:
        """The bytes each thread that uses the model allocates for it, once: the
        intermediate values' storage (peak_bytes), the inputs and the slot table; the
        weights are shared. A run's outputs are new arrays on top of it."""
        return self.peak_bytes + sum(_nbytes(spec) for spec in self.plan["inputs"]) + \
            8 * self.plan["num_slots"]

    @property
    def kernels(self) -> list[str]:
        """The names of the model's distinct kernels."""
        return list(self.lib.meta["kernels"])

    def get_source(self, fmt: str = "c") -> str:
        """The source of the external modules of kind `fmt` ("c": the C of every
        function the ccompiler codegen took; "json": the cblas functions'
        descriptions), one after the other; the LLVM kernels' is lib.get_source()."""
        kind = {"c": "c", "json": "cblas"}.get(fmt)
        if kind is None:
            raise ValueError(f"unknown source format {fmt!r}: 'c' or 'json' (the model's "
                             "own kernels: .lib.get_source('ll' | 'asm' | 'ir'))")
        parts = [m.get_source(fmt) for m in self.externals.values() if m.type_key == kind]
        if not parts:
            raise ValueError(f"the model has no external function of kind {kind}")
        return "\n".join(parts)

    def set_input(self, name: str, value) -> None:
        """Copy `value` into the calling thread's buffer of the input (checked against its
        shape): it feeds that thread's next run, time_evaluator and profile, never
        another thread's."""
        workspace = self._workspace()
        if name not in workspace.inputs:
            raise KeyError(f"no input {name!r}; the inputs are {', '.join(self.input_names)}")
        buffer = workspace.inputs[name]
        value = np.asarray(value)
        if tuple(value.shape) != buffer.shape:
            raise ValueError(f"input {name}: shape {value.shape}, the model takes "
                             f"{buffer.shape}")
        np.copyto(buffer, value, casting="same_kind")
        workspace.set.add(name)

    def _ready(self) -> _Workspace:
        """The calling thread's workspace, once every input has a value there."""
        workspace = self._workspace()
        missing = [n for n in self.input_names if n not in workspace.set]
        if missing:
            raise KeyError(f"no value for input(s) {', '.join(missing)} in this thread "
                           "(each thread sets its own: run(**inputs) or set_input)")
        return workspace

    @property
    def peak_bytes(self) -> int:
        """The bytes of the intermediate values' storage (planned, reused)."""
        return sum(self.plan.get("storage", []))

    def run(self, **inputs) -> list[np.ndarray]:
        """Set `inputs` (by name), run the model (one native call, on the calling
        thread's workspace: threads may run one model at once), return the outputs
        (copies: the storage is reused by the thread's next run)."""
        for name, value in inputs.items():
            self.set_input(name, value)
        workspace = self._ready()
        self.lib(workspace.slots)
        workspace.outputs = [np.array(workspace.arrays[o]) for o in self.plan["outputs"]]
        return list(workspace.outputs)

    def get_output(self, index: int) -> np.ndarray:
        """Output `index` of the calling thread's last run (TVM's get_output)."""
        return self._workspace().outputs[index]

    def time_evaluator(self, number: int = 1, repeat: int = 5, min_repeat_ms: int = 0):
        """A function timing the whole model on the inputs set, in native code (the
        module's time_evaluator on the slot table: one warm-up run, then `repeat`
        measurements of `number` runs, `number` raised until one lasts
        `min_repeat_ms`); it returns a ProfileResult of seconds per run. The function
        times the workspace of the thread that calls it, on that thread's inputs."""
        timer = self.lib.time_evaluator(number=number, repeat=repeat,
                                        min_repeat_ms=min_repeat_ms)

        def evaluate() -> ProfileResult:
            return timer(self._ready().slots)
        return evaluate

    def profile(self, repeat: int = 5) -> list[dict]:
        """One row per step, in order: its kernel, the ops it fused, how its anchor was
        scheduled (template, config, fallback: None without a template; and record,
        record_gflops, confirmed, tier when the build applied a logged record), its median
        seconds over `repeat` timings (at least 10 ms each) and its share of their sum.
        Each kernel is called through its own packed function on the calling thread's
        buffers (its inputs), so every step reads the values the steps before it wrote."""
        slots = self._ready().slots
        rows = []
        for step in self.plan["steps"]:
            outs = [step["out"], *(o["out"] for o in step.get("more_outs", []))]
            args = np.array([slots[a] for a in [*step["args"], *outs]], np.int64)
            address = self.externals[step["kernel"]].packed_address() \
                if "fn_slot" in step else self.lib.function_address(step["kernel"] + "_packed")
            seconds = native.time_native(address, args.ctypes.data, 1, repeat, 10)
            info = step.get("info") or {}
            rows.append({"kernel": step["kernel"], "ops": step["ops"],
                         "template": info.get("template"), "config": info.get("config"),
                         "fallback": info.get("fallback"),
                         **{k: info[k] for k in ("record", "record_gflops", "confirmed", "tier",
                                                 "external") if k in info},
                         "seconds": float(np.median(seconds))})
        total = sum(r["seconds"] for r in rows) or 1.0
        for r in rows:
            r["share"] = r["seconds"] / total
        return rows

    def export_library(self, path, header=None) -> None:
        """Write the model as one shared library with a C API, weights inside, that needs
        nothing but the C runtime (runtime/export_library.py; model_api.h is its API),
        and its header to `header` when given. compiler.runtime.load opens it too."""
        from .export_library import export_library
        export_library(self, path, header)

    def export(self, path) -> None:
        """Write the model to one file, the zip form (see the module docstring); a name
        ending in .so is refused: such a file is a shared library (export_library)."""
        if os.fspath(path).endswith(".so"):
            raise ValueError(f"{path}: export writes the zip form, and a file named .so is a "
                             "shared library: export_library(path) writes one, or name the "
                             "zip otherwise (model.zip)")
        with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(path, "w") as z:
            z.writestr(PLAN, json.dumps({"format": FORMAT, **self.plan}))
            buffer = io.BytesIO()
            np.savez(buffer, **{str(k): v for k, v in self.constants.items()})
            z.writestr("constants.npz", buffer.getvalue())
            file = os.path.join(tmp, LIBRARY)
            self.lib.export(file)
            z.write(file, LIBRARY)
            for name, module in self.externals.items():
                z.writestr(f"external/{name}", module.save())


def _nbytes(spec: dict) -> int:
    return int(np.prod(spec["shape"], dtype=np.int64)) * numpy_dtype(spec["dtype"]).itemsize


def is_graph_file(path) -> bool:
    """Whether `path` is a model written by GraphExecutor.export."""
    return zipfile.is_zipfile(path) and PLAN in zipfile.ZipFile(path).namelist()


def load_graph(path, load_module) -> GraphExecutor:
    """The GraphExecutor of a file written by export; `load_module(path)` loads the
    module file (runtime.load)."""
    with zipfile.ZipFile(path) as z:
        plan = json.loads(z.read(PLAN))
        if plan.get("format") not in READS:
            raise ValueError(f"{path}: graph format {plan.get('format')}; this version "
                             f"reads {', '.join(map(str, READS))} (compile the model again)")
        with np.load(io.BytesIO(z.read("constants.npz")), allow_pickle=False) as npz:
            constants = {int(k): npz[k] for k in npz.files}
        file = os.path.join(tempfile.mkdtemp(prefix="autosched-model-"), LIBRARY)
        with open(file, "wb") as f:
            f.write(z.read(LIBRARY))
        externals = {name: load_external(kind, name, z.read(f"external/{name}"))
                     for name, kind in plan.get("externals", {}).items()}
    return GraphExecutor(load_module(file), plan, constants, externals)
