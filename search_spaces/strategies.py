"""The templates as op strategies of the graph build (compiler/graph/strategy.py): a call
of nn.conv2d, nn.dense or matmul has the matching template as a candidate, which the
chooser (compiler/graph/chooser.py: the dispatch contexts, ApplyHistoryBest) picks with
a config for its workload.

`register` is the package's entry point (pyproject.toml, group "autosched.strategies"):
the build loads it on its first kernel, so a user who never imports search_spaces still
gets the templates' schedules, and the tuned ones inside `records.ApplyHistoryBest`.

    nn.conv2d, NCHW, groups 1           -> conv2d_nchw(N, C, H, W, K, R, S, stride, padding)
    nn.conv2d, depthwise, multiplier 1  -> depthwise_conv2d_nchw(N, C, H, W, R, S, stride,
                                                                  padding)
    nn.conv2d, NCHW[x]c, groups 1       -> conv2d_nchwc(N, C, H, W, K, R, S, stride,
                                                         padding, ic_block, oc_block)
    nn.conv2d, NCHW[x]c, depthwise      -> depthwise_conv2d_nchwc(N, C, H, W, R, S, stride,
                                                                   padding, block)
    nn.conv2d, NCHW[x]c, Winograd       -> conv2d_winograd_nchwc(N, C, H, W, K, padding,
                                                                  ic_block, oc_block, m)
    nn.dense, 2-D data                  -> dense(M, N, K)
    nn.contrib_dense_pack               -> dense_pack(M, N, K, block)
    matmul, 2-D operands                -> matmul(M, N, K, dtype)
    matmul, 3-D, one batch extent       -> batch_matmul(batch, M, N, K)
    nn.softmax, last axis               -> softmax(shape)
    nn.log_softmax, last axis           -> log_softmax(shape)
    nn.layer_norm, axis not the first   -> layer_norm(shape, axis, epsilon)

and the library's candidates (library.py), which the chooser compares with them when a
build is asked to use the cblas codegen:

    nn.dense, 2-D data                  -> dense_cblas(M, N, K)
    matmul, 2-D operands                -> matmul_cblas(M, N, K)
    nn.batch_matmul                     -> batch_matmul_cblas(batch, M, N, K)
    nn.conv2d, 1x1, stride 1, no pad    -> conv2d_1x1_cblas(N, C, H, W, K)

A convolution qualifies when its strides are equal, its padding the same on all four
sides and its dilation 1 (what the templates' arguments can say), all in float32; any
other is left to compiler.ops' schedules. The workload is built exactly as the
template's signature binds it, so that records tuned on the template answer for the
graph's layer.
"""
from __future__ import annotations

from compiler import ops, te
from compiler.ops.conv2d_nchwc import conv2d_nchwc, depthwise_conv2d_nchwc
from compiler.ops.conv2d_winograd import conv2d_winograd_nchwc
from compiler.contrib.cblas import computes
from compiler.graph.expr import Call
from compiler.graph.op.conv2d import winograd_of
from compiler.graph.strategy import Candidate, register_strategy

from .conv2d import schedule_conv2d
from .conv2d_nchwc import schedule_conv2d_nchwc
from .conv2d_winograd import schedule_conv2d_winograd
from .depthwise_conv2d import schedule_depthwise_conv2d
from .library import LIBRARY
from .matmul import (batch_matmul_compute, dense_compute, matmul_compute, schedule_batch_matmul,
                     schedule_dense, schedule_matmul)
from .registry import get_template
from .row_ops import schedule_rows


def _candidate(name: str, args: tuple, compute, schedule_anchor, tag: str) -> list[Candidate]:
    """The candidate of template `name` on `args`: `compute(cfg, inputs)` makes the
    anchor (tagged `tag`), `schedule_anchor(cfg, s, anchor, out)` schedules the kernel;
    a config is checked to be a point of the template's space first, as instantiate
    does."""
    tmpl = get_template(name)
    args = tmpl.bind(args)
    space = tmpl.space(args)

    def checked_compute(cfg, inputs):
        space.check(cfg)
        return compute(cfg, inputs)

    def schedule(cfg, out: te.Tensor, anchor: te.Tensor):
        s = te.create_schedule(out.op)
        schedule_anchor(cfg, s, ops.find_anchor(out, tag), out)
        return s
    return [Candidate(name, (name, args), checked_compute, schedule, space.fallback,
                      lambda cfg: _info(name, args, cfg))]


def _info(name: str, args: tuple, cfg) -> dict:
    """What the build's plan and profile show of template `name` on `args` with `cfg`."""
    return {"template": name, "workload": f"{name}{args!r}", "config": f"#{cfg.index}",
            "fallback": bool(cfg.is_fallback)}


def _float32(call: Call) -> bool:
    return all(a.ty.dtype == "float32" for a in call.args) and call.ty.dtype == "float32"


