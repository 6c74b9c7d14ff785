"""compiler.graph.backend.build: a graph module to native kernels and the executor that runs
them (Relay's relay.build and its graph executor).

    lib = graph.build(mod, target="llvm", params=params)
    out, = lib.run(x=image)
    lib = graph.build(mod, params=params, external=["cblas", "ccompiler"])

The passes run under the current PassContext, or at opt_level 3 outside any (TVM's
default is 2; ours is what `autosched compile` uses, since at 2 no convolution is
packed and a CNN runs about four times slower): the parameters bound as constants,
SimplifyInference, FoldConstant, SimplifyLayerNorm (a layer norm written as nine ops
becomes one), SinkReshape (a dense's bias and activation fuse across the reshapes
around it), FoldScaleAxis (opt_level 3), FoldConstant again. With
`external` codegens (Bring Your Own Codegen: "cblas", "ccompiler", or any registered
with compiler.graph.backend.external.register_external), AnnotateTarget with them in order of
preference, MergeCompilerRegions and PartitionGraph follow: each region becomes a
function that its codegen compiles into a runtime module of its own, and the passes
after see only the graph's own ops. Then AlterOpLayout (opt_level 3: convolutions into
NCHW[x]c, unless the dispatch context's log says a convolution's NCHW implementation is
faster; a dense on constant weights into nn.contrib_dense_pack on panels) and
FoldConstant once more, which packs the weights there and then, DeadCodeElimination,
FuseOps (InferType first, as they require).

Every fused function becomes one kernel (lower.py): its ops as te computes, its anchor
scheduled by the strategy registered for it (strategy.py: a template's config under
the current dispatch context) or by compiler.ops' schedules; one kernel per distinct
function (equal text: the same ops on the same shapes). All kernels (an LLVM module
each, compiled on the target's cores at once: codegen/compile.py; with 4 or more to
make, lowered there too, by forked workers: kernel_pool.py) load as one module
with `graph_run`, the native entry function that calls them in order
(codegen/graph_entry.py), and an external function through the address the executor
puts in a slot of its own. An external function's non-scalar constants become extra
arguments, held with the model's weights (lift_constants). The intermediate values
share planned storage (plan_storage).

The result is a runtime GraphExecutor: run, set_input, get_output, time_evaluator,
profile, export (`compiler.runtime.load` reads the file back, external modules
included).
"""
from __future__ import annotations

import contextlib
import json
import os
import sys

import numpy as np

from ... import disk_cache
from ...build import build_key, built_ir
from ...codegen.compile import compile_graph, compile_kernel
from ...errors import BuildError
from ...ir.dtype import numpy_dtype
from ...ir.module import IRModule
from ...runtime.graph_executor import GraphExecutor
from ...target import Target
from ...transform.pass_infra import PassContext, Sequential
from ..ir.bind import bind_params
from ..ir.expr import Call, Constant, Function, GlobalVar, Tuple, TupleGetItem, Var
from ...collector import fewer_collections
from .external import get_external
from .kernel_pool import fork_map, workers_for
from ..ir.functor import ExprMutator, post_order
from .lower import choice_of, kernel_info, lower_function
from ..ir.op.layout import layout_change
from ..strategy import strategy_folders
from ..ir.ty import TensorType, TupleType
from ..passes import (AlterOpLayout, AnnotateTarget, DeadCodeElimination, FoldConstant,
                        FoldScaleAxis, FuseOps, MergeCompilerRegions, PartitionGraph,
                        SimplifyInference, SimplifyLayerNorm, SinkReshape)


def build(mod: IRModule, target="llvm", params: dict | None = None,
          external=None) -> GraphExecutor:
    """The GraphExecutor of `mod`'s "main" (see the module docstring); `external`: the
    external codegens to partition for, in order of preference. The target is entered
    (compiler.Target.current()) for every pass and choice, not for lowering alone."""
    with Target(target) as entered, fewer_collections():
        return GraphModule(optimize_module(mod, params, external), entered)


def optimize(mod: IRModule, params: dict | None = None, external=None) -> Function:
    """`mod`'s "main" with `params` bound, after the build's passes under the current
    PassContext (see the module docstring): the typed function of fused calls that the
    build turns into kernels, and that task extraction reads."""
    return optimize_module(mod, params, external)["main"]


