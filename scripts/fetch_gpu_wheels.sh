#!/usr/bin/env bash
# Fill .whl/ (git-ignored) with the wheels scripts/gpu_wheels.txt pins, built for the GPU
# machine's CPython 3.12 on x86-64 Linux, then check the folder (gpu_check.sh --dry-run).
# Run here, where PyPI is reachable; the device tool then carries .whl to the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
py="${PYTHON:-python3}"
dest="${WHEELS:-.whl}"
rm -rf "$dest" && mkdir -p "$dest"
platforms=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 \
  manylinux1_x86_64; do
  platforms+=(--platform "$p")
done
while read -r pin; do
  pin="${pin%%#*}"
  pin="$(echo "$pin" | xargs)"
  [ -n "$pin" ] || continue
  if ! "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${platforms[@]}" -d "$dest" "$pin" 2>/dev/null; then
    # No wheel on the index (antlr4-python3-runtime 4.9.3 is an sdist): build a pure one.
    "$py" -m pip wheel -q --no-deps -w "$dest" "$pin"
  fi
done < scripts/gpu_wheels.txt
exec "$py" scripts/gpu_env.py check --wheels "$dest"
