"""PartitionGraph: every region annotated for an external target becomes a function of
the module that the graph calls by name (TVM's PartitionGraph).

    def @main(%x: Tensor[(10, 10), float32], ...) {
      %0 = @ccompiler_0(%x, %y) /* ty=Tensor[(10, 10), float32] */;
      nn.softmax(%0)
    }

    def @ccompiler_0(%ccompiler_0_i0: ..., %ccompiler_0_i1: ..., Compiler="ccompiler",
                     global_symbol="ccompiler_0", Primitive=1, Inline=1) -> ... { ... }

A region's function is named `<target>_<k>` (k counts the target's regions in the
order of their first op) and that name is its global symbol, the name its codegen
gives the compiled function. Its parameters are the values that enter the region,
`<name>_i0, <name>_i1, ...`, in the order the region first reads them; constants stay
inside (the codegen sees the weights). A region whose values are read outside at
several places returns them as a tuple, and the graph takes its fields. The
annotations go away, DEFAULT ones included: those ops stay in the graph.
"""
from __future__ import annotations

from .annotation import DEFAULT, read_regions, strip
from ..ir.expr import Call, Constant, Expr, Function, GlobalVar, Tuple, TupleGetItem, Var
from ..ir.functor import depth_first, operands, post_order
from ..ir.infer_type import infer_type
from ..ir.ty import FuncType

ATTRS = ("Compiler", "global_symbol", "Primitive", "Inline")


def partition_graph(func: Function, names: dict) -> tuple[Function, dict[str, Function]]:
    """`func` (annotated, typed) with its external regions called by name, and those
    functions by name. `names` counts each target's regions so far (shared across the
    functions of one module, for unique names)."""
    regions, region_of = read_regions(func.body)
    body, was = strip(func.body)
    new_region = {}  # id(op call of the stripped body) -> its region
    for e in post_order(body):
        if id(e) in was and was[id(e)] in region_of:
            new_region[id(e)] = region_of[was[id(e)]]
    external = [r for r in regions if r.target != DEFAULT]
    if not external:
        return Function(func.params, body, func.ret_type, func.attrs), {}

    members: dict[int, list] = {id(r): [] for r in external}
    for e in post_order(body):
        r = new_region.get(id(e))
        if r is not None and r.target != DEFAULT:
            members[id(r)].append(e)
    users: dict[int, list] = {}
    for e in post_order(body):
        for o in operands(e):
            users.setdefault(id(o), []).append(e)

    replaced: dict[int, Expr] = {}  # id(op call of a region) -> what the graph reads
    calls: list[tuple[list, Call]] = []
    functions: dict[str, Function] = {}
    for r in external:
        nodes = members[id(r)]
        inside = {id(n) for n in nodes}
        outputs = [n for n in nodes if n is body or
                   any(id(u) not in inside for u in users.get(id(n), []))]
        k = names.get(r.target, 0)
        names[r.target] = k + 1
        name = f"{r.target}_{k}"
        inputs: list = []
        params: dict[int, Var] = {}

        def param(value, name=name, inputs=inputs, params=params):
            if id(value) not in params:
                params[id(value)] = Var(f"{name}_i{len(params)}", value.ty)
                inputs.append(value)
            return params[id(value)]

        memo: dict[int, Expr] = {}

        def inner(e, inside=inside, memo=memo, param=param):
            if id(e) in memo:
                return memo[id(e)]
            if id(e) in inside:
                out = Call(e.op, [inner(a) for a in e.args], e.attrs, e.ty)
            elif isinstance(e, Constant):
                out = e
            else:
                out = param(e)
            memo[id(e)] = out
            return out
        for n in outputs:  # the region's nodes first, from a work list (a region may be
            for e in _inside_order(n, inside, memo):  # thousands of ops), in the order
                inner(e)                              # inner's recursion meets them
        results = [inner(n) for n in outputs]
        fbody = results[0] if len(results) == 1 else Tuple(results)
        fn = infer_type(Function(list(params.values()), fbody, None, {
            "Compiler": r.target, "global_symbol": name, "Primitive": 1, "Inline": 1}))
        functions[name] = fn
        call = Call(GlobalVar(name, FuncType([p.ty for p in fn.params], fn.ret_type)),
                    inputs, {}, fn.ret_type)
        calls.append((inputs, call))
        for i, n in enumerate(outputs):
            replaced[id(n)] = call if len(outputs) == 1 else \
                TupleGetItem(call, i, fn.ret_type.fields[i])
    rebuild = _Rebuild(replaced, {id(c): ins for ins, c in calls})
    for e in post_order(body):  # operands first: no recursion with the graph's depth
        rebuild.visit(e)
    main = rebuild.visit(body)
    return Function(func.params, main, func.ret_type, func.attrs), functions


def _inside_order(out: Expr, inside: set, done: dict) -> list[Expr]:
    """The nodes `out` reads, itself included, each once, in depth-first post-order,
    operands in order: not below a node outside `inside` (a region's input) nor below
    one in `done`."""
    return depth_first(out, lambda o: id(o) in done,
                       lambda o: operands(o) if id(o) in inside else ())


class _Rebuild:
    """The graph with each region's outputs read from its call, the call's inputs
    rebuilt the same way (a region may read another's output)."""

    def __init__(self, replaced: dict, inputs_of: dict):
        self.replaced, self.inputs_of, self.memo = replaced, inputs_of, {}

    def visit(self, e: Expr) -> Expr:
        if id(e) in self.memo:
            return self.memo[id(e)]
        if id(e) in self.replaced:
            out = self._call_of(self.replaced[id(e)])
        elif isinstance(e, Call):
            op = self.visit(e.op) if isinstance(e.op, Function) else e.op
            out = Call(op, [self.visit(a) for a in e.args], e.attrs, e.ty)
        elif isinstance(e, Tuple):
            out = Tuple([self.visit(f) for f in e.fields], e.ty)
        elif isinstance(e, TupleGetItem):
            out = TupleGetItem(self.visit(e.tuple_value), e.index, e.ty)
        else:
            out = e
        self.memo[id(e)] = out
        return out

    def _call_of(self, reader: Expr) -> Expr:
        call = reader.tuple_value if isinstance(reader, TupleGetItem) else reader
        if id(call) not in self.memo:
            self.memo[id(call)] = Call(call.op, [self.visit(a) for a in
                                                 self.inputs_of[id(call)]],
                                       call.attrs, call.ty)
        new = self.memo[id(call)]
        return new if reader is call else TupleGetItem(new, reader.index, reader.ty)
