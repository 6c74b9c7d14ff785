"""One-node ONNX models for conformance tests against ONNX Runtime: `node_model` builds
a model of one or more nodes of one op type, each on inputs of its own (runtime inputs
of any dtype, or constants as initializers), with every output of every node an output
of the model; `check_against_ort` imports it, builds it at opt level 3, runs it on seeded
inputs and holds every output to ONNX Runtime's: max |ours - ORT| / max |ORT| <= 1e-4
for floats, equal for integers and bools, and always the shape ORT gives."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from compiler import graph
from compiler.frontend import from_onnx
from compiler.transform.pass_infra import PassContext

ONNX_TYPES = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16,
              "int64": TensorProto.INT64, "int32": TensorProto.INT32,
              "int16": TensorProto.INT16, "uint16": TensorProto.UINT16,
              "int8": TensorProto.INT8, "uint8": TensorProto.UINT8, "bool": TensorProto.BOOL}


class In:
    """A runtime input of the model: its shape, dtype, and for integers the range
    [low, high) of its random values; `positive` floats are |normal| + 0.1."""

    def __init__(self, *shape, dtype="float32", low=-5, high=5, positive=False):
        self.shape, self.dtype, self.low, self.high = shape, dtype, low, high
        self.positive = positive

    def sample(self, rng):
        if self.dtype == "bool":
            return rng.random(self.shape) < 0.5
        if self.dtype.startswith(("int", "uint")):
            return rng.integers(self.low, self.high, self.shape).astype(self.dtype)
        x = rng.standard_normal(self.shape)
        return (np.abs(x) + 0.1 if self.positive else x).astype(self.dtype)


def node(*inputs, outputs: int = 1, **attrs):
    """One node's inputs (In for a runtime input, an array for a constant, None for an
    omitted optional input), its number of outputs and its attributes."""
    return inputs, outputs, attrs


def node_model(op_type: str, nodes, opset: int = 17):
    """(model, feeds): every node an `op_type` on its own inputs."""
    rng = np.random.default_rng(3)
    made, inputs, inits, outputs, feeds = [], [], [], [], {}
    for k, (args, n_out, attrs) in enumerate(nodes):
        names = []
        for j, a in enumerate(args):
            name = f"in{k}_{j}"
            if a is None:
                names.append("")
                continue
            names.append(name)
            if isinstance(a, In):
                feeds[name] = a.sample(rng)
                inputs.append(helper.make_tensor_value_info(name, ONNX_TYPES[a.dtype],
                                                            a.shape))
            else:
                inits.append(numpy_helper.from_array(np.asarray(a), name))
        outs = [f"out{k}_{j}" for j in range(n_out)]
        made.append(helper.make_node(op_type, names, outs, name=f"{op_type}{k}", **attrs))
        outputs += [helper.make_empty_tensor_value_info(o) for o in outs]
    g = helper.make_graph(made, op_type, inputs, outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), feeds


def check_against_ort(model, feeds, opt_level: int = 3):
    """Build `model` and hold its outputs to ONNX Runtime's (the module docstring);
    returns the built GraphModule."""
    import onnxruntime as ort
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)
    mod, params = from_onnx(model)
    with PassContext(opt_level=opt_level):
        lib = graph.build(mod, params=params)
    got = lib.run(**feeds)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        assert g.shape == w.shape, f"output {i}: shape {g.shape}, ONNX Runtime's {w.shape}"
        if w.dtype.kind == "f":
            scale = max(float(np.abs(w).max(initial=0.0)), 1e-30)
            err = float(np.abs(g.astype("float64") - w).max(initial=0.0)) / scale
            assert err <= 1e-4, f"output {i}: relative error {err:.3g}"
        else:
            assert g.dtype == w.dtype, f"output {i}: dtype {g.dtype}, ORT's {w.dtype}"
            np.testing.assert_array_equal(g, w, err_msg=f"output {i}")
    return lib
