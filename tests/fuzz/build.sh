#!/bin/sh
# build.sh - builds the fuzz harnesses (tests/fuzz/fuzz_*.c) into $OUT
# (default: build/fuzz in the source tree).
#
#   tests/fuzz/build.sh              clang with libFuzzer, ASan and UBSan
#   tests/fuzz/build.sh standalone   $CC (default gcc) with ASan and UBSan and
#                                    standalone.c's main(), which runs files
#
# Both define BT_ARENA_EXACT: every arena allocation gets its own malloc
# block, so ASan sees an overflow the bump allocator would hide. The harnesses
# link every C file of csrc's pure layers (tests/core/c/layers.py names them;
# $PYTHON, default python3, reads it).
set -eu

here=$(cd "$(dirname "$0")/../.." && pwd)
mode=${1:-libfuzzer}
out=${OUT:-$here/build/fuzz}
pure=$("${PYTHON:-python3}" "$here/tests/core/c/layers.py" sources --pure --ext .c)
includes=$("${PYTHON:-python3}" "$here/tests/core/c/layers.py" includes)
harnesses="fuzz_header fuzz_yaml fuzz_mangle fuzz_elf"
san="address,undefined"
common="-g -O1 -std=c11 -Wall -Wextra -Werror -fno-omit-frame-pointer -DBT_ARENA_EXACT
        -fno-sanitize-recover=undefined $includes"

case $mode in
libfuzzer)
    cc=${FUZZ_CC:-clang}
    cflags="$common -fsanitize=fuzzer-no-link,$san"
    lflags="-fsanitize=fuzzer,$san"
    main=
    ;;
standalone)
    cc=${CC:-gcc}
    cflags="$common -fsanitize=$san"
    lflags="-fsanitize=$san"
    main=standalone
    ;;
*)
    echo "usage: build.sh [standalone]" >&2
    exit 2
    ;;
esac

mkdir -p "$out/obj"
objs=
for src in $pure; do
    f=$(basename "$src" .c)
    $cc $cflags -c "$src" -o "$out/obj/$f.o"
    objs="$objs $out/obj/$f.o"
done
if [ -n "$main" ]; then
    $cc $cflags -c "$here/tests/fuzz/standalone.c" -o "$out/obj/standalone.o"
    objs="$objs $out/obj/standalone.o"
fi
for h in $harnesses; do
    $cc $cflags -c "$here/tests/fuzz/$h.c" -o "$out/obj/$h.o"
    $cc $lflags -o "$out/$h" "$out/obj/$h.o" $objs -lyaml -lffi -ldl -lstdc++
done
echo "built $harnesses in $out ($mode)"
