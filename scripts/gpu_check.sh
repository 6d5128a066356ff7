#!/usr/bin/env bash
# The prepared GPU check, for the lent GPU machine (device tool, `carry: [".whl"]`):
#
#   bash scripts/gpu_check.sh            # there: at most 550 s, every step time-boxed
#   bash scripts/gpu_check.sh --dry-run  # here: is .whl complete, what will run, what comes back
#
# That machine reaches no registry: the check runs its own python3 (torch 2.11, or $PYTHON) with
# the repo on PYTHONPATH and the packages it lacks (hydra-core, omegaconf, antlr4, msgspec) and
# the energy extra's nvidia-ml-py (pinned, so NVML's Python side is the version tested here, not
# whatever the image holds) installed from .whl/ (or $WHEELS; scripts/fetch_gpu_wheels.sh
# pip-downloads every pin of scripts/gpu_wheels.txt into it here). The driver,
# scripts/gpu_check.py (stdlib only), runs each step in its own process group under its own
# limit, so one failure or hang never skips the rest: the machine's versions, the wheels, then
# on cuda:0 at imgsz 320 inference fp16, batch 8, YOLOX-n (random init), the forward as a CUDA
# graph and torch.compiled (compile time, no recompile in the window), training with AMP,
# an untraced inference at 640 px whose 400 runs are the energy window (only infer has
# --no-trace), AutoBatch (--batch -1), a one-point training sweep under tune.memory_budget_mb far
# below its need (it must be recorded `oom`), `profile run --trainer` on the tests' fake
# libreyolo 1.x (the trainer probe's CUDA path: syncs, CUDA activity, allocator peaks, energy
# read from outside; 1.6.0 itself cannot be installed there), training on two ranks with
# --device 0,1 (NCCL, SyncBatchNorm, the world profile; skipped with its reason on one GPU), and
# the truth suite's planted bottlenecks. Each
# profile is checked (GPU fields, kernels, phases, peak memory, tensor cores under AMP/half, no
# libkineto line on stderr, MFU in (0, 1] against the H200's datasheet peak, YOLOv9-t's 7.7
# GFLOP/img at 640 px scaled to the side, and the untraced one's NVML J/img over >= 1 s, ...).
#
# What comes back, flat under $OUT (the device tool returns 8 files of 16 MiB, 64 MiB in all):
#   gpu_check.log   every step's header, exit status and stderr tail (also on stdout)
#   results.txt     one row per step: exit, seconds, img/s, ms, gpu_util, peak MB, bound, checks
#   results.json    the same with every check by name, the archive parts and what was left out
#   truth_cuda.txt  the truth report's table on CUDA
#   runs-N.tar.gz   at most 4 parts: every profile, stdout and stderr, the traces gzipped (a
#                   trace that does not fit is left out and named in results.*)
# The results table is printed last, so it ends the stdout tail that comes back too.
# Exit status: 0 when every step and check passed (--dry-run: when the wheels and plan are fine).
set -uo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" scripts/gpu_check.py "$@"
