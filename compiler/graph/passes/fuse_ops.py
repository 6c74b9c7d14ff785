"""FuseOps: operator fusion by post-dominator analysis (the reference's 0x02-0x03, TVM's
fuse_ops.cc), in three steps:

1. IndexedForwardGraph: every node of the function in post-DFS order (operands before
   their users), each with its pattern kind and its edges to the nodes that use it,
   each edge with a pattern (a broadcast op whose operand has the result's shape reads
   it elementwise). The function's result, the parameters and non-scalar constants are
   opaque roots that nothing fuses into.
2. The post-dominator tree: in reverse post-DFS order, a node's parent is the least
   common ancestor of its users in the tree, with the combined (largest) pattern of the
   edges and tree nodes on the way; a node used outside the graph has none.
3. The partition (union-find groups), in three phases over the nodes in post-DFS order:
   phase 0 fuses an OUT_ELEMWISE_FUSABLE anchor (conv2d, dense) with its post-dominator
   when every path between them is at most BROADCAST; elementwise and broadcast ops
   fuse into an injective or reduction post-dominator; phase 1 fuses injective ops
   (and tuples) along all-injective paths; phase 2 fuses injective ops into tuples.
   `CheckPath` checks every path from a node to its post-dominator; `CommitFuse`
   merges every group on those paths into the post-dominator's. A fusion that would
   make a group of more than `relay.FuseOps.max_depth` nodes (MAX_DEPTH, 64) is skipped.
   One departure from TVM: an anchored group does not take in a cast that widens its
   result (int8 -> float32: a DequantizeLinear after a quantized convolution's
   requantize) when that value is on its way into a sum (a residual Add) that another
   anchor's group has already taken: the cast and what follows it fuse into the sum's
   group instead, as they do where the 8-bit value has other readers, so the value
   between the two kernels is stored in its narrow type (a quarter of the bytes)
   rather than in float, where TVM's order would store the float.

Each group with an op becomes a `Function` with `Primitive=1` whose parameters
(`%p0`, `%p1`, ...) take the values from outside the group, called where the group's
result was. fuse_opt_level=0 (or opt_level 0) fuses nothing: one function per op. A
call of an external function (a GlobalVar, PartitionGraph's) stays as it is.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...ops.pattern import OpPattern
from ..ir.expr import Call, Constant, Expr, Function, GlobalVar, Tuple, TupleGetItem, Var
from ..ir.functor import depth_first, operands, post_order
from ..ir.op import Op

TUPLE = 7  # TVM's kTuple, between COMM_REDUCE... and OPAQUE in the combining order
ELEMWISE, BROADCAST, INJECTIVE = OpPattern.ELEMWISE, OpPattern.BROADCAST, OpPattern.INJECTIVE
COMM_REDUCE, OUT_FUSABLE, OPAQUE = (OpPattern.COMM_REDUCE, OpPattern.OUT_ELEMWISE_FUSABLE,
                                    OpPattern.OPAQUE)
MAX_DEPTH = 64
"""The most nodes in a group, unless "relay.FuseOps.max_depth" says otherwise (TVM's
default is 256). A kernel's lowering is recursive over its fused expression, a few
frames per op, so 64 keeps the deepest kernel far inside Python's default recursion
limit of 1000 (a 256-op chain needed about 900 frames, 600 failed) and the build needs
no deep stack; the models of benchmarks/ have no group that large (their plans are the
same under 256)."""


@dataclass(eq=False)
class Node:
    """A node of the indexed forward graph: its expression, index in post-DFS order,
    pattern, users (node, edge pattern) and whether something outside uses it."""
    ref: Expr
    index: int = -1
    pattern: int = OPAQUE
    outputs: list = field(default_factory=list)
    extern_ref: bool = False


def forward_graph(body: Expr) -> list[Node]:
    """The nodes of `body` in post-DFS order (see the module docstring)."""
    nodes: dict[int, Node] = {}
    order: list[Node] = []

    def node(expr: Expr) -> Node:
        if id(expr) not in nodes:
            nodes[id(expr)] = Node(expr)
        return nodes[id(expr)]

    def use(arg: Expr, user: Node | None, pattern: int) -> None:
        n = node(arg)
        if user is None:
            n.extern_ref = True
        else:
            n.outputs.append((user, pattern))

    def begin(expr: Expr) -> tuple:
        """A visit of `expr` begun: its pattern set; (expr, its node, its (operand, edge
        pattern) pairs to use and visit in order)."""
        me = node(expr)
        edges = []
        if isinstance(expr, Call) and isinstance(expr.op, Op):
            me.pattern = expr.op.pattern
            for arg in expr.args:
                edge = me.pattern
                if edge == BROADCAST and getattr(arg.ty, "shape", None) == expr.ty.shape:
                    edge = ELEMWISE
                edges.append((arg, edge))
        elif isinstance(expr, Call):  # a call of a function: opaque
            edges = [(arg, OPAQUE) for arg in expr.args]
        elif isinstance(expr, Tuple):
            me.pattern = TUPLE
            edges = [(f, INJECTIVE) for f in expr.fields]
        elif isinstance(expr, TupleGetItem):
            # a field of a call's tuple (an external function's, a kernel's several
            # outputs: topk's values and indices) stays a value of the graph
            me.pattern = OPAQUE if isinstance(expr.tuple_value, Call) else INJECTIVE
            edges = [(expr.tuple_value, INJECTIVE)]
        elif isinstance(expr, Constant):
            simple = expr.data.ndim == 0 and expr.data.dtype in (np.float32, np.int32,
                                                                 np.int64, np.float64)
            me.pattern = ELEMWISE if simple else OPAQUE
        return expr, me, iter(edges)

    # a depth-first walk on a stack of its own (a graph thousands of ops deep): an
    # operand is used, then visited, before the next; a node is indexed when done
    stack = [begin(body)]
    while stack:
        _, me, edges = stack[-1]
        for arg, edge in edges:
            use(arg, me, edge)
            if nodes[id(arg)].index < 0:
                stack.append(begin(arg))
                break
        else:
            stack.pop()
            me.index = len(order)
            order.append(me)
    use(body, None, OPAQUE)
    return order


def _is_external(expr: Expr) -> bool:
    return isinstance(expr, Call) and isinstance(expr.op, GlobalVar)


@dataclass(eq=False)
class TreeNode:
    gnode: Node
    parent: TreeNode | None = None
    depth: int = 1
    pattern: int = OPAQUE


def post_dominator_tree(order: list[Node]) -> list[TreeNode]:
    """The post-dominator tree's node of each graph node, by index."""
    tree: list[TreeNode | None] = [None] * len(order)
    for n in reversed(order):
        t = TreeNode(n)
        if not n.extern_ref:
            parent, pattern = None, ELEMWISE
            for user, edge in n.outputs:
                other = tree[user.index]
                pattern = max(pattern, edge)
                parent, pattern = (other, pattern) if parent is None else \
                    _lca(parent, other, pattern)
            if parent is not None:
                t.parent, t.depth, t.pattern = parent, parent.depth + 1, pattern
        tree[n.index] = t
    return tree


