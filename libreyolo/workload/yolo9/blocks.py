"""YOLOv9 building blocks with libreyolo 1.6.0's module and state-dict names, plus inference fusion.

Every sub-module name here is part of the checkpoint format (state-dict keys such as
`backbone.elan2.cv2.0.m.0.cv1.conv1.conv.weight` spell them out): renaming an attribute breaks
loading real `LibreYOLO9*.pt` files. This module builds layers only; it must not
know about sizes, heads, checkpoints or files.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

# libreyolo (after MTL YOLO) uses YOLOv5-style BatchNorm settings, not PyTorch's defaults.
BN_EPS = 1e-3
BN_MOMENTUM = 0.03


class Conv(nn.Module):
    """Conv2d (no bias) -> BatchNorm2d -> SiLU; `act=False` leaves out the activation."""

    def __init__(
        self,
        c_in: int,
        c_out: int,
        k: int = 1,
        s: int = 1,
        *,
        groups: int = 1,
        dilation: int = 1,
        act: bool = True,
    ) -> None:
        super().__init__()
        pad = (k // 2) * dilation
        self.conv = nn.Conv2d(c_in, c_out, k, s, pad, dilation=dilation, groups=groups, bias=False)
        self.bn: nn.Module = nn.BatchNorm2d(c_out, eps=BN_EPS, momentum=BN_MOMENTUM)
        self.act: nn.Module = nn.SiLU() if act else nn.Identity()

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.act(self.bn(self.conv(x)))
        return out

    def fuse(self) -> None:
        """Fold the BatchNorm (running statistics) into the convolution; same forward."""
        if isinstance(self.bn, nn.BatchNorm2d):
            self.conv = fuse_conv_bn(self.conv, self.bn)
            self.bn = nn.Identity()


def fuse_conv_bn(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> nn.Conv2d:
    """`conv` itself, changed to compute bn(conv(x)) with the BN's running statistics (its
    weights rescaled, a bias added). In place: a fresh Conv2d would pay a random init per layer
    only to be overwritten, a third of a model's fuse."""
    with torch.no_grad():
        assert bn.running_var is not None and bn.running_mean is not None
        scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
        weight = conv.weight * scale.view(-1, 1, 1, 1)
        bias = conv.bias if conv.bias is not None else torch.zeros_like(bn.running_mean)
        fused_bias = bn.bias + (bias - bn.running_mean) * scale
    conv.weight = nn.Parameter(weight, requires_grad=False)
    conv.bias = nn.Parameter(fused_bias, requires_grad=False)
    return conv


class RepConvN(nn.Module):
    """3x3 Conv+BN and 1x1 Conv+BN on the same input, summed, then SiLU (no identity branch)."""

    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.conv1 = Conv(c_in, c_out, 3, act=False)
        self.conv2 = Conv(c_in, c_out, 1, act=False)
        self.act = nn.SiLU()
        self.fused: nn.Conv2d | None = None

    def forward(self, x: Tensor) -> Tensor:
        if self.fused is not None:
            out: Tensor = self.act(self.fused(x))
        else:
            out = self.act(self.conv1(x) + self.conv2(x))
        return out

    def fuse(self) -> None:
        """Re-parameterise both branches into one 3x3 conv (the 1x1 kernel sits at its centre)."""
        if self.fused is not None:
            return
        k3 = fuse_conv_bn(self.conv1.conv, self.conv1.bn)  # type: ignore[arg-type]
        k1 = fuse_conv_bn(self.conv2.conv, self.conv2.bn)  # type: ignore[arg-type]
        with torch.no_grad():
            assert k3.bias is not None and k1.bias is not None  # fuse_conv_bn always sets one
            k3.weight.add_(F.pad(k1.weight, [1, 1, 1, 1]))
            k3.bias.add_(k1.bias)
        self.fused = k3
        # The branch modules go, so a fused model's state dict is visibly not a checkpoint's.
        del self.conv1, self.conv2


class RepNBottleneck(nn.Module):
    """RepConvN then a 3x3 Conv, with a residual add when the widths allow it."""

    def __init__(self, c_in: int, c_out: int, *, shortcut: bool = True) -> None:
        super().__init__()
        self.cv1 = RepConvN(c_in, c_out)
        self.cv2 = Conv(c_out, c_out, 3)
        self.add = shortcut and c_in == c_out

    def forward(self, x: Tensor) -> Tensor:
        y: Tensor = self.cv2(self.cv1(x))
        return x + y if self.add else y


