#!/usr/bin/env bash
# docs/installing.rst's one command for free-threaded CPython 3.13t, as a user runs it: a
# fresh venv of the 3.13t that tests/ft_python.sh builds (cached), the command read out of
# docs/installing.rst, run there on a copy of the working tree (pip builds in the tree it is
# given), then `import bindthem` must leave the GIL off. CI runs it in the background (.ci/run).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
start=$SECONDS
py=$("$ROOT/tests/ft_python.sh" plain)
python313t=$(dirname "$(readlink -f "$(dirname "$py")/python")")/python3.13t
cmd=$(grep -m1 -E '^    python3\.13t -m pip install .*\.$' "$ROOT/docs/installing.rst" | sed 's/^    //')
[ -n "$cmd" ] || { echo "ft_install: docs/installing.rst has no 'python3.13t -m pip install' line" >&2; exit 1; }
export PIP_CACHE_DIR=${BINDTHEM_CI_CACHE:-$HOME/.cache/bindthem-ci}/pip PIP_DISABLE_PIP_VERSION_CHECK=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/src"
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    [ -e "$f" ] && printf '%s\0' "$f"
done | tar --null -T - -c) | tar -x -C "$work/src"
"$python313t" -m venv "$work/venv"
# the command as written, its python3.13t the venv's
(cd "$work/src" && PATH="$work/venv/bin:$PATH" sh -c "${cmd/python3.13t/python}" -q >/dev/null)
(cd "$work" && "$work/venv/bin/python" -c '
import sys
import bindthem, numpy
if sys._is_gil_enabled():
    sys.exit("import bindthem turned the GIL on")
print("ft_install: %s installed bindthem and NumPy %s; the GIL stays off" % (sys.argv[1], numpy.__version__))
' "$cmd")
echo "ft_install: passed in $((SECONDS - start)) s"
