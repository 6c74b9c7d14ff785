"""The models people bring today, written from torch.nn modules (no download, random
weights): a BERT-base-sized encoder, a ViT-B/16-sized encoder, an EfficientNet-B0-sized
network, a small U-Net and a YOLO-style detector neck. Each is an entry of MODERN:
(constructor, example inputs by name), exported by model_defs.export_onnx."""
from __future__ import annotations

import math

import torch
from torch import nn


# ------------------------------------------------------------------ transformers

class Attention(nn.Module):
    """Multi-head self-attention as BERT's exporters write it: three projections, the
    heads split by reshape and transpose, softmax(QK^T / sqrt(d)) V."""

    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads, self.d = heads, hidden // heads
        self.q, self.k, self.v = (nn.Linear(hidden, hidden) for _ in range(3))
        self.out = nn.Linear(hidden, hidden)

    def forward(self, x):
        b, s, h = x.shape

        def split(t):
            return t.reshape(b, s, self.heads, self.d).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d)
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.out(ctx.transpose(1, 2).reshape(b, s, h))


class EncoderLayer(nn.Module):
    """Attention and a GELU MLP, each with a residual; post-norm (BERT) or pre-norm
    (ViT)."""

    def __init__(self, hidden: int, heads: int, mlp: int, pre_norm: bool):
        super().__init__()
        self.attn = Attention(hidden, heads)
        self.mlp = nn.Sequential(nn.Linear(hidden, mlp), nn.GELU(), nn.Linear(mlp, hidden))
        self.norm1, self.norm2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.pre_norm = pre_norm

    def forward(self, x):
        if self.pre_norm:
            x = x + self.attn(self.norm1(x))
            return x + self.mlp(self.norm2(x))
        x = self.norm1(x + self.attn(x))
        return self.norm2(x + self.mlp(x))


class Bert(nn.Module):
    """BERT-base-sized: 12 layers, hidden 768, 12 heads, MLP 3072; token ids in, the
    last layer's hidden states out."""

    def __init__(self, layers=12, hidden=768, heads=12, vocab=30522, positions=512):
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(positions, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.layers = nn.ModuleList(EncoderLayer(hidden, heads, 4 * hidden, False)
                                    for _ in range(layers))

    def forward(self, ids):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.norm(self.tokens(ids) + self.positions(pos))
        for layer in self.layers:
            x = layer(x)
        return x


class ViT(nn.Module):
    """ViT-B/16-sized: 16x16 patches of a 224x224 image, a class token, 12 pre-norm
    layers of hidden 768, 12 heads; the class token's logits out."""

    def __init__(self, layers=12, hidden=768, heads=12, classes=1000, image=224, patch=16):
        super().__init__()
        self.patch = nn.Conv2d(3, hidden, patch, stride=patch)
        self.cls = nn.Parameter(torch.randn(1, 1, hidden) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, hidden) * 0.02)
        self.layers = nn.ModuleList(EncoderLayer(hidden, heads, 4 * hidden, True)
                                    for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x[:, 0]))


# ------------------------------------------------------------------ convolutional

def conv_bn_act(cin, cout, k, stride=1, groups=1, act=nn.SiLU):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, act()) if act else nn.Sequential(*layers)


class SqueezeExcite(nn.Module):
    def __init__(self, channels, squeezed):
        super().__init__()
        self.reduce = nn.Conv2d(channels, squeezed, 1)
        self.expand = nn.Conv2d(squeezed, channels, 1)

    def forward(self, x):
        s = x.mean((2, 3), keepdim=True)
        return x * torch.sigmoid(self.expand(nn.functional.silu(self.reduce(s))))


