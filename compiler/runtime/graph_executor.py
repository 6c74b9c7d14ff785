"""GraphExecutor: runs a built model, kernel after kernel (TVM's graph executor), and
its file: `export(path)` writes one file that `compiler.runtime.load(path)` runs in a
fresh process without the model.

A model is its kernels (loaded runtime Modules, by name) and a plan, JSON data only:
its inputs (name, value slot, shape, dtype), its steps (kernel, argument slots, output
slot, output shape and dtype, the storage it writes, the ops the kernel fused), its
outputs (slots), its storage (bytes of each: intermediate values share one when their
lifetimes do not overlap, allocated once); and its constants (the weights), by slot.
The exported file is a zip archive of the plan (`autosched-graph.json`), the constants
(`constants.npz`, read without pickle) and each kernel as `Module.export` writes it;
nothing in it is evaluated or unpickled.
"""
from __future__ import annotations

import io
import json
import os
import tempfile
import time
import zipfile

import numpy as np

from .profile_result import ProfileResult

PLAN = "autosched-graph.json"
FORMAT = 1


class GraphExecutor:
    """`run(**inputs)` -> the list of outputs; see the module docstring."""

    def __init__(self, kernels: dict, plan: dict, constants: dict):
        self.kernels, self.plan = kernels, plan
        self.constants = {int(k): v for k, v in constants.items()}
        self.input_names = [i["name"] for i in plan["inputs"]]
        self._inputs: dict[str, np.ndarray] = {}
        self._outputs: list = []

    def set_input(self, name: str, value) -> None:
        spec = next((i for i in self.plan["inputs"] if i["name"] == name), None)
        if spec is None:
            raise KeyError(f"no input {name!r}; the inputs are {', '.join(self.input_names)}")
        value = np.ascontiguousarray(value, dtype=spec["dtype"])
        if tuple(value.shape) != tuple(spec["shape"]):
            raise ValueError(f"input {name}: shape {value.shape}, the model takes "
                             f"{tuple(spec['shape'])}")
        self._inputs[name] = value

    def _values(self) -> dict:
        missing = [n for n in self.input_names if n not in self._inputs]
        if missing:
            raise KeyError(f"no value for input(s) {', '.join(missing)}")
        values = dict(self.constants)
        for spec in self.plan["inputs"]:
            values[spec["slot"]] = self._inputs[spec["name"]]
        return values

    @property
    def peak_bytes(self) -> int:
        """The bytes of the intermediate values' storage (planned, reused)."""
        return sum(self.plan.get("storage", []))

    def _out(self, step: dict) -> np.ndarray:
        """The step's output array: a view of its planned storage, allocated once."""
        if "storage" not in step:
            return np.empty(step["shape"], step["dtype"])
        if not hasattr(self, "_storage"):
            self._storage = [np.empty(n, np.uint8) for n in self.plan["storage"]]
        dtype = np.dtype(step["dtype"])
        n = int(np.prod(step["shape"], dtype=np.int64))
        return self._storage[step["storage"]][:n * dtype.itemsize].view(dtype).reshape(
            step["shape"])

    def run(self, **inputs) -> list[np.ndarray]:
        """Set `inputs` (by name), run every step, return the outputs (copies: the
        storage is reused by the next run)."""
        for name, value in inputs.items():
            self.set_input(name, value)
        values = self._values()
        for step in self.plan["steps"]:
            out = self._out(step)
            self.kernels[step["kernel"]](*(values[a] for a in step["args"]), out)
            values[step["out"]] = out
        self._outputs = [np.array(values[o]) for o in self.plan["outputs"]]
        return list(self._outputs)

    def get_output(self, index: int) -> np.ndarray:
        return self._outputs[index]

    def time_evaluator(self, number: int = 1, repeat: int = 5, min_repeat_ms: int = 0):
        """A function timing the whole model on the inputs set (as Module.time_evaluator:
        `repeat` measurements of `number` runs, `number` raised until one lasts
        `min_repeat_ms`); it returns a ProfileResult of seconds per run."""
        def evaluate() -> ProfileResult:
            self.run()  # warm-up, and the inputs are checked
            count, results = number, []
            for _ in range(repeat):
                while True:
                    start = time.perf_counter()
                    for _ in range(count):
                        self.run()
                    spent = time.perf_counter() - start
                    if spent * 1e3 >= min_repeat_ms:
                        break
                    count *= 2
                results.append(spent / count)
            return ProfileResult(tuple(results))
        return evaluate

    def profile(self, repeat: int = 5) -> list[dict]:
        """One row per step, in order: its kernel, the ops it fused, its median seconds
        over `repeat` timings and its share of their sum (inputs set first)."""
        values = self._values()
        rows = []
        for step in self.plan["steps"]:
            out = self._out(step)
            arrays = [values[a] for a in step["args"]] + [out]
            kernel = self.kernels[step["kernel"]]
            kernel(*arrays)
            values[step["out"]] = out
            timer = kernel.time_evaluator(number=1, repeat=repeat, min_repeat_ms=10)
            rows.append({"kernel": step["kernel"], "ops": step["ops"],
                         "seconds": timer(*arrays).median})
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
            for name, kernel in self.kernels.items():
                file = os.path.join(tmp, name)
                kernel.export(file)
                z.write(file, f"kernels/{name}")


def is_graph_file(path) -> bool:
    """Whether `path` is a model written by GraphExecutor.export."""
    return zipfile.is_zipfile(path) and PLAN in zipfile.ZipFile(path).namelist()


def load_graph(path, load_kernel) -> GraphExecutor:
    """The GraphExecutor of a file written by export; `load_kernel(path)` loads one
    kernel file (runtime.load)."""
    with zipfile.ZipFile(path) as z:
        plan = json.loads(z.read(PLAN))
        if plan.get("format") != FORMAT:
            raise ValueError(f"{path}: graph format {plan.get('format')}; this version "
                             f"reads {FORMAT}")
        with np.load(io.BytesIO(z.read("constants.npz")), allow_pickle=False) as npz:
            constants = {int(k): npz[k] for k in npz.files}
        tmp = tempfile.mkdtemp(prefix="autosched-model-")
        kernels = {}
        for step in plan["steps"]:
            name = step["kernel"]
            if name not in kernels:
                file = os.path.join(tmp, name)
                with open(file, "wb") as f:
                    f.write(z.read(f"kernels/{name}"))
                kernels[name] = load_kernel(file)
    return GraphExecutor(kernels, plan, constants)
