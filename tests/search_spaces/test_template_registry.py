"""The template registry (search_spaces/registry.py): source versions, signatures, and
one clear SpaceError for each kind of bad input."""
import pytest

import search_spaces
from compiler import te
from search_spaces import ConfigEntity, SpaceError, instantiate, template


@template("registry_test_v1")
def body_one(cfg, n: int):
    cfg.define_knob("k", [1, 2])
    return None, []


@template("registry_test_v2")
def body_two(cfg, n: int):
    cfg.define_knob("k", [1, 2, 3])
    return None, []


@template("registry_test_scale")
def scale(cfg, n: int, factor: float = 2.0, dtype: str = "float32"):
    A = te.placeholder((n,), name="A", dtype=dtype)
    B = te.compute((n,), lambda i: A[i] * factor, name="B")
    s = te.create_schedule(B.op)
    cfg.define_split("tile", n)
    cfg["tile"].apply(s, B, B.op.axis[0])
    cfg.define_knob("unroll", [0, 1])
    return s, [A, B]


# ------------------------------------------------------------------ versions

def test_version_is_a_short_source_hash_that_changes_with_the_body():
    assert len(body_one.version) == 12 and int(body_one.version, 16) >= 0
    assert body_one.version != body_two.version


def test_every_config_carries_the_template_version():
    cfg = search_spaces.space("registry_test_v1", 4).get(1)
    assert cfg.template_version == body_one.version
    assert cfg.to_json()["template_version"] == body_one.version


def test_templates_without_readable_source_are_versioned_by_their_code():
    made = {}
    for body in ("[1, 2]", "[1, 2, 3]"):
        exec(f"def fn(cfg):\n    cfg.define_knob('k', {body})\n    return None, []", made)
        made[body] = template(f"registry_test_exec_{len(body)}")(made["fn"])
    first, second = made["[1, 2]"], made["[1, 2, 3]"]
    assert len(first.version) == 12 and first.version != second.version


def test_the_version_changes_with_a_helper_or_a_constant_the_template_uses():
    versions = []
    for helper, limit in (("[1, 2]", 4), ("[1, 2, 3]", 4), ("[1, 2]", 8)):
        made = {"__name__": "registry_exec_helpers"}
        exec(f"LIMIT = {limit}\n"
             f"def helper(cfg):\n    cfg.define_knob('k', {helper})\n"
             f"def fn(cfg):\n    helper(cfg)\n    cfg.define_knob('n', [LIMIT])\n"
             f"    return None, []", made)
        versions.append(template(f"registry_test_helpers_{len(versions)}")(made["fn"]).version)
    assert len(set(versions)) == 3, versions


def test_registering_the_same_function_again_replaces_it():
    again = template("registry_test_v1")(body_one.fn)
    assert search_spaces.get_template("registry_test_v1") is again
    assert again.version == body_one.version


def test_another_function_under_a_taken_name_is_refused():
    def other(cfg):
        return None, []
    with pytest.raises(SpaceError, match="template 'registry_test_v1' is already registered "
                                         "by .*body_one"):
        template("registry_test_v1")(other)


def test_templates_lists_names_and_signatures():
    listed = search_spaces.templates()
    assert listed["registry_test_scale"] == "(n: int, factor: float = 2.0, dtype: str = 'float32')"
    assert list(listed) == sorted(listed)


def test_space_applies_defaults_so_workloads_agree():
    assert search_spaces.space("registry_test_scale", 8) is \
        search_spaces.space("registry_test_scale", 8, 2.0, "float32")


# ------------------------------------------------------------------ bad input

def test_unknown_template_suggests_the_nearest_name():
    with pytest.raises(SpaceError, match=r"unknown template 'registry_test_scal' "
                                         r"\(did you mean 'registry_test_scale'\?\)"):
        instantiate("registry_test_scal", 8)


@pytest.mark.parametrize("args, message", [
    ((), "missing a required argument: 'n'"),
    ((8, 2.0, "float32", 1), "too many positional arguments"),
    (("8",), "argument n must be int, got '8' \\(str\\)"),
    ((True,), "argument n must be int, got True \\(bool\\)"),
    ((8, "x"), "argument factor must be float, got 'x'"),
    ((8, 2.0, object()), "argument dtype must be a number, a string, None or a tuple"),
])
def test_wrong_arguments_name_the_template_and_its_signature(args, message):
    with pytest.raises(SpaceError, match=r"template 'registry_test_scale'\(n: int, factor: "
                                         r"float = 2\.0, dtype: str = 'float32'\): " + message):
        instantiate("registry_test_scale", *args)