class RepNCSP(nn.Module):
    """CSP block: [1x1 -> n bottlenecks, 1x1] concatenated -> 1x1 (hidden = out/2)."""

    def __init__(self, c_in: int, c_out: int, n: int = 1) -> None:
        super().__init__()
        hidden = c_out // 2
        self.cv1 = Conv(c_in, hidden, 1)
        self.cv2 = Conv(c_in, hidden, 1)
        self.cv3 = Conv(2 * hidden, c_out, 1)
        self.m = nn.Sequential(*(RepNBottleneck(hidden, hidden) for _ in range(n)))

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))
        return out


class ELAN(nn.Module):
    """The t/s first block: 1x1 split in halves, two chained 3x3 convs, concat of four -> 1x1."""

    def __init__(self, c_in: int, part: int, c_out: int, n: int = 1) -> None:
        super().__init__()
        half = part // 2
        self.cv1 = Conv(c_in, part, 1)
        self.cv2 = self._branch(half, n)
        self.cv3 = self._branch(half, n)
        self.cv4 = Conv(2 * part, c_out, 1)

    def _branch(self, half: int, n: int) -> nn.Module:
        return Conv(half, half, 3)

    def forward(self, x: Tensor) -> Tensor:
        y = list(self.cv1(x).chunk(2, 1))
        y.append(self.cv2(y[-1]))
        y.append(self.cv3(y[-1]))
        out: Tensor = self.cv4(torch.cat(y, 1))
        return out


class RepNCSPELAN(ELAN):
    """RepNCSPELAN4: ELAN whose two chained branches are [RepNCSP -> 3x3] (same state-dict keys)."""

    def _branch(self, half: int, n: int) -> nn.Module:
        return nn.Sequential(RepNCSP(half, half, n), Conv(half, half, 3))


class AConv(nn.Module):
    """Down-sampler of t/s/m: 2x2 average pool (stride 1) -> 3x3 Conv stride 2."""

    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.cv = Conv(c_in, c_out, 3, 2)

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.cv(F.avg_pool2d(x, 2, 1, 0))
        return out


class ADown(nn.Module):
    """Down-sampler of c: 2x2 average pool, then half by 3x3/s2 conv and half by max-pool + 1x1."""

    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        self.cv1 = Conv(c_in // 2, c_out // 2, 3, 2)
        self.cv2 = Conv(c_in // 2, c_out // 2, 1)

    def forward(self, x: Tensor) -> Tensor:
        a, b = F.avg_pool2d(x, 2, 1, 0).chunk(2, 1)
        return torch.cat((self.cv1(a), self.cv2(F.max_pool2d(b, 3, 2, 1))), 1)


class SPPELAN(nn.Module):
    """1x1 to out/2, three chained 5x5 max-pools, concat of the four -> 1x1."""

    def __init__(self, c_in: int, c_out: int) -> None:
        super().__init__()
        mid = c_out // 2
        self.cv1 = Conv(c_in, mid, 1)
        self.pool = nn.MaxPool2d(5, 1, 2)
        self.cv5 = Conv(4 * mid, c_out, 1)

    def forward(self, x: Tensor) -> Tensor:
        y = [self.cv1(x)]
        for _ in range(3):
            y.append(self.pool(y[-1]))
        out: Tensor = self.cv5(torch.cat(y, 1))
        return out


class DFL(nn.Module):
    """Distribution focal loss integral: (B, 4*reg_max, A) logits -> (B, 4, A) distances (cells)."""

    def __init__(self, reg_max: int = 16) -> None:
        super().__init__()
        self.reg_max = reg_max
        # Non-persistent: not in the state dict (legacy files carry it as a conv weight; dropped).
        self.register_buffer(
            "project", torch.arange(reg_max, dtype=torch.float32), persistent=False
        )

    def forward(self, x: Tensor) -> Tensor:
        b, _, a = x.shape
        probs = x.view(b, 4, self.reg_max, a).softmax(2)
        project: Tensor = self.project  # type: ignore[assignment]
        return torch.einsum("bsna,n->bsa", probs, project.to(probs.dtype))


def fuse_model(model: nn.Module, *, reparameterise: bool = True) -> nn.Module:
    """Fold every Conv's BatchNorm and (by default) re-parameterise every RepConvN, in place.

    With `reparameterise=False` only the BatchNorms go: the network computes the same function
    with the same convolutions, minus the norm ops (what `what-if --remove-category norm` predicts).
    """
    # RepConvN first: it reads its branches' unfused BatchNorms.
    if reparameterise:
        for module in list(model.modules()):
            if isinstance(module, RepConvN):
                module.fuse()
    for module in list(model.modules()):
        if isinstance(module, Conv):
            module.fuse()
    return model
