"""`scripts/gpu_check.sh`: `--dry-run` proves the wheel folder for the GPU machine is complete and
every import resolves with it, or says which piece is missing (exit 1), and prints a plan whose
outputs and time budget fit the device tool's limits, before any device time is spent. The
driver's own parts are checked here too: every planned command parses with the real CLI, the
packer never plans a part over the limit, the checks read profiles of each shape, and one failed,
hung or unreadable step never skips the next. Wheels are built here as minimal real wheel files,
and the GPU steps are played by a fake interpreter, so the tests need no network and no GPU.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from tests.scripts_module import script_module

ROOT = Path(__file__).resolve().parents[1]
PURE = "py3-none-any"
CP312 = "cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64"
# (distribution, version, module, tag, requirements): what scripts/gpu_wheels.txt pins.
WHEELS = (
    (
        "hydra_core",
        "1.3.8",
        "hydra",
        PURE,
        ("omegaconf<2.4,>=2.2", "antlr4-python3-runtime==4.9.*"),
    ),
    ("omegaconf", "2.3.1", "omegaconf", PURE, ("antlr4-python3-runtime==4.9.*", "PyYAML>=5.1.0")),
    ("antlr4_python3_runtime", "4.9.3", "antlr4", PURE, ()),
    ("msgspec", "0.23.0", "msgspec", CP312, ()),
    ("nvidia_ml_py", "13.615.71", "pynvml", PURE, ()),
)


def _gpu_env() -> ModuleType:
    return script_module("gpu_env")


def _wheel(
    folder: Path, dist: str, version: str, module: str, tag: str, requires: tuple[str, ...]
) -> Path:
    info = f"{dist}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": "",
        f"{info}/METADATA": "Metadata-Version: 2.1\n"
        f"Name: {dist}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires)
        + 'Requires-Dist: importlib-resources; python_version < "3.9"\n',
        f"{info}/WHEEL": "Wheel-Version: 1.0\n"
        + f"Root-Is-Purelib: {'true' if tag == PURE else 'false'}\n"
        + "".join(f"Tag: {t}\n" for t in _tags(tag)),
    }
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    path = folder / f"{dist}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def _tags(tag: str) -> list[str]:
    py, abi, plats = tag.split("-")
    return [f"{py}-{abi}-{plat}" for plat in plats.split(".")]


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    folder = tmp_path / "whl"
    folder.mkdir()
    for entry in WHEELS:
        _wheel(folder, *entry)
    return folder


def _dry_run(wheels: Path) -> subprocess.CompletedProcess[str]:
    env = os.environ | {"PYTHON": sys.executable, "WHEELS": str(wheels)}
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--dry-run"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_gpu_check_dry_run_accepts_a_complete_wheel_folder(wheels: Path) -> None:
    proc = _dry_run(wheels)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("gpu_env: check ok: ")
    for module in ("hydra", "msgspec", "omegaconf", "torch", "yaml"):
        assert module in proc.stdout
    assert proc.stderr == ""


def test_gpu_check_dry_run_names_a_missing_wheel(wheels: Path) -> None:
    next(wheels.glob("msgspec-*.whl")).unlink()
    proc = _dry_run(wheels)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == ["gpu_env: missing wheel: msgspec==0.23.0"]


def test_gpu_check_dry_run_names_an_unmet_wheel_requirement(wheels: Path) -> None:
    next(wheels.glob("antlr4_*.whl")).unlink()
    lines = _dry_run(wheels).stderr.splitlines()
    assert "gpu_env: missing wheel: antlr4-python3-runtime==4.9.3" in lines
    assert (
        "gpu_env: omegaconf needs antlr4-python3-runtime: neither a wheel nor on the machine"
        in lines
    )


def test_gpu_check_dry_run_refuses_a_wheel_for_another_python(wheels: Path) -> None:
    next(wheels.glob("msgspec-*.whl")).unlink()
    _wheel(wheels, "msgspec", "0.23.0", "msgspec", "cp311-cp311-manylinux_2_17_x86_64", ())
    proc = _dry_run(wheels)
    assert proc.returncode == 1
    assert (
        "gpu_env: msgspec-0.23.0-cp311-cp311-manylinux_2_17_x86_64.whl does not install on "
        "CPython 3.12 x86-64 Linux" in proc.stderr.splitlines()
    )


def test_gpu_check_dry_run_refuses_two_versions_of_one_package(wheels: Path) -> None:
    _wheel(wheels, "hydra_core", "1.3.2", "hydra", PURE, ())
    proc = _dry_run(wheels)
    assert proc.returncode == 1
    assert "gpu_env: 2 wheels of hydra-core (keep one: two stop the install)" in proc.stderr


def test_gpu_check_dry_run_without_a_wheel_folder_says_how_to_make_one(tmp_path: Path) -> None:
    proc = _dry_run(tmp_path / "absent")
    assert proc.returncode == 1
    assert "(run scripts/fetch_gpu_wheels.sh)" in proc.stderr


def test_gpu_env_finds_an_import_that_nothing_provides(wheels: Path, tmp_path: Path) -> None:
    gpu_env = _gpu_env()
    site = tmp_path / "site"
    (site / "msgspec").mkdir(parents=True)
    (site / "msgspec" / "__init__.py").write_text("")
    assert gpu_env.unresolved({"msgspec", "torch", "psutil"}, site) == [
        "import psutil: in no wheel and not on the GPU machine"
    ]


def test_gpu_env_sees_every_third_party_import_of_the_package() -> None:
    modules = _gpu_env().imported_modules()
    assert {"torch", "hydra", "omegaconf", "msgspec", "rich", "yaml", "PIL"} <= modules
    assert not modules & {"os", "json", "libreyolo", "__future__"}


# ---- the plan, the packer and the checks of scripts/gpu_check.py (the driver gpu_check.sh runs)


def _gpu_check() -> ModuleType:
    return script_module("gpu_check")


MiB = 2**20


def _planned(stdout: str, key: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith(f"{key}:"))


def test_gpu_check_dry_run_plans_what_the_device_returns_in_time(wheels: Path) -> None:
    proc = _dry_run(wheels)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith("plan ok")
    outputs = _planned(proc.stdout, "outputs").split()[1:]
    assert 4 < len(outputs) <= 8
    for name in outputs:
        assert name.count("/") <= 2 and all(
            part and set(part) <= set("abcdefghijklmnopqrstuvwxyz0123456789._-")
            for part in name.lower().split("/")
        )
    seconds = int(_planned(proc.stdout, "budget").split()[1])
    assert seconds <= 550
    commands = [line.split(maxsplit=3)[3] for line in proc.stdout.splitlines() if " s  " in line]
    assert len(commands) == 14
    synthetic = [c.split() for c in commands if " run synthetic " in c]
    assert len(synthetic) >= 2  # AMP and AutoBatch at least
    for words in synthetic:
        flag = dict(itertools.pairwise(words))
        assert flag["--imgsz"] == "320" and flag["--device"] == "0"
        assert flag["--batch"] in ("8", "-1")
        assert int(flag["--steps"]) <= 6 and int(flag["--warmup"]) <= 3
        assert flag["--project"].startswith("$RUNS/")


def test_gpu_check_plan_sums_its_step_limits_under_the_budget() -> None:
    gpu_check = _gpu_check()
    steps = [
        *gpu_check.setup_steps("python3", wheels=".whl", site="/s"),
        *gpu_check.measurements("python3", Path("/r")),
    ]
    assert gpu_check.budget_s(steps) <= gpu_check.TIME_BUDGET_S
    assert len({s.name for s in steps}) == len(steps)
    assert gpu_check.output_problems(gpu_check.planned_outputs(), 0) == []
    assert gpu_check.output_problems(["a/b/c/d.txt", "x y", *"abcdefgh"], 551) == [
        "10 output files, the device returns 8",
        "output 'a/b/c/d.txt' would not come back",
        "output 'x y' would not come back",
        "time budget 551 s exceeds 550 s",
    ]


def test_gpu_check_commands_parse_with_the_real_cli() -> None:
    from libreyolo.cli.parser import build_parser, reject_key_value

    gpu_check = _gpu_check()
    steps = gpu_check.measurements(sys.executable, Path("/r"))
    profiles = [s for s in steps if s.kind == "profile"]
    assert len(profiles) == 9
    for step in profiles:
        words = list(step.argv[3:])
        reject_key_value(words, build_parser())
        args = build_parser().parse_args(words)
        assert args.json and args.device == "0" and args.project == f"/r/{step.name}"


def test_packer_spreads_many_big_files_over_at_most_the_allowed_parts() -> None:
    plan_parts = _gpu_check().plan_parts
    files = [(f"trace{i}.json.gz", 5 * MiB) for i in range(20)] + [("profile.json", 40_000)]
    packing = plan_parts(files, 4, 16 * MiB, 60 * MiB)
    assert 1 <= len(packing.parts) <= 4
    sizes = dict(files)
    for part in packing.parts:
        assert sum(sizes[name] for name in part) + 2048 * len(part) <= 16 * MiB
    packed = [name for part in packing.parts for name in part]
    assert sum(sizes[n] for n in packed) <= 60 * MiB
    assert {o["name"] for o in packing.omitted} | set(packed) == set(sizes)
    assert len(packed) == len(set(packed)) == 12  # three 5 MiB files to a 16 MiB part
    assert all(o["why"] == "no room left" for o in packing.omitted)


def test_packer_leaves_out_a_file_larger_than_one_part_and_lists_it() -> None:
    plan_parts = _gpu_check().plan_parts
    files = [("a/profile.json", 1000), ("a/profile_trace.json.gz", 16 * MiB), ("b.stderr", 10)]
    packing = plan_parts(files, 4, 16 * MiB)
    assert packing.parts == [["a/profile.json", "b.stderr"]]
    assert packing.omitted == [
        {"name": "a/profile_trace.json.gz", "bytes": 16 * MiB, "why": "larger than one part"}
    ]


def test_pack_gzips_traces_and_writes_only_parts_within_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpu_check = _gpu_check()
    monkeypatch.setattr(gpu_check, "DEVICE_MAX_FILE_BYTES", 256 * 2**10)
    runs, out = tmp_path / "runs", tmp_path / "out"
    (runs / "small").mkdir(parents=True)
    (runs / "big").mkdir()
    out.mkdir()
    (runs / "small" / "profile.json").write_text('{"metrics": {}}')
    (runs / "small" / "profile_trace.json").write_text('{"traceEvents": []}' * 5000)
    (runs / "big" / "profile_trace.json").write_bytes(os.urandom(300 * 2**10))
    (runs / "small.stderr").write_text("")
    packing = gpu_check.pack(runs, out)
    assert [p.name for p in out.iterdir()] == ["runs-1.tar.gz"]
    assert (out / "runs-1.tar.gz").stat().st_size <= 256 * 2**10
    assert [(o["name"], o["why"]) for o in packing.omitted] == [
        ("big/profile_trace.json.gz", "larger than one part")
    ]
    with tarfile.open(out / "runs-1.tar.gz") as archive:
        assert sorted(archive.getnames()) == [
            "small.stderr",
            "small/profile.json",
            "small/profile_trace.json.gz",
        ]


def _doc(**extra: object) -> dict[str, object]:
    doc: dict[str, object] = {
        "run": {"mode": "training", "model": "LibreYOLO9t", "batch": 8, "config": {}},
        "notes": [],
        "host": {"measurable": True, "num_workers": 2},
        "metrics": {
            "cpu_wait_frac": 0.1,
            "contended": False,
            "gpu_util": 0.8,
            "tensorcore_pct": 40.0,
            "step_ms": 12.5,
            "img_per_s": 640.0,
            "peak_vram_mb": None,
            "mfu": 0.031,
            "peak_source": "table",
        },
        "trace": {
            "categories": {"gemm": 1.0},
            "phases": [{"name": n} for n in ("forward", "backward", "optimizer")],
        },
        "verdict": {"bound": "compute-bound"},
        "device_memory": {
            "peak_allocated_bytes": 512 * MiB,
            "peak_inactive_split_bytes": 40 * MiB,
            "largest_free_block_bytes": 20 * MiB,
        },
        "tensor_memory": {"peak_bytes": 300 * MiB, "probes": [{"batch": 2}, {"batch": 4}]},
        "samples": {"amp_skipped_steps": [0, 3]},
    }
    return doc | extra


def test_checks_of_a_training_profile_under_amp() -> None:
    gpu_check = _gpu_check()
    step = gpu_check.measurements("py", Path("/r"))[3]
    assert step.name == "train_amp" and step.train and step.mixed_precision
    checks = gpu_check.profile_checks(step, _doc(), "")
    assert all(checks.values()), checks
    assert "tensor-core share > 0" in checks and "training phases" in checks
    assert {"tensor memory tracked", "memory prediction probes", "fragmentation recorded"} <= set(
        checks
    )
    unsplit = _doc(device_memory={"peak_allocated_bytes": 512 * MiB})
    assert gpu_check.profile_checks(step, unsplit, "")["fragmentation recorded"] is False
    numbers = gpu_check.profile_numbers(_doc())
    assert numbers["peak_mb"] == 512.0 and numbers["amp_skipped"] == 2
    noisy = gpu_check.profile_checks(step, _doc(), "STAGE:2026 libkineto ...\n")
    assert noisy["no libkineto lines on stderr"] is False


def _energy_doc(**metrics: object) -> dict[str, object]:
    """An untraced YOLOv9-t inference profile at 640 px whose 2.4 s window drew energy."""
    at_640 = {"latency_p50_ms": 3.2, "flops_per_image": 7_728_000_000, "energy_j_per_img": 0.42}
    return _doc(
        trace=None,
        metrics=_doc()["metrics"] | at_640 | metrics,  # type: ignore[operator]
        device_memory={"peak_allocated_bytes": 3 * MiB},
        compute={"energy": {"joules": 1344.0, "window_ms": 2400.0, "num_images": 3200}},
    )


def test_checks_of_an_untraced_profile_need_only_the_allocator_peak() -> None:
    gpu_check = _gpu_check()
    step = gpu_check.measurements("py", Path("/r"))[4]
    assert step.name == "infer_notrace" and not step.traced and not step.train
    doc = _energy_doc()
    assert all(gpu_check.profile_checks(step, doc, "").values())
    bare = gpu_check.profile_checks(step, _doc(trace=None, device_memory=None), "")
    assert bare["peak memory recorded"] is False


def test_the_energy_window_is_untraced_640_px_and_must_report_joules_over_1_s() -> None:
    gpu_check = _gpu_check()
    step = next(s for s in gpu_check.measurements("py", Path("/r")) if s.energy)
    assert step.name == "infer_notrace" and (step.imgsz, step.traced) == (640, False)
    assert int(gpu_check._flag(step.argv, "--runs")) * 2.5e-3 >= 1.0  # 2.5 ms a run is enough
    checks = gpu_check.efficiency_checks(step, _energy_doc())
    assert checks == {
        "mfu in (0, 1]": True,
        "peak_source table": True,
        gpu_check.YOLO9T_FLOPS_CHECK: True,
        "energy_j_per_img > 0": True,
        "energy window >= 1 s": True,
    }
    short = _energy_doc(energy_j_per_img=None) | {"compute": {"energy": None}}
    failed = gpu_check.efficiency_checks(step, short)
    assert not failed["energy_j_per_img > 0"] and not failed["energy window >= 1 s"]
    off = gpu_check.efficiency_checks(step, _energy_doc(flops_per_image=8.2e9, mfu=1.3))
    assert not off[gpu_check.YOLO9T_FLOPS_CHECK] and not off["mfu in (0, 1]"]
    measured = gpu_check.efficiency_checks(step, _energy_doc(peak_source="measured"))
    assert not measured["peak_source table"]


def test_efficiency_checks_scale_the_flops_to_the_side_and_skip_them_in_training() -> None:
    gpu_check = _gpu_check()
    steps = {s.name: s for s in gpu_check.measurements("py", Path("/r"))}
    at_320 = _doc(metrics=_doc()["metrics"] | {"flops_per_image": 1.95e9})  # type: ignore[operator]
    wrong = _doc(metrics=_doc()["metrics"] | {"flops_per_image": 7.7e9})  # type: ignore[operator]
    assert not gpu_check.efficiency_checks(steps["infer_b8"], wrong)[gpu_check.YOLO9T_FLOPS_CHECK]
    infer = gpu_check.efficiency_checks(steps["infer_b8"], at_320)
    assert infer[gpu_check.YOLO9T_FLOPS_CHECK] is True and "energy window >= 1 s" not in infer
    assert set(gpu_check.efficiency_checks(steps["train_amp"], _doc())) == {
        "mfu in (0, 1]",
        "peak_source table",
    }
    assert gpu_check.YOLO9T_FLOPS_CHECK not in gpu_check.efficiency_checks(
        steps["infer_yolox"], at_320
    )
    numbers = gpu_check.profile_numbers(_energy_doc())
    assert (numbers["mfu"], numbers["j_per_img"]) == (0.031, 0.42)


def test_checks_of_autobatch_want_the_fitted_batch_and_its_note() -> None:
    gpu_check = _gpu_check()
    step = next(s for s in gpu_check.measurements("py", Path("/r")) if s.autobatch)
    note = "--batch -1: batch 512 fits 70% of 140.0 GB available (...); probes 1: 900 MB"
    doc = _doc(run={"batch": 512, "config": {"batch": 512}}, notes=[note])
    assert all(gpu_check.profile_checks(step, doc, "").values())
    unfitted = gpu_check.profile_checks(step, _doc(run={"batch": -1, "config": {}}), "")
    assert not unfitted["fitted batch in run.batch > 0"]
    assert not unfitted["a note names --batch -1"]


def _fake_python(tmp_path: Path, body: str) -> str:
    script = tmp_path / "python3"
    script.write_text(f'#!/usr/bin/env bash\ncase "$1" in\n{body}\nesac\n')
    script.chmod(0o755)
    return str(script)


def test_a_failing_step_never_skips_the_next_and_all_outputs_are_written(tmp_path: Path) -> None:
    gpu_check = _gpu_check()
    body = (
        "  scripts/gpu_env.py) exit 0 ;;\n"  # the wheels install
        "  -c) exit 2 ;;\n"  # the --no-trace probe, the version line, the fake 1.x env
        "  *) echo 'boom' >&2; exit 3 ;;"
    )
    out = tmp_path / "out"
    rc = gpu_check.measure(_fake_python(tmp_path, body), str(tmp_path / "whl"), out)
    assert rc == 1
    results = json.loads((out / "results.json").read_text())
    names = [s["name"] for s in results["steps"]]
    assert names[:2] == ["environment", "wheels"] and names[-1] == "truth_planted"
    assert len(names) == 14
    # the fake 1.x environment is made by a `-c` one-liner
    assert [s["rc"] for s in results["steps"][2:]] == [3] * 9 + [2] + [3] * 2
    assert results["steps"][2]["checks"] == {"profile written": False}
    files = sorted(p.name for p in out.iterdir())
    assert set(files) <= set(gpu_check.planned_outputs())
    assert gpu_check.output_problems(files, 0) == []
    table = (out / "results.txt").read_text()
    assert len(table) < 3000 and table.count("\n") < 40
    assert "infer_fp16" in table and "some steps FAILED" in table


def test_a_failed_wheel_install_measures_nothing_but_still_reports(tmp_path: Path) -> None:
    gpu_check = _gpu_check()
    out = tmp_path / "out"
    rc = gpu_check.measure(_fake_python(tmp_path, "  *) exit 1 ;;"), "whl", out)
    assert rc == 1
    results = json.loads((out / "results.json").read_text())
    assert [s["name"] for s in results["steps"]] == ["environment", "wheels"]
    assert "nothing measured" in (out / "gpu_check.log").read_text()


def test_a_step_past_its_limit_is_stopped_with_its_children(tmp_path: Path) -> None:
    gpu_check = _gpu_check()
    marker = tmp_path / "child.pid"
    argv = ("bash", "-c", f"sleep 30 & echo $! > {marker}; wait")
    rc, seconds = gpu_check.run_step(argv, 1, tmp_path / "o", tmp_path / "e", dict(os.environ))
    assert rc == 124 and seconds < 10
    pid = int(marker.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)  # the signal is sent; the child's end is asynchronous
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    """Running, not gone nor a zombie awaiting its reaper."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_profile_of_an_unforeseen_shape_fails_its_step_only(tmp_path: Path) -> None:
    gpu_check = _gpu_check()
    bad = tmp_path / "bad.json"
    bad.write_text('{"metrics": [1], "trace": "none"}')
    body = (
        "  scripts/gpu_env.py) exit 0 ;;\n"
        f'  -m) echo \'{{"profile": "{bad}"}}\' ;;\n'
        "  scripts/truth_report.py) echo '4 of 4 passed in 9 s' ;;\n"
        "  *) exit 0 ;;"
    )
    out = tmp_path / "out"
    assert gpu_check.measure(_fake_python(tmp_path, body), "whl", out) == 1
    steps = json.loads((out / "results.json").read_text())["steps"]
    by_name = {s["name"]: s for s in steps}
    others = ("environment", "wheels", "budget_oom", "fake_trainer_env", "truth_planted")
    profiles = [s["checks"] for s in steps if s["name"] not in others]
    assert profiles == [{"outcome readable": False}] * 9
    assert not any(by_name["budget_oom"]["checks"].values())
    assert steps[-1]["rc"] == 0 and steps[-1]["note"] == "4 of 4 passed in 9 s"
    assert (out / "truth_cuda.txt").read_text() == "4 of 4 passed in 9 s\n"


