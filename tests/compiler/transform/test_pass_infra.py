"""The pass infrastructure: IRModule, passes, Sequential, PassContext, instruments.

Passes here are tiny real ones over a lowered `B[i] = A[i] + 1`: they rename functions
or record that they ran, so each test can see which passes ran and in what order.
"""
from __future__ import annotations

import dataclasses
import io
import threading

import pytest

from compiler import lower, te
from compiler.ir.module import IRModule
from compiler.transform.pass_infra import (ModulePass, PassContext, PassInfo, PassInstrument,
                                           PassTimingInstrument, PrimFuncPass, PrintIR,
                                           Sequential, module_pass, prim_func_pass,
                                           register_pass_config)

register_pass_config("test.PassInfra.max_step", int, 4)
register_pass_config("test.PassInfra.mode", str, "fast")


def add_one(name="main"):
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    with PassContext():  # lower() runs passes; keep them away from the test's instruments
        return lower(te.create_schedule(B.op), [A, B], name=name)


def module(*names):
    return IRModule({n: add_one(n) for n in names or ("main",)})


def recorder(log, name, opt_level=0):
    """A module pass appending its name to `log` when it really runs."""
    def run(mod, ctx):
        log.append(name)
        return mod
    return ModulePass(PassInfo(name, opt_level), run)


def suffix(tag, opt_level=0):
    """A PrimFuncPass renaming every function f to f_<tag>."""
    return PrimFuncPass(PassInfo(f"Suffix{tag}", opt_level),
                        lambda f, mod, ctx: dataclasses.replace(f, name=f"{f.name}_{tag}"))


class Recorder(PassInstrument):
    def __init__(self, events, veto=()):
        self.events, self.veto = events, veto

    def enter_pass_ctx(self):
        self.events.append("enter")

    def exit_pass_ctx(self):
        self.events.append("exit")

    def should_run(self, mod, info):
        self.events.append(("should_run", info.name))
        return info.name not in self.veto

    def run_before_pass(self, mod, info):
        self.events.append(("before", info))

    def run_after_pass(self, mod, info):
        self.events.append(("after", info, sorted(mod.functions)))


# --------------------------------------------------------------------------- IRModule


def test_module_holds_functions_by_name_and_prints_them():
    mod = module("f", "g")
    assert "f" in mod and "h" not in mod
    assert mod["g"].name == "g"
    assert [name for name, _ in mod.functions.items()] == ["f", "g"]
    text = str(mod)
    assert "def f(A: float32[8], B: float32[8]):" in text and "def g(" in text
    assert text.count("B[i] = (A[i] + 1.0f)") == 2


def test_module_is_a_value():
    mod = IRModule.from_func(add_one("f"))
    other = mod.with_function(add_one("g"))
    assert list(mod.functions) == ["f"] and list(other.functions) == ["f", "g"]
    replaced = other.with_function(add_one("f"))
    assert replaced["f"] is not other["f"] and replaced["g"] is other["g"]
    with pytest.raises(TypeError):
        mod.functions["x"] = add_one("x")


def test_module_rejects_a_key_that_is_not_the_function_name():
    with pytest.raises(ValueError, match="'other'.*'main'"):
        IRModule({"other": add_one("main")})
    with pytest.raises(TypeError, match="'f'"):
        IRModule({"f": "not a function"})
    with pytest.raises(KeyError, match="'nope'"):
        module()["nope"]


# --------------------------------------------------------------------------- passes


def test_prim_func_pass_applies_to_every_function_and_keeps_attrs():
    mod = IRModule({"f": add_one("f"), "g": add_one("g")}, attrs={"target": "llvm"})
    out = suffix("x")(mod)
    assert sorted(out.functions) == ["f_x", "g_x"]
    assert out.attrs == {"target": "llvm"}
    assert sorted(mod.functions) == ["f", "g"]


def test_sequential_runs_passes_in_order():
    log = []
    seq = Sequential([recorder(log, "A"), suffix("1"), recorder(log, "B"), suffix("2")])
    out = seq(module())
    assert log == ["A", "B"]
    assert list(out.functions) == ["main_1_2"]
    assert seq.info == PassInfo("Sequential", 0)


def test_opt_level_gates_passes_and_required_pass_overrides_it():
    log = []
    seq = Sequential([recorder(log, "Cheap", 1), recorder(log, "Costly", 3)])
    seq(module())
    assert log == ["Cheap"]
    with PassContext(opt_level=3):
        seq(module())
    assert log == ["Cheap", "Cheap", "Costly"]
    with PassContext(opt_level=0, required_pass=["Costly"]):
        seq(module())
    assert log == ["Cheap", "Cheap", "Costly", "Costly"]


