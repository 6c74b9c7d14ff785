"""On a Ray cluster, candidates are timed only on a node that advertises the target's
timing resource, while builds may run anywhere (ray.cluster_utils.Cluster: two nodes on
this machine, only the second one may time). The cluster replaces the session's local
Ray (own_ray: these tests run last), and both tests share it."""
from __future__ import annotations

import pytest

from compiler import Target
from tuner import MeasureErrorNo, MeasureInput, Measurer, Task
from tuner.ray_session import timing_resource


pytestmark = pytest.mark.own_ray


@pytest.fixture(scope="module")
def two_node_cluster():
    import ray
    from ray.cluster_utils import Cluster
    ray.shutdown()  # the session's local Ray: own_ray tests run after every test that uses it
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    timing_node = cluster.add_node(num_cpus=1, resources={timing_resource(Target("llvm")): 1})
    cluster.wait_for_nodes()
    yield cluster, timing_node
    ray.shutdown()
    cluster.shutdown()


def test_timing_happens_only_on_the_node_with_the_timing_resource(two_node_cluster):
    cluster, timing_node = two_node_cluster
    task = Task("matmul", (16, 32, 8))
    inputs = [MeasureInput(task, c) for c in task.config_space.sample(4, seed=1)]
    with Measurer(address=cluster.address, repeat=1, min_repeat_ms=0) as m:
        results = m.measure(inputs)
    assert [r.error_no for r in results] == [MeasureErrorNo.NO_ERROR] * 4
    assert {r.host.rsplit("/", 1)[1] for r in results} == {timing_node.node_id[:8]}
    assert cluster.head_node.node_id[:8] != timing_node.node_id[:8]


def test_a_cluster_without_a_timing_node_is_a_clear_error(two_node_cluster):
    cluster, _ = two_node_cluster
    task = Task("matmul", (16, 32, 8), target="llvm -mcpu=skylake-avx512")
    with Measurer(address=cluster.address) as m:
        with pytest.raises(RuntimeError, match="autosched-timing-skylake-avx512"):
            m.measure([MeasureInput(task, task.config_space.fallback())])
