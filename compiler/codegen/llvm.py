"""CodeGenLLVM: loop IR (after the passes) -> an LLVM module, through llvmlite.ir.

Each PrimFunc becomes two functions:
- `@name(ptr noalias A, ..., i32 n, ...) -> i32`: buffers as pointers, then the symbolic
  sizes; returns 0, or a nonzero code when an allocation fails;
- `@name_packed(ptr args) -> i32`: the same with every argument in one i64 array (data
  pointers, then sizes), the one signature the runtime calls, times and exports.

A parallel loop's body is outlined into `@name_parK(i32 task, i32 num_tasks, ptr closure)`
and run by `autosched_parallel_for_dynamic` (compiler/runtime/runtime.ll) on the
target's cores: each task takes one contiguous chunk of the iterations, and there are up
to TASKS_PER_CORE tasks per core; each thread claims the tasks of its own contiguous
range first (the same thread the same part of every loop, so a layer reads what its
core wrote in the layer before from its own cache), then those left in the others', so
that a core slowed by another process for a while does fewer of them. Buffers we
allocate are 64-byte aligned; small ones live on the stack, so LLVM promotes a fully
unrolled and vectorized local accumulator to registers. The instructions of each operation on
values (arithmetic, casts, comparisons, math intrinsics) are llvm_ops.py's; the packed
wrapper and the module's metadata packed.py's; which integers are never negative (an
index's unsigned division) non_negative.py's.
"""
from __future__ import annotations

from llvmlite import ir

from ..errors import BuildError
from ..ir import expr as E
from ..ir.expr import Broadcast, Load, Ramp
from ..ir.functor import collect, exists
from ..ir.stmt import (PARALLEL, Allocate, Evaluate, For, IfThenElse, LetStmt, PrimFunc,
                       SeqStmt, Store)
from ..runtime.cpu_features import required_features
from .llvm_ops import (I32, I64, PTR, binary, cast, compare, declare, elem_bytes,
                       from_memory, lane_numbers, llvm_type, math_call, splat,
                       to_memory)
from .int8_dot import dot_u8s8
from .non_negative import NonNegative, positive_constant
from .packed import add_module_meta, add_packed

STACK_LIMIT = 64 * 1024  # bytes; bigger buffers come from aligned_alloc
# Tasks per core of a parallel loop: enough that when one core runs slower than the
# other for a while (a shared host), the faster one takes more tasks and the loop ends
# at most about one task after the ideal; few enough that claiming them costs nothing.
TASKS_PER_CORE = 8