def test_disabled_pass_skips_a_single_pass_and_one_inside_a_sequential():
    log = []
    alone = recorder(log, "Alone")
    seq = Sequential([recorder(log, "First"), recorder(log, "Second")])
    with PassContext(disabled_pass=["Alone", "Second", "NoSuchPass"]):
        mod = module()
        assert alone(mod) is mod
        seq(mod)
    assert log == ["First"]
    with PassContext(disabled_pass=["Sequential"]):
        seq(mod)
    assert log == ["First"]


def test_disabled_wins_over_required():
    log = []
    with PassContext(required_pass=["P"], disabled_pass=["P"]):
        recorder(log, "P", opt_level=9)(module())
    assert log == []


def test_pass_returning_a_non_module_is_a_type_error():
    bad = ModulePass(PassInfo("Forgetful", 0), lambda mod, ctx: None)
    with pytest.raises(TypeError, match="Forgetful.*NoneType"):
        bad(module())
    bad_func = PrimFuncPass(PassInfo("Lossy", 0), lambda f, mod, ctx: f.body)
    with pytest.raises(TypeError, match="Lossy.*'main'"):
        bad_func(module())
    with pytest.raises(TypeError, match="IRModule.from_func"):
        suffix("x")(add_one())
    with pytest.raises(TypeError, match="item 1 of Sequential"):
        Sequential([suffix("x"), "not a pass"])


def test_prim_func_pass_may_not_merge_two_functions():
    same = PrimFuncPass(PassInfo("Same", 0), lambda f, mod, ctx: dataclasses.replace(f, name="x"))
    with pytest.raises(ValueError, match="Same.*'x'"):
        same(module("f", "g"))


# --------------------------------------------------------------------------- decorators


def test_decorator_on_functions_bare_and_with_arguments():
    @module_pass
    def Identity(mod, ctx):
        return mod

    @prim_func_pass(opt_level=3, name="Rename")
    def rename(func, mod, ctx):
        return dataclasses.replace(func, name="renamed")

    assert isinstance(Identity, ModulePass) and Identity.info == PassInfo("Identity", 0)
    assert isinstance(rename, PrimFuncPass) and rename.info == PassInfo("Rename", 3)
    assert list(rename(module()).functions) == ["main"]
    with PassContext(opt_level=3):
        assert list(rename(module()).functions) == ["renamed"]
    mod = module()
    assert module_pass(lambda m, ctx: m, name="Lambda")(mod) is mod


def test_decorator_on_classes_constructs_the_pass_from_init_arguments():
    @prim_func_pass(opt_level=1)
    class AddSuffix:
        """Append a suffix to every function name."""

        def __init__(self, suffix):
            self.suffix = suffix

        def transform_function(self, func, mod, ctx):
            return dataclasses.replace(func, name=func.name + self.suffix)

    @module_pass(required=("AddSuffix",))
    class CountFunctions:
        def __init__(self):
            self.seen = []

        def transform_module(self, mod, ctx):
            self.seen.append(len(mod.functions))
            return mod

    p = AddSuffix(suffix="_s")
    assert isinstance(p, PrimFuncPass) and p.info == PassInfo("AddSuffix", 1)
    assert AddSuffix.__name__ == "AddSuffix" and "suffix" in AddSuffix.__doc__
    counter = CountFunctions()
    assert counter.info == PassInfo("CountFunctions", 0, ("AddSuffix",))
    out = Sequential([p, counter])(module("f", "g"))
    assert sorted(out.functions) == ["f_s", "g_s"]
    assert counter.pass_func.__self__.seen == [2]


def test_decorating_a_class_without_the_method_is_a_type_error():
    with pytest.raises(TypeError, match="Empty.*transform_module"):
        @module_pass
        class Empty:
            pass


# --------------------------------------------------------------------------- PassContext


def test_default_context_and_nesting_restores_the_outer_one():
    default = PassContext.current()
    assert default.opt_level == 2
    with PassContext(opt_level=3) as outer:
        assert PassContext.current() is outer
        with PassContext(opt_level=0) as inner:
            assert PassContext.current() is inner
        assert PassContext.current() is outer
    assert PassContext.current() is default


def test_context_is_restored_when_a_pass_raises():
    default = PassContext.current()

    def boom(mod, ctx):
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError):
        with PassContext(opt_level=3):
            ModulePass(PassInfo("Boom", 0), boom)(module())
    assert PassContext.current() is default


def test_current_context_is_per_thread():
    seen = {}

    def worker():
        seen["level"] = PassContext.current().opt_level

    with PassContext(opt_level=0):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert PassContext.current().opt_level == 0
    assert seen["level"] == 2


