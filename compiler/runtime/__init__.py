"""compiler.runtime: loaded modules (Module), their timing, export / load, the executor
of built models (GraphExecutor), a model as one shared library with a C API
(export_library.py, model_api.h and .c; ModelLibrary opens one), and the registry of the
external module kinds a model may hold (external.py; the kinds that come with autosched
are in compiler/contrib)."""
from .graph_executor import GraphExecutor
from .model_library import ModelLibrary
from .module import Module, ProfileResult, load, load_object

__all__ = ["GraphExecutor", "ModelLibrary", "Module", "ProfileResult", "load", "load_object"]
