#!/bin/sh
# run_gpu_check.sh - build bindthem and run the GPU tests, on a machine with
# an NVIDIA GPU, its driver and the CUDA toolkit (nvcc). Prints the driver
# and the test report; exit status is pytest's. About a minute.
#   sh tests/gpu/run_gpu_check.sh [pytest args]
set -eu
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] && PY=.venv/bin/python
export PATH="$PATH:/usr/local/cuda/bin"
unset BINDTHEM_LIBCUDA
nvidia-smi -L || true
nvcc --version | tail -2
"$PY" setup.py build_ext --inplace -q 2>&1 | grep -v Warning || true
"$PY" -c "import bindthem.cuda as c; print('driver:', c.driver(), 'devices:', c.device_count())"
# the GPU tests run in a process of their own (test_cuda.py uses a mock driver)
"$PY" -m pytest -m gpu -v -rs tests/gpu "$@"
