#!/usr/bin/env bash
# run_gpu_check.sh - the device check: bindthem on a real GPU, in one call
# that leaves time for a rerun. No network. The `run` call to make, and
# what to prepare here first, are in tests/cuda/gpu/README.md.
#
#   bash tests/cuda/gpu/run_gpu_check.sh [pytest args]
#
# Steps, all within one budget of $BINDTHEM_GPU_BUDGET seconds (default
# 280: with a machine start of up to 2 minutes, 7 minutes in all), each
# step's limit cut to what is left (a step that would start with nothing
# left fails the check, saying so):
#  - bindthem._core: the one carried (tests/cuda/gpu/prepare_device.sh) when
#    it imports and was built from this tree's sources (core_hash.py), else
#    built here (BINDTHEM_GPU_REBUILD=1 always builds, =0 takes any that imports);
#  - the kernels (build_kernels.py): the build carried in $BINDTHEM_GPU_CARRIED
#    (default build/gpu-kernels) when its source hash is this tree's, else
#    built here with nvcc, else NVRTC, else the prebuilt fatbin;
#  - a CUDA device: none fails with status 3, after everything is built,
#    listing the tests and hang-probe cases that would run;
#  - probe_driver.py: what the driver says of the module images (never
#    fails the check by itself);
#  - every tests/cuda/gpu/test_*.py (new files too, marked or not), each
#    test in a process of its own with a wall limit (isolation.py: a test
#    that hangs is killed, its native and Python stacks into stacks.log, and
#    fails as HUNG; one that crashes fails as CRASHED; the next one runs),
#    within the budget less the hang probe's share ($BINDTHEM_GPU_PROBE_SHARE,
#    default 45 s);
#  - probe_hangs.py: its cases, each in a process with a short limit;
#  - summarize.py: summary.md and summary.json.
#
# Exit status: 0 only when every test collected ran and passed, or skipped
# because an optional library (CuPy, PyTorch, ml_dtypes) or a second GPU is
# not installed, and every hang-probe case that counts passed; 3 when there
# is no GPU; 1 otherwise (a build step, a failed, hung, crashed or missing
# test, a missing JUnit XML, a hang-probe case, a budget overrun), the
# summary saying which.
#
# $OUT (the device tool brings back at most 8 files) gets, as they are made:
# summary.md, summary.json (with the figures: launch overhead against a
# direct cuLaunchKernel and CuPy, bandwidth), junit.xml, pytest.log,
# failures.log (each failure's text as it happens), stacks.log (a hang's
# stacks), hangs.log (the hang probe) and steps.log (every other step's log).
# Logs and build outputs go to $BINDTHEM_GPU_WORK (default build/gpu-check).
# Python: $PYTHON, else .venv/bin/python, else python3 (on the device image
# the 3.12 that holds NumPy, pytest, CuPy and PyTorch).
set -euo pipefail
cd "$(dirname "$0")/../../.."
PY=${PYTHON:-}
if [ -z "$PY" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
export PATH="$PATH:/usr/local/cuda/bin"
unset BINDTHEM_LIBCUDA
export PYTHONPATH=$PWD:$PWD/tests/cuda/gpu${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
WORK=${BINDTHEM_GPU_WORK:-$PWD/build/gpu-check}
CARRIED=${BINDTHEM_GPU_CARRIED:-build/gpu-kernels}
mkdir -p "$WORK"
rm -f "$WORK"/*.log "$WORK"/*.xml "$WORK"/*.json "$WORK"/summary.md
JOBS=$(nproc 2>/dev/null || echo 4)
BUDGET=${BINDTHEM_GPU_BUDGET:-280}
PROBE_SHARE=${BINDTHEM_GPU_PROBE_SHARE:-45}
RESERVE=10  # kept for the summary
KEPT="summary.md summary.json junit.xml pytest.log failures.log stacks.log hangs.log steps.log"
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT"; fi
export BINDTHEM_GPU_BUILD=$WORK BINDTHEM_GPU_FIGURES=$WORK/figures.json

say() { echo "$*" | tee -a "$WORK/steps.log"; }
step() { echo; say "== $* ($SECONDS s of $BUDGET s used)"; }
keep() {  # the files that come back, into $OUT so far
    local f
    if [ -z "${OUT:-}" ]; then return 0; fi
    for f in $KEPT; do
        if [ -f "$WORK/$f" ]; then cp -f "$WORK/$f" "$OUT"/; fi
    done
}
die() {
    echo "run_gpu_check: FAILED: $1" | tee -a "$WORK/steps.log" >&2
    if ! "$PY" tests/cuda/gpu/summarize.py "$WORK" --failed "$1" >/dev/null; then
        echo "run_gpu_check: (no summary written either)" >&2
    fi
    keep
    exit "${2:-1}"
}
limit() {  # SECONDS WHAT: that, or what is left of the budget if less
    local left=$((BUDGET - SECONDS - RESERVE))
    if [ "$left" -le 0 ]; then
        die "the check's budget of $BUDGET s is spent ($SECONDS s) before: $2"
    fi
    if [ "$1" -lt "$left" ]; then echo "$1"; else echo "$left"; fi
}
run_logged() {  # NAME SECONDS CMD...: runs CMD, its output in $WORK/NAME.log and steps.log
    local name=$1 secs rc=0
    secs=$(limit "$2" "$name") || exit 1
    shift 2
    timeout -k 5 "$secs" "$@" >"$WORK/$name.log" 2>&1 || rc=$?
    { echo "---- $name (limit $secs s, status $rc)"; cat "$WORK/$name.log"; } >>"$WORK/steps.log"
    if [ $rc -ne 0 ]; then
        tail -n 60 "$WORK/$name.log" >&2
        die "$name (status $rc; see $WORK/$name.log; limit $secs s)"
    fi
    keep
}

step "machine"
say "$("$PY" -c 'import sys, platform; print("Python", sys.version.split()[0], platform.machine())')"
if command -v nvidia-smi >/dev/null; then
    say "$(nvidia-smi -L 2>&1 || echo "nvidia-smi -L failed")"
else
    say "no nvidia-smi"
fi
if command -v nvcc >/dev/null; then say "$(nvcc --version | grep release)"; else say "no nvcc"; fi

step "bindthem._core"
if [ "${BINDTHEM_GPU_REBUILD:-}" != 1 ] && "$PY" -c 'import bindthem._core' 2>/dev/null \
    && { [ "${BINDTHEM_GPU_REBUILD:-}" = 0 ] || "$PY" tests/cuda/gpu/core_hash.py --check; }; then
    say "using the bindthem._core there is (BINDTHEM_GPU_REBUILD=1 builds one)"
else
    run_logged build_ext 200 "$PY" setup.py build_ext --inplace -q -j "$JOBS"
fi
say "$("$PY" -c 'import bindthem._core as c; print("bindthem._core from", c.__file__)')"

step "the kernels"
run_logged build_kernels 240 "$PY" tests/cuda/gpu/build_kernels.py "$WORK" --from "$CARRIED"
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
print("driver:", c.driver(), "devices:", n)' 2>&1 | tee -a "$WORK/steps.log"
have_gpu=${PIPESTATUS[0]}
set -e
if [ "$have_gpu" -ne 0 ]; then
    # what would run: every test (each in its own process) and every probe case
    if ! "$PY" -m pytest -p no:cacheprovider -p isolation -q --collect-only tests/cuda/gpu \
        >"$WORK/collect.log" 2>&1; then
        tail -n 30 "$WORK/collect.log" >&2
        die "the gpu tests do not even collect (see $WORK/collect.log)"
    fi
    { echo "---- would run, each test in its own process:"; grep '::' "$WORK/collect.log"
      echo "---- and the hang probe's cases:"; "$PY" tests/cuda/gpu/probe_hangs.py --list; } \
        | tee -a "$WORK/steps.log"
    tail -n 1 "$WORK/collect.log"
    die "no GPU on this machine: the device check needs one" 3
fi

step "probe the driver"
# what the driver itself says of the module images; never fails the check by itself
secs=$(limit 30 "the driver probe") || exit 1
if ! timeout -k 5 "$secs" "$PY" tests/cuda/gpu/probe_driver.py "$WORK" >"$WORK/probe.log" 2>&1; then
    echo "the driver probe failed (see probe.log in steps.log)"
fi
{ echo "---- probe_driver.py"; cat "$WORK/probe.log"; } >>"$WORK/steps.log"
keep

step "tests"
left=$((BUDGET - SECONDS - RESERVE - PROBE_SHARE))
if [ "$left" -lt 20 ]; then
    die "the check's budget of $BUDGET s is spent ($SECONDS s, $PROBE_SHARE s kept for the hang probe) before: the tests"
fi
logs=("$WORK/pytest.log")
if [ -n "${OUT:-}" ]; then logs+=("$OUT/pytest.log"); fi
set +e
# each test's start is refused 5 s before the step's limit (isolation.py): the
# session ends, its JUnit XML written, before timeout's kill; a file that does
# not import fails the check (summarize.py) but does not stop the other files
BINDTHEM_GPU_DEADLINE=$(($(date +%s) + left - 5)) \
    timeout -k 5 "$left" "$PY" -m pytest -p no:cacheprovider -p isolation -p failure_log \
    -v -rs --continue-on-collection-errors --junitxml="$WORK/junit.xml" tests/cuda/gpu "$@" \
    2>&1 | tee "${logs[@]}"
rc=${PIPESTATUS[0]}
set -e
keep
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    say "run_gpu_check: the tests ran past their $left s (the budget less the probe's share)"
fi

step "hang probe"
prc=0
left=$((BUDGET - SECONDS - RESERVE))
if [ "$left" -lt 5 ]; then
    say "run_gpu_check: no time left for the hang probe"
    prc=124
else
    BINDTHEM_GPU_DEADLINE=$(($(date +%s) + left - 2)) timeout -k 5 "$left" \
        "$PY" tests/cuda/gpu/probe_hangs.py "$WORK" || prc=$?
fi
keep

step "summary"
set +e
"$PY" tests/cuda/gpu/summarize.py "$WORK" --pytest-status "$rc" --probe-status "$prc" \
    --test-dir tests/cuda/gpu
src=$?
set -e
keep
exit $src
