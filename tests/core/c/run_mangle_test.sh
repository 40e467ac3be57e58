#!/bin/sh
# run_mangle_test.sh - bt_mangle's names against g++, nm -D and c++filt.
#
# Builds tests/core/c/test_mangle.c with ASan/UBSan, lets it write decls.h,
# instantiate.yml, instantiate.cpp and names.tsv into a scratch directory,
# then checks that
#   - decls.h, instantiate.yml and names.tsv match tests/data/mangle/
#     (--update rewrites those fixtures instead),
#   - every name bt_mangle produced is defined in the g++-built library,
#     and the library defines no other function of decls.h,
#   - c++filt turns each name into the expected declaration.
set -eu

here=$(cd "$(dirname "$0")/../../.." && pwd)
data=$here/tests/data/mangle
cc=${CC:-gcc}
cxx=${CXX:-g++}
update=0
[ "${1:-}" = "--update" ] && update=1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cd "$here"
$cc -std=c11 -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=all \
    -g -Icsrc/core -o "$tmp/test_mangle" tests/core/c/test_mangle.c csrc/core/bt_mangle.c \
    csrc/core/bt_types.c csrc/core/bt_hash.c csrc/core/bt_arena.c csrc/core/bt_diag.c -lffi
ASAN_OPTIONS=detect_leaks=1 "$tmp/test_mangle" "$tmp"

fail=0
if [ $update = 1 ]; then
    mkdir -p "$data"
    cp "$tmp/decls.h" "$tmp/instantiate.yml" "$tmp/names.tsv" "$data/"
    echo "updated $data"
else
    for f in decls.h instantiate.yml names.tsv; do
        if ! diff -u "$data/$f" "$tmp/$f"; then
            echo "FAIL: $f differs from $data/$f (run with --update if intended)"
            fail=1
        fi
    done
fi

# The library, from the generated fixtures.
$cxx -std=c++11 -shared -fPIC -O1 -I"$tmp" -o "$tmp/libdecls.so" "$tmp/instantiate.cpp"
nm -D --defined-only "$tmp/libdecls.so" | awk '$2 ~ /^[TW]$/ {print $3}' |
    grep -v -e '^_ZNSt' -e '^_ZSt' -e '^_init$' -e '^_fini$' | sort >"$tmp/nm.txt"
cut -f1 "$tmp/names.tsv" | sort >"$tmp/ours.txt"
if ! diff -u "$tmp/nm.txt" "$tmp/ours.txt" >"$tmp/nm.diff"; then
    echo "FAIL: bt_mangle names (+) differ from nm -D (-):"
    grep '^[-+][^-+]' "$tmp/nm.diff" || true
    fail=1
fi

# The demangled names.
cut -f1 "$tmp/names.tsv" | c++filt >"$tmp/demangled.txt"
cut -f2 "$tmp/names.tsv" >"$tmp/expected.txt"
if ! diff -u "$tmp/expected.txt" "$tmp/demangled.txt"; then
    echo "FAIL: c++filt (+) differs from the expected declarations (-)"
    fail=1
fi

n=$(wc -l <"$tmp/ours.txt")
if [ $fail = 0 ]; then
    echo "PASS: $n mangled names match g++"
else
    exit 1
fi