def prepare(mod: IRModule, params: dict | None = None) -> IRModule:
    """`mod`'s "main" with `params` bound, after the passes that come before
    partitioning (see the module docstring): the graph the external codegens are
    offered, and that task extraction asks the libraries about."""
    main = mod["main"]
    if params:
        main = bind_params(main, params)
    with build_scope():
        return Sequential([SimplifyInference(), FoldConstant(), SimplifyLayerNorm(),
                           SinkReshape(), FoldScaleAxis(),
                           FoldConstant()])(IRModule.from_expr(main))


def build_context() -> PassContext:
    """The PassContext the build's passes run under: the entered one, else opt_level 3
    (see the module docstring)."""
    return PassContext.entered() or PassContext(opt_level=3)


def build_scope():
    """A `with` block under build_context(): it enters the opt_level 3 context only
    outside any, so an entered context's instruments are not entered a second time."""
    entered = PassContext.entered()
    return contextlib.nullcontext(entered) if entered else PassContext(opt_level=3)


def optimize_module(mod: IRModule, params: dict | None = None, external=None) -> IRModule:
    """The module of `optimize`: "main", and the external functions it calls."""
    external = [external] if isinstance(external, str) else list(external or [])
    for name in external:
        try:
            get_external(name)
        except KeyError as err:
            raise BuildError(str(err.args[0])) from None
    partition = [AnnotateTarget(external), MergeCompilerRegions(), PartitionGraph()] \
        if external else []
    with build_scope():
        return Sequential([*partition, AlterOpLayout(), FoldConstant(),
                           DeadCodeElimination(), FuseOps()])(prepare(mod, params))


def GraphModule(func, target) -> GraphExecutor:
    """The GraphExecutor of a fused, typed graph function, or of a module of one ("main")
    and the external functions it calls: its kernels built into one module, the
    external functions by their codegens, its plan made (see runtime/graph_executor.py)."""
    externals = {}
    if isinstance(func, IRModule):
        externals = {name: f for name, f in func.functions.items()
                     if isinstance(f, Function) and "Compiler" in f.attrs}
        func = func["main"]
    target = Target(target)
    with target:  # the external codegens compile for it (CSourceModule's -march)
        return _Planner(func, target, externals).executor()


class _Lift(ExprMutator):
    def __init__(self, symbol: str):
        super().__init__()
        self.symbol, self.params, self.values = symbol, [], []

    def rewrite_leaf(self, expr):
        if isinstance(expr, Constant) and expr.data.ndim > 0:
            self.params.append(Var(f"{self.symbol}_const{len(self.params)}", expr.ty))
            self.values.append(expr)
            return self.params[-1]
        return expr


def lift_constants(func: Function, symbol: str) -> tuple[Function, list[Constant]]:
    """`func` with each non-scalar constant made a parameter after the others
    (`<symbol>_const0`, ...), and those constants in order."""
    lift = _Lift(symbol)
    body = lift.visit(func.body)
    return Function([*func.params, *lift.params], body, func.ret_type, func.attrs), \
        lift.values


