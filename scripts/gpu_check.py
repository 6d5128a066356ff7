"""The prepared GPU check's driver: plan, run every measurement time-boxed, check, tabulate, pack.

Role: `scripts/gpu_check.sh` runs this with the GPU machine's own `python3`. It is stdlib only
because it starts before the wheels in `.whl/` are installed; it reaches the project only through
subprocesses (`python -m libreyolo ...`, `scripts/truth_report.py`, `scripts/gpu_env.py`).

    python3 scripts/gpu_check.py --dry-run   # here: the plan, its time budget, its output files
    python3 scripts/gpu_check.py             # there: measure, then write under $OUT

Must not: let one failed or hung step skip the others (each runs in its own process group under
its own limit); write anything under $OUT the device tool would not return (more than
DEVICE_MAX_FILES files, a file over DEVICE_MAX_FILE_BYTES, names outside [A-Za-z0-9._-], or
sub-folders: the output is flat); read `../shared`, which does not travel.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parents[1]

# What the lent machine's device tool brings back from $OUT at most: files, bytes per file,
# bytes in all, folders below $OUT; anything past these is left out.
DEVICE_MAX_FILES = 8
DEVICE_MAX_FILE_BYTES = 16 * 2**20
DEVICE_MAX_TOTAL_BYTES = 64 * 2**20
DEVICE_MAX_FOLDERS_DOWN = 2
ALLOWED_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
TIME_BUDGET_S = 550  # 9 minutes of the 15-minute loan (worst case), start and transfers aside

# Outputs written beside the archive parts; the parts get the remaining file slots.
FIXED_OUTPUTS = ("gpu_check.log", "results.txt", "results.json", "truth_cuda.txt")
MAX_PARTS = DEVICE_MAX_FILES - len(FIXED_OUTPUTS)
FIXED_RESERVE_BYTES = 4 * 2**20  # the fixed outputs are small text; the parts get the rest
PART_SLACK_BYTES = 64 * 2**10  # tar end blocks and gzip framing, on top of the per-member cost
MEMBER_OVERHEAD_BYTES = 2048  # a tar header, a long-name header and the block padding
PACKING_S = 20  # gzip of the traces and the archive parts, after them
TAIL_CHARS = 700  # of a step's output into the log and stdout (the whole of it: the parts)
STDERR_NOISE = ("USDT", "STAGE:", "libkineto")  # kineto lines that must not reach the user
WEIGHTS_URL = "http://127.0.0.1:9/{name}"  # a dead port: no network there, random init is fine
KILL_GRACE_S = 10  # SIGTERM first (the CLI cleans up and exits 143), then SIGKILL


@dataclass(frozen=True, slots=True)
class Step:
    """One time-boxed command. `kind` says how its outcome is read: `profile` steps print one
    JSON document naming their profile.json; a `sweep` step is read from its points'
    status.json; the others are judged by exit status alone. `expect_rc`: the exit status
    that passes (a sweep with a failed point exits 1)."""

    name: str
    argv: tuple[str, ...]
    limit_s: int
    kind: str = "profile"  # profile | sweep | truth | setup
    family: str | None = None  # the model family the profile must name
    expect_rc: int = 0
    energy: bool = False  # its window is long enough that NVML's energy must be reported

    @property
    def train(self) -> bool:
        return self.kind == "profile" and self.argv[4] == "run"

    @property
    def trainer(self) -> bool:  # libreyolo 1.x's trainer (here the fake one): no FLOP count
        return "--trainer" in self.argv

    @property
    def traced(self) -> bool:
        return "--no-trace" not in self.argv

    @property
    def mixed_precision(self) -> bool:  # --half or AMP: tensor cores must show
        return "--half" in self.argv or "--amp" in self.argv

    @property
    def autobatch(self) -> bool:
        return _flag(self.argv, "--batch") == "-1"

    @property
    def imgsz(self) -> int:
        return int(_flag(self.argv, "--imgsz") or 640)


def _flag(argv: Sequence[str], flag: str) -> str | None:
    """The value after `flag` in `argv` (the last one wins, as in argparse), or None."""
    values = [argv[i + 1] for i, word in enumerate(argv[:-1]) if word == flag]
    return values[-1] if values else None


def profile_argv(py: str, project: Path, name: str, *words: str) -> tuple[str, ...]:
    """`python -m libreyolo profile WORDS... --project PROJECT/NAME --json`."""
    return (py, "-m", "libreyolo", "profile", *words, "--project", str(project / name), "--json")


TRAIN = ("run", "synthetic", "--device", "0", "--imgsz", "320", "--workers", "2")
# A budget far below what a training step at batch 8 and 320 px needs (well over 1 GB), above
# what the weights, EMA and optimiser state hold (tens of MB): the capped allocator must OOM.
BUDGET_MB = 150
INFER_ON_GPU = ("infer", "--device", "0", "--warmup", "5")
INFER = (*INFER_ON_GPU, "--imgsz", "320", "--runs", "20")
# The energy window: untraced, so no trace grows with its runs; 400 runs of batch 8 at 640 px
# last a few seconds on an H200 (over 2.5 ms each is enough), past the ~1 s NVML resolves.
ENERGY = (*INFER_ON_GPU, "--imgsz", "640", "--runs", "400", "--batch", "8", "--no-trace")
# YOLOv9-t's published FLOPs at 640 px (the YOLOv9 authors' table: 7.7 G); a fully
# convolutional count scales with the image area, so other sides are checked against the scaled
# figure, within FLOPS_TOLERANCE.
YOLO9T_FLOPS_AT_640 = 7.7e9
FLOPS_TOLERANCE = 0.05
YOLO9T_FLOPS_CHECK = "flops_per_image within 5 % of 7.7 G x (imgsz / 640)^2"
MIN_ENERGY_WINDOW_MS = 1000  # NVML's counter updates every 20 to 100 ms


def setup_steps(py: str, *, wheels: str, site: str) -> list[Step]:
    """What the machine is, then the wheels installed into `site` (nothing is measured
    when they do not install)."""
    smi = "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv"
    versions = (
        "import sys, torch; print(sys.version.split()[0], torch.__version__, torch.version.cuda,"
        " torch.cuda.get_device_name(0))"
    )
    return [
        Step("environment", ("bash", "-c", f"{smi}; {py} -c '{versions}'"), 15, kind="setup"),
        Step(
            "wheels",
            (py, "scripts/gpu_env.py", "install", "--wheels", wheels, "--site", site),
            45,
            kind="setup",
        ),
    ]


def budget_sweep(py: str, runs: Path) -> Step:
    """`libreyolo-sweep` over one CUDA training point (train_amp's settings, so its synthetic
    set is drawn already) under `tune.memory_budget_mb` far below its need: the point's
    allocator is capped there, so the point must be recorded `oom`, and the sweep exits 1."""
    folder = runs / "budget_oom"
    argv = (
        py,
        "-m",
        "libreyolo.sweep",
        "-m",
        "mode=run",
        "device=cuda",
        "imgsz=320",
        "batch=8",
        "amp=true",
        "window.steps=6",
        "window.warmup=3",
        "dataset.workers=2",
        f"tune.memory_budget_mb={BUDGET_MB}",
        f"hydra.sweep.dir={folder}",
        f"sweep.lock_dir={folder / 'locks'}",
    )
    return Step("budget_oom", argv, 30, kind="sweep", expect_rc=1)


def sweep_dir(step: Step) -> Path:
    """The `hydra.sweep.dir=` a sweep step writes its points into."""
    word = next(w for w in step.argv if w.startswith("hydra.sweep.dir="))
    return Path(word.partition("=")[2])


def measurements(py: str, runs: Path) -> list[Step]:
    """Every measurement in order, with its limit. The untraced one is an inference (the
    parser gives `--trace/--no-trace` to `infer` only) and the energy window (ENERGY)."""

    def prof(name: str, *words: str) -> tuple[str, ...]:
        return profile_argv(py, runs, name, *words)

    small = ("--batch", "8", "--steps", "6", "--warmup", "3")
    untraced = Step("infer_notrace", prof("infer_notrace", *ENERGY), 40, energy=True)
    yolox = (*INFER, "--weights", "LibreYOLOXn.pt")
    autobatch = (*TRAIN, "--batch", "-1", "--steps", "4", "--warmup", "2")
    return [
        Step("infer_fp16", prof("infer_fp16", *INFER, "--half"), 30),
        Step("infer_b8", prof("infer_b8", *INFER, "--batch", "8"), 30),
        Step("infer_yolox", prof("infer_yolox", *yolox), 30, family="yolox"),
        Step("train_amp", prof("train_amp", *TRAIN, *small, "--amp"), 50),
        untraced,
        Step("infer_cudagraphs", prof("infer_cudagraphs", *INFER, "--exec", "cudagraphs"), 25),
        Step("infer_compile", prof("infer_compile", *INFER, "--exec", "compile"), 40),
        Step("autobatch", prof("autobatch", *autobatch), 55),
        budget_sweep(py, runs),
        Step("fake_trainer_env", fake_trainer_env(py, runs), 10, kind="setup"),
        Step("train_trainer", prof("train_trainer", *trainer_words(runs)), 30),
        *two_gpu_leg(py, runs, gpu_count()),
        Step(
            "truth_planted",
            (py, "scripts/truth_report.py", "--device", "0", "--only", "planted"),
            100,
            kind="truth",
        ),
    ]


def two_gpu_leg(py: str, runs: Path, gpus: int) -> list[Step]:
    """Training on two ranks, one per GPU (NCCL, SyncBatchNorm), with its world profile; none
    on a machine with fewer GPUs (`_measure` logs why). It adds 60 s: on a 2-GPU machine the
    plan runs past TIME_BUDGET_S by that much (the lent machines have one GPU)."""
    if gpus < 2:
        return []
    words = (*TRAIN, "--device", "0,1", "--batch", "16", "--steps", "6", "--warmup", "3")
    return [Step("train_ddp", profile_argv(py, runs, "train_ddp", *words), 60)]


def skipped_legs(gpus: int) -> list[str]:
    """Why a leg of the plan is left out on this machine."""
    return [] if gpus >= 2 else [f"train_ddp skipped: {gpus} GPU here, the 2-rank leg needs 2"]


def gpu_count() -> int:
    """The GPUs nvidia-smi lists (0 where it cannot run)."""
    try:
        listed = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=15, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in listed.stdout.splitlines() if line.startswith("GPU "))


def fake_trainer_env(py: str, runs: Path) -> tuple[str, ...]:
    """Make the fake libreyolo 1.x environment of the tests (tests/trainer/fake_v1) under
    `runs`: the trainer probe's CUDA path runs on it (1.6.0 itself cannot be installed there)."""
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, '.'); "
        "from tests.trainer.fake_env import fake_environment; "
        f"fake_environment(Path({str(runs / 'fake_env')!r}))"
    )
    return (py, "-c", code)


