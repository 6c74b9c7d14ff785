"""The index simplifier and constant bounds (compiler/arith/simplify.py)."""
from compiler import te
from compiler.arith.simplify import const_bound, const_upper_bound, simplify
from compiler.ir import expr as E


def s(e, **bounds):
    return str(simplify(e, bounds))


def test_constants_fold():
    assert s(E.const(3) * 4 + 2) == "14"
    assert s(te.floordiv(E.const(-7), 2)) == "-4"
    assert s(te.floormod(E.const(-7), 2)) == "1"
    assert s(te.truncdiv(E.const(-7), 2)) == "-3"


def test_linear_terms_cancel_and_keep_reference_order():
    i, j = te.var("i"), te.var("j")
    assert s((i * 16 + 15) - i * 16) == "15"
    assert s(i * 4 * 4 + j) == "((i*16) + j)"
    assert s(20 - i * 16) == "(20 - (i*16))"
    assert s(i + j - i - j) == "0"


def test_min_of_tail_extent_is_pushed_and_bounded():
    jo = te.var("jo")
    tail = te.min(jo * 16 + 15, 19) - jo * 16 + 1
    b = {jo: (0, 1)}
    assert str(simplify(tail, b)) == "min(16, (20 - (jo*16)))"
    assert const_upper_bound(tail, b) == 16


def test_min_max_decided_by_bounds():
    x = te.var("x")
    assert str(simplify(te.min(x * 4 + 3, 15), {x: (0, 3)})) == "((x*4) + 3)"
    assert str(simplify(te.max(x, 0), {x: (0, 9)})) == "x"
    assert str(simplify(te.min(x, 5), {x: (0, 9)})) == "min(x, 5)"


def test_floordiv_floormod_with_known_ranges():
    i, j = te.var("i"), te.var("j")
    b = {i: (0, 100), j: (0, 3)}
    assert str(simplify(te.floordiv(i * 4 + j, 4), b)) == "i"
    assert str(simplify(te.floormod(i * 4 + j, 4), b)) == "j"
    assert str(simplify(te.floordiv(i * 8, 4), b)) == "(i*2)"
    f = te.var("f")
    assert str(simplify(te.floordiv(f, 4) * 4 + te.floormod(f, 4))) == "f"


def test_comparisons_proved_or_kept():
    i = te.var("i")
    assert str(simplify(i < 20, {i: (0, 15)})) == "True"
    assert str(simplify(i < 10, {i: (0, 15)})) == "(i < 10)"
    assert str(simplify(i >= 0, {i: (0, 15)})) == "True"


def test_const_bound_interval_arithmetic():
    i, j = te.var("i"), te.var("j")
    b = {i: (0, 3), j: (-2, 5)}
    assert const_bound(i * j, b) == (-6, 15)
    assert const_bound(te.floormod(i, 8), b) == (0, 3)
    assert const_bound(te.floordiv(j, 2), b) == (-1, 2)


def test_float32_constants_fold_as_the_kernel_computes_them_in_float32():
    import numpy as np
    folded = simplify(E.Mul(E.FloatImm(0.1, "float32"), E.FloatImm(3.0, "float32")))
    assert folded.value == float(np.float32(0.1) * np.float32(3.0))
    big = simplify(E.Mul(E.FloatImm(3e38, "float32"), E.FloatImm(10.0, "float32")))
    assert big.value == float("inf")
    double = simplify(E.Mul(E.FloatImm(0.1, "float64"), E.FloatImm(3.0, "float64")))
    assert double.value == 0.1 * 3.0


def test_an_expression_that_simplifies_to_itself_is_kept_and_redone_only_under_new_bounds():
    """simplify returns a fixed point as the same node and remembers it with its
    variables' bounds: the same bounds give it back at once, other bounds (or a bound
    added for one of its variables) simplify it again."""
    i, j = te.var("i"), te.var("j")
    e = te.min(i + j, 10)
    wide = {i: (0, 20), j: (0, 3)}
    assert simplify(e, wide) is e
    assert simplify(e, dict(wide)) is e  # the same bounds in another dict
    assert simplify(e, {**wide, te.var("k"): (0, 1)}) is e  # a variable it does not read
    assert str(simplify(e, {i: (0, 5), j: (0, 3)})) == "(i + j)"
    assert str(simplify(e, {**wide, i: (10, 20)})) == "10"
    assert simplify(e) is e and str(simplify(e, {i: (0, 2), j: (0, 2)})) == "(i + j)"
    f = te.floordiv(i, 16)  # folded under a bound, then kept (and marked) without one
    assert str(simplify(f, {i: (0, 15)})) == "0" and simplify(f) is f
    assert str(simplify(f, {i: (16, 31)})) == "1"


