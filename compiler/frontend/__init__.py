"""Model importers: `from_onnx(model_or_path, shape=None) -> (mod, params)`."""
from .onnx import bind_params, from_onnx

__all__ = ["bind_params", "from_onnx"]
