#!/usr/bin/env bash
# The core suite on CPython 3.14, Debian sid's own packages, in a sid root.
#
#   tests/run_py314.sh [PYTEST ARGS...]     (default: tests/run_pythons.sh's core list)
#
# pyenv here stops at 3.13, so 3.14 comes from Debian: a `debootstrap --variant=minbase`
# sid root with python3.14, its headers, gcc/g++ and README.rst's library packages (read,
# not restated), a venv with the tests' packages (NumPy's cp314 wheel), cached under
# BINDTHEM_PY314_ROOT (default ~/.cache/bindthem-ci/sid-root; about 5 minutes cold, most
# of it downloads). The root is made again when its package list changes, the venv when
# the tests' packages do.
# The working tree (no build output) is copied in, built there with warnings as errors
# (`pip install .` without isolation, as run_pythons.sh builds) and tested from an empty
# folder. Needs root, debootstrap, chroot and mount.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=${BINDTHEM_PY314_ROOT:-${BINDTHEM_CI_CACHE:-$HOME/.cache/bindthem-ci}/sid-root}
MIRROR=${BINDTHEM_PY314_MIRROR:-http://deb.debian.org/debian}
PY=python3.14
# the core suite, one file or test function (FILE::NAME) a line
CORE=$(grep -v '^#' "./tests/core_suite.txt")
# README.rst's set-up packages, as .ci/run reads them, less its python3 (sid's default
# python3 need not be 3.14), plus 3.14's own
packages=$(grep -m1 -E '^    apt-get update && apt-get install -y .* && python3 -m venv ' README.rst \
           | sed -e 's/.*apt-get install -y //' -e 's/ && python3 -m venv .*//')
[ -n "$packages" ] || { echo "run_py314: README.rst has no set-up command" >&2; exit 1; }
packages="$(echo "$packages" | tr ' ' '\n' | grep -v '^python3' | tr '\n' ' ')$PY $PY-dev $PY-venv ca-certificates"
needs="numpy pytest pytest-xdist pyyaml ml_dtypes setuptools mypy build ipython"  # the core suite's
key="sid $packages"
start=$SECONDS

mounted=()
cleanup() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
    mounted=()
}
trap cleanup EXIT
bind_mounts() {
    mount -t proc proc "$ROOT/proc" && mounted+=("$ROOT/proc")
    mount --bind /dev "$ROOT/dev" && mounted+=("$ROOT/dev")
    mount -t tmpfs tmpfs "$ROOT/tmp" && mounted+=("$ROOT/tmp")
}
in_root() { chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin \
                LANG=C.UTF-8 PIP_CERT=/etc/host-ca.pem PIP_DISABLE_PIP_VERSION_CHECK=1 "$@"; }

if [ "$(cat "$ROOT/.bindthem-ready" 2>/dev/null)" != "$key" ]; then
    echo "run_py314: building the sid root in $ROOT (once)"
    rm -rf "$ROOT"
    mkdir -p "$ROOT"
    debootstrap --variant=minbase --include="$(echo $packages | tr ' ' ',')" sid "$ROOT" "$MIRROR" \
        > "$ROOT.log" 2>&1 || { tail -n 30 "$ROOT.log" >&2; echo "run_py314: debootstrap failed" >&2; exit 1; }
    cp /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/host-ca.pem"
    cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
    echo "$key" > "$ROOT/.bindthem-ready"
fi
# the venv, made again when the package list changes
if [ "$(cat "$ROOT/venv/.needs" 2>/dev/null)" != "$needs" ]; then
    rm -rf "$ROOT/venv"
    bind_mounts
    in_root $PY -m venv /venv
    in_root /venv/bin/pip install -q $needs
    cleanup
    echo "$needs" > "$ROOT/venv/.needs"
fi

. tests/root_ccache.sh
root_ccache sid

# the working tree (tracked and untracked, not ignored: no build output) into the root
rm -rf "$ROOT/src"
mkdir -p "$ROOT/src"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    [ -e "$f" ] && printf '%s\0' "$f"
done | tar --null -T - -c | tar -x -C "$ROOT/src"
[ $# -gt 0 ] || set -- $(for t in $CORE; do echo "/src/tests/$t"; done)
bind_mounts
root_ccache_mount
in_root "${root_ccache_env[@]}" /bin/sh -c "cd /src && BINDTHEM_WERROR=1 /venv/bin/pip install -q --no-deps \
        --no-build-isolation . >/tmp/build.log 2>&1 || { cat /tmp/build.log; exit 1; }
    mkdir -p /tmp/cwd && cd /tmp/cwd && /venv/bin/python -VV &&
    BINDTHEM_CACHE=/tmp/bt-cache /venv/bin/python -m pytest -q -p no:cacheprovider -n 2 $*"
echo "run_py314: passed in $((SECONDS - start)) s"
