#!/usr/bin/env bash
# A free-threaded CPython 3.13 (--disable-gil) and a venv for it, built once from
# Debian's orig tarball and cached outside the repository; prints the venv's python.
#
#   tests/ft_python.sh [plain|tsan]
#
# plain: ~/.cache/bindthem-ci/py3.13t      (tests/run_freethreaded.sh)
# tsan:  ~/.cache/bindthem-ci/py3.13t-tsan (tests/run_tsan.sh): the same CPython
#        configured --with-thread-sanitizer, so that TSan sees its locks and atomics.
# Each holds prefix/ (the installed CPython) and venv/ (NumPy < 2.5 and the tests'
# packages, below). The tsan venv's packages are installed by the plain venv's pip (the
# same CPython, ABI and platform; built first when missing), into its site-packages:
# pip itself, and ensurepip, would run under ThreadSanitizer, at a tenth of the speed.
# A cold build takes about 3 minutes a variant on 2 idle cores; progress goes to stderr,
# the log to <cache>/build.log.
set -euo pipefail
VERSION=3.13.15
SHA256=1e66a7945a48390ee4c2a4268a0e4185884059a13c4aab6d148aa208deea4a76
URL=https://deb.debian.org/debian/pool/main/p/python3.13/python3.13_$VERSION.orig.tar.xz
variant=${1:-plain}
CACHE=${BINDTHEM_CI_CACHE:-$HOME/.cache/bindthem-ci}
# the tests' packages: the core suite's (tests/run_pythons.sh) and test_parallel's;
# mypy before 1.19, whose ast-serialize has no 3.13t wheel, and IPython for stubtest
# (ipykernel's pyzmq is not needed); tsan runs test_freethreaded.py only. ml_dtypes
# before 0.6, the last with a 3.13t wheel: a later one is an sdist whose build wants a
# NumPy 2 that pip then builds from source too (2.5 has no 3.13t wheel), ten minutes of
# CPU on a cold machine
case $variant in
    plain) dir=$CACHE/py3.13t; extra=(--with-ensurepip=install); off=()
           needs=("numpy<2.5" "pytest>=7" pytest-xdist pyyaml "setuptools>=70.1" build "dask[distributed]"
                  "mypy<1.19" "ml_dtypes<0.6" ipython) ;;
    tsan) dir=$CACHE/py3.13t-tsan; extra=(--with-thread-sanitizer --with-ensurepip=no); off=(_sqlite3)
          needs=("numpy<2.5" "pytest>=7" "setuptools>=70.1") ;;
    *) echo "ft_python.sh: unknown variant '$variant' (expected plain or tsan)" >&2; exit 2 ;;
esac
# What the build leaves out, to take half the time (tests/README.md's CI section):
# -O1 without -g (the tests call CPython, they do not time it; TSan's reports name
# functions from the symbol table and bindthem's own lines from _core's -g), the
# extension modules no test imports (decimal falls back to _pydecimal), and the standard
# library's .pyc files (`make install` compiles all of it; an import writes the one it
# reads, and the tests import a small part).
off+=(_tkinter _curses _curses_panel _dbm _gdbm readline _decimal)
opt="-O1 -Wall"
# what the cached build was made from: a change rebuilds it
key="$VERSION $SHA256 --disable-test-modules ${extra[*]:-} OPT=$opt off=${off[*]} pyc=lazy ${needs[*]}"
if [ "$(cat "$dir/.key" 2>/dev/null)" != "$key" ]; then
    rm -rf "$dir"
    mkdir -p "$dir" "$CACHE/src"
    tarball=$CACHE/src/python3.13_$VERSION.orig.tar.xz
    if ! echo "$SHA256  $tarball" | sha256sum -c --status 2>/dev/null; then
        echo "ft_python.sh: downloading $URL" >&2
        curl -sSfL -o "$tarball.part" "$URL"
        mv "$tarball.part" "$tarball"
    fi
    if ! echo "$SHA256  $tarball" | sha256sum -c --status; then
        echo "ft_python.sh: $tarball: sha256 is $(sha256sum "$tarball" | cut -d' ' -f1)," \
             "expected $SHA256 (the pinned Debian orig tarball); delete it and retry" >&2
        exit 1
    fi
    build=$dir/build
    mkdir -p "$build"
    tar -xJf "$tarball" -C "$build" --strip-components=1
    sed -i 's|$(PYTHON_FOR_BUILD) -Wi $(DESTDIR)$(LIBDEST)/compileall.py|true|' \
        "$build/Makefile.pre.in"
    grep -q 'compileall.py' "$build/Makefile.pre.in" \
        && { echo "ft_python.sh: Makefile.pre.in still runs compileall" >&2; exit 1; }
    disabled=()
    for m in "${off[@]}"; do disabled+=("py_cv_module_$m=n/a"); done
    echo "ft_python.sh: building CPython $VERSION --disable-gil ${extra[*]:-} (log: $dir/build.log)" >&2
    (cd "$build" \
        && env OPT="$opt" "${disabled[@]}" ./configure --prefix="$dir/prefix" --disable-gil \
               --disable-test-modules \
               "${extra[@]}" \
        && nice -n 10 make -j"$(nproc)" \
        && make install) > "$dir/build.log" 2>&1 \
        || { tail -n 30 "$dir/build.log" >&2; echo "ft_python.sh: CPython build failed" >&2; exit 1; }
    # CPython's own TSan suppressions (its internals' known reports), for tests/run_tsan.sh
    mkdir -p "$dir/tsan" && cp "$build"/Tools/tsan/*.txt "$dir/tsan/"
    rm -rf "$build"
    py=$dir/prefix/bin/python3.13t
    "$py" -c 'import sys; assert not sys._is_gil_enabled()' \
        || { echo "ft_python.sh: $py has the GIL on" >&2; exit 1; }
    export PIP_CACHE_DIR=$CACHE/pip PIP_DISABLE_PIP_VERSION_CHECK=1
    if [ "$variant" = tsan ]; then
        plain=$("$0" plain)
        "$py" -m venv --without-pip "$dir/venv"
        "$plain" -m pip install -q --target "$dir/venv/lib/python3.13t/site-packages" \
            "${needs[@]}"
    else
        "$py" -m venv "$dir/venv"
        "$dir/venv/bin/python" -m pip install -q --upgrade pip
        "$dir/venv/bin/python" -m pip install -q "${needs[@]}"
    fi
    echo "$key" > "$dir/.key"
fi
echo "$dir/venv/bin/python"
