"""Graph passes, on the compiler's pass infrastructure (compiler.transform: Pass,
Sequential, PassContext, PrintIR, instruments). Each is a module pass that rewrites
every graph function of the module and leaves its PrimFuncs alone; a pass that needs
types requires InferType, which then runs first.

    mod = IRModule.from_expr(fn)
    mod = graph.passes.FoldConstant()(mod)
"""
from __future__ import annotations

import numpy as np

from ...ir.dtype import numpy_dtype
from ...ir.module import IRModule
from ...transform.pass_infra import module_pass, register_pass, register_pass_config
from ..ir.expr import Call, Constant, Function, Tuple, TupleGetItem, const
from .alter_op_layout import alter_op_layout as _alter_op_layout
from .annotate_target import annotate_target as _annotate_target
from .fold_scale_axis import fold_scale_axis as _fold_scale_axis
from ..ir.functor import ExprMutator
from .fuse_ops import MAX_DEPTH, fuse_ops as _fuse_ops
from ..ir.infer_type import infer_type
from .layout_plan import plan_layouts
from .merge_compiler_regions import merge_compiler_regions as _merge_compiler_regions
from ..ir.op import Op
from ..ir.op.tensor import add, divide, multiply, sqrt, subtract
from ..ir.op.transform import reshape
from ..ir.ty import TensorType
from .partition_graph import partition_graph as _partition_graph
from ..ir.reference import apply_op
from .simplify_layer_norm import simplify_layer_norm as _simplify_layer_norm
from .sink_reshape import sink_reshape as _sink_reshape


def _each_function(mod: IRModule, rewrite) -> IRModule:
    """`mod` with `rewrite(fn)` in place of each graph function, but for the external
    ones (PartitionGraph's, with a Compiler attribute): those are their codegen's."""
    return IRModule({name: rewrite(f) if _is_ours(f) else f
                     for name, f in mod.functions.items()}, mod.attrs)


def _is_ours(f) -> bool:
    return isinstance(f, Function) and "Compiler" not in f.attrs


def InferType():
    """Every node of every graph function gets its checked type (infer_type.py)."""
    return module_pass(lambda mod, ctx: _each_function(mod, infer_type), opt_level=0,
                       name="InferType")


register_pass("InferType", InferType)


def _empty(expr) -> bool:
    return isinstance(expr.ty, TensorType) and 0 in tuple(expr.ty.shape)


def _result_array(value: np.ndarray, call: Call) -> np.ndarray:
    """A folded call's value in its type's dtype, copied only where it must be: a fresh
    result (writeable, its own memory) is made read-only and taken; a view of the
    operands (a transpose, a reshape: read-only, as they are) is taken as it stands,
    so that a weight's transpose and then its packing copy it once, not twice."""
    wanted = numpy_dtype(call.ty.dtype) if call.ty else value.dtype
    if value.dtype != wanted:
        value = value.astype(wanted)
    if value.flags.writeable and value.flags.owndata:
        value.setflags(write=False)  # no one else holds a fresh result
    return value


class _FoldConstant(ExprMutator):
    """Also folds what has no elements: a call whose result is empty is that empty
    constant (nothing to compute, whatever its operands), and a concatenation drops its
    empty fields, so that no kernel ever sees a zero-size tensor."""

    def rewrite_call(self, call: Call):
        if isinstance(call.op, Op) and _empty(call):
            return Constant(np.zeros(tuple(call.ty.shape), numpy_dtype(call.ty.dtype)))
        if isinstance(call.op, Op) and call.op.name == "concatenate" and \
                isinstance(call.args[0], Tuple):
            kept = [f for f in call.args[0].fields if not _empty(f)]
            if len(kept) == 1:
                return kept[0]
            if len(kept) < len(call.args[0].fields):
                call = Call(call.op, (Tuple(tuple(kept)),), call.attrs, call.ty)
        if isinstance(call.op, Op) and call.op.reference is not None and call.args and \
                all(isinstance(a, Constant) for a in call.args):
            value = apply_op(call.op, [a.data for a in call.args], call.attrs)
            if not isinstance(value, tuple):
                return Constant(_result_array(value, call))
        return call


def FoldConstant():
    """Calls whose arguments are all constants become the constant they compute
    (each op's numpy reference), as Relay's FoldConstant."""
    return module_pass(lambda mod, ctx: _each_function(
        mod, lambda f: _FoldConstant().function(f)), opt_level=2, name="FoldConstant",
        required=("InferType",))


class _EliminateCommonSubexpr(ExprMutator):
    def __init__(self):
        super().__init__()
        self.seen: dict = {}

    def rewrite_call(self, call: Call):
        if not isinstance(call.op, Op):
            return call
        key = (call.op.name, tuple(id(a) for a in call.args),
               tuple(sorted((k, repr(v)) for k, v in call.attrs.items())))
        return self.seen.setdefault(key, call)


def EliminateCommonSubexpr():
    """Two calls of one op on the same argument nodes with equal attrs become one (opt
    level 3, as in Relay)."""
    return module_pass(lambda mod, ctx: _each_function(
        mod, lambda f: _EliminateCommonSubexpr().function(f)), opt_level=3,
        name="EliminateCommonSubexpr", required=("InferType",))


class _DeadCodeElimination(ExprMutator):
    def _visit(self, expr):
        out = super()._visit(expr)
        if isinstance(out, TupleGetItem) and isinstance(out.tuple_value, Tuple):
            return out.tuple_value.fields[out.index]
        return out


