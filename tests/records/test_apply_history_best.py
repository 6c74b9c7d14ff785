"""ApplyHistoryBest (records/apply_history_best.py): the dispatch context that gives a
template the best config of the tuning log. Logs are real SQLite files written from fake
MeasureResults; targets are spelled out so that the tiers do not depend on this host."""
import itertools
import sqlite3
import warnings

import numpy as np
import pytest

import compiler
import records
import search_spaces
import tuner
from compiler import graph
from compiler.graph.backend.lower import lower_function
from compiler.transform.pass_infra import PassContext
from records.apply_history_best import ApplyHistoryBest, FallbackWarning
from search_spaces import ApplyConfig, FallbackConfig, dispatch, instantiate

HERE = "llvm -mcpu=skylake-avx512 -mattr=+avx512f -num-cores=4"
SAME_CPU = "llvm -mcpu=skylake-avx512 -mattr=+avx512f -num-cores=8"
SAME_CPU_2 = "llvm -mcpu=skylake-avx512 -mattr=+avx512f -num-cores=2"
SAME_WIDTH = "llvm -mcpu=znver4 -mattr=+avx512f -num-cores=4"
NARROWER = "llvm -mcpu=haswell -mattr=+avx2 -num-cores=4"
SHAPE = (16, 16, 16)
OTHER_SHAPE = (16, 16, 32)
WORKLOAD = ("matmul", (*SHAPE, "float32"))

_timestamps = itertools.count(1)


def space(shape=SHAPE, target=HERE):
    """The matmul space on `target`: it depends on the target's vector unit (its
    register tiles), so a config is taken from the space of the target it is logged or
    applied for, never from the host's."""
    return search_spaces.space("matmul", *shape, target=target)


def log(db, target, costs, shape=SHAPE, error=tuner.MeasureErrorNo.NO_ERROR):
    """Log config `index` of matmul `shape` on `target` with mean `cost` for each item of
    `costs` ({index: seconds}); a cost of None is a measurement without a time."""
    task = tuner.Task("matmul", shape, target=target)
    inputs = [tuner.MeasureInput(task, space(shape, target).get(i)) for i in costs]
    results = [tuner.MeasureResult(() if c is None else (c, c), error, "", 0.01,
                                   float(next(_timestamps)), "testhost")
               for c in costs.values()]
    db.add(task, inputs, results)


@pytest.fixture
def db(tmp_path):
    with records.Database(tmp_path / "tune.db") as opened:
        yield opened


def best(db, target=HERE, workload=WORKLOAD):
    with ApplyHistoryBest(db, target=target) as ctx:
        return ctx.query(workload)


def test_the_lowest_mean_cost_wins(db):
    log(db, HERE, {5: 3e-6, 9: 1e-6, 2: 2e-6})
    assert best(db) == space().get(9)
    assert best(db, workload=tuner.Task("matmul", SHAPE, target=HERE)) == space().get(9)
    with ApplyHistoryBest(db, target=HERE):
        assert dispatch(WORKLOAD) == space().get(9)


def test_failed_measurements_are_never_applied(db):
    log(db, HERE, {5: 3e-6})
    log(db, HERE, {7: None}, error=tuner.MeasureErrorNo.COMPILE_ERROR)
    log(db, HERE, {8: None})                     # "no error" but no time either
    log(db, HERE, {6: None}, error=tuner.MeasureErrorNo.WRONG_ANSWER)
    db.conn.execute("UPDATE records SET mean_cost = 1e-9 WHERE config_index = 6")
    assert best(db) == space().get(5)


# each case: the targets logged -> the config applied on HERE; a farther tier always
# has the faster records, so only the tier order can pick the expected one
TIERS = [
    ({HERE: 4, SAME_CPU: 3, SAME_WIDTH: 2, NARROWER: 1}, 4),
    ({SAME_CPU: 3, SAME_WIDTH: 2, NARROWER: 1}, 3),
    ({SAME_WIDTH: 2, NARROWER: 1}, 2),
]


