"""Knob spaces and entities (search_spaces/knobs.py, entities.py): the values each policy
offers, how entities apply to a schedule, and the errors of bad definitions."""
import pytest

from compiler import te
from search_spaces import ConfigSpace, InstantiationError, SpaceError


def sizes(cs, name):
    return [e.to_json() for e in cs.knob(name).entities]


def vector_op(n=24):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    return A, B, te.create_schedule(B.op)


# ------------------------------------------------------------------ split

def test_factors_policy_lists_divisors_only():
    cs = ConfigSpace()
    cs.define_split("t", 12)
    assert sizes(cs, "t") == [[-1, 1], [-1, 2], [-1, 3], [-1, 4], [-1, 6], [-1, 12]]


def test_factors_policy_with_three_parts_keeps_the_product_a_divisor():
    cs = ConfigSpace()
    cs.define_split("t", 12, num_outputs=3, max_factor=4)
    got = sizes(cs, "t")
    assert [-1, 3, 4] in got and [-1, 4, 3] in got and [-1, 2, 4] not in got
    assert all(12 % (a * b) == 0 and a <= 4 and b <= 4 for _, a, b in got)


def test_power2_policy_allows_tails_up_to_max_factor():
    cs = ConfigSpace()
    cs.define_split("t", 48, policy="power2", max_factor=16)
    assert sizes(cs, "t") == [[-1, 1], [-1, 2], [-1, 4], [-1, 8], [-1, 16]]
    cs.define_split("u", 48, policy="power2")
    assert sizes(cs, "u")[-1] == [-1, 32]  # 32 does not divide 48


def test_candidate_policy_takes_the_templates_sizes_and_a_filter():
    cs = ConfigSpace()
    cs.define_split("t", 48, num_outputs=3, policy="candidate",
                    candidate=[[-1, 2, 16], [3, 1, 16], [-1, 5, 7], [-1, 1, 32]],
                    filter=lambda e: e.size[-1] >= 16)
    assert sizes(cs, "t") == [[-1, 2, 16], [-1, 1, 16], [-1, 1, 32]]


def test_split_extent_may_be_an_int_an_itervar_or_a_constant_expr():
    _, B, _ = vector_op(24)
    cs = ConfigSpace()
    cs.define_split("a", B.op.axis[0])
    cs.define_split("b", te.const(6) * 4)
    cs.define_split("c", 24)
    assert sizes(cs, "a") == sizes(cs, "b") == sizes(cs, "c")


def test_split_apply_returns_the_loops_outermost_first():
    _, B, s = vector_op(48)
    cs = ConfigSpace()
    cs.define_split("t", 48, num_outputs=3, policy="candidate", candidate=[[-1, 4, 8]])
    loops = cs["t"].apply(s, B, B.op.axis[0])
    assert len(loops) == 3 and s[B].leaf_iter_vars == loops


# ------------------------------------------------------------------ reorder

def test_reorder_all_lists_every_permutation_identity_first():
    cs = ConfigSpace()
    cs.define_reorder("r", ["x", "y", "z"])
    perms = sizes(cs, "r")
    assert len(perms) == 6 and perms[0] == [0, 1, 2]


