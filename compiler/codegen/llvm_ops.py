"""The LLVM instructions of one operation of the loop IR, on values already emitted: the
types of dtypes, their conversions between memory and registers, casts, comparisons,
arithmetic (floor division and modulo rounding toward minus infinity), broadcasts and
math functions (float32's exp, log, tanh, sigmoid and erf are fast_math.py's). They need
an IRBuilder and no state of the walk over the IR, which is CodeGenLLVM's (llvm.py).

Float32 and float64 multiply and add carry the `contract` flag, which lets LLVM fuse them
into FMA instructions, as C compilers do by default (16-bit floats' do not: binary()).

float16 and bfloat16 are 2 bytes in memory and float32 in registers: a load extends, a
store truncates, and every operation computes in float32 and rounds its result to the
16-bit type (to nearest even), so that a register always holds a value of its dtype and
each operation is rounded once, as numpy (and ml_dtypes) compute: float32's 24 bits are
enough that rounding twice (exact -> float32 -> 16 bits) gives the correctly rounded
result of one +, -, *, /, sqrt. float16 converts with F16C's instructions (LLVM's half
type); bfloat16, the upper half of a float32, with integer operations.
"""
from __future__ import annotations

import functools

from llvmlite import ir

from ..errors import BuildError
from ..ir import expr as E
from . import fast_math

I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
F32 = ir.FloatType()
PTR = ir.PointerType()
_SCALAR = {"bool": I1, "int8": I8, "int16": I16, "int32": I32, "int64": I64,
           "uint8": I8, "uint16": I16, "uint32": I32, "uint64": I64,
           "float16": F32, "bfloat16": F32, "float32": F32, "float64": ir.DoubleType()}
_MEMORY = {"bool": I8, "float16": ir.HalfType(), "bfloat16": I16}
_SUFFIX = {"float32": "f32", "float64": "f64"}
_FAST = ("contract",)
_ICMP = {E.LT: "<", E.LE: "<=", E.EQ: "==", E.NE: "!="}
_INTRINSICS = {"exp": "exp", "log": "log", "sqrt": "sqrt", "floor": "floor", "ceil": "ceil",
               "round": "roundeven",
               "abs": "fabs", "pow": "pow", "tanh": "tanh", "sin": "sin",
               "cos": "cos"}


def llvm_type(dtype: str, memory: bool = False) -> ir.Type:
    """LLVM type of a (vector) dtype; in memory a bool takes a byte, as numpy stores it,
    and a 16-bit float its 2 bytes (float32 in registers)."""
    elem = E.element(dtype)
    base = _MEMORY.get(elem, _SCALAR[elem]) if memory else _SCALAR[elem]
    n = E.lanes(dtype)
    return base if n == 1 else ir.VectorType(base, n)


