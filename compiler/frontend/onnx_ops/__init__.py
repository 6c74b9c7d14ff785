"""The converters of ONNX's operators, one module per family (each a CONVERTERS table of
op type -> converter; common.py says what a converter is):

    nn.py       BatchNormalization, the normalizations, Gemm, MatMul, Einsum, Softmax
    math.py     elementwise and broadcast arithmetic, activations, comparisons, logic
    reduce.py   the Reduce* family, ArgMax / ArgMin
    shape.py    shapes and indexing: Shape, Reshape, Slice, Gather, Split, Concat, ...
    vision.py   convolutions, pools, padding, resizing
    quantize.py QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
                QLinearMatMul, ConvInteger, QLinearConv
    microsoft.py  the com.microsoft operators of ONNX Runtime's quantizer (QLinearAdd,
                QLinearGlobalAveragePool, QGemm, ...): DOMAINS["com.microsoft"]

CONVERTERS is ONNX's default domain's; DOMAINS holds another domain's table by its name.
"""
from . import math, microsoft, nn, quantize, reduce, shape, vision

CONVERTERS = {**math.CONVERTERS, **nn.CONVERTERS, **reduce.CONVERTERS, **shape.CONVERTERS,
              **vision.CONVERTERS, **quantize.CONVERTERS}

DOMAINS = {"": CONVERTERS, "ai.onnx": CONVERTERS, "com.microsoft": microsoft.CONVERTERS}
"""Operator domain -> its converters (op type -> converter)."""

__all__ = ["CONVERTERS", "DOMAINS"]
