"""No template's fallback spills its register tile: compiled for an AVX2 CPU (haswell: 8
lanes, 16 ymm registers) and an AVX-512 one (skylake-avx512: 16 lanes, 32 zmm), the
kernel's assembly moves no vector register to a stack slot and back
(compiler/ops/register_tile.py: the register rule; register_bounds).
Compiling for a CPU needs no such CPU: the assembly is only read.

`spilled_vector_moves(asm)` is the check, for any kernel's assembly; CASES lists the
templates and typical shapes it runs on."""
from __future__ import annotations

import re

import pytest

import compiler
import search_spaces
from compiler.ops.conv2d_winograd import winograd_tile_size

TARGETS = ["llvm -mcpu=haswell", "llvm -mcpu=skylake-avx512"]

CASES = [
    ("matmul", (256, 256, 256)),
    ("dense", (1, 1000, 512)),
    ("dense", (64, 256, 512)),
    ("dense_bias_relu", (64, 256, 512)),
    ("dense_pack", (1, 1000, 512, 40)),
    ("dense_pack", (64, 1024, 512, 64)),
    ("batch_matmul", (8, 128, 128, 64)),
    ("conv2d_nchw", (1, 64, 56, 56, 64, 3, 3, 1, 1)),
    ("conv2d_nchw_packed", (1, 64, 56, 56, 64, 3, 3, 1, 1)),
    ("depthwise_conv2d_nchw", (1, 32, 112, 112, 3, 3, 1, 1)),
    ("blur", (256, 256)),
]
"""(template, arguments): every registered template with a schedule, on the shapes of
ResNet-18 and of a transformer's dense layers."""

ROW_KERNELS = {"softmax", "log_softmax", "layer_norm"}
"""Templates with no register tile (search_spaces/row_ops.py: passes over rows in L1),
which the check leaves out: around the vector exp's constants LLVM spills on AVX2 in
every config of a 12 x 128 x 128 softmax (21 moves at least), and the timings do not
follow the spills (Zen 5: the fastest softmax config spills 5, the next 130)."""

_FUNCTION = re.compile(r"^(?=[A-Za-z_][\w.$]*:)", re.M)
_VECTOR_ARITHMETIC = re.compile(r"^\s*v(?:fn?m(?:add|sub)\w*|mul|add|sub|max|min)ps\s", re.M)
_VECTOR_REGISTER = re.compile(r"%[xyz]mm\d+")
_FRAME_POINTER = re.compile(r"^\s*movq\s+%rsp, %rbp$", re.M)


def _slot(operand: str, bases: str) -> str | None:
    """The stack slot `operand` names (`64(%rsp)`), None for any other operand: an indexed
    address (`64(%rsp,%rdx,4)`) is an array on the stack, not a spill slot."""
    m = re.fullmatch(rf"(-?\d*)\((%(?:{bases}))\)", operand.strip())
    return m and f"{m[1] or 0}({m[2]})"


def spilled_vector_moves(asm: str) -> list[str]:
    """The lines of `asm` (AT&T x86 assembly, from module.get_source("asm")) that spill a
    vector register to the stack or reload it: a `vmov*` of an xmm / ymm / zmm register to
    a stack slot (`N(%rsp)`, or `N(%rbp)` in a function that keeps its frame there) that a
    vector instruction of the same function reads back, and those reads (a reload may be
    folded into arithmetic: `vfmadd231ps 64(%rsp), ...`). Only functions that do vector
    arithmetic count (the kernel's loops; an entry function copying its arguments' pointers
    through xmm is none), and a tile stored once to a stack array and read back by index
    (a transpose) is no spill."""
    out = []
    for function in _FUNCTION.split(asm):
        if not _VECTOR_ARITHMETIC.search(function):
            continue
        bases = "rsp|rbp" if _FRAME_POINTER.search(function) else "rsp"
        stores, loads = {}, {}
        for line in function.splitlines():
            mnemonic, _, rest = line.strip().partition("\t")
            operands = [o.strip() for o in re.split(r",\s*(?![^()]*\))", rest) if o.strip()]
            if not mnemonic.startswith("v") or not any(_VECTOR_REGISTER.fullmatch(o)
                                                       for o in operands):
                continue
            for k, operand in enumerate(operands):
                slot = _slot(operand, bases)
                if slot is None:
                    continue
                stored = k == len(operands) - 1 and mnemonic.startswith("vmov")
                (stores if stored else loads).setdefault(slot, []).append(line.strip())
        for slot in stores.keys() & loads.keys():
            out += stores[slot] + loads[slot]
    return out