def elem_bytes(dtype: str) -> int:
    """The bytes of one element in memory (a bool takes one)."""
    return max(1, E.bits(dtype) // 8)


def from_memory(b: ir.IRBuilder, v: ir.Value, dtype: str) -> ir.Value:
    """The register value of `v`, loaded from memory as dtype `dtype`."""
    elem, vec = E.element(dtype), _vector(v)
    if elem == "bool":
        return b.icmp_unsigned("!=", v, ir.Constant(v.type, None))
    if elem == "float16":
        return b.fpext(v, vec(F32))
    if elem == "bfloat16":
        return b.bitcast(b.shl(b.zext(v, vec(I32)), _const(vec(I32), 16)), vec(F32))
    return v


def to_memory(b: ir.IRBuilder, v: ir.Value, dtype: str) -> ir.Value:
    """The register value `v` of dtype `dtype` as it is stored (exact: a register holds
    a value of its dtype)."""
    elem, vec = E.element(dtype), _vector(v)
    if elem == "bool":
        return b.zext(v, vec(I8))
    if elem == "float16":
        return b.fptrunc(v, vec(ir.HalfType()))
    if elem == "bfloat16":
        return b.trunc(b.lshr(b.bitcast(v, vec(I32)), _const(vec(I32), 16)), vec(I16))
    return v


def narrow(b: ir.IRBuilder, v: ir.Value, dtype: str) -> ir.Value:
    """The float32 register value `v` rounded (to nearest even) to the 16-bit float
    `dtype`, still in a float32 register; `v` itself for any other dtype."""
    elem, vec = E.element(dtype), _vector(v)
    if elem == "float16":
        return b.fpext(b.fptrunc(v, vec(ir.HalfType())), vec(F32))
    if elem != "bfloat16":
        return v
    i32 = vec(I32)
    x = b.bitcast(v, i32)
    odd = b.and_(b.lshr(x, _const(i32, 16)), _const(i32, 1))
    rounded = b.add(x, b.add(_const(i32, 0x7FFF), odd))
    # a NaN stays a NaN: quieted, not rounded into an infinity
    quiet = b.or_(x, _const(i32, 0x00400000))
    x = b.select(b.fcmp_unordered("uno", v, v), quiet, rounded)
    return b.bitcast(b.and_(x, _const(i32, 0xFFFF0000)), vec(F32))


def _float32_rounded_to_odd(b: ir.IRBuilder, v: ir.Value) -> ir.Value:
    """The float64 `v` as a float32 rounded toward zero, its last bit set when inexact
    (round to odd): rounding that to a 16-bit float to nearest even is the correctly
    rounded 16-bit value of `v` (float32 has more than 11 + 2 bits), which rounding to
    nearest twice is not; and x86 has no double -> half instruction (LLVM would call
    compiler-rt)."""
    vec = _vector(v)
    f = b.fptrunc(v, vec(F32))
    back = b.fpext(f, v.type)
    x = b.bitcast(f, vec(I32))
    # inexact, the nearest float32 is away from zero when it is above a positive v or
    # below a negative one
    away = b.xor(b.fcmp_ordered(">", back, v), b.fcmp_ordered("<", v, _const(v.type, 0.0)))
    toward_zero = b.select(away, b.sub(x, _const(x.type, 1)), x)
    odd = b.or_(toward_zero, _const(x.type, 1))
    return b.bitcast(b.select(b.fcmp_ordered("!=", back, v), odd, x), vec(F32))


def _vector(v: ir.Value):
    """A function giving the type of `v`'s shape (scalar or vector) with another element."""
    n = v.type.count if isinstance(v.type, ir.VectorType) else 0
    return lambda elem: ir.VectorType(elem, n) if n else elem


def _const(ty: ir.Type, value) -> ir.Constant:
    """`value` in every lane of `ty`."""
    if isinstance(ty, ir.VectorType):
        return ir.Constant(ty, [ir.Constant(ty.element, value)] * ty.count)
    return ir.Constant(ty, value)


def declare(module: ir.Module, name: str, ret: ir.Type, args: list) -> ir.Function:
    """The function `name` of `module`, declared on first use."""
    g = module.globals.get(name)
    return g if g is not None else ir.Function(module, ir.FunctionType(ret, args), name)


def splat(b: ir.IRBuilder, v: ir.Value, n: int) -> ir.Value:
    """The scalar `v` in every one of `n` lanes."""
    vec = ir.VectorType(v.type, n)
    one = b.insert_element(ir.Constant(vec, None), v, I32(0))
    return b.shuffle_vector(one, ir.Constant(vec, None), _lane_numbers(32, n, 0))


@functools.cache
def _lane_numbers(bits: int, n: int, step: int) -> ir.Constant:
    """The vector constant <0, step, 2 step, ...> of `n` lanes of `bits`-bit integers
    (step 0: a splat's shuffle mask; step 1: a ramp's steps), one object per kind: a
    constant without a name is written out in full wherever it is an operand, and
    llvmlite keeps the text of each object once made, so one object is formatted once
    (its n elements were 0.03 s of the 0.23 s that code generation takes on ResNet-18's
    F(4x4) Winograd kernel, which splats at every term). The text is the same."""
    ty = ir.VectorType(ir.IntType(bits), n)
    return ir.Constant(ty, [ir.Constant(ty.element, k * step) for k in range(n)])


def lane_numbers(ty: ir.VectorType) -> ir.Constant:
    """<0, 1, ..., n - 1> of the integer vector type `ty` (a ramp's steps)."""
    return _lane_numbers(ty.element.width, ty.count, 1)


def cast(b: ir.IRBuilder, v: ir.Value, src: str, dst: str) -> ir.Value:
    """`v` of dtype `src` as dtype `dst`, by ONNX's Cast: to bool, whether it is nonzero;
    float to integer truncates toward zero (to uint8 and uint16 through int32, and to
    uint32 through int64, so that a negative float wraps as numpy's cast does on x86
    rather than being LLVM's poison); integers widen by their own sign and narrow by
    dropping the high bits; to a 16-bit float rounds to nearest even (from float64
    through float32 rounded to odd, which keeps the second rounding correct)."""
    ty = llvm_type(dst)
    s, d = E.element(src), E.element(dst)
    n = E.lanes(dst)
    if s == d:
        return v
    if s in ("float16", "bfloat16"):  # its register is a float32
        return cast(b, v, E.with_lanes("float32", n), dst)
    if d in ("float16", "bfloat16") and s == "float64":
        return narrow(b, _float32_rounded_to_odd(b, v), dst)
    if d in ("float16", "bfloat16"):
        return narrow(b, cast(b, v, src, E.with_lanes("float32", n)), dst)
    if d == "bool":
        zero = ir.Constant(v.type, None)
        compare_ = b.fcmp_unordered if E.is_float(s) else b.icmp_unsigned
        return compare_("!=", v, zero)
    if s == "bool":
        return b.uitofp(v, ty) if E.is_float(d) else b.zext(v, ty)
    if E.is_float(s) and E.is_float(d):
        return b.fpext(v, ty) if E.bits(d) > E.bits(s) else b.fptrunc(v, ty)
    if E.is_float(s):
        if not E.is_uint(d):
            return b.fptosi(v, ty)
        if d == "uint64":
            return b.fptoui(v, ty)
        wide = llvm_type(E.with_lanes("int64" if d == "uint32" else "int32", E.lanes(dst)))
        return b.trunc(b.fptosi(v, wide), ty)
    if E.is_float(d):
        return b.uitofp(v, ty) if E.is_uint(s) else b.sitofp(v, ty)
    if E.bits(d) == E.bits(s):
        return v
    if E.bits(d) < E.bits(s):
        return b.trunc(v, ty)
    return b.zext(v, ty) if E.is_uint(s) else b.sext(v, ty)


def compare(b: ir.IRBuilder, cls, x: ir.Value, y: ir.Value, dtype: str) -> ir.Value:
    """The comparison node class `cls` (E.LT, ...) of operands of dtype `dtype`; a float
    != is true on NaN, as in C."""
    if E.is_float(dtype):
        if cls is E.NE:
            return b.fcmp_unordered("!=", x, y)
        return b.fcmp_ordered(_ICMP[cls], x, y)
    if E.element(dtype) == "bool" or E.is_uint(dtype):
        return b.icmp_unsigned(_ICMP[cls], x, y)
    return b.icmp_signed(_ICMP[cls], x, y)


def binary(b: ir.IRBuilder, cls, x: ir.Value, y: ir.Value, dtype: str,
           where: str, contract: bool = True) -> ir.Value:
    """The arithmetic node class `cls` (E.Add, E.FloorDiv, ...) on `dtype`; a BuildError
    naming the function `where` for a pair no instruction computes. Unsigned integers
    wrap, compare unsigned and divide with udiv / urem (floor and truncation agree).

    A 16-bit float's operation carries no `contract` flag: each is rounded once to its
    dtype, and on a CPU with AVX512-FP16 (Sapphire Rapids) LLVM shrinks a float32
    operation rounded to float16 into a float16 one, which `contract` would then fuse
    with the next into an FMA rounded once for both (seen: A*B + A off numpy's by one
    float16 ulp in 2 of 7 elements)."""
    if E.element(dtype) in ("float16", "bfloat16"):
        wide = E.with_lanes("float32", E.lanes(dtype))
        return narrow(b, binary(b, cls, x, y, wide, where, contract=False), dtype)
    if E.is_float(dtype):
        flags = _FAST if contract else ()
        match cls:
            case E.Add: return b.fadd(x, y, flags=flags)
            case E.Sub: return b.fsub(x, y, flags=flags)
            case E.Mul: return b.fmul(x, y, flags=flags)
            case E.Div: return b.fdiv(x, y)
            case E.TruncMod: return b.frem(x, y)  # C's fmod
            case E.Min: return b.select(b.fcmp_ordered("<", x, y), x, y)
            case E.Max: return b.select(b.fcmp_ordered(">", x, y), x, y)
    elif E.is_uint(dtype):
        match cls:
            case E.Add: return b.add(x, y)
            case E.Sub: return b.sub(x, y)
            case E.Mul: return b.mul(x, y)
            case E.Min: return b.select(b.icmp_unsigned("<", x, y), x, y)
            case E.Max: return b.select(b.icmp_unsigned(">", x, y), x, y)
            case E.TruncDiv | E.FloorDiv: return b.udiv(x, y)
            case E.TruncMod | E.FloorMod: return b.urem(x, y)
    else:
        match cls:
            case E.Add: return b.add(x, y, flags=("nsw",))
            case E.Sub: return b.sub(x, y, flags=("nsw",))
            case E.Mul: return b.mul(x, y, flags=("nsw",))
            case E.Min: return b.select(b.icmp_signed("<", x, y), x, y)
            case E.Max: return b.select(b.icmp_signed(">", x, y), x, y)
            case E.TruncDiv: return b.sdiv(x, y)
            case E.TruncMod: return b.srem(x, y)
            case E.FloorDiv | E.FloorMod:
                q, r = b.sdiv(x, y), b.srem(x, y)
                zero = ir.Constant(x.type, None)
                # Round toward minus infinity: fix up when the remainder's sign
                # differs from the divisor's.
                fix = b.and_(b.icmp_signed("!=", r, zero),
                             b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", y, zero)))
                if cls is E.FloorDiv:
                    return b.sub(q, b.zext(fix, x.type))
                return b.add(r, b.select(fix, y, zero))
    raise BuildError(f"{where}: no code generation for {cls.__name__} on {dtype}")


def math_call(b: ir.IRBuilder, name: str, args: list, dtype: str, where: str) -> ir.Value:
    """The math function `name` (exp, sigmoid, abs, ...) of `args` on `dtype`: float32's
    exp, log, tanh, sigmoid and erf in vector registers (fast_math.py), the rest through
    LLVM's intrinsics or libm; a BuildError naming the function `where` for one it lacks."""
    ty = llvm_type(dtype)
    elem = E.element(dtype)
    if elem in ("float16", "bfloat16"):
        wide = E.with_lanes("float32", E.lanes(dtype))
        return narrow(b, math_call(b, name, args, wide, where), dtype)
    if elem == "float32" and name in fast_math.FLOAT32:
        return fast_math.FLOAT32[name](b, args[0])
    if name == "sigmoid" and elem == "float64":
        one = ir.Constant(ty, 1.0) if E.lanes(dtype) == 1 else \
            ir.Constant(ty, [ir.Constant(ty.element, 1.0)] * E.lanes(dtype))
        neg = b.fneg(args[0])
        return b.fdiv(one, b.fadd(one, math_call(b, "exp", [neg], dtype, where)))
    if name == "erf" and elem == "float64":
        return _per_lane(b, "erf", args[0])
    if name == "abs" and E.is_uint(elem):
        return args[0]
    if name == "abs" and not E.is_float(elem):
        x = args[0]
        return b.select(b.icmp_signed("<", x, ir.Constant(ty, None)), b.neg(x), x)
    if name not in _INTRINSICS or not E.is_float(elem):
        raise BuildError(f"{where}: no code generation for {name} on {dtype}")
    n = E.lanes(dtype)
    suffix = _SUFFIX[elem] if n == 1 else f"v{n}{_SUFFIX[elem]}"
    fn = declare(b.module, f"llvm.{_INTRINSICS[name]}.{suffix}", ty, [ty] * len(args))
    return b.call(fn, args)


def _per_lane(b: ir.IRBuilder, libm: str, x: ir.Value) -> ir.Value:
    """The C library's double function `libm` of each lane of `x` (LLVM has no
    intrinsic for it)."""
    d = ir.DoubleType()
    fn = declare(b.module, libm, d, [d])
    if not isinstance(x.type, ir.VectorType):
        return b.call(fn, [x])
    out = ir.Constant(x.type, None)
    for k in range(x.type.count):
        out = b.insert_element(out, b.call(fn, [b.extract_element(x, I32(k))]), I32(k))
    return out
