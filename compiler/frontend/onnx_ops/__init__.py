"""The converters of ONNX's operators, one module per family (each a CONVERTERS table of
op type -> converter; common.py says what a converter is):

    nn.py       BatchNormalization, the normalizations, Gemm, MatMul, Einsum, Softmax
    math.py     elementwise and broadcast arithmetic, activations, comparisons, logic
    reduce.py   the Reduce* family, ArgMax / ArgMin
    shape.py    shapes and indexing: Shape, Reshape, Slice, Gather, Split, Concat, ...
    vision.py   convolutions, pools, padding, resizing
    quantize.py QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
                QLinearMatMul, ConvInteger, QLinearConv
"""
from . import math, nn, quantize, reduce, shape, vision

CONVERTERS = {**math.CONVERTERS, **nn.CONVERTERS, **reduce.CONVERTERS, **shape.CONVERTERS,
              **vision.CONVERTERS, **quantize.CONVERTERS}

__all__ = ["CONVERTERS"]
