"""compiler.runtime: loaded modules (Module), their timing, export / load, the executor
of built models (GraphExecutor), and the registry of the external module kinds a model
may hold (external.py; the kinds that come with autosched are in compiler/contrib)."""
from .graph_executor import GraphExecutor
from .module import Module, ProfileResult, load, load_object

__all__ = ["GraphExecutor", "Module", "ProfileResult", "load", "load_object"]
