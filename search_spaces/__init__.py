"""Search spaces: the knobs a template exposes, the configs that set them, and which
config a template gets (docs/architecture.md: tuner -> records -> search_spaces -> compiler).

    from search_spaces import template
    @template("matmul")
    def matmul(cfg, M: int, N: int, K: int):
        ...                                        # te.compute, create_schedule
        cfg.define_split("tile_i", M, num_outputs=3)
        io, im, ii = cfg["tile_i"].apply(s, C, C.op.axis[0])
        return s, [A, B, C]

    space = search_spaces.space("matmul", 64, 48, 32)       # ConfigSpace
    s, args = search_spaces.instantiate("matmul", 64, 48, 32, config=space.get(7))
    with search_spaces.ApplyConfig(space.get(7)):
        s, args = search_spaces.instantiate("matmul", 64, 48, 32)
"""
from .dispatch import ApplyConfig, DispatchContext, FallbackContext, dispatch, instantiate
from .entities import AnnotateEntity, OtherOptionEntity, ReorderEntity, SplitEntity
from .errors import InstantiationError, SpaceError
from .fallback import fallback_annotate, fallback_reorder, fallback_split, nearest_split
from .knobs import AnnotateSpace, KnobSpace, OtherOptionSpace, ReorderSpace, SplitSpace
from .registry import Template, get_template, space, template, templates
from .config_space import ConfigEntity, ConfigSpace, FallbackConfig
from . import (blur, conv2d, conv2d_nchwc, conv2d_nchwc_int8, conv2d_packed,  # noqa: E402,F401
               conv2d_winograd, depthwise_conv2d, library, matmul,
               row_ops)  # (register the templates)

__all__ = [
    "ConfigSpace", "ConfigEntity", "FallbackConfig",
    "KnobSpace", "SplitSpace", "ReorderSpace", "AnnotateSpace", "OtherOptionSpace",
    "SplitEntity", "ReorderEntity", "AnnotateEntity", "OtherOptionEntity",
    "fallback_split", "nearest_split", "fallback_reorder", "fallback_annotate",
    "template", "Template", "get_template", "space", "templates",
    "DispatchContext", "ApplyConfig", "FallbackContext", "dispatch", "instantiate",
    "SpaceError", "InstantiationError",
]
