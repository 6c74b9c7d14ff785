"""Shape expressions in a module's metadata (compiler/runtime/shape_expr.py): written as
JSON trees, checked before use, evaluated without eval."""
import json

import numpy as np
import pytest

import compiler
from compiler import te
from compiler.errors import BuildError, ModuleFormatError
from compiler.runtime.shape_expr import check_dim, dim_value, encode_dim


def test_encode_constants_sizes_and_expressions():
    n, m = te.var("n"), te.var("m")
    keys = {n: "n", m: "m"}
    assert encode_dim(te.const(5), keys, "dim") == 5
    assert encode_dim(n, keys, "dim") == "n"
    tree = encode_dim(te.floordiv(n + 3, 2) * m - te.min(n, 4), keys, "dim")
    assert tree == {"expr": {"op": "sub", "args": [
        {"op": "mul", "args": [{"op": "floordiv", "args": [{"op": "add", "args": ["n", 3]}, 2]},
                               "m"]},
        {"op": "min", "args": ["n", 4]}]}}
    assert json.loads(json.dumps(tree)) == tree
    check_dim(tree, ["n", "m"], "dim")
    for nv, mv in ((1, 1), (7, 3), (10, 2)):
        assert dim_value(tree, {"n": nv, "m": mv}) == (nv + 3) // 2 * mv - min(nv, 4)


def test_every_operation_evaluates_as_the_compiled_code_does():
    n = te.var("n")
    keys = {n: "n"}
    cases = [(n + 2, lambda v: v + 2), (n - 1, lambda v: v - 1), (n * 3, lambda v: v * 3),
             (te.floordiv(n, 4), lambda v: v // 4), (te.floormod(n, 4), lambda v: v % 4),
             (te.max(n, 6), lambda v: max(v, 6)), (te.min(n, 6), lambda v: min(v, 6))]
    for e, expected in cases:
        dim = encode_dim(e, keys, "dim")
        check_dim(dim, ["n"], "dim")
        assert [dim_value(dim, {"n": v}) for v in range(1, 12)] == \
            [expected(v) for v in range(1, 12)], e


def test_an_expression_the_runtime_cannot_check_fails_the_build():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((te.truncdiv(n, 2),), name="B")
    C = te.compute((n,), lambda i: A[i] * 2.0, name="C")
    with pytest.raises(BuildError, match=r"dimension 0 of argument B of main has the shape "
                                         r"expression truncdiv\(n, 2\)"):
        compiler.build(te.create_schedule(C.op), [A, B, C])


@pytest.mark.parametrize("dim, problem", [
    ({"expr": "__import__('os').system('true')"}, "whose part \"__import__"),
    ({"expr": "n + 1"}, "whose part 'n \\+ 1'"),
    ({"expr": {"op": "pow", "args": ["n", 2]}}, "whose part {'op': 'pow'"),
    ({"expr": {"op": "add", "args": ["n"]}}, "whose part {'op': 'add', 'args': \\['n'\\]}"),
    ({"expr": {"op": "add", "args": ["n", "k"]}}, "whose part 'k'"),
    ({"expr": {"op": "add", "args": ["n", 1], "code": "x"}}, "whose part {'op': 'add'"),
    ({"expr": {"op": "add", "args": [True, 1]}}, "whose part True"),
    ("k", "is 'k': not an int, a symbolic size \\(n\\)"),
    (2.5, "is 2.5"),
    (None, "is None"),
    ({"expr": 3, "more": 1}, "is {'expr': 3, 'more': 1}"),
])
def test_anything_else_is_rejected_with_the_dimension_named(dim, problem):
    with pytest.raises(ModuleFormatError, match=f"^dimension 0 of argument X of f "
                                                f"(has the shape expression .*, )?{problem}"):
        check_dim(dim, ["n"], "dimension 0 of argument X of f")


def test_a_checked_module_binds_sizes_through_shape_expressions():
    n = te.var("n")
    A = te.placeholder((n + 2,), name="A")
    B = te.compute((n,), lambda i: A[i] + A[i + 2], name="B")
    f = compiler.build(te.create_schedule(B.op), [A, B])
    assert f.meta["params"][0]["shape"] == [{"expr": {"op": "add", "args": ["n", 2]}}]
    a = np.arange(9, dtype="float32")
    b = np.zeros(7, "float32")
    f(a, b)
    np.testing.assert_array_equal(b, a[:7] + a[2:])
    with pytest.raises(ValueError, match=r"argument 0 \(A\) of main has shape \(8,\), "
                                         r"expected \(9,\)"):
        f(np.zeros(8, "float32"), b)