def trainer_words(runs: Path) -> tuple[str, ...]:
    """`profile run --trainer` on the fake 1.x at CUDA device 0 (its own loop, no workers)."""
    return (
        "run", "synthetic", "--trainer", str(runs / "fake_env"), "--device", "0",
        "--imgsz", "320", "--batch", "8", "--workers", "0", "--steps", "6", "--warmup", "3",
        "--train-arg", "images=128",
    )  # fmt: skip


def budget_s(steps: Sequence[Step]) -> int:
    """Worst-case wall time: every step at its limit, plus planning and packing."""
    return sum(s.limit_s for s in steps) + PACKING_S


def planned_outputs() -> list[str]:
    """Every file this check may write under $OUT, flat."""
    return [*FIXED_OUTPUTS, *(part_name(i) for i in range(MAX_PARTS))]


def part_name(index: int) -> str:
    return f"runs-{index + 1}.tar.gz"


def output_problems(names: Sequence[str], seconds: int) -> list[str]:
    """What in a plan the device tool would not return or the loan would not hold."""
    problems = []
    if len(names) > DEVICE_MAX_FILES:
        problems.append(f"{len(names)} output files, the device returns {DEVICE_MAX_FILES}")
    for name in names:
        parts = name.split("/")
        if len(parts) - 1 > DEVICE_MAX_FOLDERS_DOWN or not all(map(ALLOWED_NAME.match, parts)):
            problems.append(f"output {name!r} would not come back")
    if seconds > TIME_BUDGET_S:
        problems.append(f"time budget {seconds} s exceeds {TIME_BUDGET_S} s")
    return problems


