#!/usr/bin/env bash
# prepare_device.sh - build bindthem._core on this machine for the device
# machine's Python, so that the device check needs no libffi or libyaml
# headers there (its image has nvcc, NumPy, pytest, CuPy and PyTorch, but
# not necessarily the -dev packages).
#
#   bash tests/gpu/prepare_device.sh [PYTHON]
#
# PYTHON (default $PY312, else python3.12) must be the device's version
# (3.12 there) with NumPy 2 and setuptools. It writes, both git-ignored:
#   bindthem/_core.cpython-3XX-<arch>.so  with an rpath of $ORIGIN/_libs
#   bindthem/_libs/                       the libffi and libyaml it links
# Carry both to the device and run the check, e.g. with the device tool:
#   carry: bindthem/_core.cpython-312-x86_64-linux-gnu.so, bindthem/_libs
#   command: bash tests/gpu/run_gpu_check.sh
# run_gpu_check.sh uses a _core that imports instead of building one.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${1:-${PY312:-python3.12}}
"$py" -c 'import numpy, setuptools; assert int(numpy.__version__.split(".")[0]) >= 2, numpy.__version__'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# $ORIGIN reaches the linker as written (setuptools runs it without a shell)
LDFLAGS='-Wl,-rpath,$ORIGIN/_libs' "$py" setup.py -q build_ext -b "$tmp/lib" -t "$tmp/tmp"
so=$(ls "$tmp"/lib/bindthem/_core*.so)
rm -rf bindthem/_libs
mkdir -p bindthem/_libs
for lib in $(ldd "$so" | awk '/libffi|libyaml/ {print $3}'); do
    cp -L "$lib" bindthem/_libs/
done
cp "$so" bindthem/
echo "built $(basename "$so"), with $(ls bindthem/_libs | tr '\n' ' ')"
readelf -d "bindthem/$(basename "$so")" | grep -i 'rpath\|runpath'