def test_pass_receives_the_current_context_and_its_config():
    got = []
    probe = ModulePass(PassInfo("Probe", 0), lambda mod, ctx: got.append(
        (ctx.get_config("test.PassInfra.max_step"), ctx.get_config("test.PassInfra.mode")))
        or mod)
    probe(module())
    with PassContext(config={"test.PassInfra.max_step": 16}):
        probe(module())
    assert got == [(4, "fast"), (16, "fast")]


def test_config_errors_name_the_key():
    with pytest.raises(ValueError, match="'test.PassInfra.max_stp'.*'test.PassInfra.max_step'"):
        PassContext(config={"test.PassInfra.max_stp": 1})
    with pytest.raises(ValueError, match="'zzz'.*no registered key"):
        PassContext(config={"zzz": 1})
    with pytest.raises(TypeError, match="'test.PassInfra.max_step'.*int.*str"):
        PassContext(config={"test.PassInfra.max_step": "16"})
    with pytest.raises(ValueError, match="'test.PassInfra.mod'.*'test.PassInfra.mode'"):
        PassContext().get_config("test.PassInfra.mod")


def test_register_pass_config_checks_default_and_conflicts():
    register_pass_config("test.PassInfra.max_step", int, 4)
    with pytest.raises(ValueError, match="already registered"):
        register_pass_config("test.PassInfra.max_step", int, 5)
    with pytest.raises(TypeError, match="'test.PassInfra.bad'"):
        register_pass_config("test.PassInfra.bad", int, "0")


# --------------------------------------------------------------------------- instruments


def test_instruments_are_called_in_order_with_the_pass_info():
    events = []
    first, second = suffix("1"), suffix("2")
    seq = Sequential([first, second], name="Pipeline")
    with PassContext(instruments=[Recorder(events)]):
        assert events == ["enter"]
        seq(module())
    assert events == [
        "enter",
        ("should_run", "Pipeline"), ("before", seq.info),
        ("should_run", "Suffix1"), ("before", first.info), ("after", first.info, ["main_1"]),
        ("should_run", "Suffix2"), ("before", second.info), ("after", second.info, ["main_1_2"]),
        ("after", seq.info, ["main_1_2"]),
        "exit",
    ]


def test_should_run_veto_skips_the_pass_but_every_instrument_is_asked():
    log, events_a, events_b = [], [], []
    instruments = [Recorder(events_a, veto=("Vetoed",)), Recorder(events_b)]
    with PassContext(instruments=instruments):
        Sequential([recorder(log, "Vetoed"), recorder(log, "Kept")])(module())
    assert log == ["Kept"]
    assert ("should_run", "Vetoed") in events_b
    assert not any(e[0] == "before" and e[1].name == "Vetoed" for e in events_a[1:-1])


def test_gated_passes_do_not_reach_the_instruments():
    events = []
    with PassContext(opt_level=0, disabled_pass=["Off"], instruments=[Recorder(events)]):
        recorder([], "High", opt_level=1)(module())
        recorder([], "Off")(module())
    assert events == ["enter", "exit"]


def test_timing_instrument_records_every_pass_run_and_renders():
    timing = PassTimingInstrument()
    inner = Sequential([suffix("b")], name="Inner")
    with PassContext(instruments=[timing], disabled_pass=["Suffixc"]):
        Sequential([suffix("a"), inner, suffix("c")])(module())
    assert [name for name, _ in timing.entries] == ["Sequential", "Suffixa", "Inner", "Suffixb"]
    assert all(seconds > 0 for _, seconds in timing.entries)
    lines = timing.render().splitlines()
    assert len(lines) == 6
    assert lines[1].startswith("Sequential") and lines[2].startswith("  Suffixa")
    assert lines[4].startswith("    Suffixb")
    assert lines[-1].startswith("total") and lines[-1].split()[-1] == lines[1].split()[-1]


def test_print_ir_prints_the_header_and_every_function():
    buf = io.StringIO()
    mod = module("f", "g")
    assert PrintIR("after lowering", file=buf)(mod) is mod
    text = buf.getvalue()
    assert text.startswith("after lowering\n")
    assert "def f(A: float32[8], B: float32[8]):" in text and "def g(" in text


def test_print_ir_defaults_to_stdout_inside_a_sequential(capsys):
    Sequential([suffix("x"), PrintIR(), suffix("y")])(module())
    out = capsys.readouterr().out
    assert out.startswith("def main_x(") and "main_x_y" not in out
    assert PrintIR().info == PassInfo("PrintIR", 0)
