"""JSON lines export / import and merging of tuning logs (records/jsonl.py), on real
SQLite files: what goes out comes back identical, bad lines are named by number, and
nothing in a line is ever evaluated."""
from __future__ import annotations

import dataclasses
import io
import json

import pytest

import compiler
import records
from records import jsonl, schema
from tuner import MeasureErrorNo, MeasureInput, MeasureResult, Task

STALE_VERSION = "0ld0ld0ld0ld"
PICKLE = "cos\nsystem\n(S'touch PWNED'\ntR."
IMPORT = "__import__('os').system('touch PWNED')"


@pytest.fixture(scope="module")
def task():
    return Task("matmul", (64, 64, 64))


@pytest.fixture(scope="module")
def small_task():
    return Task("matmul", (32, 32, 32))


def _measured(task, costs, start=0, error=MeasureErrorNo.NO_ERROR, msg=""):
    """MeasureInputs and MeasureResults for the configs task.config_space.sample(...)
    gives (one per cost tuple), with distinct timestamps from `start`."""
    configs = task.config_space.sample(start + len(costs), seed=1)[start:]
    inputs = [MeasureInput(task, c) for c in configs]
    results = [MeasureResult(cost, error, msg, 0.25, 1.7e9 + start + i, "node1")
               for i, cost in enumerate(costs)]
    return inputs, results


def _make_stale(db, record_id, knobs):
    """Turn a record into one an older template version wrote (knobs that no longer
    fit), with the uid that version would have given it."""
    row = db.conn.execute("SELECT r.timestamp, r.host, r.costs, r.error_no, t.workload_key, "
                          "t.target FROM records r JOIN tasks t ON t.id = r.task_id "
                          "WHERE r.id = ?", (record_id,)).fetchone()
    config = json.dumps(knobs)
    uid = schema.record_uid(row[4], row[5], config, row[0], row[1], row[2], row[3])
    db.conn.execute("UPDATE records SET template_version = ?, config = ?, uid = ? "
                    "WHERE id = ?", (STALE_VERSION, config, uid, record_id))


def _log(path, task, small_task):
    """A log with a run: good records, a failure and a stale record (the cheapest) of
    `task`, and two good records of `small_task`."""
    db = records.Database(path)
    run = db.start_run("random", {"n_trial": 8})
    db.add(task, *_measured(task, [(3e-4, 3.2e-4), (1e-4,), (2e-4, 2e-4)]),
           tuner="random", run_id=run)
    db.add(task, *_measured(task, [()], start=3, error=MeasureErrorNo.COMPILE_ERROR,
                            msg="boom"), tuner="random", run_id=run)
    db.add(task, *_measured(task, [(1e-6,)], start=4))
    _make_stale(db, db.count(), {"tile_x": [-1, 99], "old_knob": 3})
    db.add(small_task, *_measured(small_task, [(5e-5,), (4e-5,)]))
    db.end_run(run, 4, 5.2)
    return db


def _fields(db, task):
    """Every field of every record of `task` except the ids the log gives."""
    return [{k: v for k, v in dataclasses.asdict(r).items() if k not in ("id", "run_id")}
            for r in db.records(task)]


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_round_trip_gives_identical_records(tmp_path, task, small_task):
    src = _log(tmp_path / "src.db", task, small_task)
    out = tmp_path / "out.jsonl"
    assert jsonl.export_jsonl(src, out) == 7
    line = _lines(out)[0]
    assert line["autosched_record"] == 1 and line["task"]["args"] == [64, 64, 64, "float32"]
    assert line["run"]["tuner"] == "random" and line["run"]["options"] == {"n_trial": 8}

    dst = records.Database(tmp_path / "dst.db")
    report = jsonl.import_jsonl(dst, out)
    assert (report.imported, report.duplicates, report.errors) == (7, 0, [])
    for t in (task, small_task):
        assert _fields(dst, t) == _fields(src, t)
    kinds = {(r.error_name, r.template_version == task.template.version, r.run_id is None)
             for r in dst.records(task)}
    assert kinds == {("NO_ERROR", True, False), ("COMPILE_ERROR", True, False),
                     ("NO_ERROR", False, True)}
    run = dst.conn.execute("SELECT tuner, trials, best_gflops, options FROM runs").fetchall()
    assert run == [("random", 4, 5.2, '{"n_trial": 8}')]


def test_reimport_and_export_into_the_same_log_add_nothing(tmp_path, task, small_task):
    src = _log(tmp_path / "src.db", task, small_task)
    out = tmp_path / "out.jsonl"
    jsonl.export_jsonl(src, out)
    assert jsonl.import_jsonl(src, out) == jsonl.ImportReport(0, 7, [])
    assert jsonl.import_jsonl(src, io.StringIO(out.read_text())) == \
        jsonl.ImportReport(0, 7, [])
    dst = records.Database(tmp_path / "dst.db")
    jsonl.import_jsonl(dst, out)
    assert jsonl.import_jsonl(dst, out) == jsonl.ImportReport(0, 7, [])
    assert dst.count() == src.count() == 7
    assert dst.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1