def _window(attrs) -> tuple[int, int] | None:
    """(stride, padding) when the templates' two ints can say the conv's window
    (equal strides, one padding on all sides, no dilation), else None."""
    (sh, sw), pads = attrs["strides"], tuple(attrs["padding"])
    if sh != sw or len(set(pads)) != 1 or tuple(attrs["dilation"]) != (1, 1):
        return None
    return sh, pads[0]


def _packed_conv2d(call: Call, window) -> list[Candidate]:
    """A conv2d in NCHW[x]c (after AlterOpLayout) with its weights packed -> the
    conv2d_nchwc template, or depthwise_conv2d_nchwc (one filter per channel)."""
    data, weight = (a.ty for a in call.args)
    N, CB, H, W, bi = data.shape
    wino = winograd_of(call.attrs["kernel_layout"])
    if wino is not None:
        m, bo = wino
        return _candidate(
            "conv2d_winograd_nchwc", (N, CB * bi, H, W, weight.shape[2] * bo, window[1], bi,
                                      bo, m),
            lambda cfg, ins: conv2d_winograd_nchwc(ins[0], ins[1], m, (window[1],) * 4),
            schedule_conv2d_winograd, "conv2d_winograd_nchwc")
    if weight.ndim != 6:  # weights not packed at build time: compiler.ops packs them
        return []
    OB, _, R, S, _, bo = weight.shape
    C = CB * bi
    if call.attrs["groups"] == 1:
        return _candidate(
            "conv2d_nchwc", (N, C, H, W, OB * bo, R, S, *window, bi, bo),
            lambda cfg, ins: conv2d_nchwc(ins[0], ins[1], *window),
            schedule_conv2d_nchwc, "conv2d_nchwc")
    if call.attrs["groups"] == C == OB * bo and bi == bo:
        return _candidate(
            "depthwise_conv2d_nchwc", (N, C, H, W, R, S, *window, bi),
            lambda cfg, ins: depthwise_conv2d_nchwc(ins[0], ins[1], *window),
            schedule_conv2d_nchwc, "depthwise_conv2d_nchwc")
    return []


def conv2d_strategy(call: Call, target) -> list[Candidate]:
    """nn.conv2d -> the conv2d_nchw template (groups 1) or depthwise_conv2d_nchw (groups
    equal to the channels, one filter each), or their packed forms (conv2d_nchwc,
    depthwise_conv2d_nchwc) in NCHW[x]c, when _window can say its window."""
    window = _window(call.attrs)
    if window is None or not _float32(call):
        return []
    if call.attrs["data_layout"] != "NCHW":
        return _packed_conv2d(call, window)
    (N, C, H, W), (K, per_group, R, S) = call.args[0].ty.shape, call.args[1].ty.shape
    groups = call.attrs["groups"]
    if groups == 1:
        return _candidate(
            "conv2d_nchw", (N, C, H, W, K, R, S, *window),
            lambda cfg, ins: ops.conv2d_nchw(ins[0], ins[1], *window),
            schedule_conv2d, "conv2d_nchw")
    if groups == C == K and per_group == 1:
        # OIHW (C, 1, R, S) is the template's kernel (C, multiplier 1, R, S)
        return _candidate(
            "depthwise_conv2d_nchw", (N, C, H, W, R, S, *window),
            lambda cfg, ins: ops.depthwise_conv2d_nchw(ins[0], ins[1], *window),
            schedule_depthwise_conv2d, "depthwise_conv2d_nchw")
    return []


def dense_strategy(call: Call, target) -> list[Candidate]:
    """nn.dense of 2-D data -> the dense template."""
    data, weight = (a.ty for a in call.args)
    if data.ndim != 2 or not _float32(call):
        return []
    (M, K), N = data.shape, weight.shape[0]
    return _candidate("dense", (M, N, K), lambda cfg, ins: dense_compute(cfg, *ins),
                           schedule_dense, "dense")


def dense_pack_strategy(call: Call, target) -> list[Candidate]:
    """nn.contrib_dense_pack (a dense whose weights AlterOpLayout packed) -> dense_pack."""
    if not _float32(call):
        return []
    (M, K), (panels, _, block) = (a.ty.shape for a in call.args)
    return _candidate("dense_pack", (M, panels * block, K, block),
                           lambda cfg, ins: ops.dense_pack(*ins), schedule_dense, "dense_pack")