def _lca(lhs: TreeNode | None, rhs: TreeNode | None, pattern: int):
    while lhs is not rhs:
        if lhs is None or rhs is None:
            return None, pattern
        if lhs.depth < rhs.depth:
            pattern, rhs = max(pattern, rhs.pattern), rhs.parent
        elif rhs.depth < lhs.depth:
            pattern, lhs = max(pattern, lhs.pattern), lhs.parent
        else:
            pattern = max(pattern, lhs.pattern, rhs.pattern)
            lhs, rhs = lhs.parent, rhs.parent
    return lhs, pattern


@dataclass(eq=False)
class Group:
    """A union-find group: its root is the group's output node."""
    pattern: int
    root_ref: Expr
    anchor_ref: Expr | None = None
    parent: Group | None = None
    num_nodes: int = 1

    def find_root(self) -> Group:
        root = self
        while root.parent is not None:
            root = root.parent
        node = self
        while node is not root:
            node.parent, node = root, node.parent
        return root


def _sum_it_widens_into(n: Node, dom: Node, tree: list[TreeNode]) -> Node | None:
    """Where `dom` is a cast that widens `n`'s value and leads, through elementwise ops
    (at most MAX_DEPTH of them), into an elementwise op with a second tensor operand
    that is no constant: that op (the module docstring's departure); else None."""
    cast = dom.ref
    if not (isinstance(cast, Call) and isinstance(cast.op, Op) and cast.op.name == "cast"
            and np.dtype(cast.ty.dtype).itemsize > np.dtype(cast.args[0].ty.dtype).itemsize):
        return None
    prev, t = dom, tree[dom.index].parent
    for _ in range(MAX_DEPTH):
        if t is None or t.gnode.pattern > BROADCAST or not isinstance(t.gnode.ref, Call):
            return None
        if any(getattr(a.ty, "shape", ()) and a is not prev.ref and not isinstance(a, Constant)
               for a in t.gnode.ref.args):
            return t.gnode
        prev, t = t.gnode, t.parent
    return None


