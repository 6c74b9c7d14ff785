"""Element types: the dtypes we compile, their facts (signedness, bits, range, lanes) and
the type two operands of different dtypes meet in.

A dtype is numpy's name for it (`uint8`, `float16`); a vector of n lanes is TVM's
`float32x8`. bfloat16 has no numpy dtype of its own: ml_dtypes (which onnx depends on,
and whose bfloat16 arrays onnx.numpy_helper returns) provides it, and `numpy_dtype` is
the one place that names it. The facts of a dtype are asked of every node the passes
rebuild (half a million times in ResNet-18's build), of a few distinct strings: each is
worked out once per dtype (functools.cache).
"""
from __future__ import annotations

import functools

import ml_dtypes
import numpy as np

DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64")
_FLOATS = ("float16", "bfloat16", "float32", "float64")


def check_dtype(dtype: str) -> str:
    """Return `dtype` if it is one we compile, else raise a TypeError naming it."""
    if dtype not in DTYPES:
        raise TypeError(f"unsupported dtype {dtype!r}; use one of {', '.join(DTYPES)}")
    return dtype


@functools.cache
def lanes(dtype: str) -> int:
    """Vector width of a dtype: `float32x16` has 16 lanes, `float32` has 1."""
    return int(dtype.partition("x")[2] or 1)


@functools.cache
def element(dtype: str) -> str:
    """The scalar dtype of each lane: `float32x16` -> `float32`."""
    return dtype.partition("x")[0]


def with_lanes(dtype: str, n: int) -> str:
    """`dtype`'s element type with `n` lanes (the vectorizer's dtypes, TVM's spelling)."""
    return element(dtype) if n == 1 else f"{element(dtype)}x{n}"


def is_float(dtype: str) -> bool:
    """Whether `dtype` (or its lanes) is a floating-point type (bfloat16 included)."""
    return element(dtype) in _FLOATS


def is_int(dtype: str) -> bool:
    """Whether `dtype` (or its lanes) is a signed integer type (bool is not)."""
    return dtype.startswith("int")


def is_uint(dtype: str) -> bool:
    """Whether `dtype` (or its lanes) is an unsigned integer type (bool is not)."""
    return dtype.startswith("uint")


@functools.cache
def bits(dtype: str) -> int:
    """Bits of one lane of `dtype`; bool counts 1."""
    dtype = element(dtype)
    return 1 if dtype == "bool" else int(dtype.lstrip("abfilnotu"))


@functools.cache
def int_range(dtype: str) -> tuple[int, int]:
    """The least and greatest value of the integer (or bool) `dtype`."""
    n = bits(dtype)
    if is_int(dtype):
        return -2 ** (n - 1), 2 ** (n - 1) - 1
    return 0, 2 ** n - 1


def wrap(value: int, dtype: str) -> int:
    """The integer `value` reduced modulo 2**bits into the range of the integer `dtype`,
    as the machine's arithmetic and integer casts (ONNX's Cast) wrap it."""
    lo, _ = int_range(dtype)
    return (value - lo) % 2 ** bits(dtype) + lo


def numpy_dtype(dtype: str) -> np.dtype:
    """numpy's dtype for the element type `dtype` (ml_dtypes' for bfloat16)."""
    return np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)


def round_float(value: float, dtype: str) -> float:
    """`value` rounded to the nearest value of the float `dtype`, ties to even, as numpy
    and ml_dtypes convert (beyond its range: infinity)."""
    with np.errstate(over="ignore"):
        return float(numpy_dtype(element(dtype)).type(value))


def promote_dtype(a: str, b: str) -> str:
    """The dtype in which operands of dtypes `a` and `b` meet: float over integer (and
    bool), then the wider; numpy's rule for mixed signs (the smallest signed type that
    holds both: uint8 and int8 meet in int16); float16 and bfloat16 meet in float32.
    uint64 and a signed type have no integer type holding both: a TypeError naming both
    (numpy would go to float64 and lose the low bits)."""
    n = max(lanes(a), lanes(b))
    x, y = element(a), element(b)
    if x == y or "bool" in (x, y):
        return with_lanes(y if x == "bool" else x, n)
    if is_float(x) != is_float(y):
        return with_lanes(x if is_float(x) else y, n)
    if bits(x) == bits(y) and is_float(x):
        return with_lanes("float32", n)
    if is_uint(x) == is_uint(y):
        return with_lanes(x if bits(x) >= bits(y) else y, n)
    unsigned, signed = (x, y) if is_uint(x) else (y, x)
    if bits(signed) > bits(unsigned):
        return with_lanes(signed, n)
    if bits(unsigned) == 64:
        raise TypeError(f"no integer dtype holds both {a} and {b}; cast one of them "
                        "(astype) to say which")
    return with_lanes(f"int{2 * bits(unsigned)}", n)