@pytest.mark.parametrize("logged, applied", TIERS, ids=["exact", "same-cpu", "same-width"])
def test_exact_target_then_same_cpu_then_same_vector_width(db, logged, applied):
    for target, index in logged.items():
        log(db, target, {index: index * 1e-6, 100 + index: 1.0})
    assert best(db) == space().get(applied)


def test_the_same_cpu_tier_takes_the_fastest_of_its_targets(db):
    log(db, SAME_CPU, {3: 3e-6})
    log(db, SAME_CPU_2, {2: 2e-6})
    assert best(db) == space().get(2)


def test_an_incompatible_target_falls_back_with_one_warning(db, tmp_path):
    log(db, NARROWER, {1: 1e-6})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ApplyHistoryBest(db, target=HERE):
            for _ in range(3):
                instantiate("matmul", *SHAPE)
                assert isinstance(dispatch(WORKLOAD), FallbackConfig)
    fallbacks = [w for w in caught if issubclass(w.category, FallbackWarning)]
    assert len(fallbacks) == 1
    text = str(fallbacks[0].message)
    assert "matmul(16, 16, 16, 'float32')" in text and str(tmp_path / "tune.db") in text
    assert "fallback config is used" in text
    assert fallbacks[0].filename == __file__     # points at the instantiate that asked


def test_each_untuned_workload_warns_once(db):
    with pytest.warns(FallbackWarning) as caught:
        with ApplyHistoryBest(db, target=HERE):
            for _ in range(2):
                instantiate("matmul", *SHAPE)
                instantiate("matmul", *OTHER_SHAPE)
    assert [str(w.message).split(":")[0] for w in caught] == [
        "matmul(16, 16, 16, 'float32')", "matmul(16, 16, 32, 'float32')"]


def test_records_of_another_template_version_are_never_applied(db):
    log(db, HERE, {1: 1e-6, 2: 2e-6})
    log(db, SAME_CPU, {3: 1e-7})
    db.conn.execute("UPDATE records SET template_version = '0ld' WHERE config_index IN (1, 3)")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert best(db) == space().get(2)
        db.conn.execute("UPDATE records SET template_version = '0ld'")
        assert best(db) is None
    # stale is expected after a template changes: left out by the query, not warned about
    assert [w.category for w in caught] == [FallbackWarning]


def test_a_record_that_no_longer_fits_is_skipped_with_a_warning(db):
    log(db, HERE, {1: 1e-6, 2: 2e-6})
    db.conn.execute("UPDATE records SET config = json_set(config, '$.pack_b', 7) "
                    "WHERE config_index = 1")
    with pytest.warns(UserWarning, match=r"no longer fits .*'pack_b'") as caught:
        assert best(db) == space().get(2)
    assert not [w for w in caught if issubclass(w.category, FallbackWarning)]


def test_a_damaged_record_is_a_records_error_naming_it(db):
    log(db, HERE, {1: 1e-6})
    db.conn.execute("UPDATE records SET config = '{pack_b: 1' WHERE config_index = 1")
    with pytest.raises(records.RecordsError, match=r"tune.db: record 1 cannot be read"):
        best(db)


def test_lookups_are_cached_for_the_life_of_the_context(db):
    log(db, HERE, {1: 1e-6})
    statements = []
    db.conn.set_trace_callback(statements.append)
    # built for HERE, as the dispatch below is: a lookup is kept per target built for
    # (its vector unit's space), and the host's may be another one
    with ApplyHistoryBest(db, target=HERE):
        with pytest.warns(FallbackWarning):
            instantiate("matmul", *OTHER_SHAPE, target=HERE)
        assert len(statements) == 3              # one query per tier, then the miss
        instantiate("matmul", *SHAPE, target=HERE)
        # an exact hit: its task, its confirmation (none), its best record
        assert len(statements) == 3 + 3
        instantiate("matmul", *SHAPE, target=HERE)
        instantiate("matmul", *OTHER_SHAPE, target=HERE)
        assert len(statements) == 3 + 3
        db.conn.set_trace_callback(None)
        db.conn.execute("DELETE FROM records")
        assert dispatch(WORKLOAD) == space().get(1)
    for sql in statements:                       # build time: no table is scanned
        plan = " | ".join(row[3] for row in db.conn.execute("EXPLAIN QUERY PLAN " + sql))
        assert "SCAN" not in plan, plan