def _count_with(groups: list[Group], child: Node, dom: Node) -> int:
    """The nodes of `dom`'s group and of those on the paths from `child` to `dom`: the
    size of the group that fusing them would make."""
    seen, total, stack = set(), 0, [child]
    while stack:
        n = stack.pop()
        if n is dom or id(n) in seen:
            continue
        seen.add(id(n))
        total += groups[n.index].num_nodes
        stack.extend(u for u, _ in n.outputs)
    return groups[dom.index].find_root().num_nodes + total


def partition(order: list[Node], opt_level: int, max_depth: int = MAX_DEPTH) -> list[Group]:
    """The group of each node (see the module docstring)."""
    groups = [Group(n.pattern, n.ref, n.ref if n.pattern == OUT_FUSABLE else None)
              for n in order]
    if opt_level == 0:
        return groups
    tree = post_dominator_tree(order)

    # the walks below keep stacks of their own (paths may be thousands of ops long);
    # commit's merges happen in a depth-first pre-order, users in order, as its result
    # (the anchor a group keeps) depends on it
    def check_path(src: Node, sink: Node, cond) -> bool:
        seen, stack = set(), [user for user, _ in reversed(src.outputs)]
        while stack:
            n = stack.pop()
            if id(n) in seen:
                continue
            seen.add(id(n))
            if not cond(groups[n.index].find_root().pattern, n is sink):
                return False
            if n is not sink:
                stack.extend(user for user, _ in reversed(n.outputs))
        return True

    def commit(src: Node, sink: Node) -> None:
        target, seen, stack = groups[sink.index], set(), [src]
        while stack:
            n = stack.pop()
            if n is sink or id(n) in seen:
                continue
            seen.add(id(n))
            child, parent = groups[n.index].find_root(), target.find_root()
            if child is not parent:
                parent.num_nodes += child.num_nodes
                child.parent = parent
                if child.anchor_ref is not None:
                    parent.anchor_ref = child.anchor_ref
                    parent.pattern = max(parent.pattern, child.pattern)
            stack.extend(user for user, _ in reversed(n.outputs))

    for phase in range(3):
        for n, t in zip(order, tree):
            group = groups[n.index]
            if group.pattern == OPAQUE or t.parent is None:
                continue
            dom = t.parent.gnode
            if _count_with(groups, n, dom) > max_depth:
                continue
            dom_group = groups[dom.index]
            if phase == 2:
                if group.pattern > INJECTIVE or dom_group.find_root().pattern == TUPLE:
                    continue
                if dom_group.pattern == TUPLE and dom_group.find_root().pattern <= INJECTIVE \
                        and check_path(n, dom, lambda k, sink: k <= INJECTIVE):
                    commit(n, dom)
                continue
            if group.find_root() is dom_group.find_root() or dom_group.pattern == TUPLE:
                continue
            if groups[n.index].find_root().anchor_ref is not None:
                total = _sum_it_widens_into(n, dom, tree)
                if total is not None and groups[total.index].find_root().anchor_ref is not None:
                    continue  # the sum is another anchor's: this value stays narrow

            if group.pattern == OUT_FUSABLE:
                if phase == 0 and t.pattern == ELEMWISE and \
                        check_path(n, dom, lambda k, sink: k <= BROADCAST):
                    commit(n, dom)
            elif group.pattern <= BROADCAST:
                if t.pattern <= INJECTIVE or t.pattern == COMM_REDUCE:
                    def cond(k, sink):
                        return k in (ELEMWISE, BROADCAST, INJECTIVE, COMM_REDUCE, OUT_FUSABLE) \
                            if sink else k <= INJECTIVE
                    if check_path(n, dom, cond):
                        commit(n, dom)
            elif group.pattern in (INJECTIVE, TUPLE):
                if phase == 1 and t.pattern <= INJECTIVE and \
                        check_path(n, dom, lambda k, sink: k <= INJECTIVE):
                    commit(n, dom)
    return groups