def test_spilled_vector_moves_reads_spills_and_reloads_only():
    asm = "\n".join([
        "kernel:",
        "\tvmovups\t%ymm3, 64(%rsp)",            # a spill ...
        "\tvfmadd231ps\t%ymm1, %ymm2, %ymm4",
        "\tvaddps\t64(%rsp), %ymm5, %ymm5",      # ... and its reload, folded
        "\tvmovaps\t%zmm2, 128(%rsp)",           # a tile stored for a transpose,
        "\tvmovss\t128(%rsp,%rdx,4), %xmm1",     # read by index: no spill
        "\tmovq\t%rax, 192(%rsp)",               # not a vector register
        "\tvmovups\t(%rbp), %zmm16",             # %rbp is a data pointer here
        "entry:",
        "\tvmovaps\t%xmm0, 16(%rsp)",            # no vector arithmetic in the function
        "\tvmovaps\t16(%rsp), %xmm0",
    ])
    assert spilled_vector_moves(asm) == ["vmovups\t%ymm3, 64(%rsp)",
                                         "vaddps\t64(%rsp), %ymm5, %ymm5"]


def fallback_assembly(name: str, args: tuple, target: str) -> str:
    """The assembly of template `name`'s fallback config on `args`, built for `target`."""
    space = search_spaces.space(name, *args, target=target)
    s, tensors = search_spaces.instantiate(name, *args, config=space.fallback(), target=target)
    return compiler.build(s, tensors, target=target).get_source("asm")


@pytest.mark.parametrize("target", TARGETS, ids=["avx2", "avx512"])
@pytest.mark.parametrize("name, args", CASES, ids=[f"{n}{a}" for n, a in CASES])
def test_the_fallback_keeps_its_register_tile_in_registers(name, args, target):
    assert spilled_vector_moves(fallback_assembly(name, args, target)) == []


PACKED = [
    ("conv2d_nchwc", (1, 64, 56, 56, 64, 3, 3, 1, 1)),
    ("conv2d_nchwc", (1, 128, 28, 28, 128, 3, 3, 1, 1)),
    ("conv2d_nchwc", (1, 256, 14, 14, 256, 3, 3, 1, 1)),
    ("conv2d_nchwc", (1, 512, 7, 7, 512, 3, 3, 1, 1)),
    ("conv2d_nchwc", (1, 128, 28, 28, 256, 3, 3, 2, 1)),
    ("conv2d_nchwc", (1, 256, 56, 56, 64, 1, 1, 1, 0)),
    ("conv2d_nchwc", (1, 1024, 14, 14, 256, 1, 1, 1, 0)),
    ("depthwise_conv2d_nchwc", (1, 32, 112, 112, 3, 3, 1, 1)),
    ("depthwise_conv2d_nchwc", (1, 144, 56, 56, 3, 3, 2, 1)),
    ("depthwise_conv2d_nchwc", (1, 960, 7, 7, 3, 3, 1, 1)),
]
"""The packed convolutions of ResNet-18 / ResNet-50 / MobileNetV2, without their channel
blocks: each target packs in its own lanes (16 on AVX-512, 8 on AVX2), as AlterOpLayout
does untuned."""


@pytest.mark.parametrize("target", TARGETS, ids=["avx2", "avx512"])
@pytest.mark.parametrize("name, args", PACKED, ids=[f"{n}{a}" for n, a in PACKED])
def test_the_packed_fallback_keeps_its_register_tile_in_registers(name, args, target):
    lanes = compiler.Target(target).vector_lanes
    blocks = (lanes,) if name.startswith("depthwise") else (lanes, lanes)
    assert spilled_vector_moves(fallback_assembly(name, args + blocks, target)) == []


