#!/usr/bin/env bash
# prepare_device.sh - build bindthem._core here for the device machine's
# Python, so that the device check needs no libffi or libyaml headers there
# (its image has nvcc, Python 3.12 with NumPy, pytest, pytest-timeout, CuPy
# and PyTorch, but not necessarily the -dev packages).
#
#   bash tests/cuda/gpu/prepare_device.sh [PYTHON]
#
# It makes its own venv, build/py312-venv, from a Python 3.12: PYTHON if
# given, else $PY312, else pyenv's newest 3.12 (through `pyenv root`, never
# its shim, which may point at another version), else /usr/bin/python3.12
# or /usr/local/bin/python3.12. The venv sees that Python's own packages;
# NumPy >= 2 and setuptools are installed into it only when missing there
# (pip: from the index, or from the wheels in $BINDTHEM_WHEELS with no
# network). With it, it writes (both git-ignored):
#   bindthem/_core.cpython-312-<arch>-linux-gnu.so  with an rpath of $ORIGIN/_libs
#   bindthem/_libs/                                  the libffi and libyaml it links
#   bindthem/_libs/core.sha256                       the sources' hash (core_hash.py)
# and, with nvcc, the kernels for the device (build_kernels.py, the same
# 3.12 venv) into build/gpu-kernels, so that the device spends no time on them.
# The `run` call to make then is in tests/cuda/gpu/README.md:
#   carry:   ["bindthem/_core.cpython-312-x86_64-linux-gnu.so", "bindthem/_libs",
#             "build/gpu-kernels"]
#   command: bash tests/cuda/gpu/run_gpu_check.sh
# run_gpu_check.sh uses a carried _core only when it imports there and its
# hash is the tree's (else it builds one there), and the carried kernels
# only when their source hash is the tree's (else it builds them there).
set -euo pipefail
cd "$(dirname "$0")/../../.."

is312() { [ -n "$1" ] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; }

py=${1:-${PY312:-}}
if [ -z "$py" ] && command -v pyenv >/dev/null; then
    for cand in $(ls -d "$(pyenv root)"/versions/3.12* 2>/dev/null | sort -V -r); do
        if is312 "$cand/bin/python3.12"; then py=$cand/bin/python3.12; break; fi
    done
fi
for cand in /usr/bin/python3.12 /usr/local/bin/python3.12; do
    if [ -z "$py" ] && is312 "$cand"; then py=$cand; fi
done
if ! is312 "$py"; then
    echo "prepare_device: no Python 3.12 found (${py:-none given}): give one, e.g." \
        "bash tests/cuda/gpu/prepare_device.sh ~/.pyenv/versions/3.12.1/bin/python3.12" >&2
    exit 2
fi
echo "prepare_device: Python 3.12 at $py"

venv=build/py312-venv
if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv --system-site-packages "$venv"
fi
vpy=$venv/bin/python
has_numpy2='import numpy, setuptools, sys; sys.exit(int(numpy.__version__.split(".")[0]) < 2)'
if ! "$vpy" -c "$has_numpy2" 2>/dev/null; then
    echo "prepare_device: installing NumPy >= 2 and setuptools into $venv"
    if [ -n "${BINDTHEM_WHEELS:-}" ]; then
        "$vpy" -m pip install -q --no-index --find-links "$BINDTHEM_WHEELS" 'numpy>=2' setuptools
    else
        "$vpy" -m pip install -q 'numpy>=2' setuptools
    fi
fi
"$vpy" -c "$has_numpy2"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# $ORIGIN reaches the linker as written (setuptools runs it without a shell)
LDFLAGS='-Wl,-rpath,$ORIGIN/_libs' "$vpy" setup.py -q build_ext -b "$tmp/lib" -t "$tmp/tmp"
so=$(ls "$tmp"/lib/bindthem/_core*.so)
rm -rf bindthem/_libs
mkdir -p bindthem/_libs
for lib in $(ldd "$so" | awk '/libffi|libyaml/ {print $3}'); do
    cp -L "$lib" bindthem/_libs/
done
cp "$so" bindthem/
echo "built $(basename "$so"), with $(ls bindthem/_libs | tr '\n' ' ')"
readelf -d "bindthem/$(basename "$so")" | grep -i 'rpath\|runpath'
"$vpy" tests/cuda/gpu/core_hash.py >bindthem/_libs/core.sha256
rm -rf build/gpu-kernels
PYTHONPATH=$PWD "$vpy" tests/cuda/gpu/build_kernels.py build/gpu-kernels
rm -rf build/gpu-kernels/cache
echo "carry: [\"bindthem/$(basename "$so")\", \"bindthem/_libs\", \"build/gpu-kernels\"]"
