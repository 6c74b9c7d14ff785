"""ConfigSpace / ConfigEntity (search_spaces/space.py): numbering, iteration, sampling,
neighbours, JSON, equality, and the space-building mode of a template."""
import itertools
import json
import math
import pickle

import pytest

import search_spaces
from compiler import Target, te
from search_spaces import ConfigEntity, SpaceError, template


@template("space_test_scale")
def scale(cfg, n: int):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    cfg.define_split("tile", B.op.axis[0])
    io, ii = cfg["tile"].apply(s, B, B.op.axis[0])
    cfg.define_reorder("order", [io, ii])
    io, ii = cfg["order"].apply(s, B, [io, ii])
    cfg.define_annotate("ann", [io, ii], policy="try_unroll_vec")
    cfg["ann"].apply(s, B, [io, ii])
    cfg.define_knob("mode", ["a", "b", "c"])
    return s, [A, B]


@template("space_test_wide")
def wide(cfg, n: int):
    """Six knobs of 100 values each: 10**12 configs, far too many to list."""
    for k in range(6):
        cfg.define_knob(f"k{k}", list(range(n)))
    return None, []


def small():
    return search_spaces.space("space_test_scale", 24)


def test_space_size_is_the_product_of_the_knobs():
    sp = small()
    assert [len(k) for k in sp.space_map.values()] == [8, 2, 6, 3]
    assert len(sp) == 8 * 2 * 6 * 3


def test_index_and_knob_values_round_trip_over_the_whole_space():
    sp = small()
    seen = set()
    for i, cfg in enumerate(sp):
        assert cfg.index == i
        assert sp.knob2point(cfg.knob_indices) == i
        values = tuple(json.dumps(v) for v in cfg.to_json()["knobs"].values())
        seen.add(values)
        assert ConfigEntity.from_json(sp, cfg.to_json()) == cfg
    assert len(seen) == len(sp)


def test_first_knob_varies_fastest():
    sp = small()
    assert sp.get(1)["tile"].size == (-1, 2)
    assert sp.get(1)["order"].perm == (0, 1)
    assert sp.get(8)["tile"].size == (-1, 1)
    assert sp.get(8)["order"].perm == (1, 0)


def test_json_is_plain_and_survives_a_dump():
    sp = small()
    cfg = sp.get(3 + 8 * (0 + 2 * (5 + 6 * 2)))
    data = json.loads(json.dumps(cfg.to_json()))
    assert data == {"template_version": search_spaces.get_template("space_test_scale").version,
                    "index": 275,
                    "knobs": {"tile": [-1, 4], "order": [0, 1], "ann": ["unroll", "vec"],
                              "mode": "c"}}
    back = ConfigEntity.from_json(sp, data)
    assert back == cfg and back.template_version == cfg.template_version


def test_sampling_is_seeded_without_duplicates():
    sp = small()
    a = sp.sample(50, seed=3)
    assert a == sp.sample(50, seed=3)
    assert a != sp.sample(50, seed=4)
    assert len(set(a)) == 50
    assert sorted(c.index for c in sp.sample(10_000, seed=0)) == list(range(len(sp)))


def test_huge_spaces_are_never_listed():
    sp = search_spaces.space("space_test_wide", 100)
    assert len(sp) == 10 ** 12
    first = next(iter(sp))
    assert first.index == 0 and first["k5"].val == 0
    last = sp.get(10 ** 12 - 1)
    assert [last[f"k{k}"].val for k in range(6)] == [99] * 6
    picks = sp.sample(1000, seed=1)
    assert len(set(picks)) == 1000


def test_neighbours_differ_in_exactly_one_knob_by_one_step():
    sp = small()
    for cfg in sp.sample(40, seed=5):
        near = cfg.neighbours()
        assert near and cfg not in near and len(set(near)) == len(near)
        for other in near:
            changed = [k for k, (a, b) in enumerate(zip(cfg.knob_indices, other.knob_indices))
                       if a != b]
            assert len(changed) == 1


def test_split_neighbours_move_one_part_to_the_adjacent_value():
    sp = small()
    cfg = sp.get(3)  # tile [-1, 4]; factors of 24: 1 2 3 4 6 8 12 24
    tiles = sorted(n["tile"].size for n in cfg.neighbours() if n["tile"] != cfg["tile"])
    assert tiles == [(-1, 3), (-1, 6)]


def test_equality_and_hash_follow_space_and_index():
    a, b = small(), small()
    assert a is b  # the registry builds a space once per arguments
    assert a.get(5) == a.get(5) and hash(a.get(5)) == hash(a.get(5))
    assert a.get(5) != a.get(6)
    other = search_spaces.space("space_test_scale", 12)
    assert other.get(5) != a.get(5)
    assert len({a.get(5), a.get(5), a.get(6)}) == 2


def test_space_building_mode_answers_with_valid_defaults():
    sp = small()
    # the fallback: the divisor of 24 nearest the host's lanes in log scale (16 lanes: 12)
    lanes = Target.resolve().vector_lanes
    nearest = min((d for d in range(1, 25) if 24 % d == 0),
                  key=lambda d: abs(math.log2(d / lanes)))
    assert sp["tile"].size == (-1, nearest)
    assert sp["mode"].val == "a"
    assert not sp.is_fallback  # as in AutoTVM, for templates that ask


def test_configs_read_their_knobs_by_name():
    cfg = small().get(17)
    assert set(cfg.entity_map) == {"tile", "order", "ann", "mode"}
    assert cfg["mode"] is cfg.entity_map["mode"]
    assert not cfg.is_fallback


def test_a_complete_space_takes_no_more_knobs():
    sp = small()
    with pytest.raises(SpaceError, match="knob 'late' is defined after the space was complete"):
        sp.define_knob("late", [1, 2])


def test_knob_names_are_checked_when_reading():
    sp = small()
    with pytest.raises(SpaceError, match=r"no knob 'tiles' \(did you mean 'tile'\?\)"):
        sp.get(0)["tiles"]


@pytest.mark.parametrize("index", [-1, 288, 10 ** 9])
def test_index_out_of_range_is_named(index):
    with pytest.raises(SpaceError, match=rf"config index {index} is out of range; the space "
                                         rf"has 288 configs \(0\.\.287\)"):
        small().get(index)


def test_a_non_int_index_is_refused():
    with pytest.raises(SpaceError, match="index must be an int, got '3'"):
        small().get("3")


def test_knob_positions_cover_every_combination():
    sp = small()
    dims = [range(len(k)) for k in sp.space_map.values()]
    assert sorted(sp.knob2point(p) for p in itertools.product(*dims)) == list(range(len(sp)))


def test_configs_survive_pickling():
    """Builders in other processes (Ray) receive configs by pickle."""
    cfg = small().get(42)
    back = pickle.loads(pickle.dumps(cfg))
    assert back == cfg and back.to_json() == cfg.to_json()
