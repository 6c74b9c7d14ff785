"""The reference's blur (tiramisu-internals: bx averages three neighbours along a row, by
three of bx's along a column) on one channel, as tensors and in numpy, for the tests of
Tiramisu's commands."""
from __future__ import annotations

from compiler import te


def blur_x(H, W):
    """The reference's bx on one channel: the mean of three neighbours along j."""
    A = te.placeholder((H, W + 2), name="A")
    B = te.compute((H, W), lambda i, j: (A[i, j] + A[i, j + 1] + A[i, j + 2]) / 3, name="bx")
    return A, B


def blur_x_numpy(a):
    return (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) / 3


def blur(H, W):
    """The reference's two-stage blur on one channel: bx along j, then by along i."""
    A = te.placeholder((H + 2, W + 2), name="A")
    bx = te.compute((H + 2, W), lambda i, j: (A[i, j] + A[i, j + 1] + A[i, j + 2]) / 3,
                    name="bx")
    by = te.compute((H, W), lambda i, j: (bx[i, j] + bx[i + 1, j] + bx[i + 2, j]) / 3,
                    name="by")
    return A, bx, by


def blur_numpy(a):
    x = blur_x_numpy(a)
    return (x[:-2] + x[1:-1] + x[2:]) / 3
