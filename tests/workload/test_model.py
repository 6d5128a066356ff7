"""YOLOv9 model: sizes and parameter counts, output contract, loss helpers, fusion."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from libreyolo.errors import UsageError
from libreyolo.workload.yolo9.blocks import RepConvN
from libreyolo.workload.yolo9.model import (
    YOLOv9,
    dfl_distances,
    distances_to_xyxy,
    make_anchors,
)

# Counted on models built by libreyolo 1.6.0's own nn.py, nc = 80.
PARAMS = {"t": 2_036_544, "s": 7_226_192, "m": 20_123_984, "c": 25_498_736}
PARAMS_AUX = {"t": 2_905_488, "s": 9_804_480, "m": 27_606_704, "c": 35_740_192}
STATE_KEYS = {"t": 1338, "s": 1338, "m": 906, "c": 936}
CLS_WIDTH = {"t": 80, "s": 128, "m": 240, "c": 256}
T_LAYERS = {
    "backbone.conv0": 464, "backbone.conv1": 4_672, "backbone.elan1": 7_872,
    "backbone.down2": 18_560, "backbone.elan2": 65_216, "backbone.down3": 55_488,
    "backbone.elan3": 145_824, "backbone.down4": 110_848, "backbone.elan4": 258_432,
    "backbone.spp": 41_344, "neck.elan_up1": 158_112, "neck.elan_up2": 71_360,
    "neck.down1": 27_744, "neck.elan_down1": 150_432, "neck.down2": 55_424,
    "neck.elan_down2": 266_624, "head": 598_128,
}  # fmt: skip


def _count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _meta(size: str, **kwargs: object) -> YOLOv9:
    with torch.device("meta"):  # shapes only: the c size builds in milliseconds
        return YOLOv9(size, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("size", ["t", "s", "m", "c"])
def test_parameter_and_state_dict_counts_match_libreyolo(size: str) -> None:
    model = _meta(size)
    assert _count(model) == PARAMS[size]
    assert len(model.state_dict()) == STATE_KEYS[size]
    assert model.cls_width == CLS_WIDTH[size]
    assert model.state_dict()["head.cv2.0.2.weight"].shape[0] == 64
    assert _count(_meta(size, aux=True)) == PARAMS_AUX[size]


def test_t_per_layer_parameter_counts() -> None:
    model = _meta("t")
    got = {name: _count(model.get_submodule(name)) for name in T_LAYERS}
    assert got == T_LAYERS


def test_class_width_follows_nc_unless_given() -> None:
    assert _meta("t", nc=2).cls_width == 64
    assert _meta("t", nc=2, cls_width=80).cls_width == 80
    assert _meta("s", nc=200).cls_width == 128


def test_reset_classes_keeps_tower_width() -> None:
    model = YOLOv9("t", aux=True)
    model.reset_classes(3, {0: "a", 1: "b", 2: "c"})
    assert (model.nc, model.cls_width, model.names[2]) == (3, 80, "c")
    with torch.no_grad():
        out = model.eval()(torch.rand(1, 3, 64, 64))
    assert out.shape == (1, 7, 84)
    assert float(out[:, 4:].max()) < 1e-3
    train = model.train()(torch.rand(1, 3, 64, 64))
    assert train.aux is not None and train.aux[0].shape[1] == 64 + 3


def test_bad_arguments_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="unknown YOLOv9 size 'x'"):
        YOLOv9("x")
    with pytest.raises(UsageError, match="nc must be at least 1"):
        YOLOv9("t", nc=0)


def test_attributes_and_fresh_scores() -> None:
    model = YOLOv9("t", nc=3, names={0: "a", 1: "b", 2: "c"})
    assert (model.family, model.size, model.nc, model.reg_max) == ("yolo9", "t", 3, 16)
    assert model.strides == (8, 16, 32)
    assert model.names == {0: "a", 1: "b", 2: "c"}
    assert (model.imgsz, model.letterbox_pad) == (640, "topleft")
    with torch.no_grad():
        out = model.eval()(torch.rand(1, 3, 64, 96))
    assert out.shape == (1, 4 + 3, 8 * 12 + 4 * 6 + 2 * 3)
    assert float(out[:, 4:].max()) < 1e-3  # class bias -10: sigmoid ~ 4.5e-5 before training


def test_eval_output_shapes_at_640() -> None:
    model = YOLOv9("t").eval()
    with torch.no_grad():
        feats = model.forward_features(torch.rand(1, 3, 640, 640))
    assert feats["predictions"].shape == (1, 84, 8400)
    assert [tuple(m.shape) for m in feats["raw_outputs"]] == [
        (1, 144, 80, 80),
        (1, 144, 40, 40),
        (1, 144, 20, 20),
    ]
    assert feats["x8"].shape == (1, 64, 80, 80)
    assert feats["x16"].shape == (1, 96, 40, 40)
    assert feats["x32"].shape == (1, 128, 20, 20)


@pytest.mark.parametrize("aux", [False, True])
def test_train_mode_returns_raw_maps(aux: bool) -> None:
    torch.manual_seed(0)
    model = YOLOv9("t", nc=5, aux=aux).train()
    out = model(torch.rand(2, 3, 64, 96))
    assert [tuple(m.shape) for m in out.main] == [(2, 69, 8, 12), (2, 69, 4, 6), (2, 69, 2, 3)]
    if aux:
        assert out.aux is not None
        assert [m.shape for m in out.aux] == [m.shape for m in out.main]
        assert any(k.startswith("aux_head.") for k in model.state_dict())
    else:
        assert out.aux is None
        assert not any(k.startswith("aux") for k in model.state_dict())


def test_anchor_points_are_cell_centres_row_major_and_cached() -> None:
    model = YOLOv9("t")
    maps = [torch.zeros(1, 1, 4, 2), torch.zeros(1, 1, 2, 1), torch.zeros(1, 1, 1, 1)]
    points, stride = model.anchor_points(maps)
    assert points.shape == (11, 2) and stride.shape == (11, 1)
    assert points[:3].tolist() == [[0.5, 0.5], [1.5, 0.5], [0.5, 1.5]]  # x varies fastest
    assert stride[:, 0].tolist() == [8.0] * 8 + [16.0] * 2 + [32.0]
    again = model.anchor_points([m.clone() for m in maps])
    assert again[0] is points  # cached per map sizes
    fresh = make_anchors(maps, model.strides)
    assert torch.equal(fresh[0], points) and torch.equal(fresh[1], stride)


def test_loss_helpers_reproduce_the_decoded_predictions() -> None:
    torch.manual_seed(1)
    model = YOLOv9("t", nc=4).eval()
    maps = [torch.randn(2, 68, 6, 4), torch.randn(2, 68, 3, 2), torch.randn(2, 68, 2, 1)]
    box, cls = model.flatten_maps(maps)
    assert box.shape == (2, 32, 4, 16) and cls.shape == (2, 32, 4)
    points, stride = model.anchor_points(maps)
    xyxy = distances_to_xyxy(dfl_distances(box), points) * stride
    decoded = model.decode(maps)
    torch.testing.assert_close(decoded[:, :4].transpose(1, 2), xyxy)
    torch.testing.assert_close(decoded[:, 4:].transpose(1, 2), cls.sigmoid())
    # Distances are expectations over bins 0..15: boxes reach at most 15 cells from the anchor.
    assert float((xyxy - torch.cat((points, points), 1) * stride).abs().div(stride).max()) <= 15


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_boxes_are_decoded_in_float32_under_autocast(dtype: torch.dtype) -> None:
    """At 640 px bf16 would put every coordinate on a 4-px grid; the decode stays float32."""
    torch.manual_seed(2)
    model = YOLOv9("t", nc=4).eval()
    maps = [torch.randn(1, 68, 80, 80), torch.randn(1, 68, 40, 40), torch.randn(1, 68, 20, 20)]
    low = [m.to(dtype) for m in maps]
    expected = model.decode([m.float() for m in low])
    with torch.autocast("cpu", dtype=dtype):
        decoded = model.decode(low)
    assert decoded.dtype == torch.float32
    torch.testing.assert_close(decoded, expected, rtol=0, atol=1e-4)
    fractions = decoded[:, :4] - decoded[:, :4].floor()
    assert float(fractions.abs().max()) > 0.5  # sub-pixel coordinates survive


def test_fused_copy_matches_and_leaves_the_original() -> None:
    torch.manual_seed(0)
    model = YOLOv9("t", nc=7).eval()
    for module in model.modules():  # non-trivial BN statistics, as in the fixture
        if isinstance(module, nn.BatchNorm2d):
            assert module.running_mean is not None and module.running_var is not None
            module.running_mean.normal_(0, 0.1)
            module.running_var.uniform_(0.75, 1.25)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.normal_(0, 0.1)
    x = torch.rand(1, 3, 128, 96)
    fused = model.fuse()
    assert fused is not model and fused.is_fused and not model.is_fused
    assert not any(isinstance(m, nn.BatchNorm2d) for m in fused.modules())
    assert all(not hasattr(m, "conv1") for m in fused.modules() if isinstance(m, RepConvN))
    assert any(isinstance(m, nn.BatchNorm2d) for m in model.modules())
    with torch.no_grad():
        ref, got = model.forward_features(x), fused.forward_features(x)
    torch.testing.assert_close(got["predictions"], ref["predictions"], atol=1e-4, rtol=0)
    for a, b in zip(got["raw_outputs"], ref["raw_outputs"], strict=True):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=0)


def test_bn_only_fusion_removes_the_norms_and_nothing_else() -> None:
    torch.manual_seed(0)
    model = YOLOv9("t", nc=5).eval()
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            assert module.running_mean is not None and module.running_var is not None
            module.running_mean.normal_(0, 0.1)
            module.running_var.uniform_(0.75, 1.25)
    folded = model.fuse("bn")
    assert not any(isinstance(m, nn.BatchNorm2d) for m in folded.modules())
    assert all(hasattr(m, "conv1") for m in folded.modules() if isinstance(m, RepConvN))
    convs = [m for m in folded.modules() if isinstance(m, nn.Conv2d)]
    assert len(convs) == sum(isinstance(m, nn.Conv2d) for m in model.modules())
    assert all(c.weight.is_contiguous() for c in convs)  # layout untouched (not channels-last)
    x = torch.rand(1, 3, 96, 64)
    with torch.no_grad():
        ref, got = model.forward_features(x), folded.forward_features(x)
    torch.testing.assert_close(got["predictions"], ref["predictions"], atol=1e-4, rtol=0)


def test_unknown_fuse_mode_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="fuse must be one of full, bn"):
        YOLOv9("t", nc=1).fuse("fast")  # type: ignore[arg-type]


def test_in_place_fusion_fuses_the_model_itself() -> None:
    torch.manual_seed(0)
    model = YOLOv9("t", nc=3).eval()
    x = torch.rand(1, 3, 64, 64)
    with torch.no_grad():
        ref = model(x)
        fused = model.fuse(in_place=True)
        got = fused(x)
    assert fused is model and model.is_fused
    assert not any(isinstance(m, nn.BatchNorm2d) for m in model.modules())
    torch.testing.assert_close(got, ref, atol=1e-4, rtol=0)