# ---------------------------------------------------------------- packing


@dataclass(slots=True)
class Packing:
    """Which files go into which archive part, and which are left out and why."""

    parts: list[list[str]] = field(default_factory=list)
    omitted: list[dict[str, Any]] = field(default_factory=list)


def plan_parts(
    files: Sequence[tuple[str, int]],
    max_files: int,
    max_bytes: int,
    max_total_bytes: int | None = None,
) -> Packing:
    """Assign (name, size_bytes) files, in priority order, to at most `max_files` archive parts
    of at most `max_bytes` each (and `max_total_bytes` together). A file is charged its size
    plus a tar member's overhead, a part PART_SLACK_BYTES; sizes are taken as incompressible,
    so a gzipped part never outgrows its plan. A file that fits nowhere is omitted, never
    split: first fit in order, so the caller puts what matters most first."""
    room = max_bytes - PART_SLACK_BYTES
    total_left = max_total_bytes if max_total_bytes is not None else max_files * max_bytes
    packing = Packing()
    free: list[int] = []
    for name, size in files:
        cost = size + size // 500 + MEMBER_OVERHEAD_BYTES  # 0.2 %: gzip grows stored data 0.03 %
        if cost > room:
            packing.omitted.append({"name": name, "bytes": size, "why": "larger than one part"})
            continue
        slot = next((i for i, left in enumerate(free) if left >= cost), None)
        if slot is None and len(free) < max_files and cost + PART_SLACK_BYTES <= total_left:
            free.append(room)
            packing.parts.append([])
            total_left -= PART_SLACK_BYTES
            slot = len(free) - 1
        if slot is None or cost > total_left:
            packing.omitted.append({"name": name, "bytes": size, "why": "no room left"})
            continue
        free[slot] -= cost
        total_left -= cost
        packing.parts[slot].append(name)
    return packing


