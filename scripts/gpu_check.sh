#!/usr/bin/env bash
# The prepared GPU check, for the lent GPU machine (device tool, `carry: [".whl"]`):
#
#   bash scripts/gpu_check.sh            # there: about 6 minutes, every step time-boxed
#   bash scripts/gpu_check.sh --dry-run  # here: is .whl complete, does every import resolve?
#
# That machine reaches no registry: the check runs its own python3 (torch 2.11) with the repo on
# PYTHONPATH and the packages it lacks (hydra-core, omegaconf, antlr4, msgspec) installed from
# .whl/ (scripts/fetch_gpu_wheels.sh fills it here). It profiles inference (fp16, batch 8) and
# training (AMP) on cuda:0, checks the GPU fields and that no libkineto line reaches stderr,
# repeats the truth suite's planted bottlenecks on CUDA, and writes what it learns under $OUT
# (the device tool returns at most 8 files): gpu_check.log, checks.txt, truth_cuda.txt and
# runs.tar.gz (every profile, trace and stderr, to commit as fixtures).
# Exit status: 0 when every step and check passed.
set -uo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-python3}"
wheels="${WHEELS:-.whl}"

if [ "${1:-}" = "--dry-run" ]; then
  exec "$py" scripts/gpu_env.py check --wheels "$wheels"
fi

out="${OUT:-gpu_check_out}"
mkdir -p "$out"
runs="$(mktemp -d)"
site="$(mktemp -d)"
exec > >(tee "$out/gpu_check.log") 2>&1
exec 3>&1  # step headers: to the log even while a step's output goes to a file
status=0

step() {  # step NAME SECONDS COMMAND...: time-boxed, logged, never aborts the check
  local name="$1" limit="$2"
  shift 2
  local started=$SECONDS
  echo "== $name (limit ${limit}s)" >&3
  timeout --kill-after=10 "$limit" "$@"
  local rc=$?
  echo "== $name: exit $rc after $((SECONDS - started))s" >&3
  [ "$rc" -eq 0 ] || status=1
  return "$rc"
}

step environment 60 bash -c "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; \
  $py -c 'import sys, torch; print(sys.version.split()[0], torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))'"
if ! step wheels 120 "$py" scripts/gpu_env.py install --wheels "$wheels" --site "$site"; then
  echo "gpu_check: the wheel folder does not install here; nothing measured"
  exit 1
fi
export PYTHONPATH="$PWD:$site${PYTHONPATH:+:$PYTHONPATH}"
export LIBREYOLO_WEIGHTS_URL="http://127.0.0.1:9/{name}"  # no network there: random init is fine

profile() {  # profile NAME ARGS...: one measurement, its JSON outcome and its stderr kept
  local name="$1"
  shift
  step "$name" 150 "$py" -m libreyolo profile "$@" --project "$runs/$name" --json \
    > "$runs/$name.json" 2> "$runs/$name.stderr"
  cat "$runs/$name.stderr"
}

profile infer_fp16 infer --device 0 --warmup 5 --runs 20 --half
profile infer_b8 infer --device 0 --warmup 5 --runs 20 --batch 8
# 64 synthetic images: 8 batches of 8 hold the 4 measured and 2 calibration steps
profile run_amp run synthetic --device 0 --batch 8 --imgsz 320 --steps 4 --warmup 2 --workers 2

"$py" - "$runs" <<'PY' | tee "$out/checks.txt" || status=1
import json, sys
from pathlib import Path

runs = Path(sys.argv[1])
failures = []
for name, train in (("infer_fp16", False), ("infer_b8", False), ("run_amp", True)):
    stderr = (runs / f"{name}.stderr").read_text(errors="replace").strip()
    try:
        path = json.loads((runs / f"{name}.json").read_text())["profile"]
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError, KeyError) as err:
        print(f"FAIL {name}: no profile ({err}); stderr: {stderr[-300:]}")
        failures.append(name)
        continue
    m, trace, host = doc["metrics"], doc["trace"] or {}, doc.get("host") or {}
    checks = {
        "host sampled": host.get("measurable") is True and m.get("cpu_wait_frac") is not None,
        "quiet machine not contended": m.get("contended") is False,
        "gpu_util in (0, 1]": 0 < (m.get("gpu_util") or 0) <= 1,
        "kernels categorised": bool(trace.get("categories")),
        "phases present": bool(trace.get("phases")),
        "peak memory recorded": m.get("peak_vram_mb") is not None,
        "no libkineto lines on stderr": not any(
            k in line for line in stderr.splitlines() for k in ("USDT", "STAGE:", "libkineto")
        ),
    }
    if name != "infer_b8":
        checks["tensor-core share > 0 under AMP"] = (m.get("tensorcore_pct") or 0) > 0
    if train:
        names = {p["name"] for p in trace.get("phases", [])}
        checks["training phases"] = {"forward", "backward", "optimizer"} <= names
        checks["2 loader workers sampled"] = host.get("num_workers") == 2
    for label, ok in checks.items():
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {label}")
        if not ok:
            failures.append(f"{name}: {label}")
    print(f"     {name}: {json.dumps({k: m.get(k) for k in ('img_per_s', 'step_ms', 'gpu_util', 'bound', 'latency_p50_ms', 'peak_vram_mb', 'cpu_wait_frac', 'contended')})}")
print("all GPU checks passed" if not failures else f"{len(failures)} GPU checks failed")
sys.exit(1 if failures else 0)
PY

# The truth suite's planted bottlenecks, repeated on CUDA (the GPU fixture traces stay here).
step truth 180 "$py" scripts/truth_report.py --device 0 --only planted > "$out/truth_cuda.txt"
cat "$out/truth_cuda.txt"

tar -czf "$out/runs.tar.gz" -C "$runs" . && ls -la "$out"
echo "gpu_check: $([ "$status" -eq 0 ] && echo 'all steps passed' || echo 'some steps FAILED')"
exit "$status"
