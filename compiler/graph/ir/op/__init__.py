"""The graph level's ops: the registry (registry.py) and one file per op family, each op
registered once with everything the compiler needs of it (type relation, pattern,
attribute defaults, te compute, numpy reference, layout rule, default schedule,
samples) and its constructor. Importing the package registers every op.

    tensor.py      elementwise and broadcast ops (add, exp, clip, ...), comparisons,
                   logic, where, cast
    reduce.py      sum, mean, max, min, argmax, argmin
    transform.py   reshape, transpose, concatenate, strided_slice, take, broadcast_to,
                   tile, trilu
    indexing.py    gather, scatter_nd, topk, cumsum (data-dependent indexing)
    layout.py      layout_transform, and the names of layouts
    layout_rules.py  the layout rules ops share (follow, window)
    nn.py          nn.dense, matmul, nn.batch_matmul, nn.bias_add, nn.relu, nn.softmax,
                   nn.log_softmax, nn.leaky_relu, nn.batch_norm, nn.batch_flatten, nn.pad
                   (and the `graph.nn` namespace)
    norm.py        nn.layer_norm
    conv2d.py      nn.conv2d and its alteration into NCHW[x]c
    qnn.py         qnn.conv2d, a quantized convolution's int8 core, and its packed form
    pool.py        the pools
    image.py       image.resize2d, nn.dilate (up-sampling H and W)
    annotation.py  BYOC's region marks
    relations.py   type relations several ops share
"""
from . import (annotation, conv2d, image, indexing, layout, nn, norm, pool, qnn, reduce,
               tensor, transform)
from .registry import (PARTS, GraphTypeError, Op, call, default_schedule, get_op, get_op_attr,
                       missing_parts, needs_nchw, register_op, register_op_attr,
                       registered_ops, reset_op_attr, tensor_samples)

__all__ = ["annotation", "conv2d", "image", "indexing", "layout", "nn", "norm", "pool", "qnn",
           "reduce",
           "tensor", "transform",
           "PARTS", "GraphTypeError", "Op", "call", "default_schedule", "get_op",
           "get_op_attr", "missing_parts", "needs_nchw", "register_op", "register_op_attr",
           "registered_ops", "reset_op_attr", "tensor_samples"]
