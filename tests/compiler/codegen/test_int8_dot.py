"""te.dot_u8s8 (four unsigned bytes times four signed bytes, summed in int32) by every
kind of int8 dot product a target has (Target.int8_dot): VNNI's vpdpbusd, AVX2's and
AVX-512BW's vpmaddubsw with its saturation split away, and the widened fallback, each
exact against numpy on edge bytes (0x80, 0x7f, 0xff) and random words, for vectors of
1, 3, 4, 8 and 16 lanes; the instruction each target gets."""
from __future__ import annotations

import numpy as np
import pytest

from compiler import build, lower, te
from compiler.ir import interpreter
from compiler.runtime.cpu_features import required_features
from compiler.target import Target

TARGETS = ["llvm", "llvm -mcpu=haswell", "llvm -mcpu=skylake-avx512",
           "llvm -mcpu=cascadelake", "llvm -mcpu=alderlake", "llvm -mcpu=x86-64"]
KINDS = {"llvm -mcpu=haswell": "avx2", "llvm -mcpu=skylake-avx512": "avx512bw",
         "llvm -mcpu=cascadelake": "avx512vnni", "llvm -mcpu=znver4": "avx512vnni",
         "llvm -mcpu=alderlake": "avxvnni", "llvm -mcpu=znver3": "avx2",
         "llvm -mcpu=x86-64": "", "llvm -mcpu=znver4 -mattr=-avx512f": "avx2",
         "llvm -mcpu=cascadelake -mattr=-avx512vnni": "avx512bw"}


def runs_here(target: str) -> bool:
    """Whether this host has every feature code built for `target` may use."""
    return set(required_features(Target(target))) <= set(required_features(Target("llvm")))


def reference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    xb = x.view(np.uint8).reshape(*x.shape, 4).astype(np.int64)
    yb = y.view(np.int8).reshape(*y.shape, 4).astype(np.int64)
    return (xb * yb).sum(-1)


def words(rng, n: int) -> np.ndarray:
    w = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    edge = np.array([-1, np.int32(-2139062144), 0x7F7F7F7F, 0, 0x00FF80FF], np.int64)
    w[:min(n, 5)] = edge[:min(n, 5)].astype(np.int32)
    return w


def accumulate(n: int, lanes: int):
    a = te.placeholder((n,), name="a", dtype="int32")
    b = te.placeholder((n,), name="b", dtype="int32")
    c = te.placeholder((n,), name="c", dtype="int32")
    d = te.compute((n,), lambda i: c[i] + te.dot_u8s8(a[i], b[i]), name="d")
    s = te.create_schedule(d.op)
    if lanes > 1:
        _, inner = s[d].split(d.op.axis[0], factor=lanes)
        s[d].vectorize(inner)
    return s, [a, b, c, d]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("lanes", [1, 3, 4, 8, 16])
def test_accumulated_dot_is_exact(target, lanes):
    if not runs_here(target):
        pytest.skip(f"this host lacks features of {target}")
    rng = np.random.default_rng(lanes)
    n = 37
    s, args = accumulate(n, lanes)
    f = build(s, args, target=target)
    x, y = words(rng, n), words(rng, n)[::-1].copy()
    c = rng.integers(-2**20, 2**20, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    f(x, y, c, out)
    np.testing.assert_array_equal(out, reference(x, y) + c)


@pytest.mark.parametrize("n", [7, 13, 1000])
def test_dot_alone_on_the_host(n):
    """The dot without an accumulator, its vector loop's remainder scalar."""
    rng = np.random.default_rng(n)
    a = te.placeholder((n,), name="a", dtype="int32")
    b = te.placeholder((n,), name="b", dtype="int32")
    d = te.compute((n,), lambda i: te.dot_u8s8(a[i], b[i]), name="d")
    s = te.create_schedule(d.op)
    _, inner = s[d].split(d.op.axis[0], factor=Target("llvm").vector_lanes)
    s[d].vectorize(inner)
    f = build(s, [a, b, d])
    x, y = words(rng, n), words(rng, n)
    out = np.zeros(n, np.int32)
    f(x, y, out)
    np.testing.assert_array_equal(out, reference(x, y))


def test_interpreter_agrees():
    rng = np.random.default_rng(3)
    s, args = accumulate(13, 1)
    x, y = words(rng, 13), words(rng, 13)
    c = np.arange(13, dtype=np.int32)
    out = np.zeros(13, np.int32)
    interpreter.run(lower(s, args), x, y, c, out)
    np.testing.assert_array_equal(out, reference(x, y) + c)


@pytest.mark.parametrize("target,kind", sorted(KINDS.items()))
def test_int8_dot_kind_of_a_target(target, kind):
    assert Target(target).int8_dot == kind


@pytest.mark.parametrize("target,present,absent", [
    ("llvm -mcpu=cascadelake", "vpdpbusd\t", ("vpmaddubsw", "vpmaddwd")),
    ("llvm -mcpu=znver4", "vpdpbusd\t", ("vpmaddubsw", "vpmaddwd")),
    ("llvm -mcpu=alderlake", "{vex}\tvpdpbusd", ("vpmaddubsw",)),
    ("llvm -mcpu=haswell", "vpmaddubsw", ("vpdpbusd",)),
    ("llvm -mcpu=skylake-avx512", "vpmaddubsw\t%zmm", ("vpdpbusd",)),
    ("llvm -mcpu=x86-64", "pmaddwd", ("vpdpbusd", "pmaddubsw")),
])
def test_instruction_of_each_target(target, present, absent):
    s, args = accumulate(64, 16)
    asm = build(s, args, target=target).get_source("asm")
    assert present in asm
    for name in absent:
        assert name not in asm


def test_operands_must_be_int32_words():
    a = te.placeholder((4,), name="a", dtype="uint8")
    with pytest.raises(TypeError, match="dot_u8s8: x must be an int32 word.*uint8"):
        te.dot_u8s8(a[0], te.const(0, "int32"))
