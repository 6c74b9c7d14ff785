"""compiler.runtime: loaded modules (Module), their timing, and export / load."""
from .module import Module, ProfileResult, load, load_object

__all__ = ["Module", "ProfileResult", "load", "load_object"]
