"""A 3x3, stride 1 convolution has two packed forms, Winograd's and the direct kernel:
untuned it runs by Winograd, and inside ApplyHistoryBest the build takes the faster
logged one (or the only one logged), the model computing right either way."""
import numpy as np
import pytest

from compiler import graph
from compiler.graph.ir.reference import evaluate
from test_packed_history_best import build_logged, log

WINOGRAD = ("conv2d_winograd_nchwc", (1, 16, 14, 14, 16, 1, 16, 16, 2))
DIRECT = ("conv2d_nchwc", (1, 16, 14, 14, 16, 3, 3, 1, 1, 16, 16))


def model():
    rng = np.random.default_rng(7)
    x = graph.var("x", shape=(1, 16, 14, 14))
    w = graph.const(rng.standard_normal((16, 16, 3, 3)).astype("float32"))
    return graph.Function([x], graph.nn.relu(graph.nn.conv2d(x, w, padding=1)))


@pytest.mark.parametrize("times, template", [
    ({}, "conv2d_winograd_nchwc"),                               # untuned: Winograd
    ({WINOGRAD: 1e-6, DIRECT: 2e-6}, "conv2d_winograd_nchwc"),   # Winograd logged faster
    ({WINOGRAD: 2e-6, DIRECT: 1e-6}, "conv2d_nchwc"),            # direct logged faster
    ({DIRECT: 1e-6}, "conv2d_nchwc"),                            # only direct logged
    ({WINOGRAD: 3e-6}, "conv2d_winograd_nchwc"),                 # only Winograd logged
])
def test_the_build_takes_the_faster_logged_form_of_a_3x3_convolution(tmp_path, times,
                                                                     template):
    log(tmp_path / "tune.db", times)
    fn = model()
    lib = build_logged(tmp_path / "tune.db", fn)
    infos = [s["info"] for s in lib.plan["steps"] if s["info"]["template"]]
    assert [i["template"] for i in infos] == [template]
    assert ("record" in infos[0]) == any(n == template for n, _ in times)
    data = np.random.default_rng(8).standard_normal((1, 16, 14, 14)).astype("float32")
    np.testing.assert_allclose(lib.run(x=data)[0], evaluate(fn, data), rtol=1e-4, atol=1e-4)