def test_a_config_from_another_template_or_other_args_is_refused():
    mine = search_spaces.space("registry_test_scale", 8).get(1)
    with pytest.raises(SpaceError, match=r"config #1 is from the space of template "
                                         r"'registry_test_scale'\(8, 2\.0, 'float32'\).* not of "
                                         r"template 'registry_test_scale'\(16, 2\.0, 'float32'\)"):
        instantiate("registry_test_scale", 16, config=mine)
    with pytest.raises(SpaceError, match="not of template 'registry_test_v1'"):
        instantiate("registry_test_v1", 8, config=mine)


def test_a_config_must_be_a_config_entity():
    with pytest.raises(SpaceError, match="a config must be a ConfigEntity, got 3"):
        instantiate("registry_test_scale", 8, config=3)


def json_of(index=1):
    return search_spaces.space("registry_test_scale", 8).get(index).to_json()


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["knobs"].pop("unroll"), "JSON config lacks knob 'unroll'"),
    (lambda d: d["knobs"].update(unrol=1), r"names knob 'unrol', .* \(did you mean 'unroll'\?\)"),
    (lambda d: d["knobs"].update(unroll=2), r"knob 'unroll': 2 is not one of its values; "
                                            r"allowed: 0, 1"),
    (lambda d: d["knobs"].update(tile=[-1, 3]), r"knob 'tile': \[-1, 3\] is not one of"),
    (lambda d: d.update(template_version="0123456789ab"),
     "made for version 0123456789ab of template 'registry_test_scale'"),
    (lambda d: d.update(index=2), "says index 2, but its knob values are config 1"),
    (lambda d: d.pop("knobs"), "a JSON config is a dict with 'knobs'"),
])
def test_bad_json_configs_name_the_problem(edit, message):
    data = json_of()
    edit(data)
    with pytest.raises(SpaceError, match=message):
        ConfigEntity.from_json(search_spaces.space("registry_test_scale", 8), data)


def test_a_template_must_return_a_schedule_and_tensors():
    @template("registry_test_bad_return")
    def bad(cfg):
        return None

    with pytest.raises(SpaceError, match="must return \\(schedule, tensors\\), got None"):
        search_spaces.space("registry_test_bad_return")


def test_template_parameters_must_be_positional():
    def keyword_only(cfg, *, n):
        return None, []
    with pytest.raises(SpaceError, match="must take cfg and then positional parameters only"):
        template("registry_test_kw")(keyword_only)


def test_a_template_defining_a_knob_its_space_lacks_is_caught():
    calls = []

    @template("registry_test_unstable")
    def unstable(cfg):
        calls.append(1)
        cfg.define_knob("k" if len(calls) == 1 else "other", [1, 2])
        return None, []

    cfg = search_spaces.space("registry_test_unstable").get(0)
    with pytest.raises(SpaceError, match="has no knob 'other'"):
        instantiate("registry_test_unstable", config=cfg)


def test_a_space_defined_once_comes_from_the_disk_cache_without_running_the_template(
        tmp_path, monkeypatch):
    """A build whose kernels are cached still weighs its candidates' spaces: the space
    is kept on disk (with the compile cache), so a new process does not run the template
    to define the knobs again; off with the cache, and the same space either way."""
    from compiler import Target
    from search_spaces.registry import Template
    monkeypatch.delenv("AUTOSCHED_NO_CACHE", raising=False)
    monkeypatch.setenv("AUTOSCHED_CACHE_DIR", str(tmp_path / "cache"))
    tmpl = search_spaces.get_template("conv2d_nchwc")
    args = tmpl.bind((1, 16, 13, 13, 24, 3, 3, 1, 1, 8, 8))
    target = Target("llvm -mcpu=haswell")
    tmpl._spaces.clear()  # as in a new process
    first = tmpl.space(args, target)
    tmpl._spaces.clear()

    def run(*a, **k):
        raise AssertionError("the template was run")
    monkeypatch.setattr(Template, "run", run)
    again = tmpl.space(args, target)
    assert again is not first
    assert [k.describe() for k in again.space_map.values()] == \
        [k.describe() for k in first.space_map.values()]
    assert len(again) == len(first) and again.fallback() == first.fallback()
    tmpl._spaces.clear()
    monkeypatch.setenv("AUTOSCHED_NO_CACHE", "1")
    with pytest.raises(AssertionError, match="the template was run"):
        tmpl.space(args, target)
    tmpl._spaces.clear()
