#!/usr/bin/env bash
# The call, dispatch, sizes, types, direct, platform-types and structs tests on aarch64:
# an arm64 Debian root run under qemu-user (binfmt_misc), docs/internals.rst.
#
#   tests/run_arm64.sh            build the root if it is missing (once, ~15 min), then test
#   tests/run_arm64.sh --if-cached  test only when the root is already built, else say so and exit 0
#   BINDTHEM_ARM64_TESTS="tests/core/test_direct.py -k ret" tests/run_arm64.sh
#                                   other pytest arguments
#
# Needs root, debootstrap, chroot, mount and an aarch64 binfmt_misc entry with the F flag
# (Debian's qemu-user-static registers one). The root is cached in BINDTHEM_ARM64_ROOT
# (default ~/.cache/bindthem-ci/arm64-root); delete it to rebuild. The working tree is copied
# into the root (no build output), built there with its gcc and tested with its Python.
# LeakSanitizer is not run here: it cannot run under qemu-user.
set -euo pipefail
cd "$(dirname "$0")/.."

ROOT=${BINDTHEM_ARM64_ROOT:-$HOME/.cache/bindthem-ci/arm64-root}
SUITE=${BINDTHEM_ARM64_SUITE:-bookworm}
MIRROR=${BINDTHEM_ARM64_MIRROR:-http://deb.debian.org/debian}
TESTS=${BINDTHEM_ARM64_TESTS:-"tests/core/test_call.py tests/core/test_dispatch.py
       tests/core/test_sizes.py tests/core/test_types.py tests/core/test_direct.py
       tests/core/test_platform_types.py tests/core/test_structs.py"}

if [ "${1:-}" = "--if-cached" ]; then
    if [ ! -e "$ROOT/.bindthem-ready" ]; then
        echo "run_arm64: no arm64 root at $ROOT (tests/run_arm64.sh builds one); skipped"
        exit 0
    fi
elif [ -n "${1:-}" ]; then
    echo "run_arm64: unknown argument '$1' (expected nothing or --if-cached)" >&2
    exit 2
fi

binfmt=/proc/sys/fs/binfmt_misc
if [ ! -e "$binfmt/status" ]; then
    mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null || true
fi
if ! grep -qs '^enabled' "$binfmt/qemu-aarch64"; then
    conf=/usr/lib/binfmt.d/qemu-aarch64.conf
    if [ -e "$conf" ] && [ -w "$binfmt/register" ]; then
        cat "$conf" >"$binfmt/register"
    elif [ "${1:-}" = "--if-cached" ]; then
        echo "run_arm64: no aarch64 binfmt_misc entry (apt-get install -y qemu-user-static); skipped"
        exit 0
    else
        echo "run_arm64: no aarch64 binfmt_misc entry; apt-get install -y qemu-user-static" >&2
        exit 1
    fi
fi

# README.rst's set-up packages (read, not restated), as .ci/run reads them
packages=$(grep -m1 -E '^    apt-get update && apt-get install -y .* && python3 -m venv ' README.rst \
           | sed -e 's/.*apt-get install -y //' -e 's/ && python3 -m venv .*//')
[ -n "$packages" ] || { echo "run_arm64: README.rst has no set-up command" >&2; exit 1; }

mounted=()
cleanup() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
bind_mounts() {
    mount -t proc proc "$ROOT/proc" && mounted+=("$ROOT/proc")
    mount --bind /dev "$ROOT/dev" && mounted+=("$ROOT/dev")
    mount -t tmpfs tmpfs "$ROOT/tmp" && mounted+=("$ROOT/tmp")
}
in_root() { chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin \
                LANG=C.UTF-8 PIP_CERT=/etc/host-ca.pem "$@"; }

if [ ! -e "$ROOT/.bindthem-ready" ]; then
    echo "run_arm64: building the arm64 $SUITE root in $ROOT (once)"
    rm -rf "$ROOT"
    mkdir -p "$ROOT"
    debootstrap --arch=arm64 --variant=minbase --include="$(echo $packages | tr ' ' ',')" \
        "$SUITE" "$ROOT" "$MIRROR"
    cp /etc/ssl/certs/ca-certificates.crt "$ROOT/etc/host-ca.pem"
    cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
    bind_mounts
    in_root python3 -m venv /venv
    in_root /venv/bin/pip install -q pytest numpy pyyaml ml_dtypes
    cleanup
    mounted=()
    touch "$ROOT/.bindthem-ready"
fi

# the working tree (tracked and untracked, not ignored: no build output) into the root
. tests/root_ccache.sh
root_ccache arm64

rm -rf "$ROOT/src"
mkdir -p "$ROOT/src"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    [ -e "$f" ] && printf '%s\0' "$f"
done | tar --null -T - -c | tar -x -C "$ROOT/src"
bind_mounts
root_ccache_mount
in_root "${root_ccache_env[@]}" /bin/sh -c "cd /src && /venv/bin/python setup.py -q build_ext --inplace >/dev/null &&
    uname -m && PYTHONPATH=/src /venv/bin/python -c \
    'from bindthem import _core; print(\"direct call:\", _core.DIRECT_ABI or \"none (libffi)\")' &&
    BINDTHEM_CACHE=/tmp/bt-cache PYTHONPATH=/src /venv/bin/python -m pytest -q \
    -p no:cacheprovider -rs $(echo $TESTS)"