def gzip_traces(root: Path) -> None:
    """Replace every `*trace.json` under `root` by its `.gz` (traces run to 100+ MB raw)."""
    for path in sorted(root.rglob("*trace.json")):
        with path.open("rb") as raw, gzip.open(f"{path}.gz", "wb", compresslevel=6) as packed:
            shutil.copyfileobj(raw, packed, 2**20)
        path.unlink()


def pack(root: Path, out: Path, *, max_parts: int = MAX_PARTS) -> Packing:
    """Every file under `root` into `out/runs-N.tar.gz`: the small files first, then the
    gzipped traces smallest first, so what is left out is the fewest, largest traces."""
    gzip_traces(root)
    files = sorted(
        (
            (p.relative_to(root).as_posix(), p.stat().st_size)
            for p in root.rglob("*")
            if p.is_file()
        ),
        key=lambda f: (f[0].endswith(".gz"), f[1] if f[0].endswith(".gz") else 0, f[0]),
    )
    packing = plan_parts(
        files, max_parts, DEVICE_MAX_FILE_BYTES, DEVICE_MAX_TOTAL_BYTES - FIXED_RESERVE_BYTES
    )
    for i, members in enumerate(packing.parts):
        target = out / part_name(i)
        with tarfile.open(target, "w:gz", compresslevel=1) as archive:  # traces are gz already
            for name in members:
                archive.add(root / name, arcname=name, recursive=False)
        if target.stat().st_size > DEVICE_MAX_FILE_BYTES:  # the plan's margins make this moot
            target.unlink()
            packing.omitted += [{"name": n, "bytes": -1, "why": "part too large"} for n in members]
            packing.parts[i] = []
    return packing


# ---------------------------------------------------------------- running


@dataclass(slots=True)
class StepOutcome:
    """What one step did: exit status (124 when stopped at its limit), time, checks, numbers."""

    name: str
    rc: int
    seconds: float
    limit_s: int
    expect_rc: int = 0
    checks: dict[str, bool] = field(default_factory=dict)
    numbers: dict[str, Any] = field(default_factory=dict)
    note: str = ""


def run_step(
    argv: Sequence[str], limit_s: int, stdout: Path, stderr: Path, env: dict[str, str]
) -> tuple[int, float]:
    """Run `argv` in its own process group; SIGTERM the group at `limit_s`, SIGKILL it
    KILL_GRACE_S later. Returns (exit status, 124 when time ran out; seconds)."""
    started = time.monotonic()
    with stdout.open("wb") as out, stderr.open("wb") as err:
        try:
            proc = subprocess.Popen(
                argv, cwd=ROOT, stdout=out, stderr=err, env=env, start_new_session=True
            )
        except OSError as error:
            err.write(f"gpu_check: cannot start {argv[0]}: {error}\n".encode())
            return 127, 0.0
        try:
            rc = proc.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
            rc = 124
    _signal_group(proc.pid, signal.SIGKILL)  # no stray loader worker outlives its step
    return rc, time.monotonic() - started


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(pid, sig)


