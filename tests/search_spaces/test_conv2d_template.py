"""The `conv2d_nchw` and `conv2d_nchw_packed` templates: every sampled point builds and
matches numpy, odd shapes, strides and paddings included; the space is big enough to
tune."""
import numpy as np
import pytest

import compiler
import search_spaces

CASES = [(1, 3, 9, 9, 4, 3, 3, 1, 1), (2, 5, 7, 13, 6, 3, 2, 2, 1), (1, 8, 13, 7, 16, 1, 1, 1, 0),
         (1, 4, 12, 12, 8, 5, 5, 2, 2)]


def reference(d, w, stride, pad):
    _, _, H, W = d.shape
    _, _, R, S = w.shape
    dp = np.pad(d, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    OH, OW = (H + 2 * pad - R) // stride + 1, (W + 2 * pad - S) // stride + 1
    out = np.zeros((d.shape[0], w.shape[0], OH, OW))
    for ry in range(R):
        for rx in range(S):
            patch = dp[:, :, ry:ry + stride * OH:stride, rx:rx + stride * OW:stride]
            out += np.einsum("nchw,kc->nkhw", patch, w[:, :, ry, rx])
    return out


@pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")
@pytest.mark.parametrize("name", ["conv2d_nchw", "conv2d_nchw_packed"])
@pytest.mark.parametrize("args", CASES, ids=lambda a: "-".join(map(str, a)))
def test_sampled_configs_match_numpy(name, args):
    N, C, H, W, K, R, S, stride, pad = args
    space = search_spaces.space(name, *args)
    rng = np.random.default_rng(sum(args))
    d = rng.random((N, C, H, W), dtype="float32")
    w = rng.random((K, C, R, S), dtype="float32")
    expected = reference(d.astype("float64"), w, stride, pad)
    for cfg in space.sample(7, seed=sum(args)) + [space.fallback()]:
        s, tensors = search_spaces.instantiate(name, *args, config=cfg)
        f = compiler.build(s, tensors)
        out = np.full(expected.shape, np.nan, "float32")
        f(d, w, out)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4, err_msg=str(cfg))


def test_space_size_for_resnet_layer():
    assert len(search_spaces.space("conv2d_nchw", 1, 64, 56, 56, 64, 3, 3, 1, 1)) >= 10 ** 4


@pytest.mark.parametrize("name", ["conv2d_nchw", "conv2d_nchw_packed"])
def test_empty_output_is_a_clear_error(name):
    with pytest.raises(ValueError, match="leaves no output of a 2x2 input"):
        search_spaces.space(name, 1, 1, 2, 2, 1, 3, 3, 1, 0)


@pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")
@pytest.mark.parametrize("unpack_at", [0, 1], ids=["at_root", "at_tile"])
def test_packed_unpack_positions_match_numpy(unpack_at):
    """Both places to unpack the packed result (a last stage; tile by tile, the
    convolution computed at the NCHW output's column tiles) give numpy's answer."""
    args = N, C, H, W, K, R, S, stride, pad = (2, 6, 13, 7, 8, 3, 3, 2, 1)
    space = search_spaces.space("conv2d_nchw_packed", *args)
    rng = np.random.default_rng(5)
    d = rng.random((N, C, H, W), dtype="float32")
    w = rng.random((K, C, R, S), dtype="float32")
    expected = reference(d.astype("float64"), w, stride, pad)
    configs = [c for c in space.sample(40, seed=5) if c["unpack_at"].val == unpack_at][:4]
    assert len(configs) == 4
    for cfg in configs:
        f = compiler.build(*search_spaces.instantiate("conv2d_nchw_packed", *args, config=cfg))
        out = np.full(expected.shape, np.nan, "float32")
        f(d, w, out)
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4, err_msg=str(cfg))


@pytest.mark.parametrize("spec", ["llvm -mcpu=haswell", "llvm -mcpu=skylake-avx512"])
@pytest.mark.parametrize("name, args", [("conv2d_nchw", a) for a in CASES] +
                         [("depthwise_conv2d_nchw", (1, 7, 9, 11, 3, 3, 1, 1)),
                          ("depthwise_conv2d_nchw", (2, 13, 37, 13, 3, 3, 2, 0))])
def test_the_fallback_sets_compiler_ops_default_choices(name, args, spec):
    """One schedule: the NCHW templates' fallback configs are the choices of the untuned
    kernel (compiler.ops.schedule_conv2d_nchw), on an AVX2 and an AVX-512 target."""
    from compiler import Target
    from compiler.ops.conv2d_schedule import default_choices
    from search_spaces.conv2d import direct_choices

    target = Target(spec)
    depthwise = name.startswith("depthwise")
    cfg = search_spaces.space(name, *args, target=target).fallback()
    with target:
        _, (_, _, out) = search_spaces.instantiate(name, *args, config=cfg)
    assert direct_choices(cfg, depthwise) == default_choices(out.shape, depthwise, target)


@pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")
@pytest.mark.parametrize("args", [(2, 13, 37, 13, 3, 3, 2, 1), (1, 7, 9, 11, 3, 3, 1, 0)])
def test_the_untuned_depthwise_schedule_matches_numpy(args):
    """compiler.ops' untuned schedule of an NCHW depthwise convolution (the default a
    graph kernel gets without templates) with a tail, on odd shapes."""
    from compiler import ops, te

    N, C, H, W, R, S, stride, pad = args
    data = te.placeholder((N, C, H, W), name="data")
    kernel = te.placeholder((C, 1, R, S), name="kernel")
    conv = ops.depthwise_conv2d_nchw(data, kernel, stride, pad)
    out = ops.relu(conv)
    rng = np.random.default_rng(sum(args))
    d = rng.uniform(-1, 1, (N, C, H, W)).astype("float32")
    w = rng.uniform(-1, 1, (C, 1, R, S)).astype("float32")
    tmpl = search_spaces.get_template("depthwise_conv2d_nchw")
    (want,) = tmpl.reference_outputs(tmpl.bind(args), [d, w])
    got = np.full(want.shape, np.nan, "float32")
    compiler.build(ops.schedule_conv2d_nchw(out, conv), [data, kernel, out])(d, w, got)
    np.testing.assert_allclose(got, np.maximum(want, 0), rtol=1e-4, atol=1e-4)