def fuse_ops(func: Function, opt_level: int, max_depth: int = MAX_DEPTH) -> Function:
    """`func` (typed) with every group of its partition made a Primitive function."""
    order = forward_graph(func.body)
    groups = partition(order, opt_level, max_depth)
    group_of = {id(n.ref): groups[n.index] for n in order}
    return Function(func.params, _Fuser(group_of).rebuild(func.body), func.ret_type,
                    func.attrs)


class _Fuser:
    """Rebuilds the graph: inside a group, a value from another group becomes a
    parameter of the group's function; at the group's root, the function is called."""

    def __init__(self, group_of: dict):
        self.group_of = group_of
        self.memo: dict = {}
        self.params: dict = {}  # group -> {id(outer value): (param, outer value)}

    def rebuild(self, body: Expr) -> Expr:
        """`body` rebuilt, from work lists: every group's root (and external call) is
        visited in post-order, from outside, after its group's other nodes and what they
        read, from inside, in the depth-first order a recursive visit from the root meets
        them (which numbers the function's parameters); so no visit recurses deeper than
        one node's operands, however deep the graph or large a group."""
        for expr in post_order(body):
            if isinstance(expr, (Var, Constant)):
                continue
            if _is_external(expr):
                self.visit(expr, None)
                continue
            group = self.group_of[id(expr)].find_root()
            if group.root_ref is not expr:
                continue
            if not (isinstance(expr, (Tuple, TupleGetItem)) and group.num_nodes == 1):
                for inner in self._group_order(expr, group):
                    self.visit(inner, group)
            self.visit(expr, None)
        return self.visit(body, None)

    def _in_group(self, expr: Expr, group: Group) -> bool:
        return not isinstance(expr, (Var, Constant)) and not _is_external(expr) and \
            self.group_of[id(expr)].find_root() is group

    def _group_order(self, root: Expr, group: Group) -> list[Expr]:
        """What a visit of `root` in `group` meets, depth-first, operands in order, each
        once, not itself: the group's nodes after what they read, and the values it reads
        from outside (its parameters), not below them."""
        return depth_first(
            root, lambda o: (id(o), id(group)) in self.memo,
            lambda o: operands(o) if o is root or self._in_group(o, group) else ())[:-1]

    def visit(self, expr: Expr, into: Group | None) -> Expr:
        """`expr` as seen from group `into` (None: outside every group)."""
        if isinstance(expr, Var):
            return expr if into is None else self._param(into, expr)
        if _is_external(expr):  # as it is
            if into is not None:
                return self._param(into, self.visit(expr, None))
            if id(expr) not in self.memo:
                self.memo[id(expr)] = Call(expr.op, [self.visit(a, None) for a in expr.args],
                                           expr.attrs, expr.ty)
            return self.memo[id(expr)]
        group = self.group_of[id(expr)].find_root()
        if isinstance(expr, Constant) and (into is None or group is not into):
            return expr if into is None else self._param(into, expr)
        if into is not None and group is not into:
            return self._param(into, self.visit(expr, None))
        key = (id(expr), id(into))
        if key in self.memo:
            return self.memo[key]
        # a tuple or a field of one alone in its group needs no function (a field of
        # batch_norm's tuple, the tuple of a function's outputs)
        alone = isinstance(expr, (Tuple, TupleGetItem)) and group.num_nodes == 1
        inner = None if alone else group if into is None else into
        out = self._rebuild(expr, inner)
        if into is None and not alone and group.root_ref is expr:
            out = self._function(group, out)
        self.memo[key] = out
        return out

    def _rebuild(self, expr: Expr, into: Group) -> Expr:
        if isinstance(expr, Call):
            return Call(expr.op, [self.visit(a, into) for a in expr.args], expr.attrs, expr.ty)
        if isinstance(expr, Tuple):
            return Tuple([self.visit(f, into) for f in expr.fields], expr.ty)
        if isinstance(expr, TupleGetItem):
            return TupleGetItem(self.visit(expr.tuple_value, into), expr.index, expr.ty)
        return expr

    def _param(self, group: Group, value: Expr) -> Var:
        params = self.params.setdefault(id(group), {})
        if id(value) not in params:
            params[id(value)] = (Var(f"p{len(params)}", value.ty), value)
        return params[id(value)][0]

    def _function(self, group: Group, body: Expr) -> Call:
        params = list(self.params.get(id(group), {}).values())
        fn = Function([p for p, _ in params], body, body.ty, {"Primitive": 1})
        return Call(fn, [v for _, v in params], {}, body.ty)