def test_best_only_exports_the_best_current_record_of_each_task(tmp_path, task, small_task):
    src = _log(tmp_path / "src.db", task, small_task)
    # the registered template's version decides, not the one the task row last saw
    src.conn.execute("UPDATE tasks SET template_version = ?", (STALE_VERSION,))
    buf = io.StringIO()
    assert jsonl.export_jsonl(src, buf, best_only=True) == 2
    lines = [json.loads(line) for line in buf.getvalue().splitlines()]
    assert [line["task"]["workload_key"] for line in lines] == \
        [task.workload_key, small_task.workload_key]
    # the stale record is cheaper (1e-6) but made with another template version
    assert [line["result"]["mean_cost"] for line in lines] == [1e-4, 4e-5]
    assert lines[0]["config"]["knobs"] == src.best(task).knobs


def test_export_of_one_task(tmp_path, task, small_task):
    src = _log(tmp_path / "src.db", task, small_task)
    buf = io.StringIO()
    assert jsonl.export_jsonl(src, buf, task=small_task) == 2
    assert jsonl.export_jsonl(src, buf, best_only=True, task=task) == 1
    assert jsonl.export_jsonl(src, buf, task=Task("matmul", (16, 16, 16))) == 0
    keys = [json.loads(line)["task"]["workload_key"] for line in buf.getvalue().splitlines()]
    assert keys == [small_task.workload_key] * 2 + [task.workload_key]


def test_a_hand_written_line_is_identified_as_the_log_does(tmp_path, task):
    db = records.Database(tmp_path / "db.db")
    db.add(task, *_measured(task, [(1, 2)]))
    buf = io.StringIO()
    jsonl.export_jsonl(db, buf)
    line = json.loads(buf.getvalue())
    line["result"]["costs"] = [1, 2]  # integers: the same costs as the log's floats
    report = jsonl.import_jsonl(db, io.StringIO(json.dumps(line)))
    assert (report.imported, report.duplicates) == (0, 1)


def _bad_file(tmp_path, task, small_task):
    """A JSONL file whose lines 1, 8 and 12 are valid, line 9 is blank and every other
    line is bad in one way; returns (path, {line number: words its error must contain})."""
    src = _log(tmp_path / "src.db", task, small_task)
    buf = io.StringIO()
    jsonl.export_jsonl(src, buf)
    good = [json.loads(line) for line in buf.getvalue().splitlines()]
    current = good[0]

    def edit(change):
        line = json.loads(json.dumps(current))
        change(line)
        return json.dumps(line)

    def knob(line):
        line["config"]["knobs"]["tile_x"] = [-1, 7, 7]

    lines = {
        1: json.dumps(good[1]),
        2: '{"autosched_record": 1, "task": ',
        3: edit(lambda line: line["result"].pop("timestamp")),
        4: edit(lambda line: line["task"].update(template="no_such_template")),
        5: edit(knob),
        6: edit(lambda line: line["result"].update(costs="fast")),
        7: edit(lambda line: line["result"].update(error_no=42)),
        8: json.dumps(good[2]),
        9: "",
        10: edit(lambda line: line["config"].update(config_index=True)),
        11: edit(lambda line: line["task"].update(args=[64, 64])),
        12: json.dumps(good[6]),
        13: edit(lambda line: line.update(autosched_record=2)),
        14: "[1, 2, 3]",
        15: edit(lambda line: line["task"].update(workload_key='["matmul", [1, 2, 3]]')),
        16: "\udcff{}",
    }
    expected = {2: "not JSON", 3: "missing field result.timestamp",
                4: "unknown template 'no_such_template'", 5: "tile_x",
                6: "result.costs must be a list", 7: "error_no 42",
                10: "config.config_index must be an integer",
                11: "missing a required argument: 'K'", 13: "format 2",
                14: "not an autosched record", 15: "does not match its template",
                16: "not UTF-8"}
    path = tmp_path / "bad.jsonl"
    text = "\n".join(lines[n] for n in sorted(lines)) + "\n"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))  # line 16: a stray byte
    return path, expected


def test_bad_lines_are_reported_by_number_and_the_rest_imported(tmp_path, task, small_task):
    path, expected = _bad_file(tmp_path, task, small_task)
    dst = records.Database(tmp_path / "dst.db")
    report = jsonl.import_jsonl(dst, path)
    assert [n for n, _ in report.errors] == sorted(expected)
    for n, why in report.errors:
        assert expected[n] in why, (n, why)
    assert (report.imported, report.duplicates) == (3, 0)
    assert len(dst.records(task)) == 2 and len(dst.records(small_task)) == 1


def test_strict_import_of_a_bad_file_imports_nothing(tmp_path, task, small_task):
    path, _ = _bad_file(tmp_path, task, small_task)
    dst = records.Database(tmp_path / "dst.db")
    with pytest.raises(records.RecordsError,
                       match=r"bad\.jsonl: 12 bad line\(s\), nothing imported: line 2: "
                             r"not JSON.*line 3: missing.*\(and 7 more\)"):
        jsonl.import_jsonl(dst, path, strict=True)
    assert dst.count() == 0


