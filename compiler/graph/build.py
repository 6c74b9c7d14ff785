"""compiler.graph.build: a graph module to native kernels and the executor that runs
them (Relay's relay.build and its graph executor).

    lib = graph.build(mod, target="llvm", params=params)
    out, = lib.run(x=image)

The passes run under the current PassContext: the parameters bound as constants,
SimplifyInference, FoldConstant, FuseOps (InferType first, as they require). Every
fused function becomes one kernel: its ops as te computes (lower.py) under compiler.ops'
default schedule, built once per distinct function (equal text: the same ops on the
same shapes). The executor calls the kernels in
order, on buffers it allocates once (a buffer is freed for reuse after its last
reader).

Not yet (issue 17's later steps): the templates' schedules for the anchor ops, one
LLVM module with a native entry function, AlterOpLayout, profile and export.
"""
from __future__ import annotations

import numpy as np

from .. import build as build_kernel
from ..errors import BuildError
from ..ir.module import IRModule
from ..transform.pass_infra import Sequential
from .bind import bind_params
from .expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from .lower import lower_function
from .transform import FoldConstant, FuseOps, SimplifyInference


def build(mod: IRModule, target="llvm", params: dict | None = None) -> GraphModule:
    """The GraphModule of `mod`'s "main" (see the module docstring)."""
    main = mod["main"]
    if params:
        main = bind_params(main, params)
    fused = Sequential([SimplifyInference(), FoldConstant(), FuseOps()])(
        IRModule.from_expr(main))["main"]
    return GraphModule(fused, target)


class GraphModule:
    """Runs a fused graph function: `run(**inputs)` -> the list of outputs."""

    def __init__(self, func: Function, target):
        self.func = func
        self.input_names = [p.name for p in func.params]
        self.kernels: dict[str, tuple] = {}   # fused function's text -> (name, module)
        self.steps: list = []                 # (kernel, argument slots, output slot)
        self.slots: dict[int, int] = {}       # id(expr) -> value slot
        self.constants: dict[int, np.ndarray] = {}
        self._names: list = []                # (kernel name, ops fused) per step
        self._plan(func.body, target)
        outs = func.body.fields if isinstance(func.body, Tuple) else [func.body]
        self.outputs = [self._slot(o) for o in outs]
        self._inputs: dict[str, np.ndarray] = {}

    def _slot(self, expr) -> int:
        return self.slots.setdefault(id(expr), len(self.slots))

    def _plan(self, expr, target) -> None:
        if id(expr) in self.slots:
            return
        if isinstance(expr, (Var, Constant)):
            if isinstance(expr, Constant):
                self.constants[self._slot(expr)] = expr.data
            else:
                self._slot(expr)
            return
        if isinstance(expr, Tuple):
            for f in expr.fields:
                self._plan(f, target)
            self._slot(expr)
            return
        if isinstance(expr, TupleGetItem):
            raise BuildError("a tuple value between kernels is not supported yet")
        if not isinstance(expr, Call) or not isinstance(expr.op, Function):
            raise BuildError(f"an unfused {getattr(expr.op, 'name', expr)} in the graph")
        for a in expr.args:
            self._plan(a, target)
        fn = expr.op
        key = fn.script("fused")  # its text: equal functions (same ops, shapes) share one
        if key not in self.kernels:
            name = f"fused_{len(self.kernels)}"
            sch, tensors = lower_function(fn, name)
            self.kernels[key] = (name, build_kernel(sch, tensors, target=target, name=name))
        self.steps.append((self.kernels[key][1], [self._slot(a) for a in expr.args],
                           self._slot(expr), expr.ty))
        self._names.append((self.kernels[key][0], _ops_of(fn)))

    def set_input(self, name: str, value) -> None:
        if name not in self.input_names:
            raise KeyError(f"no input {name!r}; the inputs are {', '.join(self.input_names)}")
        self._inputs[name] = np.ascontiguousarray(value)

    def run(self, **inputs) -> list[np.ndarray]:
        for name, value in inputs.items():
            self.set_input(name, value)
        missing = [n for n in self.input_names if n not in self._inputs]
        if missing:
            raise KeyError(f"no value for input(s) {', '.join(missing)}")
        values = dict(self.constants)
        for p in self.func.params:
            values[self.slots[id(p)]] = self._inputs[p.name]
        for kernel, args, out, ty in self.steps:
            values[out] = np.empty(ty.shape, ty.dtype)
            kernel(*(values[a] for a in args), values[out])
        self._outputs = [values[o] for o in self.outputs]
        return list(self._outputs)

    def get_output(self, index: int) -> np.ndarray:
        return self._outputs[index]

    def profile(self, repeat: int = 5) -> list[dict]:
        """One row per kernel call, in order: its kernel's name, the ops it fused, its
        median seconds over `repeat` timings and its share of their sum (run() first)."""
        if not hasattr(self, "_outputs"):
            self.run()
        values = dict(self.constants)
        for p in self.func.params:
            values[self.slots[id(p)]] = self._inputs[p.name]
        rows = []
        for (kernel, args, out, ty), (name, fused) in zip(self.steps, self._names):
            values[out] = np.empty(ty.shape, ty.dtype)
            arrays = [values[a] for a in args] + [values[out]]
            kernel(*arrays)
            timer = kernel.time_evaluator(number=1, repeat=repeat, min_repeat_ms=10)
            rows.append({"kernel": name, "ops": fused, "seconds": timer(*arrays).median})
        total = sum(r["seconds"] for r in rows) or 1.0
        for r in rows:
            r["share"] = r["seconds"] / total
        return rows


def _ops_of(fn: Function) -> list[str]:
    """The ops a fused function calls, in order."""
    names, seen = [], set()

    def walk(e):
        if id(e) in seen:
            return
        seen.add(id(e))
        for a in getattr(e, "args", ()):
            walk(a)
        if isinstance(e, TupleGetItem):
            walk(e.tuple_value)
        if isinstance(e, Call):
            names.append(e.op.name)
    walk(fn.body)
    return names
