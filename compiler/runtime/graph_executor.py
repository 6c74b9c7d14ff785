"""GraphExecutor: runs a built model (TVM's graph executor, run from native code), and
its file: `export(path)` writes one file that `compiler.runtime.load(path)` runs in a
fresh process without the model.

A model is one runtime Module (every kernel, and `graph_run`, the native entry function
that calls them in order: codegen/graph_entry.py), a plan (JSON data only: its inputs
(name, value slot, shape, dtype), its steps (kernel, argument slots, output slot, output
shape and dtype, the storage it writes, the ops the kernel fused, how its anchor was
scheduled), its outputs (slots), its storage (bytes of each: intermediate values share
one when their lifetimes do not overlap)), and its constants (the weights), by slot.

Every buffer is allocated once, here: the weights, one per input, one per storage. Their
addresses fill the slot table that `graph_run` reads, so a run is: copy the inputs in,
one native call, copy the outputs out. The exported file is a zip archive of the plan
(`autosched-graph.json`), the constants (`constants.npz`, read without pickle) and the
module as `Module.export` writes it, and each external module (BYOC) as its kind saves it
(`external/<name>`, its kind in the plan's "externals"), loaded by the loader its kind
registered (runtime/external.py); nothing in it is evaluated or unpickled.
"""
from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile

import numpy as np

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
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    return buffer[:n * dtype.itemsize].view(dtype).reshape(shape)


class GraphExecutor:
    """`run(**inputs)` -> the list of outputs; see the module docstring."""

    def __init__(self, lib, plan: dict, constants: dict, externals: dict | None = None):
        self.lib, self.plan = lib, plan
        self.externals = dict(externals or {})  # name -> its external runtime module
        self.input_names = [i["name"] for i in plan["inputs"]]
        self._arrays: dict[int, np.ndarray] = {}  # slot -> its buffer (kept alive here)
        for slot, value in constants.items():
            self._arrays[int(slot)] = np.ascontiguousarray(value)
        self.constants = {k: v for k, v in self._arrays.items()}
        self._inputs = {}
        for spec in plan["inputs"]:
            self._inputs[spec["name"]] = self._arrays[spec["slot"]] = _view(
                _aligned(_nbytes(spec)), spec["shape"], spec["dtype"])
        storage = [_aligned(n) for n in plan["storage"]]
        for step in plan["steps"]:
            for out in [step, *step.get("more_outs", [])]:
                self._arrays[out["out"]] = _view(storage[out["storage"]], out["shape"],
                                                 out["dtype"])
        self._slots = np.zeros(plan["num_slots"], np.int64)
        for slot, array in self._arrays.items():
            self._slots[slot] = array.ctypes.data
        for step in plan["steps"]:
            if "fn_slot" in step:
                self._slots[step["fn_slot"]] = self.externals[step["kernel"]]\
                    .function_address()
        self._set: set[str] = set()
        self._outputs: list = []

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
        """Copy `value` into the input's buffer (checked against its shape)."""
        if name not in self._inputs:
            raise KeyError(f"no input {name!r}; the inputs are {', '.join(self.input_names)}")
        buffer = self._inputs[name]
        value = np.asarray(value)
        if tuple(value.shape) != buffer.shape:
            raise ValueError(f"input {name}: shape {value.shape}, the model takes "
                             f"{buffer.shape}")
        np.copyto(buffer, value, casting="same_kind")
        self._set.add(name)

    def _check_inputs(self) -> None:
        missing = [n for n in self.input_names if n not in self._set]
        if missing:
            raise KeyError(f"no value for input(s) {', '.join(missing)}")

    @property
    def peak_bytes(self) -> int:
        """The bytes of the intermediate values' storage (planned, reused)."""
        return sum(self.plan.get("storage", []))

    def run(self, **inputs) -> list[np.ndarray]:
        """Set `inputs` (by name), run the model (one native call), return the outputs
        (copies: the storage is reused by the next run)."""
        for name, value in inputs.items():
            self.set_input(name, value)
        self._check_inputs()
        self.lib(self._slots)
        self._outputs = [np.array(self._arrays[o]) for o in self.plan["outputs"]]
        return list(self._outputs)

    def get_output(self, index: int) -> np.ndarray:
        return self._outputs[index]

    def time_evaluator(self, number: int = 1, repeat: int = 5, min_repeat_ms: int = 0):
        """A function timing the whole model on the inputs set, in native code (the
        module's time_evaluator on the slot table: one warm-up run, then `repeat`
        measurements of `number` runs, `number` raised until one lasts
        `min_repeat_ms`); it returns a ProfileResult of seconds per run."""
        timer = self.lib.time_evaluator(number=number, repeat=repeat,
                                        min_repeat_ms=min_repeat_ms)

        def evaluate() -> ProfileResult:
            self._check_inputs()
            return timer(self._slots)
        return evaluate

    def profile(self, repeat: int = 5) -> list[dict]:
        """One row per step, in order: its kernel, the ops it fused, how its anchor was
        scheduled (template, config, fallback: None without a template; and record,
        record_gflops, confirmed, tier when the build applied a logged record), its median
        seconds over `repeat` timings (at least 10 ms each) and its share of their sum.
        Each kernel is called through its own packed function on the model's buffers,
        so every step reads the values the steps before it wrote."""
        self._check_inputs()
        rows = []
        for step in self.plan["steps"]:
            outs = [step["out"], *(o["out"] for o in step.get("more_outs", []))]
            args = np.array([self._slots[a] for a in [*step["args"], *outs]], np.int64)
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

    def export(self, path) -> None:
        """Write the model to one file (see the module docstring)."""
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
    return int(np.prod(spec["shape"], dtype=np.int64)) * np.dtype(spec["dtype"]).itemsize


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
