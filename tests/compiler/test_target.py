"""Target's vector unit, found from the LLVM CPU and its features, and its text form,
which names the features where they are not the CPU's own."""
import pytest

from compiler import Target


@pytest.mark.parametrize("spec, lanes, registers, fma", [
    ("llvm -mcpu=haswell", 8, 16, True),
    ("llvm -mcpu=znver3", 8, 16, True),
    ("llvm -mcpu=skylake-avx512", 16, 32, True),
    ("llvm -mcpu=znver5", 16, 32, True),
    ("llvm -mcpu=skylake-avx512 -mattr=-avx512f", 8, 16, True),
    ("llvm -mcpu=x86-64", 4, 16, False),
    ("llvm -mcpu=x86-64 -mattr=+avx2,+fma", 8, 16, True),
    ("llvm -mcpu=cortex-a72 -mtriple=aarch64-linux-gnu", 4, 32, True),
])
def test_the_vector_unit_comes_from_the_cpu_and_its_features(spec, lanes, registers, fma):
    t = Target(spec)
    assert (t.vector_lanes, t.vector_registers, t.has_fma) == (lanes, registers, fma)
    assert t.vector_bits == 32 * lanes


def test_features_that_change_code_are_in_the_text_form():
    native = Target("llvm -mcpu=skylake-avx512 -num-cores=2")
    narrowed = Target("llvm -mcpu=skylake-avx512 -mattr=-avx512f -num-cores=2")
    assert str(native) == "llvm -mcpu=skylake-avx512 -num-cores=2"
    assert str(narrowed) == "llvm -mcpu=skylake-avx512 -mattr=-avx512f -num-cores=2"
    assert native != narrowed and Target(str(narrowed)) == narrowed
    # one spelling per meaning: order and repeats do not matter, the last one wins
    assert Target("llvm -mcpu=haswell -mattr=+fma,-avx2,+avx2") == \
        Target("llvm -mcpu=haswell -mattr=+avx2,+fma")


def test_the_host_spelled_out_is_the_host():
    host = Target("llvm")
    spelled = Target(f"llvm -mcpu={host.mcpu} -mtriple={host.mtriple} "
                     f"-mattr={host.features} -num-cores={host.num_cores}")
    assert spelled == host and str(spelled) == str(host) and hash(spelled) == hash(host)
    assert Target(f"llvm -mcpu={host.mcpu} -num-cores={host.num_cores}") == host