@pytest.mark.parametrize(
    ("fixture", "name"), [("cpu_train_profile", "train_amp"), ("cpu_infer_profile", "infer_b8")]
)
def test_checks_read_the_keys_real_profiles_have(
    fixture: str, name: str, request: pytest.FixtureRequest
) -> None:
    """The checks that do not need a GPU pass on a real CPU profile: every key path exists."""
    gpu_check = _gpu_check()
    step = next(s for s in gpu_check.measurements("py", Path("/r")) if s.name == name)
    doc = json.loads(Path(request.getfixturevalue(fixture)).read_text())
    checks = gpu_check.profile_checks(step, doc, "")
    cpu_checkable = ["host sampled", "verdict bound named", "phases present", "mfu in (0, 1]"]
    cpu_checkable.append("step time measured" if step.train else "latency p50 measured")
    if step.train:
        cpu_checkable.append("training phases")
    assert {label: checks[label] for label in cpu_checkable} == dict.fromkeys(cpu_checkable, True)
    assert checks["peak memory recorded"] is False  # no device memory on the CPU
    assert gpu_check.profile_numbers(doc)["bound"] == doc["verdict"]["bound"]


def test_the_budget_sweep_composes_and_wants_its_point_recorded_oom(tmp_path: Path) -> None:
    from libreyolo.config.compose import compose_config

    gpu_check = _gpu_check()
    step = gpu_check.budget_sweep(sys.executable, tmp_path)
    assert step in gpu_check.measurements(sys.executable, tmp_path)
    assert (step.kind, step.expect_rc, gpu_check.sweep_dir(step)) == (
        "sweep",
        1,
        tmp_path / "budget_oom",
    )
    overrides = [w for w in step.argv[4:] if not w.startswith("hydra.")]
    cfg = compose_config(overrides)
    assert (cfg.mode.value, cfg.device.name, cfg.batch, cfg.imgsz) == ("run", "0", 8, 320)
    assert cfg.tune.memory_budget_mb == gpu_check.BUDGET_MB
    point = tmp_path / "budget_oom" / "b8_s320_amp1"
    point.mkdir(parents=True)
    oom = {
        "status": "failed",
        "code": "oom",
        "reason": "out of memory in the warmup: a 52.4 MB request failed with 140.0 MB "
        "allocated of 150.0 MB reserved; held most by forward (blocks.py:88) 90.0 MB; snapshot: "
        f"{point}/run.oom_snapshot.pickle (...) under the 150 MB budget "
        "(tune.memory_budget_mb) (lower --batch or --imgsz)",
    }
    (point / "status.json").write_text(json.dumps(oom))
    (point / "run.oom_snapshot.pickle").write_bytes(b"\x80\x04")
    assert gpu_check.sweep_checks(gpu_check.sweep_dir(step)) == {
        "one point recorded": True,
        "point failed oom": True,
        "reason names the budget": True,
        "reason names the sites": True,
        "oom snapshot left": True,
    }
    (point / "status.json").write_text(json.dumps({"status": "ok", "code": "", "reason": ""}))
    (point / "run.oom_snapshot.pickle").unlink()
    checks = gpu_check.sweep_checks(gpu_check.sweep_dir(step))
    assert checks == {
        "one point recorded": True,
        "point failed oom": False,
        "reason names the budget": False,
        "reason names the sites": False,
        "oom snapshot left": False,
    }
    outcome = gpu_check.StepOutcome("budget_oom", 1, 9.0, 30, 1, checks=dict.fromkeys(checks, True))
    assert gpu_check.passed(outcome)
    assert not gpu_check.passed(gpu_check.StepOutcome("budget_oom", 0, 9.0, 30, 1))


def test_checks_of_a_compiled_and_a_graph_captured_inference() -> None:
    gpu_check = _gpu_check()
    steps = {s.name: s for s in gpu_check.measurements("py", Path("/r"))}
    compiled = {"compile_s": 21.5, "window_recompiles": 0}
    doc = _doc(execution={"name": "compile", "compiled": compiled})
    assert gpu_check.exec_checks(steps["infer_compile"], doc) == {
        "execution is compile": True,
        "compile_s > 0": True,
        "no recompile in the window": True,
    }
    recompiled = _doc(
        execution={"name": "compile", "compiled": compiled | {"window_recompiles": 2}}
    )
    assert (
        gpu_check.exec_checks(steps["infer_compile"], recompiled)["no recompile in the window"]
        is False
    )
    graphed = _doc(execution={"name": "cudagraphs", "graph": {"num_captures": 1}})
    assert all(gpu_check.exec_checks(steps["infer_cudagraphs"], graphed).values())
    assert gpu_check.exec_checks(steps["infer_cudagraphs"], _doc()) == {
        "execution is cudagraphs": False,
        "one CUDA graph captured": False,
    }
    assert gpu_check.exec_checks(steps["infer_fp16"], _doc()) == {}
