"""Task extraction (AutoTVM's `extract_from_program`): the tunable workloads of a whole
model, and how many of its kernels each one schedules.

    mod, params = compiler.frontend.from_onnx("model.onnx")
    tasks, weights = extract_tasks(mod, params)

The model goes through the build's own passes (compiler.graph.optimize, under the
build's PassContext, compiler.graph.build_context: the entered one, else opt_level 3;
the same fusion and the same layouts the build will make), and every fused
function's anchor is put to the chooser (compiler.graph.choice_of) exactly as the build
does, without lowering anything. The chosen candidate names its workload
(template, bound arguments): that is the task, so one record serves every kernel whose
anchor has that workload, whatever elementwise tail the kernel fused. A task's weight is
the number of kernel calls of the model it schedules (a workload used by 4 layers
weighs 4): the task scheduler minimises the sum of weight x latency.

With `alternatives=True`, where the passes pack convolutions into NCHW[x]c (AlterOpLayout,
opt_level 3), the NCHW implementations of the same layers (conv2d_nchw,
depthwise_conv2d_nchw) are tasks too, with their own weights: the build then takes, per
convolution, the faster of the two in the log (compiler/graph/passes/alter_op_layout.py). Off by
default: it doubles a CNN's tasks, and the packed kernels' untuned configs already run
near the FMA peak, so the NCHW ones rarely win (the scheduler's estimated latency then
counts both implementations of a layer: an upper bound).

With `blocks=True`, every packed convolution's other channel blocks are tasks too: each
(input block, output block) pair it may compute in (compiler/graph/ir/op/conv2d.py
conv2d_forms: the target's lanes and their multiples that divide its channels, by
Winograd where it may run so and directly) is a workload of conv2d_nchwc (or
depthwise_conv2d_nchwc, conv2d_winograd_nchwc) of its own, weighted by the layer's
kernels. At compile time the layout planner (compiler/graph/passes/layout_plan.py)
then picks every layer's blocks for the whole model: the logged times plus the layout
transforms where blocks differ. Off by default: a layer of 64 to 512 channels has up to
9 pairs on AVX-512.

With `external` codegens (BYOC), the tasks are those of the build with the compilers
among them (ccompiler: what it takes is no kernel of ours, so no task), and a library
(cblas) competes: every op it can compute (nn.dense, matmul, nn.batch_matmul) adds a
task of the library's template (dense_cblas, ...: one config, measured once), beside
the tuned kernel's task, which is extracted as though the library were not there. At
compile time the chooser (records.ApplyHistoryBest) then takes the faster in the log.
"""
from __future__ import annotations

import dataclasses

from compiler import Target, graph
from compiler.graph.ir.op.layout import forms_of
from compiler.graph.ir.functor import post_order
from compiler.graph.strategy import candidates
from search_spaces.library import LIBRARY
from search_spaces.registry import bound_templates

from .task import Task

LIBRARIES = (LIBRARY,)
"""The external codegens that compete with tuned kernels through templates of theirs."""


def extract_tasks(mod, params: dict | None = None, target="llvm",
                  alternatives: bool = False, external=None,
                  blocks: bool = False) -> tuple[list, list]:
    """`(tasks, weights)`: one Task per distinct tunable workload of `mod`'s fused
    "main", in the order the model first runs them, and the number of kernel calls each
    one schedules (see the module docstring; `alternatives`: the NCHW implementations of
    packed convolutions too; `blocks`: their other channel blocks too; `external`: the
    external codegens the build will use, see the module docstring). Kernels no
    template schedules (pools, reshapes, ...) are no task."""
    external = [external] if isinstance(external, str) else list(external or [])
    compilers = [e for e in external if e not in LIBRARIES]
    with Target(target), graph.build_scope() as ctx:  # as the build will have them
        counts = _workloads(graph.optimize(mod, params, external=compilers))
        if alternatives and ctx.pass_enabled(graph.passes.AlterOpLayout().info):
            packable = {t.name for t in bound_templates() if t.binding.packable}
            unpacked = dataclasses.replace(ctx, instruments=(),
                                           disabled_pass=(*ctx.disabled_pass, "AlterOpLayout"))
            with unpacked:
                for workload, n in _workloads(graph.optimize(mod, params)).items():
                    if workload not in counts and workload[0] in packable:
                        counts[workload] = n
        if blocks and ctx.pass_enabled(graph.passes.AlterOpLayout().info):
            for workload, n in _block_workloads(graph.prepare(mod, params)).items():
                counts.setdefault(workload, n)
        for library in (e for e in external if e in LIBRARIES):
            prepared = graph.prepare(mod, params)
            for workload, n in _library_workloads(prepared, library, target).items():
                counts[workload] = counts.get(workload, 0) + n
    tasks = [Task(name, args, target) for name, args in counts]
    return tasks, list(counts.values())


def _library_workloads(prepared, library: str, target) -> dict[tuple, int]:
    """{workload of `library`'s template: calls} of the ops `library` can compute."""
    counts: dict[tuple, int] = {}
    for expr in post_order(prepared["main"].body):
        if isinstance(expr, graph.Call) and isinstance(expr.op, graph.Op):
            for c in candidates(expr, target, libraries=(library,)):
                if c.library == library:
                    counts[c.workload] = counts.get(c.workload, 0) + 1
    return counts


def _block_workloads(prepared) -> dict[tuple, int]:
    """{workload of a form in blocks: its calls} of every call of the prepared graph with
    forms in channel blocks (op/layout.py forms_of: a convolution's every pair of blocks,
    by Winograd and directly)."""
    counts: dict[tuple, int] = {}
    for expr in post_order(prepared["main"].body):
        if isinstance(expr, graph.Call) and isinstance(expr.op, graph.Op):
            for form in (f for f in forms_of(expr) if f.blocks is not None):
                workload = next((c.workload for c in candidates(expr, form=form)
                                 if c.workload is not None and c.library is None), None)
                if workload is not None:
                    counts[workload] = counts.get(workload, 0) + 1
    return counts


def _workloads(fused) -> dict[tuple, int]:
    """{workload: kernel calls} of a fused function's template-scheduled kernels."""
    counts: dict[tuple, int] = {}
    workloads: dict[int, tuple | None] = {}  # id(fused function) -> its chosen workload
    for expr in post_order(fused.body):
        if not (isinstance(expr, graph.Call) and isinstance(expr.op, graph.Function)):
            continue
        if id(expr.op) not in workloads:
            choice = graph.choice_of(expr.op)
            workloads[id(expr.op)] = None if choice is None else choice.candidate.workload
        workload = workloads[id(expr.op)]
        if workload is not None:
            counts[workload] = counts.get(workload, 0) + 1
    return counts
