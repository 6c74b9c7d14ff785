"""The op registry's conformance (compiler/graph/op/): every registered op has every part;
its compute, built with its default schedule, matches its numpy reference on each of
its samples that its type relation accepts (odd shapes, every rank); and an op whose
layout rule computes in a packed layout does, and still matches, when its operands come
packed from a convolution in a model built at opt level 3."""
from __future__ import annotations

import numpy as np
import pytest

import compiler
from compiler import graph, te
from compiler.graph.ir.expr import Call, Tuple
from compiler.graph.ir.functor import post_order
from compiler.graph.ir.op import GraphTypeError, get_op, missing_parts, needs_nchw
from compiler.graph.ir.reference import evaluate
from compiler.graph.ir.ty import TupleType
from compiler.transform.pass_infra import PassContext

OPS = graph.registered_ops()


def _random(shape, seed, dtype="float32"):
    """Seeded values of `dtype`: normal floats, integers in [-5, 5), random bools."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind == "i":
        return rng.integers(-5, 5, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _accepted(op):
    """(argument types, attrs, result type) of each sample the type relation accepts."""
    found = []
    for types, attrs in op.samples():
        attrs = {**op.defaults, **attrs}
        try:
            found.append((types, attrs, op.type_rel(types, attrs)))
        except GraphTypeError:
            continue
    return found


def test_every_op_has_every_part():
    missing = {name: missing_parts(get_op(name)) for name in OPS}
    assert {name: parts for name, parts in missing.items() if parts} == {}


@pytest.mark.parametrize("name", OPS)
def test_the_compute_with_its_default_schedule_matches_the_reference(name):
    op = get_op(name)
    assert not missing_parts(op), f"{name} has no {', '.join(missing_parts(op))}"
    samples = _accepted(op)
    assert samples, f"{name}: its type relation accepts none of its samples"
    for n, (types, attrs, out_type) in enumerate(samples):
        arrays = [tuple(_random(f.shape, 10 * n + i + j, f.dtype)
                        for j, f in enumerate(t.fields))
                  if isinstance(t, TupleType) else _random(t.shape, 10 * n + i, t.dtype)
                  for i, t in enumerate(types)]
        want = op.reference(arrays, attrs)
        if isinstance(op.compute, str):  # rewritten before lowering: its reference only
            shapes = [w.shape for w in want] if isinstance(want, tuple) else want.shape
            assert shapes == ([tuple(f.shape) for f in out_type.fields]
                              if isinstance(out_type, TupleType) else tuple(out_type.shape))
            continue
        tensors = [tuple(te.placeholder(f.shape, name=f"a{i}_{j}", dtype=f.dtype)
                         for j, f in enumerate(t.fields)) if isinstance(t, TupleType)
                   else te.placeholder(t.shape, name=f"a{i}", dtype=t.dtype)
                   for i, t in enumerate(types)]
        out = op.compute(tensors, attrs, out_type)
        call = Call(op, (), attrs, out_type)
        flat = [x for t in tensors for x in (t if isinstance(t, tuple) else (t,))]
        outs = list(out) if isinstance(out, tuple) else [out]  # one output per field
        out_types = out_type.fields if isinstance(out_type, TupleType) else [out_type]
        wants = list(want) if isinstance(want, tuple) else [want]
        f = compiler.build(op.schedule(out, out, call), [*flat, *outs])
        got = [np.zeros(tuple(t.shape), t.dtype) for t in out_types]
        f(*[a for x in arrays for a in (x if isinstance(x, tuple) else (x,))], *got)
        for g, w in zip(got, wants, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4,
                                       err_msg=f"{name} on {types} with {attrs}")


def _packed_model(op, types, attrs):
    """A function calling `op` on `types`, each image operand (NCHW, one image of 16
    channels) the output of a 1x1 convolution (which AlterOpLayout packs), or None when
    no operand is an image."""
    params, args, packed = [], [], False

    def operand(t, i):
        nonlocal packed
        x = graph.var(f"x{i}", t)
        params.append(x)
        if tuple(t.shape[:2]) == (1, 16) and len(t.shape) == 4 and t.dtype == "float32":
            packed = True
            w = graph.const(_random((16, 16, 1, 1), 99 + i))
            return graph.nn.conv2d(x, w)
        return x
    for i, t in enumerate(types):
        if isinstance(t, TupleType):
            args.append(Tuple(tuple(operand(f, 10 * i + j) for j, f in enumerate(t.fields))))
        else:
            args.append(operand(t, i))
    if not packed:
        return None
    return graph.Function(params, Call(op, tuple(args), attrs))


def _packed_models(op) -> list:
    return [m for types, attrs, _ in _accepted(op) if not isinstance(op.compute, str)
            and (m := _packed_model(op, types, attrs)) is not None]


@pytest.mark.parametrize("name", [n for n in OPS if _packed_models(get_op(n))])
def test_packed_operands_follow_the_layout_rule_and_match_the_reference(name):
    """An op that needs NCHW gets its packed operands back in NCHW; any other computes
    in the packed layout; the result is in the layout and shape the model declares."""
    op = get_op(name)
    unpacked = []
    for fn in _packed_models(op):
        mod = graph.IRModule.from_expr(fn)
        with PassContext(opt_level=3):
            lib = graph.build(mod)
            altered = graph.passes.AlterOpLayout()(graph.passes.InferType()(mod))
        inputs = [_random(p.ty.shape, k) for k, p in enumerate(fn.params)]
        got, = lib.run(**{p.name: x for p, x in zip(fn.params, inputs)})
        want = evaluate(fn, *inputs)
        assert got.shape == want.shape  # the layout and shape the model declares
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        unpacked.append(_unpacks_a_convolution(altered["main"]))
    if op.layout is needs_nchw:
        assert all(unpacked)
    else:
        assert not all(unpacked), f"{name} never computed in a packed layout"


def _unpacks_a_convolution(fn) -> bool:
    """Whether a convolution's packed result goes back to NCHW (before the op: the op
    computed in NCHW) rather than the op's own result (the op computed packed)."""
    def producer(e):  # one of _packed_model's convolutions: it reads a parameter
        data = e.args[0].args[0] if isinstance(e.args[0], Call) else e.args[0]
        return e.op.name == "nn.conv2d" and isinstance(data, graph.Var)
    return any(isinstance(e, Call) and e.op.name == "layout_transform" and
               e.attrs["dst_layout"] == "NCHW" and isinstance(e.args[0], Call) and
               producer(e.args[0]) for e in post_order(fn.body))


def test_a_missing_part_is_named():
    from compiler.graph.ir.op.registry import Op
    from compiler.ops.pattern import OpPattern
    op = Op("test.partial", lambda types, attrs: types[0], OpPattern.ELEMWISE,
            reference=lambda a, at: a[0], layout=needs_nchw)
    assert missing_parts(op) == ["compute", "samples"]