# ---------------------------------------------------------------- checks


def read_profile(stdout: Path, project: Path) -> dict[str, Any]:
    """The profile a step wrote: the path its `--json` line names, else the one under its
    project folder. Raises OSError or ValueError when there is none."""
    try:
        path = Path(json.loads(stdout.read_text())["profile"])
    except (OSError, ValueError, KeyError, TypeError):
        found = sorted(project.rglob("profile.json"))
        if not found:
            raise FileNotFoundError(f"no profile.json under {project}") from None
        path = found[0]
    doc = json.loads(path.read_text())
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: not a JSON object")
    return doc


def peak_mb(doc: dict[str, Any]) -> float | None:
    """Peak device memory: metrics.peak_vram_mb, else device_memory.peak_allocated_bytes."""
    metrics = doc.get("metrics") or {}
    if metrics.get("peak_vram_mb") is not None:
        return float(metrics["peak_vram_mb"])
    peak = (doc.get("device_memory") or {}).get("peak_allocated_bytes")
    return None if peak is None else peak / 2**20


def profile_checks(step: Step, doc: dict[str, Any], stderr: str) -> dict[str, bool]:
    """Every check of one measurement, by label."""
    m, trace, host = doc.get("metrics") or {}, doc.get("trace") or {}, doc.get("host") or {}
    run = doc.get("run") or {}
    checks = {
        "host sampled": host.get("measurable") is True and m.get("cpu_wait_frac") is not None,
        "quiet machine not contended": m.get("contended") is False,
        "peak memory recorded": peak_mb(doc) is not None,
        "no libkineto lines on stderr": not any(
            k in line for line in stderr.splitlines() for k in STDERR_NOISE
        ),
        "verdict bound named": bool((doc.get("verdict") or {}).get("bound")),
    }
    if step.traced:
        checks["gpu_util in (0, 1]"] = 0 < (m.get("gpu_util") or 0) <= 1
        checks["kernels categorised"] = bool(trace.get("categories"))
        checks["phases present"] = bool(trace.get("phases"))
    if step.traced and step.mixed_precision:
        checks["tensor-core share > 0"] = (m.get("tensorcore_pct") or 0) > 0
    if step.train:
        checks["step time measured"] = m.get("step_ms") is not None
    if step.name == "train_ddp":  # issue 47: NCCL's collectives, per rank, in the world
        world = doc.get("world") or {}
        checks["world of 2 ranks (nccl)"] = (world.get("world_size"), world.get("backend")) == (
            2,
            "nccl",
        )
        checks["NCCL collective time measured"] = (m.get("comm_ms") or 0) > 0
        checks["BatchNorm synchronised"] = world.get("sync_bn") is True
    if step.train and not step.trainer:
        checks["2 loader workers sampled"] = host.get("num_workers") == 2
    if step.trainer:
        trainer = run.get("trainer") or {}
        checks["run.trainer recorded"] = trainer.get("libreyolo") == "1.6.0"
        checks["ran on cuda"] = str(run.get("device", "")).startswith("cuda")
        checks["allocator peak recorded"] = (doc.get("device_memory") or {}).get(
            "peak_allocated_bytes"
        ) is not None
    if step.train and not step.trainer:  # issue 45 on CUDA: the tracked step, fragmentation
        tensors = doc.get("tensor_memory") or {}
        checks["tensor memory tracked"] = (tensors.get("peak_bytes") or 0) > 0
        checks["memory prediction probes"] = len(tensors.get("probes") or []) == 2
        allocator = doc.get("device_memory") or {}
        checks["fragmentation recorded"] = (
            allocator.get("peak_inactive_split_bytes") is not None
            and allocator.get("largest_free_block_bytes") is not None
        )
    if step.train and step.traced:
        names = {p.get("name") for p in trace.get("phases", [])}
        checks["training phases"] = {"forward", "backward", "optimizer"} <= names
    if not step.train:
        checks["latency p50 measured"] = m.get("latency_p50_ms") is not None
    if step.autobatch:
        checks["fitted batch in run.batch > 0"] = (run.get("batch") or 0) > 0
        notes = doc.get("notes") or []
        checks["a note names --batch -1"] = any("--batch -1" in str(n) for n in notes)
    if step.family:
        checks[f"model is {step.family}"] = step.family in json.dumps(run).lower()
    if step.trainer:  # its model lives in another environment: no FLOPs, so no MFU
        return checks
    return checks | efficiency_checks(step, doc) | exec_checks(step, doc)


