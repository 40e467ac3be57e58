#!/bin/sh
# Runs dump_plan over tests/data/bad_yaml and checks each error's location
# and message against EXPECTED.txt.  usage: check_bad_yaml.sh DUMP_PLAN
dump=${1:?usage: check_bad_yaml.sh DUMP_PLAN}
dir=$(dirname "$0")/../../data/bad_yaml
tab=$(printf '\t')
fail=0
while IFS="$tab" read -r yml hdr pos msg; do
    [ -n "$yml" ] || continue
    if [ "$hdr" = "-" ]; then
        out=$("$dump" --yaml-only "$dir/$yml")
    else
        set -- $hdr
        h=$1
        shift
        out=$("$dump" "$dir/$h" "$dir/$yml" "$@")
    fi
    rc=$?
    want="$dir/$yml:$pos: "
    [ "$pos" = "-" ] && want="$dir/$yml: "
    case "$out" in
    "$want"*"$msg"*) [ $rc -eq 1 ] && continue ;;
    esac
    echo "FAIL $yml (rc=$rc): $out"
    echo "     want: $want...$msg"
    fail=1
done <<EOF_LIST
$(grep -v '^#' "$dir/EXPECTED.txt")
EOF_LIST
[ $fail -eq 0 ] && echo "bad_yaml: all cases pass"
exit $fail
