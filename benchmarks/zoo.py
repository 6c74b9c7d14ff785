"""The model zoo: real models from torchvision, timm and transformers, with random weights
(from their constructors and config classes: nothing is downloaded), exported to ONNX in
a temp dir, imported with compiler.frontend.from_onnx and built untuned with
compiler.graph.build. Prints per model whether it builds (and if not, at which step and
the exception's first line), the max relative error against ONNX Runtime (max |ours -
ORT| / max |ORT| per output, the largest over the outputs; max|ORT| is the largest output
value, which shows the outputs are not all zeros or tiny), our untuned latency and ONNX
Runtime's (medians of rounds that alternate the two, 2 threads each, each timed in a
block of calls with a pause before it, as benchmarks/models.py does), the ratio ORT /
ours (above 1: ours is faster) and the compile time (import + graph.build). A model that
fails is reported and the others go on.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/zoo.py \
        [--models resnet18,bert] [--rounds 5] [--skip-timing] [--opset 17]

The transformers models come twice: with the library's default attention (SDPA) and
with attn_implementation="eager" (`bert-eager`), which export to different graphs.
Needs, in the venv: `pip install /opt/wheels/torch-2.13.0+*.whl`, then `pip install
torchvision==0.28.* timm transformers`. It exports with the classic (TorchScript)
exporter, which writes the --opset asked for and needs no onnxscript; the torch.export
one writes opset 18 and converts down, which fails for some operators (Pad to 17).
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings

import numpy as np
import torch
from torch import nn

# The torchvision wheel here is a CUDA build whose native library does not load, so its
# operators are never registered; `import torchvision` then fails where it registers
# Python fallbacks for nms and qnms. Defining the two schemas first lets it import, and
# the classification models do not use them.
_TORCHVISION = torch.library.Library("torchvision", "DEF")
_TORCHVISION.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
_TORCHVISION.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")

import timm  # noqa: E402
import torchvision  # noqa: E402
import transformers  # noqa: E402
from models import alternating_medians, ort_session, relative_error  # noqa: E402  (benchmarks/models.py; it puts the repo on sys.path)

from compiler import graph  # noqa: E402
from compiler.frontend import from_onnx  # noqa: E402

# nn.MultiheadAttention's fast path in eval mode (torchvision's ViT) is one fused operator
# that the exporter cannot write; without it the attention exports as its parts
torch.backends.mha.set_fastpath_enabled(False)

TARGET = "llvm -num-cores=2"  # the same 2 threads as ONNX Runtime, on any machine


def _image(size=224):
    return {"input": torch.randn(1, 3, size, size)}


def _text(vocab):
    return {"input_ids": torch.randint(0, vocab, (1, 128)),
            "attention_mask": torch.ones(1, 128, dtype=torch.int64)}


def vision(name, **kw):
    """A torchvision classifier with random weights and a 224x224 image."""
    return lambda: (getattr(torchvision.models, name)(weights=None, **kw), _image())


def timm_model(name):
    """A timm model with random weights and an image of its default size (224, but
    256 for mobilevit_s, whose last stage then splits into whole 2x2 patches)."""
    def make():
        model = timm.create_model(name, pretrained=False)
        return model, _image(model.pretrained_cfg["input_size"][-1])
    return make


class Tensors(nn.Module):
    """A transformers model called with keyword inputs, returning its output tensors as
    a tuple: the exporter takes positional inputs, and the models' positional orders
    differ (GPT-2's second is past_key_values)."""

    def __init__(self, model, names):
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *args):
        out = self.model(**dict(zip(self.names, args)))
        return tuple(v for v in out.values() if isinstance(v, torch.Tensor))


def hf(config, model, inputs, attention=None, **kw):
    """A transformers model built from its config class (default sizes, random weights);
    `attention` None is the library's default implementation."""
    def make():
        cfg = getattr(transformers, config)(attn_implementation=attention, **kw)
        m = getattr(transformers, model)(cfg)
        m = m.encoder if model == "WhisperModel" else m
        feeds = inputs(cfg)
        return Tensors(m, list(feeds)), feeds
    return make


TEXT = {"bert": ("BertConfig", "BertModel", {}),
        "distilbert": ("DistilBertConfig", "DistilBertModel", {}),
        "roberta": ("RobertaConfig", "RobertaModel", {}),
        "gpt2": ("GPT2Config", "GPT2Model", {"use_cache": False}),
        "t5_encoder": ("T5Config", "T5EncoderModel", {"use_cache": False})}
HF = {name: (config, model, lambda cfg: _text(cfg.vocab_size), kw)
      for name, (config, model, kw) in TEXT.items()}
HF["clip_vision"] = ("CLIPVisionConfig", "CLIPVisionModel",
                     lambda cfg: {"pixel_values": torch.randn(1, 3, 224, 224)}, {})
HF["whisper_tiny_encoder"] = ("WhisperConfig", "WhisperModel",  # its defaults are tiny's
                              lambda cfg: {"input_features": torch.randn(1, 80, 3000)}, {})

ZOO = {
    "resnet18": vision("resnet18"), "resnet50": vision("resnet50"),
    "mobilenet_v3_large": vision("mobilenet_v3_large"),
    "efficientnet_b0": vision("efficientnet_b0"), "convnext_tiny": vision("convnext_tiny"),
    "regnet_y_400mf": vision("regnet_y_400mf"),
    "shufflenet_v2_x1_0": vision("shufflenet_v2_x1_0"), "densenet121": vision("densenet121"),
    "googlenet": vision("googlenet", init_weights=True), "swin_t": vision("swin_t"),
    "vit_b_16": vision("vit_b_16"),
    **{name: timm_model(name) for name in ("vit_small_patch16_224", "deit_tiny_patch16_224",
                                           "mixer_b16_224", "mobilevit_s")},
    **{name: hf(config, model, inputs, **kw)
       for name, (config, model, inputs, kw) in HF.items()},
    **{f"{name}-eager": hf(config, model, inputs, "eager", **kw)
       for name, (config, model, inputs, kw) in HF.items()},
}