INT8 = [(1, 64, 56, 56, 64, 3, 3, 1, 1), (1, 1024, 14, 14, 256, 1, 1, 1, 0)]
"""ResNet-50's int8 packed convolutions (conv2d_nchwc_int8), in the target's blocks."""


@pytest.mark.parametrize("target", TARGETS, ids=["avx2", "avx512"])
@pytest.mark.parametrize("args", INT8, ids=[str(a) for a in INT8])
def test_the_int8_packed_fallback_keeps_its_register_tile_in_registers(args, target):
    lanes = compiler.Target(target).vector_lanes
    full = (*args, lanes, lanes, 3)
    assert spilled_vector_moves(fallback_assembly("conv2d_nchwc_int8", full, target)) == []


DEPTHWISE_INT8 = [(1, 32, 112, 112, 3, 3, 1, 1), (1, 144, 56, 56, 3, 3, 2, 1),
                  (1, 960, 7, 7, 3, 3, 1, 1)]
"""MobileNetV2's depthwise int8 layers (depthwise_conv2d_nchwc_int8: uint8 data, int8
weights, float32 sums), in the target's lanes, with a data zero point."""


@pytest.mark.parametrize("target", TARGETS, ids=["avx2", "avx512"])
@pytest.mark.parametrize("args", DEPTHWISE_INT8, ids=[str(a) for a in DEPTHWISE_INT8])
def test_the_depthwise_int8_fallback_keeps_its_register_tile_in_registers(args, target):
    full = (*args, compiler.Target(target).vector_lanes, 128)
    asm = fallback_assembly("depthwise_conv2d_nchwc_int8", full, target)
    assert spilled_vector_moves(asm) == []


WINOGRAD = [(1, 64, 56, 56, 64, 1), (1, 128, 28, 28, 128, 1), (1, 256, 14, 14, 256, 1)]
"""ResNet's 3x3, stride 1 layers that run by Winograd untuned: (N, C, H, W, K, padding),
in the target's blocks, with the tile size the target takes (winograd_tile_size)."""


@pytest.mark.parametrize("target", TARGETS, ids=["avx2", "avx512"])
@pytest.mark.parametrize("args", WINOGRAD, ids=[str(a) for a in WINOGRAD])
def test_the_winograd_fallback_keeps_its_register_tiles_in_registers(args, target):
    """The transforms too: the data's, one row of a tile's (m + 2) vectors at a time, and
    the output's, one row of m accumulators."""
    lanes = compiler.Target(target).vector_lanes
    n, c, h, w, k, _ = args
    m = winograd_tile_size((3, 3), (1, 1), (1, 1), (h, w), (c, k), target)
    full = (*args, lanes, lanes, m)
    assert spilled_vector_moves(fallback_assembly("conv2d_winograd_nchwc", full, target)) == []


def test_the_stems_packed_fallback_keeps_its_register_tile_in_registers():
    """The first layer of a CNN reads an image's 3 channels as one block."""
    for target in TARGETS:
        lanes = compiler.Target(target).vector_lanes
        args = (1, 3, 224, 224, 64, 7, 7, 2, 3, 3, lanes)
        assert spilled_vector_moves(fallback_assembly("conv2d_nchwc", args, target)) == []


def test_every_template_with_a_schedule_has_a_case():
    """A new template is checked too (the library's have no schedule)."""
    ours = {n for n in search_spaces.templates()
            if search_spaces.get_template(n).fn.__module__.startswith("search_spaces.")}
    library = {n for n in ours if search_spaces.get_template(n).library is not None}
    assert {n for n, _ in CASES + PACKED} | {"conv2d_winograd_nchwc", "conv2d_nchwc_int8",
                                        "depthwise_conv2d_nchwc_int8"} | \
        ROW_KERNELS == \
        ours - library
