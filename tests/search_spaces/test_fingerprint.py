"""Template versions that follow the generated code (search_spaces/fingerprint.py): the
recorded fingerprints hold, a schedule written elsewhere keeps its fingerprint, a
schedule that generates other code changes it."""
from __future__ import annotations

import inspect

import pytest

import search_spaces
from compiler import te
from search_spaces import template
from search_spaces.fingerprint import fingerprint, main, probed
from search_spaces.registry import recorded_versions

RECORDED = recorded_versions()
OURS = sorted(name for name in search_spaces.templates()
              if search_spaces.get_template(name).fn.__module__.startswith("search_spaces."))


def test_every_template_of_the_package_has_probes_and_a_recorded_version():
    assert OURS, "no template registered"
    missing = [n for n in OURS if not search_spaces.get_template(n).probes or n not in RECORDED]
    assert not missing, f"add probes= to these templates and run `python -m " \
                        f"search_spaces.fingerprint --update`: {missing}"
    assert all(search_spaces.get_template(n).version == RECORDED[n] for n in OURS)


@pytest.mark.parametrize("name", OURS)
def test_the_recorded_fingerprint_is_the_generated_codes(name):
    """Fails when a change alters the code a template generates: that is when its
    records go stale, so versions.json must be rewritten (the message says how)."""
    now = fingerprint(search_spaces.get_template(name))
    assert now == RECORDED[name], (
        f"template {name!r} now generates other code ({RECORDED[name]} -> {now}); if "
        f"that is meant, its logged records are stale: run `python -m "
        f"search_spaces.fingerprint --update`")


def _tiled(cfg, n, inner_wish):
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    cfg.define_knob("inner", [inner_wish, 4])
    i, j = s[B].op.axis
    jo, ji = s[B].split(j, factor=cfg["inner"].val)
    s[B].vectorize(ji)
    return s, [A, B]


def test_a_schedule_moved_into_another_function_keeps_its_fingerprint_and_other_code_changes_it():
    def moved(cfg, n: int):
        """The same schedule, written out again (its source differs)."""
        A = te.placeholder((n, n), name="A")
        B = te.compute((n, n), lambda i, j: A[i, j] * 2.0, name="B")
        s = te.create_schedule(B.op)
        cfg.define_knob("inner", [8, 4])
        i, j = s[B].op.axis
        _, ji = s[B].split(j, factor=cfg["inner"].val)
        s[B].vectorize(ji)
        return s, [A, B]

    def first(cfg, n: int):
        return _tiled(cfg, n, 8)

    def other(cfg, n: int):
        return _tiled(cfg, n, 2)  # another split: other code

    prints = {}
    for label, fn in [("first", first), ("moved", moved), ("other", other)]:
        fn.__name__ = f"fingerprint_test_{label}"
        tmpl = template(f"fingerprint_test_{label}", probes=[(13,)])(fn)
        prints[label] = fingerprint(tmpl)
    assert inspect.getsource(first) != inspect.getsource(moved)
    assert prints["first"] == prints["moved"]
    assert prints["other"] != prints["first"]


def test_a_template_without_probes_keeps_its_source_version():
    tmpl = template("fingerprint_test_plain")(lambda cfg, n: _tiled(cfg, n, 8))
    assert not tmpl.probes and len(tmpl.version) == 12
    with pytest.raises(ValueError, match="has no probes"):
        fingerprint(tmpl)


def test_the_command_reports_a_difference_and_exits_1(capsys, monkeypatch):
    monkeypatch.setattr("search_spaces.fingerprint.probed",
                        lambda: {"dense": probed()["dense"]})
    monkeypatch.setattr("search_spaces.fingerprint.recorded_versions",
                        lambda: {"dense": "000000000000"})
    assert main([]) == 1
    assert f"dense: 000000000000 -> {RECORDED['dense']}" in capsys.readouterr().out
