#!/usr/bin/env bash
# The prepared GPU check (run on a machine with CUDA, e.g. through the device tool): profile
# inference and training on cuda:0 with small windows, check the GPU fields, and keep the traces
# as fixtures under $OUT (or ./gpu_check_out); then repeat the truth suite's planted bottlenecks
# on CUDA (scripts/truth_report.py --device 0). Exit status: 0 when every check passed.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu_check_out}"
mkdir -p "$out"
py="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$py" -m venv .venv && .venv/bin/pip install -q -e '.[dev]'
fi
lib=.venv/bin/libreyolo
export LIBREYOLO_WEIGHTS_URL="http://127.0.0.1:9/{name}"  # no network there: random init is fine

$lib profile infer --device 0 --warmup 5 --runs 20 --half --project "$out/infer_fp16" --json \
  > "$out/infer_fp16.json"
$lib profile infer --device 0 --warmup 5 --runs 20 --batch 8 --project "$out/infer_b8" --json \
  > "$out/infer_b8.json"
$lib profile run synthetic --device 0 --batch 8 --imgsz 320 --steps 6 --warmup 2 --workers 2 \
  --project "$out/run_amp" --json > "$out/run_amp.json"

status=0
.venv/bin/python - "$out" <<'PY' || status=1
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
failures = []
for name, train in (("infer_fp16", False), ("infer_b8", False), ("run_amp", True)):
    path = json.loads((out / f"{name}.json").read_text())["profile"]
    doc = json.loads(Path(path).read_text())
    m, trace = doc["metrics"], doc["trace"] or {}
    checks = {
        "gpu_util in (0, 1]": 0 < (m.get("gpu_util") or 0) <= 1,
        "kernels categorised": bool(trace.get("categories")),
        "phases present": bool(trace.get("phases")),
        "peak memory recorded": m.get("peak_vram_mb") is not None,
    }
    if name != "infer_b8":
        checks["tensor-core share > 0 under AMP"] = (m.get("tensorcore_pct") or 0) > 0
    if train:
        names = {p["name"] for p in trace.get("phases", [])}
        checks["training phases"] = {"forward", "backward", "optimizer"} <= names
    for label, ok in checks.items():
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {label}")
        if not ok:
            failures.append(f"{name}: {label}")
print("all GPU checks passed" if not failures else f"{len(failures)} GPU checks failed")
sys.exit(1 if failures else 0)
PY

# The truth suite's planted bottlenecks, repeated on CUDA (and the fixture verdicts beside them).
.venv/bin/python scripts/truth_report.py --device 0 --only planted,gpu | tee "$out/truth_cuda.txt" \
  || status=1
exit "$status"
