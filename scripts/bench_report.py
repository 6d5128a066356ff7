"""Report pages: size and render time of a profile page, a comparison page and a 64-point sweep
page, each beside the text reader over the same input, measured in one run.

A 64-point sweep (4 imgsz × 2 AMP × 8 batches, 3 failed, 1 interrupted) is built from one real
profile with its numbers edited per point, as a GPU sweep would record them (peak VRAM, the
device's memory). Each command runs as a fresh process (cold start, as a user runs it), 5 times;
medians are printed with the ratio to `summary` of the same input.

    python scripts/bench_report.py [PROFILE.json]   # default: measures a small CPU profile first
"""

from __future__ import annotations

import copy
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RUNS = 5
CLI = [sys.executable, "-m", "libreyolo"]
FAILED_OOM = "CUDA out of memory. Tried to allocate 2.00 GiB"


def _run(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([*CLI, *argv], check=True, capture_output=True)
    return time.perf_counter() - start


def _median_s(argv: list[str]) -> float:
    return statistics.median(_run(argv) for _ in range(RUNS))


def _point(base: dict[str, Any], batch: int, imgsz: int, amp: bool) -> dict[str, Any]:
    profile = copy.deepcopy(base)
    m = profile["metrics"]
    ips = round(15.0 * batch**0.8 * (640 / imgsz) ** 2 * (1.6 if amp else 1.0), 2)
    m |= {"img_per_s": ips, "throughput_img_s": ips, "step_ms": round(1000 * batch / ips, 3)}
    m["peak_vram_mb"] = round(200 + batch * imgsz * imgsz / 4000 * (0.6 if amp else 1.0), 1)
    profile["environment"]["device_memory_bytes"] = 150_000_000_000
    profile["run"] |= {"batch": batch, "imgsz": imgsz, "amp": amp}
    return profile


def build_sweep(base: dict[str, Any], root: Path) -> Path:
    """64 point folders and their plan under `root`; `sweep.json` written by the sweep's own
    report code."""
    plan: dict[str, dict[str, Any]] = {}
    for imgsz in (320, 480, 640, 800):
        for amp in (True, False):
            for batch in (1, 2, 4, 8, 16, 32, 64, 128):
                name = f"b{batch}_s{imgsz}_amp{int(amp)}"
                plan[name] = {}
                folder = root / name
                (folder / "infer").mkdir(parents=True)
                overrides = [f"batch={batch}", f"imgsz={imgsz}", f"amp={str(amp).lower()}"]
                config = {"batch": batch, "imgsz": imgsz, "amp": amp}
                (folder / "point.json").write_text(
                    json.dumps({"config": config, "overrides": overrides})
                )
                if batch == 128 and imgsz >= 640 and not (imgsz == 640 and amp):
                    status = {"status": "failed", "reason": FAILED_OOM, "code": "oom"}
                elif batch == 64 and imgsz == 800 and not amp:
                    status = {"status": "interrupted", "reason": "stopped by SIGTERM"}
                else:
                    profile = _point(base, batch, imgsz, amp)
                    (folder / "infer" / "profile.json").write_text(json.dumps(profile))
                    status = {"status": "ok", "reason": "", "profile": "infer/profile.json"}
                (folder / "status.json").write_text(json.dumps(status | {"overrides": overrides}))
    plan_doc = {"schema": "libreyolo.sweep-plan/v1", "points": list(plan)}
    (root / "sweep_plan.json").write_text(json.dumps(plan_doc))
    subprocess.run(
        [sys.executable, "-m", "libreyolo.sweep.report", str(root)],
        check=False,
        capture_output=True,
    )
    return root


def _measure_profile(work: Path) -> Path:
    """A small CPU inference profile to build the sweep from (20 measured iterations)."""
    command = "profile infer --device cpu --imgsz 64 --warmup 2 --runs 20 --project"
    subprocess.run([*CLI, *command.split(), str(work)], check=True, capture_output=True)
    return work / "infer" / "profile.json"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        source = Path(sys.argv[1]) if len(sys.argv) > 1 else _measure_profile(work / "p")
        sweep = build_sweep(json.loads(source.read_text()), work / "sweep")
        rows = [
            ("profile page", [str(source)], work / "profile.html"),
            ("comparison page", [str(source), str(source)], work / "compare.html"),
            ("64-point sweep page", [str(sweep)], work / "sweep.html"),
        ]
        print(f"{'page':<22}{'bytes':>11}{'report s':>10}{'summary s':>11}{'ratio':>7}")
        for label, inputs, out in rows:
            report_s = _median_s(["profile", "report", *inputs, "-o", str(out)])
            summary = ["compare", *inputs] if len(inputs) == 2 else ["summary", *inputs]
            summary_s = _median_s(["profile", *summary])
            size = out.stat().st_size
            print(
                f"{label:<22}{size:>11,}{report_s:>10.3f}{summary_s:>11.3f}"
                f"{report_s / summary_s:>7.2f}"
            )


if __name__ == "__main__":
    main()