def exec_checks(step: Step, doc: dict[str, Any]) -> dict[str, bool]:
    """What the execution record must say of a compiled or graph-captured inference."""
    mode = _flag(step.argv, "--exec")
    if mode is None:
        return {}
    execution = doc.get("execution") or {}
    checks = {f"execution is {mode}": execution.get("name") == mode}
    if mode == "compile":
        compiled = execution.get("compiled") or {}
        checks["compile_s > 0"] = (compiled.get("compile_s") or 0) > 0
        checks["no recompile in the window"] = compiled.get("window_recompiles") == 0
    if mode == "cudagraphs":
        checks["one CUDA graph captured"] = (execution.get("graph") or {}).get("num_captures") == 1
    return checks


def efficiency_checks(step: Step, doc: dict[str, Any]) -> dict[str, bool]:
    """What `get` reads of the compute record (the metric map it prints): MFU against the
    H200's datasheet row, YOLOv9-t's FLOPs (inference), the energy of a long window."""
    m = doc.get("metrics") or {}
    checks = {
        "mfu in (0, 1]": 0 < (m.get("mfu") or 0) <= 1,
        "peak_source table": m.get("peak_source") == "table",
    }
    if not step.train and step.family is None:  # the default weights: YOLOv9-t
        expected = YOLO9T_FLOPS_AT_640 * (step.imgsz / 640) ** 2
        flops = m.get("flops_per_image") or 0
        checks[YOLO9T_FLOPS_CHECK] = abs(flops / expected - 1) <= FLOPS_TOLERANCE
    if step.energy:
        energy = (doc.get("compute") or {}).get("energy") or {}
        checks["energy_j_per_img > 0"] = (m.get("energy_j_per_img") or 0) > 0
        checks["energy window >= 1 s"] = (energy.get("window_ms") or 0) >= MIN_ENERGY_WINDOW_MS
    return checks


def sweep_checks(folder: Path) -> dict[str, bool]:
    """The checks of the budget sweep: its one point failed out of memory under the budget."""
    statuses = [json.loads(p.read_text()) for p in sorted(folder.glob("*/status.json"))]
    point = statuses[0] if len(statuses) == 1 and isinstance(statuses[0], dict) else {}
    return {
        "one point recorded": bool(point),
        "point failed oom": (point.get("status"), point.get("code")) == ("failed", "oom"),
        "reason names the budget": "tune.memory_budget_mb" in str(point.get("reason")),
        # issue 45: the warmup's OOM explained (its sites) and its snapshot left in the point
        "reason names the sites": "held most by" in str(point.get("reason")),
        "oom snapshot left": len(list(folder.glob("*/run.oom_snapshot.pickle"))) == 1,
    }


def profile_numbers(doc: dict[str, Any]) -> dict[str, Any]:
    """The table's numbers for one profile."""
    m, run = doc.get("metrics") or {}, doc.get("run") or {}
    skipped = (doc.get("samples") or {}).get("amp_skipped_steps")
    return {
        "img_per_s": m.get("img_per_s"),
        "step_ms": m.get("step_ms"),
        "latency_p50_ms": m.get("latency_p50_ms"),
        "gpu_util": m.get("gpu_util"),
        "peak_mb": peak_mb(doc),
        "bound": (doc.get("verdict") or {}).get("bound") or m.get("bound"),
        "batch": run.get("batch"),
        "tensorcore_pct": m.get("tensorcore_pct"),
        "amp_skipped": len(skipped) if isinstance(skipped, list) else None,
        "mfu": m.get("mfu"),
        "j_per_img": m.get("energy_j_per_img"),
    }


# ---------------------------------------------------------------- the table


