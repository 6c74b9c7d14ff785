"""Every ONNX backend node test of the pinned onnx through autosched (onnx_node_check.py
says how it is run and judged), held to its expected outcome in onnx_node_tests.tsv: a
wrong answer or a crash always fails, and so does any outcome or reason that differs from
the table, so that the table moves only on purpose (benchmarks/onnx_conformance.py
--write-table writes it anew) and coverage only grows."""
from __future__ import annotations

import fcntl
import os
import pickle

import pytest

pytest.importorskip("onnx")

from onnx_node_check import TABLE, node_cases, read_table, run_case  # noqa: E402

EXPECTED = read_table()


@pytest.fixture(scope="session")
def cases(tmp_path_factory):
    """node_cases(), made once a run: they take seconds to make and a moment to unpickle,
    so under xdist the first worker to need them leaves them for the others."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None:
        return node_cases()
    path = tmp_path_factory.getbasetemp().parent / f"onnx-node-cases-{run}.pickle"
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other workers wait for the first one's
        if path.exists():
            return pickle.loads(path.read_bytes())
        made = node_cases()
        path.with_suffix(".part").write_bytes(pickle.dumps(made))
        path.with_suffix(".part").replace(path)
        return made


def test_the_table_lists_every_node_test_and_no_wrong_answer(cases):
    assert sorted(EXPECTED) == sorted(cases), (
        f"{TABLE.name} was made with another onnx: the test extra pins the one it was made "
        f"with")
    assert {o.kind for o in EXPECTED.values()} <= {"pass", "refused"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_node(name, cases):
    got = run_case(cases[name])
    assert got.kind not in ("wrong", "crash"), f"{got.kind}: {got.reason}"
    assert got == EXPECTED[name], (
        f"{name}: now {got.kind} ({got.reason}), the table says {EXPECTED[name].kind} "
        f"({EXPECTED[name].reason}); if on purpose: python benchmarks/onnx_conformance.py "
        f"--write-table")