class _Planner:
    """Walks a fused function in post-order: a value slot per expression, a step per
    call of a fused function, a kernel per distinct fused function."""

    def __init__(self, func: Function, target, externals: dict):
        self.target = target
        self.externals = externals            # name -> external Function
        self.modules: dict = {}               # name -> its runtime module
        self.kernels: dict[str, str] = {}     # fused function's text -> kernel name
        self.funcs: dict = {}                 # kernel name -> its lowered PrimFunc, or its
        #                                       cached object code (disk_cache.load)
        self.keys: dict[str, str] = {}        # kernel name -> its disk cache key, to store
        self._context_key = None              # the cache key's part common to all kernels
        self.info: dict = {}                  # kernel name -> how its anchor was scheduled
        self.slots: dict[int, int] = {}       # id(expr) -> value slot
        self.constants: dict[int, np.ndarray] = {}
        self.steps: list[dict] = []
        self._keep: list = []                 # lifted constants, stand-ins: ids key slots
        self._outputs: dict = {}              # id(external call) -> its outputs' slots
        self._pending: dict = {}              # kernel name -> (fused function, choice)
        for expr in post_order(func.body):  # operands first: _plan's own recursion into
            self._plan(expr)                # them finds them planned (no deep stack)
        self._make_kernels()
        outs = func.body.fields if isinstance(func.body, Tuple) else [func.body]
        self.plan = {
            "inputs": [{"name": p.name, "slot": self._slot(p), "shape": list(p.ty.shape),
                        "dtype": p.ty.dtype} for p in func.params],
            "steps": self.steps, "outputs": [self._slot(o) for o in outs],
            "storage": plan_storage(self.steps, [self._slot(o) for o in outs]),
            "num_slots": len(self.slots),
            "externals": {name: m.type_key for name, m in self.modules.items()}}
        names = func.attrs.get("output_names")
        if names and len(names) == len(outs):  # the model's own (ONNX), else output_0, ...
            self.plan["output_names"] = list(names)

    def executor(self) -> GraphExecutor:
        lib = compile_graph(self.funcs, self.steps, len(self.slots), self.target, self.keys,
                            self._context())
        return GraphExecutor(lib, self.plan, self.constants, self.modules)

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
        if isinstance(expr, TupleGetItem):  # an output of a kernel or external function
            call = expr.tuple_value
            if not (isinstance(call, Call) and isinstance(call.op, GlobalVar | Function)):
                raise BuildError("a tuple value between kernels is not supported yet")
            self._plan(call)
            self.slots[id(expr)] = self._outputs[id(call)][expr.index]
            return
        if isinstance(expr, Call) and isinstance(expr.op, GlobalVar):
            self._external(expr)
            return
        if not isinstance(expr, Call) or not isinstance(expr.op, Function):
            raise BuildError(f"an unfused {getattr(expr.op, 'name', expr)} in the graph")
        for a in expr.args:
            self._plan(a)
        fn = expr.op
        key = fn.script("fused")  # its text: equal functions (same ops, shapes) share one
        if key not in self.kernels:
            name = self.kernels[key] = f"fused_{len(self.kernels)}"
            self._kernel(fn, name, key)
        name = self.kernels[key]
        outs, types = self._outs(expr, name)
        self.steps.append({"kernel": name, "info": self.info[name],
                           "args": [self._slot(a) for a in expr.args],
                           "out": outs[0], "shape": list(types[0].shape),
                           "dtype": types[0].dtype, "ops": _ops_of(fn),
                           **_more_outs(outs, types)})
        layout = _layout_of(fn)
        if layout:  # a packed convolution's blocks, for the compile table
            self.steps[-1]["layout"] = layout


    def _kernel(self, fn: Function, name: str, text: str) -> None:
        """The kernel `name` of the fused function `fn` (whose text is `text`): from the
        disk cache when it holds it, else pending, made by _make_kernels."""
        choice = choice_of(fn)
        self.info[name] = kernel_info(fn, choice)
        key = self._cache_key(name, text, choice)
        self.funcs[name] = disk_cache.load(key) if key else None
        if self.funcs[name] is None:
            self._pending[name] = (fn, choice)
            if key:
                self.keys[name] = key

    def _make_kernels(self) -> None:
        """The pending kernels, made on the target's cores by forked workers (lowered and
        compiled there: kernel_pool.py), or lowered here for compile_graph to compile."""
        names = list(self._pending)
        workers = workers_for(len(names), self.target.num_cores or os.cpu_count() or 1)
        made = fork_map(self._compiled, names, workers) if workers else [None] * len(names)
        for name, kernel in zip(names, made):
            self.funcs[name] = kernel if kernel is not None else self._lowered(name)

    def _compiled(self, name: str) -> tuple[dict, bytes]:
        """In a worker: the kernel `name` compiled (compile_kernel), kept in the disk
        cache under its key."""
        kernel = compile_kernel(self._lowered(name), self.target)
        if name in self.keys:
            disk_cache.store(self.keys[name], *kernel)
        return kernel

    def _lowered(self, name: str):
        """The pending kernel `name` lowered: its PrimFunc after the build pipeline."""
        fn, choice = self._pending[name]
        try:
            sch, tensors, _ = lower_function(fn, name, choice)
            return built_ir(sch, tensors, name)[name]
        except RecursionError:
            depth = PassContext.current().get_config("relay.FuseOps.max_depth")
            raise BuildError(
                f"kernel {name}: its fused expression is too deep to lower within "
                f"Python's recursion limit ({sys.getrecursionlimit()}); fuse smaller "
                f"groups (the pass config relay.FuseOps.max_depth, now {depth}) or "
                f"raise the limit (sys.setrecursionlimit)") from None

    def _cache_key(self, name: str, text: str, choice) -> str | None:
        """The disk cache's key of a kernel: everything its code follows from (the fused
        function's text, its name, the candidate and config that schedule it, and what
        compiler.build.build_key says, the strategies' packages as code); None when the
        cache is off."""
        if not self._context():
            return None
        candidate = choice.candidate.info(choice.config) if choice else None
        return disk_cache.cache_key(self._context(), name, text,
                                    json.dumps(candidate, sort_keys=True, default=repr))

    def _context(self) -> list | None:
        """What every kernel's cache key holds besides the kernel (build_key, made once
        a build), None when the cache is off."""
        if self._context_key is None:
            self._context_key = build_key(self.target, strategy_folders()) or False
        return self._context_key or None

    def _external(self, call: Call) -> None:
        """A step calling an external function, compiled by its codegen (once per
        function), through the address held in a slot of its own."""
        name = call.op.name
        if name not in self.externals:
            raise BuildError(f"a call of @{name}, which is not an external function of "
                             "the module")
        fn = self.externals[name]
        for a in call.args:
            self._plan(a)
        lifted, constants = lift_constants(fn, name)
        if name not in self.modules:
            self.modules[name] = get_external(fn.attrs["Compiler"])(lifted, name)
        for c in constants:
            self._plan(c)
        outs, types = self._outs(call, name)
        self.steps.append({"kernel": name, "external": self.modules[name].type_key,
                           "fn_slot": self._slot(self.modules[name]),
                           "info": {"external": fn.attrs["Compiler"]},
                           "args": [self._slot(a) for a in [*call.args, *constants]],
                           "out": outs[0], "shape": list(types[0].shape),
                           "dtype": types[0].dtype, "ops": _ops_of(fn),
                           **_more_outs(outs, types)})
        self._keep.extend(constants)

    def _outs(self, call: Call, name: str) -> tuple[list[int], list[TensorType]]:
        """The slots and types of the outputs of `call` (of kernel or external function
        `name`): the call's own slot, then one for each further field of its tuple,
        keyed by a stand-in, which its TupleGetItems read."""
        types = call.ty.fields if isinstance(call.ty, TupleType) else [call.ty]
        if not all(isinstance(t, TensorType) for t in types):
            raise BuildError(f"{name} returns {call.ty}: tensors only, please")
        outs = [self._slot(call)]
        for t in types[1:]:
            self._keep.append(Var(f"{name}_out{len(outs)}", t))
            outs.append(self._slot(self._keep[-1]))
        self._outputs[id(call)] = outs
        return outs, types


