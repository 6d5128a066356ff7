"""A broken plug-in is that plug-in's problem only: one whose import exits, raises or hangs,
or whose `claims_name`/`detect` raises, hangs or answers nonsense, is skipped with one
warning while a built-in checkpoint is detected and measured; asking for it by name is one
UsageError naming the cause."""

from __future__ import annotations

import sys
import threading
import time
import types
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
import torch

from libreyolo.errors import CheckpointError, UsageError
from libreyolo.workload import registry
from libreyolo.workload.yolo9.model import YOLOv9
from tests.conftest import CliResult
from tests.workload.plugins import installed

TARGET = "mynet_plugin:WORKLOAD"
ENTRY = f"[libreyolo.workloads]\nmynet = {TARGET}\n"
GATE = "libreyolo_test_gate"  # a module the test owns: a plug-in that hangs waits on its EVENT
WAITS = f"import {GATE}; {GATE}.EVENT.wait()"

# A complete Workload (so it loads) whose two file checks are the test's.
FAMILY = """
class MyNet:
    name = "mynet"
    sizes = ("t",)
    default_size = "t"
    stride = 32
    fuse_modes = ()
    def default_imgsz(self, size): return 64
    def model_name(self, size): return "MyNet"
    def claims_name(self, stem):
        {claims}
    def detect(self, ckpt):
        {detect}
    def build(self, size, nc, *, for_training): raise NotImplementedError
    def load(self, path, *, size, device): raise NotImplementedError
    def describe(self, model): raise NotImplementedError
    def reset_classes(self, model, nc, names): raise NotImplementedError
    def fuse(self, model, mode): raise NotImplementedError
    def infer_step(self, model, images, paths, **settings): raise NotImplementedError
    def train_step(self, model, *, device, amp, ema=True): raise NotImplementedError
    def train_dataset(self, spec, imgsz, *, seed, cache): raise NotImplementedError
    def collate(self, samples): raise NotImplementedError
    def probe_batch(self, batch, imgsz, nc, *, boxes_per_image=1): raise NotImplementedError
WORKLOAD = MyNet()
"""


def _family(claims: str = "return None", detect: str = "return None") -> str:
    return FAMILY.format(claims=claims, detect=detect)


@pytest.fixture(scope="module")
def plain_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A YOLOv9-t state dict with no metadata, under a name no family claims."""
    path = tmp_path_factory.mktemp("weights") / "plain_state.pt"
    torch.save(YOLOv9("t", 3).state_dict(), path)
    return path


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """The event a hanging plug-in waits on, opened when the test ends (so no thread is left
    waiting) and after 10 s anyway (so the code before the fix, which waits, ends too)."""
    event = threading.Event()
    monkeypatch.setitem(sys.modules, GATE, types.SimpleNamespace(EVENT=event))
    safety = threading.Timer(10, event.set)
    safety.daemon = True
    safety.start()
    yield event
    event.set()
    safety.cancel()
    for thread in threading.enumerate():  # the abandoned ones end now: the next test counts
        if thread.name.startswith("libreyolo plug-in"):
            thread.join(5)


def _plugin(tmp_path: Path, source: str) -> AbstractContextManager[Path]:
    return installed(tmp_path / "site", "mynet", {"mynet_plugin": source}, ENTRY)


def _skipped(reason: str) -> str:
    return f"plug-in family 'mynet' ({TARGET}) skipped: {reason}"


def _plugin_threads() -> int:
    return sum(t.name.startswith("libreyolo plug-in") for t in threading.enumerate())


def _detect_warned(path: Path) -> tuple[tuple[str, str | None, int | None], list[str]]:
    """(family name, size, nc) of `path` and the warnings detecting it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found, size, nc = registry.detect_file(path)
    assert all(w.category.__name__ == "PluginWarning" for w in caught)
    return (found.name, size, nc), [str(w.message) for w in caught]


IMPORTS = {
    "sys.exit": ("import sys; sys.exit(7)", "import raised SystemExit(7)"),
    "BaseException": (
        "class Boom(BaseException): pass\nraise Boom('no driver')",
        "import raised Boom: no driver",
    ),
    "unprintable": (
        "class Odd(Exception):\n    def __str__(self): raise RuntimeError\nraise Odd()",
        "import raised Odd",
    ),
    "no Workload": ("WORKLOAD = 3", "its int object is not a Workload"),
}


@pytest.mark.parametrize("case", IMPORTS)
def test_a_plugin_whose_import_fails_leaves_builtin_files_alone(
    tmp_path: Path, plain_state: Path, case: str
) -> None:
    source, reason = IMPORTS[case]
    with _plugin(tmp_path, source):
        assert _detect_warned(plain_state) == (("yolo9", "t", 3), [_skipped(reason)])
        with pytest.raises(UsageError) as asked:
            registry.family("mynet")
    assert str(asked.value) == f"model family 'mynet' cannot be loaded from {TARGET}: {reason}"


def test_a_plugin_whose_import_hangs_is_abandoned_once(
    tmp_path: Path, plain_state: Path, gate: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry, "PLUGIN_TIMEOUT_S", 0.3, raising=False)
    with _plugin(tmp_path, f"{WAITS}\nWORKLOAD = None"):
        started = time.monotonic()
        found = _detect_warned(plain_state)
        assert time.monotonic() - started < 8  # the gate opens after 10 s
        assert found == (("yolo9", "t", 3), [_skipped("import did not finish within 0.3 s")])
        assert _plugin_threads() == 1  # abandoned, still waiting
        assert _detect_warned(plain_state) == (("yolo9", "t", 3), [])  # no second wait
        assert _plugin_threads() == 1
        with pytest.raises(UsageError, match=r"mynet_plugin:WORKLOAD: import did not finish"):
            registry.family("mynet")


