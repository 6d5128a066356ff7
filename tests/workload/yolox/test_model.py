"""The YOLOX network: 1.6.0 fixture parity, sizes, parameter counts, keys, output contract."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from libreyolo.errors import UsageError
from libreyolo.workload.yolox.blocks import BN_EPS, BN_MOMENTUM, DWConv
from libreyolo.workload.yolox.checkpoint import STEM_KEY
from libreyolo.workload.yolox.model import SIZES, YOLOX
from tests.fixture_files import YOLOX_N, fixture_file

FIXTURE = fixture_file(YOLOX_N)
# Trainable parameters (BatchNorm buffers excluded): n counted on the 1.6.0 fixture, t and s as
# 1.6.0 reports for its random-init LibreYOLOXt/s.pt.
PARAMS = {"n": 912_159, "t": 5_055_855, "s": 8_968_255}
STATE_TENSORS = {"n": 642, "t": 462, "s": 462}  # state_dict() entries, buffers included


def _params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


@pytest.fixture(scope="module")
def fixture_state() -> dict[str, torch.Tensor]:
    return torch.load(FIXTURE, map_location="cpu", weights_only=True)["model"]


@pytest.fixture(scope="module")
def nano(fixture_state: dict[str, torch.Tensor]) -> YOLOX:
    model = YOLOX("n", nc=80)
    model.load_state_dict(fixture_state)
    return model.eval()


def test_fixture_outputs_reproduced(nano: YOLOX) -> None:
    expected = np.load(FIXTURE.with_suffix(".expected.npz"))
    with torch.no_grad():
        outputs = nano(torch.from_numpy(expected["input"]))
    assert len(outputs) == 3
    for i, out in enumerate(outputs):
        assert out.shape == expected[f"out.{i}"].shape
        diff = np.abs(out.numpy() - expected[f"out.{i}"]).max()
        assert diff <= 1e-3, f"out.{i}: max abs diff {diff}"


def test_fixture_keys_match_key_for_key(fixture_state: dict[str, torch.Tensor]) -> None:
    ours = YOLOX("n", nc=80).state_dict()
    assert list(ours) == list(fixture_state)
    assert all(ours[k].shape == v.shape for k, v in fixture_state.items())
    counted = sum(v.numel() for k, v in fixture_state.items() if k.rsplit(".", 1)[-1]
                  not in ("running_mean", "running_var", "num_batches_tracked"))  # fmt: skip
    assert counted == PARAMS["n"]


@pytest.mark.parametrize("size", ["n", "t", "s"])
def test_parameter_and_tensor_counts(size: str) -> None:
    model = YOLOX(size)
    assert _params(model) == PARAMS[size]
    assert len(model.state_dict()) == STATE_TENSORS[size]


def test_larger_sizes_build_with_their_widths() -> None:
    counts = []
    for size in ("s", "m", "l", "x"):
        model = YOLOX(size, nc=3)
        width = SIZES[size].width
        state = model.state_dict()
        assert state[STEM_KEY].shape[0] == int(64 * width)
        for k in range(3):
            stem = state[f"head.stems.{k}.conv.weight"]
            assert stem.shape[0] == int(256 * width) == SIZES[size].head_width
        counts.append(_params(model))
    assert counts == sorted(counts) and len(set(counts)) == 4


def test_depthwise_only_for_nano() -> None:
    assert any(isinstance(m, DWConv) for m in YOLOX("n").modules())
    assert not any(isinstance(m, DWConv) for m in YOLOX("t").modules())
    assert "backbone.backbone.dark2.0.dconv.conv.weight" in YOLOX("n").state_dict()


def test_batchnorm_settings_and_prior_biases() -> None:
    model = YOLOX("t", nc=5)
    norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    assert norms and all((m.eps, m.momentum) == (BN_EPS, BN_MOMENTUM) for m in norms)
    prior = -math.log((1 - 0.01) / 0.01)
    for pred in (*model.head.cls_preds, *model.head.obj_preds):
        assert torch.allclose(pred.bias, torch.full_like(pred.bias, prior))


def test_attributes() -> None:
    model = YOLOX("t", nc=2, names={0: "cat", 1: "dog"})
    assert (model.family, model.size, model.nc, model.strides) == ("yolox", "t", 2, (8, 16, 32))
    assert model.names == {0: "cat", 1: "dog"}
    assert YOLOX("s", nc=3).names == {0: "class0", 1: "class1", 2: "class2"}
    assert [YOLOX(s).default_imgsz for s in ("n", "t", "s")] == [416, 416, 640]
    with pytest.raises(UsageError, match="unknown YOLOX size 'q'"):
        YOLOX("q")
    with pytest.raises(UsageError, match="nc must be at least 1"):
        YOLOX("s", nc=0)


def test_eval_probabilities_and_train_logits(nano: YOLOX) -> None:
    x = torch.rand(1, 3, 64, 96) * 255
    with torch.no_grad():
        evaluated = nano(x)
        nano.train()
        for module in nano.modules():  # same BatchNorm statistics in both passes
            if isinstance(module, nn.BatchNorm2d):
                module.eval()
        try:
            raw = nano(x)
        finally:
            nano.eval()
    for stride, ev, tr in zip((8, 16, 32), evaluated, raw, strict=True):
        assert ev.shape == tr.shape == (1, 85, 64 // stride, 96 // stride)
        assert torch.allclose(ev[:, :4], tr[:, :4])
        assert torch.allclose(ev[:, 4:], tr[:, 4:].sigmoid(), atol=1e-6)
        assert ev[:, 4:].min() >= 0 and ev[:, 4:].max() <= 1
        assert tr[:, 4:].min() < 0  # logits, not probabilities


def test_train_mode_backward() -> None:
    model = YOLOX("n", nc=2).train()
    outputs = model(torch.rand(2, 3, 64, 64) * 255)
    assert [o.shape for o in outputs] == [(2, 7, 8, 8), (2, 7, 4, 4), (2, 7, 2, 2)]
    sum(o.sum() for o in outputs).backward()
    assert all(p.grad is not None for p in model.parameters())