def test_contexts_nest_like_dispatch_contexts(db):
    log(db, HERE, {1: 1e-6})
    other = space(OTHER_SHAPE).get(4)
    other_workload = ("matmul", (*OTHER_SHAPE, "float32"))
    with ApplyConfig(other):
        with ApplyHistoryBest(db, target=HERE):
            assert dispatch(WORKLOAD) == space().get(1)
            with pytest.warns(FallbackWarning):         # untuned: the outer context answers
                assert dispatch(other_workload) == other
            with ApplyConfig(space().get(2)):
                assert dispatch(WORKLOAD) == space().get(2)
            assert dispatch(WORKLOAD) == space().get(1)
        assert dispatch(WORKLOAD) == other
    assert isinstance(dispatch(WORKLOAD), FallbackConfig)


def test_instantiate_builds_the_best_config_and_matches_numpy(tmp_path):
    path = tmp_path / "tune.db"
    fallback = space(target="llvm").fallback().index
    chosen, slower = [i for i in (7, 11, 12) if i != fallback][:2]
    with records.Database(path) as db:
        log(db, "llvm", {chosen: 1e-6, slower: 2e-6})
    with ApplyHistoryBest(path):
        assert dispatch(WORKLOAD) == space(target="llvm").get(chosen)
        s, args = instantiate("matmul", *SHAPE)
    rng = np.random.default_rng(0)
    a, b = rng.random((16, 16), dtype="float32"), rng.random((16, 16), dtype="float32")
    c = np.full((16, 16), np.nan, "float32")
    compiler.build(s, args)(a, b, c)
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-5, atol=1e-5)


def test_a_path_is_opened_and_closed_an_open_database_is_left_open(db, tmp_path):
    log(db, HERE, {1: 1e-6})
    ctx = ApplyHistoryBest(tmp_path / "tune.db", target=HERE)
    with ctx:
        opened = ctx.database
        assert dispatch(WORKLOAD) == space().get(1)
    with pytest.raises(sqlite3.ProgrammingError):
        opened.conn.execute("SELECT 1")
    with ctx, pytest.warns(FallbackWarning):    # entered again: opened again
        dispatch(("matmul", (*OTHER_SHAPE, "float32")))
    best(db)                                     # a context over a given Database...
    assert db.conn.execute("SELECT COUNT(*) FROM records").fetchone() == (1,)  # ...leaves it open


