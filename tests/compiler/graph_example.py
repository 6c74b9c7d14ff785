"""The reference's example graph (pass-infra-and-operator-fusion, 0x01), which
graph/ir/test_graph_ir.py prints and types and graph/passes/test_graph_passes.py rewrites;
`T` is the type its values print with."""
from __future__ import annotations

import numpy as np

from compiler import graph


def example(c_data=None):
    """The reference's example(), in our constructors. Its constant is np.empty there;
    zeros here (garbage makes FoldConstant warn), or `c_data` where numbers are compared."""
    shape = (1, 64, 54, 54)
    c = graph.const(np.zeros(shape, "float32") if c_data is None else c_data)
    weight = graph.var("weight", shape=(64, 64, 3, 3))
    x = graph.var("x", graph.TensorType((1, 64, 56, 56), "float32"))
    conv = graph.nn.conv2d(x, weight)
    y = graph.add(c, c)
    y = graph.multiply(y, graph.const(2, "float32"))
    y = graph.add(conv, y)
    z = graph.add(y, c)
    z1 = graph.add(y, c)
    z2 = graph.add(z, z1)
    return graph.Function([x, weight], z2)


T = "Tensor[(1, 64, 54, 54), float32]"
