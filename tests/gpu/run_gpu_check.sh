#!/usr/bin/env bash
# run_gpu_check.sh - the device check: build bindthem and the kernels with
# what this machine has, then run tests/gpu on its GPU. No network.
#
#   bash tests/gpu/run_gpu_check.sh [pytest args]
#
# Steps (each with a time limit; the whole fits in 8 minutes on a 16-core
# machine): build bindthem._core in place; build tests/gpu/gpu_kernels.cuh
# with nvcc, else NVRTC, else the prebuilt fatbin in tests/gpu/prebuilt/,
# and launch_floor.c with gcc (build_kernels.py); check that a CUDA device
# is there; run the gpu tests; summarize (summarize.py) into build/gpu-check/
# and $OUT when set: summary.json, summary.md (figures: launch overhead
# against a direct cuLaunchKernel and CuPy RawModule, axpy bandwidth).
#
# Exit status: 0 only when every test passed, or skipped because CuPy or
# PyTorch is not installed or a bindthem feature is not built yet (listed in
# the summary). Non-zero, saying why, when a build step fails (its log is
# printed), when there is no GPU (3), when a test fails or skips for lack of
# a build.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] && PY=.venv/bin/python
export PATH="$PATH:/usr/local/cuda/bin"
unset BINDTHEM_LIBCUDA
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
WORK=$PWD/build/gpu-check
mkdir -p "$WORK"
rm -f "$WORK/junit.xml" "$WORK/figures.json" "$WORK/manifest.json"
JOBS=$(nproc 2>/dev/null || echo 4)

step() { echo; echo "== $*"; }
die() {
    echo "run_gpu_check: FAILED: $1" >&2
    if ! "$PY" tests/gpu/summarize.py "$WORK" --failed "$1" >/dev/null; then
        echo "run_gpu_check: (no summary written either)" >&2
    fi
    exit "${2:-1}"
}
run_logged() {  # NAME SECONDS CMD...: runs CMD, its output in $WORK/NAME.log
    local name=$1 secs=$2
    shift 2
    if ! timeout "$secs" "$@" >"$WORK/$name.log" 2>&1; then
        tail -n 60 "$WORK/$name.log" >&2
        die "$name (see $WORK/$name.log)"
    fi
}

step "machine"
"$PY" -c 'import sys, platform; print(sys.version.split()[0], platform.machine())'
if command -v nvidia-smi >/dev/null; then
    nvidia-smi -L || echo "nvidia-smi -L failed"
else
    echo "no nvidia-smi"
fi
if command -v nvcc >/dev/null; then nvcc --version | tail -n 2; else echo "no nvcc"; fi

step "build bindthem._core"
# A _core built beforehand for this Python (tests/gpu/prepare_device.sh, for
# a machine without libffi/libyaml headers) is used as it is.
if [ -z "${BINDTHEM_GPU_REBUILD:-}" ] && "$PY" -c 'import bindthem._core' 2>/dev/null; then
    echo "using the prebuilt bindthem._core (BINDTHEM_GPU_REBUILD=1 builds it)"
else
    run_logged build_ext 300 "$PY" setup.py build_ext --inplace -q -j "$JOBS"
fi
"$PY" -c 'import bindthem._core as c; print("bindthem._core from", c.__file__)'

step "build the kernels"
run_logged build_kernels 300 "$PY" tests/gpu/build_kernels.py "$WORK"
tail -n 1 "$WORK/build_kernels.log"

step "device"
set +e
"$PY" -c '
import sys, bindthem.cuda as c
n = c.device_count()
if not n:
    try:
        c.driver()
    except c.CudaError as e:
        sys.exit("no GPU: %s" % e)
    sys.exit("no GPU: the driver reports no device")
print("driver:", c.driver(), "devices:", n)'
have_gpu=$?
set -e
if [ $have_gpu -ne 0 ]; then
    # still show that the tests are collected (they skip: no device)
    BINDTHEM_GPU_BUILD=$WORK "$PY" -m pytest -p no:cacheprovider -q -m gpu --collect-only \
        tests/gpu | tail -n 1
    die "no GPU on this machine: the device check needs one" 3
fi

step "tests"
set +e
# per-test limit where pytest-timeout is installed; the whole run 420 s
per_test=()
"$PY" -c 'import pytest_timeout' 2>/dev/null && per_test=(--timeout=60)
BINDTHEM_GPU_BUILD=$WORK BINDTHEM_GPU_FIGURES=$WORK/figures.json \
    timeout 420 "$PY" -m pytest -p no:cacheprovider -m gpu -v -rs "${per_test[@]}" \
    --junitxml="$WORK/junit.xml" tests/gpu "$@" 2>&1 | tee "$WORK/pytest.log"
rc=${PIPESTATUS[0]}
# what was made so far reaches $OUT even if a later step fails
[ -n "${OUT:-}" ] && cp -f "$WORK"/*.log "$WORK"/*.xml "$WORK"/*.json "$OUT"/ 2>/dev/null || true
set -e

step "summary"
"$PY" tests/gpu/summarize.py "$WORK" --pytest-status "$rc"