def _fmt(value: Any, spec: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return format(value, spec or ".4g")
    return str(value)


def render_table(outcomes: Sequence[StepOutcome]) -> str:
    """One compact row per step (ms: step_ms, else latency p50; mfu against the headline peak;
    J/img: NVML's energy per image; skip: AMP-skipped measured steps); each step's failed
    checks and note listed under the table."""
    header = (
        "step",
        "rc",
        "s",
        "batch",
        "img/s",
        "ms",
        "util",
        "mfu",
        "peakMB",
        "J/img",
        "skip",
        "bound",
        "checks",
    )
    rows = [header]
    for o in outcomes:
        n = o.numbers
        ms = n.get("step_ms") if n.get("step_ms") is not None else n.get("latency_p50_ms")
        passed = sum(o.checks.values())
        rows.append(
            (
                o.name,
                str(o.rc),
                f"{o.seconds:.0f}/{o.limit_s}",
                _fmt(n.get("batch")),
                _fmt(n.get("img_per_s"), ".1f"),
                _fmt(ms, ".2f"),
                _fmt(n.get("gpu_util"), ".2f"),
                _fmt(n.get("mfu"), ".3f"),
                _fmt(n.get("peak_mb"), ".0f"),
                _fmt(n.get("j_per_img"), ".3g"),
                _fmt(n.get("amp_skipped")),
                _fmt(n.get("bound")),
                f"{passed}/{len(o.checks)}" if o.checks else "-",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    for o in outcomes:
        said = [f"FAIL {label}" for label, ok in o.checks.items() if not ok][:6]
        said += [o.note] if o.note else []
        if said:
            lines.append(f"{o.name}: " + "; ".join(said))
    return "\n".join(lines)


def passed(o: StepOutcome) -> bool:
    return o.rc == o.expect_rc and all(o.checks.values())


# ---------------------------------------------------------------- main


def _env(*extra: str, **values: str) -> dict[str, str]:
    """This environment with the repo (and `extra` folders) first on PYTHONPATH."""
    paths = [str(ROOT), *extra, os.environ.get("PYTHONPATH", "")]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, paths)), **values)


def dry_run(py: str, wheels: str) -> int:
    """The wheel folder check, then the plan; 0 when both are fine."""
    checked = subprocess.run([py, "scripts/gpu_env.py", "check", "--wheels", wheels], cwd=ROOT)
    steps = [*setup_steps(py, wheels=wheels, site="$SITE"), *measurements(py, Path("$RUNS"))]
    seconds = budget_s(steps)
    print("plan:", flush=True)
    for s in steps:
        print(f"  {s.name:<14} {s.limit_s:>4} s  {' '.join(s.argv)}")
    print(
        f"budget: {seconds} s of {TIME_BUDGET_S} s (steps {seconds - PACKING_S} s"
        f" + packing {PACKING_S} s)"
    )
    outputs = planned_outputs()
    print(f"outputs: {' '.join(outputs)}")
    print(
        f"limits: {DEVICE_MAX_FILES} files, {DEVICE_MAX_FILE_BYTES // 2**20} MiB each, "
        f"{DEVICE_MAX_TOTAL_BYTES // 2**20} MiB together, flat"
    )
    problems = output_problems(outputs, seconds)
    for problem in problems:
        print(f"gpu_check: plan: {problem}", file=sys.stderr)
    print("plan ok" if not problems else f"plan: {len(problems)} problem(s)")
    return 1 if problems or checked.returncode else 0


class Log:
    """Lines to stdout and to $OUT/gpu_check.log at once."""

    def __init__(self, file: TextIO) -> None:
        self.file = file

    def __call__(self, text: str) -> None:
        print(text, flush=True)
        self.file.write(text + "\n")
        self.file.flush()


