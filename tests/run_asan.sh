#!/bin/sh
# run_asan.sh - the test suite against an ASan/UBSan build of bindthem.
#
#   tests/run_asan.sh [PYTEST ARGS...]        (default: the whole of tests/)
#
# Builds bindthem._core with BINDTHEM_SANITIZE=address,undefined (and one
# malloc block per arena allocation) into build/asan, leaving an in-place
# build alone, then runs pytest on it with
#   - LD_PRELOAD of libasan (it must be loaded before anything else, and
#     python is not built with it) and of libstdc++ (without it, ASan's
#     __cxa_throw interceptor finds no real one and the first kernel that
#     throws a C++ exception aborts the interpreter);
#   - detect_leaks=0 (CPython does not free everything at exit);
#   - UBSan reports fatal;
#   - the nvcc tests left out (marker `nvcc`: nvcc's own processes would
#     start with libasan preloaded) and the gpu ones.
# $PYTHON (default python3) needs the test dependencies (pyproject.toml).
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
cc=${CC:-gcc}
out=$here/build/asan

cd "$here"
BINDTHEM_SANITIZE=address,undefined "$py" setup.py -q build_ext -b "$out/lib" -t "$out/tmp"
# the Python side beside the ASan-built _core (every subpackage and data file; no in-place build)
tar -c --exclude='*.so' --exclude=__pycache__ bindthem | tar -x -C "$out/lib"

LD_PRELOAD="$($cc -print-file-name=libasan.so) $($cc -print-file-name=libstdc++.so)"
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
PYTHONPATH=$out/lib
export LD_PRELOAD ASAN_OPTIONS UBSAN_OPTIONS PYTHONPATH

# not from the source folder: `python -m` puts the working directory first
cd "$out"
[ $# -gt 0 ] || set -- "$here/tests"
# Left out: the files that never load bindthem._core, neither in pytest's process nor
# in a Python it starts, so that this build changes nothing of what they run (their
# run in the whole suite is the same check): csrc's shape read off its sources
# (c_style, c_function_length, file_graph, layout), and the pure-C drivers and fuzz
# harnesses, which build with ASan/UBSan themselves (c_drivers, expr, fuzz); and the
# -funsigned-char build of test_platform_types, a plain build of its own.
for t in c_style c_function_length file_graph layout c_drivers expr fuzz; do
    set -- "$@" --ignore="$here/tests/core/test_$t.py"
done
set -- "$@" --deselect tests/core/test_platform_types.py::test_unsigned_char_build
exec "$py" -m pytest -q -p no:cacheprovider -m "not nvcc and not gpu" "$@"
