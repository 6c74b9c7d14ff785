"""conv2d_nchwc_int8 (packed uint8 data by int8 kernel words, int32 sums) exact against
numpy's integer convolution, the padding standing for the data's zero point: odd
channel counts packed into words and blocks, non-divisible output sizes, strides,
dilations and 1x1 / 7x7 windows, on the host and on haswell's and skylake-avx512's code
(vpmaddubsw) where this host runs them; and the instruction inside the convolution's
innermost loop: vpdpbusd for a VNNI target, vpmaddubsw for haswell."""
from __future__ import annotations

import re

import numpy as np
import pytest

from compiler import build, te
from compiler.ops.conv2d_nchwc_int8 import conv2d_nchwc_int8, schedule_conv2d_nchwc_int8
from compiler.ops.shape import OpError
from compiler.runtime.cpu_features import required_features
from compiler.target import Target


def runs_here(target: str) -> bool:
    return set(required_features(Target(target))) <= set(required_features(Target("llvm")))


def pack_data(x: np.ndarray, block: int, zero_point: int) -> np.ndarray:
    """uint8 NCHW as NCHW[block]c, channels past C the zero point."""
    n, c, h, w = x.shape
    cp = -(-c // block) * block
    xp = np.full((n, cp, h, w), zero_point, np.uint8)
    xp[:, :c] = x
    return xp.reshape(n, cp // block, block, h, w).transpose(0, 1, 3, 4, 2).copy()


def pack_kernel(w: np.ndarray, in_block: int, out_block: int) -> np.ndarray:
    """int8 OIHW as (O/y, C/x, KH, KW, x/4, y) words, channels past O and C zero."""
    o, c, kh, kw = w.shape
    op, cp = -(-o // out_block) * out_block, -(-c // in_block) * in_block
    wp = np.zeros((op, cp, kh, kw), np.int8)
    wp[:o, :c] = w
    k = wp.reshape(op // out_block, out_block, cp // in_block, in_block // 4, 4, kh, kw)
    k = k.transpose(0, 2, 5, 6, 3, 1, 4).copy()
    return k.view(np.int32).reshape(op // out_block, cp // in_block, kh, kw, in_block // 4,
                                    out_block)


def reference(x, w, stride, pad, dilation, zero_point):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad)),
                constant_values=zero_point)
    oh = (h + 2 * pad - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * pad - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, oh, ow), np.int64)
    for i in range(kh):
        for j in range(kw):
            y0, x0 = i * dilation, j * dilation
            patch = xp[:, :, y0:y0 + stride * (oh - 1) + 1:stride,
                       x0:x0 + stride * (ow - 1) + 1:stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.int64))
    return out


def convolution(data_shape, kernel_shape, stride, pad, dilation, zero_point, target):
    d = te.placeholder(data_shape, name="data", dtype="uint8")
    k = te.placeholder(kernel_shape, name="kernel", dtype="int32")
    out = conv2d_nchwc_int8(d, k, stride, pad, dilation, zero_point)
    s = schedule_conv2d_nchwc_int8(out, out, target)
    return build(s, [d, k, out], target=target), [int(v) for v in out.shape]


CASES = [  # n, c, h, w, o, k, stride, pad, dilation, in_block
    (1, 7, 13, 13, 13, 3, 2, 1, 1, 8),
    (1, 37, 7, 7, 37, 3, 1, 1, 1, 16),
    (2, 16, 14, 14, 32, 3, 1, 1, 2, 16),
    (1, 3, 37, 37, 16, 7, 2, 3, 1, 4),
    (1, 64, 7, 7, 1000, 1, 1, 0, 1, 16),
]


@pytest.mark.parametrize("target", ["llvm", "llvm -mcpu=haswell", "llvm -mcpu=skylake-avx512"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[:6])))
def test_exact_against_numpy(target, case):
    if not runs_here(target):
        pytest.skip(f"this host lacks features of {target}")
    n, c, h, w, o, k, stride, pad, dilation, in_block = case
    out_block = Target(target).vector_lanes
    rng = np.random.default_rng(sum(case))
    zero_point = int(rng.integers(0, 256))
    x = rng.integers(0, 256, (n, c, h, w)).astype(np.uint8)
    wt = rng.integers(-128, 128, (o, c, k, k)).astype(np.int8)
    x.flat[:3], wt.flat[:3] = 255, -128
    data, kernel = pack_data(x, in_block, zero_point), pack_kernel(wt, in_block, out_block)
    f, shape = convolution(data.shape, kernel.shape, stride, pad, dilation, zero_point, target)
    out = np.zeros(shape, np.int32)
    f(data, kernel, out)
    got = out.transpose(0, 1, 4, 2, 3).reshape(n, -1, *shape[2:4])[:, :o]
    np.testing.assert_array_equal(got, reference(x, wt, stride, pad, dilation, zero_point))


def innermost_loop(asm: str) -> str:
    """The text of the innermost loop of the function: the shortest stretch from a label
    to a jump back to it."""
    lines = asm.splitlines()
    labels = {m.group(1): i for i, line in enumerate(lines)
              if (m := re.match(r"(\.LBB\w+):", line))}
    loops = []
    for i, line in enumerate(lines):
        m = re.match(r"\s+j\w+\s+(\.LBB\w+)", line)
        if m and m.group(1) in labels and labels[m.group(1)] < i:
            loops.append(lines[labels[m.group(1)]:i + 1])
    assert loops, "no loop in the function"
    return "\n".join(min(loops, key=len))


@pytest.mark.parametrize("target,instruction,absent", [
    ("llvm -mcpu=cascadelake", "vpdpbusd", "vpmaddubsw"),
    ("llvm -mcpu=haswell", "vpmaddubsw", "vpdpbusd"),
])
def test_int8_instruction_in_the_innermost_loop(target, instruction, absent):
    """One 3x3 layer's kernel (unpadded: no padding stage has loops of its own): the
    reduction's innermost loop multiplies with the target's int8 dot product, and reads
    each data word in one load."""
    lanes = Target(target).vector_lanes
    f, _ = convolution((1, 4, 16, 16, 16), (4, 4, 3, 3, 4, lanes), 1, 0, 1, 0, target)
    loop = innermost_loop(f.get_source("asm"))
    assert instruction in loop
    assert absent not in loop
    assert "movzb" not in loop  # a data word's four bytes are one load


def test_operands_are_checked_by_name():
    d = te.placeholder((1, 1, 4, 4, 4), name="data", dtype="int8")
    k = te.placeholder((1, 1, 3, 3, 1, 16), name="kernel", dtype="int32")
    with pytest.raises(OpError, match="conv2d_nchwc_int8: data must be uint8, not int8"):
        conv2d_nchwc_int8(d, k)
    d = te.placeholder((1, 1, 4, 4, 8), name="data", dtype="uint8")
    with pytest.raises(OpError, match="takes 1 blocks of 4 input channels but data"):
        conv2d_nchwc_int8(d, k)
