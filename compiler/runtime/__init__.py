"""compiler.runtime: loaded modules (Module), their timing, export / load, and the
executor of built models (GraphExecutor)."""
from .graph_executor import GraphExecutor
from .module import Module, ProfileResult, load, load_object

__all__ = ["GraphExecutor", "Module", "ProfileResult", "load", "load_object"]