def randomized(model: nn.Module) -> nn.Module:
    """`model` in eval mode with every constant-initialised float parameter (norm scales
    and shifts, biases, layer scales of 1e-6, zero-init gammas and heads) and batch-norm
    statistic redrawn: constants let a wrong kernel pass unseen (a bias of 0, a branch
    scaled by 1e-6) or make outputs all zeros."""
    stats = ((n, b) for n, b in model.named_buffers() if n.endswith(("_mean", "_var")))
    with torch.no_grad():
        for name, t in [*model.named_parameters(), *stats]:
            if not t.is_floating_point() or t.numel() < 2 or not bool((t == t.flatten()[0]).all()):
                continue
            if name.endswith(("bias", "_mean")):
                t.uniform_(-0.1, 0.1)
            elif name.endswith("weight") and t.dim() >= 2:  # a zero-init matrix or kernel
                t.copy_(torch.randn_like(t) * (t[0].numel() ** -0.5))
            else:  # scales: norm weights, running variances, layer scales
                t.uniform_(0.5, 1.5)
    return model.eval()


def first_line(err: BaseException, most: int = 200) -> str:
    """The exception's type and first line, cut at `most` characters (an unsupported
    operator's message goes on to list all the supported ones)."""
    line = f"{type(err).__name__}: {(str(err).strip().splitlines() or [''])[0]}"
    return line if len(line) <= most else line[:most] + "..."


def export(name: str, path: str, opset: int = 17) -> dict:
    """Export ZOO model `name` with random weights (seed 0) to `path`; returns its example
    inputs by name (tensors)."""
    torch.manual_seed(0)
    model, example = ZOO[name]()
    model = randomized(model)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's (tracer, deprecation)
        torch.onnx.export(model, tuple(example.values()), path, input_names=list(example),
                          opset_version=opset, dynamo=False)
    return example


def one(name: str, opset: int, rounds: int) -> dict:
    """Export, check and time model `name`; returns its table row (a dict), whose "failed"
    names the step that failed and the exception's first line."""
    row, step = {"model": name}, "export"
    with tempfile.TemporaryDirectory() as tmp:
        try:
            path = os.path.join(tmp, f"{name}.onnx")
            example = export(name, path, opset)
            feeds = {k: v.numpy() for k, v in example.items()}
            step = "onnxruntime"
            session = ort_session(path)
            want = session.run(None, feeds)
            row["scale"] = max(float(np.max(np.abs(w))) for w in want)
            step = "import"
            start = time.perf_counter()
            mod, params = from_onnx(path)
            step = "build"
            lib = graph.build(mod, target=TARGET, params=params)
            row["compile_s"] = time.perf_counter() - start
            step = "run"
            got = lib.run(**feeds)
            if len(got) != len(want):
                raise ValueError(f"{len(got)} outputs, ONNX Runtime has {len(want)}")
            row["error"] = relative_error(got, want)
            step = "timing"
            runs = {"ours": lambda: lib.run(**feeds), "ort": lambda: session.run(None, feeds)}
            row.update({k: v * 1e3 for k, v in alternating_medians(runs, rounds).items()})
        except Exception as err:  # one model's failure is reported, not fatal
            row["failed"] = f"{step}: {first_line(err).replace(tmp + os.sep, '')}"
    return row


HEADER = (f"{'model':26s} {'builds':6s} {'max rel err':>11s} {'max|ORT|':>9s} "
          f"{'ours ms':>9s} {'ORT ms':>9s} {'ORT/ours':>8s} {'compile s':>9s}")


def show(row: dict) -> str:
    """One table line: '-' where the step did not run."""
    def num(key, fmt):
        return format(row[key], fmt) if key in row else "-"
    builds = "yes" if "compile_s" in row else "no"
    ratio = f"{row['ort'] / row['ours']:.2f}" if "ours" in row else "-"
    line = (f"{row['model']:26s} {builds:6s} {num('error', '.1e'):>11s} "
            f"{num('scale', '.2g'):>9s} "
            f"{num('ours', '.2f'):>9s} {num('ort', '.2f'):>9s} "
            f"{ratio:>8s} {num('compile_s', '.1f'):>9s}")
    return line + (f"  {row['failed']}" if "failed" in row else "")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(ZOO), help=f"comma-separated, of {', '.join(ZOO)}")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--skip-timing", action="store_true", help="build and check only")
    p.add_argument("--opset", type=int, default=17)
    opt = p.parse_args()
    names = opt.models.split(",")
    unknown = [n for n in names if n not in ZOO]
    if unknown:
        raise SystemExit(f"unknown models {unknown}; the models are {', '.join(ZOO)}")
    import onnxruntime
    print(f"PyTorch {torch.__version__}, torchvision {torchvision.__version__}, timm "
          f"{timm.__version__}, transformers {transformers.__version__}, ONNX Runtime "
          f"{onnxruntime.__version__}; opset {opt.opset}; untuned, {TARGET!r}; ORT/ours "
          f"above 1: ours is faster", flush=True)
    print(HEADER, flush=True)
    torch.set_num_threads(2)
    for name in names:
        print(show(one(name, opt.opset, 0 if opt.skip_timing else opt.rounds)), flush=True)


if __name__ == "__main__":
    main()