def _random_index(rng, names, depth):
    """A random integer expression over `names`: sums, products by constants, floordiv
    and floormod by constants, min / max, and Selects on comparisons."""
    if depth == 0 or rng.random() < 0.2:
        return rng.choice(names) if rng.random() < 0.7 else E.IntImm(rng.randint(-5, 9))
    a, b = _random_index(rng, names, depth - 1), _random_index(rng, names, depth - 1)
    kind = rng.randrange(7)
    if kind == 0:
        return E.Add(a, b)
    if kind == 1:
        return E.Mul(a, E.IntImm(rng.randint(-3, 5)))
    if kind == 2:
        return E.FloorDiv(a, E.IntImm(rng.randint(1, 6)))
    if kind == 3:
        return E.FloorMod(a, E.IntImm(rng.randint(1, 6)))
    if kind == 4:
        return E.Min(a, b)
    if kind == 5:
        return E.Sub(a, b)
    return E.Select(E.LT(a, E.IntImm(rng.randint(0, 6))), b, a)


def test_binding_constants_into_a_simplified_expression_matches_simplifying_it_whole():
    """bind_simplified (what unrolled copies use: only the nodes above a bound variable
    are redone, a decided Select keeps its branch) gives the expression that
    simplify(substitute(...)) gives, on 400 seeded random expressions."""
    import random
    from compiler.arith.bind import bind_simplified
    from compiler.ir.functor import substitute
    rng = random.Random(44)
    i, j, k = E.Var("i"), E.Var("j"), E.Var("k")
    memo = {}
    for _ in range(400):
        e = simplify(_random_index(rng, [i, j, k], 4))
        env = {i: E.IntImm(rng.randint(0, 7)), j: E.IntImm(rng.randint(0, 7))}
        assert str(bind_simplified(e, env)) == str(simplify(substitute(e, env))), str(e)
        # with a memo shared by all of them, as an unrolled loop's copies share one
        assert str(bind_simplified(e, env, memo)) == str(bind_simplified(e, env)), str(e)


def test_a_select_whose_condition_folds_is_its_branch_simplified():
    x = E.Var("x")
    chain = E.Select(E.EQ(E.IntImm(2), E.IntImm(2)), x + 0, E.FloorDiv(x, E.IntImm(0)))
    assert str(simplify(chain)) == "x"
    assert str(simplify(E.Select(E.LT(x, E.IntImm(3)), x + 0, x * 1),
                        {x: (0, 9)})) == "if_then_else((x < 3), x, x)"


def test_a_vector_select_on_a_scalar_condition_that_folds_is_its_branch():
    x = E.Broadcast(E.Var("x", "float32"), 8)
    pick = E.Select(E.LT(E.IntImm(1), E.IntImm(2)), x, E.Broadcast(E.FloatImm(0.0), 8))
    assert simplify(pick) is x
    assert bind_simplified_of(E.Select(E.LT(E.Var("i"), E.IntImm(2)), x,
                                       E.Mul(x, E.Broadcast(E.FloatImm(2.0), 8))),
                              {"i": 5}) == "(x8(x)*x8(2.0f))"


def test_the_vector_identities_that_hold_for_every_value_and_no_other():
    """x + -0.0 and x * 1.0 are x for every x (NaN, infinities, +-0); x + 0.0 is not
    (-0.0 + 0.0 is +0.0) and x * 0.0 is not (NaN * 0 is NaN): those stay."""
    x = E.Broadcast(E.Var("x", "float32"), 8)

    def b(c):
        return E.Broadcast(E.FloatImm(c), 8)
    assert simplify(E.Add(x, b(-0.0))) is x
    assert simplify(E.Add(b(-0.0), x)) is x
    assert simplify(E.Mul(x, b(1.0))) is x
    assert simplify(E.Mul(b(1.0), x)) is x
    assert str(simplify(E.Add(x, b(0.0)))) == "(x8(x) + x8(0.0f))"
    assert str(simplify(E.Mul(x, b(0.0)))) == "(x8(x)*x8(0.0f))"


def bind_simplified_of(e, values: dict) -> str:
    from compiler.arith.bind import bind_simplified
    from compiler.ir.functor import collect
    names = {v.name: v for v in collect(e, lambda n: isinstance(n, E.Var))}
    return str(bind_simplified(e, {names[k]: E.IntImm(v) for k, v in values.items()}))
