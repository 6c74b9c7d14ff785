"""The `blur` template (search_spaces/blur.py): seeded random configs, which combine
Tiramisu's commands (shift, after, store_in folding, unroll / vectorize with a factor)
with split, reorder, compute_at and parallel, build and match numpy on odd shapes; each
placement lowers to the loop nest and allocation it names (tests/tuner/test_tune_blur.py
tunes it)."""
from __future__ import annotations

import numpy as np
import pytest

import compiler
import search_spaces
from search_spaces.blur import blur_reference, live_rows

pytestmark = pytest.mark.filterwarnings("ignore::compiler.transform.VectorizeWarning")


def _image(H, W, seed):
    return np.random.default_rng(seed).standard_normal((H + 2, W + 2)).astype("float32")


def _check(H, W, cfg, tiramisu=True):
    s, args = search_spaces.instantiate("blur", H, W, tiramisu, config=cfg)
    f = compiler.build(s, args)
    a = _image(H, W, cfg.index)
    out = np.full((H, W), np.nan, "float32")
    f(a, out)
    np.testing.assert_allclose(out, blur_reference([a], H, W), rtol=1e-5, atol=1e-5,
                               err_msg=str(cfg))


@pytest.mark.parametrize("H, W", [(7, 13), (37, 1000), (13, 37), (1, 7)])
def test_seeded_random_configs_match_numpy(H, W):
    space = search_spaces.space("blur", H, W)
    for cfg in space.sample(12, seed=H * W) + [space.fallback()]:
        _check(H, W, cfg)


def test_without_tiramisu_the_space_has_only_root_and_compute_at():
    space = search_spaces.space("blur", 13, 37, False)
    assert space.knob("placement").entities[-1].val == "compute_at"
    assert len(search_spaces.space("blur", 13, 37)) == 2 * len(space)
    for cfg in space.sample(6, seed=1):
        _check(13, 37, cfg, tiramisu=False)


def _config(space, **values):
    """The config whose knobs take `values` (the others at their first entity)."""
    for cfg in space:
        if all((cfg[k].val if hasattr(cfg[k], "val") else list(cfg[k].size)) == v
               for k, v in values.items()):
            return cfg
    raise AssertionError(f"no config with {values}")


@pytest.mark.parametrize("rows", [1, 4])
@pytest.mark.parametrize("placement", ["root", "compute_at", "after", "after_fold"])
def test_each_placement_lowers_as_it_says(placement, rows):
    H, W = 37, 40
    space = search_spaces.space("blur", H, W)
    cfg = _config(space, placement=placement, tile_y=[-1, rows], tile_x=[-1, 2, 8],
                  unroll_x=2, parallel=1)
    s, args = search_spaces.instantiate("blur", H, W, config=cfg)
    text = str(compiler.lower(s, args))
    allocated = {"root": (H + 2) * W, "compute_at": (rows + 2) * 16,
                 "after": (H + 2) * W, "after_fold": live_rows(rows) * W}[placement]
    assert f"allocate bx[float32 * {allocated}]" in text
    if placement.startswith("after"):
        # one nest: the shared column-block and row-tile loops, then each stage's own
        assert text.count("parallel (") == 1 and "bx[" in text.split("parallel (")[1]
    _check(H, W, cfg)
