"""ModelLibrary: a model library (runtime/export_library.py) opened from Python through
ctypes and its C API alone (model_api.h), as any other program would open it: what
`compiler.runtime.load` returns for one, so `autosched run` times it.

It behaves as the GraphExecutor of the same model: run(**inputs) returns the outputs,
set_input / get_output, time_evaluator, and it is safe to share between threads: every
thread that uses it gets an instance of its own (autosched_create) the first time it
does, destroyed when the thread ends; a thread's set_input feeds that thread's runs.
ctypes releases the GIL for every call, so threads run the model at once.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np

from ..ir.dtype import numpy_dtype
from . import native
from .profile_result import ProfileResult

_P = ctypes.c_void_p
_SIGNATURES = {  # name: (restype, argtypes)
    "autosched_create": (ctypes.c_int, [ctypes.POINTER(_P)]),
    "autosched_destroy": (None, [_P]),
    "autosched_last_error": (ctypes.c_char_p, [_P]),
    "autosched_num_inputs": (ctypes.c_int, []),
    "autosched_num_outputs": (ctypes.c_int, []),
    "autosched_target": (ctypes.c_char_p, []),
    "autosched_set_input": (ctypes.c_int, [_P, ctypes.c_int, _P, ctypes.c_size_t]),
    "autosched_run": (ctypes.c_int, [_P]),
    "autosched_get_output": (ctypes.c_int, [_P, ctypes.c_int, _P, ctypes.c_size_t]),
    "autosched_set_num_threads": (ctypes.c_int, [_P, ctypes.c_int]),
    **{f"autosched_{kind}_{field}": (restype, [ctypes.c_int])
       for kind in ("input", "output")
       for field, restype in (("name", ctypes.c_char_p), ("dtype", ctypes.c_char_p),
                              ("ndim", ctypes.c_int),
                              ("shape", ctypes.POINTER(ctypes.c_int64)))},
}


def is_model_library(lib: ctypes.CDLL) -> bool:
    """Whether a loaded shared library is a model library (it has the C API)."""
    return hasattr(lib, "autosched_create")


class _Instance:
    """One thread's instance of the model (autosched_create .. autosched_destroy)."""

    def __init__(self, api: ctypes.CDLL):
        self.api, self.handle = api, _P()
        if api.autosched_create(ctypes.byref(self.handle)) != 0:
            raise RuntimeError(api.autosched_last_error(None).decode(errors="replace"))
        self.outputs: list[np.ndarray] = []

    def check(self, code: int) -> None:
        if code != 0:
            raise RuntimeError(self.api.autosched_last_error(self.handle)
                               .decode(errors="replace"))

    def __del__(self):
        if self.handle:
            self.api.autosched_destroy(self.handle)


class ModelLibrary:
    """A model library, through its C API (see the module docstring)."""

    def __init__(self, path: str):
        self.path = path
        self.api = api = ctypes.CDLL(path)
        if not is_model_library(api):
            raise ValueError(f"{path} is a shared library without autosched's model API")
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(api, name)
            fn.restype, fn.argtypes = restype, argtypes
        self.inputs = [self._spec("input", k) for k in range(api.autosched_num_inputs())]
        self.outputs = [self._spec("output", k) for k in range(api.autosched_num_outputs())]
        self.plan = {"inputs": self.inputs, "outputs": self.outputs}
        self.input_names = [i["name"] for i in self.inputs]
        self.target = api.autosched_target().decode()
        self._local = threading.local()
        self._instance()  # a CPU the library cannot run on fails here, naming what it lacks

    def _spec(self, kind: str, k: int) -> dict:
        api = self.api
        ndim = getattr(api, f"autosched_{kind}_ndim")(k)
        shape = getattr(api, f"autosched_{kind}_shape")(k)
        return {"name": getattr(api, f"autosched_{kind}_name")(k).decode(),
                "shape": [int(shape[d]) for d in range(ndim)],
                "dtype": getattr(api, f"autosched_{kind}_dtype")(k).decode()}

    def _instance(self) -> _Instance:
        instance = getattr(self._local, "instance", None)
        if instance is None:
            try:
                instance = self._local.instance = _Instance(self.api)
            except RuntimeError as err:
                raise ValueError(f"{self.path}: {err}") from None
        return instance

    def set_input(self, name: str, value) -> None:
        """Copy `value` into the calling thread's instance (checked against the input's
        shape; converted to its dtype)."""
        if name not in self.input_names:
            raise KeyError(f"no input {name!r}; the inputs are {', '.join(self.input_names)}")
        index = self.input_names.index(name)
        spec = self.inputs[index]
        value = np.asarray(value)
        if tuple(value.shape) != tuple(spec["shape"]):
            raise ValueError(f"input {name}: shape {value.shape}, the model takes "
                             f"{tuple(spec['shape'])}")
        data = np.ascontiguousarray(value.astype(numpy_dtype(spec["dtype"]), casting="same_kind",
                                                 copy=False))
        instance = self._instance()
        instance.check(self.api.autosched_set_input(instance.handle, index, data.ctypes.data,
                                                    data.nbytes))

    def run(self, **inputs) -> list[np.ndarray]:
        """Set `inputs` (by name), run the model on the calling thread's instance, return
        the outputs (copies)."""
        for name, value in inputs.items():
            self.set_input(name, value)
        instance = self._instance()
        instance.check(self.api.autosched_run(instance.handle))
        outputs = []
        for k, spec in enumerate(self.outputs):
            out = np.empty(spec["shape"], numpy_dtype(spec["dtype"]))
            instance.check(self.api.autosched_get_output(instance.handle, k, out.ctypes.data,
                                                         out.nbytes))
            outputs.append(out)
        instance.outputs = outputs
        return list(outputs)

    def get_output(self, index: int) -> np.ndarray:
        """Output `index` of the calling thread's last run."""
        return self._instance().outputs[index]

    def set_num_threads(self, num_threads: int) -> None:
        """The threads the calling thread's runs use (0: the count it was built for)."""
        instance = self._instance()
        instance.check(self.api.autosched_set_num_threads(instance.handle, num_threads))

    def time_evaluator(self, number: int = 1, repeat: int = 5, min_repeat_ms: int = 0):
        """A function timing autosched_run on the calling thread's instance in the native
        timing loop (as GraphExecutor.time_evaluator); returns a ProfileResult."""
        run = ctypes.cast(self.api.autosched_run, _P).value

        def evaluate() -> ProfileResult:
            instance = self._instance()
            return ProfileResult(tuple(native.time_native(
                run, instance.handle.value, number, repeat, min_repeat_ms)))
        return evaluate

    def profile(self, repeat: int = 5):
        raise ValueError(f"{self.path} is a model library: its kernels are hidden, so it "
                         "cannot be profiled kernel by kernel; compile the zip form "
                         "(--format zip) to profile")