def test_a_missing_file_is_named(tmp_path):
    db = records.Database(tmp_path / "db.db")
    with pytest.raises(records.RecordsError, match="nope.jsonl: no such file"):
        jsonl.import_jsonl(db, tmp_path / "nope.jsonl")
    with pytest.raises(records.RecordsError, match="nope.db: no such tuning log"):
        jsonl.merge(db, tmp_path / "nope.db")
    assert not (tmp_path / "nope.db").exists()


def test_code_in_a_line_is_only_data(tmp_path, monkeypatch, task, small_task):
    monkeypatch.chdir(tmp_path)
    src = _log(tmp_path / "src.db", task, small_task)
    buf = io.StringIO()
    jsonl.export_jsonl(src, buf, task=task)
    line = json.loads(buf.getvalue().splitlines()[0])
    line["result"].update(error_msg=IMPORT, host=PICKLE, timestamp=1.8e9)
    stale = json.loads(json.dumps(line))
    stale["config"].update(template_version=STALE_VERSION, knobs={"tile_x": IMPORT})
    in_number = json.loads(json.dumps(line))
    in_number["result"]["build_time"] = PICKLE
    path = tmp_path / "evil.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in (line, stale, in_number)) + "\n")

    dst = records.Database(tmp_path / "dst.db")
    report = jsonl.import_jsonl(dst, path)
    assert report.imported == 2
    assert report.errors == [(3, f"result.build_time must be a number or null, got "
                                 f"{json.dumps(PICKLE)}")]
    got = dst.records(task)
    assert [(r.error_msg, r.host) for r in got] == [(IMPORT, PICKLE)] * 2
    assert got[1].knobs == {"tile_x": IMPORT}
    assert not (tmp_path / "PWNED").exists()


def test_merge_gives_the_union_once(tmp_path, task):
    a = records.Database(tmp_path / "a.db")
    b = records.Database(tmp_path / "b.db")
    a.start_run("grid")  # so that b's run 1 must become another id in a
    costs = [(1e-4,), (2e-4,), (3e-4,), (4e-4,), (5e-4,), (6e-4,)]
    inputs, results = _measured(task, costs)
    a.add(task, inputs[:4], results[:4])
    b_run = b.start_run("xgb")
    b.add(task, inputs[2:], results[2:], tuner="xgb", run_id=b_run)

    assert jsonl.merge(a, b.path) == 2
    merged = a.records(task)
    assert sorted(r.mean_cost for r in merged) == sorted(c[0] for c in costs)
    runs = dict(a.conn.execute("SELECT id, tuner FROM runs").fetchall())
    assert [runs[r.run_id] for r in merged[4:]] == ["xgb", "xgb"]
    assert jsonl.merge(a, b.path) == 0
    assert jsonl.merge(a, a.path) == 0
    assert a.count() == 6 and len(runs) == 2
    assert a.conn.execute("SELECT COUNT(*) FROM tasks").fetchone()[0] == 1


def test_records_move_through_files_by_path(tmp_path, task, small_task):
    source = _log(tmp_path / "a.db", task, small_task)
    out = tmp_path / "a.jsonl"
    assert records.export_jsonl(source, out) == len(_lines(out))
    with records.Database(tmp_path / "b.db") as copy:
        report = records.import_jsonl(copy, out)
        assert report.imported == len(_lines(out)) and not report.errors
        assert _fields(copy, task) == _fields(source, task)
    with records.Database(tmp_path / "c.db") as merged:
        assert records.merge(merged, tmp_path / "a.db") == len(_lines(out))
        assert records.merge(merged, tmp_path / "a.db") == 0


def test_records_of_another_vector_unit_import_in_their_targets_space(tmp_path):
    """A log tuned for AVX2 (haswell: its register tiles bounded by 16 ymm registers) is
    checked against the space of its own target, not the importing host's: its configs'
    indices and knobs are points of the haswell space, which differs from AVX-512's."""
    haswell = Task("matmul", (64, 64, 64), target="llvm -mcpu=haswell -num-cores=2")
    avx512 = Task("matmul", (64, 64, 64), target="llvm -mcpu=skylake-avx512 -num-cores=2")
    assert haswell.config_space.fingerprint != avx512.config_space.fingerprint
    src = records.Database(tmp_path / "src.db")
    src.add(haswell, *_measured(haswell, [(1e-4,), (2e-4,), (3e-4,)]))
    out = tmp_path / "out.jsonl"
    jsonl.export_jsonl(src, out)
    dst = records.Database(tmp_path / "dst.db")
    with compiler.Target(avx512.target):  # whatever target is entered where it is read
        report = jsonl.import_jsonl(dst, out)
    assert (report.imported, report.errors) == (3, [])
    assert _fields(dst, haswell) == _fields(src, haswell)
