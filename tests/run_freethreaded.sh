#!/usr/bin/env bash
# The core suite on free-threaded CPython 3.13t, with the GIL off.
#
#   tests/run_freethreaded.sh
#
# The CPython (built --disable-gil from Debian's orig tarball, sha256 pinned) and
# its venv are cached under ~/.cache/bindthem-ci/py3.13t by tests/ft_python.sh:
# the first run builds them (about 5 minutes), later runs reuse them. bindthem is
# built afresh each run, warnings as errors. Then:
#   1. `import bindthem` (and bindthem.cuda) must leave the GIL off, with no
#      RuntimeWarning: _core declares Py_MOD_GIL_NOT_USED;
#   2. with PYTHON_GIL=0: the core suite (tests/run_pythons.sh's list; stubtest's
#      checks left out, as 3.13's run has them), plus
#      test_parallel, test_pickle, test_freethreaded and test_freethreaded_cuda
#      (threads at once; the latter on the mock CUDA driver).
# The tests run from an empty folder, so that they import the installed bindthem.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# the core suite, one file or test function (FILE::NAME) a line
CORE=$(grep -v '^#' "$ROOT/tests/core_suite.txt")
FT_TESTS="api/test_parallel.py services/test_pickle.py core/test_freethreaded.py
          cuda/test_freethreaded_cuda.py"  # relative to tests/, as core_suite.txt
start=$SECONDS
py=$("$ROOT/tests/ft_python.sh" plain)
export PIP_CACHE_DIR=${BINDTHEM_CI_CACHE:-$HOME/.cache/bindthem-ci}/pip PIP_DISABLE_PIP_VERSION_CHECK=1
BINDTHEM_WERROR=1 "$py" -m pip install -q --no-deps --no-build-isolation --force-reinstall "$ROOT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "run_freethreaded: $("$py" -VV | head -n1) ready in $((SECONDS - start)) s"

# 1. the import keeps the GIL off (PYTHON_GIL unset: the module's own declaration decides)
if ! (cd "$work" && env -u PYTHON_GIL "$py" -W error -c '
import sys, warnings
warnings.simplefilter("error")
import bindthem, bindthem._core, bindthem.cuda
if sys._is_gil_enabled():
    sys.exit("import bindthem turned the GIL on")
print("run_freethreaded: import bindthem keeps the GIL off")'); then
    echo "run_freethreaded: bindthem._core is not free-threaded (Py_MOD_GIL_NOT_USED)" >&2
    exit 1
fi

# 2. the tests, GIL off
tests=()
for t in $CORE $FT_TESTS; do tests+=("$ROOT/tests/$t"); done
# stubtest left out: 3.13's run (tests/run_pythons.sh) has it, with the same CPython's
# inspect and stubtest, and the free-threaded build changes no signature a stub states;
# on 3.13t mypy runs uncompiled (no mypyc wheel), about 8 times its CPU time on 3.13
# Dask's statistical profiler off: its thread walks the other threads' frames
# (sys._current_frames), which CPython 3.13t does not make safe, and it crashed the
# interpreter in distributed/profile.py while test_parallel's cluster ran (Dask itself
# leaves the profiler off on 3.11 for a crash of its own). bindthem's calls are not in it.
if (cd "$work" && PYTHON_GIL=0 BINDTHEM_CACHE="$work/cache" \
        DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False \
        "$py" -m pytest -q -p no:cacheprovider -n 2 -k "not test_stubtest" "${tests[@]}"); then
    echo "run_freethreaded: passed in $((SECONDS - start)) s"
else
    echo "run_freethreaded: the suite failed on free-threaded CPython (PYTHON_GIL=0)" >&2
    exit 1
fi
