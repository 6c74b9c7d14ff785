"""Types of the graph level: TensorType (a shape and a dtype), TupleType and FuncType (a
global function's, which a GlobalVar carries), printed as Relay prints them:
`Tensor[(1, 64, 56, 56), float32]`."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TensorType:
    """A tensor's static shape (a tuple of ints) and dtype."""
    shape: tuple
    dtype: str = "float32"

    def __post_init__(self):
        shape = tuple(int(d) for d in self.shape)
        if any(d < 0 for d in shape):
            raise ValueError(f"TensorType: a negative extent in shape {shape}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", str(self.dtype))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __str__(self):
        if not self.shape:  # a scalar, as Relay prints it
            return self.dtype
        return f"Tensor[({', '.join(str(d) for d in self.shape)}), {self.dtype}]"


@dataclass(frozen=True)
class TupleType:
    """The type of a Tuple: one type per field."""
    fields: tuple

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))

    def __str__(self):
        return f"({', '.join(str(f) for f in self.fields)})"


@dataclass(frozen=True)
class FuncType:
    """The type of a function: its parameters' types and its result's."""
    arg_types: tuple
    ret_type: object

    def __post_init__(self):
        object.__setattr__(self, "arg_types", tuple(self.arg_types))

    def __str__(self):
        return f"fn ({', '.join(str(a) for a in self.arg_types)}) -> {self.ret_type}"
