"""AlterOpLayout: ops whose alter function asks for another data layout get it, and the
layouts are reconciled around them (Relay's AlterOpLayout, for the NCHW -> NCHW[x]c
case of the reference's worked example).

    @register_alter_op_layout("nn.conv2d")
    def alter_conv2d(attrs, inputs, tinfos, out_type):
        new_attrs = dict(attrs, data_layout="NCHW16c")
        return graph.nn.conv2d(*inputs, **new_attrs)

Built in, for nn.conv2d (`alter_conv2d_nchwc`, used unless another is registered): an
ordinary convolution (groups 1, NCHW) computes in NCHW[x]c with its weights packed
OIHW[x]i[y]o, the layout in which its kernel (compiler.ops.conv2d_nchwc) runs near the
FMA peak. Its input block x is the block its data is packed in already when that divides
its channels (so no transform is needed between two packed convolutions), else the
widest of 16 and 8 that does, else (an RGB image) all its channels as one block; its
output block y is the widest of 16 and 8 that divides its output channels (out_layout
says it when it differs from x). A depthwise convolution (channel multiplier 1) keeps
x for both (weights OIHW1i[x]o), so a MobileNet block stays packed from one pointwise
convolution through the depthwise one to the next. The
weights' layout_transform is of constants, so FoldConstant folds it when the model is
built and no weight is repacked at run time.

Under a dispatch context that applies records (records.ApplyHistoryBest), the built-in
conv2d alteration is a choice between two implementations of the op, each a tuning task
of its own (tuner.extract_tasks(alternatives=True)): a convolution stays in NCHW when its
NCHW template's record is nearer this target or, in the same tier, faster than its packed
template's, or is the only one logged (TVM's select_implementation under AutoTVM takes
the fastest logged implementation). The records are probed (strategy.probing), not
applied: no warning, no config, for the implementation the build does not use.

Built in, for nn.dense (`alter_dense_pack`): a constant weight is packed in panels of
rows at build time and the call becomes nn.contrib_dense_pack, whose kernel reads the
panels contiguously (a vector of outputs per load) and packs nothing at run time.

Every value is known to be in NCHW (a 4-D tensor) or in a packed NCHW[x]c layout. A
conv2d altered to NCHW[x]c takes its data through a layout_transform (unless it is
packed already: two packed convolutions with the same block meet with no transform
between them) and gives a packed result. An elementwise or broadcast op with a packed
operand computes in the packed layout when every other operand can follow: one of the
same shape is transformed (once, however many ops read it), a per-channel one ((C, 1, 1)
or (1, C, 1, 1): a bias, a scale) is reshaped and transformed, a scalar stays as it is;
nn.bias_add becomes an add of the packed bias. A pool computes in its data's layout. Any
other op, and the function's result, get their packed operands transformed back to NCHW.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

from ..ops.pattern import OpPattern
from . import nn, tensor_ops
from .expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var
from .functor import ExprMutator
from .infer_type import infer_type
from .op import Op, get_op
from .reference import pack_dense_weight
from .strategy import TIERS, probing, select_implementation

_ALTER: dict[str, Callable] = {}
BLOCKS = (16, 8)
"""Channel blocks the built-in conv2d alteration tries, widest first: 16 float32 lanes
fill an AVX-512 vector, 8 an AVX2 one (or half of one)."""


def register_alter_op_layout(op_name: str, fn: Callable | None = None):
    """Register `fn(attrs, inputs, tinfos, out_type) -> Expr or None` (None: leave the
    call as it is) for `op_name`, in place of the built-in one; usable as a decorator."""
    def register(f):
        _ALTER[op_name] = f
        return f
    return register if fn is None else register(fn)


def alter_conv2d_nchwc(attrs, inputs, tinfos, out_type, data_block: int | None = None):
    """The built-in alteration of nn.conv2d (see the module docstring), or None.
    `data_block`: the block its data is packed in already, if it is (the pass says it)."""
    data, weight = tinfos
    if attrs["data_layout"] != "NCHW" or attrs.get("kernel_layout", "OIHW") != "OIHW" or \
            len(data.shape) != 4:
        return None
    channels, out_channels, weight_in = data.shape[1], weight.shape[0], weight.shape[1]
    depthwise = attrs["groups"] == channels == out_channels and weight_in == 1
    if attrs["groups"] != 1 and not depthwise:
        return None
    widest = [b for b in BLOCKS if channels % b == 0]
    if data_block is not None and channels % data_block == 0:
        block = data_block  # the producer's layout: no transform between them
    elif widest:
        block = widest[0]
    elif not depthwise and channels < min(BLOCKS):
        block = channels  # an image's few channels: one block of all of them
    else:
        return None
    out_block = block if depthwise else \
        next((b for b in BLOCKS if out_channels % b == 0), None)
    if out_block is None:
        return None
    kernel_layout = f"OIHW{1 if depthwise else block}i{out_block}o"
    packed = tensor_ops.layout_transform(inputs[1], "OIHW", kernel_layout)
    return nn.conv2d(inputs[0], packed, attrs["strides"], attrs["padding"],
                     attrs["dilation"], attrs["groups"], f"NCHW{block}c", kernel_layout,
                     f"NCHW{out_block}c" if out_block != block else "")


DENSE_PANELS = (64, 56, 48, 40, 32, 24, 16, 8)
"""Panel widths the built-in dense alteration tries, widest first: whole vectors of 8
float32 lanes; a panel of several vectors gives a batch-1 dense (a matrix-vector product)
that many independent accumulators (1000 units: panels of 40, 2.5x faster than 8 at
K = 512 and 1280 on AVX-512, and faster than OpenBLAS's sgemv there)."""


def alter_dense_pack(attrs, inputs, tinfos, out_type):
    """The built-in alteration of nn.dense: a constant weight (N, K) packed once, here,
    in panels of the widest of DENSE_PANELS that divides N, and nn.contrib_dense_pack
    reading it, so that the kernel reads contiguous weights and packs nothing at run
    time (TOPI's dense_pack); None for a weight that is not a constant, data that is not
    2-D float32, or N that no panel width divides (the dense template then packs)."""
    data, weight = tinfos
    if not isinstance(inputs[1], Constant) or len(data.shape) != 2 or \
            data.dtype != "float32":
        return None
    block = next((b for b in DENSE_PANELS if weight.shape[0] % b == 0), None)
    if block is None:
        return None
    packed = Constant(pack_dense_weight(inputs[1].data, block))
    return nn.contrib_dense_pack(inputs[0], packed)


_BUILT_IN = {"nn.conv2d": alter_conv2d_nchwc, "nn.dense": alter_dense_pack}


def altered_forms(call: Call) -> list[Call]:
    """The form the built-in alteration would give the typed `call`, typed, on vars of
    its arguments' types (a constant weight stays, as the dense's alteration packs it):
    a dense's nn.contrib_dense_pack, a convolution in NCHW[x]c on transformed operands;
    [] when it alters nothing. What a probe asks the log about besides `call` itself
    (the cblas codegen: is a tuned kernel of it faster than the library?)."""
    alter = _BUILT_IN.get(call.op.name)
    if alter is None:
        return []
    args = [a if isinstance(a, Constant) else Var(f"arg{i}", a.ty)
            for i, a in enumerate(call.args)]
    new = alter(dict(call.attrs), args, [a.ty for a in args], call.ty)
    if new is None:
        return []
    layout = new.attrs.get("data_layout", "NCHW")
    if layout != "NCHW":  # the data comes packed too
        new = Call(new.op, (tensor_ops.layout_transform(args[0], "NCHW", layout),
                            *new.args[1:]), new.attrs)
    params = [a for a in args if isinstance(a, Var)]
    return [infer_type(Function(params, new)).body]
POOLS = ("nn.max_pool2d", "nn.avg_pool2d", "nn.global_avg_pool2d")
"""Ops that compute in whatever layout their data is in (their `layout` attr says it)."""


def _packed(layout: str) -> bool:
    return layout != "NCHW"


def _block(layout: str) -> int:
    return int(layout[4:-1])


class _Alter(ExprMutator):
    def __init__(self):
        super().__init__()
        self.layout: dict[int, str] = {}       # id(new expr) -> its layout
        self.transformed: dict[tuple, Expr] = {}
        self.nchw_type: dict[int, object] = {}  # id(new expr) -> the type it had in NCHW

    def visit(self, expr: Expr) -> Expr:
        out = super().visit(expr)
        self.nchw_type.setdefault(id(out), expr.ty)
        return out

    def _convert(self, expr: Expr, layout: str) -> Expr:
        have = self.layout.get(id(expr), "NCHW")
        if have == layout:
            return expr
        if _packed(have) and _packed(layout):  # another block: through NCHW
            return self._convert(self._convert(expr, "NCHW"), layout)
        key = (id(expr), layout)
        if key not in self.transformed:
            out = tensor_ops.layout_transform(expr, have, layout)
            self.layout[id(out)] = layout
            self.transformed[key] = out
        return self.transformed[key]

    def _follow(self, arg: Expr, layout: str, shape: tuple) -> Expr | None:
        """`arg` of an elementwise or broadcast op whose NCHW result has `shape`, made to
        broadcast in `layout`; None when it cannot."""
        dims = tuple(self.nchw_type[id(arg)].shape)
        if _packed(self.layout.get(id(arg), "NCHW")) or dims == shape:
            return self._convert(arg, layout)
        if all(d == 1 for d in dims):
            return arg
        channels = shape[1]
        if len(dims) in (3, 4) and dims[-3] == channels and \
                all(d == 1 for i, d in enumerate(dims) if i != len(dims) - 3):
            return tensor_ops.layout_transform(tensor_ops.reshape(arg, (1, channels, 1, 1)),
                                               "NCHW", layout)
        return None

    def _in_layout(self, call: Call, layout: str) -> Call | None:
        """`call` (elementwise or broadcast, one operand packed as `layout`) computed in
        that layout, or None when an operand cannot follow."""
        shape = tuple(call.ty.shape)
        if len(shape) != 4 or shape[1] % _block(layout):
            return None
        op, attrs = call.op, call.attrs
        if op.name == "nn.bias_add":  # an add of the bias as (1, C, 1, 1)
            data, bias = call.args
            if attrs["axis"] % 4 != 1:
                return None
            op, attrs = get_op("add"), {}
            followed = [self._convert(data, layout), tensor_ops.layout_transform(
                tensor_ops.reshape(bias, (1, shape[1], 1, 1)), "NCHW", layout)]
        else:
            followed = [self._follow(a, layout, shape) for a in call.args]
        if any(a is None for a in followed):
            return None
        out = Call(op, tuple(followed), attrs)
        self.layout[id(out)] = layout
        return out

    def rewrite_call(self, call: Call):
        if not isinstance(call.op, Op):  # a function (an external one) reads NCHW
            args = [self._convert(a, "NCHW") for a in call.args]
            same = all(a is b for a, b in zip(args, call.args))
            return call if same else Call(call.op, args, call.attrs, call.ty)
        alter = _ALTER.get(call.op.name)
        built_in_conv = alter is None and call.op.name == "nn.conv2d"
        if built_in_conv:
            have = self.layout.get(id(call.args[0]), "NCHW")
            alter = functools.partial(alter_conv2d_nchwc,
                                      data_block=_block(have) if _packed(have) else None)
        elif alter is None:
            alter = _BUILT_IN.get(call.op.name)
        if alter is not None:
            original = [self._convert(a, "NCHW") for a in call.args]
            types = [self.nchw_type[id(a)] for a in call.args]
            new = alter(dict(call.attrs), original, types, call.ty)
            if built_in_conv and new is not None and \
                    _logged_nchw_is_faster(call.op, dict(call.attrs), types, new):
                new = None
            if isinstance(new, Call) and new.attrs.get("data_layout", "NCHW") != "NCHW":
                layout = new.attrs["data_layout"]
                data = self._convert(call.args[0], layout)
                out = Call(new.op, (data, *new.args[1:]), new.attrs)
                self.layout[id(out)] = new.attrs.get("out_layout") or layout
                return out
            if isinstance(new, Expr):  # another op in NCHW (a dense on packed weights)
                return new
        packed = {self.layout[id(a)] for a in call.args if _packed(self.layout.get(id(a),
                                                                                    "NCHW"))}
        if packed and call.op.name in POOLS:  # a window over H and W: any layout will do
            layout = packed.pop()
            out = Call(call.op, call.args, {**call.attrs, "layout": layout})
            self.layout[id(out)] = layout
            return out
        if packed and call.op.pattern <= OpPattern.BROADCAST and len(packed) == 1:
            out = self._in_layout(call, packed.pop())
            if out is not None:
                return out
        args = [self._convert(a, "NCHW") for a in call.args]
        return Call(call.op, args, call.attrs, call.ty)  # its layout and type unchanged


def _logged_nchw_is_faster(op: Op, attrs: dict, types: list, packed: Call) -> bool:
    """Whether the build should keep a convolution in NCHW although the built-in
    alteration packs it: the two are implementations of one op (the conv2d_nchw and
    conv2d_nchwc templates, or the depthwise ones), each a task of its own, and the
    build takes the fastest logged one (TVM's select_implementation under AutoTVM).

    Both are probed (strategy.probing: what the log says, nothing applied). With no
    record of the NCHW one, the packed one (the default, and the only probe a build
    without a log pays). With a record of it only, the NCHW one. With both, the one
    whose record is nearer (tuned for this very target, else for its CPU, else for its
    vector width: times are compared only between records of one tier), then the faster.
    A confirmed time and the best of a task's trials are compared as they stand, as
    ApplyHistoryBest compares the tasks of one tier."""
    data_ty, weight_ty = types
    data, weight = Var("data", data_ty), Var("weight", weight_ty)
    nchw = _logged(Function([data, weight], Call(op, (data, weight), attrs)))
    if nchw is None:
        return False
    layout, kernel_layout = packed.attrs["data_layout"], packed.attrs["kernel_layout"]
    packed_call = Call(packed.op, (tensor_ops.layout_transform(data, "NCHW", layout),
                                   tensor_ops.layout_transform(weight, "OIHW", kernel_layout)),
                       packed.attrs)
    other = _logged(Function([data, weight], packed_call))
    return other is None or nchw < other


def _logged(fn: Function) -> tuple | None:
    """(tier rank, seconds) of the record the dispatch contexts hold for the
    implementation the op strategies give `fn`'s body (a typed call), so that the
    smaller tuple is the nearer record or, in one tier, the faster kernel; None when no
    record is logged (strategy.Implementation.info has no "record_seconds")."""
    with probing():
        impl = select_implementation(infer_type(fn).body)
    info = {} if impl is None else impl.info
    if info.get("record_seconds") is None:
        return None
    tier = info.get("tier")
    return TIERS.index(tier) if tier in TIERS else len(TIERS), info["record_seconds"]


def alter_op_layout(func: Function) -> Function:
    """`func` (typed) with the registered layouts and the transforms between them, typed
    again."""
    mutator = _Alter()
    body = mutator.visit(func.body)
    if isinstance(body, Tuple):
        body = Tuple([mutator._convert(f, "NCHW") for f in body.fields])
    elif not isinstance(body, TupleGetItem):
        body = mutator._convert(body, "NCHW")
    return infer_type(Function(func.params, body, None, func.attrs))
