"""The memory prediction against measured peaks: tensor peak and peak RSS, on CPU training.

For each model and image size, `libreyolo profile run synthetic` at three batches (each its own
process, as a user runs it). Each profile predicts its own tensor peak from its two probe steps
(a quarter and a half of its batch): the tensor error. The smallest batch's profile then
predicts the two larger batches' peak RSS (`analysis.tensor_memory.predict_process_mb`: its
measured peak RSS plus RSS_PER_TENSOR_BYTE, 1.25, times the predicted growth of the tensor
peak): the RSS error, against what those runs measured. Targets (issue 45): tensor peak
within 10 %, peak RSS within 15 %.

    python scripts/bench_memory.py [--cases yolo9:t:128:4,8,16 ...] [--steps 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from libreyolo.analysis.tensor_memory import predict_process_mb
from libreyolo.document.files import load

ROOT = Path(__file__).resolve().parents[1]
CASES = (
    "yolo9:t:128:4,8,16",
    "yolo9:t:320:2,4,8",
    "yolox:s:128:4,8,16",
    "yolox:s:320:2,4,8",
)
WEIGHTS = {"yolo9": "LibreYOLO9{size}.pt", "yolox": "LibreYOLOX{size}.pt"}
TENSOR_TARGET_PCT, RSS_TARGET_PCT = 10.0, 15.0


def _run(folder: Path, family: str, size: str, imgsz: int, batch: int, steps: int) -> Path:
    argv = [sys.executable, "-m", "libreyolo", "profile", "run", "synthetic"]
    weights = WEIGHTS[family].format(size=size)  # random init: no weights are downloaded here
    argv += ["--weights", weights, "--size", size, "--device", "cpu", "--batch", str(batch)]
    argv += ["--imgsz", str(imgsz), "--steps", str(steps), "--warmup", "1", "--workers", "0"]
    argv += ["--project", str(folder)]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"exit {done.returncode}: {' '.join(argv)}\n{done.stderr[-2000:]}")
    return folder / "run" / "profile.json"


def _pct(predicted: float, measured: float) -> float:
    return (predicted - measured) / measured * 100


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES), help="family:size:imgsz:b,b,b")
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()
    worst_tensor = worst_rss = 0.0
    header = "case                 batch  tensor MB  pred MB   err%    RSS MB  pred RSS   err%"
    print(header)
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        for case in args.cases:
            family, size, imgsz, batches = case.split(":")
            profiles = {}
            for batch in map(int, batches.split(",")):
                folder = Path(tmp) / f"{family}{size}-{imgsz}-b{batch}"
                path = _run(folder, family, size, int(imgsz), batch, args.steps)
                profiles[batch] = load(str(path))
            anchor = profiles[min(profiles)]
            for batch, profile in profiles.items():
                metrics = profile.metrics
                tensor, predicted = metrics["tensor_peak_mb"], metrics["tensor_predicted_mb"]
                rss = metrics["peak_rss_mb"]
                assert isinstance(tensor, float) and isinstance(rss, float)
                tensor_err = _pct(float(predicted), tensor) if predicted is not None else None
                rss_pred = predict_process_mb(anchor, batch)
                rss_err = None if rss_pred is None else _pct(rss_pred, rss)
                if tensor_err is not None:
                    worst_tensor = max(worst_tensor, abs(tensor_err))
                if rss_err is not None and batch != min(profiles):
                    worst_rss = max(worst_rss, abs(rss_err))
                print(
                    f"{family}-{size} {imgsz:>4} px     {batch:>5} {tensor:10.1f} "
                    f"{predicted if predicted is not None else float('nan'):8.1f} "
                    f"{tensor_err if tensor_err is not None else float('nan'):+6.1f} "
                    f"{rss:9.1f} {rss_pred if rss_pred is not None else float('nan'):9.1f} "
                    f"{rss_err if rss_err is not None else float('nan'):+6.1f}"
                )
    print(
        json.dumps(
            {
                "worst_tensor_err_pct": round(worst_tensor, 1),
                "worst_rss_err_pct": round(worst_rss, 1),
            }
        )
    )
    ok = worst_tensor <= TENSOR_TARGET_PCT and worst_rss <= RSS_TARGET_PCT
    print(
        "PASS" if ok else "FAIL", f"(targets {TENSOR_TARGET_PCT:.0f} % and {RSS_TARGET_PCT:.0f} %)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
