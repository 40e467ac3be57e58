#!/usr/bin/env bash
# run_gpu_check.sh - the device check: build bindthem and the kernels with
# what this machine has, then run tests/cuda/gpu on its GPU. No network.
#
#   bash tests/cuda/gpu/run_gpu_check.sh [pytest args]
#
# Steps, all within one budget of $BINDTHEM_GPU_BUDGET seconds (default 480,
# under the device tool's 600 s command limit; each step's own limit is cut
# to what is left, and a step that would start with none fails the check):
# build bindthem._core in place (unless one imports already:
# prepare_device.sh); build tests/cuda/gpu/gpu_kernels.cuh with nvcc, else
# NVRTC, else the prebuilt fatbin in tests/cuda/gpu/prebuilt/, gpu_features.cuh and
# gpu_launch.cuh with nvcc or NVRTC, and launch_floor.so with gcc
# (build_kernels.py: any failure fails the check); check that a CUDA device
# is there; print what the driver says of the module images (probe_driver.py:
# each kernel's parameters, and bindthem.cuda.load's whole error if one
# fails); run the gpu tests with pytest-timeout's --timeout=60 (required)
# and faulthandler's stack dump of a test past 50 s (a call that blocks
# holding the GIL, which pytest-timeout's signal cannot interrupt), and a
# watchdog: no test output for $BINDTHEM_GPU_QUIET s (default 80) takes the
# native stacks of pytest's threads (cuda-gdb or gdb) into stacks.log, then
# stops pytest, so that the summary still comes;
# summarize (summarize.py) into build/gpu-check/ and $OUT: summary.json,
# summary.md (figures: launch overhead against a direct cuLaunchKernel and
# CuPy RawModule, axpy bandwidth, and the tight targets, met or not).
# Every log, the junit XML and figures.json go into $OUT as they are made
# (pytest's log line by line, each failure's traceback into failures.log as
# it happens: tests/cuda/gpu/failure_log.py), so a run cut short still brings them
# back.
#
# Two tests of test_gpu_findings.py hung on an H200 (driver 580): which step
# hangs, and under what, is what tests/cuda/gpu/probe_hangs.py finds, in a call
# of its own after the kernels are built (see its docstring).
#
# Logs and build outputs go to $BINDTHEM_GPU_WORK (default build/gpu-check).
# Python: $PYTHON, else .venv/bin/python, else python3 (on the device image
# the 3.12 that holds NumPy, pytest, pytest-timeout, CuPy and PyTorch).
#
# Exit status: 0 only when every test passed, or skipped because an
# optional library (CuPy, PyTorch, ml_dtypes) or a second GPU is not
# installed (listed in the summary). Non-zero, saying why, when a build
# step fails (its log is printed), when there is no GPU (3: everything is
# built first, and the tests are listed), when a test fails or skips for
# any other reason, or when the budget runs out.
set -euo pipefail
cd "$(dirname "$0")/../../.."
PY=${PYTHON:-}
if [ -z "$PY" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
export PATH="$PATH:/usr/local/cuda/bin"
unset BINDTHEM_LIBCUDA
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
WORK=${BINDTHEM_GPU_WORK:-$PWD/build/gpu-check}
mkdir -p "$WORK"
rm -f "$WORK"/*.log "$WORK/junit.xml" "$WORK/figures.json" "$WORK/manifest.json"
JOBS=$(nproc 2>/dev/null || echo 4)
BUDGET=${BINDTHEM_GPU_BUDGET:-480}
RESERVE=15  # kept for the summary
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; fi

step() { echo; echo "== $* ($SECONDS s of $BUDGET s used)"; }
keep() {  # what $WORK holds so far, into $OUT
    local f
    if [ -z "${OUT:-}" ]; then return 0; fi
    for f in "$WORK"/*.log "$WORK"/*.xml "$WORK"/*.json; do
        # at most 8 files come back from the device tool: the manifest stays
        if [ -f "$f" ] && [ "$(basename "$f")" != manifest.json ]; then cp -f "$f" "$OUT"/; fi
    done
}
die() {
    echo "run_gpu_check: FAILED: $1" >&2
    if ! "$PY" tests/cuda/gpu/summarize.py "$WORK" --failed "$1" >/dev/null; then
        echo "run_gpu_check: (no summary written either)" >&2
    fi
    keep
    exit "${2:-1}"
}
limit() {  # SECONDS: that, or what is left of the budget if less
    local left=$((BUDGET - SECONDS - RESERVE))
    if [ "$left" -le 0 ]; then
        die "the check's budget of $BUDGET s is spent ($SECONDS s) before: $2"
    fi
    if [ "$1" -lt "$left" ]; then echo "$1"; else echo "$left"; fi
}
run_logged() {  # NAME SECONDS CMD...: runs CMD, its output in $WORK/NAME.log
    local name=$1 secs
    secs=$(limit "$2" "$name") || exit 1
    shift 2
    if ! timeout "$secs" "$@" >"$WORK/$name.log" 2>&1; then
        tail -n 60 "$WORK/$name.log" >&2
        die "$name (see $WORK/$name.log; limit $secs s)"
    fi
    keep
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
# A _core built beforehand for this Python (tests/cuda/gpu/prepare_device.sh, for
# a machine without libffi/libyaml headers) is used as it is.
if [ -z "${BINDTHEM_GPU_REBUILD:-}" ] && "$PY" -c 'import bindthem._core' 2>/dev/null; then
    echo "using the prebuilt bindthem._core (BINDTHEM_GPU_REBUILD=1 builds it)"
else
    run_logged build_ext 200 "$PY" setup.py build_ext --inplace -q -j "$JOBS"
fi
"$PY" -c 'import bindthem._core as c; print("bindthem._core from", c.__file__)'

step "build the kernels"
run_logged build_kernels 240 "$PY" tests/cuda/gpu/build_kernels.py "$WORK"
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
    if ! BINDTHEM_GPU_BUILD=$WORK "$PY" -m pytest -p no:cacheprovider -q -m gpu \
        --collect-only tests/cuda/gpu >"$WORK/collect.log" 2>&1; then
        tail -n 30 "$WORK/collect.log" >&2
        die "the gpu tests do not even collect (see $WORK/collect.log)"
    fi
    tail -n 1 "$WORK/collect.log"
    die "no GPU on this machine: the device check needs one" 3
fi

stacks() {  # PID: the native stacks of PID's threads (cuda-gdb, else gdb) into $WORK/stacks.log
    local dbg
    dbg=$(command -v cuda-gdb || command -v gdb) || dbg=""
    if [ -z "$dbg" ]; then
        echo "no cuda-gdb or gdb here: no native stacks" >>"$WORK/stacks.log"
        return 0
    fi
    timeout 60 "$dbg" -p "$1" -batch -ex "set pagination off" -ex "thread apply all bt" \
        >>"$WORK/stacks.log" 2>&1 || echo "($dbg failed or ran past 60 s)" >>"$WORK/stacks.log"
}
watchdog() {  # QUIET: the tests' pytest, silent QUIET s (a call that blocks in the driver,
    # past faulthandler's Python stacks), gets its native stacks taken, then is stopped
    local quiet=$1 pid
    while sleep 5; do
        pid=$(pgrep -n -f -- "-m pytest -p no:cacheprovider -p failure_log") || return 0
        if [ $(($(date +%s) - $(stat -c %Y "$WORK/pytest.log"))) -ge "$quiet" ]; then
            echo "run_gpu_check: no test output for $quiet s: the stacks of pid $pid into" \
                "stacks.log, then it is stopped" | tee -a "$WORK/stacks.log" >&2
            stacks "$pid"
            kill -9 "$pid"
            keep
            return 0
        fi
    done
}

step "probe"
# what the driver itself says of the module images (each kernel's parameters)
# and bindthem.cuda.load's whole error if one fails: shown even when the tests
# cannot run (tests/cuda/gpu/probe_driver.py); never fails the check by itself
secs=$(limit 60 "the probe") || exit 1
if ! timeout "$secs" "$PY" tests/cuda/gpu/probe_driver.py "$WORK" >"$WORK/probe.log" 2>&1; then
    echo "the probe failed (see $WORK/probe.log)"
fi
keep
cat "$WORK/probe.log"

step "tests"
# a hung test must not take the whole budget: pytest-timeout is required
if ! "$PY" -c 'import pytest_timeout' 2>/dev/null; then
    die "pytest-timeout is not installed for $PY (carry its wheel: the device tool's README)"
fi
secs=$(limit 420 "the tests") || exit 1
logs=("$WORK/pytest.log")
if [ -n "${OUT:-}" ]; then logs+=("$OUT/pytest.log"); fi
set +e
: >"$WORK/pytest.log"
watchdog "${BINDTHEM_GPU_QUIET:-80}" &
wd=$!
BINDTHEM_GPU_BUILD=$WORK BINDTHEM_GPU_FIGURES=$WORK/figures.json \
    PYTHONPATH=$PWD/tests/cuda/gpu:$PYTHONPATH \
    timeout "$secs" "$PY" -m pytest -p no:cacheprovider -p failure_log -m gpu -v -rs \
    --timeout=60 -o faulthandler_timeout=50 \
    --junitxml="$WORK/junit.xml" tests/cuda/gpu "$@" 2>&1 | tee "${logs[@]}"
rc=${PIPESTATUS[0]}
kill "$wd" 2>/dev/null
wait "$wd" 2>/dev/null
set -e
keep
if [ "$rc" -eq 124 ]; then
    echo "run_gpu_check: the tests ran past their $secs s (the budget's rest)" >&2
fi

step "summary"
"$PY" tests/cuda/gpu/summarize.py "$WORK" --pytest-status "$rc"