def measure(py: str, wheels: str, out: Path) -> int:
    """Run the plan, write the results and the parts under `out`; 0 when all passed."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "gpu_check.log").open("w", encoding="utf-8") as file:
        return _measure(py, wheels, out, Log(file))


def _measure(py: str, wheels: str, out: Path, log: Log) -> int:
    work = Path(tempfile.mkdtemp(prefix="gpu_check_"))
    runs, site = work / "runs", work / "site"
    runs.mkdir()
    env = _env(str(site), PYTHONUNBUFFERED="1", LIBREYOLO_WEIGHTS_URL=WEIGHTS_URL)
    started = time.monotonic()
    steps = setup_steps(py, wheels=wheels, site=str(site))
    outcomes = [_one(step, runs, env, out, log) for step in steps]
    if outcomes[-1].rc == 0:
        for line in skipped_legs(gpu_count()):
            log(f"gpu_check: {line}")
        steps += measurements(py, runs)
        outcomes += [_one(step, runs, env, out, log) for step in steps[len(outcomes) :]]
    else:
        log("gpu_check: the wheel folder does not install here; nothing measured")
    try:
        packing = pack(runs, out)
    except OSError as error:  # the table still comes back
        packing = Packing(omitted=[{"name": str(runs), "bytes": -1, "why": str(error)}])
    ok = outcomes[-1].name == "truth_planted" and all(map(passed, outcomes))
    elapsed_s = time.monotonic() - started
    text = "\n".join(
        [
            render_table(outcomes),
            *(f"left out: {o['name']} ({o['bytes']} bytes, {o['why']})" for o in packing.omitted),
            f"gpu_check: {'all steps passed' if ok else 'some steps FAILED'} in {elapsed_s:.0f} s"
            f" (budget {budget_s(steps)} s)",
        ]
    )
    (out / "results.txt").write_text(text + "\n", encoding="utf-8")
    results = {
        "ok": ok,
        "budget_s": budget_s(steps),
        "elapsed_s": round(elapsed_s, 1),
        "steps": [
            {"argv": list(step.argv), **asdict(o)} for step, o in zip(steps, outcomes, strict=True)
        ],
        "parts": {part_name(i): names for i, names in enumerate(packing.parts) if names},
        "omitted": packing.omitted,
    }
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    log("")
    log(text)
    shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


def _one(
    step: Step, runs: Path, env: dict[str, str], out: Path, log: Callable[[str], None]
) -> StepOutcome:
    """Run one step and read its outcome; nothing it does stops the next."""
    log(f"== {step.name} (limit {step.limit_s} s)")
    stdout, stderr = runs / f"{step.name}.stdout", runs / f"{step.name}.stderr"
    rc, seconds = run_step(step.argv, step.limit_s, stdout, stderr, env)
    outcome = StepOutcome(step.name, rc, round(seconds, 1), step.limit_s, step.expect_rc)
    try:
        _read_outcome(step, outcome, stdout, stderr, runs, out, log)
    except Exception as error:  # a profile of an unforeseen shape: this step's failure only
        outcome.checks["outcome readable"] = False
        outcome.note = f"{type(error).__name__}: {error}"[:200]
    log(f"== {step.name}: exit {rc} after {seconds:.0f} s")
    return outcome


def _read_outcome(
    step: Step,
    outcome: StepOutcome,
    stdout: Path,
    stderr: Path,
    runs: Path,
    out: Path,
    log: Callable[[str], None],
) -> None:
    """Fill `outcome` from what the step left: checks and numbers of its profile, or the
    truth table; what it printed (setup, truth) or complained of (a failure) to the log."""
    err = stderr.read_text(errors="replace")
    printed = stdout.read_text(errors="replace")
    if step.kind == "profile":
        try:
            doc = read_profile(stdout, runs / step.name)
        except (OSError, ValueError) as error:
            outcome.checks["profile written"] = False
            outcome.note = f"no profile ({error})"[:200]
        else:
            outcome.checks = {"profile written": True, **profile_checks(step, doc, err)}
            outcome.numbers = profile_numbers(doc)
    elif step.kind == "sweep":
        outcome.checks = sweep_checks(sweep_dir(step))
    elif step.kind == "truth":
        (out / "truth_cuda.txt").write_text(printed, encoding="utf-8")
        outcome.note = next((line for line in reversed(printed.splitlines()) if line), "")
    for text, show in (
        (printed, step.kind != "profile"),
        (err, outcome.rc != 0 or step.kind != "profile"),
    ):
        if show and text.strip():
            log(text[-TAIL_CHARS:].rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="the plan only, nothing measured")
    args = parser.parse_args(argv)
    py = os.environ.get("PYTHON", "python3")
    wheels = os.environ.get("WHEELS", ".whl")
    if args.dry_run:
        return dry_run(py, wheels)
    return measure(py, wheels, Path(os.environ.get("OUT", "gpu_check_out")))


if __name__ == "__main__":
    sys.exit(main())