class CodeGenLLVM:
    """Builds one LLVM module; `add_function` once per PrimFunc, then `str(module)`."""

    def __init__(self, target, name: str = "autosched"):
        self.module = ir.Module(name=name)
        self.module.triple = target.mtriple
        self.num_cores = target.num_cores
        self.target = target
        self._outlined = 0

    # ------------------------------------------------------------------ functions

    def add_function(self, func: PrimFunc) -> None:
        """Emit `func` and its packed wrapper."""
        self._check_float16(func)
        types = [PTR] * len(func.params) + [llvm_type(v.dtype) for v in func.size_vars]
        fn = ir.Function(self.module, ir.FunctionType(I32, types), name=func.name)
        for arg, buf in zip(fn.args, func.params):
            arg.name = buf.name
            arg.add_attribute("noalias")
        for arg, v in zip(fn.args[len(func.params):], func.size_vars):
            arg.name = v.name
        self.fname = func.name
        self._emitted, self._index_facts, self._bindings = {}, {}, 0  # expr's
        self._begin(fn)
        self.bufs = dict(zip(func.params, fn.args))
        self.env = dict(zip(func.size_vars, fn.args[len(func.params):]))
        self.in_parallel = False
        self.non_negative = NonNegative(func.size_vars)  # and the variables in scope
        self.stmt(func.body)
        self.builder.ret(I32(0))
        add_packed(self.module, fn)

    def _check_float16(self, func: PrimFunc) -> None:
        """A BuildError when `func` computes in float16 for an x86 CPU without F16C: LLVM
        would convert each value through compiler-rt's functions, which neither the JIT
        nor an exported library links."""
        x86 = self.target.mtriple.startswith(("x86_64", "i386", "i686"))
        if not x86 or "f16c" in required_features(self.target):
            return
        if any(E.element(b.dtype) == "float16" for b in func.params) or collect(
                func.body, lambda n: isinstance(n, E.Expr) and E.element(n.dtype) == "float16"):
            raise BuildError(f"{func.name}: float16 needs the F16C instructions, which target "
                             f"{self.target} lacks; use float32, or a CPU that has them "
                             "(-mcpu=haswell or later)")

    def add_metadata(self, meta: dict) -> None:
        """`ptr @autosched_module_meta()` returns `meta` as JSON (packed.py)."""
        add_module_meta(self.module, meta)

    def _begin(self, fn: ir.Function) -> None:
        self.fn = fn
        entry = fn.append_basic_block("entry")
        self.entry = entry
        self.builder = ir.IRBuilder(fn.append_basic_block("body"))
        ir.IRBuilder(entry).branch(self.builder.block)

    def _alloca(self, ty: ir.Type, name: str) -> ir.Value:
        """A stack slot in the entry block, so it is allocated once per call (and is
        private per task in an outlined parallel body)."""
        b = ir.IRBuilder(self.entry)
        b.position_before(self.entry.terminator)
        slot = b.alloca(ty, name=name)
        slot.align = 64
        slot.type = PTR  # an opaque pointer, like every other pointer we handle
        return slot

    def _fail_if(self, cond: ir.Value, code: ir.Value) -> None:
        fail = self.fn.append_basic_block("fail")
        ok = self.fn.append_basic_block("ok")
        self.builder.cbranch(cond, fail, ok)
        self.builder.position_at_end(fail)
        self.builder.ret(code)
        self.builder.position_at_end(ok)

    # ------------------------------------------------------------------ statements

    def stmt(self, s) -> None:
        """Emit the statement `s` at the builder's position."""
        b = self.builder
        match s:
            case SeqStmt(seq=items):
                for x in items:
                    self.stmt(x)
            case For(kind=kind) if kind == PARALLEL and not self.in_parallel:
                self._parallel(s)
            case For(loop_var=v, min=lo, extent=ext, body=body):
                self._loop(v, self.expr(lo), self.expr(ext), body, self.non_negative(lo))
            case Store(buffer=buf, index=idx, value=val):
                self._store(buf, idx, self.expr(val))
            case IfThenElse(condition=c, then_case=t, else_case=f):
                then_bb = self.fn.append_basic_block("then")
                else_bb = self.fn.append_basic_block("else") if f is not None else None
                done = self.fn.append_basic_block("endif")
                b.cbranch(self.expr(c), then_bb, else_bb or done)
                for bb, body in ((then_bb, t), (else_bb, f)):
                    if bb is not None:
                        b.position_at_end(bb)
                        self.stmt(body)
                        b.branch(done)
                b.position_at_end(done)
            case LetStmt(var=v, value=val, body=body):
                self._bind(v, self.expr(val))
                with self.non_negative.scope(v, self.non_negative(val)):
                    self.stmt(body)
                self._bind(v, None)
            case Allocate(buffer=buf, body=body):
                self._allocate(buf, body)
            case Evaluate(value=v):
                self.expr(v)
            case _:
                raise BuildError(f"{self.fname}: no code generation for {type(s).__name__}")

    def _loop(self, var: E.Var, lo: ir.Value, extent: ir.Value, body,
              non_negative: bool = False) -> None:
        """`for idx in [0, extent)` with `var = lo + idx`, the loop shape LLVM analyses best
        (`non_negative`: lo is never negative, and so neither is `var`)."""
        b, ty = self.builder, llvm_type(var.dtype)
        lo, extent = self._int_as(lo, ty), self._int_as(extent, ty)
        pre = b.block
        header = self.fn.append_basic_block(f"{var.name}.header")
        loop = self.fn.append_basic_block(f"{var.name}.body")
        done = self.fn.append_basic_block(f"{var.name}.done")
        b.branch(header)
        b.position_at_end(header)
        idx = b.phi(ty, name=var.name + ".idx")
        idx.add_incoming(ir.Constant(ty, 0), pre)
        b.cbranch(b.icmp_signed("<", idx, extent), loop, done)
        b.position_at_end(loop)
        self._bind(var, b.add(lo, idx, name=var.name, flags=("nsw",)))
        with self.non_negative.scope(var, non_negative):
            self.stmt(body)
        idx.add_incoming(b.add(idx, ir.Constant(ty, 1), flags=("nsw",)), b.block)
        b.branch(header)
        b.position_at_end(done)
        self._bind(var, None)

    def _int_as(self, v: ir.Value, ty: ir.Type) -> ir.Value:
        """An index value in the loop variable's integer type (sizes may be int64)."""
        if v.type == ty:
            return v
        return self.builder.trunc(v, ty) if v.type.width > ty.width else self.builder.sext(v, ty)

    def _parallel(self, loop: For) -> None:
        """Outline the loop body and hand it to the thread pool; the closure carries the
        values and buffers the body uses from outside."""
        used = collect(loop, lambda n: isinstance(n, (E.Var, Load, Store)))  # one walk
        used_vars = list(dict.fromkeys(v for v in used if isinstance(v, E.Var) and
                                       v in self.env))
        accesses = [n for n in used if not isinstance(n, E.Var)]
        used_bufs = list(dict.fromkeys(n.buffer for n in accesses if n.buffer in self.bufs))
        values = [self.env[v] for v in used_vars] + [self.bufs[buf] for buf in used_bufs]
        sty = ir.LiteralStructType([v.type for v in values])
        closure = self._alloca(sty, "closure")
        for pos, v in enumerate(values):
            self.builder.store(v, self.builder.gep(closure, [I32(0), I32(pos)], inbounds=True,
                                                   source_etype=sty))

        outer = (self.fn, self.entry, self.builder, self.env, self.bufs)
        self._outlined += 1
        body_fn = ir.Function(self.module, ir.FunctionType(I32, [I32, I32, PTR]),
                              name=f"{self.fname}_par{self._outlined}")
        body_fn.linkage = "internal"
        self._begin(body_fn)
        self.in_parallel = True
        b = self.builder
        loaded = [b.load(b.gep(body_fn.args[2], [I32(0), I32(pos)], inbounds=True,
                               source_etype=sty), typ=v.type) for pos, v in enumerate(values)]
        self.env = dict(zip(used_vars, loaded))
        self.bufs = dict(zip(used_bufs, loaded[len(used_vars):]))
        ty = llvm_type(loop.loop_var.dtype)
        extent = self._int_as(self.expr(loop.extent), ty)
        task, ntask = (b.sext(a, ty) if ty != I32 else a for a in body_fn.args[:2])
        chunk = b.sdiv(b.sub(b.add(extent, ntask), ir.Constant(ty, 1)), ntask)
        begin = b.mul(task, chunk)
        end = b.add(begin, chunk)
        end = b.select(b.icmp_signed("<", end, extent), end, extent)
        count = b.sub(end, begin)
        count = b.select(b.icmp_signed("<", count, ir.Constant(ty, 0)), ir.Constant(ty, 0), count)
        start = b.add(self._int_as(self.expr(loop.min), ty), begin)
        # The chunk runs in a function of its own whose buffer arguments are noalias, as
        # in the function the loop came from: pointers loaded from the closure carry no
        # aliasing facts, and without them LLVM keeps every access in memory. It is
        # inlined into the task, where the facts survive as alias scopes.
        chunk_type = ir.FunctionType(I32, [v.type for v in values] + [ty, ty])
        chunk_fn = ir.Function(self.module, chunk_type, f"{self.fname}_par{self._outlined}_chunk")
        chunk_fn.linkage = "internal"
        chunk_fn.attributes.add("alwaysinline")
        for arg in chunk_fn.args[len(used_vars):len(values)]:
            arg.add_attribute("noalias")
        b.ret(b.call(chunk_fn, [*loaded, start, count]))
        self._begin(chunk_fn)
        self.env = dict(zip(used_vars, chunk_fn.args))
        self.bufs = dict(zip(used_bufs, chunk_fn.args[len(used_vars):len(values)]))
        body, hoisted = _hoist_allocations(loop.body)

        def nest(bufs):
            if bufs:
                self._allocate(bufs[0], lambda: nest(bufs[1:]))
            else:
                self._loop(loop.loop_var, chunk_fn.args[-2], chunk_fn.args[-1], body,
                           self.non_negative(loop.min))  # a chunk starts at min or after
        nest(hoisted)
        self.builder.ret(I32(0))
        self.in_parallel = False
        self.fn, self.entry, self.builder, self.env, self.bufs = outer
        self._bindings += 1

        b = self.builder
        extent = self._int_as(self.expr(loop.extent), I32)
        most = I32(self.num_cores * TASKS_PER_CORE)
        ntasks = b.select(b.icmp_signed("<", extent, most), extent, most)
        ntasks = b.select(b.icmp_signed("<", ntasks, I32(1)), I32(1), ntasks)
        # as many tasks as chunks of ceil(extent / ntasks) iterations: none is left empty
        chunk = b.sdiv(b.sub(b.add(extent, ntasks), I32(1)), ntasks)
        chunk = b.select(b.icmp_signed("<", chunk, I32(1)), I32(1), chunk)
        ntasks = b.sdiv(b.sub(b.add(extent, chunk), I32(1)), chunk)
        ntasks = b.select(b.icmp_signed("<", ntasks, I32(1)), I32(1), ntasks)
        launch = declare(self.module, "autosched_parallel_for_dynamic", I32, [PTR, PTR, I32, I32])
        rc = b.call(launch, [body_fn, closure, ntasks, I32(self.num_cores)])
        self._fail_if(b.icmp_signed("!=", rc, I32(0)), rc)

    def _allocate(self, buf, body) -> None:
        """`buf` allocated around `body`, a statement or a function emitting the code."""
        emit = body if callable(body) else (lambda: self.stmt(body))
        elems = buf.elements
        size = elem_bytes(buf.dtype) * elems.value if isinstance(elems, E.IntImm) else None
        outer = self.bufs.get(buf)
        if size is not None and size <= STACK_LIMIT:
            array = ir.ArrayType(llvm_type(buf.dtype, memory=True), elems.value)
            self.bufs[buf] = self._alloca(array, buf.name)
            emit()
        else:
            b = self.builder
            n = (I64(elems.value) if isinstance(elems, E.IntImm)
                 else self._int_as(self.expr(elems), I64))
            # A region past the end of a split can be empty (even negative): nothing is
            # computed there, but the allocation must still succeed.
            n = b.select(b.icmp_signed("<", n, I64(1)), I64(1), n)
            nbytes = b.mul(n, I64(elem_bytes(buf.dtype)))
            nbytes = b.and_(b.add(nbytes, I64(63)), I64(~63))  # aligned_alloc wants a multiple
            ptr = b.call(declare(self.module, "aligned_alloc", PTR, [I64, I64]), [I64(64), nbytes])
            self._fail_if(b.icmp_unsigned("==", ptr, ir.Constant(PTR, None)), I32(-1))
            self.bufs[buf] = ptr
            emit()
            self.builder.call(declare(self.module, "free", ir.VoidType(), [PTR]), [ptr])
        if outer is None:
            del self.bufs[buf]
        else:
            self.bufs[buf] = outer

    # ------------------------------------------------------------------ memory

    def _ptr(self, buf, index: ir.Value) -> ir.Value:
        if buf not in self.bufs:
            raise BuildError(f"{self.fname}: buffer {buf.name} is used outside its allocation")
        index = self.builder.sext(index, I64) if index.type != I64 else index
        return self.builder.gep(self.bufs[buf], [index], inbounds=True,
                                source_etype=llvm_type(buf.dtype, memory=True))

    def _contiguous(self, idx) -> bool:
        return isinstance(idx, Ramp) and isinstance(idx.stride, E.IntImm) and idx.stride.value == 1

    def _load(self, e: Load) -> ir.Value:
        b, buf, idx = self.builder, e.buffer, e.index
        mem = llvm_type(buf.dtype, memory=True)
        align = elem_bytes(buf.dtype)
        n = E.lanes(idx.dtype)
        if n == 1:
            v = b.load(self._ptr(buf, self.expr(idx)), typ=mem, align=align)
        elif self._contiguous(idx):
            v = b.load(self._ptr(buf, self.expr(idx.base)), typ=ir.VectorType(mem, n), align=align)
        else:
            lanes = self.expr(idx)
            v = ir.Constant(ir.VectorType(mem, n), None)
            for k in range(n):
                x = b.load(self._ptr(buf, b.extract_element(lanes, I32(k))), typ=mem, align=align)
                v = b.insert_element(v, x, I32(k))
        return from_memory(b, v, buf.dtype)

    def _store(self, buf, idx, value: ir.Value) -> None:
        b = self.builder
        align = elem_bytes(buf.dtype)
        value = to_memory(b, value, buf.dtype)
        n = E.lanes(idx.dtype)
        if n == 1:
            b.store(value, self._ptr(buf, self.expr(idx)), align=align)
        elif self._contiguous(idx):
            b.store(value, self._ptr(buf, self.expr(idx.base)), align=align)
        else:
            lanes = self.expr(idx)
            for k in range(n):
                b.store(b.extract_element(value, I32(k)),
                        self._ptr(buf, b.extract_element(lanes, I32(k))), align=align)

    # ------------------------------------------------------------------ expressions

    def _bind(self, var: E.Var, value: ir.Value | None) -> None:
        """`var` bound to `value` (None: its scope ends); index values emitted under the
        bindings before are not reused after (expr)."""
        if value is None:
            del self.env[var]
        else:
            self.env[var] = value
        self._bindings += 1

    def expr(self, e) -> ir.Value:
        """The LLVM value of the expression `e`, emitted at the builder's position.

        An index expression (integer arithmetic on variables and constants) that was
        emitted already in the current block, under the same bindings, is that value
        again. An unrolled body's copies share such subexpressions by identity (a
        tile's base address, transform/hoist_invariants.py), and emitting each once
        leaves LLVM's EarlyCSE nothing to remove: the same code after it, from a third
        less IR to build, print and parse (ResNet-18's F(4x4) Winograd kernel). Only
        within a block: code in a branch stays in the branch, as LLVM would keep it."""
        if not self._is_index(e):
            return self._expr(e)
        hit = self._emitted.get(id(e))
        if hit is not None and hit[0] is e and hit[1] is self.builder.block \
                and hit[2] == self._bindings:
            return hit[3]
        value = self._expr(e)
        self._emitted[id(e)] = (e, self.builder.block, self._bindings, value)
        return value

    def _is_index(self, e) -> bool:
        """Whether `e` is integer arithmetic of variables and constants, one lane."""
        if not isinstance(e, E.BinaryOp) or isinstance(e, E.CmpOp) \
                or not E.is_int(e.dtype) or E.lanes(e.dtype) != 1:
            return False
        hit = self._index_facts.get(id(e))
        if hit is None or hit[0] is not e:
            leaf = (E.Var, E.IntImm)
            hit = self._index_facts[id(e)] = (e, all(
                isinstance(c, leaf) or self._is_index(c) for c in (e.a, e.b)))
        return hit[1]

    def _expr(self, e) -> ir.Value:
        b = self.builder
        match e:
            case E.IntImm(value=v, dtype=dt):
                return ir.Constant(llvm_type(dt), v)
            case E.FloatImm(value=v, dtype=dt):
                return ir.Constant(llvm_type(dt), v)
            case E.Var():
                if e not in self.env:
                    raise BuildError(f"{self.fname}: variable {e.name} is used outside its scope")
                return self.env[e]
            case Ramp(base=base, stride=stride, lanes=n):
                ty = llvm_type(e.dtype)
                steps = lane_numbers(ty)
                if not (isinstance(stride, E.IntImm) and stride.value == 1):
                    steps = b.mul(steps, splat(b, self.expr(stride), n))
                return b.add(splat(b, self.expr(base), n), steps)
            case Broadcast(value=v, lanes=n):
                return splat(b, self.expr(v), n)
            case Load():
                return self._load(e)
            case E.Cast(dtype=dt, value=v):
                return cast(b, self.expr(v), v.dtype, dt)
            case E.Not(a=a):
                return b.not_(self.expr(a))
            case E.And(a=x, b=y):
                return b.and_(self.expr(x), self.expr(y))
            case E.Or(a=x, b=y):
                return b.or_(self.expr(x), self.expr(y))
            case E.CmpOp(a=x, b=y):
                return compare(b, type(e), self.expr(x), self.expr(y), x.dtype)
            case E.FloorDiv(a=x, b=y) | E.FloorMod(a=x, b=y) if \
                    self.non_negative(x) and positive_constant(y):
                # floor and truncation agree: one unsigned instruction, not the floor's
                # fix-up of a signed one (an index's fused loop variable, split again)
                op = b.udiv if isinstance(e, E.FloorDiv) else b.urem
                return op(self.expr(x), self.expr(y))
            case E.Add(a=acc, b=E.Call(name="dot_u8s8", args=(x, y))) | \
                    E.Add(a=E.Call(name="dot_u8s8", args=(x, y)), b=acc):
                return dot_u8s8(b, self.target.int8_dot, self.expr(acc), self.expr(x),
                                self.expr(y))
            case E.BinaryOp(a=x, b=y):
                return binary(b, type(e), self.expr(x), self.expr(y), e.dtype, self.fname)
            case E.Select(condition=c, true_value=t, false_value=f, lazy=lazy):
                return self._select(c, t, f, lazy)
            case E.Call(name="dot_u8s8", args=(x, y)):
                return dot_u8s8(b, self.target.int8_dot, None, self.expr(x), self.expr(y))
            case E.Call(name=name, args=args, dtype=dt):
                return math_call(b, name, [self.expr(a) for a in args], dt, self.fname)
            case E.Let(var=v, value=val, body=body):
                self._bind(v, self.expr(val))
                out = self.expr(body)
                self._bind(v, None)
                return out
        raise BuildError(f"{self.fname}: no code generation for {type(e).__name__} {e}")

    def _select(self, c, t, f, lazy: bool = True) -> ir.Value:
        b = self.builder
        lazy = lazy and E.lanes(c.dtype) == 1 and \
            any(exists(x, lambda n: isinstance(n, Load)) for x in (t, f))
        if not lazy:
            return b.select(self.expr(c), self.expr(t), self.expr(f))
        # Only the chosen branch runs, so a guarded out-of-bounds read (padding) is safe.
        then_bb, else_bb = self.fn.append_basic_block("sel.t"), self.fn.append_basic_block("sel.f")
        done = self.fn.append_basic_block("sel.end")
        b.cbranch(self.expr(c), then_bb, else_bb)
        b.position_at_end(then_bb)
        tv, t_end = self.expr(t), b.block
        b.branch(done)
        b.position_at_end(else_bb)
        fv, f_end = self.expr(f), b.block
        b.branch(done)
        b.position_at_end(done)
        phi = b.phi(tv.type)
        phi.add_incoming(tv, t_end)
        phi.add_incoming(fv, f_end)
        return phi


def _hoist_allocations(body) -> tuple:
    """`body` of a parallel loop without the allocations of a constant size it makes
    outside any inner loop (the stages computed at this loop: a block's transformed data
    and products), and those buffers: the task allocates them once, before its
    iterations, which reuse them. No allocator call is left inside the loop, around which
    the vector constants the loop keeps in registers would be saved to the stack."""
    hoisted = []

    def strip(st):
        match st:
            case Allocate(buffer=buf, body=inner) if isinstance(buf.elements, E.IntImm):
                hoisted.append(buf)
                return strip(inner)
            case SeqStmt(seq=seq):
                return SeqStmt(tuple(strip(x) for x in seq))
        return st
    return strip(body), hoisted


__all__ = ["CodeGenLLVM", "STACK_LIMIT"]
