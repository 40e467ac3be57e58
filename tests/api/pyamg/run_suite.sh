#!/usr/bin/env bash
# Run pyamg's own test suite (pytest --pyargs pyamg) against one amg_core:
#   tests/api/pyamg/run_suite.sh stock     # the pyamg wheel's pybind11 amg_core
#   tests/api/pyamg/run_suite.sh bindthem  # amg_core built and bound by bindthem
#                                      # (the bindthem_pyamg pytest plugin)
# Extra arguments go to pytest (e.g. -k, or module names instead of `pyamg`:
#   run_suite.sh bindthem --pyargs pyamg.amg_core pyamg.relaxation).
# PYTHON picks the interpreter (default: python on PATH, or the repo's .venv).
# Full run, no -x, no cache; ends with pytest's summary line and the wall time.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
mode="${1:-}"
shift || true
case "$mode" in
    stock|bindthem) ;;
    *) echo "usage: $0 stock|bindthem [pytest args...]" >&2; exit 2 ;;
esac
if [ -z "${PYTHON:-}" ]; then
    if [ -x "$repo/.venv/bin/python" ]; then PYTHON="$repo/.venv/bin/python"; else PYTHON=python; fi
fi
# pytest runs from an empty folder so neither the repo's pytest config nor its
# source tree leak in; bindthem comes from the installed package, or from the
# repo when it is only built in place there.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
pypath="${PYTHONPATH:-}"
if [ "$mode" = bindthem ]; then
    if ! "$PYTHON" -c "import bindthem._core" 2>/dev/null; then
        pypath="$repo${pypath:+:$pypath}"
    fi
    pypath="$here:$repo/tests/support${pypath:+:$pypath}"
    plugin=(-p bindthem_pyamg)
else
    plugin=()
fi
if [ $# -eq 0 ]; then set -- --pyargs pyamg; fi
start=$(date +%s.%N)
PYTHONPATH="$pypath" "$PYTHON" -m pytest -p no:cacheprovider -q -rfEs "${plugin[@]}" "$@"
rc=$?
end=$(date +%s.%N)
printf 'run_suite.sh %s: exit %d, wall %.1fs\n' "$mode" "$rc" "$(echo "$end - $start" | bc 2>/dev/null || python3 -c "print($end-$start)")"
exit $rc