CALLS = {
    "claims_name raises": (
        _family(claims="raise ValueError('boom')"),
        "claims_name raised ValueError: boom",
    ),
    "claims_name exits": (
        _family(claims="raise SystemExit(3)"),
        "claims_name raised SystemExit(3)",
    ),
    "claims_name hangs": (
        _family(claims=f"{WAITS}; return None"),
        "claims_name did not finish within 0.3 s",
    ),
    "claims_name nonsense": (
        _family(claims="return 5"),
        "claims_name returned a value of type int, not a size or None",
    ),
}


@pytest.mark.parametrize("case", CALLS)
def test_a_plugin_whose_name_check_fails_claims_nothing(
    tmp_path: Path,
    plain_state: Path,
    gate: threading.Event,
    monkeypatch: pytest.MonkeyPatch,
    case: str,
) -> None:
    monkeypatch.setattr(registry, "PLUGIN_TIMEOUT_S", 0.3, raising=False)
    source, reason = CALLS[case]
    with _plugin(tmp_path, source):
        assert _detect_warned(plain_state) == (("yolo9", "t", 3), [_skipped(reason)])


@pytest.mark.parametrize(
    ("detect", "reason"),
    [
        ("raise RuntimeError('bad\\nsecond line')", "detect raised RuntimeError: bad"),
        ("return 'x'", "detect returned a value of type str, not (size, nc) or None"),
        ("return ('t', True)", "detect returned a value of type tuple, not (size, nc) or None"),
    ],
)
def test_a_plugin_whose_key_check_fails_is_named_in_the_one_line_error(
    tmp_path: Path, detect: str, reason: str
) -> None:
    weights = tmp_path / "other.pt"
    torch.save({"encoder.w": torch.zeros(1)}, weights)
    with (
        _plugin(tmp_path, _family(detect=detect)),
        pytest.warns(UserWarning) as caught,
        pytest.raises(CheckpointError) as error,
    ):
        registry.detect_file(weights)
    assert [str(w.message) for w in caught] == [_skipped(reason)]
    assert str(error.value).startswith(f"{weights}: no model family we know holds these weights")
    assert error.value.hint == f"broken plug-in families skipped: 'mynet': {reason}"


def test_a_plugin_whose_detect_fails_after_claiming_the_name_claims_nothing(
    tmp_path: Path, plain_state: Path
) -> None:
    source = _family(claims="return 't'", detect="raise KeyError('model')")
    with _plugin(tmp_path, source):
        found = _detect_warned(plain_state)
    assert found == (("yolo9", "t", 3), [_skipped("detect raised KeyError: 'model'")])


def test_a_broken_family_the_metadata_names_is_a_usage_error(tmp_path: Path) -> None:
    weights = tmp_path / "m.pt"
    torch.save({"model": {"w": torch.zeros(1)}, "model_family": "mynet"}, weights)
    with _plugin(tmp_path, "import sys; sys.exit(7)"), pytest.raises(UsageError) as exited:
        registry.detect_file(weights)
    assert str(exited.value) == (
        f"model family 'mynet' cannot be loaded from {TARGET}: import raised SystemExit(7)"
    )
    broken_detect = _family(detect="raise RuntimeError('bad')")
    with _plugin(tmp_path / "2", broken_detect), pytest.raises(UsageError) as raised:
        registry.detect_file(weights)
    assert str(raised.value) == (
        f"model family 'mynet' ({TARGET}) cannot read {weights}: detect raised RuntimeError: bad"
    )


def test_keyboard_interrupt_in_a_plugin_still_interrupts(tmp_path: Path, plain_state: Path) -> None:
    with _plugin(tmp_path, "raise KeyboardInterrupt"), pytest.raises(KeyboardInterrupt):
        registry.detect_file(plain_state)


def test_preloading_builtins_imports_no_plugin(tmp_path: Path) -> None:
    with _plugin(tmp_path, "import sys; sys.exit(7)"):
        registry.preload_builtins()
        assert "mynet_plugin" not in sys.modules
        assert registry.family("yolo9").name == "yolo9"


def _infer(run_cli: Callable[[list[str]], CliResult], weights: Path, project: Path) -> CliResult:
    argv = ["profile", "infer", "--weights", str(weights), "--device", "cpu", "--runs", "2"]
    argv += ["--warmup", "0", "--imgsz", "32", "--project", str(project)]
    return run_cli(argv)


@pytest.mark.parametrize("case", ["sys.exit", "claims_name raises"])
def test_infer_measures_a_builtin_file_past_a_broken_plugin(
    tmp_path: Path, plain_state: Path, run_cli: Callable[[list[str]], CliResult], case: str
) -> None:
    source, reason = IMPORTS[case] if case in IMPORTS else CALLS[case]
    with _plugin(tmp_path, source):
        result = _infer(run_cli, plain_state, tmp_path / "runs")
    assert result.status == 0, result.stderr
    assert [line for line in result.stderr.splitlines() if "plug-in" in line] == [
        f"warning: {_skipped(reason)}"
    ]
    assert (tmp_path / "runs" / "infer" / "profile.json").is_file()


def test_infer_of_a_file_naming_a_broken_plugin_exits_2(
    tmp_path: Path, run_cli: Callable[[list[str]], CliResult]
) -> None:
    weights = tmp_path / "m.pt"
    torch.save({"model": {"w": torch.zeros(1)}, "model_family": "mynet"}, weights)
    with _plugin(tmp_path, "import sys; sys.exit(7)"):
        result = _infer(run_cli, weights, tmp_path / "runs")
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr == (
        f"model family 'mynet' cannot be loaded from {TARGET}: import raised SystemExit(7)\n"
    )
