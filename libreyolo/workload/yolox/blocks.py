"""YOLOX building blocks (CSPDarknet, PAFPN, decoupled head) with official YOLOX's module names.

Every attribute name here, and the order modules are registered in, is part of the checkpoint
format: libreyolo 1.6.0 and official YOLOX write `backbone.backbone.stem.conv.conv.weight`,
`head.cls_convs.0.0.dconv...`, `head.stems.2.bn.running_var` and so on.
Renaming or reordering an attribute breaks loading real `LibreYOLOX*.pt` files. This module builds
layers only; it must not know about sizes, checkpoints or files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

# Official YOLOX (Exp.get_model) sets these on every BatchNorm, for every size.
BN_EPS = 1e-3
BN_MOMENTUM = 0.03
IN_CHANNELS = (256, 512, 1024)  # widths of dark3/dark4/dark5 at width multiplier 1.0
HEAD_WIDTH = 256  # head stem width at width multiplier 1.0


class BaseConv(nn.Module):
    """Conv2d (no bias, 'same' padding) -> BatchNorm2d -> SiLU."""

    def __init__(self, c_in: int, c_out: int, k: int, s: int = 1, *, groups: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, k, s, (k - 1) // 2, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(c_out, eps=BN_EPS, momentum=BN_MOMENTUM)
        self.act = nn.SiLU(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.act(self.bn(self.conv(x)))
        return out


class DWConv(nn.Module):
    """Depthwise k x k BaseConv then pointwise 1x1 BaseConv (YOLOX-nano's convolutions)."""

    def __init__(self, c_in: int, c_out: int, k: int, s: int = 1) -> None:
        super().__init__()
        self.dconv = BaseConv(c_in, c_in, k, s, groups=c_in)
        self.pconv = BaseConv(c_in, c_out, 1)

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.pconv(self.dconv(x))
        return out


def conv_kind(depthwise: bool) -> type[BaseConv] | type[DWConv]:
    """The k x k convolution a size uses: DWConv when depthwise (n), else BaseConv."""
    return DWConv if depthwise else BaseConv


class Bottleneck(nn.Module):
    """1x1 then 3x3 conv, with a residual add when `shortcut` and the widths agree."""

    def __init__(
        self, c_in: int, c_out: int, *, shortcut: bool = True, depthwise: bool = False
    ) -> None:
        super().__init__()
        self.conv1 = BaseConv(c_in, c_out, 1)  # expansion 1.0 inside a CSPLayer
        self.conv2 = conv_kind(depthwise)(c_out, c_out, 3)
        self.use_add = shortcut and c_in == c_out

    def forward(self, x: Tensor) -> Tensor:
        y: Tensor = self.conv2(self.conv1(x))
        return y + x if self.use_add else y


class CSPLayer(nn.Module):
    """CSP block: two 1x1 halves, n bottlenecks on the first, concatenated and fused by a 1x1."""

    def __init__(
        self, c_in: int, c_out: int, n: int = 1, *, shortcut: bool = True, depthwise: bool = False
    ) -> None:
        super().__init__()
        hidden = int(c_out * 0.5)
        self.conv1 = BaseConv(c_in, hidden, 1)
        self.conv2 = BaseConv(c_in, hidden, 1)
        self.conv3 = BaseConv(2 * hidden, c_out, 1)
        self.m = nn.Sequential(
            *(Bottleneck(hidden, hidden, shortcut=shortcut, depthwise=depthwise) for _ in range(n))
        )

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.conv3(torch.cat((self.m(self.conv1(x)), self.conv2(x)), dim=1))
        return out


class SPPBottleneck(nn.Module):
    """Spatial pyramid pooling: 1x1 halving, max pools 5/9/13 (stride 1), concatenated, 1x1."""

    def __init__(self, c_in: int, c_out: int, kernels: Sequence[int] = (5, 9, 13)) -> None:
        super().__init__()
        hidden = c_in // 2
        self.conv1 = BaseConv(c_in, hidden, 1)
        self.m = nn.ModuleList(nn.MaxPool2d(k, stride=1, padding=k // 2) for k in kernels)
        self.conv2 = BaseConv(hidden * (len(kernels) + 1), c_out, 1)

    def forward(self, x: Tensor) -> Tensor:
        x = self.conv1(x)
        out: Tensor = self.conv2(torch.cat([x, *(pool(x) for pool in self.m)], dim=1))
        return out


class Focus(nn.Module):
    """Space to depth (B, C, H, W) -> (B, 4C, H/2, W/2), then a BaseConv."""

    def __init__(self, c_in: int, c_out: int, k: int = 1, s: int = 1) -> None:
        super().__init__()
        self.conv = BaseConv(c_in * 4, c_out, k, s)

    def forward(self, x: Tensor) -> Tensor:
        # Official YOLOX's patch order: top-left, bottom-left, top-right, bottom-right.
        patches = (x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2])
        out: Tensor = self.conv(torch.cat(patches, dim=1))
        return out


class CSPDarknet(nn.Module):
    """Focus stem and four stages (dark2..dark5, SPP in dark5); returns dark3, dark4, dark5."""

    def __init__(self, depth: float, width: float, *, depthwise: bool = False) -> None:
        super().__init__()
        conv = conv_kind(depthwise)
        c = int(width * 64)
        n = max(round(depth * 3), 1)
        self.stem = Focus(3, c, k=3)
        self.dark2 = nn.Sequential(
            conv(c, c * 2, 3, 2), CSPLayer(c * 2, c * 2, n, depthwise=depthwise)
        )
        self.dark3 = nn.Sequential(
            conv(c * 2, c * 4, 3, 2), CSPLayer(c * 4, c * 4, n * 3, depthwise=depthwise)
        )
        self.dark4 = nn.Sequential(
            conv(c * 4, c * 8, 3, 2), CSPLayer(c * 8, c * 8, n * 3, depthwise=depthwise)
        )
        self.dark5 = nn.Sequential(
            conv(c * 8, c * 16, 3, 2),
            SPPBottleneck(c * 16, c * 16),
            CSPLayer(c * 16, c * 16, n, shortcut=False, depthwise=depthwise),
        )

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        d3 = self.dark3(self.dark2(self.stem(x)))
        d4 = self.dark4(d3)
        return d3, d4, self.dark5(d4)


class YOLOPAFPN(nn.Module):
    """CSPDarknet plus the PAFPN neck (top-down then bottom-up); returns strides 8, 16, 32."""

    def __init__(self, depth: float, width: float, *, depthwise: bool = False) -> None:
        super().__init__()
        self.backbone = CSPDarknet(depth, width, depthwise=depthwise)
        conv = conv_kind(depthwise)
        c3, c4, c5 = (int(c * width) for c in IN_CHANNELS)
        n = round(3 * depth)
        self.upsample = nn.Upsample(scale_factor=2, mode="nearest")
        self.lateral_conv0 = BaseConv(c5, c4, 1)
        self.C3_p4 = CSPLayer(2 * c4, c4, n, shortcut=False, depthwise=depthwise)
        self.reduce_conv1 = BaseConv(c4, c3, 1)
        self.C3_p3 = CSPLayer(2 * c3, c3, n, shortcut=False, depthwise=depthwise)
        self.bu_conv2 = conv(c3, c3, 3, 2)
        self.C3_n3 = CSPLayer(2 * c3, c4, n, shortcut=False, depthwise=depthwise)
        self.bu_conv1 = conv(c4, c4, 3, 2)
        self.C3_n4 = CSPLayer(2 * c4, c5, n, shortcut=False, depthwise=depthwise)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        d3, d4, d5 = self.backbone(x)
        fpn_out0 = self.lateral_conv0(d5)
        f_out0 = self.C3_p4(torch.cat([self.upsample(fpn_out0), d4], 1))
        fpn_out1 = self.reduce_conv1(f_out0)
        pan_out2 = self.C3_p3(torch.cat([self.upsample(fpn_out1), d3], 1))
        pan_out1 = self.C3_n3(torch.cat([self.bu_conv2(pan_out2), fpn_out1], 1))
        pan_out0 = self.C3_n4(torch.cat([self.bu_conv1(pan_out1), fpn_out0], 1))
        return pan_out2, pan_out1, pan_out0


class YOLOXHead(nn.Module):
    """Decoupled head per stride: 1x1 stem, cls tower -> nc, reg tower -> 4 box + 1 objectness.

    Output channels per stride: 4 raw box regressions, objectness, nc classes; objectness and
    classes are logits in train mode and sigmoid probabilities in eval mode (as 1.6.0).
    """

    def __init__(self, nc: int, width: float, *, depthwise: bool = False) -> None:
        super().__init__()
        conv = conv_kind(depthwise)
        hidden = int(HEAD_WIDTH * width)
        self.nc = nc
        # Registration order is the checkpoint's key order: towers, preds, then stems.
        self.cls_convs = nn.ModuleList(
            nn.Sequential(conv(hidden, hidden, 3), conv(hidden, hidden, 3)) for _ in IN_CHANNELS
        )
        self.reg_convs = nn.ModuleList(
            nn.Sequential(conv(hidden, hidden, 3), conv(hidden, hidden, 3)) for _ in IN_CHANNELS
        )
        self.cls_preds = nn.ModuleList(nn.Conv2d(hidden, nc, 1) for _ in IN_CHANNELS)
        self.reg_preds = nn.ModuleList(nn.Conv2d(hidden, 4, 1) for _ in IN_CHANNELS)
        self.obj_preds = nn.ModuleList(nn.Conv2d(hidden, 1, 1) for _ in IN_CHANNELS)
        self.stems = nn.ModuleList(BaseConv(int(c * width), hidden, 1) for c in IN_CHANNELS)

    def initialize_biases(self, prior_prob: float = 0.01) -> None:
        """Class and objectness biases at logit(prior_prob), as 1.6.0 seeds a fresh head."""
        value = -math.log((1 - prior_prob) / prior_prob)
        with torch.no_grad():
            for pred in (*self.cls_preds, *self.obj_preds):
                assert isinstance(pred, nn.Conv2d) and pred.bias is not None
                pred.bias.fill_(value)

    def forward(self, feats: Sequence[Tensor]) -> list[Tensor]:
        outputs = []
        for k, x in enumerate(feats):
            x = self.stems[k](x)
            cls_out = self.cls_preds[k](self.cls_convs[k](x))
            reg_feat = self.reg_convs[k](x)
            reg_out, obj_out = self.reg_preds[k](reg_feat), self.obj_preds[k](reg_feat)
            if not self.training:
                obj_out, cls_out = obj_out.sigmoid(), cls_out.sigmoid()
            outputs.append(torch.cat([reg_out, obj_out, cls_out], 1))
        return outputs
