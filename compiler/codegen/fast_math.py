"""Float32 exp, log, tanh, sigmoid and erf as LLVM instructions on the value's own type
(a float or a vector of floats), so that a vectorized loop computes them in vector
registers. LLVM's intrinsics for them become one libm call per lane.

Each function reduces its argument to a short interval and evaluates a polynomial
there, with only multiplies, adds, one division (sigmoid, tanh), integer bit operations
and selects: no branch and no call, so one emission serves every lane. The polynomials
are weighted minimax fits of the reduced functions (fitted in float64, by linear
programming over a dense grid, then rounded to float32); with float32 evaluation every
function stays within 1e-6 relative error of the exact result over the whole float
range (tests/compiler/codegen/test_fast_math.py measures it), and infinities, NaN,
signed zeros and denormals come out as numpy's do.

Multiplies and adds carry the `contract` flag, as the rest of codegen's do, so that LLVM
fuses them into FMA where the target has it; nothing here relies on fusion.
"""
from __future__ import annotations

from llvmlite import ir

F32, I32 = ir.FloatType(), ir.IntType(32)
_CONTRACT = ("contract",)

# exp: x = n ln2 + r, |r| <= ln2 / 2, e^x = 2^n (1 + r + r^2 Q(r)). ln2 is split in two
# (Cody and Waite) so that n * _LN2_HI is exact and r keeps its low bits.
_LOG2E = 1.4426950408889634
_LN2_HI, _LN2_LO = 0.693359375, -2.12194440e-4
_ROUND = 12582912.0  # 1.5 * 2^23: adding it rounds to an integer held in the low bits
_EXP_LO, _EXP_HI = -104.0, 89.0  # beyond them e^x is 0 (below half the least denormal), inf
_EXP_Q = (0.4999999403953552, 0.1666651964187622, 0.041668396443128586,
          0.008368751965463161, 0.0013814275152981281)

# log: x = 2^e m, sqrt(1/2) <= m < sqrt(2), log(x) = e ln2 + f + f^2 Q(f), f = m - 1.
_LOG_Q = (-0.49999991059303284, 0.33333951234817505, -0.25001755356788635,
          0.19962072372436523, -0.16570505499839783, 0.14917977154254913,
          -0.1430753916501999, 0.0873485654592514)
_SQRT2 = 1.4142135623730951
_MIN_NORMAL = 2.0 ** -126

# tanh: |x| < 0.625: x + x^3 P(x^2) (1 - 2 / (e^2x + 1) cancels there); else that form.
_TANH_SMALL = 0.625
_TANH_P = (-0.3333328068256378, 0.13331441581249237, -0.05373959615826607,
           0.020638680085539818, -0.005704512353986502)

# erf: |x| < 0.75: x P(x^2); else 1 - e^Q(|x|), Q fitting log(erfc), up to |x| = 4, where
# erfc is below half an ulp of 1 and erf rounds to 1 in float32.
_ERF_SMALL, _ERF_CLAMP = 0.75, 4.0
_ERF_P = (1.1283791065216064, -0.3761261999607086, 0.11283376067876816,
          -0.026834607124328613, 0.0051143052987754345, -0.000674919574521482)
_ERF_Q = (-2.13631665246794e-05, -1.1284337043762207, -0.6358411908149719,
          -0.10516522079706192, 0.022848671302199364, -0.0032058749347925186,
          0.0002131835208274424)