class MBConv(nn.Module):
    """EfficientNet's block: expand 1x1, depthwise kxk, squeeze-excite, project 1x1,
    residual when the shape allows."""

    def __init__(self, cin, cout, k, stride, expand):
        super().__init__()
        mid = cin * expand
        self.expand = conv_bn_act(cin, mid, 1) if expand != 1 else nn.Identity()
        self.depthwise = conv_bn_act(mid, mid, k, stride, groups=mid)
        self.se = SqueezeExcite(mid, max(1, cin // 4))
        self.project = conv_bn_act(mid, cout, 1, act=None)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.project(self.se(self.depthwise(self.expand(x))))
        return x + y if self.residual else y


class EfficientNetB0(nn.Module):
    STAGES = [(1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3),
              (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1)]

    def __init__(self, classes=1000):
        super().__init__()
        blocks, cin = [conv_bn_act(3, 32, 3, 2)], 32
        for expand, k, stride, cout, repeats in self.STAGES:
            for r in range(repeats):
                blocks.append(MBConv(cin, cout, k, stride if r == 0 else 1, expand))
                cin = cout
        blocks.append(conv_bn_act(cin, 1280, 1))
        self.features = nn.Sequential(*blocks)
        self.head = nn.Linear(1280, classes)

    def forward(self, x):
        return self.head(self.features(x).mean((2, 3)))


def double_conv(cin, cout):
    return nn.Sequential(conv_bn_act(cin, cout, 3, act=nn.ReLU),
                         conv_bn_act(cout, cout, 3, act=nn.ReLU))


class UNet(nn.Module):
    """A small U-Net on 128x128 images: four levels (32 to 256 channels), max-pool down,
    ConvTranspose (or bilinear Resize) up, skip Concats, a 1x1 head of 2 classes."""

    def __init__(self, widths=(32, 64, 128, 256), resize=False):
        super().__init__()
        self.down = nn.ModuleList()
        cin = 3
        for w in widths:
            self.down.append(double_conv(cin, w))
            cin = w
        self.up, self.merge = nn.ModuleList(), nn.ModuleList()
        for w in reversed(widths[:-1]):
            self.up.append(nn.Sequential(nn.Upsample(scale_factor=2, mode="bilinear"),
                                         nn.Conv2d(cin, w, 1)) if resize else
                           nn.ConvTranspose2d(cin, w, 2, stride=2))
            self.merge.append(double_conv(2 * w, w))
            cin = w
        self.head = nn.Conv2d(cin, 2, 1)

    def forward(self, x):
        skips = []
        for i, block in enumerate(self.down):
            x = block(x if i == 0 else nn.functional.max_pool2d(x, 2))
            skips.append(x)
        for up, merge, skip in zip(self.up, self.merge, reversed(skips[:-1])):
            x = merge(torch.cat([up(x), skip], dim=1))
        return self.head(x)


class C2f(nn.Module):
    """YOLOv8's block: a 1x1 conv split in two halves, bottlenecks on the second, every
    half concatenated and fused by a 1x1 conv."""

    def __init__(self, cin, cout, n=1):
        super().__init__()
        self.c = cout // 2
        self.cv1 = conv_bn_act(cin, 2 * self.c, 1)
        self.m = nn.ModuleList(nn.Sequential(conv_bn_act(self.c, self.c, 3),
                                             conv_bn_act(self.c, self.c, 3))
                               for _ in range(n))
        self.cv2 = conv_bn_act((2 + n) * self.c, cout, 1)

    def forward(self, x):
        y = list(self.cv1(x).split((self.c, self.c), 1))
        for m in self.m:
            y.append(m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.cv1 = conv_bn_act(cin, cin // 2, 1)
        self.cv2 = conv_bn_act(cin * 2, cout, 1)
        self.pool = nn.MaxPool2d(5, 1, 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.pool(x)
        y2 = self.pool(y1)
        return self.cv2(torch.cat([x, y1, y2, self.pool(y2)], 1))


class YoloNeck(nn.Module):
    """A YOLOv8-n-style detector on 320x320: a strided C2f backbone, SPPF, a top-down
    path (nearest Resize, Concat, C2f), LeakyRelu-free SiLU throughout; the three
    scales' feature maps out."""

    def __init__(self, w=(16, 32, 64, 128, 256)):
        super().__init__()
        self.stem = conv_bn_act(3, w[0], 3, 2)
        self.stages = nn.ModuleList(nn.Sequential(conv_bn_act(a, b, 3, 2), C2f(b, b))
                                    for a, b in zip(w[:-1], w[1:]))
        self.sppf = SPPF(w[4], w[4])
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.top1 = C2f(w[4] + w[3], w[3])
        self.top2 = C2f(w[3] + w[2], w[2])

    def forward(self, x):
        x = self.stem(x)
        feats = []
        for stage in self.stages:
            x = stage(x)
            feats.append(x)
        p5 = self.sppf(feats[3])
        p4 = self.top1(torch.cat([self.up(p5), feats[2]], 1))
        p3 = self.top2(torch.cat([self.up(p4), feats[1]], 1))
        return p3, p4, p5


def _image(size=224):
    return {"input": torch.randn(1, 3, size, size)}


MODERN = {
    "bert": (Bert, lambda: {"input_ids": torch.randint(0, 30522, (1, 128))}),
    "vit": (ViT, _image),
    "efficientnet_b0": (EfficientNetB0, _image),
    "unet": (UNet, lambda: _image(128)),
    "unet_resize": (lambda: UNet(resize=True), lambda: _image(128)),
    "yolo_neck": (YoloNeck, lambda: _image(320)),
}
