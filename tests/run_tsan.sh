#!/usr/bin/env bash
# bindthem._core built with ThreadSanitizer, on free-threaded CPython 3.13t built
# with ThreadSanitizer too, running tests/core/test_freethreaded.py (one Function
# hammered from 4 threads: dispatch misses, the last-call memo, binding again,
# pickling, options) and tests/cuda/test_freethreaded_cuda.py (DeviceArrays shared by
# 4 threads on the mock CUDA driver, which is not instrumented) with the GIL off.
#
#   tests/run_tsan.sh [PYTEST ARGS...]
#
# Both must be instrumented: TSan learns of a lock or an atomic only by seeing it,
# and CPython's own (PyMutex, critical sections, reference counts) would otherwise
# look like no synchronisation at all. NumPy's wheel is not instrumented; TSan does
# not see its memory accesses. The CPython (tests/ft_python.sh tsan, cached under
# ~/.cache/bindthem-ci/py3.13t-tsan) links libtsan itself: no LD_PRELOAD.
# Suppressions: CPython's own list for its free-threaded build (Tools/tsan), and
# nothing of bindthem's: any report whose stack has a bt_ frame fails the run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
start=$SECONDS
py=$("$ROOT/tests/ft_python.sh" tsan)
cache=$(dirname "$(dirname "$(dirname "$py")")")
out=$ROOT/build/tsan
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# _core with -fsanitize=thread (setup.py's BINDTHEM_SANITIZE), warnings as errors,
# beside the Python side (no in-place build)
rm -rf "$out"
(cd "$ROOT" && BINDTHEM_SANITIZE=thread BINDTHEM_WERROR=1 "$py" setup.py -q build_ext \
    -b "$out/lib" -t "$out/tmp")
(cd "$ROOT" && tar -c --exclude='*.so' --exclude=__pycache__ bindthem | tar -x -C "$out/lib")
echo "run_tsan: $("$py" -VV | head -n1) and a TSan _core ready in $((SECONDS - start)) s"

cp "$cache/tsan/suppressions_free_threading.txt" "$work/suppressions.txt"
log=$work/tsan
export TSAN_OPTIONS="suppressions=$work/suppressions.txt log_path=$log halt_on_error=0 exitcode=0 second_deadlock_stack=1"
export PYTHON_GIL=0 PYTHONPATH=$out/lib BINDTHEM_CACHE=$work/cache
# TSan slows each call ~10x: longer runs, so that the threads still overlap many times
export BINDTHEM_FT_SECONDS=${BINDTHEM_FT_SECONDS:-3}
[ $# -gt 0 ] || set -- "$ROOT/tests/core/test_freethreaded.py" \
    "$ROOT/tests/cuda/test_freethreaded_cuda.py"
rc=0
(cd "$work" && "$py" -m pytest -q -p no:cacheprovider "$@") || rc=$?

# TSan writes one log per process (log_path.<pid>): every report is shown; one
# with a frame of bindthem's code (csrc/, a bt_ function) fails the run
reports=0 ours=0
for f in "$log".*; do
    [ -e "$f" ] || continue
    cat "$f" >&2
    reports=$((reports + $(grep -c '^WARNING: ThreadSanitizer' "$f" || true)))
    ours=$((ours + $(awk '/^WARNING: ThreadSanitizer/{r=0} / #[0-9]+ bt_|csrc\//{if(!r){n++;r=1}} END{print n+0}' "$f")))
done
echo "run_tsan: $reports report(s), $ours in bindthem's code; tests exit $rc; $((SECONDS - start)) s"
[ "$ours" -eq 0 ] && [ "$rc" -eq 0 ]
