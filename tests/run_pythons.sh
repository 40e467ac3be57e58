#!/usr/bin/env bash
# The core suite (tests/core_suite.txt) under every other CPython the machine's pyenv has (3.10 to 3.13;
# the one CI's own venv runs is left out, as the full suite covers it).
#
#   tests/run_pythons.sh [--clang VERSION] [VERSION...]   # default: 3.10 3.11 3.12 3.13
#
# --clang VERSION builds that version's bindthem with clang instead of the default
# compiler (CC=clang, warnings as errors, checked in the module's .comment section):
# CI's clang build, its core suite run by that CPython.
#
# Each version gets a venv with the `test` extra's packages, cached under
# ~/.cache/bindthem-ci/py<VERSION> (made again when pyproject.toml's test extra
# changes), and pip's wheels under ~/.cache/bindthem-ci/pip; bindthem itself is
# built and installed afresh each run, warnings as errors. The tests run from
# an empty folder, so that they import the installed bindthem. A version pyenv
# lacks is skipped, and said so; 3.14 is not in pyenv here.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${BINDTHEM_CI_CACHE:-$HOME/.cache/bindthem-ci}
PYENV_VERSIONS=${PYENV_ROOT:-$HOME/.pyenv}/versions
CORE=$(grep -v '^#' "$ROOT/tests/core_suite.txt")  # the core suite: FILE or FILE::NAME a line
clang_version=
if [ "${1:-}" = "--clang" ]; then
    [ $# -ge 2 ] || { echo "run_pythons: --clang needs a version" >&2; exit 2; }
    clang_version=$2
    shift 2
    command -v clang >/dev/null || { echo "run_pythons: --clang $clang_version: no clang" >&2; exit 1; }
fi
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.10 3.11 3.12 3.13)
own=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true)
# the test extra's text: a change to it makes the cached venvs again
extra_key=$(sed -n '/^\[project.optional-dependencies\]/,/^\[/p' "$ROOT/pyproject.toml" \
            | sha256sum | cut -c1-16)
export PIP_CACHE_DIR=$CACHE/pip PIP_DISABLE_PIP_VERSION_CHECK=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# bindthem's sources, built from a copy of the working tree (tracked and untracked, not
# ignored: no build output), as pip builds in the tree it is given: CI's own venv builds
# from the tree itself at the same time (.ci/run)
src=$ROOT
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    src=$work/src
    mkdir -p "$src"
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
        [ -e "$f" ] && printf '%s\0' "$f"
    done | tar --null -T - -c | tar -x -C "$src")
fi
failed=() clang_built=
for v in "${versions[@]}"; do
    cc=()
    [ "$v" = "$clang_version" ] && cc=(CC=clang)
    if [ "$v" = "$own" ] && [ $# -eq 0 ]; then
        # the clang build must not be skipped with it
        [ -z "${cc[*]}" ] || { echo "run_pythons: --clang $v: $v is skipped here" >&2; exit 2; }
        echo "run_pythons: $v: skipped, CI's own venv runs the full suite on it"
        continue
    fi
    py=$(ls -d "$PYENV_VERSIONS/$v".*/bin/python 2>/dev/null | sort -V | tail -n1 || true)
    if [ -z "$py" ]; then
        [ -z "${cc[*]}" ] || { echo "run_pythons: --clang $v: $v is not in $PYENV_VERSIONS" >&2; exit 1; }
        echo "run_pythons: $v: skipped, not in $PYENV_VERSIONS"
        continue
    fi
    venv=$CACHE/py$v
    start=$SECONDS
    if [ "$(cat "$venv/.extra_key" 2>/dev/null)" != "$extra_key" ]; then
        rm -rf "$venv"
        "$py" -m venv "$venv"
        "$venv/bin/python" -m pip install -q --upgrade pip
        # the extra's packages (bindthem's own dependencies among them), not bindthem
        "$venv/bin/python" - "$ROOT/pyproject.toml" > "$work/reqs-$v.txt" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
deps = re.search(r'^dependencies = \[(.*?)\]$', text, re.M | re.S).group(1)
test = re.search(r'^test = \[(.*?)\]$', text, re.M | re.S).group(1)
print("\n".join(re.findall(r'"([^"]+)"', deps + test)))
EOF
        "$venv/bin/python" -m pip install -q -r "$work/reqs-$v.txt"
        echo "$extra_key" > "$venv/.extra_key"
    fi
    # bindthem from the source folder (its copy), as `pip install .` builds it (no
    # isolation: the venv has setuptools and NumPy), into a folder of its own
    env "${cc[@]}" BINDTHEM_WERROR=1 "$venv/bin/python" -m pip install -q --no-deps \
        --no-build-isolation --force-reinstall "$src"
    mkdir -p "$work/cwd-$v"
    built=${CC:-gcc}
    if [ -n "${cc[*]}" ]; then
        # the installed _core says which compiler made it (.comment: "clang version ...")
        so=$(cd "$work/cwd-$v" && "$venv/bin/python" -c 'import bindthem._core as c; print(c.__file__)')
        if ! readelf -p .comment "$so" | grep -q 'clang version'; then
            echo "run_pythons: $v: $so was not built by clang" >&2
            exit 1
        fi
        built=clang
        clang_built=$v
    fi
    echo "run_pythons: $v: $("$venv/bin/python" -V), bindthem built by $built, ready in $((SECONDS - start)) s"
    tests=()
    for t in $CORE; do tests+=("$ROOT/tests/$t"); done
    if (cd "$work/cwd-$v" && BINDTHEM_CACHE="$work/cache-$v" \
            "$venv/bin/python" -m pytest -q -p no:cacheprovider -n 2 "${tests[@]}"); then
        echo "run_pythons: $v: passed in $((SECONDS - start)) s"
    else
        failed+=("$v")
    fi
done
if [ "$clang_built" != "$clang_version" ]; then
    echo "run_pythons: --clang $clang_version: not among the versions run (${versions[*]})" >&2
    exit 2
fi
if [ ${#failed[@]} -gt 0 ]; then
    echo "run_pythons: the core suite failed under ${failed[*]}" >&2
    exit 1
fi
