"""Matrix products, pattern OUT_ELEMWISE_FUSABLE: matmul (with transposed operands),
dense (x @ W.T + bias, the fully connected layer) and batch_matmul.

For a fast hand-written GEMM schedule see gemm.py; these are the compute definitions
any schedule (the default one, a tuned one) starts from.
"""
from __future__ import annotations

from .. import te
from .broadcast import bias_add
from .pattern import PATTERN_ATTR, OpPattern, register_pattern
from .shape import OpError, check_tensor, dims_equal, shape_str, static


def _contract(op: str, a, b, transpose_a: bool, transpose_b: bool, batch: bool,
              names=("a", "b")):
    """`a @ b` over the last two axes (after the transposes), per batch when `batch`;
    `names` are what error messages call a and b."""
    rank = 3 if batch else 2
    check_tensor(op, names[0], a, rank)
    check_tensor(op, names[1], b, rank)
    m, ka = (a.shape[-1], a.shape[-2]) if transpose_a else a.shape[-2:]
    kb, n = (b.shape[-1], b.shape[-2]) if transpose_b else b.shape[-2:]
    where = " and ".join(f"{name} of shape {shape_str(t.shape)}{' (transposed)' * tr}"
                         for name, t, tr in zip(names, (a, b), (transpose_a, transpose_b)))
    if not dims_equal(ka, kb):
        raise OpError(f"{op}: {where} have different reduction lengths {ka} and {kb}")
    if batch and not (dims_equal(a.shape[0], b.shape[0])
                      or 1 in (static(a.shape[0]), static(b.shape[0]))):
        raise OpError(f"{op}: {where} have different batch sizes {a.shape[0]} and {b.shape[0]}")
    if transpose_b:
        # Reading b[j, k] with j the vectorized innermost loop would gather a column per
        # vector (8x slower at 512^3); b.T is stored once, as TOPI's dense packs weights.
        b = te.compute(b.shape[:-2] + (kb, n), lambda *i: b[i[:-2] + (i[-1], i[-2])],
                       name=f"{op}.b_T", attrs={PATTERN_ATTR: OpPattern.INJECTIVE})
    k = te.reduce_axis((0, ka), name="k")

    def at(t, row, col, batch_index):
        # A batch of one is shared by all batches, as numpy broadcasts it.
        lead = [0 if static(t.shape[0]) == 1 else bi for bi in batch_index]
        return t[(*lead, row, col)]

    def fcompute(*index):
        *bi, i, j = index
        a_rc = (k, i) if transpose_a else (i, k)
        return te.sum(at(a, *a_rc, bi) * at(b, k, j, bi), axis=k)

    nb = (b.shape[0] if static(a.shape[0]) == 1 else a.shape[0],) if batch else ()
    return te.compute(nb + (m, n), fcompute, name=op,
                      attrs={PATTERN_ATTR: OpPattern.OUT_ELEMWISE_FUSABLE})


@register_pattern(OpPattern.OUT_ELEMWISE_FUSABLE)
def matmul(a, b, transpose_a: bool = False, transpose_b: bool = False):
    """`a @ b` of 2-D tensors; `transpose_a` / `transpose_b` use a.T / b.T instead."""
    return _contract("matmul", a, b, transpose_a, transpose_b, batch=False)


@register_pattern(OpPattern.OUT_ELEMWISE_FUSABLE)
def dense(data, weight, bias=None):
    """`data @ weight.T (+ bias)`: data (M, K), weight (N, K), bias (N,) or None."""
    out = _contract("dense", data, weight, False, True, batch=False, names=("data", "weight"))
    if bias is None:
        return out
    check_tensor("dense", "bias", bias)
    if bias.ndim != 1 or not dims_equal(bias.shape[0], weight.shape[0]):
        raise OpError(f"dense: bias of shape {shape_str(bias.shape)} does not fit weight of "
                      f"shape {shape_str(weight.shape)} (it needs shape "
                      f"{shape_str(weight.shape[:1])})")
    return bias_add(out, bias, axis=1)


@register_pattern(OpPattern.OUT_ELEMWISE_FUSABLE)
def dense_pack(data, packed_weight):
    """`data @ W.T` with W packed in panels of `bn` rows, TOPI's dense_pack: data (M, K),
    packed_weight (N / bn, K, bn) holding W[p * bn + c, k] at [p, k, c] -> (M, N). The
    inner loop over a panel's bn columns reads contiguous memory, so a vector of outputs
    is one load of weights per k, with no packing at run time (the weights are packed
    when the model is built: compiler.graph's AlterOpLayout)."""
    check_tensor("dense_pack", "data", data, 2)
    check_tensor("dense_pack", "packed_weight", packed_weight, 3)
    (m, ka), (panels, kb, bn) = data.shape, packed_weight.shape
    if not dims_equal(ka, kb):
        raise OpError(f"dense_pack: data of shape {shape_str(data.shape)} and packed_weight "
                      f"of shape {shape_str(packed_weight.shape)} have different reduction "
                      f"lengths {ka} and {kb}")
    k = te.reduce_axis((0, ka), name="k")
    block = static(bn)
    return te.compute((m, static(panels) * block),
                      lambda i, j: te.sum(data[i, k] * packed_weight[j // block, k, j % block],
                                          axis=k),
                      name="dense_pack", tag="dense_pack")


@register_pattern(OpPattern.OUT_ELEMWISE_FUSABLE)
def batch_matmul(a, b, transpose_a: bool = False, transpose_b: bool = False):
    """`a[i] @ b[i]` for 3-D tensors (batch, rows, cols); a batch size of 1 on either
    side is broadcast. `transpose_a` / `transpose_b` transpose the last two axes."""
    return _contract("batch_matmul", a, b, transpose_a, transpose_b, batch=True)
