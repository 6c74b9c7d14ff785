"""ResNet-18, ResNet-50 and MobileNetV2 in plain PyTorch (torchvision's architectures,
written out: torchvision from the registry does not load against the local torch
wheel), with random weights; and their export to ONNX. Benchmarks only."""
from __future__ import annotations

import torch
from torch import nn

from modern_defs import MODERN


def _conv_bn(cin, cout, k, stride=1, groups=1, relu=True):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    if relu:
        layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(_conv_bn(cin, cout, 3, stride), _conv_bn(cout, cout, 3,
                                                                           relu=False))
        self.down = _conv_bn(cin, cout, 1, stride, relu=False) \
            if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        return torch.relu(self.body(x) + self.down(x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * 4
        self.body = nn.Sequential(_conv_bn(cin, width, 1), _conv_bn(width, width, 3, stride),
                                  _conv_bn(width, cout, 1, relu=False))
        self.down = _conv_bn(cin, cout, 1, stride, relu=False) \
            if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        return torch.relu(self.body(x) + self.down(x))


class ResNet(nn.Module):
    def __init__(self, block, layers, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(_conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], 64
        for i, n in enumerate(layers):
            width = 64 * 2 ** i
            for j in range(n):
                blocks.append(block(cin, width, 2 if j == 0 and i > 0 else 1))
                cin = width * block.expansion
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                  nn.Linear(cin, classes))

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        layers = [] if expand == 1 else [_conv6(cin, hidden, 1)]
        layers += [_conv6(hidden, hidden, 3, stride, hidden),
                   _conv_bn(hidden, cout, 1, relu=False)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


def _conv6(cin, cout, k, stride=1, groups=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU6(inplace=True))


class MobileNetV2(nn.Module):
    SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1)]

    def __init__(self, classes=1000):
        super().__init__()
        layers, cin = [_conv6(3, 32, 3, 2)], 32
        for t, c, n, s in self.SETTINGS:
            for i in range(n):
                layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                cin = c
        layers.append(_conv6(cin, 1280, 1))
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1280, classes))

    def forward(self, x):
        return self.head(self.features(x))


MODELS = {"resnet18": lambda: ResNet(BasicBlock, [2, 2, 2, 2]),
          "mobilenet_v2": MobileNetV2,
          "resnet50": lambda: ResNet(Bottleneck, [3, 4, 6, 3])}


def randomized(model: nn.Module) -> nn.Module:
    """`model` in eval mode with random batch-norm statistics (so that they matter)."""
    torch.manual_seed(0)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.1, 0.1)
    return model.eval()


def export_onnx(name: str, path: str) -> tuple[nn.Module, dict]:
    """Build model `name` (MODELS or modern_defs.MODERN) with random weights, export it
    to `path` (opset 17); returns the model and its example inputs by name (tensors)."""
    torch.manual_seed(0)
    if name in MODERN:
        make, inputs = MODERN[name]
        model, feeds = randomized(make()), inputs()
    else:
        model, feeds = randomized(MODELS[name]()), {"input": torch.randn(1, 3, 224, 224)}
    with torch.no_grad():
        torch.onnx.export(model, tuple(feeds.values()), path, input_names=list(feeds),
                          opset_version=17, dynamo=False)
    return model, feeds
