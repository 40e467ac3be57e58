# Sourced by tests/run_arm64.sh and tests/run_py314.sh: ccache in their Debian root when
# the caller uses one (.ci/run does, through CCACHE_DIR): bindthem's build is most of what
# such a script compiles, and a warm cache compiles only what changed since. The root gets
# the package once (apt, through the caller's in_root, bind_mounts and cleanup); its cache
# is its own ($CCACHE_DIR-NAME: the root's compiler is another), bind-mounted at /ccache by
# root_ccache_mount. Sets root_ccache_env: the variables a build in the root is run with
# (empty without CCACHE_DIR).
root_ccache_env=()
root_ccache() {  # root_ccache NAME
    [ -n "${CCACHE_DIR:-}" ] || return 0
    if [ ! -x "$ROOT/usr/bin/ccache" ]; then
        # a root's package lists may have outlived their Valid-Until (sid's, a week): the
        # packages are still checked against the archive's keys
        bind_mounts
        in_root sh -c 'apt-get -q -o Acquire::Check-Valid-Until=false update &&
                       apt-get install -y -q ccache' >/dev/null 2>&1 || true
        cleanup
        mounted=()
        if [ ! -x "$ROOT/usr/bin/ccache" ]; then
            echo "root_ccache: ccache could not be installed in $ROOT; building without it"
            return 0
        fi
    fi
    root_ccache_dir=$CCACHE_DIR-$1
    mkdir -p "$root_ccache_dir" "$ROOT/ccache"
    root_ccache_env=(PATH=/usr/lib/ccache:/usr/sbin:/usr/bin:/sbin:/bin CCACHE_DIR=/ccache
                     CCACHE_BASEDIR=/src CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=1G)
}
root_ccache_mount() {  # after bind_mounts
    [ ${#root_ccache_env[@]} -eq 0 ] && return 0
    mount --bind "$root_ccache_dir" "$ROOT/ccache" && mounted+=("$ROOT/ccache")
}
