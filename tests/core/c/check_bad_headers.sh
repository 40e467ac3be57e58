#!/bin/sh
# Runs dump_header (path in $1) on each tests/data/bad_headers file and checks
# its "file:line:col: message" against EXPECTED.txt. Exits 1 on a mismatch.
dump=${1:-./dump_header}
dir=$(dirname "$0")/../../data/bad_headers
status=0
tab=$(printf '\t')
while IFS="$tab" read -r name loc msg; do
    out=$("$dump" "$dir/$name")
    rc=$?
    case "$out" in
    *"$name:$loc: "*"$msg"*) [ $rc -eq 1 ] || { echo "FAIL $name: exit $rc"; status=1; } ;;
    *) echo "FAIL $name: got '$out', want '$loc: $msg'"; status=1 ;;
    esac
done < "$dir/EXPECTED.txt"
[ $status -eq 0 ] && echo "all bad headers ok"
exit $status
