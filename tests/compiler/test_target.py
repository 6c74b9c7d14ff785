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
    ("llvm -mcpu=skylake-avx512 -mtriple=i686-linux-gnu", 16, 8, True),  # 32-bit: 8 zmm
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


def test_the_hosts_text_read_back_is_the_host_with_its_features():
    """str(Target("llvm")) leaves the host's features out; read back (a record's target,
    a space built for it) it must mean the host's features, not LLVM's table for the CPU's
    name, which differs where a VM hides some (AVX-512 on a Zen 4 guest)."""
    host = Target("llvm")
    read_back = Target(str(host))
    assert read_back.features == host.features
    assert read_back.vector_unit == host.vector_unit


def test_another_triple_is_in_the_text_form():
    """32-bit x86 has 8 vector registers where x86-64 has 32: a target of another triple
    is another target, and its text read back is it."""
    x86_64 = Target("llvm -mcpu=skylake-avx512 -num-cores=2")
    i686 = Target("llvm -mcpu=skylake-avx512 -mtriple=i686-linux-gnu -num-cores=2")
    assert str(i686) == "llvm -mcpu=skylake-avx512 -mtriple=i686-linux-gnu -num-cores=2"
    assert i686 != x86_64 and "-mtriple" not in str(x86_64)
    assert Target(str(i686)) == i686 and Target(str(i686)).vector_unit == i686.vector_unit
