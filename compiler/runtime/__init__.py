"""compiler.runtime: loaded modules (Module), their timing, export / load, the executor
of built models (GraphExecutor), and the external modules a model may hold
(CSourceModule, CblasModule: imported here so that their loaders are registered)."""
from .cblas_module import CblasModule
from .c_source_module import CSourceModule
from .graph_executor import GraphExecutor
from .module import Module, ProfileResult, load, load_object

__all__ = ["CblasModule", "CSourceModule", "GraphExecutor", "Module", "ProfileResult",
           "load", "load_object"]
