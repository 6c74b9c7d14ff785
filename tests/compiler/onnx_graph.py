"""ONNX models written node by node with onnx.helper: `Graph` names the values and keeps
the initializers, `attention_layer` is one transformer encoder layer as PyTorch exports
it. frontend/test_onnx_model_families.py builds model families with them and
tests/tuner/test_transformer_tasks.py a transformer's tasks; `rng` is the one generator
their weights and inputs come from."""
from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

rng = np.random.default_rng(31)


class Graph:
    """A model under construction: nodes, initializers, fresh names."""

    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def const(self, value, dtype="float32"):
        self.n += 1
        name = f"c{self.n}"
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def weight(self, *shape, scale=0.3):
        return self.const(rng.standard_normal(shape) * scale)

    def op(self, op_type, *inputs, outputs=1, **attrs):
        self.n += 1
        names = [f"v{self.n}_{k}" for k in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), names, **attrs))
        return names[0] if outputs == 1 else names

    def model(self, inputs, outputs, opset=17):
        g = helper.make_graph(self.nodes, "family", inputs,
                              [helper.make_empty_tensor_value_info(o) for o in outputs],
                              self.inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def attention_layer(g, x, seq, hidden, heads, pre_norm):
    """One encoder layer as PyTorch exports it: MatMul + bias projections, heads split
    by Reshape / Transpose, Softmax(QK^T / sqrt(d)) V, Gelu MLP, LayerNorm, residuals."""
    d = hidden // heads

    def linear(v, n_in, n_out):
        return g.op("Add", g.op("MatMul", v, g.weight(n_in, n_out)), g.weight(n_out))

    def heads_of(v):
        split = g.op("Reshape", v, g.const([1, seq, heads, d], "int64"))
        return g.op("Transpose", split, perm=[0, 2, 1, 3])

    def norm(v):
        return g.op("LayerNormalization", v, g.weight(hidden), g.weight(hidden))
    h = norm(x) if pre_norm else x
    q, k, v = (heads_of(linear(h, hidden, hidden)) for _ in range(3))
    kt = g.op("Transpose", k, perm=[0, 1, 3, 2])
    scores = g.op("Div", g.op("MatMul", q, kt), g.const(np.sqrt(d)))
    ctx = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
    merged = g.op("Reshape", g.op("Transpose", ctx, perm=[0, 2, 1, 3]),
                  g.const([1, seq, hidden], "int64"))
    x = g.op("Add", x, linear(merged, hidden, hidden))
    x = x if pre_norm else norm(x)
    h = norm(x) if pre_norm else x
    mlp = linear(g.op("Gelu", linear(h, hidden, 4 * hidden)), 4 * hidden, hidden)
    x = g.op("Add", x, mlp)
    return x if pre_norm else norm(x)