def test_reorder_candidates_are_axes_or_positions_and_apply_reorders():
    A = te.placeholder((4, 4), name="A")
    B = te.compute((4, 4), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    i, j = B.op.axis
    cs = ConfigSpace()
    cs.define_reorder("r", [i, j], policy="candidate", candidate=[[j, i], [0, 1]])
    assert sizes(cs, "r") == [[1, 0], [0, 1]]
    assert cs.knob("r")[0].apply(s, B, [i, j]) == [j, i]
    assert s[B].leaf_iter_vars == [j, i]


def test_reorder_neighbours_swap_two_adjacent_loops():
    cs = ConfigSpace()
    cs.define_reorder("r", ["x", "y", "z"])
    knob = cs.knob("r")
    assert [knob[i].perm for i in knob.neighbours(knob.index_of([0, 1, 2]))] == \
        [(0, 2, 1), (1, 0, 2)]


# ------------------------------------------------------------------ annotate

@pytest.mark.parametrize("policy, count, last", [
    ("try_unroll", 4, {"none", "unroll"}),
    ("try_vec", 2, {"none", "vec"}),
    ("try_unroll_vec", 6, {"none", "unroll", "vec"}),
])
def test_annotate_policies_vectorize_only_the_last_axis(policy, count, last):
    cs = ConfigSpace()
    cs.define_annotate("a", ["x", "y"], policy=policy)
    anns = sizes(cs, "a")
    assert len(anns) == count
    assert "vec" not in {a[0] for a in anns}
    assert {a[1] for a in anns} == last


def test_annotate_neighbours_change_one_axis():
    cs = ConfigSpace()
    cs.define_annotate("a", ["x", "y"], policy="try_unroll_vec")
    knob = cs.knob("a")
    assert sorted(knob[i].anns for i in knob.neighbours(knob.index_of(["none", "vec"]))) == \
        [("none", "none"), ("none", "unroll"), ("unroll", "vec")]


def test_annotate_apply_marks_the_loops():
    _, B, s = vector_op(32)
    io, ii = s[B].split(B.op.axis[0], factor=8)
    cs = ConfigSpace()
    cs.define_annotate("a", [io, ii], policy="try_unroll_vec", fallback=["unroll", "vec"])
    cs["a"].apply(s, B, [io, ii])
    assert s[B].iter_var_attrs == {io: "unrolled", ii: "vectorized"}


def test_annotate_limits_raise_instantiation_errors():
    _, B, s = vector_op(32)
    io, ii = s[B].split(B.op.axis[0], factor=8)
    cs = ConfigSpace()
    cs.define_annotate("a", [io, ii], policy="try_unroll_vec", fallback=["unroll", "vec"])
    with pytest.raises(InstantiationError, match="unroll of a loop of 4 iterations exceeds "
                                                 "max_unroll=2"):
        cs["a"].apply(s, B, [io, ii], axis_lens=[4, 8], max_unroll=2)
    with pytest.raises(InstantiationError, match=r"allowed lengths \[4, 16\]"):
        cs["a"].apply(s, B, [io, ii], axis_lens=[4, 8], vec_size=[4, 16])


# ------------------------------------------------------------------ plain knobs

def test_knob_values_and_neighbours():
    cs = ConfigSpace()
    cs.define_knob("k", [0, 16, 64, 512])
    knob = cs.knob("k")
    assert [e.val for e in knob.entities] == [0, 16, 64, 512]
    assert knob.neighbours(0) == [1] and knob.neighbours(2) == [1, 3]


def test_knob_keeps_true_apart_from_one():
    cs = ConfigSpace()
    cs.define_knob("k", [1, True])
    assert cs.knob("k").index_of(True) == 1 and cs.knob("k").index_of(1) == 0


def test_value_outside_a_knob_names_the_knob_and_its_values():
    cs = ConfigSpace()
    cs.define_split("tile", 8)
    with pytest.raises(SpaceError, match=r"knob 'tile': \[-1, 3\] is not one of its values; "
                                         r"allowed: \[-1, 1\], \[-1, 2\], \[-1, 4\], \[-1, 8\]"):
        cs.knob("tile").index_of([-1, 3])


# ------------------------------------------------------------------ bad definitions

@pytest.mark.parametrize("define, message", [
    (lambda cs: cs.define_split("t", 8, policy="verbose"),
     "knob 't': unknown split policy 'verbose'"),
    (lambda cs: cs.define_split("t", 8, num_outputs=1), "knob 't': num_outputs must be an int"),
    (lambda cs: cs.define_split("t", te.var("n")), "knob 't': .* must be a constant int"),
    (lambda cs: cs.define_split("t", 8, candidate=[[-1, 2]]), "knob 't': candidate= goes with"),
    (lambda cs: cs.define_split("t", 8, policy="candidate", candidate=[[-1, 16]]),
     "knob 't': .* longer than the extent 8"),
    (lambda cs: cs.define_split("t", 8, filter=lambda e: False), "knob 't': no split of 8"),
    (lambda cs: cs.define_reorder("r", ["x", "y"], policy="candidate", candidate=[[0, 0]]),
     "knob 'r': .* order all 2 axes once each"),
    (lambda cs: cs.define_annotate("a", ["x"], policy="bind_gpu"),
     "knob 'a': unknown annotate policy"),
    (lambda cs: cs.define_knob("k", []), "knob 'k': .* non-empty list of values"),
    (lambda cs: cs.define_knob("k", [1, 1]), "knob 'k': .* must be distinct"),
    (lambda cs: cs.define_knob("k", [[1]]), "knob 'k': .* stored as JSON"),
    (lambda cs: cs.define_knob("k", [1, 2], fallback=3),
     r"knob 'k': 3 is not one of its values; allowed: 1, 2"),
])
def test_bad_definitions_name_the_knob(define, message):
    with pytest.raises(SpaceError, match=message):
        define(ConfigSpace())


def test_split_of_a_split_axis_needs_its_length():
    _, B, s = vector_op(24)
    io, _ = s[B].split(B.op.axis[0], factor=4)
    with pytest.raises(SpaceError, match="axis i.outer has no domain of its own"):
        ConfigSpace().define_split("t", io)


def test_a_knob_defined_twice_is_an_error():
    cs = ConfigSpace()
    cs.define_knob("k", [1])
    with pytest.raises(SpaceError, match="knob 'k' is defined twice"):
        cs.define_knob("k", [2])
