#!/bin/sh
# run.sh - builds the fuzz harnesses and runs each for a while.
#
#   tests/fuzz/run.sh [SECONDS [HARNESS...]]
#
# SECONDS per harness (default 15; CI runs all four for about a minute).
# Corpora grow in $OUT/corpus/HARNESS (default OUT: build/fuzz), seeded from
# tests/data and tests/data/fuzz/HARNESS (the regression files). A crash,
# a leak, an input over 10 s or over 2 GB stops the run and is written to
# $OUT/crashes/; fix it, then add the file to tests/data/fuzz/HARNESS/ so
# that tests/core/test_fuzz.py replays it on every test run.
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-15}
[ $# -gt 0 ] && shift
harnesses=${*:-fuzz_header fuzz_yaml fuzz_mangle fuzz_elf}
out=${OUT:-$here/build/fuzz}
export OUT=$out

"$here/tests/fuzz/build.sh"
mkdir -p "$out/crashes" "$out/seeds/elf"
# ELF seeds: a C and a C++ shared object
${CC:-gcc} -shared -fPIC -Os -o "$out/seeds/elf/c.so" "$here/tests/data/kernels/ckernels.c"
printf 'template <class T> T f(T a) { return a; }\ntemplate int f<int>(int);\n' |
    ${CXX:-g++} -shared -fPIC -Os -x c++ -o "$out/seeds/elf/cxx.so" -

status=0
for h in $harnesses; do
    case $h in
    fuzz_header | fuzz_mangle)
        dict=header.dict
        seeds="headers bad_headers kernels cuda mangle" ;;
    fuzz_yaml)
        dict=yaml.dict
        seeds="yaml bad_yaml headers kernels cuda" ;;
    fuzz_elf)
        dict=
        seeds= ;;
    *)
        echo "unknown harness $h" >&2
        exit 2 ;;
    esac
    dirs=
    for s in $seeds fuzz/$h; do
        [ -d "$here/tests/data/$s" ] && dirs="$dirs $here/tests/data/$s"
    done
    [ $h = fuzz_elf ] && dirs="$dirs $out/seeds/elf"
    mkdir -p "$out/corpus/$h"
    echo "== $h, $secs s"
    "$out/$h" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        ${dict:+-dict="$here/tests/fuzz/$dict"} -artifact_prefix="$out/crashes/$h-" \
        "$out/corpus/$h" $dirs 2>"$out/$h.log" || {
        status=1
        tail -n 60 "$out/$h.log"
        echo "FAIL $h: see $out/$h.log and $out/crashes/"
        continue
    }
    grep -E '^stat::(number_of_executed_units|peak_rss_mb)|cov: ' "$out/$h.log" | tail -n 3
done
exit $status
