#!/usr/bin/env bash
# Lint: ruff on the Python (pyproject.toml's [tool.ruff]) and clang-format on
# csrc/ (.clang-format). Checks only, changes nothing; exits non-zero on a finding.
#   tests/lint.sh              # both
#   RUFF=... CLANG_FORMAT=...  # other binaries (default: ruff, clang-format on PATH)
# Install ruff with `pip install ruff`; clang-format 14 with `apt-get install clang-format`.
set -uo pipefail
cd "$(dirname "$0")/.."
RUFF=${RUFF:-ruff}
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
rc=0
for tool in "$RUFF" "$CLANG_FORMAT"; do
    command -v "$tool" >/dev/null || { echo "lint: $tool not found" >&2; exit 2; }
done
echo "ruff: $("$RUFF" --version)"
"$RUFF" check --no-cache . || rc=1
echo "clang-format: $("$CLANG_FORMAT" --version)"
"$CLANG_FORMAT" --dry-run --Werror csrc/*/*.c csrc/*/*.h csrc/*/*.cpp || rc=1
[ $rc -eq 0 ] && echo "lint: clean"
exit $rc