def test_a_bad_log_is_refused_when_the_context_is_made(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n")
    with pytest.raises(records.RecordsError, match="notes.txt is not a SQLite database"):
        ApplyHistoryBest(text)
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(records.RecordsError, match="not an autosched log"):
        ApplyHistoryBest(other)
    missing = tmp_path / "tnue.db"
    with pytest.raises(records.RecordsError, match="tnue.db: no tuning log there"):
        ApplyHistoryBest(missing)
    assert not missing.exists()


def test_a_graph_kernel_gets_the_logged_config_of_its_anchor(db):
    """A conv2d + relu fused function lowered inside the context: its conv2d_nchw
    workload is the template's, so the logged best schedules it (the kernel's info says
    so); a layer with no record gets the fallback, with the FallbackWarning."""
    def kernel_info(channels):
        x = graph.var("x", shape=(1, channels, 9, 9))
        w = graph.var("w", shape=(8, channels, 3, 3))
        fn = graph.Function([x, w], graph.nn.relu(graph.nn.conv2d(x, w, padding=1)))
        mod = graph.passes.FuseOps()(graph.IRModule.from_expr(fn))
        return lower_function(mod["main"].body.op, "kernel")[2]

    args = (1, 4, 9, 9, 8, 3, 3, 1, 1)
    task = tuner.Task("conv2d_nchw", args, target=HERE)
    logged = search_spaces.space("conv2d_nchw", *args).get(17)
    db.add(task, [tuner.MeasureInput(task, logged)],
           [tuner.MeasureResult((1e-6, 1e-6), tuner.MeasureErrorNo.NO_ERROR, "", 0.01,
                                float(next(_timestamps)), "testhost")])
    with ApplyHistoryBest(db, target=HERE):
        info = kernel_info(4)
        assert info == {"template": "conv2d_nchw", "workload": f"conv2d_nchw{args!r}",
                        "config": "#17", "fallback": False, "record": info["record"],
                        "record_seconds": 1e-6, "record_gflops": info["record_gflops"],
                        "confirmed": False, "tier": "target"}  # the record applied: id, time
        assert info["record_gflops"] == pytest.approx(task.flop / 1e-6 / 1e9)
        with pytest.warns(FallbackWarning):
            assert kernel_info(5)["fallback"] is True


def test_a_model_gets_another_cpus_record_only_when_its_cpu_has_none(db):
    """A whole-model build: the layer's record of the same CPU is applied although
    another CPU's is faster; once the same CPU's is stale (another template version),
    the other CPU's is, and once that is stale too, the fallback."""
    args = (1, 4, 9, 9, 8, 3, 3, 1, 1)
    x = graph.var("x", shape=(1, 4, 9, 9))
    w = graph.const(np.ones((8, 4, 3, 3), "float32"))
    mod = graph.IRModule.from_expr(graph.Function([x], graph.nn.relu(
        graph.nn.conv2d(x, w, padding=1))))
    for target, index, seconds in ((SAME_CPU, 3, 2e-6), (SAME_WIDTH, 2, 1e-6)):
        task = tuner.Task("conv2d_nchw", args, target=target)
        db.add(task, [tuner.MeasureInput(task, search_spaces.space("conv2d_nchw",
                                                                   *args).get(index))],
               [tuner.MeasureResult((seconds, seconds), tuner.MeasureErrorNo.NO_ERROR, "",
                                    0.01, float(next(_timestamps)), "testhost")])

    def applied():
        with ApplyHistoryBest(db, target=HERE), warnings.catch_warnings(), \
                PassContext(opt_level=2):  # the NCHW kernel, whose records these are
            warnings.simplefilter("ignore", FallbackWarning)
            info = graph.build(mod).plan["steps"][0]["info"]
        return info["config"], info["fallback"]
    assert applied() == ("#3", False)
    db.conn.execute("UPDATE records SET template_version = '0ld' WHERE config_index = 3")
    assert applied() == ("#2", False)
    db.conn.execute("UPDATE records SET template_version = '0ld'")
    assert applied()[1] is True


def test_a_record_is_applied_in_the_space_of_the_target_built_for(db):
    """ApplyHistoryBest(target=T) takes T's records; a template built for another target
    (entered by instantiate) gets the record's knobs as a point of its own space, which
    differs with the vector unit (haswell's register tiles have at most 4 rows here,
    AVX-512's 16), not a config of T's space that instantiate refuses."""
    task = tuner.Task("matmul", SHAPE, target=NARROWER)
    logged = task.config_space.fallback()
    db.add(task, [tuner.MeasureInput(task, logged)],
           [tuner.MeasureResult((1e-6, 1e-6), tuner.MeasureErrorNo.NO_ERROR, "", 0.01,
                                float(next(_timestamps)), "testhost")])
    here = search_spaces.space("matmul", *SHAPE, target=HERE)
    assert here.fingerprint != task.config_space.fingerprint
    with ApplyHistoryBest(db, target=NARROWER) as ctx:
        instantiate("matmul", *SHAPE, target=HERE)
        with compiler.Target(HERE):
            applied = ctx.query(WORKLOAD)
        assert ctx.query(WORKLOAD) == logged  # outside any target: the context's own
    assert applied.space.fingerprint == here.fingerprint
    assert applied.to_json()["knobs"] == logged.to_json()["knobs"]