def matmul_strategy(call: Call, target) -> list[Candidate]:
    """matmul of 2-D operands -> the matmul template; of 3-D float32 operands with one
    batch extent (attention's products, as the ONNX importer writes them) -> the
    batch_matmul template."""
    a, b = (a.ty for a in call.args)
    if a.ndim == 3 and b.ndim == 3 and a.shape[0] == b.shape[0] and _float32(call):
        (batch, M, K), N = a.shape, b.shape[2]
        return _candidate("batch_matmul", (batch, M, N, K),
                          lambda cfg, ins: batch_matmul_compute(cfg, *ins),
                          schedule_batch_matmul, "batch_matmul")
    if a.ndim != 2 or b.ndim != 2 or a.dtype != b.dtype or a.dtype not in ("float32",
                                                                         "float64"):
        return []
    (M, K), N = a.shape, b.shape[1]
    return _candidate("matmul", (M, N, K, a.dtype),
                           lambda cfg, ins: matmul_compute(cfg, *ins), schedule_matmul,
                           "matmul")


def softmax_strategy(call: Call, target) -> list[Candidate]:
    """float32 nn.softmax or nn.log_softmax over the last axis of two axes or more ->
    the softmax or log_softmax template (row_ops.py)."""
    data = call.args[0].ty
    if data.ndim < 2 or call.attrs["axis"] % data.ndim != data.ndim - 1 or \
            not _float32(call):
        return []
    name = call.op.name.removeprefix("nn.")
    compute = ops.softmax if name == "softmax" else ops.log_softmax
    return _candidate(name, (tuple(data.shape),), lambda cfg, ins: compute(ins[0], -1),
                      lambda cfg, s, anchor, out: schedule_rows(cfg, s, out, data.ndim - 1),
                      name)


def layer_norm_strategy(call: Call, target) -> list[Candidate]:
    """float32 nn.layer_norm with rows (its axis not the first) -> the layer_norm
    template (row_ops.py)."""
    data = call.args[0].ty
    axis, epsilon = call.attrs["axis"] % data.ndim, call.attrs["epsilon"]
    if axis == 0 or not _float32(call):
        return []
    return _candidate("layer_norm", (tuple(data.shape), axis, epsilon),
                      lambda cfg, ins: ops.layer_norm(*ins, axis, epsilon),
                      lambda cfg, s, anchor, out: schedule_rows(cfg, s, out, axis),
                      "layer_norm")


def _library(name: str, args: tuple) -> list[Candidate]:
    """The library's candidate of template `name` on `args`: the chooser compares it
    (chooser.choose_implementation with the library named), the build never lowers it."""
    tmpl = get_template(name)
    args = tmpl.bind(args)

    def not_a_kernel(*_):
        raise TypeError(f"{name} is a library's template: the external codegen "
                        f"{LIBRARY} computes it, not a te kernel")
    return [Candidate(name, (name, args), not_a_kernel, not_a_kernel, tmpl.space(args).fallback,
                      lambda cfg: _info(name, args, cfg), priority=5, library=LIBRARY)]


def dense_library_strategy(call: Call, target) -> list[Candidate]:
    """nn.dense of 2-D float32 data -> the dense_cblas template (the library's)."""
    data, weight = (a.ty for a in call.args)
    if data.ndim != 2 or not _float32(call):
        return []
    return _library("dense_cblas", (data.shape[0], weight.shape[0], data.shape[1]))


def matmul_library_strategy(call: Call, target) -> list[Candidate]:
    """2-D float32 matmul -> the matmul_cblas template (the library's)."""
    a, b = (a.ty for a in call.args)
    if a.ndim != 2 or b.ndim != 2 or not _float32(call):
        return []
    return _library("matmul_cblas", (a.shape[0], b.shape[1], a.shape[1]))


def batch_matmul_library_strategy(call: Call, target) -> list[Candidate]:
    """float32 nn.batch_matmul -> the batch_matmul_cblas template (the library's)."""
    if not _float32(call):
        return []
    (batch, M, K), N = call.args[0].ty.shape, call.args[1].ty.shape[1]
    return _library("batch_matmul_cblas", (batch, M, N, K))


def conv2d_library_strategy(call: Call, target) -> list[Candidate]:
    """A 1x1, stride 1, unpadded float32 NCHW nn.conv2d -> conv2d_1x1_cblas (the
    library's), where compiler.contrib.cblas computes it."""
    if not computes(call):
        return []
    (N, C, H, W), K = call.args[0].ty.shape, call.args[1].ty.shape[0]
    return _library("conv2d_1x1_cblas", (N, C, H, W, K))


def register() -> None:
    """Register the strategies above (the "autosched.strategies" entry point)."""
    register_strategy("nn.conv2d", conv2d_strategy)
    register_strategy("nn.conv2d", conv2d_library_strategy)
    register_strategy("nn.dense", dense_strategy)
    register_strategy("nn.dense", dense_library_strategy)
    register_strategy("nn.contrib_dense_pack", dense_pack_strategy)
    register_strategy("matmul", matmul_strategy)
    register_strategy("nn.softmax", softmax_strategy)
    register_strategy("nn.log_softmax", softmax_strategy)
    register_strategy("nn.layer_norm", layer_norm_strategy)
    register_strategy("matmul", matmul_library_strategy)
    register_strategy("nn.batch_matmul", batch_matmul_library_strategy)