class _Lanes:
    """Constants and operations of one float32 type (scalar or vector) and its int32
    twin, on one builder: the vocabulary the functions below are written in."""

    def __init__(self, b: ir.IRBuilder, ty: ir.Type):
        self.b = b
        self.ty = ty
        self.n = ty.count if isinstance(ty, ir.VectorType) else 0
        self.ity = ir.VectorType(I32, self.n) if self.n else I32

    def _splat(self, ty, elem_ty, value):
        c = ir.Constant(elem_ty, value)
        return ir.Constant(ty, [c] * self.n) if self.n else c

    def f(self, value: float) -> ir.Constant:
        """The float `value` in every lane."""
        return self._splat(self.ty, F32, value)

    def i(self, value: int) -> ir.Constant:
        """The int32 `value` in every lane."""
        return self._splat(self.ity, I32, value)

    def add(self, x, y):
        return self.b.fadd(x, y, flags=_CONTRACT)

    def sub(self, x, y):
        return self.b.fsub(x, y, flags=_CONTRACT)

    def mul(self, x, y):
        return self.b.fmul(x, y, flags=_CONTRACT)

    def poly(self, x, coeffs) -> ir.Value:
        """coeffs[0] + coeffs[1] x + ... by Horner's rule."""
        acc = self.f(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self.add(self.mul(acc, x), self.f(c))
        return acc

    def bits(self, x) -> ir.Value:
        return self.b.bitcast(x, self.ity)

    def floats(self, i) -> ir.Value:
        return self.b.bitcast(i, self.ty)

    def where(self, op: str, x, y, then, other) -> ir.Value:
        """`then` where `x op y` holds (ordered: false on NaN), else `other`."""
        return self.b.select(self.b.fcmp_ordered(op, x, y), then, other)

    def abs(self, x) -> ir.Value:
        return self.floats(self.b.and_(self.bits(x), self.i(0x7FFFFFFF)))

    def copysign(self, magnitude, sign) -> ir.Value:
        """`magnitude` (sign bit clear) with the sign bit of `sign`."""
        s = self.b.and_(self.bits(sign), self.i(-0x80000000))
        return self.floats(self.b.or_(self.bits(magnitude), s))


def exp(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """e ** x of a float32 (vector) value; NaN stays NaN (ordered compares leave it)."""
    v = _Lanes(b, x.type)
    x = v.where(">", x, v.f(_EXP_HI), v.f(_EXP_HI), x)
    x = v.where("<", x, v.f(_EXP_LO), v.f(_EXP_LO), x)
    t = v.add(v.mul(x, v.f(_LOG2E)), v.f(_ROUND))
    k = b.fsub(t, v.f(_ROUND))  # no flags: LLVM must not fold the rounding away
    n = b.sub(v.bits(t), v.bits(v.f(_ROUND)))
    r = v.sub(x, v.mul(k, v.f(_LN2_HI)))
    r = v.sub(r, v.mul(k, v.f(_LN2_LO)))
    p = v.poly(r, (1.0, 1.0) + _EXP_Q)
    # 2^n in two factors, each a normal float for n in [-150, 128], so that a denormal
    # result is rounded once, at the last multiply.
    half = b.ashr(n, v.i(1))
    lo = v.floats(b.shl(b.add(half, v.i(127)), v.i(23)))
    hi = v.floats(b.shl(b.add(b.sub(n, half), v.i(127)), v.i(23)))
    return b.fmul(b.fmul(p, lo), hi)


def log(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """The natural logarithm of a float32 (vector) value: -inf at +-0, NaN below 0."""
    v = _Lanes(b, x.type)
    # A denormal is scaled into the normal range first, its exponent corrected after.
    tiny = b.fcmp_ordered("<", x, v.f(_MIN_NORMAL))
    xs = b.select(tiny, v.mul(x, v.f(2.0 ** 23)), x)
    bias = b.select(tiny, v.i(127 + 23), v.i(127))
    e = b.sub(b.lshr(v.bits(xs), v.i(23)), bias)
    m = v.floats(b.or_(b.and_(v.bits(xs), v.i(0x007FFFFF)), v.bits(v.f(1.0))))
    big = b.fcmp_ordered(">", m, v.f(_SQRT2))
    m = b.select(big, v.mul(m, v.f(0.5)), m)
    e = b.add(e, b.zext(big, v.ity))
    f = b.fsub(m, v.f(1.0))  # exact (Sterbenz): m is within a factor 2 of 1
    log1p = v.add(v.mul(v.mul(f, f), v.poly(f, _LOG_Q)), f)
    ef = b.sitofp(e, v.ty)
    y = v.add(v.mul(ef, v.f(_LN2_HI)), v.add(v.mul(ef, v.f(_LN2_LO)), log1p))
    y = v.where("==", x, v.f(float("inf")), x, y)
    y = v.where("==", x, v.f(0.0), v.f(float("-inf")), y)
    return b.select(b.fcmp_unordered("<", x, v.f(0.0)), v.f(float("nan")), y)


def sigmoid(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """1 / (1 + e^-x) of a float32 (vector) value, as e^x / (1 + e^x) for x < 0 so
    that the exponential never overflows and tiny results keep their digits."""
    v = _Lanes(b, x.type)
    t = exp(b, b.fneg(v.abs(x)))
    num = v.where(">=", x, v.f(0.0), v.f(1.0), t)
    return b.fdiv(num, v.add(v.f(1.0), t))


def tanh(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """The hyperbolic tangent of a float32 (vector) value; its sign is x's (-0 too)."""
    v = _Lanes(b, x.type)
    a = v.abs(x)
    z = v.mul(a, a)
    small = v.add(v.mul(v.mul(a, z), v.poly(z, _TANH_P)), a)
    e = exp(b, v.add(a, a))
    large = b.fsub(v.f(1.0), b.fdiv(v.f(2.0), v.add(e, v.f(1.0))))
    return v.copysign(v.where("<", a, v.f(_TANH_SMALL), small, large), x)


def erf(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """The error function of a float32 (vector) value; its sign is x's (-0 too)."""
    v = _Lanes(b, x.type)
    a = v.abs(x)
    small = v.mul(a, v.poly(v.mul(a, a), _ERF_P))
    clamped = v.where(">", a, v.f(_ERF_CLAMP), v.f(_ERF_CLAMP), a)
    large = b.fsub(v.f(1.0), exp(b, v.poly(clamped, _ERF_Q)))
    return v.copysign(v.where("<", a, v.f(_ERF_SMALL), small, large), x)


FLOAT32 = {"exp": exp, "log": log, "sigmoid": sigmoid, "tanh": tanh, "erf": erf}
"""The functions computed here for float32 (and its vectors), by the name of the call."""

__all__ = ["FLOAT32", "erf", "exp", "log", "sigmoid", "tanh"]
