"""compiler.graph.build: a graph module to native kernels and the executor that runs
them (Relay's relay.build and its graph executor).

    lib = graph.build(mod, target="llvm", params=params)
    out, = lib.run(x=image)

The passes run under the current PassContext: the parameters bound as constants,
SimplifyInference, FoldConstant, FoldScaleAxis (opt_level 3), FoldConstant again,
AlterOpLayout (opt_level 3: convolutions into NCHW[x]c, unless the dispatch context's
log says a convolution's NCHW implementation is faster; a dense on constant weights
into nn.contrib_dense_pack on panels) and FoldConstant once more, which packs the
weights there and then, DeadCodeElimination, FuseOps (InferType first, as they
require). Every fused function becomes one kernel (lower.py): its ops as te
computes, its anchor scheduled by the strategy registered for it (strategy.py: a
template's config under the current dispatch context) or by compiler.ops' schedules;
one kernel per distinct function (equal text: the same ops on the same shapes). All
kernels go into one LLVM module with `graph_run`, the native entry function that calls
them in order (codegen/graph_entry.py); the intermediate values share planned storage
(plan_storage).

The result is a runtime GraphExecutor: run, set_input, get_output, time_evaluator,
profile, export (`compiler.runtime.load` reads the file back).
"""
from __future__ import annotations

import numpy as np

from ..build import built_ir
from ..codegen.compile import compile_graph
from ..errors import BuildError
from ..ir.module import IRModule
from ..runtime.graph_executor import GraphExecutor
from ..target import Target
from ..transform.pass_infra import Sequential
from .bind import bind_params
from .expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from .functor import post_order
from .lower import lower_function
from .transform import (AlterOpLayout, DeadCodeElimination, FoldConstant, FoldScaleAxis,
                        FuseOps, SimplifyInference)


def build(mod: IRModule, target="llvm", params: dict | None = None) -> GraphExecutor:
    """The GraphExecutor of `mod`'s "main" (see the module docstring)."""
    return GraphModule(optimize(mod, params), target)


def optimize(mod: IRModule, params: dict | None = None) -> Function:
    """`mod`'s "main" with `params` bound, after the build's passes under the current
    PassContext (see the module docstring): the typed function of fused calls that the
    build turns into kernels, and that task extraction reads."""
    main = mod["main"]
    if params:
        main = bind_params(main, params)
    return Sequential([SimplifyInference(), FoldConstant(), FoldScaleAxis(),
                       FoldConstant(), AlterOpLayout(), FoldConstant(),
                       DeadCodeElimination(), FuseOps()])(IRModule.from_expr(main))["main"]


def GraphModule(func: Function, target) -> GraphExecutor:
    """The GraphExecutor of a fused, typed graph function: its kernels built into one
    module, its plan made (see runtime/graph_executor.py)."""
    return _Planner(func, Target(target)).executor()


class _Planner:
    """Walks a fused function in post-order: a value slot per expression, a step per
    call of a fused function, a kernel per distinct fused function."""

    def __init__(self, func: Function, target):
        self.target = target
        self.kernels: dict[str, str] = {}     # fused function's text -> kernel name
        self.funcs: dict = {}                 # kernel name -> its lowered PrimFunc
        self.info: dict = {}                  # kernel name -> how its anchor was scheduled
        self.slots: dict[int, int] = {}       # id(expr) -> value slot
        self.constants: dict[int, np.ndarray] = {}
        self.steps: list[dict] = []
        self._plan(func.body)
        outs = func.body.fields if isinstance(func.body, Tuple) else [func.body]
        self.plan = {
            "inputs": [{"name": p.name, "slot": self._slot(p), "shape": list(p.ty.shape),
                        "dtype": p.ty.dtype} for p in func.params],
            "steps": self.steps, "outputs": [self._slot(o) for o in outs],
            "storage": plan_storage(self.steps, [self._slot(o) for o in outs]),
            "num_slots": len(self.slots)}

    def executor(self) -> GraphExecutor:
        lib = compile_graph(IRModule(self.funcs), self.steps, len(self.slots), self.target)
        return GraphExecutor(lib, self.plan, self.constants)

    def _slot(self, expr) -> int:
        return self.slots.setdefault(id(expr), len(self.slots))

    def _plan(self, expr) -> None:
        if id(expr) in self.slots:
            return
        if isinstance(expr, Var):
            self._slot(expr)
            return
        if isinstance(expr, Constant):
            self.constants[self._slot(expr)] = expr.data
            return
        if isinstance(expr, Tuple):  # the model's outputs: its fields are the values
            for f in expr.fields:
                self._plan(f)
            return
        if isinstance(expr, TupleGetItem):
            raise BuildError("a tuple value between kernels is not supported yet")
        if not isinstance(expr, Call) or not isinstance(expr.op, Function):
            raise BuildError(f"an unfused {getattr(expr.op, 'name', expr)} in the graph")
        for a in expr.args:
            self._plan(a)
        fn = expr.op
        key = fn.script("fused")  # its text: equal functions (same ops, shapes) share one
        if key not in self.kernels:
            name = self.kernels[key] = f"fused_{len(self.kernels)}"
            sch, tensors, *info = lower_function(fn, name)
            self.funcs[name] = built_ir(sch, tensors, name)[name]
            self.info[name] = info[0] if info else None
        name = self.kernels[key]
        self.steps.append({"kernel": name, "info": self.info[name],
                           "args": [self._slot(a) for a in expr.args],
                           "out": self._slot(expr), "shape": list(expr.ty.shape),
                           "dtype": expr.ty.dtype, "ops": _ops_of(fn)})


def _ops_of(fn: Function) -> list[str]:
    """The ops a fused function calls, in order."""
    return [e.op.name for e in post_order(fn.body) if isinstance(e, Call)]


def plan_storage(steps: list[dict], outputs: list[int]) -> list[int]:
    """Give every step's output a storage (step["storage"]), reusing one whose last
    reader has run: a freed storage of at least the bytes needed, the smallest such.
    The model's outputs keep theirs. Returns the bytes of each storage (their sum is
    the peak memory of the intermediate values)."""
    last_use: dict[int, int] = {}
    for i, step in enumerate(steps):
        for a in step["args"]:
            last_use[a] = i
    sizes: list[int] = []
    free: list[int] = []
    storage_of: dict[int, int] = {}
    for i, step in enumerate(steps):
        need = int(np.prod(step["shape"], dtype=np.int64)) * np.dtype(step["dtype"]).itemsize
        fits = sorted((sizes[s], s) for s in free if sizes[s] >= need)
        if fits:
            sid = fits[0][1]
            free.remove(sid)
        else:
            sid = len(sizes)
            sizes.append(need)
        step["storage"] = storage_of[step["out"]] = sid
        for a in set(step["args"]):  # freed after this step, unless an output
            if last_use.get(a) == i and a in storage_of and a not in outputs:
                free.append(storage_of[a])
    return sizes
