"""A family from a separate package: found through the `libreyolo.workloads` entry points and
profiled end to end by `libreyolo profile infer` in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from libreyolo.workload import registry
from libreyolo.workload.family import Workload
from tests.workload.plugins import installed

ROOT = Path(__file__).resolve().parents[2]

TINYFAM = '''
"""A two-convolution detector family, packaged the way a third party would ship one."""

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import Dataset
from typing import NamedTuple

from libreyolo.workload.family import Description, InferStages
from libreyolo.workload.infer import InferStep


class Net(nn.Module):
    def __init__(self, size="t", nc=2):
        super().__init__()
        self.family, self.size, self.nc = "tiny", size, nc
        self.names = {i: f"thing{i}" for i in range(nc)}
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(8, 4 + nc, 3, stride=2, padding=1)

    def forward(self, x):
        return self.conv2(F.relu(self.conv1(x))).flatten(2)  # (B, 4 + nc, A)


class Found(NamedTuple):
    boxes: torch.Tensor
    scores: torch.Tensor
    classes: torch.Tensor


def preprocess(images, *, imgsz, device):
    rows = [torch.frombuffer(bytearray(im.resize((imgsz, imgsz)).tobytes()), dtype=torch.uint8)
            for im in images]
    x = torch.stack([r.view(imgsz, imgsz, 3).permute(2, 0, 1) for r in rows]).float() / 255
    return x.to(device), [None] * len(images)


def postprocess(pred, letterboxes, *, conf, iou, max_det):
    out = []
    for p in pred.float():
        scores, classes = p[4:].sigmoid().max(0)
        keep = (scores > conf).nonzero().flatten()[:max_det]
        out.append(Found(p[:4, keep].T, scores[keep], classes[keep]))
    return out


class Batch(NamedTuple):
    images: torch.Tensor
    targets: torch.Tensor


class Noise(Dataset):
    def __init__(self, n, imgsz):
        self.n, self.imgsz = n, imgsz

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.rand(3, self.imgsz, self.imgsz)


class Trainer:
    amp_effective = False

    def __init__(self, model, device):
        self.model, self.device = model.to(device).train(), device
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(self, batch, phases=None):
        images = batch.images.to(self.device)
        total = self.model(images).square().mean()
        total.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        return {"total": float(total)}


class Tiny:
    name = "tiny"
    sizes = ("t",)
    default_size = "t"
    stride = 4
    fuse_modes = ()

    def default_imgsz(self, size):
        return 64

    def model_name(self, size):
        return f"Tiny{size}"

    def claims_name(self, stem):
        return "t" if stem.lower() == "tiny" else None

    def detect(self, ckpt):
        state = ckpt.get("model", {})
        return ("t", int(state["conv2.weight"].shape[0]) - 4) if "conv2.weight" in state else None

    def build(self, size, nc, *, for_training):
        return Net(size, nc)

    def load(self, path, *, size, device):
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
        model = Net(ckpt["size"], ckpt["nc"])
        model.load_state_dict(ckpt["model"])
        return model.to(device).eval()

    def describe(self, model):
        params = sum(p.numel() for p in model.parameters())
        return Description("tiny", model.size, model.nc, dict(model.names), params)

    def reset_classes(self, model, nc, names):
        raise NotImplementedError

    def fuse(self, model, mode):
        raise NotImplementedError

    def infer_step(self, model, images, paths, **settings):
        return InferStep(model, images, paths, stages=InferStages(preprocess, postprocess),
                         **settings)

    def train_step(self, model, *, device, amp, ema=True):
        return Trainer(model, device)

    def train_dataset(self, spec, imgsz, *, seed, cache):
        return Noise(spec.num_images, imgsz)

    def collate(self, samples):
        return Batch(torch.stack(samples), torch.zeros(0, 6))

    def probe_batch(self, batch, imgsz, nc, *, boxes_per_image=1):
        return Batch(torch.rand(batch, 3, imgsz, imgsz), torch.zeros(0, 6))


WORKLOAD = Tiny()
'''


@pytest.fixture
def tinyfam(tmp_path: Path) -> Iterator[Path]:
    """`tinyfam` installed into tmp_path (package + dist-info), on sys.path for this test."""
    entry = "[libreyolo.workloads]\ntiny = tinyfam:WORKLOAD\n"
    with installed(tmp_path / "site", "tinyfam", {"tinyfam": TINYFAM}, entry) as site:
        yield site


def _tiny_checkpoint(site: Path, name: str = "tiny_weights.pt") -> Path:
    tiny = registry.family("tiny")
    model = tiny.build("t", 2, for_training=False)
    path = site.parent / name
    torch.save({"model": model.state_dict(), "model_family": "tiny", "size": "t", "nc": 2}, path)
    return path


def test_an_installed_package_adds_a_family(tinyfam: Path) -> None:
    assert {"yolo9", "yolox", "tiny"} <= set(registry.families())
    tiny = registry.family("tiny")
    assert isinstance(tiny, Workload) and tiny.name == "tiny"
    found, size, nc = registry.detect_file(_tiny_checkpoint(tinyfam))
    assert (found.name, size, nc) == ("tiny", "t", 2)


def test_profile_infer_measures_a_third_party_family(tinyfam: Path) -> None:
    weights = _tiny_checkpoint(tinyfam)
    project = tinyfam.parent / "runs"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tinyfam), str(ROOT)]))
    argv = ["profile", "infer", "--weights", str(weights), "--device", "cpu", "--runs", "4"]
    argv += ["--warmup", "1", "--imgsz", "64", "--project", str(project)]
    code = f"from libreyolo.cli.main import main; raise SystemExit(main({argv!r}))"
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    profile = json.loads((project / "infer" / "profile.json").read_text())
    assert profile["run"]["family"] == "tiny"
    assert profile["run"]["model"] == "Tinyt"
    assert any("tiny has no 'full' fusion" in n for n in profile["notes"])
