"""The tensor-expression language (compiler/te)."""
import pytest

from compiler import te


def test_python_numbers_take_the_other_operand_dtype():
    x = te.placeholder((4,), name="X", dtype="int8")
    e = x[0] * 2
    assert e.dtype == "int8" and e.b.dtype == "int8"
    assert (te.var("i") * 0.5).dtype == "float32"
    assert (te.placeholder((2,), dtype="float64")[0] + 1).dtype == "float64"


def test_mixed_dtypes_promote_to_float_or_wider_int():
    a = te.placeholder((2,), name="a", dtype="int32")
    b = te.placeholder((2,), name="b", dtype="float32")
    c = te.placeholder((2,), name="c", dtype="int64")
    assert (a[0] + b[0]).dtype == "float32"
    assert (a[0] + c[0]).dtype == "int64"
    assert a[0].astype("float64").dtype == "float64"


def test_comparison_and_logic_are_bool():
    i = te.var("i")
    cond = (i < 3) & ~(i == 1) | (i >= 7)
    assert cond.dtype == "bool"
    with pytest.raises(TypeError, match="boolean"):
        (i + 1) & (i < 2)


def test_var_identity_survives_dict_and_list_lookups():
    i, j = te.var("i"), te.var("i")
    d = {i: 1, j: 2}
    assert d[i] == 1 and d[j] == 2
    assert i in [j, i] and (i == i) and not (i == j)


def test_reductions_and_binary_max_min():
    A = te.placeholder((4, 5), name="A")
    k = te.reduce_axis((0, 5), name="k")
    S = te.compute((4,), lambda i: te.max(A[i, k], axis=k), name="S")
    assert S.op.reduce_axis == [k]
    assert str(te.max(A[0, 0], A[1, 1])) == "max(A[0, 0], A[1, 1])"
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, t), name="prod")
    P = te.compute((4,), lambda i: prod(A[i, k], axis=k), name="P")
    assert P.op.body.combiner.name == "prod"


def test_compute_axes_take_parameter_names_and_dom():
    C = te.compute((3, 7), lambda row, col: row + col, name="C")
    assert [iv.name for iv in C.op.axis] == ["row", "col"]
    assert [iv.dom.extent.value for iv in C.op.axis] == [3, 7]
    assert C.dtype == "int32"


def test_math_intrinsics_print():
    x = te.placeholder((2,), name="x")
    assert str(te.exp(x[0])) == "exp(x[0])"
    assert str(te.sigmoid(x[0]) + 1) == "(sigmoid(x[0]) + 1.0f)"
    assert str(te.if_then_else(te.var("i") < 1, x[0], 0.0)) == "if_then_else((i < 1), x[0], 0.0f)"


def test_min_value_and_max_value_are_the_identities_of_max_and_min():
    assert int(te.min_value("int8")) == -128 and int(te.max_value("int8")) == 127
    assert int(te.min_value("int32")) == -2**31 and int(te.max_value("int64")) == 2**63 - 1
    assert float(te.min_value("float32")) == float("-inf")
    assert float(te.max_value("float64")) == float("inf")
    A = te.placeholder((4,), name="A", dtype="int8")
    k = te.reduce_axis((0, 4), name="k")
    assert str(te.max(A[k], axis=k).combiner.identity) == "-128"
    assert str(te.min(A[k], axis=k).combiner.identity) == "127"
