"""Converters of ONNX's reductions."""
from __future__ import annotations

CONVERTERS: dict = {}