def DeadCodeElimination():
    """Code whose value reaches no output goes away. Our graph is pure dataflow with no
    let bindings: a node lives only while some output reaches it, so the dead code there
    is can only be the fields of a tuple that nothing selects; `(a, b).0` becomes `a`,
    and `b`'s computation is dropped when nothing else uses it (Relay's
    DeadCodeElimination removes unused let bindings, which we do not have)."""
    return module_pass(lambda mod, ctx: _each_function(
        mod, lambda f: _DeadCodeElimination().function(f)), opt_level=1,
        name="DeadCodeElimination", required=("InferType",))


register_pass_config("relay.FuseOps.max_depth", int, MAX_DEPTH)


def FuseOps(fuse_opt_level: int = -1):
    """Operator fusion (fuse_ops.py): each group of ops becomes a function with
    Primitive=1. fuse_opt_level -1 takes the PassContext's opt_level; 0 fuses nothing.
    The most nodes in a group: the config "relay.FuseOps.max_depth" (default 64,
    fuse_ops.MAX_DEPTH)."""
    def run(mod, ctx):
        level = ctx.opt_level if fuse_opt_level == -1 else fuse_opt_level
        depth = ctx.get_config("relay.FuseOps.max_depth")
        return _each_function(mod, lambda f: _fuse_ops(f, level, depth))
    return module_pass(run, opt_level=0, name="FuseOps", required=("InferType",))


class _SimplifyInference(ExprMutator):
    """batch_norm(x, gamma, beta, mean, var)[0] -> x * scale + shift along its axis, with
    scale = gamma / sqrt(var + epsilon) and shift = beta - mean * scale."""

    def _visit(self, expr):
        out = super()._visit(expr)
        if isinstance(out, TupleGetItem) and out.index == 0 and \
                isinstance(out.tuple_value, Call) and isinstance(out.tuple_value.op, Op) and \
                out.tuple_value.op.name == "nn.batch_norm":
            return _unfold_batch_norm(out.tuple_value)
        return out


def _unfold_batch_norm(call: Call):
    data, gamma, beta, mean, var = call.args
    rank = len(data.ty.shape)
    axis = call.attrs["axis"] % rank
    shape = [1] * rank
    shape[axis] = -1
    scale = divide(gamma, sqrt(add(var, const(call.attrs["epsilon"]))))
    shift = subtract(beta, multiply(mean, scale))
    return add(multiply(data, reshape(scale, shape[axis:])), reshape(shift, shape[axis:]))


def SimplifyInference():
    """Inference-time simplification: batch_norm becomes a multiply and an add (whose
    scale and shift FoldConstant then folds when the statistics are constants)."""
    return module_pass(lambda mod, ctx: _each_function(
        mod, lambda f: infer_type(_SimplifyInference().function(f))), opt_level=0,
        name="SimplifyInference", required=("InferType",))


def SimplifyLayerNorm():
    """A layer norm written as its nine ops (ReduceMean, Sub, Pow, ReduceMean, Add,
    Sqrt, Div, Mul, Add) becomes one nn.layer_norm (simplify_layer_norm.py)."""
    return module_pass(lambda mod, ctx: _each_function(
        mod, lambda f: infer_type(_simplify_layer_norm(f))), opt_level=1,
        name="SimplifyLayerNorm", required=("InferType",))


def SinkReshape():
    """Reshapes that keep the last axis move below the elementwise ops, layer norms and
    softmaxes after them, so that a dense's bias and activation fuse across them; two
    reshapes that meet merge or cancel (sink_reshape.py)."""
    return module_pass(lambda mod, ctx: _each_function(
        mod, lambda f: infer_type(_sink_reshape(f))), opt_level=1,
        name="SinkReshape", required=("InferType",))


def FoldScaleAxis():
    """A per-channel scale after a convolution folds into its constant weights
    (fold_scale_axis.py): run after SimplifyInference and FoldConstant."""
    return module_pass(lambda mod, ctx: _each_function(mod, _fold_scale_axis), opt_level=3,
                       name="FoldScaleAxis", required=("InferType",))


def AlterOpLayout():
    """Ops get the data layouts their registered alter functions ask for, with
    layout_transform where layouts meet (alter_op_layout.py); under a chooser that logs
    times, every convolution's blocks are planned for the whole graph first
    (layout_plan.py)."""
    return module_pass(lambda mod, ctx: _each_function(
        mod, lambda f: _alter_op_layout(f, plan_layouts(f))), opt_level=3,
        name="AlterOpLayout", required=("InferType",))


def AnnotateTarget(targets):
    """Every op call annotated for the first of `targets` (external codegens: "cblas",
    "ccompiler", ...) whose `target.NAME` check takes it, else "default"
    (annotate_target.py)."""
    targets = [targets] if isinstance(targets, str) else list(targets)
    return module_pass(lambda mod, ctx: _each_function(
        mod, lambda f: _annotate_target(f, targets)), opt_level=0, name="AnnotateTarget",
        required=("InferType",))


def MergeCompilerRegions():
    """Neighbouring regions of one target merged where no cycle follows
    (merge_compiler_regions.py)."""
    return module_pass(lambda mod, ctx: _each_function(mod, _merge_compiler_regions),
                       opt_level=0, name="MergeCompilerRegions")


def PartitionGraph():
    """Each external region lifted into a module function with Compiler, global_symbol,
    Primitive and Inline attributes, called by name (partition_graph.py)."""
    def run(mod, ctx):
        names: dict = {}
        functions, lifted = {}, {}
        for name, f in mod.functions.items():
            if _is_ours(f):
                f, new = _partition_graph(f, names)
                lifted.update(new)
            functions[name] = f
        return IRModule({**functions, **lifted}, mod.attrs)
    return module_pass(run, opt_level=0, name="PartitionGraph", required=("InferType",))
