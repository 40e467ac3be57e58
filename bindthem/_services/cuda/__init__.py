"""CUDA's compilers for bindthem.cuda: ``nvcc`` (finding nvcc, its
architectures and flags) and ``nvrtc`` (the run-time compiler, in-process),
which imports ``nvcc``. The data files they read (nvcc_complex.cuh,
prelude.cuh) are package data beside them. This ``__init__`` imports neither.
"""
