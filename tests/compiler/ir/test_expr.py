"""Expression nodes (compiler/ir/expr.py): the values of constants through int() and
float(), as a TVM user writes them, and their text through the registered printer."""
import pytest

import compiler
from compiler import te
from compiler.ir import expr as E


def test_int_of_a_constant_shape_dimension():
    A = te.placeholder((7, 5), name="A")
    assert int(A.shape[0]) == 7 and int(A.shape[1]) == 5
    assert [int(d) for d in A.shape] == [7, 5]


def test_int_of_an_inferred_extent():
    A = te.placeholder((20,), name="A")
    B = te.compute((20,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    outer, inner = s[B].split(B.op.axis[0], factor=8)
    bounds = compiler.infer_bound(s)
    assert int(bounds[inner].extent) == 8
    assert int(bounds[outer].extent) == 3


def test_float_of_constants():
    assert float(te.const(2.5)) == 2.5
    assert float(te.const(0.25, "float64")) == 0.25
    assert float(te.const(3)) == 3.0 and isinstance(float(te.const(3)), float)
    assert int(te.const(3, "int64")) == 3 and int(te.const(True)) == 1


def test_int_of_a_symbolic_expression_names_it():
    n = te.var("n")
    with pytest.raises(TypeError, match=r"int\(\) needs an integer constant, got \(n \+ 1\) "
                                        r"\(Add, dtype int32\)"):
        int(n + 1)
    with pytest.raises(TypeError, match=r"got n \(Var, dtype int32\)"):
        int(te.placeholder((n, 4), name="A").shape[0])
    with pytest.raises(TypeError, match=r"float\(\) needs a constant, got n \(Var"):
        float(n)


def test_int_of_a_float_constant_is_refused():
    with pytest.raises(TypeError, match=r"got 2.5f \(FloatImm, dtype float32\)"):
        int(te.const(2.5))


def test_const_is_exported_and_builds_immediates():
    assert te.const is E.const
    c = te.const(7)
    assert isinstance(c, E.IntImm) and c.dtype == "int32" and str(c) == "7"
    assert te.const(2**40).dtype == "int64"
    f = te.const(1.5, "float64")
    assert isinstance(f, E.FloatImm) and f.dtype == "float64"


def test_nodes_print_through_the_registered_printer():
    i = te.var("i")
    A = te.placeholder((4,), name="A")
    assert str(A[i] * 2.0 + 1.0) == "((A[i]*2.0f) + 1.0f)"
    assert repr(E.FloorDiv(i, E.IntImm(2))) == "floordiv(i, 2)"
    assert str(te.Range.make(1, 5)) == "range(min=1, ext=4)"