def _more_outs(outs: list[int], types: list[TensorType]) -> dict:
    """A step's further outputs after its first ("more_outs"), when it has some."""
    more = [{"out": o, "shape": list(t.shape), "dtype": t.dtype}
            for o, t in zip(outs[1:], types[1:])]
    return {"more_outs": more} if more else {}


def _ops_of(fn: Function) -> list[str]:
    """The ops a fused function calls, in order."""
    return [e.op.name for e in post_order(fn.body) if isinstance(e, Call)]


def _layout_of(fn: Function) -> str | None:
    """The layouts the packed call of a fused function reads and writes ("NCHW16c ->
    NCHW8c", op.layout.layout_change), None without one."""
    return next((change for e in post_order(fn.body) if isinstance(e, Call)
                 if (change := layout_change(e.attrs))), None)


def step_outputs(step: dict) -> list[dict]:
    """A step's outputs: its "out" (slot), "shape" and "dtype", then a kernel's or
    external function's further ones ("more_outs"); each may carry its "storage"."""
    return [step, *step.get("more_outs", [])]


def plan_storage(steps: list[dict], outputs: list[int]) -> list[int]:
    """Give every output of every step a storage (its "storage"), reusing one whose
    last reader has run: a freed storage of at least the bytes needed, the smallest
    such. The model's outputs keep theirs. Returns the bytes of each storage (their sum
    is the peak memory of the intermediate values)."""
    last_use: dict[int, int] = {}
    for i, step in enumerate(steps):
        for a in step["args"]:
            last_use[a] = i
    sizes: list[int] = []
    free: list[int] = []
    storage_of: dict[int, int] = {}
    for i, step in enumerate(steps):
        for out in step_outputs(step):
            need = int(np.prod(out["shape"], dtype=np.int64)) * \
                numpy_dtype(out["dtype"]).itemsize
            fits = sorted((sizes[s], s) for s in free if sizes[s] >= need)
            if fits:
                sid = fits[0][1]
                free.remove(sid)
            else:
                sid = len(sizes)
                sizes.append(need)
            out["storage"] = storage_of[out["out"]] = sid
        for a in set(step["args"]):  # freed after this step, unless an output
            if last_use.get(a) == i and a in storage_of and a not in outputs:
                free.append(storage_of[a])
    return sizes
