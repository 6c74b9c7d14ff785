"""The native entry function of a whole model: `graph_run(slots)` calls the model's
kernels in order, with no Python between them (TVM's AOT executor idea, with a slot
table instead of TVM's fixed workspace).

Every value of the model (a weight, an input, an intermediate or an output) has a slot:
an int64 holding the address of its data. The executor fills the table once, when it
allocates its buffers (runtime/graph_executor.py); a run is then one call of
`graph_run` on the table. Each step loads the addresses of its arguments and its
output from the table and calls its kernel; a kernel that fails (out of memory) stops
the run with its code. The kernels are `noinline`: a model calls a kernel from several
steps, and inlining every kernel into one function would make LLVM's O3 work grow with
the model instead of with its distinct kernels.

A step of an external function (BYOC: C compiled apart, OpenBLAS calls) has no kernel
in this module: its function's address sits in a slot of its own (step["fn_slot"]),
put there by the executor when it loads the external module, and the step calls
through it with the same convention.
"""
from __future__ import annotations

from llvmlite import ir

from .llvm_ops import I32, I64, PTR
from .packed import add_packed

ENTRY = "graph_run"


def add_graph_entry(module: ir.Module, steps: list[dict]) -> None:
    """Add `i32 graph_run(ptr slots)` and its packed form `graph_run_packed(ptr args)`
    (args[0] is the slot table's address, as every packed function takes its arrays) to
    `module`, which already holds each step's kernel (step["kernel"]; its arguments are
    the slots step["args"] then step["out"]), or whose function's address is in the
    slot step["fn_slot"]."""
    fn = ir.Function(module, ir.FunctionType(I32, [PTR]), name=ENTRY)
    slots = fn.args[0]
    slots.name = "slots"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    for i, step in enumerate(steps):
        args = []
        if "fn_slot" in step:
            outs = 1 + len(step.get("more_outs", []))
            ftype = ir.FunctionType(I32, [PTR] * (len(step["args"]) + outs))
            where = b.gep(slots, [I64(step["fn_slot"])], inbounds=True, source_etype=I64)
            kernel = b.inttoptr(b.load(where, typ=I64), ir.PointerType(ftype))
        else:
            kernel = module.get_global(step["kernel"])
            kernel.attributes.add("noinline")
        more = [o["out"] for o in step.get("more_outs", [])]
        for slot in [*step["args"], step["out"], *more]:
            where = b.gep(slots, [I64(slot)], inbounds=True, source_etype=I64)
            args.append(b.inttoptr(b.load(where, typ=I64), PTR))
        rc = b.call(kernel, args)
        failed = fn.append_basic_block(f"step{i}_failed")
        ok = fn.append_basic_block(f"step{i}_done")
        b.cbranch(b.icmp_signed("!=", rc, I32(0)), failed, ok)
        b.position_at_end(failed)
        b.ret(rc)
        b.position_at_end(ok)
    b.ret(I32(0))

    add_packed(module, fn)
